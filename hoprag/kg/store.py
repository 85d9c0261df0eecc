"""Atomic snapshot writes, manifest validation and checksum verification for KG index directories.

The manifest records, for every snapshot file, its sha256 (``checksums``), its size (``sizes``)
and a *sampled* sha256 (``samples``: the hash of ``chunks`` fixed-offset chunks of
``chunk_bytes``, spread from the first to the last byte). Opening an index verifies it
(:func:`verify_snapshot`):

- ``"full"``: the sha256 of every file (``hoprag index stats --verify``; ``--add`` / ``--delete``).
- ``"fast"`` (the default of :class:`~hoprag.kg.index.KGIndex`): files up to
  :data:`FULL_HASH_MAX_BYTES` by sha256, larger ones by size plus the sampled hash, so opening a
  large index reads a few MB, not all of it. A truncated, extended, half-copied or replaced file
  is caught; a change that keeps the size and misses every sampled chunk is caught only by
  ``"full"``. Manifests written before ``sizes`` / ``samples`` existed are verified in full.
- ``"none"``: no check.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hoprag.atomic import atomic_write_json
from hoprag.kg.tables import FORMAT_VERSION, MANIFEST, SNAPSHOTS, KGTables, Theses, ann_file, embeddings_file

VerifyMode = Literal["none", "fast", "full"]

# "fast" verification hashes files up to this size in full; larger ones by size + sampled chunks.
FULL_HASH_MAX_BYTES = 4 << 20
# Sampled hash of a large file: this many chunks of this many bytes, first and last byte included.
SAMPLE_CHUNKS = 16
SAMPLE_CHUNK_BYTES = 64 << 10
# Files every snapshot holds (questions.parquet only when the corpus has questions).
REQUIRED_FILES = (
    "documents.parquet",
    "entities.parquet",
    "relations.parquet",
    "triples.parquet",
    "doc_entities.parquet",
    "entity_embeddings.npy",
    "relation_embeddings.npy",
    "adjacency.npz",
)


class KGIndexError(RuntimeError):
    """An index directory that is missing, half-written or corrupt."""


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _sample_offsets(size: int, chunks: int, chunk_bytes: int) -> list[int]:
    """Where the sampled chunks start: the whole file when it is small, else ``chunks`` evenly
    spread chunks, the first at 0 and the last ending at the last byte."""
    if size <= chunks * chunk_bytes:
        return list(range(0, size, chunk_bytes))
    last = size - chunk_bytes
    return [i * last // (chunks - 1) for i in range(chunks)]


def sampled_sha256(path: Path, chunks: int = SAMPLE_CHUNKS, chunk_bytes: int = SAMPLE_CHUNK_BYTES) -> str:
    """sha256 of the file's size and of its sampled chunks (see :func:`_sample_offsets`)."""
    size = path.stat().st_size
    h = hashlib.sha256(str(size).encode())
    with path.open("rb") as fh:
        for offset in _sample_offsets(size, chunks, chunk_bytes):
            fh.seek(offset)
            h.update(fh.read(chunk_bytes))
    return h.hexdigest()


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON (indented, sorted keys) so that readers never see half (:mod:`hoprag.atomic`)."""
    atomic_write_json(path, payload, indent=2, sort_keys=True)


def _tables_to_files(tables: KGTables, out: Path, ann_min_rows: int | None = None) -> None:
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
    if tables.theses is not None:
        write_theses(tables.theses, out, ann_min_rows)
    np.save(out / "relation_embeddings.npy", tables.relation_embeddings.astype(np.float32))
    for name, vectors in (
        ("entity", tables.entity_embeddings),
        ("triple", tables.triple_embeddings),
        ("document", tables.document_embeddings),
    ):
        if vectors is not None:
            write_vectors(name, vectors, out, ann_min_rows)
    adj = tables.adjacency
    np.savez(
        out / "adjacency.npz",
        indptr=adj.indptr,
        neighbor=adj.neighbor,
        triple_id=adj.triple_id,
        outgoing=adj.outgoing,
    )


def write_vectors(name: str, vectors: np.ndarray, out: Path, ann_min_rows: int | None) -> None:
    """``NAME_embeddings.npy``, and ``NAME_ann.faiss`` when there are at least ``ann_min_rows`` rows."""
    np.save(out / embeddings_file(name), np.asarray(vectors, dtype=np.float32))
    if ann_min_rows is not None and len(vectors) and len(vectors) >= ann_min_rows:
        from hoprag.vectorsearch import build_ann_index

        build_ann_index(np.load(out / embeddings_file(name), mmap_mode="r"), out / ann_file(name))


def write_theses(theses: Theses, out: Path, ann_min_rows: int | None = None) -> list[Path]:
    """The memory graph's thesis files (``theses.parquet``, their vectors and ANN index); returns them."""
    pq.write_table(
        pa.table(
            {
                "thesis_id": pa.array(np.arange(len(theses), dtype=np.int32)),
                "text": pa.array(theses.texts, pa.string()),
                "doc_ids": pa.array(theses.doc_ids, pa.list_(pa.int32())),
                "entity_ids": pa.array(theses.entity_ids, pa.list_(pa.int32())),
            }
        ),
        out / "theses.parquet",
    )
    write_vectors("thesis", theses.embeddings, out, ann_min_rows)
    names = ("theses.parquet", embeddings_file("thesis"), ann_file("thesis"))
    return [out / n for n in names if (out / n).is_file()]


