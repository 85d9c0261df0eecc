"""Serving replicas follow an index's snapshots: retention on disk, the loaded set, the watcher."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from hoprag.kg.index import KGIndex
from hoprag.kg.store import write_snapshot
from serving.snapshots import SnapshotGoneError, SnapshotSet, SnapshotWatcher, current_snapshot
from tests.support.film_kg import film_tables


@pytest.fixture(scope="module")
def tables(embedder):
    return film_tables(embedder)


def _write(index: Path, tables) -> str:
    write_snapshot(index, tables, {"counts": {}, "embedder": "packaged:all-MiniLM-L6-v2"})
    return current_snapshot(index)


def test_an_update_keeps_the_snapshot_it_replaced_and_removes_older_ones(tmp_path: Path, tables) -> None:
    index = tmp_path / "index"
    first = _write(index, tables)
    reader = KGIndex(index).preload()  # a replica serving the first snapshot
    second = _write(index, tables)
    assert sorted(p.name for p in (index / "snapshots").iterdir()) == sorted([first, second])
    assert reader.documents.num_rows == KGIndex(index).documents.num_rows  # still readable
    third = _write(index, tables)
    assert sorted(p.name for p in (index / "snapshots").iterdir()) == sorted([second, third])
    # what the first reader had read or mapped stays usable after its files are gone
    assert (
        reader.snapshot_id == first and reader.triple_doc_ids and float(reader.entity_embeddings[0, 0]) != 0.5
    )


def test_the_snapshot_set_serves_current_and_previous_and_loads_the_new_current_on_demand(
    tmp_path: Path, tables
) -> None:
    index = tmp_path / "index"
    first = _write(index, tables)
    loads: list[str] = []

    def load(_: str) -> tuple[str, str]:
        name = current_snapshot(index)
        loads.append(name)
        return name, f"object of {name}"

    snapshots: SnapshotSet[str] = SnapshotSet(index, load)
    assert snapshots.load_current() == first and snapshots.get(None) == f"object of {first}"
    second = _write(index, tables)
    # a QA replica that swapped first names the new snapshot: loaded on demand, and made current
    assert snapshots.get(second) == f"object of {second}" and snapshots.current_name == second
    assert snapshots.get(first) == f"object of {first}"  # in-flight requests on the old one
    third = _write(index, tables)
    snapshots.load_current()
    assert snapshots.names == [second, third]
    with pytest.raises(SnapshotGoneError, match=first):
        snapshots.get(first)
    assert loads == [first, second, third]  # each loaded once


def test_the_watcher_reports_a_new_snapshot_and_retries_a_failed_load(tmp_path: Path, tables) -> None:
    index = tmp_path / "index"
    first = _write(index, tables)
    seen: list[str] = []
    failures = [1]
    changed = threading.Event()

    def on_change(name: str) -> None:
        if failures:
            failures.pop()
            raise OSError("disk hiccup")
        seen.append(name)
        changed.set()

    watcher = SnapshotWatcher(index, first, on_change, interval_s=0.05)
    try:
        time.sleep(0.2)
        assert seen == []  # nothing changed yet
        second = _write(index, tables)
        assert changed.wait(10)
        assert seen == [second] and not failures  # failed once, then loaded on the next tick
        time.sleep(0.2)
        assert seen == [second]  # reported once
    finally:
        watcher.stop()
