"""Streamed answers: running a blocking pipeline or LLM stream under a replica's event loop, and
the Server-Sent Events the ingress sends (``POST /v1/qa`` with ``"stream": true``, and
``chat.completion.chunk`` events on ``POST /v1/chat/completions``).

Events of ``/v1/qa`` (``event:`` name, ``data:`` one JSON object):

- ``stage``: ``{"stage": "started", "request_id", "mode"}`` first, as soon as the question was
  accepted; then the pipeline's stages as they finish (:mod:`hoprag.qa.events`: ``plan``,
  ``seeds``, ``triples``, ``step_answer``, ``update``);
- ``token``: ``{"text": delta}``, the answer as the final LLM call generates it (joined: the
  answer);
- ``answer``: the final event, the body the request gets without streaming (``QAResponse``);
- ``error``: ``{"error": {"type", "message", "request_id"}}`` for a failure after the stream began
  (its status line is already sent); the stream ends with it.

A client that closes the connection cancels the work: the QA replica's generator is cancelled, the
pipeline stops at its next event, and the LLM deployment stops generating.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from hoprag.llm.streaming import CancelToken

logger = logging.getLogger("ray.serve")

Emit = Callable[[Any], None]


async def run_in_thread(
    work: Callable[[Emit, CancelToken], None], name: str = "stream"
) -> AsyncIterator[Any]:
    """Run ``work(emit, cancel)`` in a thread and yield what it emits, as it emits it; an exception
    it raises is raised here after the items before it. Closing this generator (the consumer went
    away: Serve injects ``CancelledError``) cancels ``cancel``, which the work must heed."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    cancel = CancelToken()

    def put(kind: str, value: Any) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
        except RuntimeError:  # the loop is closed: nobody is listening any more
            cancel.cancel()

    def target() -> None:
        try:
            work(lambda item: put("item", item), cancel)
            put("done", None)
        except BaseException as exc:
            put("error", exc)

    threading.Thread(target=target, name=name, daemon=True).start()
    try:
        while True:
            kind, value = await queue.get()
            if kind == "item":
                yield value
            elif kind == "error":
                raise value
            else:
                return
    finally:
        cancel.cancel()  # a no-op once the work has finished


def sse(kind: str, data: Any) -> dict[str, str]:
    """One ``/v1/qa`` event (sse-starlette's dict form: ``event`` and ``data`` lines)."""
    return {"event": kind, "data": json.dumps(data, ensure_ascii=False)}


def error_event(status_type: str, message: str, request_id: str) -> dict[str, str]:
    """An ``error`` event with the body an HTTP error would have had."""
    return sse("error", {"error": {"type": status_type, "message": message, "request_id": request_id}})


class ChatChunks:
    """``chat.completion.chunk`` events of one streamed chat completion, as OpenAI sends them: a
    first chunk with ``delta.role``, then ``delta.content`` pieces, a last chunk with
    ``finish_reason: "stop"``, optionally a usage chunk (empty ``choices``), then ``[DONE]``."""

    def __init__(self, completion_id: str, created: int, model: str) -> None:
        self._envelope = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
        }

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, str]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {"data": json.dumps({**self._envelope, "choices": [choice]}, ensure_ascii=False)}

    def role(self) -> dict[str, str]:
        return self._chunk({"role": "assistant", "content": ""})

    def content(self, text: str) -> dict[str, str]:
        return self._chunk({"content": text})

    def stop(self) -> dict[str, str]:
        return self._chunk({}, "stop")

    def usage(self, prompt_tokens: int, completion_tokens: int) -> dict[str, str]:
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        return {"data": json.dumps({**self._envelope, "choices": [], "usage": usage})}

    @staticmethod
    def done() -> dict[str, str]:
        return {"data": "[DONE]"}

    @staticmethod
    def error(status_type: str, message: str, request_id: str) -> dict[str, str]:
        """An error in the middle of the stream (OpenAI's streaming error shape: a ``data`` line
        with an ``error`` object)."""
        body = {"error": {"type": status_type, "message": message, "request_id": request_id}}
        return {"data": json.dumps(body)}
