"""Writing a file so that readers see the old content or the new, never half: the one way hoprag
replaces a file in place (manifests, caches, progress, job records, generated benchmarks).

The new content goes to a temp file with a unique name in the same directory (so the rename stays
on one filesystem), is flushed and fsynced, then ``os.replace``-d onto the target; on any error the
temp file is removed and the target is left as it was.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

# mkstemp creates files private (0600); what hoprag writes is shared like any file a user creates.
FILE_MODE = 0o644


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temp path beside ``path`` for a writer that takes a file name (e.g. ``pyarrow.parquet``);
    on a clean exit the file written there is fsynced and replaces ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


@contextmanager
def atomic_file(
    path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8", newline: str | None = None
) -> Iterator[IO[Any]]:
    """An open temp file beside ``path`` (``mode`` ``"w"`` or ``"wb"``); on a clean exit it is
    closed, then fsynced and put in place by :func:`atomic_path`."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_file writes a whole file: mode 'w' or 'wb', not {mode!r}")
    with atomic_path(path) as tmp:
        binary = mode == "wb"
        with open(
            tmp, mode, encoding=None if binary else encoding, newline=None if binary else newline
        ) as fh:
            yield fh


def atomic_write_text(path: str | os.PathLike[str], text: str, newline: str | None = None) -> None:
    """Replace ``path``'s content with ``text`` (UTF-8)."""
    with atomic_file(path, newline=newline) as fh:
        fh.write(text)


def atomic_write_json(path: str | os.PathLike[str], payload: Any, **dumps: Any) -> None:
    """Replace ``path``'s content with ``payload`` as JSON (``dumps``: :func:`json.dumps` options)."""
    atomic_write_text(path, json.dumps(payload, **dumps))


@contextmanager
def file_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block: one process at a
    time builds a cached artifact (a converted or assembled model) while the others wait for it."""
    lock = Path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
