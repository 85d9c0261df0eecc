"""OpenAI-compatible client and loopback server, over real HTTP on 127.0.0.1 (no external network)."""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from hoprag.http_headers import retry_after_seconds
from hoprag.llm.base import (
    LLM,
    ChatMessage,
    Completion,
    GenerationParams,
    Prompt,
    PromptStyle,
    render_chat_as_completion,
    truncate_at_stop,
)
from hoprag.llm.openai_compat import OpenAICompatibleConfig, OpenAICompatibleLLM
from hoprag.llm.openai_server import OpenAIProtocolServer

pytestmark = pytest.mark.timeout(60)

FAST = {"timeout_s": 2.0}


# ---------------------------------------------------------------------------------------------
# A scripted LLM served by OpenAIProtocolServer
# ---------------------------------------------------------------------------------------------


class EchoLLM:
    """Answers ``echo: <prompt text>`` (plus an optional suffix), with word counts as token counts.

    Records what it was given and the peak number of concurrent ``generate`` calls.
    """

    def __init__(self, style: PromptStyle, suffix: str = "", delay_s: float = 0.0) -> None:
        self._style = style
        self.suffix = suffix
        self.delay_s = delay_s
        self.seen: list[tuple[Prompt, GenerationParams]] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self.peak_in_flight = 0

    @property
    def model_id(self) -> str:
        return f"echo-{self._style}"

    @property
    def prompt_style(self) -> PromptStyle:
        return self._style

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        with self._lock:
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
            self.seen.extend((p, params) for p in prompts)
        try:
            if self.delay_s:
                time.sleep(random.uniform(0, self.delay_s))
            out = []
            for p in prompts:
                text = p if isinstance(p, str) else " | ".join(f"{m['role']}:{m['content']}" for m in p)
                full = f"echo: {text}{self.suffix}"
                # Deliberately ignores params.stop, so the server's and the client's cuts are what's tested.
                out.append(
                    Completion(
                        text=full,
                        prompt_tokens=len(text.split()),
                        completion_tokens=len(full.split()),
                        finish_reason="length",
                    )
                )
            return out
        finally:
            with self._lock:
                self._in_flight -= 1


def test_echo_llm_satisfies_protocol() -> None:
    assert isinstance(EchoLLM("chat"), LLM)


@pytest.fixture
def completion_server() -> Iterator[tuple[OpenAIProtocolServer, EchoLLM]]:
    llm = EchoLLM("completion")
    with OpenAIProtocolServer(llm, max_concurrent_generations=8) as server:
        yield server, llm


@pytest.fixture
def chat_server() -> Iterator[tuple[OpenAIProtocolServer, EchoLLM]]:
    llm = EchoLLM("chat")
    with OpenAIProtocolServer(llm, max_concurrent_generations=8) as server:
        yield server, llm


def _client(base_url: str, style: PromptStyle, **kw: Any) -> OpenAICompatibleLLM:
    cfg = {**FAST, **kw}
    return OpenAICompatibleLLM(
        OpenAICompatibleConfig(
            base_url=base_url, model="m", prompt_style=style, api_key_env="HOPRAG_TEST_NO_SUCH_KEY", **cfg
        )
    )


def test_completion_style_roundtrip(completion_server: tuple[OpenAIProtocolServer, EchoLLM]) -> None:
    server, llm = completion_server
    with _client(server.base_url, "completion") as client:
        assert client.model_id == "openai-compat:m"
        assert client.prompt_style == "completion"
        out = client.generate(["hello world", "a b c"], GenerationParams(max_new_tokens=7, temperature=0.5))
    assert [c.text for c in out] == ["echo: hello world", "echo: a b c"]
    assert [(c.prompt_tokens, c.completion_tokens) for c in out] == [(2, 3), (3, 4)]
    assert all(c.ok and c.finish_reason == "length" for c in out)
    assert out[0].metadata["attempts"] == 1
    assert out[0].metadata["server_model"] == "echo-completion"
    params = llm.seen[0][1]
    assert (params.max_new_tokens, params.temperature, params.stop) == (7, 0.5, ())
    assert client.stats["succeeded"] == 2 and client.stats["failed"] == 0


