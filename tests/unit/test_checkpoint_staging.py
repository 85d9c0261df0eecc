"""Checkpoint staging folders: removed after use, and reclaimed after a killed owner."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hoprag.checkpoint_staging import STAGING_PREFIX, checkpoint_staging, reclaim_orphaned_staging

# A child that makes a staging folder, writes into it and waits to be killed mid-"save".
CHILD = """
import sys, time
from hoprag.checkpoint_staging import checkpoint_staging
with checkpoint_staging(sys.argv[1]) as staging:
    (staging / "shard.pt").write_bytes(b"x" * 4096)
    print(staging, flush=True)
    time.sleep(600)
"""


def _killed_owner_folder(root: Path) -> Path:
    """A staging folder left behind by a process killed with SIGKILL while it was open."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    folder = Path(child.stdout.readline().strip())
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert folder.is_dir() and (folder / "shard.pt").exists()  # no cleanup ran in the child
    return folder


def test_a_staging_folder_carries_its_owner_and_is_removed_after_use(tmp_path: Path) -> None:
    with checkpoint_staging(tmp_path) as staging:
        assert staging.parent == tmp_path
        assert staging.name.startswith(f"{STAGING_PREFIX}{os.getpid()}-")
        (staging / "state.json").write_text("{}")
    assert not staging.exists()


def test_the_staging_folder_is_removed_when_the_save_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), checkpoint_staging(tmp_path) as staging:
        (staging / "half.pt").write_bytes(b"x")
        raise RuntimeError("disk full")
    assert not staging.exists()


def test_a_killed_workers_folder_is_reclaimed_by_the_next_save(tmp_path: Path) -> None:
    orphan = _killed_owner_folder(tmp_path)
    with checkpoint_staging(tmp_path) as staging:
        assert not orphan.exists()
        assert staging.exists()


def test_live_owners_and_foreign_folders_are_left_alone(tmp_path: Path) -> None:
    mine = tmp_path / f"{STAGING_PREFIX}{os.getpid()}-abc"  # this process: in use
    parent = tmp_path / f"{STAGING_PREFIX}{os.getppid()}-def"  # a live process
    foreign = tmp_path / f"{STAGING_PREFIX}notapid"  # not our naming: never touched
    other = tmp_path / "someone-elses-dir"
    for folder in (mine, parent, foreign, other):
        folder.mkdir()
    orphan = _killed_owner_folder(tmp_path)
    assert reclaim_orphaned_staging(tmp_path) == [orphan]
    assert all(folder.is_dir() for folder in (mine, parent, foreign, other))
