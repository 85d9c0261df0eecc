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
from serving.deployments.ingress import QAIngress
from serving.deployments.request_guard import GuardPolicy, RequestGuard, bearer_token_ok
from serving.settings import QAAppSettings
from tests.support.sse import sse_events_in

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

    def __init__(self, status: str | BaseException = "ready", snapshot: str = "snap-1") -> None:
        self.status = status
        self.questions: list[str] = []
        self.load_status = SimpleNamespace(remote=lambda: _Reply(self.status))
        self.answer = SimpleNamespace(remote=self._answer)
        self.snapshot = SimpleNamespace(remote=lambda: _Reply(snapshot))
        self.describe = SimpleNamespace(
            remote=lambda: _Reply(
                {
                    "name": "?",
                    "status": "ready",
                    "retriever": "dense",
                    "snapshot": snapshot,
                    "documents": 3,
                    "entities": 7,
                    "triples": 9,
                    "memory": {"qa_replica_rss_bytes": 1000, "retriever_replica_rss_bytes": 2000},
                }
            )
        )
        self.answer_stream = SimpleNamespace(remote=self._answer_stream)
        self.document = SimpleNamespace(
            remote=lambda title: _Reply(
                {"doc_id": 1, "title": title, "text": "Directed by Carl Boese."}
                if title == "My Cousin From Warsaw"
                else None
            )
        )
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


class FakeJobs:
    """The IndexJobs deployment's handle: records submissions, answers statuses."""

    def __init__(self) -> None:
        self.submitted: list[tuple[str, str, Any]] = []
        self.known_titles = {"My Cousin From Warsaw"}
        for method in ("submit_add", "submit_delete", "status", "index_of"):
            setattr(self, method, SimpleNamespace(remote=getattr(self, f"_{method}")))

    def _job(self, index: str, action: str, count: int) -> dict[str, Any]:
        return {
            "job_id": f"job-{len(self.submitted)}",
            "index": index,
            "action": action,
            "state": "queued",
            "documents": count,
            "submitted_at": 1.0,
            "live": False,
        }

    def _submit_add(self, index: str, documents: list[dict[str, str]]) -> _Reply:
        self.submitted.append((index, "add", documents))
        return _Reply(self._job(index, "add", len(documents)))

    def _submit_delete(self, index: str, title: str) -> _Reply:
        from serving.deployments.index_jobs import UnknownDocumentError

        if title not in self.known_titles:
            return _Reply(UnknownDocumentError(title))
        self.submitted.append((index, "delete", title))
        return _Reply(self._job(index, "delete", 1))

    def _index_of(self, job_id: str) -> _Reply:
        return _Reply("default" if job_id == "job-1" else None)

    def _status(self, job_id: str, serving: str | None) -> _Reply:
        job = self._job("default", "add", 2) | {"job_id": job_id, "state": "succeeded", "snapshot": "snap-1"}
        return _Reply(job | {"live": serving == "snap-1"})


class _Metric:
    def inc(self, *args: Any, **kwargs: Any) -> None:
        pass

    def observe(self, *args: Any, **kwargs: Any) -> None:
        pass


class _Replica(QAIngress.func_or_class):  # type: ignore[misc,name-defined]
    """The class @serve.ingress made of QAIngress (the one Serve instantiates), built by hand: its
    ``__init__`` is async (Serve awaits it), and its async ``__del__`` (the app's lifespan shutdown,
    which never started here) is left out, so garbage collection warns of no unawaited coroutine."""

    async def __init__(self, qa: dict[str, FakeQA], jobs: FakeJobs, settings: QAAppSettings) -> None:
        await super().__init__(qa, jobs, settings)

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
        *,
        auth: bool = True,
        qa: FakeQA | None = None,
        root_path: str = "",
        indexes: dict[str, FakeQA] | None = None,
        jobs: FakeJobs | None = None,
        **overrides: Any,
    ) -> tuple[TestClient, FakeQA]:
        if auth:
            monkeypatch.setenv(TOKEN_ENV, TOKEN)
        served: dict[str, Any] = (
            {"indexes": [{"name": n, "index": f"/srv/{n}"} for n in indexes]}
            if indexes
            else {"index": "unused"}
        )
        settings = QAAppSettings.model_validate(
            {**served, "auth": {"token_env": TOKEN_ENV if auth else None}, **overrides}
        )
        qa = qa or FakeQA()
        replica = _Replica.__new__(_Replica)
        asyncio.run(replica.__init__(indexes or {"default": qa}, jobs or FakeJobs(), settings))
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