def test_chat_style_roundtrip(chat_server: tuple[OpenAIProtocolServer, EchoLLM]) -> None:
    server, llm = chat_server
    conv: list[ChatMessage] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi there"},
    ]
    with _client(server.base_url, "chat") as client:
        out = client.generate([conv, "plain string"], GenerationParams())
    assert [c.text for c in out] == ["echo: system:be brief | user:hi there", "echo: user:plain string"]
    assert all(c.ok for c in out)
    assert out[1].prompt_tokens == 2
    # A string prompt became exactly one user message.
    # (requests run concurrently, so the server may have seen them in either order)
    assert [{"role": "user", "content": "plain string"}] in [prompt for prompt, _ in llm.seen]


def test_chat_prompt_to_completion_backend_is_flattened(
    completion_server: tuple[OpenAIProtocolServer, EchoLLM],
) -> None:
    server, llm = completion_server
    conv: list[ChatMessage] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "q?"}]
    with _client(server.base_url, "completion") as client:
        (c,) = client.generate([conv], GenerationParams())
    assert llm.seen[0][0] == render_chat_as_completion(conv)
    assert c.text == "echo: " + render_chat_as_completion(conv)


def test_stop_sequences_are_sent_and_cut(completion_server: tuple[OpenAIProtocolServer, EchoLLM]) -> None:
    server, llm = completion_server
    llm.suffix = " ### tail END more"
    with _client(server.base_url, "completion") as client:
        (c,) = client.generate(["x"], GenerationParams(stop=("END", "###")))
    assert c.text == "echo: x "
    assert c.finish_reason == "stop"
    assert llm.seen[0][1].stop == ("END", "###")


def test_order_preserved_under_concurrency(chat_server: tuple[OpenAIProtocolServer, EchoLLM]) -> None:
    server, llm = chat_server
    llm.delay_s = 0.03
    prompts: list[Prompt] = [f"prompt number {i}" for i in range(20)]
    with _client(server.base_url, "chat", max_concurrency=4) as client:
        out = client.generate(prompts, GenerationParams())
    assert [c.text for c in out] == [f"echo: user:prompt number {i}" for i in range(20)]
    assert 1 < llm.peak_in_flight <= 4
    assert client.stats["requests"] == 20


def test_empty_batch(completion_server: tuple[OpenAIProtocolServer, EchoLLM]) -> None:
    server, _ = completion_server
    with _client(server.base_url, "completion") as client:
        assert client.generate([], GenerationParams()) == []


def test_closed_client_raises(completion_server: tuple[OpenAIProtocolServer, EchoLLM]) -> None:
    server, _ = completion_server
    client = _client(server.base_url, "completion")
    client.close()
    client.close()  # idempotent
    with pytest.raises(RuntimeError):
        client.generate(["x"], GenerationParams())


# ---------------------------------------------------------------------------------------------
# Protocol compatibility: the official openai client and raw requests
# ---------------------------------------------------------------------------------------------


def test_official_openai_client(chat_server: tuple[OpenAIProtocolServer, EchoLLM]) -> None:
    openai = pytest.importorskip("openai")
    server, llm = chat_server
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0, timeout=10)
    try:
        chat = client.chat.completions.create(
            model="whatever",
            messages=[{"role": "user", "content": "hi"}],
            max_tokens=5,
            temperature=0,
            stop=["never"],
        )
        assert chat.choices[0].message.content == "echo: user:hi"
        assert chat.choices[0].finish_reason == "length"
        assert chat.usage is not None and chat.usage.prompt_tokens == 1
        assert chat.model == "echo-chat"

        comp = client.completions.create(model="whatever", prompt="two words", max_tokens=5)
        assert comp.choices[0].text == "echo: user:two words"
        assert comp.usage is not None and comp.usage.total_tokens == 2 + 3

        models = client.models.list()
        assert [m.id for m in models.data] == ["echo-chat"]
    finally:
        client.close()
    assert llm.seen[0][1].max_new_tokens == 5


