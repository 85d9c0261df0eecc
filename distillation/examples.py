"""Student training examples: the student's short prompt → what the teacher answered.

The student is trained per *passage* (the unit indexing prompts the LLM with), so teacher outputs
are collected per passage: :func:`teacher_passages` gives the passages indexing would send. A
target is written in the output format the parsers read (one ``(subject | relation | object)``
line per triple, then the stop sequence; NER mentions joined by ``"; "``), so the student learns
to produce exactly what :func:`hoprag.extraction.parsing.parse_openie_output` and
:func:`~hoprag.extraction.parsing.parse_entity_list` accept.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from distillation.config import AnswerTaskSettings
from hoprag.extraction.prompts import ner_prompt, openie_prompt
from hoprag.llm.base import TASK_ANSWER, TASK_NER, TASK_OPENIE, TASK_PLAN, TASK_UPDATE
from hoprag.planner.gold import GoldStep, update_states
from hoprag.planner.prompts import UNKNOWN, answer_prompt, numbered, plan_prompt, update_prompt
from hoprag.text import content_hash
from indexing.config import ExtractionConfig
from indexing.extract import ExtractionRecord, split_passages

TASKS = (TASK_OPENIE, TASK_NER, TASK_ANSWER, TASK_PLAN, TASK_UPDATE)
Triple = tuple[str, str, str]


@dataclass(frozen=True)
class ContextDocument:
    """A document as the answer prompt shows it: title, text, and the teacher's triples of it."""

    title: str
    text: str
    triples: tuple[Triple, ...]


@dataclass(frozen=True)
class StudentExample:
    """One training example: ``prompt`` (the student prompt) continued by ``target``."""

    task: str
    key: str  # the passage's or question's content hash (the teacher cache key's source)
    prompt: str
    target: str


def teacher_passages(documents: Iterable[str], config: ExtractionConfig) -> list[tuple[str, str]]:
    """(key, passage) of every passage indexing would prompt with (deduplicated by content)."""
    seen: dict[str, str] = {}
    for text in documents:
        for passage in split_passages(text, config.max_chunk_chars)[: config.max_chunks_per_document]:
            seen.setdefault(content_hash(TASK_OPENIE, passage), passage)
    return list(seen.items())


def openie_example(
    key: str, passage: str, record: ExtractionRecord, max_new_tokens: int = 192
) -> StudentExample | None:
    """The passage's example from the teacher's record; ``None`` when the teacher failed (a passage
    the teacher found no fact in is kept: the student must learn to answer nothing there)."""
    if record.status not in ("ok", "no_triples"):
        return None
    lines = "".join(f"({h} | {r} | {t})\n" for h, r, t in record.triples)
    prompt = openie_prompt(passage, "completion", max_new_tokens, student=True).prompt
    return StudentExample(TASK_OPENIE, key, prompt, lines + "\n")


def ner_example(key: str, question: str, record: ExtractionRecord) -> StudentExample | None:
    """The question's NER example from the teacher's record (``None`` when the teacher failed)."""
    if record.status != "ok":
        return None
    prompt = ner_prompt(question, "completion", student=True).prompt
    return StudentExample(TASK_NER, key, prompt, " " + "; ".join(record.entities) + "\n")


def answer_example(
    key: str,
    question: str,
    answer: str,
    supporting: Sequence[ContextDocument],
    distractors: Sequence[ContextDocument],
    settings: AnswerTaskSettings,
) -> StudentExample:
    """The answer prompt of retrieve mode for one question, continued by its gold answer.

    Context as retrieve mode assembles it: up to ``context_documents`` texts (cut to
    ``max_document_chars``, ``"title: text"``) and up to ``max_facts`` ``"head | relation | tail"``
    facts. Every supporting document's triples are in the facts (the reasoning chain) with the
    distractors' triples filling the rest; the documents shown are a random mix of supporting and
    distractor documents, so the student learns to read both and to ignore what does not matter.
    With probability ``unknown_fraction`` the question gets only distractors and the target
    ``unknown``. The choices are seeded by ``key``: the same question gets the same example."""
    rng = random.Random(int(hashlib.sha256(key.encode()).hexdigest()[:16], 16))
    unanswerable = rng.random() < settings.unknown_fraction and bool(distractors)
    shown_supporting = [] if unanswerable else list(supporting)
    facts = list(dict.fromkeys(t for d in shown_supporting for t in d.triples))
    noise = [t for t in dict.fromkeys(t for d in distractors for t in d.triples) if t not in facts]
    rng.shuffle(noise)
    facts = (facts + noise)[: settings.max_facts]
    rng.shuffle(facts)
    k = settings.context_documents
    picked: list[ContextDocument] = []
    if shown_supporting:
        picked = rng.sample(shown_supporting, rng.randint(1, min(k, len(shown_supporting))))
    picked += rng.sample(list(distractors), min(k - len(picked), len(distractors)))
    rng.shuffle(picked)
    texts = [f"{d.title}: {d.text[: settings.max_document_chars]}" for d in picked]
    prompt = answer_prompt(question, [" | ".join(t) for t in facts], "completion", texts, student=True)
    target = UNKNOWN if unanswerable else answer
    return StudentExample(TASK_ANSWER, key, str(prompt.prompt), f" {target}\n")


def plan_example(key: str, question: str, plan: Sequence[GoldStep]) -> StudentExample:
    """The planner's plan prompt for one question, continued by its gold steps (numbered lines, then
    the blank line that stops the prompt)."""
    prompt = plan_prompt(question, "completion", student=True).prompt
    return StudentExample(TASK_PLAN, key, str(prompt), numbered([s.step for s in plan]) + "\n\n")


def update_examples(
    key: str, question: str, answer: str, plan: Sequence[GoldStep], unknown_step: int | None = None
) -> list[StudentExample]:
    """The planner's update prompts along the gold plan (:func:`hoprag.planner.gold.update_states`),
    each continued by its right output: the remaining steps rewritten with the found answers in place
    of their placeholders (numbered as the planner numbers them), or ``Final answer: ANSWER`` after
    the last step."""
    examples = []
    for state in update_states(plan, answer, unknown_step):
        if state.final_answer is not None:
            target = f"Final answer: {state.final_answer}"
        else:
            target = numbered(state.rewritten, len(state.found) + 1)
        prompt = update_prompt(question, state.found, state.remaining, "completion", student=True).prompt
        examples.append(StudentExample(TASK_UPDATE, key, str(prompt), target + "\n\n"))
    return examples


def split_held_out(
    examples: Sequence[StudentExample], fraction: float
) -> tuple[list[StudentExample], list[StudentExample]]:
    """(train, held-out): an example is held out by a hash of its key, so the split is stable across
    runs and does not depend on the order or the number of examples."""
    train, held_out = [], []
    for example in examples:
        bucket = int(hashlib.sha256(example.key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        (held_out if bucket < fraction else train).append(example)
    return train, held_out


def data_hash(examples: Iterable[StudentExample]) -> str:
    """A hash of the training data (recorded in student.json; independent of example order)."""
    rows = sorted((e.task, e.key, e.prompt, e.target) for e in examples)
    return content_hash(*(part for row in rows for part in row))[:16]
