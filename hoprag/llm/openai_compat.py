"""A backend that talks to any OpenAI-compatible HTTP endpoint (vLLM, llama.cpp server, OpenAI, ...).

One HTTP request per prompt, sent concurrently from a small thread pool that shares one
:class:`httpx.Client`. Threads rather than asyncio keep :meth:`OpenAICompatibleLLM.generate`
callable from plain synchronous code (a Ray Data actor) and from inside a running event loop alike.

Transient failures (429, 5xx, connection errors, timeouts) are retried with exponential backoff and
jitter, honouring ``Retry-After``. A prompt that still fails comes back as a :class:`Completion` with
``finish_reason="error"`` and a short machine-readable ``error``; :meth:`generate` never raises for
a per-prompt failure.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from hoprag.http_headers import retry_after_seconds
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
        description="httpx timeout in seconds, applied to connecting and to each read/write of a request.",
    )
    max_retries: int = Field(
        default=4,
        ge=0,
        description="Retries after the first attempt on 429, 5xx, connection errors and timeouts "
        "(so at most max_retries + 1 requests per prompt). Other 4xx are never retried.",
    )
    backoff_initial_s: float = Field(
        default=0.5, ge=0, description="Base delay before the first retry; doubles on each further retry."
    )
    backoff_max_s: float = Field(
        default=20.0, ge=0, description="Upper bound on any retry delay, including one asked by Retry-After."
    )
    max_concurrency: int = Field(
        default=8, ge=1, description="Most requests in flight at once from this client instance."
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra JSON fields merged into every request body (e.g. {'top_k': 1} for vLLM). "
        "They override the fields this client sets itself.",
    )
    server_stop_limit: int | None = Field(
        default=None,
        ge=0,
        description="Send at most this many stop sequences to the server (OpenAI's own API rejects more "
        "than 4). All stop sequences are still applied client-side. None sends them all.",
    )

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
class _Attempt:
    """Outcome of one HTTP attempt: a completion, or a failure reason and whether to retry it."""

    completion: Completion | None = None
    reason: str | None = None
    retryable: bool = False
    retry_after_s: float | None = None
    detail: str = ""
    status: int | None = None


class OpenAICompatibleLLM:
    """An :class:`~hoprag.llm.base.LLM` backed by an OpenAI-compatible HTTP server.

    Thread-safe: several threads may call :meth:`generate` at once; together they never have more
    than ``config.max_concurrency`` requests in flight. Use as a context manager, or call
    :meth:`close`, to release the connection pool and worker threads.
    """

    def __init__(self, config: OpenAICompatibleConfig, *, seed: int | None = None) -> None:
        """Build the client; reads the API key from ``config.api_key_env`` now.

        ``seed`` only seeds the retry jitter (handy for reproducible tests).
        """
        self.config = config
        api_key = os.environ.get(config.api_key_env) or None
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(config.timeout_s),
            limits=httpx.Limits(
                max_connections=config.max_concurrency,
                max_keepalive_connections=config.max_concurrency,
            ),
        )
        endpoint = "chat/completions" if config.prompt_style == "chat" else "completions"
        self._url = f"{config.base_url}/{endpoint}"
        # One shared pool, so concurrent generate() calls share the max_concurrency budget.
        self._pool = ThreadPoolExecutor(
            max_workers=config.max_concurrency, thread_name_prefix="openai-compat"
        )
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stats: dict[str, int] = {
            "prompts": 0,
            "succeeded": 0,
            "failed": 0,
            "requests": 0,
            "retries": 0,
        }
        self._closed = False

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
        payloads = [self._payload(p, params) for p in prompts]
        if not payloads:
            return []
        futures = [self._pool.submit(self._complete_one, body, params.stop) for body in payloads]
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
        body = {**self._payload(prompt, params), "stream": True, "stream_options": {"include_usage": True}}
        cut = StopSequenceFilter(params.stop)
        usage: dict[str, Any] = {}
        server_reason: str | None = None
        started = time.monotonic()
        try:
            with self._client.stream("POST", self._url, json=body) as resp:
                remove = token.on_cancel(resp.close)  # unblocks a read waiting for the next token
                try:
                    if resp.status_code >= 300 or not resp.headers.get("content-type", "").startswith(
                        "text/event-stream"
                    ):
                        resp.read()
                        detail = f"http_{resp.status_code}: {_short(resp.text)}"
                        raise _NotStreamed(detail)
                    self._count(prompts=1, requests=1)  # a fallback below counts its own
                    for line in resp.iter_lines():
                        if token.cancelled or cut.stopped:
                            break  # closing the response below tells the server to stop
                        data = line[5:].strip() if line.startswith("data:") else ""
                        if not data:
                            continue
                        if data == "[DONE]":
                            break
                        chunk = json.loads(data)
                        usage = chunk.get("usage") or usage
                        for choice in chunk.get("choices") or []:
                            piece = (
                                (choice.get("delta") or {}).get("content")
                                if self.config.prompt_style == "chat"
                                else choice.get("text")
                            )
                            server_reason = choice.get("finish_reason") or server_reason
                            released = cut.feed(piece) if isinstance(piece, str) else ""
                            if released:
                                yield released
                finally:
                    remove()
        except _NotStreamed as exc:
            if cut.released:  # never: nothing is released before the status is known
                raise
            logger.warning("streaming from %s refused (%s); generating without streaming", self._url, exc)
            completion = self._complete_one(self._payload(prompt, params), params.stop)
            if completion.text:
                yield completion.text
            yield completion
            return
        except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError) as exc:
            if token.cancelled:
                yield Completion(text=cut.text, finish_reason="error", error="cancelled")
                return
            if not cut.released:
                logger.warning("streaming from %s failed (%r); generating without streaming", self._url, exc)
                completion = self._complete_one(self._payload(prompt, params), params.stop)
                if completion.text:
                    yield completion.text
                yield completion
                return
            self._count(failed=1, failed_stream_broken=1)
            yield Completion(
                text=cut.text,
                finish_reason="error",
                error="stream_broken",
                metadata={"detail": _short(repr(exc))},
            )
            return
        if token.cancelled:
            yield Completion(text=cut.text, finish_reason="error", error="cancelled")
            return
        tail = cut.flush()
        if tail:
            yield tail
        self._count(succeeded=1)
        hit_stop = cut.stopped
        finish: Literal["stop", "length"] = "length" if server_reason == "length" and not hit_stop else "stop"
        yield Completion(
            text=cut.text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=finish,
            metadata={
                "server_finish_reason": server_reason,
                "streamed": True,
                "latency_s": round(time.monotonic() - started, 4),
            },
        )

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

    def _payload(self, prompt: Prompt, params: GenerationParams) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model}
        if self.config.prompt_style == "chat":
            body["messages"] = _as_messages(prompt)
        else:
            body["prompt"] = _as_text(prompt)
        body["max_tokens"] = params.max_new_tokens
        body["temperature"] = params.temperature
        stop = [s for s in params.stop if s]
        if self.config.server_stop_limit is not None:
            stop = stop[: self.config.server_stop_limit]
        if stop:
            body["stop"] = stop
        body.update(self.config.extra_body)
        return body

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for k, d in deltas.items():
                self._stats[k] = self._stats.get(k, 0) + d

    def _complete_one(self, body: dict[str, Any], stop: Sequence[str]) -> Completion:
        started = time.monotonic()
        self._count(prompts=1)
        attempts = 0
        while True:
            attempts += 1
            self._count(requests=1)
            outcome = self._attempt(body, stop)
            if outcome.completion is not None:
                self._count(succeeded=1)
                c = outcome.completion
                c.metadata.update(attempts=attempts, latency_s=round(time.monotonic() - started, 4))
                return c
            assert outcome.reason is not None
            if not outcome.retryable or attempts > self.config.max_retries:
                self._count(failed=1, **{f"failed_{outcome.reason}": 1})
                logger.warning(
                    "request to %s failed (%s) after %d attempt(s)%s",
                    self._url,
                    outcome.reason,
                    attempts,
                    f": {outcome.detail}" if outcome.detail else "",
                )
                meta: dict[str, object] = {
                    "attempts": attempts,
                    "latency_s": round(time.monotonic() - started, 4),
                }
                if outcome.status is not None:
                    meta["status"] = outcome.status
                if outcome.detail:
                    meta["detail"] = outcome.detail
                return Completion(text="", finish_reason="error", error=outcome.reason, metadata=meta)
            delay = self._retry_delay(attempts, outcome.retry_after_s)
            self._count(retries=1)
            logger.warning(
                "retrying %s in %.2fs after %s (attempt %d of %d)",
                self._url,
                delay,
                outcome.reason,
                attempts,
                self.config.max_retries + 1,
            )
            time.sleep(delay)

    def _retry_delay(self, attempts: int, retry_after_s: float | None) -> float:
        cap = self.config.backoff_max_s
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), cap)
        base = min(cap, self.config.backoff_initial_s * 2.0 ** (attempts - 1))
        # "Equal jitter": keeps at least half the backoff while de-synchronising many clients
        # that were throttled at the same moment.
        return base / 2 + self._rng.uniform(0, base / 2)

    def _attempt(self, body: dict[str, Any], stop: Sequence[str]) -> _Attempt:
        try:
            resp = self._client.post(self._url, json=body)
        except httpx.TimeoutException as e:
            return _Attempt(reason="timeout", retryable=True, detail=type(e).__name__)
        except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as e:
            return _Attempt(reason="connection_error", retryable=True, detail=_short(repr(e)))
        except httpx.HTTPError as e:
            # Local protocol misuse, unsupported scheme, undecodable body: retrying cannot help.
            return _Attempt(reason="request_error", detail=_short(repr(e)))

        status = resp.status_code
        if status == 429 or status >= 500:
            return _Attempt(
                reason=f"http_{status}",
                retryable=True,
                retry_after_s=retry_after_seconds(resp.headers.get("Retry-After")),
                detail=_short(resp.text),
                status=status,
            )
        if status >= 300:
            return _Attempt(reason=f"http_{status}", detail=_short(resp.text), status=status)
        try:
            return _Attempt(completion=self._parse(resp.json(), stop))
        except (ValueError, KeyError, IndexError, TypeError) as e:
            # ValueError covers json.JSONDecodeError. A malformed 200 is a server bug rather than a
            # transient fault, so it is reported, not retried.
            return _Attempt(reason="bad_response", detail=_short(f"{e!r}; body={resp.text}"), status=status)

    def _parse(self, data: Any, stop: Sequence[str]) -> Completion:
        choice = data["choices"][0]
        text = choice["message"]["content"] if self.config.prompt_style == "chat" else choice["text"]
        if not isinstance(text, str):
            raise TypeError(f"completion text is {type(text).__name__}, not str")
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        server_reason = choice.get("finish_reason")
        # Some servers ignore `stop` (or only honour the first few); cut again here.
        text, hit_stop = truncate_at_stop(text, stop)
        finish: Literal["stop", "length"] = "length" if server_reason == "length" and not hit_stop else "stop"
        meta: dict[str, object] = {"server_finish_reason": server_reason}
        if isinstance(data.get("model"), str):
            meta["server_model"] = data["model"]
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