def test_server_rejects_bad_requests(completion_server: tuple[OpenAIProtocolServer, EchoLLM]) -> None:
    server, llm = completion_server
    with httpx.Client(base_url=server.base_url, timeout=5) as http:
        cases: list[tuple[str, bytes | dict[str, Any], int]] = [
            ("/completions", b"{not json", 400),
            ("/completions", b"[1, 2]", 400),
            ("/completions", {"model": "m"}, 400),
            ("/completions", {"model": "m", "prompt": [1, 2]}, 400),
            ("/completions", {"model": "m", "prompt": "x", "max_tokens": 0}, 400),
            ("/completions", {"model": "m", "prompt": ["x", "y"], "stream": True}, 400),
            ("/chat/completions", {"model": "m"}, 400),
            ("/chat/completions", {"model": "m", "messages": [{"role": "robot", "content": "x"}]}, 400),
            ("/chat/completions", {"model": "m", "messages": [{"role": "user"}]}, 400),
            ("/chat/completions", {"model": "m", "messages": []}, 400),
            (
                "/chat/completions",
                {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
                400,
            ),
            ("/completions", {"model": "m", "prompt": "x", "n": 2}, 400),
            ("/completions", {"model": "m", "prompt": "x", "max_tokens": True}, 400),
            ("/completions", {"model": "m", "prompt": "x", "temperature": -1}, 400),
            ("/completions", {"model": "m", "prompt": "x", "stop": [1]}, 400),
            ("/completions", {"model": "m", "prompt": []}, 400),
            ("/nope", {"model": "m"}, 404),
        ]
        for path, body, status in cases:
            if isinstance(body, bytes):
                r = http.post(path, content=body, headers={"Content-Type": "application/json"})
            else:
                r = http.post(path, json=body)
            assert r.status_code == status, (path, body, r.text)
            err = r.json()["error"]
            assert isinstance(err["message"], str) and err["message"]
            assert isinstance(err["type"], str)
        wrong_method = http.get("/completions")
        assert wrong_method.status_code == 405 and wrong_method.json()["error"]["message"] == "use POST"
        # The keep-alive connection survived all of that.
        ok = http.post("/completions", json={"model": "m", "prompt": ["a", "b"]})
        assert ok.status_code == 200
        assert [ch["text"] for ch in ok.json()["choices"]] == ["echo: a", "echo: b"]
        assert http.get("/models").json()["data"][0]["id"] == "echo-completion"
    assert len(llm.seen) == 2


def test_a_body_over_the_limit_is_refused_before_it_is_read(
    completion_server: tuple[OpenAIProtocolServer, EchoLLM],
) -> None:
    import socket

    server, llm = completion_server
    with socket.create_connection((server.host, server.port), timeout=10) as conn:
        # Only the headers are sent: the answer must not wait for the 17 MiB they announce.
        conn.sendall(
            b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {17 * 1024 * 1024}\r\n\r\n".encode()
        )
        answer = conn.recv(65536).decode()
    assert answer.startswith("HTTP/1.1 413") and "request body too large" in answer
    assert llm.seen == []


def test_server_reports_backend_failure_as_500() -> None:
    class Failing(EchoLLM):
        def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
            return [Completion(text="", finish_reason="error", error="boom") for _ in prompts]

    with (
        OpenAIProtocolServer(Failing("completion")) as server,
        _client(server.base_url, "completion", max_retries=1) as client,
    ):
        (c,) = client.generate(["x"], GenerationParams())
    assert c.error == "http_500" and c.finish_reason == "error"
    assert client.stats["requests"] == 2


# ---------------------------------------------------------------------------------------------
# A scripted misbehaving server
# ---------------------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    body: bytes | dict[str, Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False


def ok_reply(text: str, style: str = "completion", finish: str = "stop") -> Reply:
    choice: dict[str, Any] = (
        {"index": 0, "text": text, "finish_reason": finish}
        if style == "completion"
        else {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
    )
    return Reply(
        body={"choices": [choice], "usage": {"prompt_tokens": 3, "completion_tokens": 4}, "model": "s"}
    )


class ScriptedServer:
    """Answers each request with ``script(body, n)`` where ``n`` counts requests with that body's prompt."""

    def __init__(self, script: Callable[[dict[str, Any], int], Reply]) -> None:
        self.script = script
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.release = threading.Event()
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = json.dumps(body.get("prompt", body.get("messages")))
                with outer._lock:
                    outer.requests.append((dict(self.headers), body))
                    outer._counts[key] = outer._counts.get(key, 0) + 1
                    n = outer._counts[key]
                reply = outer.script(body, n)
                if reply.hang:
                    outer.release.wait(10)
                    return
                data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def test_retries_429_with_retry_after_then_503_then_succeeds() -> None:
    def script(body: dict[str, Any], n: int) -> Reply:
        if n == 1:
            return Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0.3"})
        if n == 2:
            return Reply(503, b"overloaded")
        return ok_reply("fine")

    with ScriptedServer(script) as srv, _client(srv.base_url, "completion") as client:
        t0 = time.monotonic()
        (c,) = client.generate(["p"], GenerationParams())
        elapsed = time.monotonic() - t0
    assert c.ok and c.text == "fine"
    assert (c.prompt_tokens, c.completion_tokens) == (3, 4)
    assert c.metadata["attempts"] == 3
    assert client.stats["retries"] == 2 and client.stats["requests"] == 3
    assert len(srv.requests) == 3
    assert elapsed >= 0.28  # Retry-After was waited for


def test_a_retry_after_of_an_hour_fails_the_prompt_at_once() -> None:
    """The openai SDK retries only when the server asks for a wait it accepts (60 s in openai 1.x,
    2 minutes later); an hour fails the prompt with the server's status instead of holding a worker."""

    def script(body: dict[str, Any], n: int) -> Reply:
        return Reply(429, b"{}", {"Retry-After": "3600"}) if n == 1 else ok_reply("ok")

    with ScriptedServer(script) as srv, _client(srv.base_url, "completion") as client:
        (c,) = client.generate(["p"], GenerationParams())
    assert c.error == "http_429" and len(srv.requests) == 1


def test_persistent_500_fails_only_that_prompt() -> None:
    def script(body: dict[str, Any], n: int) -> Reply:
        return Reply(500, b"kaput") if body["prompt"] == "bad" else ok_reply(f"ok {body['prompt']}")

    with (
        ScriptedServer(script) as srv,
        _client(srv.base_url, "completion", max_retries=2, max_concurrency=3) as client,
    ):
        out = client.generate(["a", "bad", "c"], GenerationParams())
    assert [c.text for c in out] == ["ok a", "", "ok c"]
    bad = out[1]
    assert bad.error == "http_500" and bad.finish_reason == "error" and not bad.ok
    assert bad.metadata["attempts"] == 3 and bad.metadata["status"] == 500
    assert sum(1 for _, b in srv.requests if b["prompt"] == "bad") == 3  # 1 + max_retries
    stats = client.stats
    assert stats["failed"] == 1 and stats["succeeded"] == 2
    assert stats["retries"] == 2 and stats["failed_http_500"] == 1


def test_timeout_is_reported_quickly() -> None:
    with (
        ScriptedServer(lambda body, n: Reply(hang=True)) as srv,
        _client(srv.base_url, "completion", timeout_s=0.2, max_retries=1) as client,
    ):
        t0 = time.monotonic()
        (c,) = client.generate(["p"], GenerationParams())
        elapsed = time.monotonic() - t0
    assert c.error == "timeout" and c.finish_reason == "error"
    assert client.stats["requests"] == 2
    assert elapsed < 60  # ended by the 0.2 s timeout: the server never answers (bound for busy machines)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, b"this is not json"),
        Reply(200, {"choices": []}),
        Reply(200, {"choices": [{"index": 0}]}),
        Reply(200, {"choices": [{"index": 0, "text": None}]}),
    ],
)
def test_bad_response_is_not_retried(reply: Reply) -> None:
    with (
        ScriptedServer(lambda body, n: reply) as srv,
        _client(srv.base_url, "completion", max_retries=3) as client,
    ):
        (c,) = client.generate(["p"], GenerationParams())
    assert c.error == "bad_response"
    assert len(srv.requests) == 1


