"""vLLM on GPUs (optional extra ``vllm``): an in-process :class:`~hoprag.llm.base.LLM`, and the
Ray Data batch path (``ray.data.llm``) for bulk OpenIE over a corpus.

Two ways to run the same weights:

* :class:`VLLMEngineLLM` owns a ``vllm.LLM`` in the current process and implements the
  :class:`~hoprag.llm.base.LLM` protocol, so it drops in wherever the embedded or HTTP backends do
  (question-time NER, small extraction runs, a Ray Data actor that the caller manages itself).
* :func:`build_ray_data_processor` / :func:`build_openie_processor` build a ``ray.data.llm``
  processor: Ray Data runs chat templating and tokenization on CPU workers and a pool of vLLM
  engine replicas on GPUs, streaming rows through them. That is the fast path for indexing.

Nothing in this module imports vLLM (or ``ray.data.llm``) at import time, so the config and the
pure row/output helpers work, and are unit-tested, on CPU-only machines. Everything that needs vLLM
first calls :func:`hoprag.deps.require_vllm`, which names the extra to install.

Ray Data contract (Ray 2.60, ``ray.data.llm.build_processor`` with a
``vLLMEngineProcessorConfig``), as read from the installed package:

* input row: ``messages`` (OpenAI chat format; needs the chat-template stage) or ``prompt`` (text;
  chat-template stage disabled), plus ``sampling_params`` (kwargs of ``vllm.SamplingParams``).
  Every input column is carried through to the postprocess function.
* output row: ``generated_text``, ``num_input_tokens``, ``num_generated_tokens``,
  ``generated_tokens``, ``prompt``, ``prompt_token_ids``, ``metrics``, ``time_taken_llm``, ... and,
  with ``should_continue_on_error=True``, ``__inference_error__`` (``""`` on success). There is no
  finish-reason column, and the engine stage pops ``sampling_params``, so the preprocess step here
  stores the stop sequences and token budget in columns of its own.
* rows whose inference failed bypass the postprocess function and come out as the whole internal
  row; :func:`openie_finalize_row` folds them back into the same schema as the successful ones.

LoRA adapters (``VLLMConfig.adapter``: one, e.g. a ``hoprag distill`` student, or a list of
students that each serve the tasks their student.json lists). vLLM serves them on top of the base
weights (nothing is merged); each adapter's content hash is part of the model id. A prompt goes to
the adapter :func:`~hoprag.llm.adapters.adapter_for_task` picks for its task, as in the embedded
backend: the student trained on the task, the base weights for a task no student lists.

* in-process: ``vllm.LLM(..., enable_lora=True, max_lora_rank=..., max_loras=<adapters>)`` and
  every ``generate`` / ``chat`` call of a student's task gets
  ``lora_request=LoRARequest(name, i, path)`` of that student (:func:`lora_requests_kwargs`, ids
  1..n in the configured order); prompts of other tasks go to the base weights.
* Ray Data (``ray/llm/_internal/batch/`` of Ray 2.60): there is no LoRA field of its own besides
  ``dynamic_lora_loading_path`` (``processor/vllm_engine_proc.py:66``, a remote s3/gs folder of
  adapters, not used here); ``engine_kwargs`` go to ``vllm.AsyncEngineArgs`` unchanged
  (``stages/vllm_engine_stage.py:308``), so ``enable_lora`` / ``max_lora_rank`` travel there
  (:meth:`VLLMConfig.engine_args`). A request uses a LoRA when its row has a ``model`` column
  different from ``model_source`` (``stages/vllm_engine_stage.py:357-404``,
  ``_maybe_get_lora_request``, called per row at :432; the optional input key at :993). The value
  is the LoRA's name and, without ``dynamic_lora_loading_path``, also its path
  (``common/utils/lora_utils.py:214-233``: ``download_lora_adapter`` returns it unchanged; a
  remote ``s3://`` / ``gs://`` value is refused), turned into ``LoRARequest(lora_name=value,
  lora_int_id=n, lora_path=value)`` once per replica.
  :func:`build_ray_data_processor` therefore adds ``model = <absolute adapter path>`` to every row
  of a student's task (:func:`lora_row_columns`, the task read from the row's ``task`` column), and
  ``model = <the base model>`` (no LoRA) to the other rows; the paths must exist on every GPU
  node, like a local ``model``.
* a student is trained on plain-text prompts (no chat template). Rows of its tasks carry
  ``prompt``; Ray's chat-template stage requires ``messages`` in every row, so a processor that
  sends student prompts runs without it (:func:`chat_template_stage_enabled`), and any chat prompt
  of a non-student task in it is flattened with :func:`~hoprag.llm.base.render_chat_as_completion`.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hoprag.deps import VLLM_EXTRA_HINT, MissingExtraError, require_vllm
from hoprag.extraction.prompts import PromptSpec, openie_prompt
from hoprag.llm.adapters import (
    AdapterError,
    adapter_fingerprint,
    adapter_for_task,
    adapter_paths,
    adapters_id_suffix,
    check_adapter_list,
    lora_rank,
    read_student_meta,
    task_adapter_id_suffix,
    task_routes,
)
from hoprag.llm.base import (
    TASK_OPENIE,
    BackendSpec,
    ChatMessage,
    Completion,
    GenerationParams,
    Prompt,
    PromptStyle,
    render_chat_as_completion,
    truncate_at_stop,
)

if TYPE_CHECKING:
    import ray.data
    from ray.data.llm import Processor

logger = logging.getLogger(__name__)

_DETAIL_CHARS = 300

# Keys of VLLMConfig.engine_kwargs that have a dedicated field; a duplicate would be ambiguous (and
# a TypeError when both are passed to vllm.LLM).
_DEDICATED_ENGINE_KEYS = frozenset(
    {
        "model",
        "dtype",
        "tensor_parallel_size",
        "max_model_len",
        "gpu_memory_utilization",
        "max_num_seqs",
        "trust_remote_code",
        "enable_lora",  # set by `adapter`
        "max_lora_rank",
        "max_loras",  # the number of adapters
    }
)

ADAPTER_SETTING = "llm.vllm.adapter"
LORA_MODEL_COLUMN = "model"  # Ray's per-row LoRA selector (see module docstring)
TASK_COLUMN = "task"  # the row's prompt task, which decides its adapter

# Columns the OpenIE preprocess step adds for its own postprocess step (see module docstring).
STOP_COLUMN = "hoprag_stop"
MAX_TOKENS_COLUMN = "hoprag_max_tokens"
ERROR_COLUMN = "__inference_error__"

OPENIE_OUTPUT_COLUMNS = (
    "doc_id",
    "raw_output",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
    "error",
)
"""Columns of every row that :func:`build_openie_processor` outputs."""


class VLLMConfig(BaseModel):
    """Settings of the vLLM backend, in-process (:class:`VLLMEngineLLM`) and on Ray Data."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(
        min_length=1,
        description="Hugging Face hub id or local checkpoint directory, e.g. 'Qwen/Qwen2.5-7B-Instruct'. "
        "On a cluster a local path must exist on every GPU node.",
    )
    prompt_style: Literal["completion", "chat"] = Field(
        default="chat",
        description="'chat' applies the model's chat template (instruct models); 'completion' sends plain "
        "text (base models without a chat template).",
    )
    dtype: Literal["auto", "half", "float16", "bfloat16", "float", "float32"] = Field(
        default="auto", description="Weight/activation dtype; 'auto' uses the checkpoint's own dtype."
    )
    tensor_parallel_size: int = Field(
        default=1, ge=1, description="GPUs one engine replica shards the model over."
    )
    max_model_len: int = Field(
        default=4096,
        ge=16,
        description="Longest prompt + generation, in tokens. Smaller values leave more GPU memory for the "
        "KV cache (more sequences in flight); a prompt longer than this fails on its own, not its batch.",
    )
    gpu_memory_utilization: float = Field(
        default=0.9,
        gt=0,
        le=1,
        description="Fraction of each GPU's total memory vLLM may claim (weights + KV cache).",
    )
    max_num_seqs: int = Field(default=256, ge=1, description="Most sequences one engine decodes at once.")
    trust_remote_code: bool = Field(
        default=False, description="Allow model code from the checkpoint repository to run (custom models)."
    )
    batch_size: int = Field(
        default=64,
        ge=1,
        description="Ray Data path: rows per batch sent to an engine replica. Larger batches raise "
        "throughput; smaller ones lose less work when a worker fails.",
    )
    concurrency: int = Field(
        default=1,
        ge=1,
        description="Ray Data path: most vLLM engine replicas (Ray Data autoscales the pool between 1 and "
        "this many; each replica needs tensor_parallel_size * num_gpus_per_worker GPUs).",
    )
    num_gpus_per_worker: float = Field(
        default=1,
        gt=0,
        le=1,
        description="Ray Data path: GPUs reserved per engine worker (per tensor-parallel rank). A fraction "
        "packs several replicas of a small model onto one GPU; gpu_memory_utilization must then be "
        "at most this fraction.",
    )
    accelerator_type: str | None = Field(
        default=None,
        description="Ray Data path: schedule engine replicas only on nodes with this accelerator "
        "(e.g. 'A100', 'H100'); None places them on any GPU.",
    )
    continue_on_error: bool = Field(
        default=True,
        description="Ray Data path: a row whose inference fails is returned with 'error' set instead of "
        "failing the whole dataset.",
    )
    engine_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="Further vllm engine arguments (e.g. {'enable_prefix_caching': True, 'quantization': "
        "'awq'}). Keys that have a field of their own (enable_lora, max_loras: adapter) are rejected.",
    )
    adapter: str | list[str] | None = Field(
        default=None,
        description="A LoRA adapter directory of this base model (`hoprag distill` output, or any PEFT "
        "adapter): vLLM serves it on top of the base weights (enable_lora). When it holds a "
        "student.json, the tasks listed there use the short student prompts and the adapter, and other "
        "prompts the base weights; without one every request goes through it. A list of students "
        "(e.g. [runs/student/adapter, runs/student-planner/adapter]): each serves the tasks its "
        "student.json lists (no task in two); prompts without a task get the first. 'packaged': the "
        "student shipped with hoprag (for google/gemma-3-270m). Part of the model "
        "id, so caches key on their content. On a cluster the paths must exist on the driver and on "
        "every GPU node.",
    )
    max_lora_rank: int = Field(
        default=16,
        ge=1,
        description="With an adapter: the largest LoRA rank vLLM reserves memory for; must be at least "
        "the adapter's r (checked when the engine or processor is built). vLLM accepts 1, 8, 16, 32, "
        "64, 128, 256, ...",
    )

    @field_validator("engine_kwargs")
    @classmethod
    def _check_engine_kwargs(cls, v: dict[str, Any]) -> dict[str, Any]:
        clash = sorted(_DEDICATED_ENGINE_KEYS & v.keys())
        if clash:
            raise ValueError(f"engine_kwargs must not set {clash}; use the VLLMConfig fields instead")
        return v

    @field_validator("adapter")
    @classmethod
    def _one_or_more_adapters(cls, value: str | list[str] | None) -> str | list[str] | None:
        return check_adapter_list(value)

    @property
    def adapter_dirs(self) -> tuple[Path, ...]:
        """The adapter directories, in the configured order (empty: the base model alone);
        ``packaged`` is the student shipped with hoprag (a LoRA of Gemma 3 270M)."""
        return adapter_paths(self.adapter, packaged_fits=True)

    @model_validator(mode="after")
    def _check_memory_share(self) -> VLLMConfig:
        if self.num_gpus_per_worker < 1 and self.gpu_memory_utilization > self.num_gpus_per_worker:
            # vLLM's fraction is of the whole GPU: replicas sharing one would each claim more than
            # their share and the later ones would fail to start.
            raise ValueError(
                f"gpu_memory_utilization ({self.gpu_memory_utilization}) must not exceed "
                f"num_gpus_per_worker ({self.num_gpus_per_worker}) when replicas share a GPU"
            )
        return self

    def engine_args(self) -> dict[str, Any]:
        """Engine arguments (everything but the model) for ``vllm.LLM`` and Ray's ``engine_kwargs``;
        with adapters also ``enable_lora``, ``max_lora_rank`` and ``max_loras`` (one batch may hold
        prompts of every adapter)."""
        count = len(self.adapter_dirs)
        lora = {"enable_lora": True, "max_lora_rank": self.max_lora_rank, "max_loras": count} if count else {}
        return {
            "dtype": self.dtype,
            "tensor_parallel_size": self.tensor_parallel_size,
            "max_model_len": self.max_model_len,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "max_num_seqs": self.max_num_seqs,
            "trust_remote_code": self.trust_remote_code,
            **lora,
            **self.engine_kwargs,
        }


