"""llama.cpp as an LLM backend (``llm.backend: llamacpp``): any GGUF on the CPU, quantized weights
used as they are.

For the same Gemma 3 270M GGUF, llama.cpp decodes several times faster than the embedded backend's
transformers path, which de-quantizes the weights (issue 66; ``hoprag bench llm`` measures it), and
it runs the instruct tiers (Qwen2.5-Coder 0.5B / 1.5B, :mod:`hoprag.llm.gguf_models`) in their
quantized size.

How it generates: one llama.cpp context holds up to ``max_batch_size`` sequences in one KV buffer
(``kv_cache_tokens`` cells). A batch of prompts shares its common prompt head (prefilled once into a
sequence of its own and copied into each row), its rows' remaining prompt tokens are prefilled
packed into full batches, then the rows are decoded together: every step feeds each unfinished
row's last token in one ``llama_decode`` and picks each row's next token from its logits here
(greedy, or sampled with ``temperature``). Picking here lets
the rows follow the prompt's JSON schema or line grammar with the same engine and grammars as the
embedded backend (``llguidance``, :mod:`hoprag.llm.grammar`, over a view of the GGUF's own
vocabulary), stop at stop sequences and at looping list lines, and be cancelled mid-stream.

Chat prompts are rendered with the GGUF's own chat template; a GGUF without one (the base Gemma)
takes completion prompts. A prompt longer than the context fails alone (``prompt_too_long``), never
the batch.
"""

from __future__ import annotations

import ctypes
import logging
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hoprag.llm.base import (
    BackendSpec,
    Completion,
    GenerationParams,
    Prompt,
    PromptStyle,
    is_degenerate_list_output,
    render_chat_as_completion,
    truncate_at_stop,
)
from hoprag.llm.llamacpp_config import (
    ADAPTER_SETTING,
    LlamaCppConfig,
    llamacpp_model_id,
    llamacpp_task_model_id,
)
from hoprag.llm.llamacpp_native import (
    chat_formatter,
    common_prefix,
    init_backend,
    token_piece,
    vocabulary_view,
)
from hoprag.llm.streaming import CancelToken, StopSequenceFilter, StreamItem

if TYPE_CHECKING:
    import numpy as np

    from hoprag.llm.grammar import DecodingGrammars

logger = logging.getLogger(__name__)


@dataclass
class _Row:
    """One prompt's decoding state."""

    index: int  # position in the caller's prompt list
    tokens: list[int]  # the prompt's tokens
    max_new: int
    stops: tuple[str, ...]
    matcher: Any = None  # llguidance matcher, None: unconstrained
    generated: list[int] = field(default_factory=list)
    raw: bytearray = field(default_factory=bytearray)
    text: str = ""
    logits: Any = None
    seq: int = -1  # its sequence id in the context while it decodes
    finish: Literal["stop", "length", "error"] | None = None
    error: str | None = None

    @property
    def done(self) -> bool:
        return self.finish is not None


