"""The QA route's client: which answers it retries, and how long it waits (Retry-After as seconds or
an HTTP date, capped), against a real local HTTP server."""

from __future__ import annotations

import email.utils
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import serving.client as client_module
from serving.client import QAClient, QAClientError


class _Script(BaseHTTPRequestHandler):
    """Answers each POST with the next ``(status, headers)`` of the server's script, then 200."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        script = self.server.script  # type: ignore[attr-defined]
        status, headers = script.pop(0) if script else (200, {})
        body = {"answer": "ok"} if status == 200 else {"error": {"type": "unavailable", "message": "busy"}}
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Script)
    httpd.script = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waited: list[float] = []
    monkeypatch.setattr(client_module.time, "sleep", waited.append)
    return waited


def _url(httpd: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}"


def test_retry_after_as_an_http_date_is_honoured(server, sleeps) -> None:
    in_five_s = email.utils.formatdate(time.time() + 5, usegmt=True)
    server.script += [(503, {"Retry-After": in_five_s}), (503, {"Retry-After": "2"})]
    client = QAClient(_url(server), backoff_s=0.1)
    assert client.ask("q")["answer"] == "ok" and client.retried == 2
    assert 3.0 < sleeps[0] <= 5.0  # the date's distance (whole seconds on the wire), not a crash
    assert sleeps[1] == 2.0


def test_a_long_retry_after_is_capped_and_4xx_is_never_retried(server, sleeps) -> None:
    server.script += [(503, {"Retry-After": "3600"}), (422, {})]
    client = QAClient(_url(server), backoff_s=0.1, max_retry_after_s=7.0)
    with pytest.raises(QAClientError) as caught:
        client.ask("q")
    assert caught.value.status == 422 and sleeps == [7.0] and client.retried == 1