# -- pure conversions ---------------------------------------------------------------------------


def vllm_model_id(config: VLLMConfig) -> str:
    """``vllm:<model>`` (``+adapter:<content hash>`` per adapter, as the embedded backend): the id of
    the whole engine. Several adapters that cannot be routed by task fail here
    (:func:`~hoprag.llm.adapters.task_routes`), before an engine is built."""
    return f"vllm:{config.model}" + adapters_id_suffix(config.adapter_dirs, ADAPTER_SETTING)


def vllm_task_model_id(config: VLLMConfig, task: str) -> str:
    """The id of the weights a prompt of ``task`` runs on (the base and the LoRA serving the task);
    part of extraction-cache keys."""
    return f"vllm:{config.model}" + task_adapter_id_suffix(config.adapter_dirs, task, ADAPTER_SETTING)


# -- LoRA adapter -------------------------------------------------------------------------------


def vllm_student_tasks(config: VLLMConfig) -> frozenset[str]:
    """The tasks the adapters' ``student.json`` files list (empty without adapters or student.json, or
    for a student of other student prompt texts: :func:`hoprag.llm.adapters.student_tasks`)."""
    return frozenset(task_routes(config.adapter_dirs, ADAPTER_SETTING))


def _name_key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def student_base_mismatch(model: str, base_model: object) -> str | None:
    """A warning when a student's ``base_model`` is clearly not ``model``, else ``None``.

    Names are compared loosely (case and punctuation ignored, ``packaged:`` / hub org / directory
    prefixes dropped, either name contained in the other), so ``packaged:gemma-3-270m`` matches
    ``google/gemma-3-270m`` and a local copy such as ``/models/gemma-3-270m``.
    """
    if not isinstance(base_model, str) or not base_model.strip():
        return None
    base_full, model_full = _name_key(base_model), _name_key(model)
    base_leaf = _name_key(base_model.split(":", 1)[-1].rstrip("/").rsplit("/", 1)[-1])
    model_leaf = _name_key(model.rstrip("/").rsplit("/", 1)[-1])
    if (base_leaf and base_leaf in model_full) or (model_leaf and model_leaf in base_full):
        return None
    return (
        f"{ADAPTER_SETTING}: the adapter was trained for base model {base_model!r} (student.json), "
        f"but llm.vllm.model is {model!r}; LoRA weights only fit the model they were trained on"
    )