# -- several indexes --------------------------------------------------------------------------------
def test_a_request_picks_its_index_and_an_unknown_one_is_a_404_listing_the_names(make_client: Make) -> None:
    films, music = FakeQA(), FakeQA()
    client, _ = make_client(indexes={"films": films, "music": music}, default_index="music")
    ok = client.post("/v1/qa", json={"question": "Who?", "index": "films"}, headers=_auth())
    assert ok.status_code == 200, ok.text
    default = client.post("/v1/qa", json={"question": "Where?"}, headers=_auth())
    assert default.status_code == 200
    assert (films.questions, music.questions) == (["Who?"], ["Where?"])
    missing = client.post("/v1/qa", json={"question": "Who?", "index": "books"}, headers=_auth())
    error = _error(missing, 404, "not_found")
    assert "'books'" in error["message"] and "films, music" in error["message"]
    # chat: the model's ':<index>' suffix, or an `index` field, picks the index
    chat = client.post(
        "/v1/chat/completions", json={**_chat("Who?"), "model": "hoprag-plan:films"}, headers=_auth()
    )
    assert chat.status_code == 200 and films.questions[-1] == "Who?"
    chat = client.post("/v1/chat/completions", json={**_chat("Why?"), "index": "music"}, headers=_auth())
    assert chat.status_code == 200 and music.questions[-1] == "Why?"
    _error(
        client.post("/v1/chat/completions", json={**_chat("Who?"), "model": "hoprag:x"}, headers=_auth()),
        404,
        "not_found",
    )
    models = {m["id"] for m in client.get("/v1/models", headers=_auth()).json()["data"]}
    assert {"hoprag", "hoprag-plan", "hoprag:films", "hoprag-plan:music"} <= models


def test_the_index_listing_reports_each_index_with_its_memory(make_client: Make) -> None:
    client, _ = make_client(indexes={"films": FakeQA(), "music": FakeQA("loading")})
    body = client.get("/v1/indexes", headers=_auth()).json()
    assert body["default"] == "films"
    films, music = body["indexes"]
    assert films["name"] == "films" and films["default"] and not music["default"]
    assert films["memory"] == {"qa_replica_rss_bytes": 1000, "retriever_replica_rss_bytes": 2000}
    assert films["triples"] == 9 and films["snapshot"] == "snap-1"
    # one index still loading: the app is not ready, and /readyz says which
    ready = client.get("/readyz", headers=_auth())
    assert ready.status_code == 503 and "music" in ready.json()["error"]["message"] + ready.json()[
        "error"
    ].get("detail", "")


# -- document updates ---------------------------------------------------------------------------------
def test_document_updates_need_auth_unless_allowed(make_client: Make) -> None:
    client, _ = make_client(auth=False)
    docs = [{"title": "A", "text": "a text"}]
    error = _error(client.post("/v1/indexes/default/documents", json=docs), 403, "forbidden")
    assert "updates.allow_without_auth" in error["message"]
    allowed, _ = make_client(auth=False, updates={"allow_without_auth": True})
    assert allowed.post("/v1/indexes/default/documents", json=docs).status_code == 202
    off, _ = make_client(updates={"enabled": False})
    _error(off.post("/v1/indexes/default/documents", json=docs, headers=_auth()), 403, "forbidden")
    # with auth on, an unauthenticated upload is a 401 before anything else
    client, _ = make_client()
    _error(client.post("/v1/indexes/default/documents", json=docs), 401, "unauthorized")


def test_an_upload_becomes_a_job_in_json_or_jsonl(make_client: Make) -> None:
    jobs = FakeJobs()
    client, _ = make_client(jobs=jobs)
    r = client.post(
        "/v1/indexes/default/documents",
        json={"documents": [{"title": "A", "text": "a text"}, {"title": "B", "text": "b text"}]},
        headers=_auth(),
    )
    assert r.status_code == 202, r.text
    assert r.json()["state"] == "queued" and r.headers["location"] == f"/v1/jobs/{r.json()['job_id']}"
    lines = "\n".join(json.dumps({"title": t, "text": f"{t} text"}) for t in ("C", "D", "E")) + "\n\n"
    r = client.post(
        "/v1/indexes/default/documents",
        content=lines,
        headers={**_auth(), "Content-Type": "application/jsonl"},
    )
    assert r.status_code == 202, r.text
    assert [(i, a, [d["title"] for d in docs]) for i, a, docs in jobs.submitted] == [
        ("default", "add", ["A", "B"]),
        ("default", "add", ["C", "D", "E"]),
    ]
    _error(
        client.post("/v1/indexes/nope/documents", json=[{"title": "A", "text": "t"}], headers=_auth()),
        404,
        "not_found",
    )


