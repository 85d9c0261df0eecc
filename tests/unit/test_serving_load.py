"""serving/load.py, the load of ``hoprag bench serve`` / ``--kg-triples`` / ``update``, against a
stand-in QA route over real HTTP (no Ray): what is sent, and how outcomes are counted."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

from serving.load import PacedLoad, closed_loop, cycled_questions, percentile, warm_up


class _QARoute(BaseHTTPRequestHandler):
    """``POST /v1/qa``: 503 for the question ``fail``, else 200; records each body and header set."""

    seen: list[tuple[dict[str, Any], dict[str, str]]]
    lock = threading.Lock()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with self.lock:
            self.seen.append((body, dict(self.headers)))
        status = 503 if body["question"] == "fail" else 200
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:  # keep pytest's output clean
        pass


@pytest.fixture
def route() -> Iterator[tuple[str, list[tuple[dict[str, Any], dict[str, str]]]]]:
    seen: list[tuple[dict[str, Any], dict[str, str]]] = []
    handler = type("Route", (_QARoute,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_percentile_is_nearest_rank_and_nan_when_empty() -> None:
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.99) == 4.0
    assert math.isnan(percentile([], 0.5))


def test_the_closed_loop_counts_answers_and_errors_apart(route) -> None:
    base, seen = route
    result = closed_loop(base, ["a", "fail"], concurrency=2, seconds=0.3, top_k=5)
    assert set(result) == {"requests", "errors", "qps", "p50_ms", "p95_ms", "p99_ms"}
    # Client 0 always asks "a", client 1 always "fail" (each steps by the concurrency).
    asked = [body for body, _ in seen]
    assert result["requests"] == sum(b["question"] == "a" for b in asked) > 0
    assert result["errors"] == {"503": sum(b["question"] == "fail" for b in asked)}
    assert all(b["top_k"] == 5 for b in asked)
    assert result["qps"] > 0 and 0 < result["p50_ms"] <= result["p95_ms"] <= result["p99_ms"]


def test_a_refused_connection_is_an_error_not_a_crash() -> None:
    with socket.socket() as s:  # a port nothing listens on once this socket is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = closed_loop(f"http://127.0.0.1:{port}", ["a"], concurrency=1, seconds=0.1)
    assert result["requests"] == 0 and result["qps"] == 0
    assert list(result["errors"]) == ["ConnectError"] and math.isnan(result["p50_ms"])


def test_the_paced_load_sends_at_its_rate_with_headers_and_windows_by_send_time(route) -> None:
    base, seen = route
    load = PacedLoad(base, ["a", "fail"], qps=40, headers={"Authorization": "Bearer t"})
    started = time.monotonic()
    load.start()
    time.sleep(0.5)
    load.stop()
    everything = load.window(started, time.monotonic())
    assert 10 <= everything["requests"] == len(seen) <= 30  # 40/s for 0.5 s
    assert everything["failed"] == {"503": sum(b["question"] == "fail" for b, _ in seen)}
    assert everything["p50_ms"] is not None and everything["p99_ms"] >= everything["p50_ms"]
    assert all("top_k" not in b and h["Authorization"] == "Bearer t" for b, h in seen)
    assert load.window(started - 10, started) == {
        "requests": 0,
        "failed": {},
        "p50_ms": None,
        "p99_ms": None,
    }


def test_the_warm_up_asks_each_question_once_and_fails_on_an_error(route) -> None:
    base, seen = route
    warm_up(base, ["a", "b"], top_k=None, timeout_s=10, headers={"x-test": "1"})
    assert [b for b, _ in seen] == [{"question": "a"}, {"question": "b"}]
    assert all(h["x-test"] == "1" for _, h in seen)
    with pytest.raises(Exception, match="503"):
        warm_up(base, ["fail"], top_k=5, timeout_s=10)


def test_an_index_without_questions_stops_the_benchmark() -> None:
    rows = [{"question": "q1"}, {"question": "q2"}, {"question": "q3"}]
    table = SimpleNamespace(to_pylist=lambda: rows)
    assert cycled_questions(SimpleNamespace(questions=table, path="idx"), 2) == ["q1", "q2"]  # type: ignore[arg-type]
    with pytest.raises(SystemExit, match="idx has no questions"):
        cycled_questions(SimpleNamespace(questions=None, path="idx"), 2)  # type: ignore[arg-type]
