"""Load on the QA route for the serving benchmarks (``hoprag bench serve``, ``--kg-triples``, ``update``).

* :func:`closed_loop`: ``concurrency`` clients, each sending its next question as soon as the last
  one is answered, for a fixed time; QPS and latency percentiles of the answered requests.
* :class:`PacedLoad`: open loop at a fixed rate (a slow answer does not slow the sender), each
  outcome kept with its send time so that a report can cut the run into windows.
* :func:`load_test_settings`: the app settings the QPS benchmarks deploy (batching, replica and
  queue limits sized for many concurrent clients on one machine).

Latencies are in seconds on :func:`time.monotonic`; the reports convert them to milliseconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from hoprag.kg.index import KGIndex
    from serving.settings import QAAppSettings

OK = "200"


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile of ``values`` (``nan`` when there are none)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cycled_questions(index: KGIndex, limit: int) -> list[str]:
    """The first ``limit`` questions of ``index``, the ones a load cycles through.

    Exits with a message when the index has none: a benchmark without questions measures nothing.
    """
    rows = index.questions.to_pylist() if index.questions is not None else []
    questions = [r["question"] for r in rows][:limit]
    if not questions:
        raise SystemExit(f"hoprag: {index.path} has no questions to send")
    return questions


def _body(question: str, top_k: int | None) -> dict[str, Any]:
    # Without top_k the app's default applies: `hoprag bench update` has always sent none.
    return {"question": question} if top_k is None else {"question": question, "top_k": top_k}


def warm_up(
    base: str,
    questions: Sequence[str],
    *,
    top_k: int | None,
    timeout_s: float,
    headers: dict[str, str] | None = None,
) -> None:
    """Ask every question once, one at a time, and fail on any error status.

    Fills the QA replica's LLM and link caches and loads lazy state, so that the load afterwards
    measures retrieval plus serving rather than first-use costs.
    """
    with httpx.Client(timeout=timeout_s, headers=headers) as client:
        for q in questions:
            client.post(f"{base}/v1/qa", json=_body(q, top_k)).raise_for_status()


@dataclass(frozen=True)
class Outcome:
    """One request: when it was sent, its HTTP status (or exception name), how long it took."""

    sent: float
    status: str
    seconds: float


def _ask(client: httpx.Client, base: str, question: str, top_k: int | None) -> Outcome:
    sent = time.monotonic()
    try:
        status = str(client.post(f"{base}/v1/qa", json=_body(question, top_k)).status_code)
    except httpx.HTTPError as exc:
        # A timeout or dropped connection is an outcome to count, not a reason to stop the load.
        status = type(exc).__name__
    return Outcome(sent, status, time.monotonic() - sent)


def _tally(outcomes: Sequence[Outcome]) -> tuple[list[float], dict[str, int]]:
    """Seconds of the answered requests, and the count of each other outcome (in order of first
    occurrence)."""
    answered = [o.seconds for o in outcomes if o.status == OK]
    failed: dict[str, int] = {}
    for o in outcomes:
        if o.status != OK:
            failed[o.status] = failed.get(o.status, 0) + 1
    return answered, failed


def closed_loop(
    base: str, questions: Sequence[str], concurrency: int, seconds: float, *, top_k: int | None = 5
) -> dict[str, Any]:
    """``concurrency`` clients cycling ``questions`` back to back for ``seconds``; every client
    sends at least one request, however late it starts (a busy machine can take longer than a short
    window to set up a client, and a window with no request measures nothing).

    Returns answered ``requests``, ``errors`` (count per other status), ``qps`` of answered
    requests over the wall time, and ``p50_ms``/``p95_ms``/``p99_ms`` of their latency.
    """
    outcomes: list[Outcome] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client_loop(offset: int) -> None:
        # Client k asks questions k, k + concurrency, ...: together they cycle the list in order.
        i = offset
        with httpx.Client(timeout=120) as client:
            while True:
                outcome = _ask(client, base, questions[i % len(questions)], top_k)
                with lock:
                    outcomes.append(outcome)
                i += concurrency
                if time.monotonic() >= stop:
                    break

    started = time.monotonic()
    threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    answered, errors = _tally(outcomes)
    return {
        "requests": len(answered),
        "errors": errors,
        "qps": round(len(answered) / wall, 2),
        "p50_ms": round(1000 * percentile(answered, 0.50), 1),
        "p95_ms": round(1000 * percentile(answered, 0.95), 1),
        "p99_ms": round(1000 * percentile(answered, 0.99), 1),
    }


class PacedLoad:
    """Requests at a fixed rate from a thread pool; each outcome is kept with its send time.

    Send times are :func:`time.monotonic`, so a caller cuts windows with that clock.
    """

    def __init__(
        self,
        base: str,
        questions: Sequence[str],
        qps: float,
        headers: dict[str, str],
        *,
        top_k: int | None = None,
    ) -> None:
        self._base = base
        self._questions = questions
        self._interval = 1.0 / qps
        self._headers = headers
        self._top_k = top_k
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.outcomes: list[Outcome] = []
        self._thread = threading.Thread(target=self._run, name="paced-load")

    def start(self) -> None:
        """Start sending (in a background thread)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop sending and wait for the requests in flight."""
        self._stop.set()
        self._thread.join()

    def _one(self, client: httpx.Client, i: int) -> None:
        outcome = _ask(client, self._base, self._questions[i % len(self._questions)], self._top_k)
        with self._lock:
            self.outcomes.append(outcome)

    def _run(self) -> None:
        # 16 workers: the rate holds while up to 16 requests are outstanding.
        with httpx.Client(timeout=120, headers=self._headers) as client, ThreadPoolExecutor(16) as pool:
            i = 0
            next_at = time.monotonic()
            while not self._stop.is_set():
                pool.submit(self._one, client, i)
                i += 1
                # Scheduled from the previous slot, not from now, so the rate does not drift.
                next_at += self._interval
                self._stop.wait(max(0.0, next_at - time.monotonic()))

    def window(self, start: float, end: float) -> dict[str, Any]:
        """Requests sent in ``[start, end)``: their count, ``failed`` (count per status), and
        ``p50_ms``/``p99_ms`` of the answered ones (``None`` when none was answered)."""
        with self._lock:
            sent = [o for o in self.outcomes if start <= o.sent < end]
        answered, failed = _tally(sent)
        return {
            "requests": len(sent),
            "failed": failed,
            "p50_ms": round(1000 * percentile(answered, 0.5), 1) if answered else None,
            "p99_ms": round(1000 * percentile(answered, 0.99), 1) if answered else None,
        }


def load_test_settings(
    index: str | Path,
    retriever: str,
    *,
    batching: bool = True,
    retriever_autoscaling: dict[str, Any] | None = None,
    vector_search: dict[str, Any] | None = None,
) -> QAAppSettings:
    """Settings of the app ``hoprag bench serve`` (and ``--kg-triples``) deploys for a closed-loop load.

    ``batching``: the Retriever's ``@serve.batch`` (8 per batch, 10 ms wait). ``retriever_autoscaling``:
    the Retriever's replicas (default one). ``vector_search``: that section, when not the default.
    QA and ingress have one replica each and unbounded queues, so that no request of the load is
    rejected for queue length and latency includes the queueing.
    """
    from serving.settings import QAAppSettings

    one = {"min_replicas": 1, "max_replicas": 1}
    settings: dict[str, Any] = {
        "index": str(index),
        "retriever": retriever,
        "batching": {"enabled": batching, "max_batch_size": 8, "batch_wait_timeout_s": 0.01},
        "retriever_deployment": {
            "num_cpus": 0.5,
            "max_ongoing_requests": 16,
            "autoscaling": retriever_autoscaling or dict(one),
        },
        "qa": {
            "num_cpus": 0.25,
            "max_ongoing_requests": 32,
            "max_queued_requests": -1,
            "autoscaling": dict(one),
        },
        "ingress": {
            "num_cpus": 0.1,
            "max_ongoing_requests": 128,
            "max_queued_requests": -1,
            "autoscaling": dict(one),
        },
    }
    if vector_search is not None:
        settings["vector_search"] = vector_search
    return QAAppSettings.model_validate(settings)
