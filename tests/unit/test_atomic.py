"""hoprag.atomic: a file is replaced whole or not at all; nothing is left behind."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from hoprag.atomic import atomic_file, atomic_path, atomic_write_json, atomic_write_text


def test_a_write_replaces_the_file_whole_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "manifest.json"
    atomic_write_json(target, {"a": 1}, indent=2)
    atomic_write_json(target, {"b": 2})
    assert json.loads(target.read_text()) == {"b": 2}
    assert [p.name for p in target.parent.iterdir()] == ["manifest.json"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # not mkstemp's private 0600


def test_a_failing_writer_leaves_the_old_file_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "progress.json"
    atomic_write_text(target, "old")
    with pytest.raises(RuntimeError), atomic_file(target) as fh:
        fh.write("half of the new")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["progress.json"]
    with pytest.raises(OSError), atomic_path(tmp_path / "t.parquet"):
        raise OSError("disk full")
    assert [p.name for p in tmp_path.iterdir()] == ["progress.json"]


def test_writers_that_take_a_path_and_binary_files(tmp_path: Path) -> None:
    with atomic_path(tmp_path / "part.bin") as tmp:
        tmp.write_bytes(b"\x00\x01")
    with atomic_file(tmp_path / "v.npy", "wb") as fh:
        fh.write(b"\x02")
    assert (tmp_path / "part.bin").read_bytes() == b"\x00\x01" and (
        tmp_path / "v.npy"
    ).read_bytes() == b"\x02"
    with pytest.raises(ValueError, match="whole file"):
        atomic_file(tmp_path / "x", "a").__enter__()
