"""Serving replicas follow their index's snapshots: watch the manifest, load, swap.

An index update (a document job, or ``hoprag index --add/--delete`` run on the served path) writes
a new snapshot and switches ``manifest.json`` to it atomically (:func:`hoprag.kg.store.write_snapshot`).
A replica's :class:`SnapshotWatcher` sees the switch within its interval, loads the new snapshot
*beside* the one it is serving, and only then swaps: requests never wait for a load and never see
a half-loaded index. The snapshot just replaced stays on disk one update longer, and everything a
replica reads from it is read at load (:meth:`hoprag.kg.index.KGIndex.preload`).

QA and Retriever replicas swap independently, so a QA replica names its snapshot on every
retrieval: :class:`SnapshotSet` keeps the Retriever's current and previous snapshots, and loads the
manifest's current one on demand when a QA replica got there first.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

logger = logging.getLogger("ray.serve")

T = TypeVar("T")


def current_snapshot(index_dir: str | Path) -> str:
    """The name of the snapshot the index's manifest points at (a small JSON read)."""
    from hoprag.kg.store import read_manifest

    return str(read_manifest(Path(index_dir))["snapshot"]).rsplit("/", 1)[-1]


class SnapshotGoneError(RuntimeError):
    """A request named a snapshot this replica no longer holds (two updates passed meanwhile)."""


class SnapshotWatcher:
    """A daemon thread that calls ``on_change(name)`` whenever the index's manifest points at a
    snapshot other than the last one reported. A failing ``on_change`` (a load error) is logged and
    retried on the next tick; the replica keeps serving what it has."""

    def __init__(
        self,
        index_dir: str | Path,
        known: str,
        on_change: Callable[[str], None],
        interval_s: float,
        name: str = "snapshot-watch",
    ) -> None:
        self._index_dir = Path(index_dir)
        self._known = known
        self._on_change = on_change
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        if interval_s > 0:
            self._thread.start()

    def _run(self) -> None:
        failed_for: str | None = None
        while not self._stop.wait(self._interval_s):
            try:
                name = current_snapshot(self._index_dir)
            except Exception as exc:  # a manifest being replaced, a volume gone: keep serving
                logger.warning("index %s: cannot read the manifest: %s", self._index_dir, exc)
                continue
            if name == self._known:
                continue
            try:
                self._on_change(name)
            except Exception as exc:
                if failed_for != name:  # once per snapshot, not once per tick
                    logger.error("index %s: loading snapshot %s failed: %r", self._index_dir, name, exc)
                    failed_for = name
                continue
            logger.info("index %s: now serving snapshot %s", self._index_dir, name)
            self._known = name

    def stop(self) -> None:
        self._stop.set()


class SnapshotSet(Generic[T]):
    """What a replica has loaded per snapshot: the current one and the one before it (in-flight
    requests of QA replicas that have not swapped yet still name it). Thread-safe."""

    def __init__(self, index_dir: str | Path, load: Callable[[str], tuple[str, T]], keep: int = 2) -> None:
        """``load(name)`` loads the index's current snapshot and returns ``(its name, object)``
        (the manifest may have moved on since ``name`` was read: the name returned is the truth)."""
        self._index_dir = Path(index_dir)
        self._load = load
        self._keep = keep
        self._loaded: OrderedDict[str, T] = OrderedDict()
        self._load_lock = threading.Lock()
        self._lock = threading.Lock()
        self.current_name = ""

    def load_current(self) -> str:
        """Load the manifest's current snapshot (if not loaded yet) and make it current."""
        with self._load_lock:
            wanted = current_snapshot(self._index_dir)
            with self._lock:
                if wanted in self._loaded:
                    self._make_current(wanted)
                    return wanted
            name, value = self._load(wanted)
            with self._lock:
                self._loaded[name] = value
                self._make_current(name)
                while len(self._loaded) > self._keep:
                    self._loaded.popitem(last=False)
            return name

    def _make_current(self, name: str) -> None:
        self._loaded.move_to_end(name)
        self.current_name = name

    def get(self, name: str | None) -> T:
        """The object of snapshot ``name`` (``None``: the current one). A snapshot not loaded yet is
        loaded when it is the manifest's current one; an older one is :class:`SnapshotGoneError`."""
        with self._lock:
            key = name or self.current_name
            if key in self._loaded:
                return self._loaded[key]
        if name is not None and name == current_snapshot(self._index_dir):
            self.load_current()
            with self._lock:
                if name in self._loaded:
                    return self._loaded[name]
        raise SnapshotGoneError(
            f"snapshot {name} of {self._index_dir} is no longer loaded here (held: "
            f"{', '.join(self._loaded) or 'none'}); the request is retried on the current one"
        )

    @property
    def names(self) -> list[str]:
        with self._lock:
            return list(self._loaded)
