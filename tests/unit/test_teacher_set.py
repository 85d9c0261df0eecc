"""The teacher set: a teacher's cached answers carried from run to run (distillation/teacher_set.py):
what is kept, what is asked again, and a file that is not one."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from distillation.config import DistillConfig
from distillation.teacher_set import (
    TeacherSetError,
    export_teacher_set,
    provenance_path,
    read_teacher_set,
    seed_teacher_cache,
    teacher_cache,
)
from indexing.extract import ExtractionRecord


def _record(key: str, status: str = "ok", model: str = "llamacpp:qwen") -> ExtractionRecord:
    triples = [("Mira Castell", "born in", "Dornwick")] if status == "ok" else []
    return ExtractionRecord(key, status, model, triples, ["Mira Castell", "Dornwick"], dropped=Counter())  # type: ignore[arg-type]


def test_a_run_exports_its_answers_and_the_next_run_starts_from_them(tmp_path: Path) -> None:
    path = tmp_path / "sets" / "qwen.parquet"
    teacher_cache(tmp_path / "run1").append_rows(
        [_record("a").to_row(), _record("b", "no_triples").to_row(), _record("c", "llm_error").to_row()]
    )
    assert export_teacher_set(tmp_path / "run1", path) == 2  # the failed call is asked again next time
    kept = read_teacher_set(path)
    assert sorted(kept) == ["a", "b"] and kept["a"].triples == [("Mira Castell", "born in", "Dornwick")]
    provenance = json.loads(provenance_path(path).read_text())
    assert provenance["records"] == 2 and provenance["statuses"] == {"no_triples": 1, "ok": 1}
    assert list(provenance["by_teacher"].values()) == [2]
    # a new run directory: seeded once, not twice; its new answers are merged into the set
    run2 = tmp_path / "run2"
    assert seed_teacher_cache(run2, path) == 2 and seed_teacher_cache(run2, path) == 0
    assert sorted(teacher_cache(run2).load()) == ["a", "b"]
    teacher_cache(run2).append_rows([_record("d").to_row()])
    assert export_teacher_set(run2, path) == 3 and sorted(read_teacher_set(path)) == ["a", "b", "d"]


def test_an_absent_set_is_empty_and_a_foreign_file_is_refused(tmp_path: Path) -> None:
    assert read_teacher_set(tmp_path / "none.parquet") == {}
    assert seed_teacher_cache(tmp_path / "run", tmp_path / "none.parquet") == 0
    bad = tmp_path / "notes.parquet"
    bad.write_text("not parquet")
    with pytest.raises(TeacherSetError, match="is not a teacher set"):
        read_teacher_set(bad)
    assert isinstance(TeacherSetError("x"), ValueError)  # the CLI reports it as a user error


def test_the_config_takes_a_teacher_set_path() -> None:
    config = DistillConfig.model_validate({"teacher_set": "benchmarks/data/real/teacher/qwen.parquet"})
    assert config.teacher_set == Path("benchmarks/data/real/teacher/qwen.parquet")
    assert DistillConfig().teacher_set is None
