"""The QA ingress's HTTP hardening, without a running Ray Serve.

The replica is the real ``QAIngress`` class (what ``@serve.ingress`` made of it) built by hand with
a fake QA handle, and the app under test is the one that class serves (the copy ``@serve.ingress``
froze, middleware included). Serve injects ``self`` into the routes through
``serve.get_replica_context().servable_object``, and so does the request guard for its policy:
patching that one function stands in for the replica context.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from ray import serve
from starlette.datastructures import Headers

import serving.metrics
from serving.deployments.ingress import GuardPolicy, QAIngress, RequestGuard, bearer_token_ok
from serving.settings import QAAppSettings

TOKEN = "s3cret-token"
TOKEN_ENV = "HOPRAG_UNIT_TEST_TOKEN"
ANSWER = {
    "answer": "Carl Boese",
    "not_enough_info": False,
    "documents": [{"doc_id": 1, "title": "My Cousin From Warsaw", "score": 0.9}],
    "triples": [],
    "llm_calls": 1,
    "prompt_tokens": 10,
    "completion_tokens": 2,
    "seconds": 0.01,
    "llm_seconds": 0.005,
}
SECRET_ERROR = "FileNotFoundError('/srv/secret/index/entities.parquet')"


class _Reply:
    """What a DeploymentHandle call returns: awaitable (the value, or the exception raised)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Iterator[Any]:
        async def get() -> Any:
            if isinstance(self.value, BaseException):
                raise self.value
            return self.value

        return get().__await__()

    def cancel(self) -> None:
        pass


class _Events:
    """What a streaming handle call returns: an async iterator of the scripted items (an exception
    item is raised), with ``cancel``."""

    def __init__(self, items: list[Any]) -> None:
        self.items = list(items)
        self.cancelled = False

    def __aiter__(self) -> _Events:
        return self

    async def __anext__(self) -> Any:
        if not self.items:
            raise StopAsyncIteration
        item = self.items.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def cancel(self) -> None:
        self.cancelled = True


def _stream_items(answer: dict[str, Any] = ANSWER) -> list[Any]:
    return [
        {"event": "stage", "data": {"stage": "started", "request_id": "r", "mode": "retrieve"}},
        {"event": "stage", "data": {"stage": "seeds", "step": 0, "entities": ["x"], "seeds": {}}},
        {"event": "token", "data": {"text": "Carl"}},
        {"event": "token", "data": {"text": " Boese"}},
        {"event": "result", "data": dict(answer)},
    ]


class FakeQA:
    """The QA deployment's handle: ``load_status`` as scripted, ``answer`` records the questions,
    ``options(stream=True).answer_stream`` gives ``stream_items``."""

    def __init__(self, status: str | BaseException = "ready") -> None:
        self.status = status
        self.questions: list[str] = []
        self.load_status = SimpleNamespace(remote=lambda: _Reply(self.status))
        self.answer = SimpleNamespace(remote=self._answer)
        self.answer_stream = SimpleNamespace(remote=self._answer_stream)
        self.stream_items: list[Any] = _stream_items()
        self.streams: list[_Events] = []

    def options(self, **kwargs: Any) -> FakeQA:
        return self

    def _answer_stream(self, question: str, mode: str, top_k: int, request_id: str) -> _Events:
        self.questions.append(question)
        self.streams.append(_Events(self.stream_items))
        return self.streams[-1]

    def _answer(self, question: str, mode: str, top_k: int) -> _Reply:
        self.questions.append(question)
        return _Reply(dict(ANSWER))


class _Metric:
    def inc(self, *args: Any, **kwargs: Any) -> None:
        pass

    def observe(self, *args: Any, **kwargs: Any) -> None:
        pass


class _Replica(QAIngress.func_or_class):  # type: ignore[misc,name-defined]
    """The class @serve.ingress made of QAIngress (the one Serve instantiates), built by hand: its
    ``__init__`` is async (Serve awaits it), and its async ``__del__`` (the app's lifespan shutdown,
    which never started here) is left out, so garbage collection warns of no unawaited coroutine."""

    async def __init__(self, qa: FakeQA, settings: QAAppSettings) -> None:
        await super().__init__(qa, settings)

    def __del__(self) -> None:
        pass