@pytest.mark.parametrize(
    ("body", "content_type", "status", "fragment"),
    [
        ("not json", "application/json", 400, "not valid JSON"),
        ("[]", "application/json", 422, "documents"),
        ('[{"title": "A"}]', "application/json", 422, "documents.0.text: Field required"),
        ('[{"title": "A", "text": "  "}]', "application/json", 422, "documents.0.text"),
        (
            '[{"title": "A", "text": "x"}, {"title": "A", "text": "y"}]',
            "application/json",
            422,
            "also documents.0",
        ),
        ('{"title": "A", "text": "x"}\n{oops\n', "application/jsonl", 422, "line 2: not a JSON object"),
        (
            '{"title": "A", "text": "' + "x" * 60 + '"}',
            "application/jsonl",
            422,
            "updates.max_document_chars",
        ),
    ],
)
def test_bad_uploads_are_refused_with_where_the_problem_is(
    make_client: Make, body: str, content_type: str, status: int, fragment: str
) -> None:
    jobs = FakeJobs()
    client, _ = make_client(jobs=jobs, updates={"max_document_chars": 50})
    r = client.post(
        "/v1/indexes/default/documents", content=body, headers={**_auth(), "Content-Type": content_type}
    )
    assert r.status_code == status, r.text
    assert fragment in r.json()["error"]["message"]
    assert jobs.submitted == []  # nothing queued


def test_uploads_have_their_own_size_limit(make_client: Make) -> None:
    jobs = FakeJobs()
    client, _ = make_client(jobs=jobs, limits={"max_body_bytes": 200}, updates={"max_upload_bytes": 2000})
    docs = [{"title": "A", "text": "x" * 500}]
    assert client.post("/v1/indexes/default/documents", json=docs, headers=_auth()).status_code == 202
    # the QA route keeps the small limit; an upload over its own limit is a 413 naming the setting
    _error(client.post("/v1/qa", json={"question": "x" * 500}, headers=_auth()), 413, "payload_too_large")
    big = [{"title": "A", "text": "x" * 3000}]
    error = _error(
        client.post("/v1/indexes/default/documents", json=big, headers=_auth()), 413, "payload_too_large"
    )
    assert "updates.max_upload_bytes" in error["message"]
    assert len(jobs.submitted) == 1


def test_deleting_a_document_and_reading_a_job(make_client: Make) -> None:
    jobs = FakeJobs()
    client, _ = make_client(jobs=jobs)
    r = client.delete("/v1/indexes/default/documents/My%20Cousin%20From%20Warsaw", headers=_auth())
    assert r.status_code == 202, r.text
    assert jobs.submitted == [("default", "delete", "My Cousin From Warsaw")]
    _error(client.delete("/v1/indexes/default/documents/Nope", headers=_auth()), 404, "not_found")
    status = client.get("/v1/jobs/job-1", headers=_auth())
    assert status.status_code == 200 and status.json()["state"] == "succeeded" and status.json()["live"]
    _error(client.get("/v1/jobs/job-404", headers=_auth()), 404, "not_found")


def test_a_streamed_answer_is_stage_and_token_events_then_the_usual_body(make_client: Make) -> None:
    client, qa = make_client()
    plain = client.post("/v1/qa", json={"question": "Who?"}, headers=_auth()).json()
    r = client.post("/v1/qa", json={"question": "Who?", "stream": True}, headers=_auth())
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events_in(r.text)
    assert [e for e, _ in events] == ["stage", "stage", "token", "token", "answer"]
    assert json.loads(events[0][1])["stage"] == "started"
    assert "".join(json.loads(d)["text"] for e, d in events if e == "token") == "Carl Boese"
    final = json.loads(events[-1][1])
    assert final.pop("timings").keys() == plain.pop("timings").keys()
    assert final == {**plain, "request_id": final["request_id"]}
    assert qa.streams[0].cancelled  # harmless once finished; stops the work when not


