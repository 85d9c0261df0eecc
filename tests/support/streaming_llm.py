"""A streaming wrapper for scripted test LLMs: word-by-word deltas, and a record of every stream.

:class:`StreamingWrapper` streams what the wrapped LLM's ``generate`` returns, one whitespace-led
word per delta (``delay_s`` apart; ``extra_words`` more of them, ``" word"``, after the text to make
a slow, long generation), and records for each stream how many deltas it produced and whether
it ran to the end or was stopped early (its consumer closed it, or the cancel token was set).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from hoprag.llm.base import LLM, Completion, GenerationParams, Prompt, PromptStyle, truncate_at_stop
from hoprag.llm.streaming import CancelToken, StopSequenceFilter, StreamItem


@dataclass
class StreamRecord:
    prompt: Prompt
    deltas: int = 0
    finished: bool = False
    stopped_early: bool = False


@dataclass
class StreamingWrapper:
    llm: LLM
    delay_s: float = 0.0
    extra_words: int = 0
    streams: list[StreamRecord] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def model_id(self) -> str:
        return self.llm.model_id

    @property
    def prompt_style(self) -> PromptStyle:
        return self.llm.prompt_style

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        return self.llm.generate(prompts, params)

    def stream(
        self, prompt: Prompt, params: GenerationParams, cancel: CancelToken | None = None
    ) -> Iterator[StreamItem]:
        record = StreamRecord(prompt)
        with self._lock:
            self.streams.append(record)
        completion = self.llm.generate([prompt], params)[0]
        raw = completion.text + " word" * self.extra_words
        cut = StopSequenceFilter(params.stop)
        try:
            for piece in re.findall(r"\s*\S+|\s+$", raw):
                if cancel is not None and cancel.cancelled:
                    record.stopped_early = True
                    yield Completion(text=cut.text, finish_reason="error", error="cancelled")
                    return
                if self.delay_s:
                    time.sleep(self.delay_s)
                released = cut.feed(piece)
                if released:
                    record.deltas += 1
                    yield released
                if cut.stopped:
                    break
            tail = cut.flush()
            if tail:
                record.deltas += 1
                yield tail
            text, _ = truncate_at_stop(raw, params.stop)
            record.finished = True
            yield Completion(
                text=text,
                prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.completion_tokens,
                finish_reason=completion.finish_reason,
                error=completion.error,
            )
        finally:
            if not record.finished:
                record.stopped_early = True
