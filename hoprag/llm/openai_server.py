"""Serve any :class:`~hoprag.llm.base.LLM` over the OpenAI HTTP protocol.

A small FastAPI app (:func:`build_openai_app`) run by uvicorn on a background thread
(:class:`OpenAIProtocolServer`). It exists so that code written against an OpenAI-compatible
endpoint (``hoprag.llm.openai_compat``, the official ``openai`` client) can be exercised against
the embedded models without a real inference server, and so a local model can be shared over HTTP.
Its request and response models are the protocol's, shared with the QA app's ingress
(:mod:`hoprag.llm.openai_schemas`).

Endpoints::

    POST /v1/completions        {"model", "prompt": str | [str], "max_tokens", "temperature", "stop"}
    POST /v1/chat/completions   {"model", "messages": [{"role", "content"}], "max_tokens", ...}
    GET  /v1/models
    GET  /health

``"stream": true`` (one prompt) answers Server-Sent Events as OpenAI does (``data: {chunk}`` lines,
then ``data: [DONE]``; usage in a last chunk when ``stream_options.include_usage`` is set), streamed
through the backend's :meth:`~hoprag.llm.streaming.StreamingLLM.stream` when it has one (one chunk
with the whole text otherwise); a client that closes the connection stops the generation.
Errors have OpenAI's shape (``{"error": {"message", "type", "code"}}``); an invalid request is a
400, as OpenAI answers it (not FastAPI's 422). Not supported (400): ``n > 1``, token-id prompts, a
list of prompts when streaming, content parts other than text. Requests are not batched together;
by default one generation runs at a time because local backends are rarely thread-safe. Unset
sampling fields take :class:`~hoprag.llm.base.GenerationParams` defaults (greedy, 256 new tokens)
rather than OpenAI's, since this server fronts index-building models.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from http import HTTPStatus
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from hoprag.llm.base import (
    LLM,
    ChatMessage,
    Completion,
    GenerationParams,
    Prompt,
    render_chat_as_completion,
    truncate_at_stop,
)
from hoprag.llm.openai_schemas import (
    ChatCompletionsRequest,
    ChatMessageIn,
    ChatTextPart,
    CompletionsRequest,
    SamplingFields,
)
from hoprag.llm.streaming import CancelToken, stream_completion

if TYPE_CHECKING:
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

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
        self._created = int(time.time())
        self._socket: socket.socket | None = None
        self._uvicorn: Any = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, timeout_s: float = 60.0) -> Self:
        """Bind the socket and serve on a daemon thread; returns ``self`` once requests are answered."""
        import uvicorn

        if self._socket is not None:
            raise RuntimeError("server already started")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self._requested_port))
        self._socket = sock
        config = uvicorn.Config(
            build_openai_app(self),
            log_config=None,  # a library leaves logging's configuration to the application
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_keep_alive=60,  # idle keep-alive connections are dropped after this long
        )
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._uvicorn.run,
            kwargs={"sockets": [sock]},
            name=f"openai-server:{self.port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._uvicorn.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the OpenAI-protocol server did not start on {self.host}:{self.port}")
            time.sleep(0.01)
        logger.info("serving %s at %s", self.model_name, self.base_url)
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (for command-line use)."""
        if self._socket is None:
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
        sock, self._socket = self._socket, None
        if sock is None:
            return
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
            if self._thread.is_alive():  # a streaming response still open: do not wait for it
                self._uvicorn.force_exit = True
                self._thread.join(timeout=5)
            self._thread = None
        sock.close()

    def __enter__(self) -> Self:
        return self.start() if self._socket is None else self

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
        if self._socket is None:
            raise RuntimeError("server not started")
        return int(self._socket.getsockname()[1])

    @property
    def base_url(self) -> str:
        """API root for clients, e.g. ``http://127.0.0.1:54321/v1``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    # -- request handling (called from the app's worker threads) ------------------------------

    def handle_models(self) -> dict[str, Any]:
        """Body of ``GET /v1/models``."""
        return {
            "object": "list",
            "data": [
                {"id": self.model_name, "object": "model", "created": self._created, "owned_by": "hoprag"}
            ],
        }

    def handle_completions(self, body: CompletionsRequest) -> dict[str, Any]:
        """Body of ``POST /v1/completions``; raises :class:`RequestError` on a bad request."""
        texts = [body.prompt] if isinstance(body.prompt, str) else list(body.prompt)
        if not texts:
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

    def handle_chat(self, body: ChatCompletionsRequest) -> dict[str, Any]:
        """Body of ``POST /v1/chat/completions``; raises :class:`RequestError` on a bad request."""
        params = _params(body)
        results = self._generate([self._chat_prompt(body.messages)], params)
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

    def stream_chunks(
        self, body: CompletionsRequest | ChatCompletionsRequest, cancel: CancelToken
    ) -> Iterator[dict[str, Any]]:
        """The chunks of a streamed request (``"stream": true``); the request is validated now
        (raising :class:`RequestError`), generation starts when the chunks are iterated."""
        params = _params(body)
        chat = isinstance(body, ChatCompletionsRequest)
        if isinstance(body, ChatCompletionsRequest):
            prompt = self._chat_prompt(body.messages)
        else:
            raw = body.prompt[0] if isinstance(body.prompt, list) and len(body.prompt) == 1 else body.prompt
            if not isinstance(raw, str):
                raise RequestError("'prompt' must be one string when streaming")
            prompt = raw if self.llm.prompt_style == "completion" else [{"role": "user", "content": raw}]
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return self._stream(prompt, params, chat, include_usage, cancel)

    def _chat_prompt(self, messages: list[ChatMessageIn]) -> Prompt:
        checked = _messages(messages)
        return checked if self.llm.prompt_style == "chat" else render_chat_as_completion(checked)

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


def build_openai_app(server: OpenAIProtocolServer) -> FastAPI:
    """The FastAPI app of ``server``: routes, OpenAI-shaped errors and the request size limit."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from sse_starlette import EventSourceResponse
    from starlette.exceptions import HTTPException

    app = FastAPI(title=f"hoprag OpenAI-protocol server ({server.model_name})", openapi_url=None)

    app.add_middleware(_BodySizeLimit)

    @app.exception_handler(RequestError)
    async def request_error(_: Request, exc: RequestError) -> JSONResponse:
        return error(exc.status, exc.message, exc.error_type)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error(HTTPStatus.BAD_REQUEST, _validation_message(exc.errors()))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == HTTPStatus.NOT_FOUND:
            return error(exc.status_code, f"no route {request.url.path}", "not_found_error")
        if exc.status_code == HTTPStatus.METHOD_NOT_ALLOWED:
            return error(exc.status_code, f"use {exc.headers.get('Allow', 'another method')}")
        return error(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        logger.error("request to %s failed", request.url.path, exc_info=exc)
        return error(HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error: {exc!r}", "server_error")

    def stream(body: CompletionsRequest | ChatCompletionsRequest) -> EventSourceResponse:
        chunks = server.stream_chunks(body, CancelToken())
        return EventSourceResponse(_sse_data(chunks), sep="\n", headers={"Cache-Control": "no-cache"})

    @app.post("/v1/completions")
    def completions(body: CompletionsRequest) -> Any:
        return stream(body) if body.stream else server.handle_completions(body)

    @app.post("/v1/chat/completions")
    def chat_completions(body: ChatCompletionsRequest) -> Any:
        return stream(body) if body.stream else server.handle_chat(body)

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return server.handle_models()

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


def error(status: int, message: str, error_type: str = "invalid_request_error") -> JSONResponse:
    """An OpenAI-shaped error response."""
    from fastapi.responses import JSONResponse

    return JSONResponse({"error": {"message": message, "type": error_type, "code": None}}, status_code=status)


class _BodySizeLimit:
    """ASGI middleware: a request declaring a body over :data:`MAX_BODY_BYTES` gets a 413 unread."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            length = dict(scope["headers"]).get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
                too_large = error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request body too large")
                await too_large(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _sse_data(chunks: Iterator[dict[str, Any]]) -> AsyncIterator[str]:
    """The ``data:`` payloads of a stream, then ``[DONE]``. Each chunk is produced on a worker
    thread; when the client goes away the task is cancelled once the chunk in progress is done, and
    closing ``chunks`` then stops the generation behind it."""
    import anyio

    def next_chunk() -> dict[str, Any] | None:
        return next(chunks, None)

    try:
        while (chunk := await anyio.to_thread.run_sync(next_chunk)) is not None:
            yield json.dumps(chunk)
        yield "[DONE]"
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(chunks.close)


def _validation_message(errors: Sequence[Any]) -> str:
    """One line per pydantic error: ``field.path: message`` (as OpenAI's 400 bodies read)."""
    lines = []
    for e in errors:
        where = ".".join(str(part) for part in e.get("loc", ()) if part != "body")
        lines.append(f"{where}: {e.get('msg')}" if where else str(e.get("msg")))
    return "; ".join(lines) or "invalid request"


def _replace_text(c: Completion, text: str) -> Completion:
    return Completion(
        text=text,
        prompt_tokens=c.prompt_tokens,
        completion_tokens=c.completion_tokens,
        finish_reason="stop",
        error=c.error,
        metadata=c.metadata,
    )


def _params(body: SamplingFields) -> GenerationParams:
    """Sampling settings of a request; unset fields take our defaults."""
    defaults = GenerationParams()
    if body.n not in (None, 1):
        raise RequestError("only n=1 is supported")
    max_tokens = body.max_tokens or body.max_completion_tokens or defaults.max_new_tokens
    temperature = defaults.temperature if body.temperature is None else body.temperature
    stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop or ())
    return GenerationParams(
        max_new_tokens=max_tokens, temperature=float(temperature), stop=stop, json_schema=_json_schema(body)
    )


def _json_schema(body: SamplingFields) -> str | None:
    """The JSON schema a request's ``response_format`` asks for (``json_object``: any object)."""
    wanted = body.response_format
    if wanted is None or wanted.type == "text":
        return None
    if wanted.type == "json_object":
        return json.dumps({"type": "object"})
    if wanted.json_schema is None:
        raise RequestError("response_format.json_schema is required with type json_schema")
    return json.dumps(wanted.json_schema.schema_, sort_keys=True)


def _messages(messages: Sequence[ChatMessageIn]) -> list[ChatMessage]:
    """The chat as the backend reads it: text parts are joined, ``developer`` maps to ``system``."""
    out: list[ChatMessage] = []
    for i, m in enumerate(messages):
        role = "system" if m.role == "developer" else m.role
        if role not in _CHAT_ROLES:
            raise RequestError(f"messages[{i}].role must be one of system, user, assistant")
        if m.content is None:
            raise RequestError(f"messages[{i}].content must be a string")
        if not isinstance(m.content, str) and not all(isinstance(p, ChatTextPart) for p in m.content):
            raise RequestError(f"messages[{i}].content: only text parts are supported")
        out.append({"role": role, "content": m.text(separator="")})
    return out