Make = Callable[..., tuple[TestClient, FakeQA]]


@pytest.fixture
def make_client(monkeypatch: pytest.MonkeyPatch) -> Make:
    """``make_client(auth=True, qa=FakeQA(...), limits={...})`` → a TestClient on the ingress app."""
    monkeypatch.setattr(
        serving.metrics,
        "ingress_metrics",
        lambda: dict.fromkeys(("requests", "errors", "latency"), _Metric()),
    )

    def make(
        *, auth: bool = True, qa: FakeQA | None = None, root_path: str = "", **overrides: Any
    ) -> tuple[TestClient, FakeQA]:
        if auth:
            monkeypatch.setenv(TOKEN_ENV, TOKEN)
        settings = QAAppSettings.model_validate(
            {"index": "unused", "auth": {"token_env": TOKEN_ENV if auth else None}, **overrides}
        )
        qa = qa or FakeQA()
        replica = _Replica.__new__(_Replica)
        asyncio.run(replica.__init__(qa, settings))
        monkeypatch.setattr(serve, "get_replica_context", lambda: SimpleNamespace(servable_object=replica))
        return TestClient(replica.app, raise_server_exceptions=False, root_path=root_path), qa

    return make


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def _chat(*contents: Any) -> dict[str, Any]:
    return {"model": "hoprag", "messages": [{"role": "user", "content": c} for c in contents]}


