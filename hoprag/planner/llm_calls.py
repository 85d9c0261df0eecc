"""The planner's door to the LLM: batched calls, a (prompt, model) cache, per-question accounting.

A *call* is one prompt completion: a batch of k prompts is k calls (batching saves latency, not
calls). A cache hit is not a call. Every call and hit is recorded in the question's
:class:`CallLedger`, with its purpose (``plan``, ``clue_answer``, ...), so the trace and the
benchmarks can say where calls go.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hoprag.llm.base import LLM, Completion, GenerationParams, Prompt, PromptStyle
from hoprag.llm.streaming import CancelToken, stream_completion


@dataclass
class CallRecord:
    """One batch sent for one purpose (cache hits included, with ``calls`` counting only misses)."""

    purpose: str
    prompts: int
    calls: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    errors: list[str] = field(default_factory=list)


@dataclass
class CallLedger:
    """Everything one question cost in LLM work."""

    records: list[CallRecord] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(r.calls for r in self.records)

    @property
    def cache_hits(self) -> int:
        return sum(r.cache_hits for r in self.records)

    @property
    def prompt_tokens(self) -> int:
        return sum(r.prompt_tokens for r in self.records)

    @property
    def completion_tokens(self) -> int:
        return sum(r.completion_tokens for r in self.records)

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.records)

    def answer_fields(self) -> dict[str, object]:
        """The cost fields of a :class:`~hoprag.planner.trace.Answer` (calls, tokens, hits, LLM time)."""
        from hoprag.planner.prompts import PLANNER_PROMPT_VERSION

        return {
            "llm_calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hits": self.cache_hits,
            "calls_by_purpose": self.calls_by_purpose(),
            "llm_seconds": round(self.seconds, 4),
            "prompt_version": PLANNER_PROMPT_VERSION,
        }

    def affords(self, more: int, budget: int | None, reserve: int = 1) -> bool:
        """Whether ``more`` calls still fit ``budget`` (``None``: no limit) with ``reserve`` calls left
        for the final answer."""
        return budget is None or self.calls + more + reserve <= budget

    def calls_by_purpose(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for r in self.records:
            counts[r.purpose] += r.calls
        return dict(counts)


def _cache_key(model_id: str, prompt: Prompt, params: GenerationParams) -> str:
    return json.dumps(
        [model_id, prompt, params.max_new_tokens, params.temperature, list(params.stop), params.task],
        ensure_ascii=False,
        separators=(",", ":"),
    )


class CachedLLM:
    """Wraps an :class:`~hoprag.llm.base.LLM`: sends independent prompts as one batch, caches results.

    ``batch=False`` sends prompts one at a time (the paper-like baseline); ``cache_size=0``
    disables the cache. Failed completions are never cached (a retry may succeed). Thread-safe:
    serving replicas answer concurrent questions through one instance.
    """

    def __init__(self, llm: LLM, cache_size: int = 4096, batch: bool = True) -> None:
        self.llm = llm
        self.cache_size = cache_size
        self.batch = batch
        self._cache: OrderedDict[str, Completion] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.llm.model_id

    @property
    def prompt_style(self) -> PromptStyle:
        return self.llm.prompt_style

    @property
    def student_tasks(self) -> frozenset[str]:
        return frozenset(getattr(self.llm, "student_tasks", ()))

    def adopt_cache(self, other: CachedLLM) -> None:
        """Take ``other``'s cached completions (a serving replica swapping to a new index snapshot:
        a completion is keyed by its whole prompt and the model, so it stays right whatever the
        index; only prompts that the new snapshot's context changes miss)."""
        if other is self or self.cache_size <= 0:
            return
        with other._lock:
            entries = list(other._cache.items())[-self.cache_size :]
        with self._lock:
            for key, completion in entries:
                self._cache.setdefault(key, completion)

    def _lookup(self, key: str) -> Completion | None:
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
            return hit

    def _store(self, key: str, completion: Completion) -> None:
        if self.cache_size <= 0 or not completion.ok:
            return
        with self._lock:
            self._cache[key] = completion
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def complete(
        self, prompts: Sequence[Prompt], params: GenerationParams, ledger: CallLedger, purpose: str
    ) -> list[Completion]:
        """Completions for ``prompts`` (in order), from the cache where possible."""
        started = time.perf_counter()
        out, fresh = self._complete(prompts, params)
        new = [c for c, is_new in zip(out, fresh, strict=True) if is_new]
        ledger.records.append(_record(purpose, len(prompts), new, time.perf_counter() - started))
        return out

    def complete_each(
        self,
        prompts: Sequence[Prompt],
        params: GenerationParams,
        ledgers: Sequence[CallLedger],
        purpose: str,
    ) -> list[Completion]:
        """Like :meth:`complete` for prompts of different questions sent as one batch: each prompt's
        call (or cache hit) and a share of the batch's time go to its own question's ledger."""
        started = time.perf_counter()
        out, fresh = self._complete(prompts, params)
        share = (time.perf_counter() - started) / max(1, len(prompts))
        for ledger, completion, is_new in zip(ledgers, out, fresh, strict=True):
            ledger.records.append(_record(purpose, 1, [completion] if is_new else [], share))
        return out

    def complete_streamed(
        self,
        prompt: Prompt,
        params: GenerationParams,
        ledger: CallLedger,
        purpose: str,
        on_text: Callable[[str], None],
        cancel: CancelToken | None = None,
    ) -> Completion:
        """Like :meth:`complete` for one prompt, handing the text to ``on_text`` as it is generated
        (a cached completion: all of it at once). The completion, the cache and the ledger record
        are those :meth:`complete` would give."""
        started = time.perf_counter()
        key = _cache_key(self.model_id, prompt, params)
        hit = self._lookup(key) if self.cache_size > 0 else None
        if hit is not None:
            if hit.text:
                on_text(hit.text)
            ledger.records.append(_record(purpose, 1, [], time.perf_counter() - started))
            return hit
        completion: Completion | None = None
        items = stream_completion(self.llm, prompt, params, cancel)
        try:
            for item in items:
                if isinstance(item, Completion):
                    completion = item
                    break
                on_text(item)
        finally:
            items.close()  # on_text raised (the caller stopped listening): stop generating
        if completion is None:
            completion = Completion(text="", finish_reason="error", error="stream ended without a completion")
        self._store(key, completion)
        ledger.records.append(_record(purpose, 1, [completion], time.perf_counter() - started))
        return completion

    def _complete(
        self, prompts: Sequence[Prompt], params: GenerationParams
    ) -> tuple[list[Completion], list[bool]]:
        """The completions, and for each whether it was generated now (False: cache or batch twin)."""
        keys = [_cache_key(self.model_id, p, params) for p in prompts]
        results: list[Completion | None] = [self._lookup(k) if self.cache_size > 0 else None for k in keys]
        # Identical prompts inside one batch are generated once.
        missing: dict[str, int] = {}
        for i, (k, r) in enumerate(zip(keys, results, strict=True)):
            if r is None and k not in missing:
                missing[k] = i
        todo = list(missing.values())
        fresh: list[Completion] = []
        if todo:
            batch = [prompts[i] for i in todo]
            if self.batch:
                fresh = self.llm.generate(batch, params)
            else:
                fresh = [c for p in batch for c in self.llm.generate([p], params)]
        by_key = {keys[i]: c for i, c in zip(todo, fresh, strict=True)}
        for k, c in by_key.items():
            self._store(k, c)
        generated = set(todo)
        out = [r if r is not None else by_key[k] for k, r in zip(keys, results, strict=True)]
        return out, [i in generated for i in range(len(prompts))]


def _record(purpose: str, prompts: int, fresh: Sequence[Completion], seconds: float) -> CallRecord:
    return CallRecord(
        purpose=purpose,
        prompts=prompts,
        calls=len(fresh),
        cache_hits=prompts - len(fresh),
        prompt_tokens=sum(c.prompt_tokens for c in fresh),
        completion_tokens=sum(c.completion_tokens for c in fresh),
        seconds=seconds,
        errors=[c.error for c in fresh if c.error],
    )
