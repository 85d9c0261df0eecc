"""The Ray Data batch path for vLLM (``ray.data.llm``): bulk OpenIE over a corpus, with Ray Data
running chat templating and tokenization on CPU workers and a pool of vLLM engine replicas on GPUs.
Nothing here imports vLLM or ``ray.data.llm`` at import time; the row helpers are pure.

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

LoRA in Ray Data (how the adapters of :mod:`hoprag.llm.vllm_requests` reach the engine replicas):

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
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from hoprag.deps import VLLM_EXTRA_HINT, MissingExtraError, require_vllm
from hoprag.extraction.prompts import PromptSpec, openie_prompt
from hoprag.llm.adapters import (
    adapter_for_task,
    task_routes,
)
from hoprag.llm.base import (
    TASK_OPENIE,
    PromptStyle,
    render_chat_as_completion,
    truncate_at_stop,
)
from hoprag.llm.vllm_config import (
    ADAPTER_SETTING,
    ERROR_COLUMN,
    LORA_MODEL_COLUMN,
    MAX_TOKENS_COLUMN,
    OPENIE_OUTPUT_COLUMNS,
    STOP_COLUMN,
    TASK_COLUMN,
    VLLMConfig,
)
from hoprag.llm.vllm_requests import check_adapter, short_detail, to_sampling_params, vllm_student_tasks

if TYPE_CHECKING:
    import ray.data
    from ray.data.llm import Processor


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


def processor_input_columns(
    spec: PromptSpec, *, chat_template: bool = True, structured_output: bool = True
) -> dict[str, Any]:
    """The ``ray.data.llm`` processor input columns for one prompt.

    Returns ``messages`` (chat) or ``prompt`` (completion), the ``sampling_params`` dict, and the
    stop sequences / token budget for :func:`openie_postprocess_row` (the engine stage drops
    ``sampling_params``). Ray Data keeps the row's other columns, so they are not repeated. With
    ``chat_template=False`` (a processor without the chat-template stage) a chat prompt is
    flattened into ``prompt`` by :func:`~hoprag.llm.base.render_chat_as_completion`. A JSON
    prompt's schema goes in ``sampling_params["structured_outputs"]`` unless ``structured_output``
    is off (Ray's engine stage builds vLLM's ``StructuredOutputsParams`` from it).
    """
    sampling = to_sampling_params(spec.params, structured_output)
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
            "error": f"vllm_error: {short_detail(str(failure))}",
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
