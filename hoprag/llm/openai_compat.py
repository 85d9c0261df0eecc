"""A backend that talks to any OpenAI-compatible HTTP endpoint (vLLM, llama.cpp server, OpenAI, ...).

The HTTP side is the official ``openai`` SDK's: one client per backend, its retries (429, 5xx,
connection errors and timeouts, with exponential backoff and jitter, honouring ``Retry-After`` and
``retry-after-ms``), timeouts, streaming and auth. hoprag keeps what is its own: one request per
prompt sent concurrently from a small thread pool (threads rather than asyncio keep
:meth:`OpenAICompatibleLLM.generate` callable from plain synchronous code, a Ray Data actor, and from
inside a running event loop alike), the client-side cut at stop sequences, the counters, and the
per-prompt error handling: a prompt that still fails comes back as a :class:`Completion` with
``finish_reason="error"`` and a short machine-readable ``error``; :meth:`generate` never raises for
a per-prompt failure.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

import openai
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hoprag.llm.base import (
    BackendSpec,
    ChatMessage,
    Completion,
    GenerationParams,
    Prompt,
    PromptStyle,
    render_chat_as_completion,
    truncate_at_stop,
)
from hoprag.llm.streaming import CancelToken, StopSequenceFilter, StreamItem

logger = logging.getLogger(__name__)

# Removes a header the SDK would send (``openai.omit``; older SDKs: an ``Omit()`` instance).
_OMIT = getattr(openai, "omit", None) or openai.Omit()

_BODY_SNIPPET_CHARS = 200


class OpenAICompatibleConfig(BaseModel):
    """Settings of :class:`OpenAICompatibleLLM`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(
        description="API root including the version segment, e.g. 'http://127.0.0.1:8000/v1'. "
        "Requests go to '{base_url}/completions' or '{base_url}/chat/completions'."
    )
    model: str = Field(min_length=1, description="Model name sent in every request's 'model' field.")
    api_key_env: str = Field(
        default="OPENAI_API_KEY",
        description="NAME of the environment variable holding the API key (not the key itself). It is "
        "read when the client is constructed; if unset or empty, no Authorization header is sent, "
        "which is what local servers expect.",
    )
    prompt_style: Literal["completion", "chat"] = Field(
        default="chat",
        description="'completion' posts plain-text prompts to /completions (base models); 'chat' posts "
        "messages to /chat/completions (instruct models).",
    )
    timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="Timeout of each request in seconds (the openai SDK's `timeout`).",
    )
    max_retries: int = Field(
        default=4,
        ge=0,
        description="Retries after the first attempt on 408, 409, 429, 5xx, connection errors and timeouts "
        "(the openai SDK's `max_retries`: backoff from 0.5 s doubling to 8 s, with jitter, or the wait "
        "the server asks with Retry-After, up to the SDK's limit). Other 4xx are never retried.",
    )
    max_concurrency: int = Field(
        default=8, ge=1, description="Most requests in flight at once from this client instance."
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra JSON fields merged into every request body (e.g. {'top_k': 1} for vLLM). "
        "They override the fields this client sets itself.",
    )
    structured_output: bool = Field(
        default=True,
        description="Send the JSON schema of JSON prompts (extraction, entities) as response_format "
        "(json_schema), so servers that support it constrain decoding to it. An endpoint that refuses it "
        "is asked again without, once per client, with a warning.",
    )
    server_stop_limit: int | None = Field(
        default=None,
        ge=0,
        description="Send at most this many stop sequences to the server (OpenAI's own API rejects more "
        "than 4). All stop sequences are still applied client-side. None sends them all.",
    )

    @model_validator(mode="before")
    @classmethod
    def _drop_old_backoff_settings(cls, data: Any) -> Any:
        """``backoff_initial_s`` / ``backoff_max_s`` set hoprag's own retry delays before the openai
        SDK took over the retries; old configs still load, with a warning that they are ignored."""
        if isinstance(data, dict) and {"backoff_initial_s", "backoff_max_s"} & data.keys():
            data = {k: v for k, v in data.items() if k not in ("backoff_initial_s", "backoff_max_s")}
            logger.warning(
                "llm.openai.backoff_initial_s / backoff_max_s are ignored: retries are the openai SDK's "
                "(max_retries; backoff 0.5 s doubling to 8 s, Retry-After honoured)"
            )
        return data

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, v: str) -> str:
        v = v.strip().rstrip("/")
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {v!r}")
        return v

    @field_validator("api_key_env")
    @classmethod
    def _check_env_name(cls, v: str) -> str:
        if not v or "=" in v or any(c.isspace() for c in v):
            # Guards against pasting the key itself here, which would then be logged with the config.
            raise ValueError("api_key_env must be the NAME of an environment variable, not the key")
        return v


