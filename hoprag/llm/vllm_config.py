"""The vLLM backend's settings (``llm.vllm``), the columns its Ray Data rows carry, and its model
ids. Pure: nothing here imports vLLM or Ray, so configs validate on any machine (see
:mod:`hoprag.llm.vllm_backend` for the backend itself)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hoprag.llm.adapters import (
    AdapterSetting,
    adapter_paths,
    adapters_id_suffix,
    task_adapter_id_suffix,
)

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
    adapter: AdapterSetting = Field(
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
    structured_output: bool = Field(
        default=True,
        description="Constrain decoding of JSON prompts (extraction, entities) to their JSON schema "
        "with vLLM's structured outputs, in-process and on Ray Data.",
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
