"""Teacher outputs for the student's training data, generated with Ray Data and cached.

The teacher answers the same prompts indexing would send it (its own prompt style, few-shot or
chat), passage by passage and question by question, through the indexing extraction stage
(:func:`indexing.pipeline.run_extraction`) and its resume cache under ``RUN_DIR/teacher``: keys
are indexing's keys (content, teacher model id, prompt version, chunking), so a re-run, or a
larger sample later, pays the teacher only for what it has not answered yet.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distillation.config import DistillConfig
from distillation.examples import StudentExample, ner_example, openie_example, teacher_passages
from hoprag.linking.linker import normalize_question
from hoprag.text import content_hash
from indexing.config import IndexConfig
from indexing.extract import TASK_NER, TASK_OPENIE, extraction_key, ner_key

logger = logging.getLogger(__name__)

TEACHER_DIR = "teacher"


@dataclass
class TeacherReport:
    """What the teacher was asked, and how much came from the cache."""

    passages: int = 0
    questions: int = 0
    asked_now: int = 0
    from_cache: int = 0
    failed: int = 0
    teacher: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def teacher_examples(
    documents: list[str], questions: list[str], config: DistillConfig, run_dir: Path
) -> tuple[list[StudentExample], TeacherReport]:
    """The student's examples of every configured task, from (cached) teacher outputs."""
    from hoprag.llm.factory import expected_model_id
    from indexing.cache import ExtractionCache
    from indexing.pipeline import run_extraction

    model_id = expected_model_id(config.teacher)
    report = TeacherReport(teacher=model_id)
    extraction = config.extraction.model_copy(update={"mode": "one_step"})
    rows: list[tuple[str, str, str, str]] = []  # (task, cache key, example key, text)
    if TASK_OPENIE in config.tasks:
        for key, passage in teacher_passages(documents, extraction):
            rows.append(
                (TASK_OPENIE, extraction_key(content_hash(passage), model_id, extraction), key, passage)
            )
        report.passages = len(rows)
    if TASK_NER in config.tasks:
        texts = list(dict.fromkeys(normalize_question(q) for q in questions if normalize_question(q)))
        rows += [(TASK_NER, ner_key(t, model_id), content_hash(TASK_NER, t), t) for t in texts]
        report.questions = len(texts)
    cache = ExtractionCache(run_dir / TEACHER_DIR)
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
    if report.failed:
        logger.warning("the teacher failed on %d of %d inputs; they are left out", report.failed, len(rows))
    return examples, report
