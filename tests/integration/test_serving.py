"""The QA app on a real local Ray Serve, over real HTTP.

The LLM deployment reaches a scripted LLM through the OpenAI protocol (a loopback server in this
process), so answers are deterministic; the Retriever deployment loads a real exported GLM
(1 layer, untrained) over a real KG index.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from hoprag.llm.openai_server import OpenAIProtocolServer
from hoprag.ports import pick_free_port
from serving.settings import QAAppSettings
from tests.support.film_kg import write_film_index, write_tiny_glm
from tests.support.local_ray import run_reference_index
from tests.support.planner_llm import Rule, ScriptedPlannerLLM
from tests.support.sse import sse_events
from tests.support.streaming_llm import StreamingWrapper

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

TOKEN = "s3cret-token"


class SlowScriptedLLM(ScriptedPlannerLLM):
    """Answers like the scripted LLM, after ``delay_s`` per batch (to fill queues on purpose)."""

    delay_s: float = 0.0

    def generate(self, prompts, params):
        if self.delay_s:
            time.sleep(self.delay_s)
        return super().generate(prompts, params)


@pytest.fixture(scope="module")
def scripted_llm_server() -> Iterator[tuple[OpenAIProtocolServer, SlowScriptedLLM]]:
    llm = SlowScriptedLLM(
        [
            Rule("plan", "1. Who is the director of My Cousin From Warsaw?"),
            Rule("answer", "Carl Boese", "My Cousin From Warsaw"),
            Rule("update", "Final answer: Carl Boese"),
            Rule("final", "Carl Boese"),
        ]
    )
    # Streamed word by word (server.llm is the wrapper; the streaming tests slow it down).
    with OpenAIProtocolServer(StreamingWrapper(llm), model_name="scripted") as server:
        yield server, llm


def _settings(index: Path, retriever: Path, base_url: str, **overrides: object) -> QAAppSettings:
    data: dict[str, object] = {
        "index": str(index),
        "retriever": str(retriever),
        "llm": {
            "backend": "openai",
            "openai": {"base_url": base_url, "model": "scripted", "prompt_style": "completion"},
        },
        "auth": {"token_env": "HOPRAG_TEST_TOKEN"},
        "request_timeout_s": 20,
    }
    small = {"num_cpus": 0.1, "autoscaling": {"min_replicas": 1, "max_replicas": 1}}
    for name in ("ingress", "qa", "retriever_deployment", "llm_deployment"):
        data[name] = dict(small)
    data["ingress"] = {**small, "env_vars": {"HOPRAG_TEST_TOKEN": TOKEN}}  # as a secret would be mounted
    data.update(overrides)
    return QAAppSettings.model_validate(data)


@dataclass
class Served:
    base: str  # the app with auth on
    open_base: str  # a second app, auth off, tiny queues, 2 Retriever replicas
    first_readyz: int  # the first /readyz status of the first app, before its QA replica loaded
    root: str  # Serve's HTTP root
    index: Path
    glm: Path  # the exported GLM's run directory
    llm_url: str


@pytest.fixture(scope="module")
def served(ray_cluster, tmp_path_factory, embedder, scripted_llm_server) -> Iterator[Served]:
    """Two QA apps on one Serve instance (each with its own deployments)."""
    from ray import serve

    from serving.builder import build_app
    from serving.run import start_serve, wait_until_ready

    server, _ = scripted_llm_server
    root = tmp_path_factory.mktemp("serving")
    index = write_film_index(root / "index", embedder)
    retriever = write_tiny_glm(root / "glm" / "retriever")
    port = pick_free_port()
    start_serve("127.0.0.1", port)
    base = f"http://127.0.0.1:{port}"
    # The QA replica waits up to 300 s before loading: far longer than serve.run takes to return, even
    # on a busy machine (where it took up to ~20 s). Once its first /readyz is seen (and the second app
    # deployed meanwhile), the fixture ends the wait through the replica's start_loading().
    settings = _settings(
        index, retriever.parent, server.base_url, load_in_background=True, startup_delay_s=300.0
    )
    serve.run(build_app(settings), name="hoprag", route_prefix="/", blocking=False)
    first_readyz = _first_readyz(base)
    open_settings = _settings(
        index,
        retriever.parent,
        server.base_url,
        auth={"token_env": None},
        qa={
            "num_cpus": 0.1,
            "max_ongoing_requests": 1,
            "max_queued_requests": 1,
            "autoscaling": {"min_replicas": 1, "max_replicas": 1},
        },
        retriever_deployment={"num_cpus": 0.1, "autoscaling": {"min_replicas": 2, "max_replicas": 2}},
    )
    serve.run(build_app(open_settings), name="open", route_prefix="/open", blocking=False)
    serve.get_deployment_handle("QA-default", app_name="hoprag").start_loading.remote().result(timeout_s=60)
    wait_until_ready(base, timeout_s=300, progress=False)
    wait_until_ready(f"{base}/open", timeout_s=300, progress=False)
    try:
        yield Served(base, f"{base}/open", first_readyz, base, index, retriever.parent, server.base_url)
    finally:
        serve.shutdown()


def _first_readyz(base: str) -> int:
    """The first /readyz status the ingress gives (before the QA replica has loaded)."""
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            return httpx.get(f"{base}/readyz", timeout=5).status_code
        except httpx.TransportError:
            time.sleep(0.2)
    return -1


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def test_not_ready_until_the_index_and_models_are_loaded(served) -> None:
    assert served.first_readyz == 503  # the QA replica waits 60 s before loading
    assert httpx.get(f"{served.base}/readyz", timeout=30).json() == {"status": "ready"}


def test_both_modes_answer_with_documents_triples_timings_and_request_ids(served) -> None:
    for mode in ("retrieve", "plan"):
        r = httpx.post(
            f"{served.base}/v1/qa",
            json={
                "question": "Who directed My Cousin From Warsaw?",
                "mode": mode,
                "top_k": 3,
                "return_trace": True,
            },
            headers={**_auth(), "X-Request-ID": f"test-{mode}"},
            timeout=60,
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["answer"] == "Carl Boese" and body["mode"] == mode
        assert body["request_id"] == r.headers["x-request-id"] == f"test-{mode}"
        assert 1 <= len(body["documents"]) <= 3 and {"title", "score", "doc_id"} <= set(body["documents"][0])
        assert body["triples"] and {"head", "relation", "tail", "score"} <= set(body["triples"][0])
        assert body["timings"]["total"] >= body["timings"]["pipeline"] > 0
        assert body["llm_calls"] >= 1 and body["trace"]["steps"]
    plan = r.json()
    assert plan["trace"]["calls_by_purpose"]["plan"] == 1
    assert any(
        t["source"] == "glm" for s in plan["trace"]["steps"] for c in s["clues"] for t in c["triples"]
    ) or any(c["documents"] for s in plan["trace"]["steps"] for c in s["clues"])


def test_openai_client_gets_a_chat_completion(served) -> None:
    import openai

    client = openai.OpenAI(base_url=f"{served.base}/v1", api_key=TOKEN, timeout=60)
    reply = client.chat.completions.create(
        model="hoprag", messages=[{"role": "user", "content": "Which person directed My Cousin From Warsaw?"}]
    )  # a question not asked before: a cached answer would cost (and report) 0 tokens
    assert reply.choices[0].message.content == "Carl Boese"
    assert reply.usage.total_tokens > 0
    assert {m.id for m in client.models.list().data} == {"hoprag", "hoprag-plan"}


def _untimed(body: dict) -> dict:
    """A QA body without what differs between two runs of one question: timings, the request id."""
    drop = {"timings", "seconds", "llm_seconds", "request_id"}

    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in drop}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(body)  # type: ignore[return-value]


@pytest.mark.parametrize("mode", ["retrieve", "plan"])
def test_a_streamed_answer_sends_stages_then_tokens_then_the_plain_body(
    served, scripted_llm_server, mode: str
) -> None:
    """Raw SSE over real HTTP; the final event equals the non-streamed body of the same question (asked of
    the other app, whose QA replica has its own LLM cache). The plan has a step of its own, so that no
    call is a cache hit in one app and not in the other."""
    _, llm = scripted_llm_server
    question = f"Who directed My Cousin From Warsaw? (streamed, {mode})"
    llm.rules.insert(0, Rule("plan", "1. Who directed My Cousin From Warsaw, streamed?", "(streamed, plan)"))
    body = {"question": question, "mode": mode, "top_k": 3, "return_trace": True}
    started = time.perf_counter()
    arrivals: list[tuple[float, str, str]] = []
    with httpx.stream(
        "POST", f"{served.base}/v1/qa", json={**body, "stream": True}, headers=_auth(), timeout=60
    ) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        for event, data in sse_events(r.iter_lines()):
            arrivals.append((time.perf_counter() - started, event, data))
    plain = httpx.post(f"{served.open_base}/v1/qa", json=body, timeout=60).json()
    llm.rules.pop(0)
    events = [e for _, e, _ in arrivals]
    stages = [json.loads(d)["stage"] for _, e, d in arrivals if e == "stage"]
    tokens = [json.loads(d)["text"] for _, e, d in arrivals if e == "token"]
    print(f"{mode}: first event after {arrivals[0][0] * 1000:.0f} ms; events {events}")
    assert events[-1] == "answer" and "error" not in events
    assert stages[0] == "started" and {"seeds", "triples"} <= set(stages)
    if mode == "plan":
        assert {"plan", "step_answer"} <= set(stages)
    assert "".join(tokens) == "Carl Boese"
    final = json.loads(arrivals[-1][2])
    assert final["request_id"] == r.headers["x-request-id"] and final["timings"]["total"] > 0
    assert _untimed(final) == _untimed(plain) and final["llm_calls"] >= 1


def test_the_openai_client_streams_a_chat_completion(served) -> None:
    import openai

    client = openai.OpenAI(base_url=f"{served.base}/v1", api_key=TOKEN, timeout=60)
    chunks = list(
        client.chat.completions.create(
            model="hoprag",
            messages=[{"role": "user", "content": "Who directed My Cousin From Warsaw? (chat stream)"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Carl Boese"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_closing_the_stream_stops_the_generation(served, scripted_llm_server) -> None:
    """The client reads the first answer token and closes the connection: the ingress, QA and LLM
    deployments cancel in turn, the LLM deployment closes its stream from the endpoint, and the
    scripted LLM behind it stops (it would otherwise send 400 more words, one per 50 ms)."""
    server, _ = scripted_llm_server
    streaming: StreamingWrapper = server.llm  # type: ignore[assignment]
    streaming.delay_s, streaming.extra_words = 0.05, 400
    question = "Who directed My Cousin From Warsaw? (closed early)"
    try:
        with httpx.stream(
            "POST",
            f"{served.base}/v1/qa",
            json={"question": question, "stream": True},
            headers=_auth(),
            timeout=60,
        ) as r:
            assert r.status_code == 200
            first_token = next(data for event, data in sse_events(r.iter_lines()) if event == "token")
        closed = time.perf_counter()
        assert json.loads(first_token)["text"] == "Carl"
        record = next(s for s in streaming.streams if question in str(s.prompt))
        while time.perf_counter() - closed < 15 and not (record.stopped_early or record.finished):
            time.sleep(0.05)
        stopped_after = time.perf_counter() - closed
    finally:
        streaming.delay_s, streaming.extra_words = 0.0, 0
    print(f"generation stopped {stopped_after:.2f} s after the client closed, after {record.deltas} deltas")
    assert record.stopped_early and not record.finished and record.deltas < 200
    assert stopped_after < 5  # far sooner than the 20 s request timeout, which would stop it too


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"question": ""}, 422, "question"),
        ({"question": "   "}, 422, "blank"),
        ({"question": "x" * 2001}, 422, "question"),
        ({"question": "Who?", "mode": "guess"}, 422, "mode"),
        ({"question": "Who?", "top_k": 0}, 422, "top_k"),
        ({"question": "Who?", "top_k": 51}, 422, "top_k"),
        ({"question": "Who?", "surprise": 1}, 422, "surprise"),
    ],
)
def test_bad_requests_get_clear_4xx(served, body, status, fragment) -> None:
    r = httpx.post(f"{served.base}/v1/qa", json=body, headers=_auth(), timeout=30)
    assert r.status_code == status
    error = r.json()["error"]
    assert fragment in error["message"] and error["type"] == "invalid_request" and error["request_id"]


def test_malformed_json_is_400(served) -> None:
    r = httpx.post(
        f"{served.base}/v1/qa",
        content=b'{"question": ',
        headers={**_auth(), "Content-Type": "application/json"},
        timeout=30,
    )
    assert r.status_code == 400 and "JSON" in r.json()["error"]["message"]


def test_auth_is_enforced_when_on(served) -> None:
    q = {"question": "Who directed My Cousin From Warsaw?"}
    assert httpx.post(f"{served.base}/v1/qa", json=q, timeout=30).status_code == 401
    wrong = httpx.post(f"{served.base}/v1/qa", json=q, headers={"Authorization": "Bearer nope"}, timeout=30)
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert httpx.get(f"{served.base}/healthz", timeout=30).status_code == 200  # probes need no token
    assert httpx.get(f"{served.base}/openapi.json", timeout=30).json()["paths"]["/v1/qa"]
    # The request guard runs in the replica Serve started: auth before the body is read (a malformed
    # or oversized body without a token is a 401), then the body limit (413), then parsing.
    json_type = {"Content-Type": "application/json"}
    too_big = b'{"question": "' + b"x" * 1_048_576 + b'"}'
    for content in (b'{"question": ', too_big):
        r = httpx.post(f"{served.base}/v1/qa", content=content, headers=json_type, timeout=30)
        assert r.status_code == 401, r.text
    r = httpx.post(f"{served.base}/v1/qa", content=too_big, headers={**_auth(), **json_type}, timeout=30)
    assert r.status_code == 413 and r.json()["error"]["type"] == "payload_too_large"
    assert r.json()["error"]["request_id"] == r.headers["x-request-id"]
    bad_part = {"model": "hoprag", "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}
    r = httpx.post(f"{served.base}/v1/chat/completions", json=bad_part, headers=_auth(), timeout=30)
    assert r.status_code == 422 and r.json()["error"]["type"] == "invalid_request"


def test_auth_off_needs_no_token(served) -> None:
    r = httpx.post(
        f"{served.open_base}/v1/qa", json={"question": "Who directed My Cousin From Warsaw?"}, timeout=60
    )
    assert r.status_code == 200 and r.json()["answer"] == "Carl Boese"


def test_overload_answers_503_quickly_instead_of_timing_out(served, scripted_llm_server) -> None:
    _, llm = scripted_llm_server
    llm.delay_s = 3.0  # every LLM call now takes 3 s; the open app's QA takes 1 request + 1 queued
    try:

        def one(i: int) -> tuple[int, float]:
            started = time.perf_counter()
            r = httpx.post(
                f"{served.open_base}/v1/qa",
                json={"question": f"Who directed My Cousin From Warsaw? {i}"},
                timeout=60,
            )
            return r.status_code, time.perf_counter() - started

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(one, range(8)))
    finally:
        llm.delay_s = 0.0
    codes = [c for c, _ in results]
    assert set(codes) <= {200, 503} and codes.count(503) >= 4 and codes.count(200) >= 1
    # Rejected at once: every 503 came back before the first request that waited for the LLM did
    # (relative to the same run, so it holds on a loaded machine too).
    assert max(t for c, t in results if c == 503) < min(t for c, t in results if c == 200)


def test_a_killed_retriever_replica_is_replaced_and_retries_absorb_the_failures(served) -> None:
    import ray

    from serving.client import QAClient, QAClientError

    def retriever_replicas() -> list[str]:
        return sorted(
            a["name"]
            for a in ray.util.list_named_actors(all_namespaces=True)
            if a["name"].startswith("SERVE_REPLICA::open#Retriever-default#")
        )

    before = retriever_replicas()
    assert len(before) == 2
    client = QAClient(served.open_base, retries=5, backoff_s=0.5, timeout_s=60)
    failures, answered = 0, 0
    killer = threading.Timer(
        1.0, lambda: ray.kill(ray.get_actor(before[0], namespace="serve"), no_restart=True)
    )
    killer.start()
    for i in range(30):
        try:
            client.ask(f"Who directed My Cousin From Warsaw? ({i})")
            answered += 1
        except QAClientError:
            failures += 1
    killer.join()
    deadline = time.time() + 300
    while time.time() < deadline and (len(retriever_replicas()) < 2 or before[0] in retriever_replicas()):
        time.sleep(1)
    after = retriever_replicas()
    print(f"fault test: 30 requests, {answered} answered, {failures} failed, {client.retried} retries")
    assert failures == 0 and answered == 30
    assert len(after) == 2 and before[0] not in after  # Serve started a replacement


def test_hoprag_serve_runs_in_the_foreground_and_stops_cleanly_on_ctrl_c(
    tmp_path_factory, embedder, scripted_llm_server, dead_recorded_head
) -> None:
    """`hoprag serve` (its own local Ray) + `hoprag ask --url`, then SIGINT: exit code 0.

    The machine's Ray temp dir records a dead `ray start` head (a bare ``ray.init()`` would join it
    and fail), and a `hoprag index` with its own local cluster runs while the app serves: both
    commands start their own clusters, side by side, and finish normally.
    """
    import json
    import signal
    import subprocess
    import sys

    server, _ = scripted_llm_server
    root = tmp_path_factory.mktemp("serve-cli")
    index = write_film_index(root / "index", embedder)
    port = pick_free_port()
    cmd = [
        sys.executable,
        "-m",
        "hoprag_cli",
        "serve",
        "--index",
        str(index),
        "--retriever",
        "dense",
        "--port",
        str(port),
        "--set",
        "llm.backend=openai",
        "--set",
        f"llm.openai.base_url={server.base_url}",
        "--set",
        "llm.openai.model=scripted",
        "--set",
        "llm.openai.prompt_style=completion",
    ]
    env = dead_recorded_head
    # As a background job of a non-interactive shell (CI runners, `cmd &`), hoprag serve inherits
    # SIGINT ignored; it must stop on it all the same (it did not: the hang seen under load).
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    lines: list[str] = []
    announced = threading.Event()

    def read_output() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "Ctrl-C stops it." in line:
                announced.set()

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    try:
        # SIGINT only once `hoprag serve` itself says it is serving (its output, not our polling).
        assert announced.wait(timeout=600), "".join(lines)[-2000:]
        ask = subprocess.run(
            [
                sys.executable,
                "-m",
                "hoprag_cli",
                "ask",
                "--url",
                f"http://127.0.0.1:{port}",
                "--json",
                "Who directed My Cousin From Warsaw?",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ask.returncode == 0, ask.stderr
        assert json.loads(ask.stdout)["answer"] == "Carl Boese"
        indexed = run_reference_index(root / "sample-index", env)
        assert indexed.returncode == 0, indexed.stdout[-3000:]
        assert "started a local Ray cluster" in indexed.stdout and "index written to" in indexed.stdout
        assert proc.poll() is None, "".join(lines)[-2000:]  # still serving beside the index run
        stop_started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:  # bounded by hoprag itself: Ray gets 60 s, then its processes are killed
            proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            pytest.fail("hoprag serve still runs 300 s after SIGINT:\n" + "".join(lines)[-4000:])
        stop_s = time.monotonic() - stop_started
        reader.join(timeout=60)
        out = "".join(lines)
        forced = "(forced)" in out
        print(
            f"hoprag serve stopped {stop_s:.1f} s after SIGINT{' (forced: Ray did not stop)' if forced else ''}"
        )
        assert proc.returncode == 0, out[-2000:]
        assert "started a local Ray cluster" in out and "ready in" in out and "stopping" in out
        assert "stopped in" in out
    finally:
        if proc.poll() is None:
            proc.kill()


def test_metrics_reach_rays_prometheus_endpoint(served) -> None:
    import ray

    port = ray._private.worker.global_worker.node.metrics_export_port
    httpx.post(f"{served.open_base}/v1/qa", json={"question": ""}, timeout=30)  # a 422, counted
    wanted = {
        "ray_hoprag_requests_total",
        "ray_hoprag_stage_latency_s_bucket",
        "ray_hoprag_retriever_batch_size_bucket",
        "ray_hoprag_llm_calls_per_question_bucket",
        "ray_hoprag_errors_total",
    }
    found: set[str] = set()
    deadline = time.time() + 300  # Ray exports metrics every few seconds (longer on a busy machine)
    while time.time() < deadline and not wanted <= found:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        found = {line.split("{")[0] for line in text.splitlines() if line.startswith("ray_hoprag_")}
        time.sleep(2)
    assert wanted <= found, sorted(found)


def test_rolling_a_new_retriever_into_a_running_app_drops_no_request(served) -> None:
    """The runbook's retriever roll-out: redeploy the app with another retriever under traffic."""
    from ray import serve

    from serving.builder import build_app

    def app(retriever: str):
        # App args are part of Serve's code version: a new retriever replaces every deployment of
        # the app. With two replicas each, Serve replaces one at a time and the other answers.
        two = {"num_cpus": 0.1, "autoscaling": {"min_replicas": 2, "max_replicas": 2}}
        deployments = {n: two for n in ("ingress", "qa", "retriever_deployment", "llm_deployment")}
        settings = _settings(
            served.index, Path(retriever), served.llm_url, auth={"token_env": None}, **deployments
        )
        return build_app(settings)

    def replicas(deployment: str) -> set[str]:
        import ray

        prefix = f"SERVE_REPLICA::roll#{deployment}#"
        return {
            a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(prefix)
        }

    def retriever_name() -> str:
        handle = serve.get_deployment_handle("Retriever-default", app_name="roll")
        return str(handle.describe.remote().result(timeout_s=60)["retriever"])

    serve.run(app("dense"), name="roll", route_prefix="/roll", blocking=False)  # returns once loaded
    assert retriever_name().startswith("dense")
    before = replicas("Retriever-default")
    url = f"{served.root}/roll/v1/qa"
    outcomes: list[object] = []
    stop = threading.Event()

    def traffic() -> None:  # no client retries: every failure counts
        while not stop.is_set():
            try:
                r = httpx.post(url, json={"question": "Who directed My Cousin From Warsaw?"}, timeout=60)
                outcomes.append(r.status_code)
            except httpx.HTTPError as exc:
                outcomes.append(type(exc).__name__)

    sender = threading.Thread(target=traffic)
    sender.start()
    try:
        time.sleep(2)
        during = len(outcomes)
        serve.run(app(str(served.glm)), name="roll", route_prefix="/roll", blocking=False)
        time.sleep(2)
    finally:
        stop.set()
        sender.join()
    try:
        assert retriever_name().startswith("glm")
        print(
            f"roll-out: {len(outcomes)} requests ({len(outcomes) - during} during/after), outcomes {set(outcomes)}"
        )
        assert len(outcomes) > during > 0 and all(o == 200 for o in outcomes)
        after = replicas("Retriever-default")
        assert len(after) == 2 and not after & before  # both Retriever replicas are new ones
    finally:
        serve.delete("roll")