def _error(response: Any, status: int, kind: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["type"] == kind and error["message"] and error["request_id"]
    return error


# -- 1. the bearer token ----------------------------------------------------------------------------
def test_the_bearer_token_is_compared_in_constant_time_on_bytes(make_client: Make, monkeypatch) -> None:
    compared: list[tuple[object, object]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    client, _ = make_client()
    assert client.get("/v1/models", headers=_auth()).status_code == 200
    assert compared == [(TOKEN.encode(), TOKEN.encode())]
    assert client.get("/v1/models", headers={"Authorization": f"bearer {TOKEN}"}).status_code == 200
    for headers in (
        {},
        {"Authorization": "Bearer nope"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
    ):
        r = client.get("/v1/models", headers=headers)
        _error(r, 401, "unauthorized")
        assert r.headers["www-authenticate"] == "Bearer"
    assert all(isinstance(a, bytes) and isinstance(b, bytes) for a, b in compared)
    assert len(compared) == 7  # every check, right or wrong, went through compare_digest


def test_a_non_ascii_token_is_compared_on_its_utf8_bytes() -> None:
    """hmac.compare_digest refuses non-ASCII str; the header's raw bytes are compared instead."""
    token = "tök€n"
    headers = Headers(raw=[(b"authorization", b"Bearer " + token.encode())])
    assert bearer_token_ok(headers, token)
    assert not bearer_token_ok(Headers(raw=[(b"authorization", b"Bearer tok")]), token)
    assert not bearer_token_ok(Headers(raw=[]), token)


# -- 2. request size ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/qa"),
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
        ("GET", "/healthz"),
        ("GET", "/readyz"),
    ],
)
def test_a_body_over_the_limit_is_413_on_every_route_before_it_is_parsed(
    make_client: Make, method, path
) -> None:
    client, qa = make_client(limits={"max_body_bytes": 1000})
    body = b'{"question": "' + b"x" * 2000  # not even JSON: parsed, it would be a 400
    r = client.request(method, path, content=body, headers={**_auth(), "Content-Type": "application/json"})
    error = _error(r, 413, "payload_too_large")
    assert "1000 bytes" in error["message"] and "limits.max_body_bytes" in error["message"]
    assert qa.questions == []


def test_a_chunked_body_without_content_length_is_counted(make_client: Make) -> None:
    client, qa = make_client(limits={"max_body_bytes": 1000})

    def chunks() -> Iterator[bytes]:  # httpx sends it chunked, with no Content-Length
        yield b'{"question": "'
        for _ in range(20):
            yield b"x" * 100
        yield b'"}'

    r = client.post("/v1/qa", content=chunks(), headers={**_auth(), "Content-Type": "application/json"})
    _error(r, 413, "payload_too_large")
    assert qa.questions == []


def test_a_body_within_the_limit_reaches_the_app_intact(make_client: Make) -> None:
    client, qa = make_client(limits={"max_body_bytes": 200})
    question = "Who directed My Cousin From Warsaw?"
    body = json.dumps({"question": question}).encode()

    def chunks() -> Iterator[bytes]:
        yield body[:10]
        yield body[10:]

    for content in (body, chunks()):
        r = client.post("/v1/qa", content=content, headers={**_auth(), "Content-Type": "application/json"})
        assert r.status_code == 200, r.text
        assert r.json()["answer"] == "Carl Boese"
    assert qa.questions == [question, question]


def _run_guard(
    messages: list[dict[str, Any]], headers: list[tuple[bytes, bytes]], policy: GuardPolicy
) -> tuple[list[dict[str, Any]], list[bytes], int]:
    """Run RequestGuard alone over a stand-in app; returns (what was sent, the bodies the app read,
    how many request messages the guard pulled)."""
    pulled = 0
    app_bodies: list[bytes] = []
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        pulled += 1
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        app_bodies.append(b"".join(chunks))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    scope = {"type": "http", "method": "POST", "path": "/v1/qa", "root_path": "", "headers": headers}
    asyncio.run(RequestGuard(app, policy=lambda: policy)(scope, receive, send))
    return sent, app_bodies, pulled


def test_the_guard_stops_reading_a_streamed_body_at_the_limit() -> None:
    """Counted chunk by chunk, whatever Content-Length claims: the rest is never read."""
    stream = [{"type": "http.request", "body": b"x" * 4, "more_body": True} for _ in range(100)]
    for headers in ([], [(b"content-length", b"8")]):  # none, or one that lies
        sent, app_bodies, pulled = _run_guard(list(stream), headers, GuardPolicy(None, 10))
        assert sent[0]["status"] == 413 and app_bodies == []
        assert json.loads(sent[1]["body"])["error"]["type"] == "payload_too_large"
        assert pulled == 3  # 12 bytes > 10: refused at the third chunk of 100
    within = [
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.request", "body": b"cd", "more_body": False},
    ]
    sent, app_bodies, _ = _run_guard(within, [], GuardPolicy(None, 4))
    assert sent[0]["status"] == 204 and app_bodies == [b"abcd"]
    sent, app_bodies, pulled = _run_guard(list(stream), [(b"content-length", b"1_0")], GuardPolicy(None, 10))
    assert sent[0]["status"] == 400 and app_bodies == [] and pulled == 0


def test_too_many_or_too_long_chat_messages_are_422(make_client: Make) -> None:
    client, qa = make_client(limits={"max_chat_messages": 3, "max_message_chars": 50})
    error = _error(
        client.post("/v1/chat/completions", json=_chat(*["hi"] * 4), headers=_auth()), 422, "invalid_request"
    )
    assert "at most 3 messages" in error["message"] and "limits.max_chat_messages" in error["message"]
    error = _error(
        client.post("/v1/chat/completions", json=_chat("Who?", "x" * 51), headers=_auth()),
        422,
        "invalid_request",
    )
    assert error["message"].startswith("messages.1.content: at most 50 characters")
    parts = [{"type": "text", "text": "x" * 30}, {"type": "text", "text": "y" * 30}]  # 30 + 1 + 30 chars
    error = _error(
        client.post("/v1/chat/completions", json=_chat(parts), headers=_auth()), 422, "invalid_request"
    )
    assert "limits.max_message_chars" in error["message"]
    assert qa.questions == []
    ok = client.post("/v1/chat/completions", json=_chat("hi", "hello", "W" * 50), headers=_auth())
    assert ok.status_code == 200, ok.text
    assert qa.questions == ["W" * 50]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ([{"type": "text", "text": 5}], "text: Input should be a valid string"),
        ([{"type": "text", "text": ["a"]}], "text: Input should be a valid string"),
        ([{"type": "text"}], "text: Field required"),
        ([{"text": "Who?"}], "type: Field required"),
        (["Who?"], "valid dictionary"),
        (5, "valid list"),
    ],
)
def test_malformed_chat_content_parts_are_422_never_500(make_client: Make, content, fragment) -> None:
    client, qa = make_client()
    error = _error(
        client.post("/v1/chat/completions", json=_chat(content), headers=_auth()), 422, "invalid_request"
    )
    assert error["message"].startswith("messages.0.content") and fragment in error["message"]
    assert qa.questions == []


