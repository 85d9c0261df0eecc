"""Corpus readers: every accepted layout, and bad input counted instead of crashing."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hoprag.paths import SAMPLE_CORPUS
from indexing.corpus import CorpusError, read_corpus


def test_packaged_sample_is_a_raw_directory_with_questions():
    corpus = read_corpus(SAMPLE_CORPUS)
    assert len(corpus.documents) == 60
    assert set(corpus.questions) == {"train", "test"}
    assert all(q["supporting_facts"] for q in corpus.questions["test"])
    assert not corpus.problems


def test_jsonl_with_bad_lines_duplicates_empty_docs_and_bad_bytes(tmp_path):
    path = tmp_path / "corpus.jsonl"
    lines = [
        json.dumps({"title": "A", "text": "Alpha is a city."}).encode(),
        b"{not json",
        json.dumps({"title": "A", "text": "A different text."}).encode(),  # duplicate title
        json.dumps({"title": "A", "text": "Alpha is a city."}).encode(),  # exact duplicate
        json.dumps({"title": "E", "text": ""}).encode(),
        json.dumps({"text": "no title"}).encode(),
        json.dumps(["not", "a", "row"]).encode(),
        b'{"title": "B", "text": "Caf\xe9 Bravo."}',  # invalid UTF-8 inside the file
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    corpus = read_corpus(path)
    titles = [d.title for d in corpus.documents]
    assert titles == ["A", "E", "B"]
    assert corpus.documents[0].text == "Alpha is a city."  # the first of a duplicated title wins
    assert "\ufffd" in corpus.documents[2].text
    p = corpus.problems
    assert p["bad_jsonl_line"] == 1
    assert p["duplicate_title"] == 1
    assert p["duplicate_document"] == 1
    assert p["empty_document"] == 1
    assert p["missing_title"] == 1
    assert p["bad_row"] == 1
    assert p["non_utf8_file"] == 1


def test_parquet_and_json_mapping(tmp_path):
    pq.write_table(
        pa.table({"title": ["X", "Y"], "text": ["Xeno is red.", "Yara is blue."]}), tmp_path / "c.parquet"
    )
    assert [d.title for d in read_corpus(tmp_path / "c.parquet").documents] == ["X", "Y"]
    (tmp_path / "c.json").write_text(json.dumps({"X": "Xeno is red."}))
    assert read_corpus(tmp_path / "c.json").documents[0].text == "Xeno is red."


def test_hotpot_style_supporting_facts_become_titles(tmp_path):
    raw = tmp_path / "bench" / "raw"
    raw.mkdir(parents=True)
    (raw / "dataset_corpus.json").write_text(json.dumps({"X": "Xeno is red."}))
    (raw / "test.json").write_text(
        json.dumps(
            [
                {
                    "id": 1,
                    "question": "Q?",
                    "answer": "a",
                    "supporting_facts": [["X", 0], ["X", 1]],
                    "level": "hard",
                    "evidences": [["a", "b", "c"]],
                },
                {"id": 2, "question": ""},
            ]
        )
    )
    corpus = read_corpus(tmp_path / "bench")
    assert corpus.questions["test"] == [
        {
            "id": "1",
            "question": "Q?",
            "answer": "a",
            "answer_aliases": [],
            "supporting_facts": ["X"],
            "metadata": {"level": "hard"},
        }
    ]
    assert corpus.problems["bad_question"] == 1


def test_unreadable_corpora_raise_clear_errors(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        read_corpus(tmp_path / "nope.jsonl")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(CorpusError, match=r"dataset_corpus\.json"):
        read_corpus(tmp_path / "empty_dir")
    (tmp_path / "bad.json").write_text("{oops")
    with pytest.raises(CorpusError, match="not valid JSON"):
        read_corpus(tmp_path / "bad.json")
    pq.write_table(pa.table({"name": ["X"]}), tmp_path / "cols.parquet")
    with pytest.raises(CorpusError, match="missing column"):
        read_corpus(tmp_path / "cols.parquet")
    (tmp_path / "c.csv").write_text("title,text\n")
    with pytest.raises(CorpusError, match="unsupported"):
        read_corpus(tmp_path / "c.csv")