# -- the playground in a real browser -------------------------------------------------------------
DEMO_QUESTION = "Who directed My Cousin From Warsaw?"


def test_the_playground_answers_a_shared_link_in_headless_chromium(served, chromium, tmp_path) -> None:
    """``/?q=...&mode=plan`` fills the form and runs the question: the answer, the plan's steps and
    the evidence graph's nodes and edges end up in the DOM. Full-page screenshots (desktop and phone
    width) go to ``$HOPRAG_PLAYGROUND_SCREENSHOTS`` (e.g. docs/img), else to the test's temporary
    folder."""
    import re
    from os import environ
    from urllib.parse import urlencode

    from tests.support.browser import Browser

    query = urlencode({"q": DEMO_QUESTION, "mode": "plan"})
    out = Path(environ.get("HOPRAG_PLAYGROUND_SCREENSHOTS") or tmp_path)
    finished = "['done', 'error'].includes(document.body.dataset.state) && document.body.dataset.state"
    with Browser(chromium) as browser:
        for name, (width, height, mobile) in {
            "desktop": (1280, 900, False),
            "phone": (390, 844, True),
        }.items():
            browser.open(f"{served.open_base}/?{query}", width, height, mobile)
            state = browser.wait_for(finished, timeout_s=90)
            dom = browser.dom()
            assert state == "done", dom[-3000:]
            assert browser.evaluate("document.getElementById('answer').textContent") == "Carl Boese"
            assert browser.evaluate("document.getElementById('question').value") == DEMO_QUESTION
            assert browser.evaluate("document.querySelector('input[name=mode]:checked').value") == "plan"
            assert len(re.findall(r'<li class="step" data-step="\d+">', dom)) >= 1
            # the scripted one-step plan restates the question, so the step searched is the question
            assert re.search(r'<li class="step" data-step="0">.*?' + re.escape(DEMO_QUESTION), dom, re.S)
            assert "Seeds: " in dom and "Step answer: " in dom
            nodes = re.findall(r'<g class="node[^"]*" data-entity="([^"]*)"', dom)
            edges = re.findall(r'<g class="edge[^"]*" data-relation="([^"]*)"', dom)
            assert "Carl Boese" in nodes and len(nodes) >= 2 and len(edges) >= 1, (nodes, edges)
            assert re.search(r'<g class="node[^"]*\banswer\b[^"]*" data-entity="Carl Boese"', dom)
            shot = browser.screenshot(out / f"playground-{name}.png")
            assert shot.stat().st_size > 10_000
            print(f"screenshot: {shot} ({len(nodes)} nodes, {len(edges)} edges)")
        # The app with auth on: without a token the page says so in words.
        browser.open(f"{served.base}/?{query}", 1280, 900)
        assert browser.wait_for(finished, timeout_s=30) == "error"
        error = browser.evaluate("document.getElementById('error').textContent")
        assert error.startswith("Not authorised (401)"), error


