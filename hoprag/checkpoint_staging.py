"""Node-local folders where a training worker writes a checkpoint before Ray Train copies it.

A plain ``tempfile.TemporaryDirectory`` is removed when the ``with`` block ends, but a worker that is
killed while saving (a lost node, the OOM killer, the killed-worker tests) never gets there, and its
half-written folder (~124 MB for the MiniLM GLM's DeepSpeed shard) stays in /tmp for good. Each
staging folder's name therefore carries its owner's process id, and every new staging folder first
removes the folders of owners that no longer exist on this node.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STAGING_PREFIX = "hoprag-ckpt-"


def _owner_pid(name: str) -> int | None:
    """The process id in a staging folder's name (``hoprag-ckpt-<pid>-<random>``), else None."""
    pid, _, _ = name.removeprefix(STAGING_PREFIX).partition("-")
    return int(pid) if pid.isdigit() else None


def _is_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this node (one we may not signal counts as existing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reclaim_orphaned_staging(root: str | Path | None = None) -> list[Path]:
    """Remove the staging folders under ``root`` (the temp dir) whose owner process has exited;
    returns what was removed. Folders of live processes and other names are left alone."""
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    for path in base.glob(f"{STAGING_PREFIX}*"):
        pid = _owner_pid(path.name)
        if pid is None or pid == os.getpid() or _is_alive(pid) or not path.is_dir():
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed


@contextmanager
def checkpoint_staging(root: str | Path | None = None) -> Iterator[Path]:
    """A fresh staging folder under ``root`` (the temp dir), removed on exit; orphans of killed
    workers are reclaimed first."""
    reclaim_orphaned_staging(root)
    with tempfile.TemporaryDirectory(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=root) as tmp:
        yield Path(tmp)
