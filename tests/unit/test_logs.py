"""Quiet terminal: hoprag's lines on the terminal, framework logs in the run's log file."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from hoprag import logs

RAY_CONSOLE = logging.StreamHandler()  # a console handler as Ray installs at import


@pytest.fixture
def quiet(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "run" / "logs" / "cmd.log"
    ray_logger = logging.getLogger("ray.data")
    before = (list(ray_logger.handlers), ray_logger.propagate)
    ray_logger.propagate = False
    ray_logger.addHandler(RAY_CONSOLE)
    logs.configure_logging(verbose=False, log_file=path)
    try:
        yield path
    finally:
        logs.configure_logging(verbose=True, log_file=None)
        ray_logger.handlers[:] = before[0]
        ray_logger.propagate = before[1]


def test_quiet_mode_keeps_hoprags_lines_and_files_the_rest(quiet: Path, capsys) -> None:
    assert not quiet.exists()  # created with the first record, not before
    logging.getLogger("hoprag.ray_runtime").info("started a local Ray cluster")
    logging.getLogger("httpx").info("HTTP Request: POST http://x/v1/qa 200")
    logging.getLogger("ray.data.progress").info("Total Progress: 16/144")
    logging.getLogger("urllib3").error("something is really wrong")
    err = capsys.readouterr().err
    assert "started a local Ray cluster" in err and "really wrong" in err
    assert "HTTP Request" not in err and "Total Progress" not in err
    text = quiet.read_text()
    for line in ("started a local Ray cluster", "HTTP Request", "Total Progress", "really wrong"):
        assert line in text
    assert RAY_CONSOLE not in logging.getLogger("ray.data").handlers  # moved to the file
    assert logs.log_tail(2).splitlines()[-1].endswith("something is really wrong")


def test_verbose_mode_hides_nothing(tmp_path: Path, capsys) -> None:
    logs.configure_logging(verbose=True, log_file=tmp_path / "v.log")
    try:
        logging.getLogger("httpx").info("HTTP Request: GET /readyz 200")
        assert "HTTP Request" in capsys.readouterr().err
        assert not logs.is_quiet()
    finally:
        logs.configure_logging(verbose=True, log_file=None)


def test_progress_in_a_pipe_prints_a_few_lines_not_a_redrawn_bar(capsys, monkeypatch) -> None:
    clock = iter(range(0, 1000, 5))  # 5 s per update
    monkeypatch.setattr(logs.time, "monotonic", lambda: next(clock))
    with logs.progress(total=40, desc="LLM extraction", unit="row") as bar:  # stderr is not a TTY here
        for _ in range(40):
            bar.update(1)
    lines = capsys.readouterr().err.splitlines()
    assert 5 <= len(lines) <= 12  # one per 20 s of a 200 s run, and the last
    assert lines[-1].startswith("LLM extraction: 40/40 row (100%)")


def test_the_training_bar_follows_rank_zeros_progress_file(tmp_path: Path, capsys) -> None:
    import threading

    from training.loop import write_progress
    from training.trainer import show_progress

    stop = threading.Event()
    watcher = threading.Thread(target=show_progress, args=(tmp_path, stop, "GLM training", 0.01))
    watcher.start()
    for step in range(1, 6):
        write_progress(tmp_path, step, 5, loss=1.0 / step)
    stop.set()
    watcher.join(timeout=10)
    assert capsys.readouterr().err.splitlines()[-1].startswith("GLM training: 5/5 step (100%)")
