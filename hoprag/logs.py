"""Where output goes: hoprag's own lines and progress to the terminal, framework logs to a file.

Ray, Ray Data, Ray Serve, httpx and the model libraries log a lot that a user running a command
does not need (replica and controller lines, request lines, Ray Data progress blocks). In the
default, quiet mode the command layer calls :func:`configure_logging` with a log file under the
run directory: the terminal shows hoprag's own INFO lines, progress and anything at ERROR; the
file gets everything, including what Ray's workers print (instead of Ray echoing it to the
terminal). ``--verbose`` shows everything on the terminal as well. :func:`log_tail` is what the
command layer prints when a command fails.

Framework loggers that install their own console handlers when imported (``ray``, ``ray.data``,
``ray.serve``) are re-routed by :func:`route_framework_logs`, which :func:`~hoprag.ray_runtime.init_ray`
and the Serve app start call after importing them.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any, ClassVar

logger = logging.getLogger(__name__)

# Loggers of hoprag's own packages: their INFO lines are what a user reads on the terminal.
OWN_PACKAGES = frozenset({"hoprag", "indexing", "training", "serving", "evaluation", "cluster", "__main__"})
# Loggers that Ray configures with console handlers of their own (propagate=False) at import.
RAY_LOGGERS = ("ray", "ray.data", "ray.serve", "ray.train", "ray.tune")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Settings:
    """The process's logging choice (set once by the command layer; read by init_ray and Serve)."""

    verbose: bool = True  # library use (tests, notebooks): nothing is hidden or moved
    log_file: Path | None = None
    file_handler: logging.Handler | None = None
    own_handlers: ClassVar[list[logging.Handler]] = []


_settings = _Settings()


class _OwnOrSevere(logging.Filter):
    """Terminal filter of quiet mode: hoprag's own records, and anything at ERROR or above."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or record.name.split(".")[0] in OWN_PACKAGES


class _Terminal(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record arrives (as redirected by a caller)."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:  # StreamHandler.__init__ assigns it; ignored
        pass


class _LazyFileHandler(logging.FileHandler):
    """A file handler that creates its file (and folder) only when the first record arrives."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, encoding="utf-8", delay=True)

    def _open(self) -> Any:
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()


def configure_logging(verbose: bool, log_file: Path | None) -> None:
    """Send hoprag's lines to the terminal and, unless ``verbose``, framework logs to ``log_file``."""
    _settings.verbose = verbose or log_file is None
    _settings.log_file = log_file
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for handler in _settings.own_handlers:  # from an earlier call in this process (tests call main())
        root.removeHandler(handler)
    console = _Terminal()
    console.setFormatter(logging.Formatter(LOG_FORMAT))
    if not _settings.verbose:
        console.addFilter(_OwnOrSevere())
    root.addHandler(console)
    _settings.own_handlers = [console]
    _settings.file_handler = None
    if log_file is not None:
        _settings.file_handler = _LazyFileHandler(log_file)
        _settings.file_handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(_settings.file_handler)
        _settings.own_handlers.append(_settings.file_handler)
    if not _settings.verbose:
        # Model-library download/loading bars: nothing is downloaded at run time anyway.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
        if not sys.stderr.isatty():  # library bars (model loading) in a pipe: one line per redraw
            os.environ.setdefault("TQDM_DISABLE", "1")
        route_framework_logs()


def is_quiet() -> bool:
    """Whether framework logs go to the log file instead of the terminal."""
    return not _settings.verbose


def log_file() -> Path | None:
    """The current command's log file (None when logging to the terminal only)."""
    return _settings.log_file


def route_framework_logs() -> None:
    """In quiet mode, move the console handlers of Ray's loggers to the log file (idempotent).

    Call after importing the Ray library whose logger it is (``import ray.data`` configures
    ``ray.data`` then, for example); records keep going to Ray's own session log files as well.
    """
    if not is_quiet():
        return
    for name in RAY_LOGGERS:
        framework = logging.getLogger(name)
        for handler in list(framework.handlers):
            if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
                framework.removeHandler(handler)
        file_handler = _settings.file_handler
        if not framework.propagate and file_handler is not None and file_handler not in framework.handlers:
            framework.addHandler(file_handler)


def worker_output_to_log_file() -> bool:
    """In quiet mode, write what Ray workers print (forwarded to this driver) to the log file
    instead of the terminal. Returns whether it did (Ray's dispatcher is a private API)."""
    if not is_quiet():
        return False
    try:
        from ray._private.ray_logging import global_worker_stdstream_dispatcher
    except ImportError:  # another Ray: leave Ray's echo as it is
        return False
    workers = logging.getLogger("ray.workers")

    def to_log(data: dict[str, Any]) -> None:
        name = data.get("actor_name") or data.get("task_name") or ""
        prefix = f"({name} pid={data.get('pid')})".replace("( ", "(")
        level = logging.WARNING if data.get("is_err") else logging.INFO
        for line in data.get("lines", []):
            workers.log(level, "%s %s", prefix, line)

    workers.propagate = False
    if _settings.file_handler is not None and _settings.file_handler not in workers.handlers:
        workers.addHandler(_settings.file_handler)
    global_worker_stdstream_dispatcher.remove_handler("ray_print_logs")
    global_worker_stdstream_dispatcher.add_handler("hoprag_log_file", to_log)
    return True


def log_tail(lines: int = 30) -> str:
    """The last ``lines`` lines of the log file ('' when there is none)."""
    path = _settings.log_file
    if path is None or not path.is_file():
        return ""
    if _settings.file_handler is not None:
        _settings.file_handler.flush()
    with path.open(encoding="utf-8", errors="replace") as fh:
        return "".join(deque(fh, maxlen=lines))


class LineProgress:
    """Progress for a terminal that is not interactive (a pipe, a CI log, a job log): one line at
    most every ``interval_s`` seconds and one at the end, instead of a redrawn bar."""

    def __init__(self, total: int, desc: str, unit: str = "it", interval_s: float = 20.0) -> None:
        self.total, self.desc, self.unit, self.interval_s = total, desc, unit, interval_s
        self.n = 0
        self.started = self.last_print = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        if time.monotonic() - self.last_print >= self.interval_s:
            self._print()

    def _print(self) -> None:
        self.last_print = time.monotonic()
        elapsed = self.last_print - self.started
        share = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        print(
            f"{self.desc}: {self.n}/{self.total} {self.unit}{share}, {elapsed:.0f} s",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        self._print()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress(total: int, desc: str, unit: str = "it") -> Any:
    """A progress bar (tqdm) on an interactive terminal, else a :class:`LineProgress`; both are
    context managers with ``update(n)``."""
    if sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit)
    return LineProgress(total, desc, unit)