def openai_model_id(config: OpenAICompatibleConfig) -> str:
    """``openai-compat:<model>``; part of every extraction-cache key."""
    return f"openai-compat:{config.model}"


class _NotStreamed(Exception):
    """The endpoint answered a streaming request with an error status or without an event stream."""


@dataclass
class _Failure:
    """Why a prompt failed once the SDK gave up: a machine-readable reason and what it tried."""

    reason: str
    attempts: int
    detail: str = ""
    status: int | None = None


class OpenAICompatibleLLM:
    """An :class:`~hoprag.llm.base.LLM` backed by an OpenAI-compatible HTTP server.

    Thread-safe: several threads may call :meth:`generate` at once; together they never have more
    than ``config.max_concurrency`` requests in flight. Use as a context manager, or call
    :meth:`close`, to release the connection pool and worker threads.
    """

    def __init__(self, config: OpenAICompatibleConfig, *, http_client: Any = None) -> None:
        """Build the client; reads the API key from ``config.api_key_env`` now (no key: no
        ``Authorization`` header, which is what local servers expect).

        ``http_client``: the HTTP client the openai SDK should use (a proxy, custom TLS, or a mock
        transport in tests); by default the SDK's own.
        """
        self.config = config
        api_key = os.environ.get(config.api_key_env) or None
        # The SDK insists on a key; without one it sends none when each request omits the header.
        self._headers = None if api_key else {"Authorization": _OMIT}
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=api_key or "none",
            timeout=config.timeout_s,
            max_retries=config.max_retries,
            http_client=http_client,
        )
        self._endpoint: Any = (
            self._client.chat.completions if config.prompt_style == "chat" else self._client.completions
        )
        endpoint = "chat/completions" if config.prompt_style == "chat" else "completions"
        self._url = f"{config.base_url}/{endpoint}"
        # One shared pool, so concurrent generate() calls share the max_concurrency budget.
        self._pool = ThreadPoolExecutor(
            max_workers=config.max_concurrency, thread_name_prefix="openai-compat"
        )
        self._lock = threading.Lock()
        self._stats: dict[str, int] = {
            "prompts": 0,
            "succeeded": 0,
            "failed": 0,
            "requests": 0,
            "retries": 0,
        }
        self._closed = False
        # the response_format type sent with a JSON prompt's schema: json_schema (OpenAI's, vLLM's),
        # json_object with a "schema" (llama-cpp-python's server, which answers HTTP 500 to
        # json_schema), or none once the endpoint refused both
        self._structured: str | None = "json_schema" if config.structured_output else None

    # -- LLM protocol -------------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        return openai_model_id(self.config)

    @property
    def prompt_style(self) -> PromptStyle:
        """The prompt form the configured endpoint expects."""
        return self.config.prompt_style

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        """Complete every prompt over HTTP; one result per prompt, in order.

        Raises only for programming errors (a closed client, a prompt of the wrong type); a prompt
        whose request failed comes back with ``finish_reason="error"`` and ``error`` set.
        """
        if self._closed:
            raise RuntimeError("OpenAICompatibleLLM is closed")
        requests = [self._request(p, params) for p in prompts]
        if not requests:
            return []
        futures = [self._pool.submit(self._complete_one, request, params.stop) for request in requests]
        return [f.result() for f in futures]

    def stream(
        self, prompt: Prompt, params: GenerationParams, cancel: CancelToken | None = None
    ) -> Iterator[StreamItem]:
        """Stream one prompt's completion from the endpoint (``"stream": true``, Server-Sent Events,
        usage asked with ``stream_options.include_usage``).

        A request that fails before any text arrived (refused, unreachable, not streaming) is sent
        again the ordinary way, with :meth:`generate`'s retries; a stream that breaks mid-way ends
        with an ``error`` completion. Cancelling ``cancel`` or closing the iterator closes the
        connection, which is how the server learns to stop generating.
        """
        if self._closed:
            raise RuntimeError("OpenAICompatibleLLM is closed")
        token = cancel or CancelToken()
        request = {**self._request(prompt, params), "stream": True, "stream_options": {"include_usage": True}}
        cut = StopSequenceFilter(params.stop)
        usage: Any = None
        server_reason: str | None = None
        started = time.monotonic()
        try:
            stream = self._endpoint.create(**request)
        except openai.APIError as exc:  # refused before any text: the ordinary way, with its retries
            logger.warning(
                "streaming from %s refused (%s); generating without streaming", self._url, _why(exc)
            )
            yield from self._unstreamed(prompt, params)
            return
        self._count(prompts=1, requests=1)
        remove = token.on_cancel(stream.close)  # unblocks a read waiting for the next token
        try:
            if not stream.response.headers.get("content-type", "").startswith("text/event-stream"):
                stream.close()
                self._count(prompts=-1, requests=-1)  # the fallback counts its own
                logger.warning("%s answered a streaming request without an event stream", self._url)
                yield from self._unstreamed(prompt, params)
                return
            for chunk in stream:
                if token.cancelled or cut.stopped:
                    break  # closing the stream below tells the server to stop
                usage = getattr(chunk, "usage", None) or usage
                for choice in getattr(chunk, "choices", None) or []:
                    delta = getattr(choice, "delta", None)
                    piece = (
                        getattr(delta, "content", None) if self.config.prompt_style == "chat" else choice.text
                    )
                    server_reason = getattr(choice, "finish_reason", None) or server_reason
                    released = cut.feed(piece) if isinstance(piece, str) else ""
                    if released:
                        yield released
        except Exception as exc:  # the SDK's, the transport's, or a malformed chunk
            if token.cancelled:  # the connection closed under the read: a cancellation, not a failure
                yield Completion(text=cut.text, finish_reason="error", error="cancelled")
                return
            self._count(failed=1, failed_stream_broken=1)
            yield Completion(
                text=cut.text, finish_reason="error", error="stream_broken", metadata={"detail": _why(exc)}
            )
            return
        finally:
            remove()
            stream.close()
        if token.cancelled:
            yield Completion(text=cut.text, finish_reason="error", error="cancelled")
            return
        tail = cut.flush()
        if tail:
            yield tail
        self._count(succeeded=1)
        finish: Literal["stop", "length"] = (
            "length" if server_reason == "length" and not cut.stopped else "stop"
        )
        yield Completion(
            text=cut.text,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=finish,
            metadata={
                "server_finish_reason": server_reason,
                "streamed": True,
                "latency_s": round(time.monotonic() - started, 4),
            },
        )

    def _unstreamed(self, prompt: Prompt, params: GenerationParams) -> Iterator[StreamItem]:
        completion = self._complete_one(self._request(prompt, params), params.stop)
        if completion.text:
            yield completion.text
        yield completion

    # -- reporting / lifecycle ----------------------------------------------------------------

    @property
    def stats(self) -> dict[str, int]:
        """A snapshot of the counters.

        ``prompts``, ``succeeded``, ``failed``, ``requests`` (HTTP attempts), ``retries``, and one
        ``failed_<reason>`` entry per failure reason seen (e.g. ``failed_http_503``).
        """
        with self._lock:
            return dict(self._stats)

    def close(self) -> None:
        """Stop the worker threads and close the connection pool. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=True)
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(url={self._url!r}, model={self.config.model!r})"

    # -- internals ----------------------------------------------------------------------------

    def _request(self, prompt: Prompt, params: GenerationParams) -> dict[str, Any]:
        """The SDK ``create`` arguments of one prompt; ``extra_body`` travels as the SDK's
        ``extra_body`` (merged into the JSON body, over the fields set here)."""
        request: dict[str, Any] = {"model": self.config.model}
        if self.config.prompt_style == "chat":
            request["messages"] = _as_messages(prompt)
        else:
            request["prompt"] = _as_text(prompt)
        request["max_tokens"] = params.max_new_tokens
        request["temperature"] = params.temperature
        stop = [s for s in params.stop if s]
        if self.config.server_stop_limit is not None:
            stop = stop[: self.config.server_stop_limit]
        if stop:
            request["stop"] = stop
        if self.config.extra_body:
            request["extra_body"] = dict(self.config.extra_body)
        if self._headers:
            request["extra_headers"] = self._headers
        if params.json_schema and self._structured:
            request["response_format"] = _response_format(
                self._structured, params.task or "answer", json.loads(params.json_schema)
            )
        return request

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for k, d in deltas.items():
                self._stats[k] = self._stats.get(k, 0) + d

    def _complete_one(self, request: dict[str, Any], stop: Sequence[str]) -> Completion:
        started = time.monotonic()
        self._count(prompts=1)
        outcome = self._send(request, stop)
        latency = round(time.monotonic() - started, 4)
        if isinstance(outcome, Completion):
            attempts = int(outcome.metadata.get("attempts", 1))
            self._count(succeeded=1, requests=attempts, retries=attempts - 1)
            outcome.metadata["latency_s"] = latency
            return outcome
        self._count(
            failed=1,
            requests=outcome.attempts,
            retries=outcome.attempts - 1,
            **{f"failed_{outcome.reason}": 1},
        )
        logger.warning(
            "request to %s failed (%s) after %d attempt(s)%s",
            self._url,
            outcome.reason,
            outcome.attempts,
            f": {outcome.detail}" if outcome.detail else "",
        )
        meta: dict[str, object] = {"attempts": outcome.attempts, "latency_s": latency}
        if outcome.status is not None:
            meta["status"] = outcome.status
        if outcome.detail:
            meta["detail"] = outcome.detail
        return Completion(text="", finish_reason="error", error=outcome.reason, metadata=meta)

    def _send(
        self, request: dict[str, Any], stop: Sequence[str], keep_format: bool = False
    ) -> Completion | _Failure:
        """One prompt through the SDK (which retries what is worth retrying): its completion, or why
        it failed. The SDK does not say how many attempts a failure took; for the failures it
        retries, that is all of them. ``keep_format``: send the request's response_format as it is
        (the json_object retry), not the one this client sends now."""
        every_attempt = self.config.max_retries + 1
        if not keep_format:
            request = self._with_current_format(request)  # the endpoint may have refused one since
        try:
            raw = self._endpoint.with_raw_response.create(**request)
        except openai.BadRequestError as exc:
            if "response_format" not in request:
                return _Failure("http_400", 1, _short(exc.response.text), 400)
            return self._send_with_less_structure(request, stop, exc)
        except openai.APITimeoutError as exc:
            return _Failure("timeout", every_attempt, type(exc).__name__)
        except openai.APIConnectionError as exc:
            return _Failure("connection_error", every_attempt, _why(exc))
        except openai.APIStatusError as exc:
            if "response_format" in request and _refuses_response_format(exc):
                return self._send_with_less_structure(request, stop, exc)
            status = exc.status_code
            retried = status in (408, 409, 429) or status >= 500
            return _Failure(
                f"http_{status}", every_attempt if retried else 1, _short(exc.response.text), status
            )
        except openai.APIError as exc:  # an undecodable body, a response the SDK cannot read
            return _Failure("bad_response", 1, _why(exc))
        return self._completion_of(raw, stop)

    def _completion_of(self, raw: Any, stop: Sequence[str]) -> Completion | _Failure:
        """The Completion of one raw SDK response (a malformed one is a failure, not retried)."""
        attempts = int(getattr(raw, "retries_taken", 0)) + 1
        try:
            completion = self._parse(raw.parse(), stop)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            # ValueError covers a body that is not JSON. A malformed 200 is a server bug rather than a
            # transient fault, so it is reported, not retried.
            return _Failure(
                "bad_response", attempts, _short(f"{exc!r}; body={raw.http_response.text}"), raw.status_code
            )
        completion.metadata["attempts"] = attempts
        return completion

    def _with_current_format(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` with the response_format type this client sends now (or none)."""
        sent = request.get("response_format")
        if sent is None or sent["type"] == self._structured:
            return request
        rest = {k: v for k, v in request.items() if k != "response_format"}
        if self._structured is None:
            return rest
        return {**rest, "response_format": _response_format(self._structured, "answer", _schema_of(sent))}

    def _send_with_less_structure(
        self, request: dict[str, Any], stop: Sequence[str], exc: openai.APIStatusError
    ) -> Completion | _Failure:
        """The endpoint refused ``request``'s response_format: ask again with json_object (after a
        json_schema), then without. Only when that works was the format the problem (a 400 for
        another reason, e.g. a prompt too long, fails again the same way)."""
        sent = request["response_format"]
        rest = {k: v for k, v in request.items() if k != "response_format"}
        if sent["type"] == "json_schema" and _refuses_response_format(exc):
            # through _send, so a timeout or a server error of this retry is a failure like any
            # other, and a refusal of json_object too goes on to no format (setting it for good)
            alternative = {
                **rest,
                "response_format": _response_format("json_object", "answer", _schema_of(sent)),
            }
            outcome = self._send(alternative, stop, keep_format=True)
            if isinstance(outcome, Completion):
                with self._lock:
                    first = self._structured == "json_schema"  # not when json_object was refused too
                    if first:
                        self._structured = "json_object"
                        self._stats["structured_output_json_object"] = 1
                if first:
                    logger.warning(
                        "%s refused response_format json_schema (HTTP %s: %s); sending the schema as "
                        "json_object from now on",
                        self._url,
                        exc.status_code,
                        _short(exc.response.text),
                    )
            return outcome
        outcome = self._send(rest, stop)
        if isinstance(outcome, Completion):
            self._refuse_structured_output(exc)
        return outcome

    def _refuse_structured_output(self, exc: openai.APIStatusError) -> None:
        """Stop sending ``response_format`` to an endpoint that refused it (said once)."""
        with self._lock:
            first, self._structured = self._structured is not None, None
            self._stats["structured_output_refused"] = self._stats.get("structured_output_refused", 0) + 1
        if first:
            logger.warning(
                "%s refused response_format (HTTP %s: %s); sending JSON prompts without a schema from now on "
                "(llm.openai.structured_output=false stops trying)",
                self._url,
                exc.status_code,
                _short(exc.response.text),
            )

    def _parse(self, data: Any, stop: Sequence[str]) -> Completion:
        if isinstance(data, str | bytes):  # a 200 whose body is not JSON
            raise ValueError("the response body is not JSON")
        choice = data.choices[0]
        text = choice.message.content if self.config.prompt_style == "chat" else choice.text
        if not isinstance(text, str):
            raise TypeError(f"completion text is {type(text).__name__}, not str")
        usage = data.usage
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        server_reason = getattr(choice, "finish_reason", None)
        # Some servers ignore `stop` (or only honour the first few); cut again here.
        text, hit_stop = truncate_at_stop(text, stop)
        finish: Literal["stop", "length"] = "length" if server_reason == "length" and not hit_stop else "stop"
        meta: dict[str, object] = {"server_finish_reason": server_reason}
        if isinstance(getattr(data, "model", None), str):
            meta["server_model"] = data.model
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason=finish,
            metadata=meta,
        )


