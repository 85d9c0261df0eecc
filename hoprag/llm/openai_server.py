"""Serve any :class:`~hoprag.llm.base.LLM` over the OpenAI HTTP protocol.

A deliberately small server on the standard library's :class:`http.server.ThreadingHTTPServer`,
running in a background thread. It exists so that code written against an OpenAI-compatible
endpoint (``hoprag.llm.openai_compat``, the official ``openai`` client) can be exercised against
the embedded models without a real inference server, and so a local model can be shared over HTTP.

Endpoints::

    POST /v1/completions        {"model", "prompt": str | [str], "max_tokens", "temperature", "stop"}
    POST /v1/chat/completions   {"model", "messages": [{"role", "content"}], "max_tokens", ...}
    GET  /v1/models
    GET  /health

``"stream": true`` (one prompt) answers Server-Sent Events as OpenAI does (``data: {chunk}`` lines,
then ``data: [DONE]``; usage in a last chunk when ``stream_options.include_usage`` is set), streamed
through the backend's :meth:`~hoprag.llm.streaming.StreamingLLM.stream` when it has one (one chunk
with the whole text otherwise); a client that closes the connection stops the generation.
Not supported (answered with 400): ``n > 1``, token-id prompts, a list of prompts when streaming. Requests are not batched
together; by default one generation runs at a time because local backends are rarely thread-safe.
Unset sampling fields take :class:`~hoprag.llm.base.GenerationParams` defaults (greedy,
256 new tokens) rather than OpenAI's, since this server fronts index-building models.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from hoprag.llm.base import (
    LLM,
    ChatMessage,
    Completion,
    GenerationParams,
    Prompt,
    render_chat_as_completion,
    truncate_at_stop,
)
from hoprag.llm.streaming import CancelToken, stream_completion

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 16 * 1024 * 1024
_CHAT_ROLES = {"system", "user", "assistant"}


class RequestError(Exception):
    """A client error, answered with an OpenAI-style error body."""

    def __init__(
        self,
        message: str,
        status: HTTPStatus = HTTPStatus.BAD_REQUEST,
        error_type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type


class OpenAIProtocolServer:
    """Expose an :class:`~hoprag.llm.base.LLM` as an OpenAI-compatible HTTP API on a background thread.

    Example::

        with OpenAIProtocolServer(llm) as server:
            client = OpenAICompatibleLLM(OpenAICompatibleConfig(base_url=server.base_url, model="m"))

    Any ``model`` name in a request is accepted; responses carry :attr:`model_name`.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model_name: str | None = None,
        max_concurrent_generations: int = 1,
    ) -> None:
        """Configure the server; nothing is bound until :meth:`start`.

        ``port=0`` picks a free ephemeral port (read it back from :attr:`port` / :attr:`base_url`).
        ``max_concurrent_generations`` bounds calls into ``llm.generate`` running at once; keep 1
        unless the backend is known to be thread-safe.
        """
        if max_concurrent_generations < 1:
            raise ValueError("max_concurrent_generations must be >= 1")
        self.llm = llm
        self.host = host
        self._requested_port = port
        self.model_name = model_name or llm.model_id
        self._generate_slots = threading.BoundedSemaphore(max_concurrent_generations)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._created = int(time.time())

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind the socket and serve on a daemon thread. Returns ``self`` for chaining."""
        if self._httpd is not None:
            raise RuntimeError("server already started")
        httpd = ThreadingHTTPServer((self.host, self._requested_port), _make_handler(self))
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"openai-server:{self.port}",
            daemon=True,
        )
        self._thread.start()
        logger.info("serving %s at %s", self.model_name, self.base_url)
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (for command-line use)."""
        if self._httpd is None:
            self.start()
        assert self._thread is not None
        try:
            while self._thread.is_alive():
                self._thread.join(timeout=0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def stop(self) -> None:
        """Stop accepting requests and close the socket. Idempotent."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start() if self._httpd is None else self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (the ephemeral one when constructed with ``port=0``)."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """API root for clients, e.g. ``http://127.0.0.1:54321/v1``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    # -- request handling (called from handler threads) ---------------------------------------

    def handle_models(self) -> dict[str, Any]:
        """Body of ``GET /v1/models``."""
        return {
            "object": "list",
            "data": [
                {"id": self.model_name, "object": "model", "created": self._created, "owned_by": "hoprag"}
            ],
        }

    def handle_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        """Body of ``POST /v1/completions``; raises :class:`RequestError` on a bad request."""
        raw = body.get("prompt")
        if isinstance(raw, str):
            texts = [raw]
        elif isinstance(raw, list) and raw and all(isinstance(p, str) for p in raw):
            texts = list(raw)
        elif raw is None:
            raise RequestError("missing required field 'prompt'")
        else:
            raise RequestError("'prompt' must be a string or a non-empty list of strings")
        params = _params(body)
        prompts: list[Prompt] = (
            list(texts)
            if self.llm.prompt_style == "completion"
            else [[{"role": "user", "content": t}] for t in texts]
        )
        results = self._generate(prompts, params)
        choices = [
            {"index": i, "text": c.text, "logprobs": None, "finish_reason": c.finish_reason}
            for i, c in enumerate(results)
        ]
        return self._envelope("cmpl", "text_completion", choices, results)

    def handle_chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """Body of ``POST /v1/chat/completions``; raises :class:`RequestError` on a bad request."""
        messages = _messages(body.get("messages"))
        params = _params(body)
        prompt: Prompt = messages if self.llm.prompt_style == "chat" else render_chat_as_completion(messages)
        results = self._generate([prompt], params)
        c = results[0]
        choices = [
            {
                "index": 0,
                "message": {"role": "assistant", "content": c.text},
                "logprobs": None,
                "finish_reason": c.finish_reason,
            }
        ]
        return self._envelope("chatcmpl", "chat.completion", choices, results)

    def stream_chunks(self, path: str, body: dict[str, Any], cancel: CancelToken) -> Iterator[dict[str, Any]]:
        """The chunks of a streamed ``POST path`` (``"stream": true``); the request is validated
        now (raising :class:`RequestError`), generation starts when the chunks are iterated."""
        params = _params(body)
        chat = path.endswith("/chat/completions")
        if chat:
            messages = _messages(body.get("messages"))
            prompt: Prompt = (
                messages if self.llm.prompt_style == "chat" else render_chat_as_completion(messages)
            )
        else:
            raw = body.get("prompt")
            if isinstance(raw, list) and len(raw) == 1:
                raw = raw[0]
            if not isinstance(raw, str):
                raise RequestError("'prompt' must be one string when streaming")
            prompt = raw if self.llm.prompt_style == "completion" else [{"role": "user", "content": raw}]
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return self._stream(prompt, params, chat, include_usage, cancel)

    def _stream(
        self, prompt: Prompt, params: GenerationParams, chat: bool, include_usage: bool, cancel: CancelToken
    ) -> Iterator[dict[str, Any]]:
        envelope = {
            "id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}",
            "object": "chat.completion.chunk" if chat else "text_completion",
            "created": int(time.time()),
            "model": self.model_name,
        }

        def chunk(text: str | None, finish: str | None = None, role: bool = False) -> dict[str, Any]:
            if chat:
                delta: dict[str, Any] = {"role": "assistant"} if role else {}
                if text is not None:
                    delta["content"] = text
                choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": text or "", "finish_reason": finish}
            return {**envelope, "choices": [choice]}

        if chat:
            yield chunk("", role=True)
        items = stream_completion(self.llm, prompt, params, cancel)
        completion: Completion | None = None
        try:
            with self._generate_slots:
                for item in items:
                    if isinstance(item, Completion):
                        completion = item
                        break
                    yield chunk(item)
        finally:
            items.close()  # the client went away mid-stream: the backend stops generating
            cancel.cancel()
        if completion is None or not completion.ok:
            error = completion.error if completion is not None else "no completion"
            yield {"error": {"message": f"generation failed: {error}", "type": "server_error", "code": None}}
            return
        yield chunk(None, completion.finish_reason)
        if include_usage:
            total = completion.prompt_tokens + completion.completion_tokens
            usage = {
                "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
                "total_tokens": total,
            }
            yield {**envelope, "choices": [], "usage": usage}

    def _generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        with self._generate_slots:
            results = self.llm.generate(prompts, params)
        if len(results) != len(prompts):
            raise RequestError(
                f"backend returned {len(results)} completions for {len(prompts)} prompts",
                HTTPStatus.INTERNAL_SERVER_ERROR,
                "server_error",
            )
        failed = [c.error for c in results if not c.ok]
        if failed:
            raise RequestError(
                f"generation failed: {failed[0]}", HTTPStatus.INTERNAL_SERVER_ERROR, "server_error"
            )
        # Backends should already cut at stop sequences; re-cutting is idempotent and protects
        # clients from one that does not.
        out = []
        for c in results:
            text, hit = truncate_at_stop(c.text, params.stop)
            out.append(c if not hit else _replace_text(c, text))
        return out

    def _envelope(
        self, id_prefix: str, obj: str, choices: list[dict[str, Any]], results: Sequence[Completion]
    ) -> dict[str, Any]:
        prompt_tokens = sum(c.prompt_tokens for c in results)
        completion_tokens = sum(c.completion_tokens for c in results)
        return {
            "id": f"{id_prefix}-{uuid.uuid4().hex}",
            "object": obj,
            "created": int(time.time()),
            "model": self.model_name,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _replace_text(c: Completion, text: str) -> Completion:
    return Completion(
        text=text,
        prompt_tokens=c.prompt_tokens,
        completion_tokens=c.completion_tokens,
        finish_reason="stop",
        error=c.error,
        metadata=c.metadata,
    )


def _params(body: dict[str, Any]) -> GenerationParams:
    """Sampling settings from a request body, validated; unset fields take our defaults."""
    defaults = GenerationParams()
    n = body.get("n", 1)
    if n not in (None, 1):
        raise RequestError("only n=1 is supported")

    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        # Newer OpenAI clients send this name instead for chat.
        max_tokens = body.get("max_completion_tokens")
    if max_tokens is None:
        max_tokens = defaults.max_new_tokens
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise RequestError("'max_tokens' must be a positive integer")

    temperature = body.get("temperature")
    if temperature is None:
        temperature = defaults.temperature
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or temperature < 0:
        raise RequestError("'temperature' must be a non-negative number")

    stop_raw = body.get("stop")
    if stop_raw is None:
        stop: tuple[str, ...] = ()
    elif isinstance(stop_raw, str):
        stop = (stop_raw,)
    elif isinstance(stop_raw, list) and all(isinstance(s, str) for s in stop_raw):
        stop = tuple(stop_raw)
    else:
        raise RequestError("'stop' must be a string or a list of strings")
    return GenerationParams(max_new_tokens=max_tokens, temperature=float(temperature), stop=stop)


def _messages(raw: Any) -> list[ChatMessage]:
    """Validate chat messages; text content parts are joined, ``developer`` maps to ``system``."""
    if raw is None:
        raise RequestError("missing required field 'messages'")
    if not isinstance(raw, list) or not raw:
        raise RequestError("'messages' must be a non-empty list")
    out: list[ChatMessage] = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict):
            raise RequestError(f"messages[{i}] must be an object")
        role = m.get("role")
        if role == "developer":
            role = "system"
        if role not in _CHAT_ROLES:
            raise RequestError(f"messages[{i}].role must be one of system, user, assistant")
        content = m.get("content")
        if isinstance(content, list):
            # The OpenAI content-part form; only text parts mean anything to a text model.
            parts = []
            for part in content:
                if not (isinstance(part, dict) and part.get("type") == "text"):
                    raise RequestError(f"messages[{i}].content: only text parts are supported")
                text = part.get("text")
                if not isinstance(text, str):
                    raise RequestError(f"messages[{i}].content: text part without a string 'text'")
                parts.append(text)
            content = "".join(parts)
        if not isinstance(content, str):
            raise RequestError(f"messages[{i}].content must be a string")
        out.append({"role": role, "content": content})
    return out


def _make_handler(server: OpenAIProtocolServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    """Routes requests to the owning :class:`OpenAIProtocolServer`."""

    owner: OpenAIProtocolServer
    # HTTP/1.1 so clients can keep connections alive; every response sets Content-Length.
    protocol_version = "HTTP/1.1"
    # Idle keep-alive connections are dropped after this long, freeing their handler threads.
    timeout = 60
    # Headers and body go out in separate writes; with Nagle on, delayed ACKs add ~40 ms per response.
    disable_nagle_algorithm = True
    server_version = "hoprag-openai/0.1"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/models":
            self._send_json(HTTPStatus.OK, self.owner.handle_models())
        elif path == "/health":
            self._send_json(HTTPStatus.OK, {"status": "ok"})
        elif path in ("/v1/completions", "/v1/chat/completions"):
            self._send_error(RequestError("use POST", HTTPStatus.METHOD_NOT_ALLOWED))
        else:
            self._send_error(RequestError(f"no route {path}", HTTPStatus.NOT_FOUND, "not_found_error"))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        routes = {
            "/v1/completions": self.owner.handle_completions,
            "/v1/chat/completions": self.owner.handle_chat,
        }
        try:
            # Read the body before routing, so a keep-alive connection stays in sync even on 404.
            body = self._read_json()
            route = routes.get(path)
            if route is None:
                raise RequestError(f"no route {path}", HTTPStatus.NOT_FOUND, "not_found_error")
            if body.get("stream"):
                self._send_stream(self.owner.stream_chunks(path, body, CancelToken()))
                return
            self._send_json(HTTPStatus.OK, route(body))
        except RequestError as e:
            self._send_error(e)
        except Exception as e:
            logger.exception("request to %s failed", path)
            self._send_error(
                RequestError(f"internal error: {e!r}", HTTPStatus.INTERNAL_SERVER_ERROR, "server_error")
            )

    def _read_json(self) -> dict[str, Any]:
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            self.close_connection = True
            raise RequestError("Content-Length required", HTTPStatus.LENGTH_REQUIRED)
        try:
            length = int(length_header)
        except ValueError:
            self.close_connection = True
            raise RequestError("invalid Content-Length") from None
        if length < 0 or length > MAX_BODY_BYTES:
            # The unread body would corrupt the next request on this connection.
            self.close_connection = True
            raise RequestError("request body too large", HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise RequestError(f"malformed JSON body: {e}") from None
        if not isinstance(body, dict):
            raise RequestError("request body must be a JSON object")
        return body

    def _send_stream(self, chunks: Iterator[dict[str, Any]]) -> None:
        """Server-Sent Events until the chunks end; the connection closes after them (no
        Content-Length), and a client that closed its end stops the generation (``chunks.close()``)."""
        self.close_connection = True
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
        except OSError as e:  # BrokenPipe / ConnectionReset: the client is gone
            logger.debug("streaming client went away: %r", e)
        finally:
            chunks.close()

    def _send_error(self, e: RequestError) -> None:
        self._send_json(e.status, {"error": {"message": e.message, "type": e.error_type, "code": None}})

    def _send_json(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        # Access logs go through logging (debug) instead of the default stderr prints.
        logger.debug("%s - %s", self.address_string(), format % args)