def test_400_is_not_retried() -> None:
    with (
        ScriptedServer(lambda body, n: Reply(400, {"error": {"message": "bad", "type": "x"}})) as srv,
        _client(srv.base_url, "chat", max_retries=3) as client,
    ):
        (c,) = client.generate(["p"], GenerationParams())
    assert c.error == "http_400"
    assert len(srv.requests) == 1
    assert client.stats["retries"] == 0


def test_connection_error_after_retries() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nothing listens on that port now.
    with _client(f"http://127.0.0.1:{port}/v1", "completion", max_retries=2) as client:
        (c,) = client.generate(["p"], GenerationParams())
    assert c.error == "connection_error"
    assert client.stats["requests"] == 3


def test_payload_fields_and_client_side_stop() -> None:
    # The server ignores `stop`; the client must still cut there.
    def script(body: dict[str, Any], n: int) -> Reply:
        return ok_reply("answer STOP ignored", style="chat", finish="length")

    with (
        ScriptedServer(script) as srv,
        _client(srv.base_url, "chat", extra_body={"top_k": 1}, server_stop_limit=1) as client,
    ):
        (c,) = client.generate(["q"], GenerationParams(max_new_tokens=9, temperature=0.2, stop=("STOP", "x")))
    assert c.text == "answer " and c.finish_reason == "stop"
    _, body = srv.requests[0]
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "q"}],
        "max_tokens": 9,
        "temperature": 0.2,
        "stop": ["STOP"],
        "top_k": 1,
    }


