"""The LLM stage on GPUs: vLLM replicas inside Ray Data via a ``ray.data.llm`` processor.

Same prompts, parsers, cache and records as the actor path (:mod:`indexing.extract`): documents
are split into passages (one row each), questions become NER rows, the processor generates, and a
:class:`~indexing.extract.DocumentAssembler` in the driver folds passages back into documents as
batches stream in, each finished document written to the resume cache right away.

With a distilled student adapter (``llm.vllm.adapter``) the rows of its tasks get the short
student prompts, as :func:`~hoprag.llm.base.uses_student_prompt` decides on the actor path; the
processor then runs without the chat-template stage (see :mod:`hoprag.llm.vllm_ray_data`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence, Set
from typing import Any

from hoprag.extraction.prompts import ner_prompt, openie_prompt
from hoprag.llm.base import TASK_NER, TASK_OPENIE, Completion
from hoprag.llm.vllm_config import ERROR_COLUMN, VLLMConfig
from hoprag.llm.vllm_ray_data import (
    chat_template_stage_enabled,
    openie_postprocess_row,
    processor_input_columns,
)
from hoprag.llm.vllm_requests import vllm_student_tasks
from indexing.config import ExtractionConfig
from indexing.extract import (
    DocumentAssembler,
    ExtractionRecord,
    PassageJob,
    ner_record,
    plan_passages,
)

logger = logging.getLogger(__name__)

ROW_COLUMNS = ("task", "doc_key", "text")
STAGE_TASKS = (TASK_OPENIE, TASK_NER)


def passage_rows(
    pending: Sequence[tuple[str, str, str]], config: ExtractionConfig, model_id: str
) -> tuple[list[dict[str, Any]], DocumentAssembler]:
    """One processor row per passage (documents) or question; the assembler that regroups them."""
    docs = [(k, t) for task, k, t in pending if task != TASK_NER]
    records, jobs = plan_passages([k for k, _ in docs], [t for _, t in docs], config, model_id)
    rows: list[dict[str, Any]] = [
        {"doc_id": f"{job.doc_key}#{i}", "task": "openie", "doc_key": job.doc_key, "text": job.passage}
        for i, job in enumerate(jobs)
    ]
    rows += [
        {"doc_id": k, "task": TASK_NER, "doc_key": k, "text": t} for task, k, t in pending if task == TASK_NER
    ]
    return rows, DocumentAssembler(records, jobs)


def make_preprocess(
    style: str,
    max_new_tokens: int,
    student_tasks: Set[str] = frozenset(),
    chat_template: bool = True,
    structured_output: bool = True,
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Row → processor input columns, with the prompt matching the row's task: the student prompt
    for ``student_tasks``; ``chat_template=False`` flattens chat prompts (no chat-template stage);
    ``structured_output``: JSON prompts constrain decoding to their schema."""

    def preprocess(row: dict[str, Any]) -> dict[str, Any]:
        text = str(row["text"])
        task = str(row["task"])
        student = task in student_tasks
        spec = (
            ner_prompt(text, style, student=student)  # type: ignore[arg-type]
            if task == TASK_NER
            else openie_prompt(text, style, max_new_tokens, student=student)  # type: ignore[arg-type]
        )
        return processor_input_columns(spec, chat_template=chat_template, structured_output=structured_output)

    return preprocess


def postprocess(row: dict[str, Any]) -> dict[str, Any]:
    """Processor output row → our columns (also applied to failed rows, which skip Ray's postprocess)."""
    out = openie_postprocess_row(row)
    out.update({k: row.get(k) for k in ROW_COLUMNS})
    return out


def finalize(row: dict[str, Any]) -> dict[str, Any]:
    return postprocess(row) if row.get(ERROR_COLUMN) else row


def fold_result(
    row: dict[str, Any],
    assembler: DocumentAssembler,
    style: str,
    ner_model_id: str,
    student_tasks: Set[str] = frozenset(),
) -> ExtractionRecord | None:
    """Turn one generated row into a finished record (NER rows, or a document's last passage);
    ``student_tasks`` as given to :func:`make_preprocess` (the output format follows the prompt)."""
    completion = Completion(
        text=str(row.get("raw_output") or ""),
        prompt_tokens=int(row.get("prompt_tokens") or 0),
        completion_tokens=int(row.get("completion_tokens") or 0),
        finish_reason="error" if row.get("error") else "stop",
        error=row.get("error") or None,
    )
    text = str(row["text"])
    if row["task"] == TASK_NER:
        fmt = ner_prompt(text, style, student=TASK_NER in student_tasks).output_format  # type: ignore[arg-type]
        return ner_record(str(row["doc_key"]), text, completion, ner_model_id, fmt)
    fmt = openie_prompt(text, style, student=TASK_OPENIE in student_tasks).output_format  # type: ignore[arg-type]
    return assembler.add(PassageJob(str(row["doc_key"]), text), completion, fmt)


def build_vllm_stage(config: VLLMConfig, extraction: ExtractionConfig) -> Callable[[Any], Any]:
    """Dataset of passage/question rows → dataset of generated rows (lazy; needs the vllm extra)."""
    from hoprag.llm.vllm_ray_data import build_ray_data_processor

    student_tasks = vllm_student_tasks(config)
    chat_template = chat_template_stage_enabled(config, STAGE_TASKS)
    if config.prompt_style == "chat" and not chat_template and not set(STAGE_TASKS) <= student_tasks:
        logger.warning(
            "the adapter is a student of %s only: the other tasks' chat prompts are sent flattened "
            "to plain text (no chat template) in the same vLLM processor",
            sorted(student_tasks & set(STAGE_TASKS)),
        )
    processor = build_ray_data_processor(
        config,
        make_preprocess(
            config.prompt_style,
            extraction.max_new_tokens,
            student_tasks,
            chat_template,
            config.structured_output,
        ),
        postprocess,
        require_local_vllm=False,
        chat_template=chat_template,
    )
    return lambda ds: processor(ds).map(finalize)
