"""One writer at a time per index: a second build, --add or --delete waits for the first, says who
it waits for, and a writer that dies releases the lock with its process."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

from hoprag.kg.store import WRITER_LOCK, KGIndexError, index_writer_lock
from indexing.config import IndexConfig
from indexing.pipeline import build_index


def test_a_second_writer_waits_for_the_first_and_names_it(tmp_path: Path, caplog) -> None:
    order: list[str] = []

    def second() -> None:
        with index_writer_lock(tmp_path, wait_note_s=0.1):
            order.append("second")

    with caplog.at_level(logging.WARNING, logger="hoprag.kg.store"):
        with index_writer_lock(tmp_path):
            thread = threading.Thread(target=second)
            thread.start()
            time.sleep(0.6)
            assert thread.is_alive()  # blocked behind the first writer
            order.append("first")
        thread.join(timeout=10)
    assert order == ["first", "second"]
    waited = [r.getMessage() for r in caplog.records if "waiting for it to finish" in r.getMessage()]
    assert waited and "pid " in waited[0]


def test_build_index_holds_the_lock(tmp_path: Path) -> None:
    """An --add on a path another writer holds waits (here it then finds no index to extend)."""
    failures: list[BaseException] = []

    def add() -> None:
        try:
            build_index(tmp_path / "index", IndexConfig(), add=True)
        except BaseException as exc:
            failures.append(exc)

    with index_writer_lock(tmp_path / "index"):
        thread = threading.Thread(target=add)
        thread.start()
        time.sleep(0.6)
        assert thread.is_alive() and not failures
    thread.join(timeout=30)
    assert len(failures) == 1 and isinstance(failures[0], KGIndexError)
    assert "no index to modify" in str(failures[0])


def test_a_killed_writer_leaves_no_lock_behind(tmp_path: Path) -> None:
    code = (
        "import sys, time; from pathlib import Path; from hoprag.kg.store import index_writer_lock\n"
        "with index_writer_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        assert "pid " in (tmp_path / WRITER_LOCK).read_text()
        child.kill()
        child.wait(timeout=10)
        got = threading.Event()

        def take() -> None:
            with index_writer_lock(tmp_path):
                got.set()

        threading.Thread(target=take, daemon=True).start()
        assert got.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()


def test_an_uncontended_lock_is_taken_at_once(tmp_path: Path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="hoprag.kg.store"), index_writer_lock(tmp_path, 0.0):
        pass
    assert not caplog.records