def test_text_parts_are_read_and_other_parts_ignored(make_client: Make) -> None:
    client, qa = make_client()
    parts = [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}, {"type": "text", "text": "Who?"}]
    r = client.post("/v1/chat/completions", json=_chat(parts), headers=_auth())
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "Carl Boese"
    assert qa.questions == ["Who?"]


# -- 3. auth before the body ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        b'{"question": ',  # malformed JSON: 400 once authenticated
        b'{"question": ""}',  # invalid field: 422
        b'{"question": "' + b"x" * 5000 + b'"}',  # over the limit: 413
    ],
    ids=["malformed", "invalid", "too-large"],
)
def test_auth_is_checked_before_the_body_is_read(make_client: Make, body: bytes) -> None:
    client, qa = make_client(limits={"max_body_bytes": 1000})
    for path in ("/v1/qa", "/v1/chat/completions"):
        for headers in ({}, {"Authorization": "Bearer nope"}):
            r = client.post(path, content=body, headers={**headers, "Content-Type": "application/json"})
            _error(r, 401, "unauthorized")
    assert qa.questions == []
    expected = {b'{"question": ': 400, b'{"question": ""}': 422}.get(body, 413)
    authed = client.post("/v1/qa", content=body, headers={**_auth(), "Content-Type": "application/json"})
    assert authed.status_code == expected


def test_probes_and_docs_stay_open_and_everything_else_needs_the_token(make_client: Make) -> None:
    client, _ = make_client()
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").status_code == 200
    assert client.get("/openapi.json").json()["paths"]["/v1/qa"]
    assert client.get("/docs").status_code == 200
    _error(client.get("/v1/models"), 401, "unauthorized")
    _error(client.get("/no-such-route"), 401, "unauthorized")  # unknown paths too: deny by default
    # Under an app's route prefix (Serve's root_path) the same paths are open, and the same closed.
    prefixed, _ = make_client(root_path="/open")
    assert prefixed.get("/open/healthz").status_code == 200
    _error(prefixed.get("/open/v1/models"), 401, "unauthorized")
    assert prefixed.get("/open/v1/models", headers=_auth()).status_code == 200


def test_auth_off_needs_no_token_but_keeps_the_limits(make_client: Make) -> None:
    client, _ = make_client(auth=False, limits={"max_body_bytes": 100})
    assert client.post("/v1/qa", json={"question": "Who?"}).json()["answer"] == "Carl Boese"
    _error(client.post("/v1/qa", json={"question": "x" * 200}), 413, "payload_too_large")


# -- 4. /readyz ---------------------------------------------------------------------------------------
@pytest.fixture
def serve_log() -> Iterator[list[str]]:
    """What the ingress logs (to ray.serve's logger, which does not propagate to the root)."""
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("ray.serve").addHandler(handler)
    try:
        yield lines
    finally:
        logging.getLogger("ray.serve").removeHandler(handler)


