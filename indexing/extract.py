"""The LLM OpenIE stage: a Ray Data callable class around a pure batch function.

:func:`extract_documents` is the whole transform (passages → prompts → one batched LLM call →
parsed triples) and is shared by the Ray Data actor (:class:`OpenIEExtractor`) and the sequential
baseline in the benchmark, so both measure the same work.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hoprag.extraction.parsing import DocumentStatus, Triple, parse_entity_list, parse_openie_output
from hoprag.extraction.prompts import PROMPT_VERSION, ner_prompt, openie_prompt
from hoprag.llm.base import LLM, TASK_NER, TASK_OPENIE, Completion, task_model_id, uses_student_prompt
from hoprag.text import content_hash
from indexing.config import ExtractionConfig

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_passages(text: str, max_chars: int) -> list[str]:
    """Split at sentence boundaries into passages of at most ``max_chars`` (hard-split longer sentences)."""
    text = text.strip()
    if len(text) <= max_chars:
        return [text] if text else []
    passages: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(text):
        while len(sentence) > max_chars:
            cut = sentence.rfind(" ", 0, max_chars)
            cut = cut if cut > 0 else max_chars
            if current:
                passages.append(current)
                current = ""
            passages.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if current and len(current) + 1 + len(sentence) > max_chars:
            passages.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        passages.append(current)
    return passages


def extraction_model_id(model_id_for: Callable[[str], str], config: ExtractionConfig) -> str:
    """The model id in a document's extraction-cache key: that of the weights serving OpenIE
    (``model_id_for(task)``, e.g. :func:`hoprag.llm.factory.expected_model_id` of the config and
    the task), and in two-step mode also of those serving the passages' NER when they differ. A
    student added for another task (the planner's) leaves the key, and the cache, as they were."""
    openie = model_id_for(TASK_OPENIE)
    if config.mode != "two_step":
        return openie
    ner = model_id_for(TASK_NER)
    return openie if ner == openie else f"{ner}|{openie}"


def extraction_key(document_hash: str, model_id: str, config: ExtractionConfig) -> str:
    """Cache key of one document's extraction: its content, the model, the prompt and chunking."""
    return content_hash(
        document_hash,
        model_id,
        PROMPT_VERSION,
        config.mode,
        str(config.max_chunk_chars),
        str(config.max_new_tokens),
    )


@dataclass
class ExtractionRecord:
    """One document's extraction result, as stored in the resume cache."""

    doc_key: str
    status: DocumentStatus
    model_id: str
    triples: list[Triple] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    raw_output: str = ""
    clean: int = 0
    repaired: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    truncated_passages: int = 0
    error: str | None = None
    seconds: float = 0.0

    def to_row(self) -> dict[str, Any]:
        return {
            "doc_key": self.doc_key,
            "status": self.status,
            "model_id": self.model_id,
            "prompt_version": PROMPT_VERSION,
            "triples_json": json.dumps([list(t) for t in self.triples], ensure_ascii=False),
            "entities_json": json.dumps(self.entities, ensure_ascii=False),
            "raw_output": self.raw_output,
            "clean": self.clean,
            "repaired": self.repaired,
            "dropped_json": json.dumps(dict(self.dropped), sort_keys=True),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "llm_calls": self.llm_calls,
            "truncated_passages": self.truncated_passages,
            "error": self.error or "",
            "seconds": self.seconds,
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ExtractionRecord:
        return cls(
            doc_key=row["doc_key"],
            status=row["status"],
            model_id=row["model_id"],
            triples=[(t[0], t[1], t[2]) for t in json.loads(row["triples_json"])],
            entities=json.loads(row["entities_json"]),
            raw_output=row["raw_output"],
            clean=int(row["clean"]),
            repaired=int(row["repaired"]),
            dropped=Counter(json.loads(row["dropped_json"])),
            prompt_tokens=int(row["prompt_tokens"]),
            completion_tokens=int(row["completion_tokens"]),
            llm_calls=int(row["llm_calls"]),
            truncated_passages=int(row["truncated_passages"]),
            error=row["error"] or None,
            seconds=float(row["seconds"]),
        )


def _merge_passage(record: ExtractionRecord, passage: str, completion: Completion, fmt: str) -> str | None:
    """Fold one passage's completion into its document's record; return the parse status."""
    record.prompt_tokens += completion.prompt_tokens
    record.completion_tokens += completion.completion_tokens
    record.llm_calls += 1
    if not completion.ok:
        record.error = record.error or completion.error
        return None
    record.raw_output = (
        (record.raw_output + "\n\n" + completion.text).strip() if record.raw_output else completion.text
    )
    parsed = parse_openie_output(completion.text, passage, fmt)
    record.dropped.update(parsed.dropped)
    if parsed.status != "ok":
        record.dropped[f"passage_{parsed.status}"] += 1
    if parsed.output_repaired:  # kept with the drop reasons: the cache's columns stay as they are
        record.dropped["passage_json_repaired"] += 1
    seen = {(t[0].lower(), t[1].lower(), t[2].lower()) for t in record.triples}
    for t in parsed.triples:
        key = (t[0].lower(), t[1].lower(), t[2].lower())
        if key not in seen:
            seen.add(key)
            record.triples.append(t)
    record.clean += parsed.clean
    record.repaired += parsed.repaired
    for e in parsed.entities:
        if e not in record.entities:
            record.entities.append(e)
    return parsed.status


def _final_status(record: ExtractionRecord, raw_statuses: list[str]) -> DocumentStatus:
    if record.error is not None:
        return "llm_error"
    if record.triples:
        return "ok"
    if raw_statuses and all(s == "empty_output" for s in raw_statuses):
        return "empty_output"
    if raw_statuses and all(s == "unparseable" for s in raw_statuses):
        return "unparseable"
    return "no_triples"


@dataclass
class PassageJob:
    """One prompt's worth of a document."""

    doc_key: str
    passage: str


def plan_passages(
    doc_keys: Sequence[str], texts: Sequence[str], config: ExtractionConfig, model_id: str
) -> tuple[list[ExtractionRecord], list[PassageJob]]:
    """Split documents into passages; empty documents are finished records right away."""
    records, jobs = [], []
    for key, text in zip(doc_keys, texts, strict=True):
        record = ExtractionRecord(doc_key=key, status="ok", model_id=model_id)
        passages = split_passages(text, config.max_chunk_chars)
        if not passages:
            record.status = "empty_document"
        record.truncated_passages = max(0, len(passages) - config.max_chunks_per_document)
        records.append(record)
        jobs.extend(PassageJob(key, p) for p in passages[: config.max_chunks_per_document])
    return records, jobs


class DocumentAssembler:
    """Folds passage completions, arriving in any order, into per-document records.

    Used by the in-actor path (:func:`extract_documents`) and by the ``ray.data.llm`` processor
    path, where passages of one document may come back in different batches.
    """

    def __init__(self, records: Sequence[ExtractionRecord], jobs: Sequence[PassageJob]) -> None:
        self._records = {r.doc_key: r for r in records}
        self._remaining: dict[str, int] = {}
        for job in jobs:
            self._remaining[job.doc_key] = self._remaining.get(job.doc_key, 0) + 1
        self._statuses: dict[str, list[str]] = {}
        self._extra_entities: dict[str, list[str]] = {}

    def ready(self) -> list[ExtractionRecord]:
        """Records with nothing to wait for (empty documents)."""
        return [r for k, r in self._records.items() if k not in self._remaining]

    def add_entities(self, doc_key: str, entities: Sequence[str]) -> None:
        """NER mentions (two-step mode) to merge into the document's entities when it finishes."""
        extra = self._extra_entities.setdefault(doc_key, [])
        extra.extend(e for e in entities if e not in extra)

    def add(self, job: PassageJob, completion: Completion, output_format: str) -> ExtractionRecord | None:
        """Fold one passage's completion in; return the document's record once all its passages are in."""
        record = self._records[job.doc_key]
        status = _merge_passage(record, job.passage, completion, output_format)
        if status is not None:
            self._statuses.setdefault(job.doc_key, []).append(status)
        self._remaining[job.doc_key] -= 1
        if self._remaining[job.doc_key] > 0:
            return None
        for e in self._extra_entities.get(job.doc_key, []):
            if e not in record.entities:
                record.entities.append(e)
        record.status = _final_status(record, self._statuses.get(job.doc_key, []))
        return record


def extract_documents(
    llm: LLM, doc_keys: Sequence[str], texts: Sequence[str], config: ExtractionConfig
) -> list[ExtractionRecord]:
    """Run OpenIE over documents with one batched LLM call per step; never raises for bad outputs."""
    started = time.perf_counter()
    style = llm.prompt_style
    model_id = extraction_model_id(lambda task: task_model_id(llm, task), config)
    records, jobs = plan_passages(doc_keys, texts, config, model_id)
    assembler = DocumentAssembler(records, jobs)
    by_key = {r.doc_key: r for r in records}
    if config.mode == "two_step" and jobs:
        student = uses_student_prompt(llm, TASK_NER)
        ner_specs = [ner_prompt(job.passage, style, student=student) for job in jobs]
        ner_out = llm.generate([s.prompt for s in ner_specs], ner_specs[0].params)
        for job, spec, comp in zip(jobs, ner_specs, ner_out, strict=True):
            record = by_key[job.doc_key]
            record.llm_calls += 1
            record.prompt_tokens += comp.prompt_tokens
            record.completion_tokens += comp.completion_tokens
            if comp.ok:
                assembler.add_entities(
                    job.doc_key, parse_entity_list(comp.text, job.passage, spec.output_format)[0]
                )
    if jobs:
        student = uses_student_prompt(llm, TASK_OPENIE)
        specs = [openie_prompt(job.passage, style, config.max_new_tokens, student) for job in jobs]
        outputs = llm.generate([s.prompt for s in specs], specs[0].params)
        for job, spec, comp in zip(jobs, specs, outputs, strict=True):
            assembler.add(job, comp, spec.output_format)
    elapsed = time.perf_counter() - started
    for record in records:
        record.seconds = elapsed / max(1, len(records))
    return records


def ner_key(question: str, model_id: str) -> str:
    """Cache key of one question's NER answer."""
    return content_hash(TASK_NER, question, model_id, PROMPT_VERSION)


def ner_record(
    key: str, question: str, completion: Completion, model_id: str, output_format: str
) -> ExtractionRecord:
    """The cached record of one question's NER answer (mentions grounded in the question)."""
    record = ExtractionRecord(
        doc_key=key,
        status="ok" if completion.ok else "llm_error",
        model_id=model_id,
        raw_output=completion.text,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        llm_calls=1,
        error=completion.error,
    )
    if completion.ok:
        # The mentions are those of hoprag.linking.mentions_from_completion (query-time linking);
        # the drop counts are kept for the index summary.
        record.entities, record.dropped = parse_entity_list(completion.text, question, output_format)
    return record


def extract_question_mentions(
    llm: LLM, keys: Sequence[str], questions: Sequence[str]
) -> list[ExtractionRecord]:
    """NER over questions in one batched call; mentions are grounded in the question text."""
    started = time.perf_counter()
    student = uses_student_prompt(llm, TASK_NER)
    specs = [ner_prompt(q, llm.prompt_style, student=student) for q in questions]
    outputs = llm.generate([s.prompt for s in specs], specs[0].params) if specs else []
    records = [
        ner_record(key, q, comp, task_model_id(llm, TASK_NER), spec.output_format)
        for key, q, spec, comp in zip(keys, questions, specs, outputs, strict=True)
    ]
    for rec in records:
        rec.seconds = (time.perf_counter() - started) / max(1, len(records))
    return records


class LLMExtractor:
    """Ray Data ``map_batches`` transform for both LLM tasks of indexing.

    The model is built once per actor in ``__init__``; ``__call__`` is a pure function of the batch.
    Rows carry ``task`` (``openie`` for documents, ``ner`` for questions), ``doc_key`` and ``text``.
    """

    def __init__(self, llm_config: Any, extraction_config: ExtractionConfig) -> None:
        from hoprag.llm.factory import build_llm

        self.llm = build_llm(llm_config)
        self.config = extraction_config

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        tasks, keys, texts = list(batch["task"]), list(batch["doc_key"]), list(batch["text"])
        by_task: dict[str, list[int]] = {}
        for i, task in enumerate(tasks):
            by_task.setdefault(str(task), []).append(i)
        records: list[ExtractionRecord | None] = [None] * len(keys)
        doc_rows = by_task.get(TASK_OPENIE, [])
        if doc_rows:
            done = extract_documents(
                self.llm, [keys[i] for i in doc_rows], [texts[i] for i in doc_rows], self.config
            )
            for i, rec in zip(doc_rows, done, strict=True):
                records[i] = rec
        q_rows = by_task.get(TASK_NER, [])
        if q_rows:
            done = extract_question_mentions(self.llm, [keys[i] for i in q_rows], [texts[i] for i in q_rows])
            for i, rec in zip(q_rows, done, strict=True):
                records[i] = rec
        rows = [r.to_row() for r in records if r is not None]
        return {name: [row[name] for row in rows] for name in rows[0]} if rows else {}
