"""Teacher outputs for the student's training data, generated with Ray Data and cached.

The teacher answers the same prompts indexing would send it (its own prompt style, few-shot or
chat), passage by passage and question by question, through the indexing extraction stage
(:func:`indexing.pipeline.run_extraction`) and its resume cache under ``RUN_DIR/teacher``: keys
are indexing's keys (content, teacher model id, prompt version, chunking), so a re-run, or a
larger sample later, pays the teacher only for what it has not answered yet.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distillation.config import DistillConfig
from distillation.examples import (
    ContextDocument,
    StudentExample,
    answer_example,
    ner_example,
    openie_example,
    plan_example,
    teacher_passages,
    update_examples,
)
from distillation.teacher_set import teacher_cache
from hoprag.linking.linker import normalize_question
from hoprag.llm.base import TASK_ANSWER, TASK_NER, TASK_OPENIE, TASK_PLAN, TASK_UPDATE
from hoprag.planner.gold import gold_plan
from hoprag.text import content_hash
from indexing.config import IndexConfig
from indexing.corpus import Document
from indexing.extract import ExtractionRecord, extraction_key, ner_key, split_passages

logger = logging.getLogger(__name__)


@dataclass
class TeacherReport:
    """What the teacher was asked, and how much came from the cache."""

    passages: int = 0
    questions: int = 0
    asked_now: int = 0
    from_cache: int = 0
    failed: int = 0
    answers: int = 0
    answers_skipped: int = 0  # questions without an answer or without a supporting document here
    plans: int = 0  # questions whose gold plan taught the plan and/or update task
    plans_skipped: int = 0  # questions without a usable gold plan or answer
    teacher: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def teacher_examples(
    documents: list[Document], questions: list[dict[str, Any]], config: DistillConfig, run_dir: Path
) -> tuple[list[StudentExample], TeacherReport]:
    """The student's examples of every configured task, from (cached) teacher outputs.

    ``openie`` / ``ner``: the teacher's triples per passage and mentions per question. ``answer``:
    the questions' gold answers, in a context of documents and the teacher's triples of them (so
    the teacher extracts the documents' triples for it even when ``openie`` is not trained).
    ``plan`` / ``update``: the questions' gold search plans (:func:`plan_examples`)."""
    from hoprag.llm.factory import expected_model_id
    from indexing.pipeline import run_extraction

    model_id = expected_model_id(config.teacher)
    report = TeacherReport(teacher=model_id)
    extraction = config.extraction.model_copy(update={"mode": "one_step"})
    rows: list[tuple[str, str, str, str]] = []  # (task, cache key, example key, text)
    if TASK_OPENIE in config.tasks or TASK_ANSWER in config.tasks:
        for key, passage in teacher_passages([d.text for d in documents], extraction):
            rows.append(
                (TASK_OPENIE, extraction_key(content_hash(passage), model_id, extraction), key, passage)
            )
        report.passages = len(rows)
    if TASK_NER in config.tasks:
        asked = (normalize_question(str(q.get("question", ""))) for q in questions)
        texts = list(dict.fromkeys(t for t in asked if t))
        rows += [(TASK_NER, ner_key(t, model_id), content_hash(TASK_NER, t), t) for t in texts]
        report.questions = len(texts)
    cache = teacher_cache(run_dir)
    cached = cache.load()
    pending = list({key: (task, key, text) for task, key, _, text in rows if key not in cached}.values())
    report.from_cache = len(rows) - len(pending)
    report.asked_now = len(pending)
    if pending:
        index_config = IndexConfig(llm=config.teacher, extraction=extraction, ray=config.ray)
        for record in run_extraction(pending, index_config, cache):
            cached[record.doc_key] = record
    examples: list[StudentExample] = []
    for task, cache_key, key, text in rows:
        if task == TASK_OPENIE and TASK_OPENIE not in config.tasks:
            continue  # extracted only as the answer task's facts
        record = cached.get(cache_key)
        example = None
        if record is not None:
            example = (
                openie_example(key, text, record, extraction.max_new_tokens)
                if task == TASK_OPENIE
                else ner_example(key, text, record)
            )
        if example is None:
            report.failed += 1
            continue
        examples.append(example)
    if TASK_ANSWER in config.tasks:
        by_passage = {key: cached.get(cache_key) for task, cache_key, key, _ in rows if task == TASK_OPENIE}
        answers = answer_examples(documents, questions, by_passage, config, report)
        examples += answers
    if TASK_PLAN in config.tasks or TASK_UPDATE in config.tasks:
        examples += plan_examples(questions, config, report)
    if report.failed:
        logger.warning("the teacher failed on %d of %d inputs; they are left out", report.failed, len(rows))
    return examples, report


def plan_examples(
    questions: list[dict[str, Any]], config: DistillConfig, report: TeacherReport, required: bool = True
) -> list[StudentExample]:
    """The planner's ``plan`` and ``update`` examples of every question with a gold plan (a question
    record's ``plan``: ``hoprag generate`` writes one, from the question's reasoning chain; a
    published benchmark's, :func:`indexing.formats.plans.published_plan`) and a gold answer. The
    teacher LLM is not asked: the gold chain is the teacher's output here, as the gold answer is for
    the ``answer`` task. ``required``: no question with a plan is an error."""
    examples: list[StudentExample] = []
    seen: set[str] = set()
    for q in questions:
        text = normalize_question(str(q.get("question", "")))
        key = content_hash(TASK_PLAN, text)
        if not text or key in seen:
            continue
        seen.add(key)
        plan = gold_plan(q)
        answer = str(q.get("answer") or "").strip()
        if plan is None or not answer:
            report.plans_skipped += 1
            continue
        report.plans += 1
        if TASK_PLAN in config.tasks:
            examples.append(plan_example(key, text, plan))
        if TASK_UPDATE in config.tasks:
            update_key = content_hash(TASK_UPDATE, text)
            rng = random.Random(update_key)
            needed = [k for k, step in enumerate(plan) if step.ref is not None]
            unknown = rng.choice(needed) if needed and rng.random() < config.update.unknown_fraction else None
            examples += update_examples(update_key, text, answer, plan, unknown)
    if report.plans == 0 and required:
        raise ValueError(
            f"tasks {[t for t in config.tasks if t in (TASK_PLAN, TASK_UPDATE)]} need questions with a gold "
            f"search plan (a `plan` list of {{step, answer, ref}} in the question records, as `hoprag "
            f"generate` writes them); none of the {len(questions)} training questions has one"
        )
    return examples


def answer_examples(
    documents: list[Document],
    questions: list[dict[str, Any]],
    records: dict[str, ExtractionRecord | None],
    config: DistillConfig,
    report: TeacherReport,
) -> list[StudentExample]:
    """One ``answer`` example per question that has an answer and a supporting document here;
    distractors are drawn from the other documents, seeded by the question."""
    extraction = config.extraction

    def context(doc: Document) -> ContextDocument:
        triples: list[tuple[str, str, str]] = []
        for passage in split_passages(doc.text, extraction.max_chunk_chars)[
            : extraction.max_chunks_per_document
        ]:
            record = records.get(content_hash(TASK_OPENIE, passage))
            if record is not None and record.status == "ok":
                triples.extend(tuple(t) for t in record.triples)  # type: ignore[misc]
        return ContextDocument(doc.title, doc.text, tuple(dict.fromkeys(triples)))

    by_title = {d.title: d for d in documents}
    position = {d.title: i for i, d in enumerate(documents)}
    examples: list[StudentExample] = []
    seen: set[str] = set()
    for q in questions:
        text = normalize_question(str(q.get("question", "")))
        answer = str(q.get("answer") or "").strip()
        titles = [t for t in dict.fromkeys(q.get("supporting_facts") or []) if t in by_title]
        key = content_hash(TASK_ANSWER, text)
        if not text or key in seen:
            continue
        seen.add(key)
        if not answer or not titles:
            report.answers_skipped += 1
            continue
        rng = random.Random(key)
        others = WithoutPositions(documents, [position[t] for t in titles])
        distractors = rng.sample(others, min(config.answer.distractor_documents, len(others)))
        supporting = [context(by_title[t]) for t in titles]
        examples.append(
            answer_example(key, text, answer, supporting, [context(d) for d in distractors], config.answer)
        )
    report.answers = len(examples)
    return examples


class WithoutPositions(Sequence[Document]):
    """``items`` without the ones at ``excluded`` positions, as a read-only view: a question's
    distractor pool in O(supporting documents) instead of a copy of the corpus per question.
    ``random.sample`` draws from it exactly what it draws from the equivalent list."""

    def __init__(self, items: Sequence[Document], excluded: Sequence[int]) -> None:
        self._items = items
        self._excluded = sorted(set(excluded))

    def __len__(self) -> int:
        return len(self._items) - len(self._excluded)

    def __getitem__(self, index: int) -> Document:  # type: ignore[override]
        if not 0 <= index < len(self):
            raise IndexError(index)
        # the item at ``index`` of the view is the first position p with p - (excluded <= p) == index
        position = index
        for excluded in self._excluded:
            if excluded <= position:
                position += 1
            else:
                break
        return self._items[position]
