"""A teacher's answers kept beside the benchmark data, so that teacher time is paid once.

A strong teacher on the CPU (the 1.5B on llama.cpp: ~10 s a paragraph) needs hours for the real
samples' paragraphs, more than one session. ``teacher_set`` (a Parquet file, e.g. under
``benchmarks/data/real/teacher/``) carries its answers from run to run: before the teacher is asked,
the run's teacher cache is seeded with the file's records (:func:`seed_teacher_cache`), so only
passages the file lacks cost teacher time; after the teacher stage every successful record of the
run's cache is merged into the file (:func:`export_teacher_set`), with a provenance sidecar
(``NAME.provenance.json``: teacher model ids and prompt versions with their counts). Records are the
extraction cache's rows (:class:`indexing.extract.ExtractionRecord`), keyed like the cache (content,
model, prompt version, chunking), so a record is only ever reused for the same question to the same
teacher. A failed call (``llm_error``) is never kept: the next run asks again.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hoprag.atomic import atomic_path, atomic_write_json
from indexing.cache import RETRY_STATUSES, ExtractionCache
from indexing.extract import ExtractionRecord

logger = logging.getLogger(__name__)

TEACHER_DIR = "teacher"


class TeacherSetError(ValueError):
    """A teacher set that cannot be read as one."""


def teacher_cache(run_dir: Path) -> ExtractionCache:
    """The teacher's resume cache of a distillation run (``RUN_DIR/teacher``)."""
    return ExtractionCache(Path(run_dir) / TEACHER_DIR)


def read_teacher_set(path: Path) -> dict[str, ExtractionRecord]:
    """The records of a teacher set by cache key; an absent file is an empty set."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        rows = pq.read_table(path).to_pylist()
        return {str(row["doc_key"]): ExtractionRecord.from_row(row) for row in rows}
    except (OSError, pa.ArrowInvalid, KeyError, TypeError, ValueError) as exc:
        raise TeacherSetError(
            f"{path} is not a teacher set (a Parquet file of teacher cache rows): {exc}"
        ) from exc


def seed_teacher_cache(run_dir: Path, path: Path) -> int:
    """Copy the records of the teacher set ``path`` that the run's teacher cache lacks into it, as
    one shard; returns how many."""
    kept = read_teacher_set(path)
    cache = teacher_cache(run_dir)
    cached = cache.load()
    missing = [r.to_row() for key, r in sorted(kept.items()) if key not in cached]
    cache.append_rows(missing)
    if kept:
        logger.info("teacher set %s: %d records, %d new to this run's cache", path, len(kept), len(missing))
    return len(missing)


def export_teacher_set(run_dir: Path, path: Path) -> int:
    """Merge every successful record of the run's teacher cache into the teacher set ``path``
    (written atomically, sorted by key, with its provenance sidecar); returns the set's size."""
    path = Path(path)
    records = read_teacher_set(path)
    records.update(
        (key, r) for key, r in teacher_cache(run_dir).load().items() if r.status not in RETRY_STATUSES
    )
    rows = [records[key].to_row() for key in sorted(records)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pylist(rows), tmp, compression="zstd")
    by_model = Counter(f"{row['model_id']} (prompt {row['prompt_version']})" for row in rows)
    provenance = {
        "records": len(rows),
        "by_teacher": dict(sorted(by_model.items())),
        "statuses": dict(sorted(Counter(str(row["status"]) for row in rows).items())),
        "updated": datetime.now(UTC).isoformat(timespec="seconds"),
        "how": "hoprag distill with teacher_set set (distillation/teacher_set.py): the teacher's cached "
        "answers, keyed by passage content, teacher model, prompt version and chunking",
    }
    atomic_write_json(provenance_path(path), provenance, indent=1)
    return len(rows)


def provenance_path(path: Path) -> Path:
    """The provenance sidecar of a teacher set: ``NAME.provenance.json`` beside ``NAME.parquet``."""
    return Path(path).with_suffix(".provenance.json")
