"""Document updates driven by the index's recorded settings (the body of a serving update job)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.kg.store import KGIndexError, write_snapshot
from indexing.update import read_documents_jsonl, recorded_index_config, update_index_documents
from tests.support.film_kg import film_tables


def test_the_recorded_config_is_what_the_update_runs_with(tmp_path: Path, embedder) -> None:
    index = tmp_path / "index"
    write_snapshot(index, film_tables(embedder), {"config": {"extraction": {"batch_size": 3}}})
    assert recorded_index_config(index).extraction.batch_size == 3
    write_snapshot(index, film_tables(embedder), {"config": {"extraction": {"batch_sise": 3}}})
    with pytest.raises(KGIndexError, match="recorded config is not valid"):
        recorded_index_config(index)
    write_snapshot(index, film_tables(embedder), {"source": {"path": "/x/stage1"}})
    with pytest.raises(KGIndexError, match="pre-built graph"):
        update_index_documents(index, "add", documents=[("A", "a")])


def test_an_update_needs_something_to_do(tmp_path: Path, embedder) -> None:
    index = tmp_path / "index"
    write_snapshot(index, film_tables(embedder), {"config": {}})
    with pytest.raises(ValueError, match="at least one document"):
        update_index_documents(index, "add")
    with pytest.raises(ValueError, match="at least one title"):
        update_index_documents(index, "delete")


def test_uploaded_documents_round_trip_through_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "upload.jsonl"
    rows = [{"title": "A", "text": "line one\nline two"}, {"title": "B", "text": "ünïcode"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    assert read_documents_jsonl(path) == [("A", "line one\nline two"), ("B", "ünïcode")]


def test_adding_a_second_benchmark_file_keeps_the_first_files_questions() -> None:
    """``hoprag index --add`` with another question file: both question sets are in the pool; a
    question whose id comes again is replaced where it stood; other splits are kept."""
    from indexing.pipeline import merge_questions

    kept = {"test": [{"id": "a", "question": "A?"}, {"id": "b", "question": "B?"}], "train": [{"id": "t"}]}
    new = {"test": [{"id": "c", "question": "C?"}, {"id": "b", "question": "B again?"}]}
    merged = merge_questions(kept, new)
    assert [q["id"] for q in merged["test"]] == ["a", "b", "c"]
    assert merged["test"][1]["question"] == "B again?" and merged["train"] == [{"id": "t"}]
    assert merge_questions({}, new) == {"test": new["test"]}