WRITER_LOCK = ".writer.lock"


def _try_flock(handle: Any) -> bool:
    """Take ``handle``'s exclusive flock if it is free (False when another holder has it)."""
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def index_writer_lock(index_dir: Path, wait_note_s: float = 1.0) -> Iterator[None]:
    """Hold the index directory's writer lock (``.writer.lock``, an exclusive ``flock``) for the
    block: one build, ``--add`` or ``--delete`` at a time per index, whoever runs it (the CLI, a
    serving app's update job, a second machine on a shared volume that honours ``flock``).

    Without it, two writers would each extend the snapshot they read and the last manifest would
    drop the other's documents, and one writer's clean-up could delete the other's half-written
    snapshot. A second writer waits (saying so, with the holder's pid and start time, after
    ``wait_note_s``); the lock goes with the process, so a killed writer never leaves it held.
    Readers (serving replicas) never take it: they follow the manifest.
    """
    index_dir.mkdir(parents=True, exist_ok=True)
    path = index_dir / WRITER_LOCK
    with open(path, "a+", encoding="utf-8") as handle:
        deadline = time.monotonic() + wait_note_s
        while not _try_flock(handle):
            if time.monotonic() >= deadline:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                logging.getLogger(__name__).warning(
                    "%s is being written by %s; waiting for it to finish", index_dir, holder
                )
                fcntl.flock(handle, fcntl.LOCK_EX)
                break
            time.sleep(0.05)
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(
                f"pid {os.getpid()} on {os.uname().nodename} since {time.strftime('%Y-%m-%dT%H:%M:%S')}"
            )
            handle.flush()
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_snapshot(
    index_dir: Path, tables: KGTables, manifest_fields: dict[str, Any], ann_min_rows: int | None = None
) -> dict[str, Any]:
    """Write ``tables`` as a new snapshot, then switch ``manifest.json`` to it atomically.

    Each vector matrix of at least ``ann_min_rows`` rows also gets a faiss ANN index
    (``NAME_ann.faiss``, :func:`hoprag.vectorsearch.build_ann_index`); ``None`` writes none.

    Until the manifest is replaced, readers keep using the previous snapshot; a crash at any
    point leaves either the old or the new index loadable, never a mix. After the switch the
    snapshot just replaced stays (replicas serving it swap to the new one within seconds) and
    older ones are removed.
    """
    index_dir.mkdir(parents=True, exist_ok=True)
    snapshots = index_dir / SNAPSHOTS
    snapshots.mkdir(exist_ok=True)
    name = time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}-{time.monotonic_ns() % 10**6:06d}"
    tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=snapshots))
    try:
        _tables_to_files(tables, tmp, ann_min_rows)
        files = [p for p in sorted(tmp.iterdir()) if p.is_file()]
        checksums = {p.name: _sha256(p) for p in files}
        sizes = {p.name: p.stat().st_size for p in files}
        samples = {
            "chunks": SAMPLE_CHUNKS,
            "chunk_bytes": SAMPLE_CHUNK_BYTES,
            "sha256": {p.name: sampled_sha256(p, SAMPLE_CHUNKS, SAMPLE_CHUNK_BYTES) for p in files},
        }
        os.replace(tmp, snapshots / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    manifest = {
        "format_version": FORMAT_VERSION,
        "snapshot": f"{SNAPSHOTS}/{name}",
        "checksums": checksums,
        "sizes": sizes,
        "samples": samples,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **manifest_fields,
    }
    replaced = _current_snapshot_name(index_dir)
    write_json_atomic(index_dir / MANIFEST, manifest)
    for old in snapshots.iterdir():
        if old.name not in (name, replaced):
            shutil.rmtree(old, ignore_errors=True)
    return manifest


def _current_snapshot_name(index_dir: Path) -> str | None:
    """The snapshot the manifest points at now (kept one update longer: a serving replica may still
    be answering from it while it loads the new one), or None."""
    try:
        snapshot = json.loads((index_dir / MANIFEST).read_text(encoding="utf-8")).get("snapshot")
    except (OSError, ValueError, AttributeError):
        return None
    return snapshot.rsplit("/", 1)[-1] if isinstance(snapshot, str) else None


def read_manifest(index_dir: Path) -> dict[str, Any]:
    """The manifest of a complete index, or :class:`KGIndexError` explaining what is wrong.

    Checks its shape (never a ``KeyError`` / ``TypeError`` later): ``snapshot`` is
    ``snapshots/<name>`` inside the index directory (no absolute path, no ``..``) and exists,
    ``checksums`` maps plain file names to sha256 digests and covers every table the loader reads,
    ``sizes`` / ``samples`` (absent in older manifests) have the right types.
    """
    path = Path(index_dir) / MANIFEST
    if not path.is_file():
        raise KGIndexError(
            f"{index_dir} is not a hoprag index (no {MANIFEST}); build one with `hoprag index --corpus ... --out {index_dir}`"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise KGIndexError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(manifest, dict):
        raise KGIndexError(f"{path} does not hold a JSON object")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise KGIndexError(
            f"{index_dir} has index format {manifest.get('format_version')}, this hoprag reads {FORMAT_VERSION}"
        )
    _check_snapshot_entry(path, manifest)
    _check_integrity_entries(path, manifest)
    if not (Path(index_dir) / manifest["snapshot"]).is_dir():
        raise KGIndexError(f"{index_dir}: snapshot {manifest['snapshot']} named by the manifest is missing")
    return manifest


def _damaged(path: Path, problem: str) -> KGIndexError:
    return KGIndexError(f"{path}: {problem}; the index is damaged, rebuild it with `hoprag index`")


def _check_snapshot_entry(path: Path, manifest: dict[str, Any]) -> None:
    snapshot = manifest.get("snapshot")
    if snapshot is None:
        raise _damaged(path, "no 'snapshot' entry")
    if not isinstance(snapshot, str):
        raise _damaged(path, f"'snapshot' must be a string, not {type(snapshot).__name__}")
    parts = PurePosixPath(snapshot).parts
    if (
        PurePosixPath(snapshot).is_absolute()
        or "\\" in snapshot
        or ".." in parts
        or len(parts) != 2
        or parts[0] != SNAPSHOTS
        or parts[1].startswith(".")
    ):
        raise _damaged(
            path,
            f"'snapshot' is {snapshot!r}, but must be a relative path {SNAPSHOTS}/<name> inside the index "
            "directory (no absolute path, no '..')",
        )


def _is_file_name(name: object) -> bool:
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\\" not in name


def _check_integrity_entries(path: Path, manifest: dict[str, Any]) -> None:
    checksums = manifest.get("checksums")
    if checksums is None:
        raise _damaged(path, "no 'checksums' entry")
    if not isinstance(checksums, dict) or not all(
        _is_file_name(k) and isinstance(v, str) for k, v in checksums.items()
    ):
        raise _damaged(path, "'checksums' must map snapshot file names to sha256 hex digests")
    missing = [f for f in REQUIRED_FILES if f not in checksums]
    if missing:
        raise _damaged(path, f"'checksums' lists no {', '.join(missing)}")
    sizes = manifest.get("sizes")
    if sizes is not None and not (
        isinstance(sizes, dict)
        and all(_is_file_name(k) and type(v) is int and v >= 0 for k, v in sizes.items())
    ):
        raise _damaged(path, "'sizes' must map snapshot file names to byte counts")
    samples = manifest.get("samples")
    if samples is not None and not (
        isinstance(samples, dict)
        and type(samples.get("chunks")) is int
        and samples["chunks"] >= 2
        and type(samples.get("chunk_bytes")) is int
        and samples["chunk_bytes"] >= 1
        and isinstance(samples.get("sha256"), dict)
        and all(_is_file_name(k) and isinstance(v, str) for k, v in samples["sha256"].items())
    ):
        raise _damaged(path, "'samples' must hold chunks, chunk_bytes and a sha256 per file name")


def verify_checksums(index_dir: Path, manifest: dict[str, Any], mode: VerifyMode = "full") -> list[str]:
    """Names of snapshot files that are missing or no longer match the manifest (empty when intact).

    ``mode`` is ``"full"`` (sha256 of every file) or ``"fast"`` (see the module docstring).
    """
    snap = Path(index_dir) / manifest["snapshot"]
    sizes = manifest.get("sizes") or {}
    samples = manifest.get("samples") or {}
    sampled = samples.get("sha256") or {}
    bad = []
    for fname, digest in manifest["checksums"].items():
        p = snap / fname
        if not p.is_file():
            bad.append(fname)
            continue
        size = p.stat().st_size
        if fname in sizes and sizes[fname] != size:
            bad.append(fname)
        elif mode == "fast" and size > FULL_HASH_MAX_BYTES and fname in sampled and fname in sizes:
            if sampled_sha256(p, samples["chunks"], samples["chunk_bytes"]) != sampled[fname]:
                bad.append(fname)
        elif _sha256(p) != digest:
            bad.append(fname)
    return bad


def verify_snapshot(index_dir: Path, manifest: dict[str, Any], mode: VerifyMode) -> None:
    """:class:`KGIndexError` naming every snapshot file that fails ``mode``'s check."""
    if mode == "none":
        return
    bad = verify_checksums(index_dir, manifest, mode)
    if bad:
        what = "file " + bad[0] + " does" if len(bad) == 1 else "files " + ", ".join(bad) + " do"
        raise KGIndexError(
            f"{index_dir}: snapshot {what} not match the checksum in {MANIFEST} (missing, corrupted, truncated "
            "or changed after the build); rebuild the index with `hoprag index`"
        )
