"""Headless Chromium driven over the DevTools protocol on ``--remote-debugging-pipe`` (JSON messages
ending in a NUL byte on file descriptors 3 and 4): no driver library, no port.

The command line's ``--dump-dom`` / ``--screenshot`` are not enough for a page that reads a streamed
answer: they fire when the virtual-time budget is spent, which does not wait for a response body
still streaming. Over the protocol the test waits for a condition the page sets, then reads the
DOM and takes full-page screenshots (``captureBeyondViewport``).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# key → (Windows virtual key code, the text it types); what Input.dispatchKeyEvent needs.
KEYS = {
    "Tab": (9, ""),
    "Enter": (13, "\r"),
    "Space": (32, " "),
    "ArrowDown": (40, ""),
    "ArrowUp": (38, ""),
    "ArrowRight": (39, ""),
    "ArrowLeft": (37, ""),
    "Escape": (27, ""),
}


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
    # One install at a time: the suite's parallel workers may all ask at once (apt's own lock would
    # fail the second); a worker that waited finds the browser the first one installed.
    with open(Path(tempfile.gettempdir()) / "hoprag-chromium-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = find_chromium()
        if found:
            return found, ""
        try:
            for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
                subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=900)
        except (subprocess.SubprocessError, OSError) as exc:
            return None, f"chromium is not installed and `apt-get install chromium` failed: {exc}"
    found = find_chromium()
    return (found, "") if found else (None, "`apt-get install chromium` gave no chromium on PATH")


class Browser:
    """One headless Chromium and one page in it: ``with Browser(path) as b: b.open(url, ...)``."""

    def __init__(self, chromium: str) -> None:
        self.chromium = chromium
        self._next_id = 0
        self._buffer = b""
        self._session = ""
        # Requests the page makes whose URL contains a key are answered with that canned response
        # (status, headers, body) by Chromium itself (Fetch domain), without reaching the server.
        self._canned: dict[str, tuple[int, dict[str, str], str]] = {}

    def __enter__(self) -> Browser:
        self._profile = tempfile.TemporaryDirectory(prefix="hoprag-chromium-")
        self._log = tempfile.TemporaryFile()  # Chromium's stderr: told when it dies
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds() -> None:  # in the child: the protocol's fixed descriptors 3 (in) and 4 (out)
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self._process = subprocess.Popen(
            [
                self.chromium,
                "--headless",
                "--no-sandbox",  # as root (CI) Chromium refuses to start with its sandbox
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
                f"--user-data-dir={self._profile.name}",
                "about:blank",
            ],
            preexec_fn=fds,  # only dup2 before exec
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable")
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self._session = ""
            self.call("Browser.close", timeout_s=10)
        except Exception:  # already gone: it is killed below either way
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
        self._log.close()
        self._profile.cleanup()

    def _send(self, method: str, params: dict[str, Any]) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self._session:
            message["sessionId"] = self._session
        try:
            os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        except BrokenPipeError as exc:
            raise RuntimeError(f"chromium is gone ({method}): {self._stderr()}") from exc
        return self._next_id

    def call(self, method: str, timeout_s: float = 60, **params: Any) -> dict[str, Any]:
        """Send one protocol command (to the page once attached) and wait for its result; events
        that arrive meanwhile are handled (a paused request gets its canned response)."""
        waiting_for = self._send(method, params)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            while b"\0" not in self._buffer:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium closed the pipe during {method}: {self._stderr()}")
                self._buffer += chunk
            raw, _, self._buffer = self._buffer.partition(b"\0")
            reply = json.loads(raw)
            if reply.get("method") == "Fetch.requestPaused":
                self._answer_paused(reply["params"])
            elif reply.get("id") == waiting_for:  # other replies: to the fire-and-forget commands
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
        raise TimeoutError(f"{method}: no reply within {timeout_s} s")

    def can(
        self, url_part: str, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        """From now on, answer the page's requests whose URL contains ``url_part`` with ``status``,
        a JSON ``body`` and ``headers`` (``uncan()`` stops it)."""
        self._canned[url_part] = (status, headers or {}, json.dumps(body))
        self.call("Fetch.enable", patterns=[{"urlPattern": f"*{part}*"} for part in self._canned])

    def uncan(self) -> None:
        """Let every request reach the server again."""
        self._canned.clear()
        self.call("Fetch.disable")

    def _answer_paused(self, event: dict[str, Any]) -> None:
        url = event["request"]["url"]
        for part, (status, headers, body) in self._canned.items():
            if part in url:
                rows = [{"name": "Content-Type", "value": "application/json"}]
                rows += [{"name": k, "value": v} for k, v in headers.items()]
                self._send(
                    "Fetch.fulfillRequest",
                    {
                        "requestId": event["requestId"],
                        "responseCode": status,
                        "responseHeaders": rows,
                        "body": base64.b64encode(body.encode()).decode(),
                    },
                )
                return
        self._send("Fetch.continueRequest", {"requestId": event["requestId"]})

    def press(self, key: str, modifiers: int = 0) -> None:
        """Press and release one key (``Tab``, ``Enter``, ``ArrowDown``, ``Space``...) as a person
        would; ``modifiers``: 2 Ctrl, 8 Shift."""
        code, text = KEYS[key]
        down: dict[str, Any] = {
            "type": "keyDown" if text else "rawKeyDown",
            "key": " " if key == "Space" else key,
            "code": key,
            "windowsVirtualKeyCode": code,
            "modifiers": modifiers,
        }
        if text and not modifiers & 2:
            down["text"] = text
        self.call("Input.dispatchKeyEvent", **down)
        self.call("Input.dispatchKeyEvent", **{**down, "type": "keyUp", "text": ""})

    def type_text(self, text: str) -> None:
        """Type ``text`` into the focused field (as an input method commits it)."""
        self.call("Input.insertText", text=text)

    def focused(self) -> str:
        """The focused element: its id, else its tag and text (e.g. ``BUTTON:Velmora Harbor``)."""
        return str(
            self.evaluate(
                "(e => e.id || (e.tagName + ':' + (e.textContent || '').trim().slice(0, 60)))"
                "(document.activeElement)"
            )
        )

    def tab_to(self, wanted: str, limit: int = 30) -> None:
        """Press Tab until ``focused()`` is ``wanted`` (AssertionError after ``limit`` presses)."""
        seen = []
        for _ in range(limit):
            self.press("Tab")
            seen.append(self.focused())
            if seen[-1] == wanted:
                return
        raise AssertionError(f"Tab never reached {wanted!r}; focus went {seen}")

    def _stderr(self) -> str:
        self._log.seek(0)
        return self._log.read()[-3000:].decode(errors="replace")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        reply = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return reply.get("result", {}).get("value")

    def open(self, url: str, width: int, height: int, mobile: bool = False) -> None:
        """Load ``url`` in a viewport of ``width`` x ``height`` CSS pixels (``mobile``: a phone's)."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=mobile,
        )
        self.call("Page.navigate", url=url)

    def wait_for(self, expression: str, timeout_s: float = 90) -> Any:
        """Poll ``expression`` until it is truthy; its value (TimeoutError past ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.2)
        raise TimeoutError(f"{expression!r} still false after {timeout_s} s")

    def dom(self) -> str:
        """The page's DOM, serialised."""
        return str(self.evaluate("document.documentElement.outerHTML"))

    def screenshot(self, path: Path) -> Path:
        """A PNG of the whole page (beyond the viewport), at ``path``."""
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
