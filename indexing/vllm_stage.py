"""The LLM stage on GPUs: vLLM replicas inside Ray Data via a ``ray.data.llm`` processor.

Same prompts, parsers, cache and records as the actor path (:mod:`indexing.extract`): documents
are split into passages (one row each), questions become NER rows, the processor generates, and a
:class:`~indexing.extract.DocumentAssembler` in the driver folds passages back into documents as
batches stream in, each finished document written to the resume cache right away.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hoprag.extraction.prompts import ner_prompt, openie_prompt
from hoprag.llm.base import Completion
from hoprag.llm.vllm_backend import ERROR_COLUMN, VLLMConfig, openie_postprocess_row, processor_input_columns
from indexing.config import ExtractionConfig
from indexing.extract import (
    TASK_NER,
    DocumentAssembler,
    ExtractionRecord,
    PassageJob,
    ner_record,
    plan_passages,
)

ROW_COLUMNS = ("task", "doc_key", "text")


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


def make_preprocess(style: str, max_new_tokens: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Row → processor input columns, with the prompt matching the row's task."""

    def preprocess(row: dict[str, Any]) -> dict[str, Any]:
        text = str(row["text"])
        spec = (
            ner_prompt(text, style) if row["task"] == TASK_NER else openie_prompt(text, style, max_new_tokens)
        )  # type: ignore[arg-type]
        return processor_input_columns(spec)

    return preprocess


def postprocess(row: dict[str, Any]) -> dict[str, Any]:
    """Processor output row → our columns (also applied to failed rows, which skip Ray's postprocess)."""
    out = openie_postprocess_row(row)
    out.update({k: row.get(k) for k in ROW_COLUMNS})
    return out


def finalize(row: dict[str, Any]) -> dict[str, Any]:
    return postprocess(row) if row.get(ERROR_COLUMN) else row


def fold_result(
    row: dict[str, Any], assembler: DocumentAssembler, style: str, model_id: str
) -> ExtractionRecord | None:
    """Turn one generated row into a finished record (NER rows, or a document's last passage)."""
    completion = Completion(
        text=str(row.get("raw_output") or ""),
        prompt_tokens=int(row.get("prompt_tokens") or 0),
        completion_tokens=int(row.get("completion_tokens") or 0),
        finish_reason="error" if row.get("error") else "stop",
        error=row.get("error") or None,
    )
    text = str(row["text"])
    if row["task"] == TASK_NER:
        fmt = ner_prompt(text, style).output_format  # type: ignore[arg-type]
        return ner_record(str(row["doc_key"]), text, completion, model_id, fmt)
    fmt = openie_prompt(text, style).output_format  # type: ignore[arg-type]
    return assembler.add(PassageJob(str(row["doc_key"]), text), completion, fmt)


def build_vllm_stage(config: VLLMConfig, extraction: ExtractionConfig) -> Callable[[Any], Any]:
    """Dataset of passage/question rows → dataset of generated rows (lazy; needs the vllm extra)."""
    from hoprag.llm.vllm_backend import build_ray_data_processor

    processor = build_ray_data_processor(
        config,
        make_preprocess(config.prompt_style, extraction.max_new_tokens),
        postprocess,
        require_local_vllm=False,
    )
    return lambda ds: processor(ds).map(finalize)