@pytest.mark.parametrize(
    ("status", "kind", "headers", "words"),
    [
        (
            429,
            "rate_limited",
            {"Retry-After": "7"},
            "Too many requests (429): the server is rate-limiting. Retry in 7 s.",
        ),
        (
            503,
            "overloaded",
            {"Retry-After": "1"},
            "The service is busy or still loading (503). Retry in 1 s.",
        ),
        (504, "timeout", {}, "No answer in time (504): the question took longer than the server allows."),
    ],
)
def test_the_playground_says_in_words_when_the_api_refuses(
    served, chromium, status, kind, headers, words
) -> None:
    """The page's words for a rate limit (a proxy's 429: the app has none of its own), an overload
    and a timeout, with the Retry-After the API sent. The responses are canned by Chromium itself,
    in the ingress's error format (the real 503/504 are tested over HTTP above)."""
    from urllib.parse import urlencode

    from tests.support.browser import Browser

    body = {"error": {"type": kind, "message": "from the test", "request_id": "r-1"}}
    finished = "['done', 'error'].includes(document.body.dataset.state) && document.body.dataset.state"
    with Browser(chromium) as browser:
        browser.can("/v1/qa", status, body, headers)
        browser.open(f"{served.open_base}/?{urlencode({'q': DEMO_QUESTION})}", 1280, 900)
        assert browser.wait_for(finished, timeout_s=30) == "error"
        error = browser.evaluate("document.getElementById('error').textContent")
        assert error == f"{words} (from the test)", error
        assert browser.evaluate("document.getElementById('run').disabled") is False  # can ask again