# ---------------------------------------------------------------------------------------------
# API key and config
# ---------------------------------------------------------------------------------------------


def test_api_key_read_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOPRAG_TEST_KEY", "sk-test-123")
    with ScriptedServer(lambda body, n: ok_reply("ok")) as srv:
        cfg = OpenAICompatibleConfig(
            base_url=srv.base_url, model="m", prompt_style="completion", api_key_env="HOPRAG_TEST_KEY"
        )
        with OpenAICompatibleLLM(cfg) as client:
            monkeypatch.setenv("HOPRAG_TEST_KEY", "sk-changed-later")
            client.generate(["p"], GenerationParams())
        monkeypatch.delenv("HOPRAG_TEST_KEY")
        with OpenAICompatibleLLM(cfg) as client:
            client.generate(["p"], GenerationParams())
    headers = [{k.lower(): v for k, v in h.items()} for h, _ in srv.requests]
    assert headers[0]["authorization"] == "Bearer sk-test-123"
    assert "authorization" not in headers[1]


def test_config_validation() -> None:
    cfg = OpenAICompatibleConfig(base_url="http://127.0.0.1:8000/v1/", model="m")
    assert cfg.base_url == "http://127.0.0.1:8000/v1"
    assert cfg.prompt_style == "chat" and cfg.api_key_env == "OPENAI_API_KEY"
    bad: list[dict[str, Any]] = [
        {"base_url": "127.0.0.1:8000/v1"},
        {"model": ""},
        {"max_concurrency": 0},
        {"timeout_s": 0},
        {"max_retries": -1},
        {"prompt_style": "instruct"},
        {"api_key_env": "sk-abc def"},
        {"unknown_field": 1},
    ]
    for override in bad:
        with pytest.raises(ValidationError):
            OpenAICompatibleConfig(**{"base_url": "http://h/v1", "model": "m", **override})


