"""Streaming generation: one prompt's text as the backend produces it.

A backend that can stream implements :class:`StreamingLLM`; :func:`stream_completion` streams any
:class:`~hoprag.llm.base.LLM`, falling back to one delta holding the whole completion for a backend
that cannot. A stream yields ``str`` deltas and ends with the prompt's
:class:`~hoprag.llm.base.Completion`, the one ``generate`` would have returned: its ``text`` is
the deltas joined, cut at the first stop sequence (a tail that could still become a stop
sequence is held back until it cannot, so no delta ever carries part of one).

Stopping: cancelling the :class:`CancelToken` passed in (or closing the iterator) stops generation
at the next token; ``generate`` is untouched.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from hoprag.llm.base import LLM, Completion, GenerationParams, Prompt, truncate_at_stop

logger = logging.getLogger(__name__)

StreamItem = str | Completion
"""A text delta, or (last) the finished completion."""


class CancelToken:
    """A thread-safe cancel flag with callbacks (e.g. closing an HTTP response blocked in a read)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        """Set the flag and run the registered callbacks once (later calls do nothing)."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a failing callback must not keep the others from stopping their work
                logger.exception("cancel callback failed")

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when cancelled (now, if already); returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)

                def remove() -> None:
                    with self._lock:
                        if callback in self._callbacks:
                            self._callbacks.remove(callback)

                return remove
        callback()
        return lambda: None


@runtime_checkable
class StreamingLLM(Protocol):
    """An LLM that can stream one prompt's completion."""

    def stream(
        self, prompt: Prompt, params: GenerationParams, cancel: CancelToken | None = None
    ) -> Iterator[StreamItem]:
        """Text deltas as generated, then the :class:`~hoprag.llm.base.Completion` (always last)."""
        ...


def stream_completion(
    llm: LLM, prompt: Prompt, params: GenerationParams, cancel: CancelToken | None = None
) -> Iterator[StreamItem]:
    """Stream ``prompt`` through ``llm``: its own :meth:`StreamingLLM.stream` when it has one, else
    one delta with the whole completion from ``generate``."""
    if isinstance(llm, StreamingLLM):
        yield from llm.stream(prompt, params, cancel)
        return
    completion = llm.generate([prompt], params)[0]
    if completion.text:
        yield completion.text
    yield completion


def collect(items: Iterator[StreamItem]) -> tuple[list[str], Completion]:
    """The deltas and the completion of a stream (tests, and callers that want both)."""
    deltas: list[str] = []
    for item in items:
        if isinstance(item, Completion):
            return deltas, item
        deltas.append(item)
    raise RuntimeError("the stream ended without a completion")


class StopSequenceFilter:
    """Cuts a growing text at the first stop sequence, releasing only text that cannot turn out to
    be part of one: a tail that is a prefix of a stop sequence is held back until more text shows
    whether it is. The released pieces joined are always ``truncate_at_stop(text, stop)[0]`` of
    the text fed so far, or a prefix of it (the held-back tail)."""

    def __init__(self, stop: Sequence[str]) -> None:
        self._stop = tuple(s for s in stop if s)
        self._text = ""
        self._released = 0
        self.stopped = False

    @property
    def text(self) -> str:
        """Everything fed, cut at the first stop sequence (held-back tail included)."""
        return truncate_at_stop(self._text, self._stop)[0]

    @property
    def released(self) -> str:
        return self._text[: self._released]

    def feed(self, delta: str) -> str:
        """Add ``delta``; return the text that is now safe to release ('' if none)."""
        if self.stopped or not delta:
            return ""
        self._text += delta
        cut, hit = truncate_at_stop(self._text, self._stop)
        # A longer stop sequence that starts before the one found may still complete (and win).
        pending = len(self._text) - _held_back(self._text, self._stop)
        if hit and pending >= len(cut):
            self.stopped = True
        return self._release(min(len(cut), pending))

    def flush(self) -> str:
        """The held-back tail, at the end of generation (it never became a stop sequence)."""
        return self._release(len(self.text))

    def _release(self, end: int) -> str:
        if end <= self._released:
            return ""
        out = self._text[self._released : end]
        self._released = end
        return out


def _held_back(text: str, stops: Sequence[str]) -> int:
    """Length of the longest tail of ``text`` that is a proper prefix of a stop sequence."""
    best = 0
    for s in stops:
        for k in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:k]):
                best = k
                break
    return best
