"""Atomic snapshot writes and manifest handling for KG index directories."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hoprag.kg.tables import FORMAT_VERSION, MANIFEST, SNAPSHOTS, KGTables


class KGIndexError(RuntimeError):
    """An index directory that is missing, half-written or corrupt."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON via a temp file in the same directory and ``os.replace`` (readers never see half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _tables_to_files(tables: KGTables, out: Path) -> None:
    pq.write_table(tables.documents, out / "documents.parquet")
    pq.write_table(
        pa.table(
            {
                "entity_id": pa.array(np.arange(len(tables.entity_names), dtype=np.int32)),
                "name": pa.array(tables.entity_names, pa.string()),
                "surface": pa.array(tables.entity_surface, pa.string()),
                "num_docs": pa.array(tables.entity_num_docs.astype(np.int32)),
            }
        ),
        out / "entities.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "relation_id": pa.array(np.arange(len(tables.relation_names), dtype=np.int32)),
                "name": pa.array(tables.relation_names, pa.string()),
            }
        ),
        out / "relations.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "triple_id": pa.array(np.arange(tables.num_triples, dtype=np.int32)),
                "head": pa.array(tables.head.astype(np.int32)),
                "relation": pa.array(tables.relation.astype(np.int32)),
                "tail": pa.array(tables.tail.astype(np.int32)),
                "kind": pa.array(tables.kind.astype(np.int8)),
                "doc_ids": pa.array(tables.triple_doc_ids, pa.list_(pa.int32())),
            }
        ),
        out / "triples.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "doc_id": pa.array(tables.doc_entity_doc.astype(np.int32)),
                "entity_id": pa.array(tables.doc_entity_entity.astype(np.int32)),
            }
        ),
        out / "doc_entities.parquet",
    )
    if tables.questions is not None:
        pq.write_table(tables.questions, out / "questions.parquet")
    np.save(out / "entity_embeddings.npy", tables.entity_embeddings.astype(np.float32))
    np.save(out / "relation_embeddings.npy", tables.relation_embeddings.astype(np.float32))
    adj = tables.adjacency
    np.savez(
        out / "adjacency.npz",
        indptr=adj.indptr,
        neighbor=adj.neighbor,
        triple_id=adj.triple_id,
        outgoing=adj.outgoing,
    )


def write_snapshot(index_dir: Path, tables: KGTables, manifest_fields: dict[str, Any]) -> dict[str, Any]:
    """Write ``tables`` as a new snapshot, then switch ``manifest.json`` to it atomically.

    Until the manifest is replaced, readers keep using the previous snapshot; a crash at any
    point leaves either the old or the new index loadable, never a mix. Older snapshots are
    removed after the switch.
    """
    index_dir.mkdir(parents=True, exist_ok=True)
    snapshots = index_dir / SNAPSHOTS
    snapshots.mkdir(exist_ok=True)
    name = time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}-{time.monotonic_ns() % 10**6:06d}"
    tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=snapshots))
    try:
        _tables_to_files(tables, tmp)
        checksums = {p.name: _sha256(p) for p in sorted(tmp.iterdir()) if p.is_file()}
        os.replace(tmp, snapshots / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    manifest = {
        "format_version": FORMAT_VERSION,
        "snapshot": f"{SNAPSHOTS}/{name}",
        "checksums": checksums,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **manifest_fields,
    }
    write_json_atomic(index_dir / MANIFEST, manifest)
    for old in snapshots.iterdir():
        if old.name != name:
            shutil.rmtree(old, ignore_errors=True)
    return manifest


def read_manifest(index_dir: Path) -> dict[str, Any]:
    """The manifest of a complete index, or :class:`KGIndexError` explaining what is wrong."""
    path = Path(index_dir) / MANIFEST
    if not path.is_file():
        raise KGIndexError(
            f"{index_dir} is not a hoprag index (no {MANIFEST}); build one with `hoprag index --corpus ... --out {index_dir}`"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise KGIndexError(f"{path} is not valid JSON: {exc}") from exc
    if manifest.get("format_version") != FORMAT_VERSION:
        raise KGIndexError(
            f"{index_dir} has index format {manifest.get('format_version')}, this hoprag reads {FORMAT_VERSION}"
        )
    if not (Path(index_dir) / manifest["snapshot"]).is_dir():
        raise KGIndexError(f"{index_dir}: snapshot {manifest['snapshot']} named by the manifest is missing")
    return manifest


def verify_checksums(index_dir: Path, manifest: dict[str, Any]) -> list[str]:
    """Names of snapshot files whose content no longer matches the manifest (empty when intact)."""
    snap = Path(index_dir) / manifest["snapshot"]
    bad = []
    for fname, digest in manifest.get("checksums", {}).items():
        p = snap / fname
        if not p.is_file() or _sha256(p) != digest:
            bad.append(fname)
    return bad