def _as_messages(prompt: Prompt) -> list[ChatMessage]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if isinstance(prompt, list):
        return list(prompt)
    raise TypeError(f"prompt must be str or list of chat messages, got {type(prompt).__name__}")


def _as_text(prompt: Prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return render_chat_as_completion(prompt)
    raise TypeError(f"prompt must be str or list of chat messages, got {type(prompt).__name__}")


def _why(exc: BaseException) -> str:
    return _short(f"{type(exc).__name__}: {exc}")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _BODY_SNIPPET_CHARS else text[:_BODY_SNIPPET_CHARS] + "..."


BACKEND = BackendSpec(
    name="openai",
    config_type=OpenAICompatibleConfig,
    constructor=OpenAICompatibleLLM,
    model_id=openai_model_id,
    needs="base_url, model, ...",
)


def _response_format(kind: str, name: str, schema: Any) -> dict[str, Any]:
    """A response_format of ``kind`` carrying ``schema``."""
    if kind == "json_object":  # llama-cpp-python's server reads the schema beside the type
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


def _schema_of(response_format: dict[str, Any]) -> Any:
    if response_format["type"] == "json_schema":
        return response_format["json_schema"]["schema"]
    return response_format.get("schema")


def _refuses_response_format(exc: openai.APIStatusError) -> bool:
    """Whether an error answer is a server refusing the response_format it was sent. Some servers
    validate it as part of the request body and answer 422 or even 500 (llama-cpp-python's:
    "Input should be 'text' or 'json_object'"), not 400, so the answer's text decides."""
    if exc.status_code not in (400, 422, 500):
        return False
    body = (exc.response.text if exc.response is not None else "") or ""
    return "response_format" in body or "json_object" in body or "json_schema" in body
