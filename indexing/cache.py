"""The per-document extraction cache: append-only Parquet shards inside the index directory.

Each finished Ray Data batch is written as its own shard (temp file + rename), so an interrupted
run keeps every batch that completed; re-running skips those documents. Records are keyed by
:func:`indexing.extract.extraction_key` (content hash + model + prompt version + chunking).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hoprag.atomic import atomic_path
from hoprag.kg.tables import EXTRACTION_CACHE
from indexing.extract import ExtractionRecord

logger = logging.getLogger(__name__)

# Failures of the LLM call itself are transient (timeouts, 5xx): retry them on the next run.
RETRY_STATUSES = frozenset({"llm_error"})


class ExtractionCache:
    """Read and append extraction records for one index directory."""

    def __init__(self, index_dir: Path) -> None:
        self.dir = Path(index_dir) / EXTRACTION_CACHE

    def load(self) -> dict[str, ExtractionRecord]:
        """All cached records, later shards winning; unreadable shards are skipped with a warning."""
        records: dict[str, ExtractionRecord] = {}
        if not self.dir.is_dir():
            return records
        for shard in sorted(self.dir.glob("part-*.parquet")):
            try:
                rows = pq.read_table(shard).to_pylist()
            except (OSError, pa.ArrowInvalid) as exc:
                logger.warning("skipping unreadable cache shard %s: %s", shard, exc)
                continue
            for row in rows:
                records[row["doc_key"]] = ExtractionRecord.from_row(row)
        return records

    def append_rows(self, rows: list[dict[str, object]]) -> Path | None:
        """Persist one batch of records atomically; returns the shard path."""
        if not rows:
            return None
        name = f"part-{time.time_ns():020d}-{os.getpid()}.parquet"
        with atomic_path(self.dir / name) as tmp:
            pq.write_table(pa.Table.from_pylist(rows), tmp)
        return self.dir / name

    def compact(self, keep: set[str] | None = None) -> None:
        """Merge all shards into one (optionally keeping only ``keep`` keys); atomic like appends."""
        shards = sorted(self.dir.glob("part-*.parquet")) if self.dir.is_dir() else []
        if len(shards) <= 1 and keep is None:
            return
        records = self.load()
        rows = [r.to_row() for k, r in sorted(records.items()) if keep is None or k in keep]
        new = self.append_rows(rows)
        for shard in shards:
            if shard != new:
                shard.unlink(missing_ok=True)