def test_parse_retry_after() -> None:
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("0.5") == 0.5
    assert retry_after_seconds("garbage") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    now = 1_445_412_470.0  # 10 s before that date
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=now) == pytest.approx(10.0)


def test_truncate_helper_contract() -> None:
    # The client relies on this behaviour of the shared helper.
    assert truncate_at_stop("a\nb", ["\n"]) == ("a", True)


# ---------------------------------------------------------------------------------------------
# Structured output (response_format with the prompt's JSON schema)
# ---------------------------------------------------------------------------------------------


def _json_spec() -> tuple[list[ChatMessage], GenerationParams]:
    from hoprag.extraction.prompts import openie_prompt

    spec = openie_prompt("Oriel Fane directed The Salt Ledger.", "chat")
    assert spec.output_format == "json" and spec.params.json_schema
    return spec.prompt, spec.params  # type: ignore[return-value]


def test_json_prompts_send_their_schema_as_response_format() -> None:
    prompt, params = _json_spec()
    with (
        ScriptedServer(
            lambda body, n: ok_reply('{"named_entities": [], "triples": []}', style="chat")
        ) as srv,
        _client(srv.base_url, "chat") as client,
    ):
        (c,) = client.generate([prompt], params)
        client.generate(["plain"], GenerationParams())
    assert c.ok
    sent = srv.requests[0][1]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "openie"
    assert sent["json_schema"]["schema"] == json.loads(params.json_schema or "")
    assert "response_format" not in srv.requests[1][1]  # a prompt without a schema sends none


def test_an_endpoint_that_rejects_response_format_falls_back_once_and_says_so(caplog) -> None:
    prompt, params = _json_spec()

    def script(body: dict[str, Any], n: int) -> Reply:
        if "response_format" in body:
            return Reply(400, {"error": {"message": "response_format is not supported"}})
        return ok_reply('{"named_entities": [], "triples": []}', style="chat")

    with ScriptedServer(script) as srv, _client(srv.base_url, "chat", max_concurrency=1) as client:
        first = client.generate([prompt, prompt], params)
        second = client.generate([prompt], params)
    assert all(c.ok for c in [*first, *second])
    with_schema = [b["response_format"]["type"] for _, b in srv.requests if "response_format" in b]
    # json_schema refused, then json_object (the form some servers read) refused too, then never again
    assert with_schema == ["json_schema", "json_object"] and len(srv.requests) == 5
    assert client.stats["structured_output_refused"] == 1
    assert sum("refused response_format" in r.getMessage() for r in caplog.records) == 1


def test_a_server_that_answers_500_to_json_schema_gets_the_schema_as_json_object(caplog) -> None:
    # llama-cpp-python's server (python -m llama_cpp.server) validates response_format as part of
    # the body and answers HTTP 500, not 400, to json_schema; it reads {"type": "json_object",
    # "schema": ...}. Its answer, as that server gives it:
    refusal = {
        "error": {
            "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': "
            "\"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}]",
            "type": "internal_server_error",
        }
    }
    prompt, params = _json_spec()

    def script(body: dict[str, Any], n: int) -> Reply:
        if body.get("response_format", {}).get("type") == "json_schema":
            return Reply(500, refusal)
        return ok_reply('{"named_entities": [], "triples": []}', style="chat")

    with (
        ScriptedServer(script) as srv,
        _client(srv.base_url, "chat", max_concurrency=1, max_retries=0) as client,
    ):
        first = client.generate([prompt], params)
        second = client.generate([prompt], params)
    assert all(c.ok for c in [*first, *second])
    sent = [b.get("response_format") for _, b in srv.requests]
    assert [f["type"] for f in sent] == ["json_schema", "json_object", "json_object"]
    assert sent[1]["schema"] == json.loads(params.json_schema or "")  # the schema still constrains
    assert client.stats["structured_output_json_object"] == 1
    assert "structured_output_refused" not in client.stats
    assert sum("sending the schema as json_object" in r.getMessage() for r in caplog.records) == 1


