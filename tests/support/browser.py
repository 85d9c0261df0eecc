"""Headless Chromium driven through its command line (no driver library): load a page, let it run,
then dump its DOM or take a screenshot.

``--virtual-time-budget`` lets the page's timers run ahead, but virtual time stands still while a
fetch is pending, so a page reading a streamed answer is dumped once the stream has ended (or when
``timeout_s`` of real time is up).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The path of a Chromium on PATH, or None."""
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def ensure_chromium() -> tuple[str | None, str]:
    """(path, "") of Chromium, installing the Debian package ``chromium`` when it is missing and we
    are root with apt; else (None, why not)."""
    found = find_chromium()
    if found:
        return found, ""
    if os.environ.get("HOPRAG_NO_BROWSER_INSTALL"):
        return None, "chromium is not installed (HOPRAG_NO_BROWSER_INSTALL is set)"
    if not shutil.which("apt-get") or os.geteuid() != 0:
        return None, "chromium is not installed, and apt-get as root is not available to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
            subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=900)
    except (subprocess.SubprocessError, OSError) as exc:
        return None, f"chromium is not installed and `apt-get install chromium` failed: {exc}"
    found = find_chromium()
    return (found, "") if found else (None, "`apt-get install chromium` gave no chromium on PATH")


def _run(chromium: str, args: list[str], url: str, window: tuple[int, int], timeout_s: float) -> str:
    with tempfile.TemporaryDirectory(prefix="hoprag-chromium-") as profile:
        cmd = [
            chromium,
            "--headless",
            "--no-sandbox",  # as root (CI) Chromium refuses to start with its sandbox
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--window-size={window[0]},{window[1]}",
            f"--virtual-time-budget={int(timeout_s * 1000)}",
            *args,
            url,
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s + 60)
        if done.returncode != 0:
            raise RuntimeError(f"chromium failed ({done.returncode}): {done.stderr[-2000:]}")
        return done.stdout


def dump_dom(chromium: str, url: str, window: tuple[int, int] = (1280, 900), timeout_s: float = 60) -> str:
    """The page's DOM (serialised HTML) once it has settled."""
    return _run(chromium, ["--dump-dom"], url, window, timeout_s)


def screenshot(chromium: str, url: str, path: Path, window: tuple[int, int], timeout_s: float = 60) -> Path:
    """A PNG of the page at ``window`` (width, height: make it tall enough for the whole page)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _run(chromium, [f"--screenshot={path.resolve()}"], url, window, timeout_s)
    if not path.exists():
        raise RuntimeError(f"chromium wrote no screenshot at {path}")
    return path