def check_adapter(config: VLLMConfig) -> None:
    """Validate ``config.adapter`` before an engine is built (no-op without one).

    Raises :class:`~hoprag.llm.adapters.AdapterError` for an incomplete adapter directory, when a
    LoRA rank exceeds ``max_lora_rank`` (vLLM would fail only once the engine is up), or for several
    adapters that cannot be routed by task (:func:`~hoprag.llm.adapters.task_routes`); logs a
    warning when a ``student.json`` names another base model.
    """
    for adapter in config.adapter_dirs:
        rank = lora_rank(adapter, ADAPTER_SETTING)
        if rank > config.max_lora_rank:
            raise AdapterError(
                f"llm.vllm.max_lora_rank={config.max_lora_rank} is below the LoRA rank {rank} of "
                f"{ADAPTER_SETTING}={adapter}; set llm.vllm.max_lora_rank to at least {rank}"
            )
        warning = student_base_mismatch(
            config.model, read_student_meta(adapter, ADAPTER_SETTING).get("base_model")
        )
        if warning:
            logger.warning(warning)
    task_routes(config.adapter_dirs, ADAPTER_SETTING)


def lora_requests_kwargs(config: VLLMConfig) -> list[dict[str, Any]]:
    """Keyword arguments of ``vllm.lora.request.LoRARequest`` for each adapter, in the configured
    order (ids from 1, vLLM's first; empty without adapters)."""
    return [
        {
            "lora_name": f"adapter-{adapter_fingerprint(adapter, ADAPTER_SETTING)}",
            "lora_int_id": number,
            "lora_path": str(adapter.resolve()),
        }
        for number, adapter in enumerate(config.adapter_dirs, start=1)
    ]


