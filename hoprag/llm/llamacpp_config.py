"""Settings of the llama.cpp backend (``llm.llamacpp``) and its model ids, known without loading
a model or importing llama.cpp (extraction-cache keys need them first)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from hoprag.config import StrictModel
from hoprag.llm.adapters import (
    PACKAGED_STUDENT,
    AdapterSetting,
    adapter_paths,
    adapters_id_suffix,
    task_adapter_id_suffix,
)
from hoprag.llm.gguf_models import GEMMA_270M, gguf_model_id

ADAPTER_SETTING = "llm.llamacpp.adapter"  # the setting named in adapter errors


class LlamaCppConfig(StrictModel):
    """Settings of the llama.cpp backend."""

    model: str = Field(
        default=GEMMA_270M,
        description="A known model (gemma-3-270m: the packaged base model; qwen2.5-coder-0.5b, "
        "qwen2.5-coder-1.5b: instruct models from their part packages, extras qwen-0.5b / qwen-1.5b) "
        "or the path of any GGUF file. Checked (readable, whole, right architecture) before loading.",
    )
    n_threads: int | None = Field(
        default=None,
        ge=1,
        description="Threads for prefill and decode. Default: the CPUs Ray gave this actor or replica, "
        "else the CPUs this process may use (hoprag/threads.py).",
    )
    context_tokens: int = Field(
        default=2048,
        ge=256,
        description="Context of each sequence (prompt + answer). A longer prompt fails alone with "
        "error 'prompt_too_long'; an answer that would overflow it ends with finish_reason 'length'.",
    )
    max_batch_size: int = Field(
        default=16,
        ge=1,
        le=64,
        description="Sequences decoded together at most (fewer when their prompts and answers would "
        "overflow kv_cache_tokens).",
    )
    kv_cache_tokens: int = Field(
        default=16384,
        ge=1024,
        description="KV-cache cells of the one buffer all rows share (memory: Gemma 270M ~18 KB a cell, "
        "Qwen2.5 1.5B ~28 KB): rows are decoded together only while their prompts and answers fit in "
        "it beside one context_tokens for the cached prompt head.",
    )

    @model_validator(mode="after")
    def _head_and_a_row_fit(self) -> LlamaCppConfig:
        if self.kv_cache_tokens < 2 * self.context_tokens:
            raise ValueError(
                f"kv_cache_tokens={self.kv_cache_tokens} must hold two contexts (2 x context_tokens="
                f"{2 * self.context_tokens}): the cached prompt head and one row"
            )
        return self

    prompt_batch_tokens: int = Field(
        default=512, ge=32, description="Prompt tokens per prefill call (llama.cpp's n_batch)."
    )
    gpu_layers: int = Field(
        default=0, ge=-1, description="Layers offloaded to a GPU when llama.cpp was built with one (-1: all)."
    )
    constrained_decoding: bool = Field(
        default=True,
        description="Follow a prompt's JSON schema or line grammar while decoding (llguidance over the "
        "GGUF's vocabulary). false: free decoding, read by the tolerant parsers.",
    )
    seed: int = Field(default=0, description="Seed of sampling at temperature > 0 (greedy ignores it).")
    adapter: AdapterSetting = Field(
        default=PACKAGED_STUDENT,
        description="LoRA adapters as llm.embedded.adapter takes them (a `hoprag distill` student, a "
        "list of students routed by task, or any PEFT LoRA of this base), converted once to llama.cpp's "
        f"LoRA GGUF (hoprag/llm/gguf_lora.py) and applied at run time. '{PACKAGED_STUDENT}' (the "
        "default): the shipped student, for model gemma-3-270m only; null: the base model with its "
        "few-shot prompts.",
    )

    @property
    def adapter_dirs(self) -> tuple[Path, ...]:
        """The adapter directories, in the configured order (the shipped student fits the packaged
        Gemma only)."""
        return adapter_paths(self.adapter, packaged_fits=self.model == GEMMA_270M)


def llamacpp_model_id(config: LlamaCppConfig) -> str:
    """``llamacpp:<model>@<checksum>`` (``+adapter:<content hash>`` per adapter): keyed by the
    GGUF's content (known models: the pinned checksum; paths:
    :func:`~hoprag.llm.gguf_models.gguf_model_id`)."""
    return f"llamacpp:{gguf_model_id(config.model)}" + adapters_id_suffix(
        config.adapter_dirs, ADAPTER_SETTING
    )


def llamacpp_task_model_id(config: LlamaCppConfig, task: str) -> str:
    """The id of the weights a prompt of ``task`` runs on (the base and the adapter serving it)."""
    return f"llamacpp:{gguf_model_id(config.model)}" + task_adapter_id_suffix(
        config.adapter_dirs, task, ADAPTER_SETTING
    )