def test_errors_known_before_the_first_event_are_plain_http_errors(make_client: Make) -> None:
    from hoprag.planner.questions import PlannerInputError
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
    events = sse_events_in(r.text)
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


# -- 6. the playground ----------------------------------------------------------------------------
def test_the_playground_and_its_assets_are_open_to_a_get_only(make_client: Make) -> None:
    client, _ = make_client()
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<base href="/">' in page.text and 'src="static/playground.js"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    js = client.get("/static/playground.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert "innerHTML" not in js.text  # data goes into the DOM as text only
    assert client.get("/static/playground.css").headers["content-type"].startswith("text/css")
    # Only a GET of those exact paths is open; anything else under /static needs the token first.
    _error(client.post("/", json={}), 401, "unauthorized")
    _error(client.get("/static/secrets.txt"), 401, "unauthorized")
    _error(client.get("/static/../v1/models"), 401, "unauthorized")
    _error(client.get("/static/other.js", headers=_auth()), 404, "not_found")
    # Under an app's route prefix the page's relative URLs resolve under the prefix.
    prefixed, _ = make_client(root_path="/open")
    assert '<base href="/open/">' in prefixed.get("/open/").text


def test_a_document_text_by_title(make_client: Make) -> None:
    client, _ = make_client()
    path = "/v1/indexes/default/documents/My%20Cousin%20From%20Warsaw"
    _error(client.get(path), 401, "unauthorized")
    assert client.get(path, headers=_auth()).json() == {
        "index": "default",
        "doc_id": 1,
        "title": "My Cousin From Warsaw",
        "text": "Directed by Carl Boese.",
    }
    _error(client.get("/v1/indexes/default/documents/Nope", headers=_auth()), 404, "not_found")
    _error(client.get("/v1/indexes/music/documents/x", headers=_auth()), 404, "not_found")


def test_the_evidence_graph_comes_with_the_answer_when_asked(make_client: Make, monkeypatch) -> None:
    qa = FakeQA()
    triples = [
        {
            "head": "My Cousin From Warsaw",
            "relation": "directed by",
            "tail": "Carl Boese",
            "score": 0.9,
            "source": "glm",
            "triple_id": 3,
        }
    ]
    answer = {
        **ANSWER,
        "triples": triples,
        "steps": [
            {"index": 0, "seed_sources": {"My Cousin From Warsaw": "x"}, "clues": [{"triples": triples}]}
        ],
    }
    qa.stream_items = _stream_items(answer)
    client, _ = make_client(qa=qa)
    import serving.evidence_graph

    drawn_on_a_loop: list[bool] = []  # whether the layout ran on an event loop's thread
    real = serving.evidence_graph.evidence_graph

    def recording(result: dict[str, Any]) -> Any:
        try:
            asyncio.get_running_loop()
            drawn_on_a_loop.append(True)
        except RuntimeError:
            drawn_on_a_loop.append(False)
        return real(result)

    monkeypatch.setattr(serving.evidence_graph, "evidence_graph", recording)
    plain = client.post("/v1/qa", json={"question": "Who?"}, headers=_auth()).json()
    assert plain["evidence_graph"] is None
    r = client.post(
        "/v1/qa", json={"question": "Who?", "stream": True, "evidence_graph": True}, headers=_auth()
    )
    kind, data = sse_events_in(r.text)[-1]
    assert kind == "answer"
    graph = json.loads(data)["evidence_graph"]
    assert [n["entity"] for n in graph["nodes"]] == ["My Cousin From Warsaw", "Carl Boese"]
    assert graph["paths"] == [["My Cousin From Warsaw", "Carl Boese"]] and graph["edges"][0]["on_path"]
    assert graph["svg"].count("data-entity=") == 2 and 'data-relation="directed by"' in graph["svg"]
    assert drawn_on_a_loop == [False]  # laid out in a worker thread, not on the ingress's loop


def test_the_page_files_exist_and_a_wheel_ships_them() -> None:
    import fnmatch
    import tomllib
    from pathlib import Path

    from serving.deployments.request_guard import PAGE_FILES

    root = Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "serving"
    ]
    for name in PAGE_FILES.values():
        assert (root / "serving" / "static" / name).is_file()
        assert any(fnmatch.fnmatch(f"static/{name}", p) for p in patterns), name
