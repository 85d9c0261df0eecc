"""What hoprag sends to vLLM and reads back: LoRA adapters per task, sampling parameters, and a
vLLM ``RequestOutput`` as a :class:`~hoprag.llm.base.Completion`. Pure (no vLLM import).

LoRA adapters (``VLLMConfig.adapter``: one, e.g. a ``hoprag distill`` student, or a list of
students that each serve the tasks their student.json lists). vLLM serves them on top of the base
weights (nothing is merged); each adapter's content hash is part of the model id. A prompt goes to
the adapter :func:`~hoprag.llm.adapters.adapter_for_task` picks for its task, as in the embedded
backend: the student trained on the task, the base weights for a task no student lists.

* in-process: ``vllm.LLM(..., enable_lora=True, max_lora_rank=..., max_loras=<adapters>)`` and
  every ``generate`` / ``chat`` call of a student's task gets
  ``lora_request=LoRARequest(name, i, path)`` of that student (:func:`lora_requests_kwargs`, ids
  1..n in the configured order); prompts of other tasks go to the base weights.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from hoprag.llm.adapters import (
    AdapterError,
    adapter_fingerprint,
    lora_rank,
    read_student_meta,
    task_routes,
)
from hoprag.llm.base import (
    Completion,
    GenerationParams,
    truncate_at_stop,
)
from hoprag.llm.vllm_config import ADAPTER_SETTING, VLLMConfig

logger = logging.getLogger(__name__)


_DETAIL_CHARS = 300


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


def to_sampling_params(params: GenerationParams, structured_output: bool = True) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for ``params``, as plain data (what a
    ``ray.data.llm`` processor row carries; :func:`engine_sampling_params` builds the object).

    Empty stop strings are dropped (they would match everywhere). Stop strings are excluded from
    the output text by vLLM, which is what :class:`~hoprag.llm.base.Completion` promises too. A JSON
    prompt's schema (``params.json_schema``) becomes vLLM's structured outputs
    (``{"json": schema}``), so decoding follows it, unless ``structured_output`` is off.
    """
    out: dict[str, Any] = {
        "n": 1,
        "max_tokens": params.max_new_tokens,
        "temperature": params.temperature,
        "stop": [s for s in params.stop if s],
    }
    if structured_output and params.json_schema:
        out["structured_outputs"] = {"json": params.json_schema}
    return out


def engine_sampling_params(vllm: Any, params: GenerationParams, structured_output: bool = True) -> Any:
    """A ``vllm.SamplingParams`` for ``params`` (``vllm``: the imported module); the structured
    outputs dict becomes ``vllm.sampling_params.StructuredOutputsParams``."""
    kwargs = to_sampling_params(params, structured_output)
    if "structured_outputs" in kwargs:
        kwargs["structured_outputs"] = vllm.sampling_params.StructuredOutputsParams(
            **kwargs["structured_outputs"]
        )
    return vllm.SamplingParams(**kwargs)


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


def error_completion(reason: str, exc: BaseException) -> Completion:
    detail = short_detail(f"{type(exc).__name__}: {exc}")
    return Completion(text="", finish_reason="error", error=reason, metadata={"detail": detail})


def short_detail(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "..."