def to_sampling_params(params: GenerationParams) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for ``params``.

    Empty stop strings are dropped (they would match everywhere). Stop strings are excluded from
    the output text by vLLM, which is what :class:`~hoprag.llm.base.Completion` promises too.
    """
    return {
        "n": 1,
        "max_tokens": params.max_new_tokens,
        "temperature": params.temperature,
        "stop": [s for s in params.stop if s],
    }


class _SequenceOutput(Protocol):
    """The part of ``vllm.CompletionOutput`` this module reads."""

    @property
    def text(self) -> str: ...
    @property
    def token_ids(self) -> Sequence[int]: ...
    @property
    def finish_reason(self) -> str | None: ...


class _RequestOutput(Protocol):
    """The part of ``vllm.RequestOutput`` this module reads."""

    @property
    def prompt_token_ids(self) -> Sequence[int] | None: ...
    @property
    def outputs(self) -> Sequence[_SequenceOutput]: ...


def completion_from_vllm_output(output: _RequestOutput, stop: Sequence[str]) -> Completion:
    """Turn one ``vllm.RequestOutput`` into a :class:`~hoprag.llm.base.Completion`.

    The text is cut at the first stop sequence again, although vLLM already stops there: it keeps
    the contract identical across backends even if a caller's SamplingParams differ from ``stop``.
    A request vLLM aborted comes back as an error rather than as a silently short text.
    """
    prompt_ids = output.prompt_token_ids
    prompt_tokens = len(prompt_ids) if prompt_ids is not None else 0
    if not output.outputs:
        return Completion(
            text="", prompt_tokens=prompt_tokens, finish_reason="error", error="no_output", metadata={}
        )
    seq = output.outputs[0]
    server_reason = seq.finish_reason
    meta: dict[str, object] = {"server_finish_reason": server_reason}
    stop_reason = getattr(seq, "stop_reason", None)
    if isinstance(stop_reason, str | int):
        meta["stop_reason"] = stop_reason
    completion_tokens = len(seq.token_ids)
    if server_reason == "abort":
        return Completion(
            text="",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason="error",
            error="aborted",
            metadata=meta,
        )
    text, hit_stop = truncate_at_stop(seq.text, stop)
    finish: Literal["stop", "length"] = "length" if server_reason == "length" and not hit_stop else "stop"
    return Completion(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        finish_reason=finish,
        metadata=meta,
    )


def _error_completion(reason: str, exc: BaseException) -> Completion:
    detail = _short(f"{type(exc).__name__}: {exc}")
    return Completion(text="", finish_reason="error", error=reason, metadata={"detail": detail})


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "..."


# -- in-process engine --------------------------------------------------------------------------


class VLLMEngineLLM:
    """An :class:`~hoprag.llm.base.LLM` backed by a ``vllm.LLM`` in this process.

    Plain-text prompts go through ``llm.generate``; chat prompts through ``llm.chat`` (the model's
    chat template) when ``config.prompt_style == "chat"``, or are flattened with
    :func:`~hoprag.llm.base.render_chat_as_completion` for base models that have no template. A
    mixed batch is split by kind, each kind is generated as one vLLM batch, and the results are put
    back in prompt order.

    Thread-safe in the sense that concurrent :meth:`generate` calls are serialised: ``vllm.LLM`` is
    not re-entrant, and one call already keeps the GPU busy with the whole batch.
    """

    def __init__(self, config: VLLMConfig) -> None:
        """Load the model (and its LoRA adapter, if configured) onto the visible GPU(s); raises
        :class:`~hoprag.llm.adapters.AdapterError` for an unusable adapter and
        :class:`~hoprag.deps.MissingExtraError` without vLLM."""
        check_adapter(config)
        require_vllm("The vLLM LLM backend (llm.backend=vllm)")
        import vllm

        self.config = config
        self._vllm = vllm
        self._llm = vllm.LLM(model=config.model, **config.engine_args())
        self._routes = task_routes(config.adapter_dirs, ADAPTER_SETTING)
        self.student_tasks: frozenset[str] = frozenset(self._routes)
        self._lora_requests: list[Any] = []
        if config.adapter_dirs:
            from vllm.lora.request import LoRARequest

            self._lora_requests = [LoRARequest(**kwargs) for kwargs in lora_requests_kwargs(config)]
        self._lock = threading.Lock()

    # -- LLM protocol -------------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        return vllm_model_id(self.config)

    def task_model_id(self, task: str) -> str:
        """The id of the weights this engine answers ``task`` with (:func:`vllm_task_model_id`)."""
        return vllm_task_model_id(self.config, task)

    @property
    def prompt_style(self) -> PromptStyle:
        """The prompt form the configured model expects."""
        return self.config.prompt_style

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        """Complete every prompt; one result per prompt, in order.

        Raises only for a prompt of the wrong type. If vLLM rejects a batch because of some of its
        prompts (e.g. one longer than ``max_model_len``), the batch is bisected so only those
        prompts fail; any other engine failure marks the whole group as ``engine_error``.
        """
        texts: list[tuple[int, str]] = []
        chats: list[tuple[int, list[ChatMessage]]] = []
        for i, p in enumerate(prompts):
            if isinstance(p, str):
                texts.append((i, p))
            elif isinstance(p, list):
                if self.config.prompt_style == "chat":
                    chats.append((i, p))
                else:
                    texts.append((i, render_chat_as_completion(p)))
            else:
                raise TypeError(f"prompt must be str or list of chat messages, got {type(p).__name__}")
        if not prompts:
            return []
        results: list[Completion | None] = [None] * len(prompts)
        sampling = self._vllm.SamplingParams(**to_sampling_params(params))
        with self._lock:
            if texts:
                done = self._run_group(
                    partial(self._generate_texts, task=params.task),
                    [t for _, t in texts],
                    sampling,
                    params.stop,
                )
                for (i, _), c in zip(texts, done, strict=True):
                    results[i] = c
            if chats:
                done = self._run_group(
                    partial(self._generate_chats, task=params.task),
                    [m for _, m in chats],
                    sampling,
                    params.stop,
                )
                for (i, _), c in zip(chats, done, strict=True):
                    results[i] = c
        assert all(c is not None for c in results)
        return [c for c in results if c is not None]

    def _generate_texts(self, items: list[Any], sampling: Any, task: str | None = None) -> list[Any]:
        return list(self._llm.generate(items, sampling, use_tqdm=False, **self._lora_for(task)))

    def _generate_chats(self, items: list[Any], sampling: Any, task: str | None = None) -> list[Any]:
        return list(self._llm.chat(items, sampling, use_tqdm=False, **self._lora_for(task)))

    def _lora_for(self, task: str | None) -> dict[str, Any]:
        """The adapter serving ``task`` (:func:`~hoprag.llm.adapters.adapter_for_task`): the student
        trained on it; no LoRA (the base model) for a task no student lists."""
        index = adapter_for_task(self._routes, len(self._lora_requests), task)
        return {} if index is None else {"lora_request": self._lora_requests[index]}

    def _run_group(
        self,
        call: Callable[[list[Any], Any], list[Any]],
        items: list[Any],
        sampling: Any,
        stop: Sequence[str],
    ) -> list[Completion]:
        try:
            outputs = call(items, sampling)
        except (ValueError, TypeError) as e:
            # vLLM validates every input (length vs max_model_len, chat template rendering) before
            # scheduling and rejects the whole call for one bad prompt. Bisecting keeps the good
            # prompts batched and costs only O(bad * log n) extra calls.
            if len(items) == 1:
                logger.warning("vLLM rejected a prompt: %s", _short(repr(e)))
                return [_error_completion("prompt_rejected", e)]
            mid = len(items) // 2
            return self._run_group(call, items[:mid], sampling, stop) + self._run_group(
                call, items[mid:], sampling, stop
            )
        except Exception as e:
            # A dead or out-of-memory engine: report it per prompt, so the caller's bookkeeping
            # (retry later, mark documents failed) works exactly as for HTTP failures.
            logger.exception("vLLM engine call failed for %d prompt(s)", len(items))
            return [_error_completion("engine_error", e) for _ in items]
        if len(outputs) != len(items):
            err = RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(items)} prompts")
            return [_error_completion("bad_output_count", err) for _ in items]
        return [completion_from_vllm_output(o, stop) for o in outputs]

    def __repr__(self) -> str:
        adapter = f", adapter={self.config.adapter!r}" if self.config.adapter else ""
        return f"VLLMEngineLLM(model={self.config.model!r}, style={self.config.prompt_style!r}{adapter})"


# -- Ray Data batch path ------------------------------------------------------------------------


def chat_template_stage_enabled(config: VLLMConfig, tasks: Iterable[str] = ()) -> bool:
    """Whether a processor for prompts of ``tasks`` runs Ray's chat-template stage: only in chat
    style, and not when any of them is a student task of the adapter (its prompts are plain text,
    and the stage needs ``messages`` in every row)."""
    return config.prompt_style == "chat" and not (vllm_student_tasks(config) & set(tasks))


def ray_processor_config_kwargs(config: VLLMConfig, *, chat_template: bool = True) -> dict[str, Any]:
    """Keyword arguments of ``ray.data.llm.vLLMEngineProcessorConfig`` for ``config``.

    The chat-template stage runs only for chat prompts (it requires a ``messages`` column), and not
    at all with ``chat_template=False`` (see :func:`chat_template_stage_enabled`). The detokenize
    stage is off: vLLM already returns text, and re-decoding the generated tokens would put the
    stop sequence that vLLM cut off back into ``generated_text``. With an adapter,
    :func:`check_adapter` runs first and ``engine_kwargs`` enable LoRA.
    """
    check_adapter(config)
    kwargs: dict[str, Any] = {
        "model_source": config.model,
        # A fresh dict: Ray's validator writes 'task_type' into the engine_kwargs it is given.
        "engine_kwargs": config.engine_args(),
        "batch_size": config.batch_size,
        "concurrency": config.concurrency,
        "accelerator_type": config.accelerator_type,
        "should_continue_on_error": config.continue_on_error,
        "chat_template_stage": config.prompt_style == "chat" and chat_template,
        "tokenize_stage": True,
        "detokenize_stage": False,
    }
    if config.num_gpus_per_worker != 1:
        # Without a placement group Ray reserves whole GPUs (tp * pp) per replica.
        kwargs["placement_group_config"] = {
            "bundle_per_worker": {"CPU": 1, "GPU": config.num_gpus_per_worker},
            "strategy": "PACK",
        }
    return kwargs


def lora_row_columns(config: VLLMConfig, task: str | None = None) -> dict[str, str]:
    """The columns that make Ray's engine stage serve a row of ``task`` with the adapter
    :func:`~hoprag.llm.adapters.adapter_for_task` picks: ``{"model": <absolute adapter path>}``;
    ``{"model": <config.model>}`` (no LoRA) for a task no student lists; ``{}`` without adapters
    (see the module docstring)."""
    return with_lora_columns(config, lambda row: {}, task)({})


def with_lora_columns(
    config: VLLMConfig,
    preprocess: Callable[[dict[str, Any]], dict[str, Any]],
    default_task: str | None = None,
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """``preprocess`` whose output also selects each row's adapter by the row's ``task`` column
    (``default_task`` for rows without one); ``preprocess`` itself without adapters."""
    adapters = config.adapter_dirs
    if not adapters:
        return preprocess
    routes = task_routes(adapters, ADAPTER_SETTING)  # read once, not per row
    models = [str(adapter.resolve()) for adapter in adapters]

    def preprocess_with_lora(row: dict[str, Any]) -> dict[str, Any]:
        index = adapter_for_task(routes, len(models), row.get(TASK_COLUMN, default_task))
        return {**preprocess(row), LORA_MODEL_COLUMN: config.model if index is None else models[index]}

    return preprocess_with_lora


def build_ray_data_processor(
    config: VLLMConfig,
    preprocess: Callable[[dict[str, Any]], dict[str, Any]],
    postprocess: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    require_local_vllm: bool = True,
    chat_template: bool = True,
    task: str | None = None,
) -> Processor:
    """A ``ray.data.llm`` processor: ``processor(dataset)`` returns the generated dataset (lazily).

    ``preprocess`` maps an input row to the processor's input columns (``prompt`` or ``messages``
    matching ``config.prompt_style``, and ``sampling_params``); its output is merged into the row.
    ``postprocess`` maps the processor's output row (see the module docstring) to the final row;
    with ``config.continue_on_error`` failed rows skip it (use :func:`openie_finalize_row` or
    similar afterwards). Building calls ``ray.init`` if needed and downloads the tokenizer.

    ``chat_template=False`` runs no chat-template stage even in chat style (``preprocess`` then
    gives ``prompt`` only, e.g. a student's prompts). With ``config.adapter`` each row is served by
    the adapter of its ``task`` column (``task`` for rows without one; :func:`with_lora_columns`).

    ``require_local_vllm=False`` skips the check that vLLM is installed in *this* process, for a
    driver on a CPU head node whose GPU workers have it.
    """
    if require_local_vllm:
        require_vllm("The Ray Data vLLM processor")
    try:
        from ray.data.llm import build_processor, vLLMEngineProcessorConfig
    except ImportError as e:
        raise MissingExtraError(
            f"The Ray Data vLLM processor needs ray.data.llm and vLLM: {VLLM_EXTRA_HINT}; "
            f"importing ray.data.llm failed: {e}"
        ) from e
    processor_config = vLLMEngineProcessorConfig(
        **ray_processor_config_kwargs(config, chat_template=chat_template)
    )
    return build_processor(
        processor_config, preprocess=with_lora_columns(config, preprocess, task), postprocess=postprocess
    )


def processor_input_columns(spec: PromptSpec, *, chat_template: bool = True) -> dict[str, Any]:
    """The ``ray.data.llm`` processor input columns for one prompt.

    Returns ``messages`` (chat) or ``prompt`` (completion), the ``sampling_params`` dict, and the
    stop sequences / token budget for :func:`openie_postprocess_row` (the engine stage drops
    ``sampling_params``). Ray Data keeps the row's other columns, so they are not repeated. With
    ``chat_template=False`` (a processor without the chat-template stage) a chat prompt is
    flattened into ``prompt`` by :func:`~hoprag.llm.base.render_chat_as_completion`.
    """
    sampling = to_sampling_params(spec.params)
    if not sampling["stop"]:
        # An always-empty list has no Arrow value type; leave the key out rather than ship list<null>.
        del sampling["stop"]
    out: dict[str, Any] = {
        "sampling_params": sampling,
        # JSON text, because Ray Data turns list columns into numpy arrays between stages.
        STOP_COLUMN: json.dumps(list(spec.params.stop)),
        MAX_TOKENS_COLUMN: spec.params.max_new_tokens,
    }
    if isinstance(spec.prompt, str):
        out["prompt"] = spec.prompt
    elif not chat_template:
        out["prompt"] = render_chat_as_completion(spec.prompt)
    else:
        out["messages"] = [{"role": m["role"], "content": m["content"]} for m in spec.prompt]
    return out


def openie_preprocess_row(
    row: Mapping[str, Any], style: PromptStyle, max_new_tokens: int = 192, *, student: bool = False
) -> dict[str, Any]:
    """The processor input columns for one ``{doc_id, title, text}`` row (the passage is ``text``,
    the same string the caller later hands to the parser, which grounds triples in it).
    ``student``: the short student prompt (plain text in either style), for an adapter trained on
    ``openie``."""
    spec = openie_prompt(str(row["text"]), style, max_new_tokens=max_new_tokens, student=student)
    return processor_input_columns(spec)


def _stop_sequences(row: Mapping[str, Any]) -> list[str]:
    raw = row.get(STOP_COLUMN)
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return []
    return [s for s in value if isinstance(s, str)] if isinstance(value, list) else []


def openie_postprocess_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """One processor output row as ``{doc_id, raw_output, prompt_tokens, completion_tokens,
    finish_reason, error}`` (see :data:`OPENIE_OUTPUT_COLUMNS`).

    ``raw_output`` is cut at the first stop sequence; ``finish_reason`` is ``"length"`` when the
    token budget ran out before a stop (Ray reports no finish reason, so it is inferred), and
    ``"error"`` with ``error = "vllm_error: <message>"`` for a row whose inference failed.
    """
    doc_id = row.get("doc_id")
    failure = row.get(ERROR_COLUMN) or ""
    if failure:
        return {
            "doc_id": doc_id,
            "raw_output": "",
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "finish_reason": "error",
            "error": f"vllm_error: {_short(str(failure))}",
        }
    text, hit_stop = truncate_at_stop(str(row.get("generated_text") or ""), _stop_sequences(row))
    completion_tokens = int(row.get("num_generated_tokens") or 0)
    budget = row.get(MAX_TOKENS_COLUMN)
    ran_out = budget is not None and completion_tokens >= int(budget)
    return {
        "doc_id": doc_id,
        "raw_output": text,
        "prompt_tokens": int(row.get("num_input_tokens") or 0),
        "completion_tokens": completion_tokens,
        "finish_reason": "length" if ran_out and not hit_stop else "stop",
        "error": None,
    }


def openie_finalize_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """Bring every processor output row to :data:`OPENIE_OUTPUT_COLUMNS`.

    Failed rows bypass Ray's postprocess step and arrive as the whole internal row; they are
    converted here. Successful rows were already postprocessed and only lose Ray's
    ``__inference_error__`` column.
    """
    if row.get(ERROR_COLUMN):
        return openie_postprocess_row(row)
    return {k: row.get(k) for k in OPENIE_OUTPUT_COLUMNS}


def build_openie_processor(
    config: VLLMConfig, *, max_new_tokens: int = 192, require_local_vllm: bool = True
) -> Callable[[ray.data.Dataset], ray.data.Dataset]:
    """OpenIE over a dataset of ``{doc_id, title, text}`` rows on a pool of vLLM replicas.

    Returns a function from the documents dataset to a lazy dataset of
    :data:`OPENIE_OUTPUT_COLUMNS` rows (one per document, in no particular order); parse
    ``raw_output`` with :func:`hoprag.extraction.parsing.parse_openie_output` using the output
    format of ``openie_prompt(..., config.prompt_style, student=...)``, ``student`` being whether
    ``"openie"`` is in :func:`vllm_student_tasks` (an adapter trained on it gets its student
    prompt, without the chat-template stage).
    """
    style = config.prompt_style
    student = TASK_OPENIE in vllm_student_tasks(config)

    def preprocess(row: dict[str, Any]) -> dict[str, Any]:
        return openie_preprocess_row(row, style, max_new_tokens, student=student)

    processor = build_ray_data_processor(
        config,
        preprocess,
        openie_postprocess_row,
        require_local_vllm=require_local_vllm,
        chat_template=chat_template_stage_enabled(config, [TASK_OPENIE]),
        task=TASK_OPENIE,
    )

    def run(documents: ray.data.Dataset) -> ray.data.Dataset:
        return processor(documents).map(openie_finalize_row)

    return run


BACKEND = BackendSpec(
    name="vllm",
    config_type=VLLMConfig,
    constructor=VLLMEngineLLM,
    model_id=vllm_model_id,
    needs="model, ...",
    task_model_id=vllm_task_model_id,
)