class LlamaCppLLM:
    """Batched generation with llama.cpp on one GGUF (module docstring). Thread-safe: calls share
    the one context in turn."""

    def __init__(self, config: LlamaCppConfig | None = None) -> None:
        from hoprag.deps import require_llamacpp

        require_llamacpp("llm.backend=llamacpp")
        import llama_cpp
        from llama_cpp._internals import LlamaBatch, LlamaContext, LlamaModel

        from hoprag.llm.gguf_models import KNOWN_MODELS, inspect_gguf, resolve_gguf
        from hoprag.threads import runner_threads

        self.config = config or LlamaCppConfig()
        started = time.perf_counter()
        path = resolve_gguf(self.config.model)
        known = KNOWN_MODELS.get(self.config.model)
        self.info = inspect_gguf(path, known.architecture if known else None)
        if self.info.context_length and self.config.context_tokens > self.info.context_length:
            logger.warning(
                "llm.llamacpp.context_tokens=%d is over %s's training context (%d): using %d",
                self.config.context_tokens,
                path.name,
                self.info.context_length,
                self.info.context_length,
            )
            self.config = self.config.model_copy(update={"context_tokens": self.info.context_length})
        init_backend()
        self.threads = self.config.n_threads or runner_threads()
        model_params = llama_cpp.llama_model_default_params()
        model_params.n_gpu_layers = self.config.gpu_layers
        self._model = LlamaModel(path_model=str(path), params=model_params, verbose=False)
        self._vocab = self._model.vocab
        self._n_vocab = int(self._model.n_vocab())
        rows = self.config.max_batch_size
        context_params = llama_cpp.llama_context_default_params()
        # one more sequence than rows: it holds the prompt head a batch's rows share (_prefill_shared)
        context_params.n_ctx = self.config.kv_cache_tokens
        context_params.n_seq_max = rows + 1
        context_params.n_batch = max(self.config.prompt_batch_tokens, rows)
        context_params.n_ubatch = context_params.n_batch
        context_params.n_threads = self.threads
        context_params.n_threads_batch = self.threads
        # one KV buffer for all sequences: a shared prompt head is stored once and attended by all
        context_params.kv_unified = True
        self._ctx = LlamaContext(model=self._model, params=context_params, verbose=False)
        self._batch = LlamaBatch(n_tokens=context_params.n_batch, embd=0, n_seq_max=1, verbose=False)
        self._n_batch = int(context_params.n_batch)
        self._head_seq = rows  # the sequence holding a batch's shared prompt head
        self.head_tokens_reused = 0  # prompt tokens not prefilled again: rows copied the shared head
        self._lock = threading.Lock()
        self._eog = {t for t in range(self._n_vocab) if llama_cpp.llama_vocab_is_eog(self._vocab, t)}
        self._grammars: DecodingGrammars | None = None
        self._grammars_lock = threading.Lock()
        self._adapters, self._routes = self._load_adapters()
        self._active_adapter: int | None = None
        self._chat = chat_formatter(self.info.chat_template, self._model) if self.info.chat_template else None
        self._model_id = llamacpp_model_id(self.config)
        self._name = Path(path).name
        self.streams_cancelled = 0
        self.load_seconds = time.perf_counter() - started
        logger.info(
            "loaded %s with llama.cpp (%d threads, %d rows x %d tokens) in %.1fs",
            self._name,
            self.threads,
            rows,
            self.config.context_tokens,
            self.load_seconds,
        )

    # -- the LLM protocol ------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        return self._model_id

    def task_model_id(self, task: str) -> str:
        """The id of the weights this model answers ``task`` with (:func:`llamacpp_task_model_id`)."""
        return llamacpp_task_model_id(self.config, task)

    @property
    def student_tasks(self) -> frozenset[str]:
        """The tasks the loaded student adapters serve with their short student prompts."""
        return frozenset(self._routes)

    @property
    def prompt_style(self) -> PromptStyle:
        return "chat" if self._chat is not None else "completion"

    def count_tokens(self, text: str) -> int:
        """Number of tokens ``text`` takes (no special tokens)."""
        return len(self._model.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        rows = [self._row(i, prompt, params) for i, prompt in enumerate(prompts)]
        # similar lengths decode together: rows of one chunk end at similar steps
        order = sorted((r for r in rows if not r.done), key=lambda r: len(r.tokens))
        for chunk in self._chunks(order):
            try:
                with self._lock:
                    self._decode(chunk, params)
            except Exception as exc:  # a failing chunk must not lose the others
                logger.exception("llama.cpp generation failed for a batch of %d", len(chunk))
                for row in chunk:
                    row.finish, row.error = "error", f"generation_failed: {exc}"
        return [_completion(r) for r in rows]

    def _chunks(self, rows: list[_Row]) -> Iterator[list[_Row]]:
        """Rows decoded together: at most ``max_batch_size``, and only as many as their prompts and
        answers fit the KV cache beside one ``context_tokens`` kept for the shared prompt head (an
        upper bound: the head's cells are shared, not copied)."""
        room = self.config.kv_cache_tokens - self.config.context_tokens
        chunk: list[_Row] = []
        used = 0
        for row in rows:
            need = len(row.tokens) + row.max_new
            if chunk and (len(chunk) == self.config.max_batch_size or used + need > room):
                yield chunk
                chunk, used = [], 0
            chunk.append(row)
            used += need
        if chunk:
            yield chunk

    def stream(
        self, prompt: Prompt, params: GenerationParams, cancel: CancelToken | None = None
    ) -> Iterator[StreamItem]:
        """Stream one prompt's completion: text deltas as tokens are decoded, then the Completion
        :meth:`generate` would return. Cancelling ``cancel`` (or closing the iterator) stops
        decoding at the next token."""
        token = cancel or CancelToken()
        row = self._row(0, prompt, params)
        pieces: queue.Queue[str | None] = queue.Queue()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                if not row.done:
                    with self._lock:
                        self._decode([row], params, on_text=pieces.put, cancel=token)
            except BaseException as exc:  # reported by the consumer
                failure.append(exc)
            finally:
                pieces.put(None)

        worker = threading.Thread(target=run, name="llamacpp-stream", daemon=True)
        worker.start()
        cut = StopSequenceFilter(params.stop)
        try:
            while (piece := pieces.get()) is not None:
                released = cut.feed(piece)
                if released:
                    yield released
            worker.join()
            if failure:
                logger.error("llama.cpp streaming generation failed: %r", failure[0])
                yield Completion(text="", finish_reason="error", error=f"generation_failed: {failure[0]}")
                return
            completion = _completion(row)
            sent = cut.released
            if completion.text.startswith(sent) and len(completion.text) > len(sent):
                yield completion.text[len(sent) :]
            yield completion
        finally:
            if worker.is_alive():
                self.streams_cancelled += 1
                token.cancel()
                worker.join()

    # -- internals -------------------------------------------------------------------------

    def _row(self, index: int, prompt: Prompt, params: GenerationParams) -> _Row:
        """A prompt tokenized, with its limits and grammar matcher; a prompt that does not fit the
        context is finished at once with ``prompt_too_long``."""
        if isinstance(prompt, str):
            text, special = prompt, False
        elif self._chat is not None:
            text, special = self._chat(prompt), True
        else:
            text, special = render_chat_as_completion(prompt), False
        add_bos = bool(self._model.add_bos_token()) and not special
        tokens = self._model.tokenize(text.encode("utf-8"), add_bos=add_bos, special=special)
        room = self.config.context_tokens - len(tokens)
        row = _Row(
            index, tokens, max(0, min(params.max_new_tokens, room)), tuple(s for s in params.stop if s)
        )
        if not tokens or room < 1:
            row.finish = "error"
            row.error = (
                f"prompt_too_long: {len(tokens)} tokens, the context holds {self.config.context_tokens} "
                "(llm.llamacpp.context_tokens)"
                if tokens
                else "empty_prompt"
            )
            return row
        if (params.json_schema or params.grammar) and self.config.constrained_decoding:
            grammars = self._decoding_grammars()
            if grammars is not None:
                row.matcher = grammars.matcher(
                    grammars.grammar(json_schema=params.json_schema, lark=params.grammar)
                )
        return row

    def _decode(
        self,
        rows: list[_Row],
        params: GenerationParams,
        on_text: Any = None,
        cancel: CancelToken | None = None,
    ) -> None:
        """Prefill then decode ``rows`` (at most ``max_batch_size``) together to their ends."""
        import llama_cpp
        import numpy as np

        self._use_adapter(params.task)
        memory = self._ctx.memory
        # A fresh buffer per batch: a batch's cells start at the buffer's beginning, so a decode step
        # attends over the cells in use and not up to wherever freed cells of earlier batches lay.
        llama_cpp.llama_memory_clear(memory, True)
        rng = np.random.default_rng(self.config.seed)
        shared = self._prefill_shared(rows)
        for seq, row in enumerate(rows):
            row.seq = seq
            if shared:
                llama_cpp.llama_memory_seq_cp(memory, self._head_seq, seq, 0, shared)
        self._prefill(rows, shared)
        active = [r for r in rows if not r.done]
        while active:
            for row in active:
                token = self._pick(row, params, rng)
                self._advance(row, token, params, on_text)
                if cancel is not None and cancel.cancelled and not row.done:
                    row.finish = "stop"
            active = [r for r in active if not r.done]
            if not active:
                break
            status = self._submit(
                [
                    (row.generated[-1], len(row.tokens) + len(row.generated) - 1, row.seq, True)
                    for row in active
                ]
            )
            if status != 0:
                raise RuntimeError(f"llama_decode returned {status}")
            for j, row in enumerate(active):
                row.logits = self._logits(j)

    def _load_adapters(self) -> tuple[list[Any], dict[str, int]]:
        """The configured LoRA adapters loaded as llama.cpp adapters, and which serves each task."""
        import llama_cpp

        from hoprag.llm.adapters import AdapterError, task_routes
        from hoprag.llm.gguf_lora import lora_gguf

        dirs = self.config.adapter_dirs
        routes = task_routes(dirs, ADAPTER_SETTING) if dirs else {}
        handles = []
        for directory in dirs:
            path = lora_gguf(directory, self.info.architecture, ADAPTER_SETTING)
            handle = llama_cpp.llama_adapter_lora_init(self._model.model, str(path).encode())
            if not handle:
                raise AdapterError(f"{ADAPTER_SETTING}={directory}: llama.cpp cannot apply it to {path.name}")
            handles.append(handle)
        return handles, routes

    def _use_adapter(self, task: str | None) -> None:
        """Apply the adapter serving ``task`` (none: the base weights)."""
        import llama_cpp

        from hoprag.llm.adapters import adapter_for_task

        index = adapter_for_task(self._routes, len(self._adapters), task)
        if index == self._active_adapter:
            return
        if index is None:
            status = llama_cpp.llama_set_adapters_lora(self._ctx.ctx, None, 0, None)
        else:
            adapters = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(self._adapters[index])
            scales = (ctypes.c_float * 1)(1.0)
            status = llama_cpp.llama_set_adapters_lora(self._ctx.ctx, adapters, 1, scales)
        if status != 0:
            raise RuntimeError(f"llama_set_adapters_lora returned {status}")
        self._active_adapter = index

    def _prefill_shared(self, rows: list[_Row]) -> int:
        """Prefill the prompt head that ``rows`` share (few-shot examples, instructions) once into
        the head sequence; returns its length, which every row then copies instead of computing."""
        import llama_cpp

        head = common_prefix([r.tokens for r in rows]) if len(rows) > 1 else []
        head = head[: min(len(head), min(len(r.tokens) for r in rows) - 1)]
        for start in range(0, len(head), self._n_batch):
            piece = head[start : start + self._n_batch]
            if (
                self._submit([(token, start + i, self._head_seq, False) for i, token in enumerate(piece)])
                != 0
            ):
                llama_cpp.llama_memory_seq_rm(self._ctx.memory, self._head_seq, -1, -1)
                return 0  # the rows prefill whole prompts instead
        self.head_tokens_reused += len(head) * (len(rows) - 1)
        return len(head)

    def _prefill(self, rows: list[_Row], start_at: int) -> None:
        """Prefill each row's prompt from ``start_at`` (the shared head is already there), the rows'
        tokens packed into full ``prompt_batch_tokens`` batches: one larger matrix product per
        batch instead of one per row's remainder."""

        queue = [(row, pos) for row in rows for pos in range(start_at, len(row.tokens))]
        for begin in range(0, len(queue), self._n_batch):
            piece = queue[begin : begin + self._n_batch]
            status = self._submit(
                [(row.tokens[pos], pos, row.seq, pos == len(row.tokens) - 1) for row, pos in piece]
            )
            if status != 0:
                for row in rows:
                    if row.logits is None:
                        row.finish, row.error = "error", f"prefill_failed: llama_decode returned {status}"
                return
            for i, (row, pos) in enumerate(piece):
                if pos == len(row.tokens) - 1:  # the next batch overwrites the logits buffer
                    row.logits = self._logits(i).copy()
                    if row.max_new == 0:
                        row.finish = "length"

    def _submit(self, entries: list[tuple[int, int, int, bool]]) -> int:
        """One ``llama_decode`` of ``(token, position, sequence, wants logits)`` entries (at most
        ``prompt_batch_tokens``); its status (0: done)."""
        import llama_cpp

        batch = self._batch.batch
        batch.n_tokens = len(entries)
        for i, (token, pos, seq, logits) in enumerate(entries):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.seq_id[i][0] = seq
            batch.n_seq_id[i] = 1
            batch.logits[i] = logits
        return int(llama_cpp.llama_decode(self._ctx.ctx, batch))

    def _logits(self, batch_index: int) -> np.ndarray:
        import llama_cpp
        import numpy as np

        pointer = llama_cpp.llama_get_logits_ith(self._ctx.ctx, batch_index)
        return np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))

    def _pick(self, row: _Row, params: GenerationParams, rng: Any) -> int:
        """The row's next token: greedy (or sampled), within its grammar where it has one."""
        import numpy as np

        logits = row.logits
        matcher = row.matcher
        greedy = params.temperature <= 0
        if matcher is not None and matcher.is_error():
            matcher = None  # a matcher that failed leaves the row unconstrained, not stalled
        if greedy:
            best = int(np.argmax(logits))
            if matcher is None:
                return best
            if best in self._eog and matcher.is_accepting():
                return best
            if best not in self._eog and matcher.validate_tokens([best]) == 1:
                return best
        scores = np.array(logits, dtype=np.float32, copy=True)
        if matcher is not None:
            allowed = self._allowed(matcher)
            if matcher.is_accepting():
                allowed[list(self._eog)] = True
            scores[~allowed] = -np.inf
        if greedy:
            return int(np.argmax(scores))
        scores = scores / params.temperature
        scores -= scores.max()
        probs = np.exp(scores)
        probs /= probs.sum()
        return int(rng.choice(len(probs), p=probs))

    def _allowed(self, matcher: Any) -> np.ndarray:
        import numpy as np

        words = np.zeros((self._n_vocab + 31) // 32, dtype=np.int32)
        matcher.unsafe_compute_mask_ptr(words.ctypes.data, words.nbytes)
        return np.unpackbits(words.view(np.uint8), bitorder="little")[: self._n_vocab].astype(bool)

    def _advance(self, row: _Row, token: int, params: GenerationParams, on_text: Any) -> None:
        """Take ``token`` into the row and decide whether the row has ended."""
        if token in self._eog:
            row.finish = "stop"
            return
        row.generated.append(token)
        if row.matcher is not None and not row.matcher.is_error():
            row.matcher.consume_token(token)
        row.raw += token_piece(self._vocab, token)
        previous = row.text
        row.text = row.raw.decode("utf-8", errors="ignore")
        if on_text is not None and len(row.text) > len(previous):
            on_text(row.text[len(previous) :])
        tail_from = max(0, len(previous) - max((len(s) for s in row.stops), default=0))
        if (
            any(stop in row.text[tail_from:] for stop in row.stops)
            or (params.stop_on_repeated_line and is_degenerate_list_output(row.text))
            or (row.matcher is not None and row.matcher.is_stopped())
        ):
            row.finish = "stop"
        elif len(row.generated) >= row.max_new:
            row.finish = "length"

    def _decoding_grammars(self) -> DecodingGrammars | None:
        """The grammar engine over this GGUF's vocabulary, built on first use (``None``, with one
        warning, where llguidance cannot read the vocabulary: rows then decode freely)."""
        with self._grammars_lock:
            if self._grammars is None:
                from hoprag.llm.grammar import DecodingGrammars

                try:
                    self._grammars = DecodingGrammars(
                        None, self._n_vocab, view=vocabulary_view(self._model, self._n_vocab)
                    )
                except Exception as error:
                    logger.warning(
                        "constrained decoding is off for %s: llguidance cannot read its vocabulary (%s)",
                        self._name,
                        error,
                    )
                    self.config = self.config.model_copy(update={"constrained_decoding": False})
                    return None
            return self._grammars


def _completion(row: _Row) -> Completion:
    if row.finish == "error":
        return Completion(
            text="", prompt_tokens=len(row.tokens), finish_reason="error", error=row.error or "error"
        )
    text, hit_stop = truncate_at_stop(row.text, row.stops)
    return Completion(
        text=text,
        prompt_tokens=len(row.tokens),
        completion_tokens=len(row.generated),
        finish_reason="stop" if hit_stop or row.finish != "length" else "length",
    )


BACKEND = BackendSpec(
    name="llamacpp",
    config_type=LlamaCppConfig,
    constructor=LlamaCppLLM,
    model_id=llamacpp_model_id,
    needs="optional: model (a known name or a GGUF path), n_threads, ...",
    task_model_id=llamacpp_task_model_id,
)