def test_a_json_object_retry_that_times_out_is_that_prompts_failure_not_a_crash() -> None:
    # The retry with json_object goes through the same error handling as any request: a hang there
    # is the prompt's timeout; the batch and the client go on.
    refusal = {
        "error": {"message": "Input should be 'text' or 'json_object'", "type": "internal_server_error"}
    }
    prompt, params = _json_spec()

    def script(body: dict[str, Any], n: int) -> Reply:
        kind = body.get("response_format", {}).get("type")
        if kind == "json_schema":
            return Reply(500, refusal)
        if kind == "json_object":
            return Reply(hang=True)
        return ok_reply('{"named_entities": [], "triples": []}', style="chat")

    with (
        ScriptedServer(script) as srv,
        _client(srv.base_url, "chat", max_concurrency=1, max_retries=0) as client,
    ):
        (c,) = client.generate([prompt], params)
        (plain,) = client.generate(["no schema"], GenerationParams())
    assert c.error == "timeout" and plain.ok
    assert [b.get("response_format", {}).get("type") for _, b in srv.requests][:2] == [
        "json_schema",
        "json_object",
    ]


def test_a_500_for_another_reason_is_a_server_error_not_a_refusal() -> None:
    prompt, params = _json_spec()
    with (
        ScriptedServer(lambda body, n: Reply(500, {"error": {"message": "out of memory"}})) as srv,
        _client(srv.base_url, "chat", max_retries=0) as client,
    ):
        (c,) = client.generate([prompt], params)
    assert c.error == "http_500" and len(srv.requests) == 1
    assert srv.requests[0][1]["response_format"]["type"] == "json_schema"


def test_a_400_for_another_reason_keeps_structured_output_on() -> None:
    prompt, params = _json_spec()
    with (
        ScriptedServer(lambda body, n: Reply(400, {"error": {"message": "prompt too long"}})) as srv,
        _client(srv.base_url, "chat") as client,
    ):
        (c,) = client.generate([prompt], params)
        assert c.error == "http_400" and len(srv.requests) == 2  # with the schema, then without
        client.generate([prompt], params)
    assert "response_format" in srv.requests[2][1] and "structured_output_refused" not in client.stats


def test_the_server_hands_response_format_to_the_backend_as_a_json_schema(
    chat_server: tuple[OpenAIProtocolServer, EchoLLM],
) -> None:
    """Our client's structured-output request reaches the served LLM as GenerationParams.json_schema
    (the embedded model constrains decoding to it); json_object asks for any object."""
    import openai

    server, llm = chat_server
    prompt, params = _json_spec()
    with _client(server.base_url, "chat") as client:
        assert client.generate([prompt], params)[0].ok
    assert json.loads(llm.seen[-1][1].json_schema or "") == json.loads(params.json_schema or "")
    official = openai.OpenAI(base_url=server.base_url, api_key="unused")
    messages = [{"role": "user", "content": "hi"}]
    official.chat.completions.create(model="m", messages=messages, response_format={"type": "json_object"})
    assert json.loads(llm.seen[-1][1].json_schema or "") == {"type": "object"}
    official.chat.completions.create(model="m", messages=messages, response_format={"type": "text"})
    assert llm.seen[-1][1].json_schema is None
    with pytest.raises(openai.BadRequestError, match="json_schema is required"):
        official.chat.completions.create(
            model="m", messages=messages, response_format={"type": "json_schema"}
        )