def test_readyz_tells_an_anonymous_caller_only_the_state(make_client: Make, serve_log) -> None:
    client, _ = make_client(qa=FakeQA(f"failed: {SECRET_ERROR}"))
    r = client.get("/readyz")
    assert r.status_code == 503 and r.headers["retry-after"] == "5"
    assert "secret" not in r.text and "FileNotFound" not in r.text
    body = r.json()
    assert body["status"] == "failed" and body["error"]["message"] == "not ready: failed"
    assert body["error"]["type"] == "unavailable" and "detail" not in body["error"]
    assert any(SECRET_ERROR in line for line in serve_log)  # the operator finds it in the logs
    wrong = client.get("/readyz", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 503 and "secret" not in wrong.text
    # ... and the authenticated caller in the body.
    authed = client.get("/readyz", headers=_auth())
    assert authed.status_code == 503 and authed.json()["error"]["detail"] == SECRET_ERROR
    client.get("/readyz")
    assert sum(SECRET_ERROR in line for line in serve_log) == 1  # logged once, not once per probe


def test_readyz_states(make_client: Make) -> None:
    qa = FakeQA("loading")
    client, _ = make_client(qa=qa)
    r = client.get("/readyz")
    assert r.status_code == 503 and r.json()["status"] == "loading" and r.headers["retry-after"] == "5"
    assert r.json()["error"]["message"] == "not ready: loading"
    qa.status = RuntimeError("actor died at 10.0.0.7")  # the QA deployment cannot be reached
    r = client.get("/readyz")
    assert r.status_code == 503 and r.json()["status"] == "failed" and "10.0.0.7" not in r.text
    assert "10.0.0.7" in client.get("/readyz", headers=_auth()).json()["error"]["detail"]
    qa.status = "ready"
    assert client.get("/readyz").json() == {"status": "ready"}
    assert client.get("/readyz", headers=_auth()).json() == {"status": "ready"}


def test_readyz_with_auth_off_shows_the_detail(make_client: Make) -> None:
    client, _ = make_client(auth=False, qa=FakeQA(f"failed: {SECRET_ERROR}"))
    r = client.get("/readyz")
    assert r.status_code == 503 and r.json()["error"]["detail"] == SECRET_ERROR


def _sse(text: str) -> list[tuple[str, str]]:
    """(event, data) of each Server-Sent Event in a body (``message`` when unnamed)."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = [line.partition(":")[::2] for line in block.split("\n") if line and not line.startswith(":")]
        if fields:
            event = next((v.strip() for k, v in fields if k == "event"), "message")
            events.append(
                (event, "\n".join(v[1:] if v.startswith(" ") else v for k, v in fields if k == "data"))
            )
    return events


def test_a_streamed_answer_is_stage_and_token_events_then_the_usual_body(make_client: Make) -> None:
    client, qa = make_client()
    plain = client.post("/v1/qa", json={"question": "Who?"}, headers=_auth()).json()
    r = client.post("/v1/qa", json={"question": "Who?", "stream": True}, headers=_auth())
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = _sse(r.text)
    assert [e for e, _ in events] == ["stage", "stage", "token", "token", "answer"]
    assert json.loads(events[0][1])["stage"] == "started"
    assert "".join(json.loads(d)["text"] for e, d in events if e == "token") == "Carl Boese"
    final = json.loads(events[-1][1])
    assert final.pop("timings").keys() == plain.pop("timings").keys()
    assert final == {**plain, "request_id": final["request_id"]}
    assert qa.streams[0].cancelled  # harmless once finished; stops the work when not


def test_errors_known_before_the_first_event_are_plain_http_errors(make_client: Make) -> None:
    from hoprag.planner.planner import PlannerInputError
    from serving.deployments.qa import NotReadyError

    client, qa = make_client()
    for exc, status in ((NotReadyError("loading"), 503), (PlannerInputError("the question is empty"), 400)):
        qa.stream_items = [exc]
        r = client.post("/v1/qa", json={"question": "Who?", "stream": True}, headers=_auth())
        assert r.status_code == status and r.headers["content-type"] == "application/json", r.text
    chat = {**_chat("Who?"), "stream": True}
    assert client.post("/v1/chat/completions", json=chat, headers=_auth()).status_code == 400


def test_an_error_mid_stream_is_an_error_event(make_client: Make) -> None:
    client, qa = make_client()
    qa.stream_items = [*_stream_items()[:3], RuntimeError("boom")]
    r = client.post("/v1/qa", json={"question": "Who?", "stream": True}, headers=_auth())
    events = _sse(r.text)
    assert [e for e, _ in events] == ["stage", "stage", "token", "error"]
    error = json.loads(events[-1][1])["error"]
    assert error["type"] == "internal_error" and error["request_id"] and "boom" not in error["message"]


def test_the_openai_client_reads_the_streamed_chat_completion(make_client: Make) -> None:
    import openai

    client, _ = make_client()
    oa = openai.OpenAI(base_url=f"{client.base_url}/v1", api_key=TOKEN, http_client=client)
    chunks = list(
        oa.chat.completions.create(
            model="hoprag",
            messages=[{"role": "user", "content": "Who?"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Carl Boese"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 12
    assert all(c.object == "chat.completion.chunk" for c in chunks)
