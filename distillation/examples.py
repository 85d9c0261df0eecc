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
from hoprag.planner.prompts import PLACEHOLDER, UNKNOWN, answer_prompt, numbered, plan_prompt, update_prompt
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


@dataclass(frozen=True)
class GoldStep:
    """One step of a question's gold plan (a question record's ``plan``, written by ``hoprag generate``):
    a one-hop question, what it finds, and the ``[placeholder]`` later steps name that answer by."""

    step: str
    answer: str
    ref: str | None = None


def gold_plan(record: dict[str, object]) -> list[GoldStep] | None:
    """A question record's gold plan, or ``None`` when it has none or it is malformed (a step without
    text or answer, a placeholder that names no earlier step)."""
    raw = record.get("plan")
    if not isinstance(raw, list) or not raw:
        return None
    steps: list[GoldStep] = []
    refs: set[str] = set()
    for item in raw:
        if not isinstance(item, dict):
            return None
        step, answer, ref = (
            str(item.get("step") or "").strip(),
            str(item.get("answer") or "").strip(),
            item.get("ref"),
        )
        if not step or not answer or "\n" in step or any(p not in refs for p in PLACEHOLDER.findall(step)):
            return None
        if ref is not None:
            refs.add(str(ref))
        steps.append(GoldStep(step, answer, None if ref is None else str(ref)))
    return steps


def plan_example(key: str, question: str, plan: Sequence[GoldStep]) -> StudentExample:
    """The planner's plan prompt for one question, continued by its gold steps (numbered lines, then
    the blank line that stops the prompt)."""
    prompt = plan_prompt(question, "completion", student=True).prompt
    return StudentExample(TASK_PLAN, key, str(prompt), numbered([s.step for s in plan]) + "\n\n")


def update_examples(
    key: str, question: str, answer: str, plan: Sequence[GoldStep], unknown_step: int | None = None
) -> list[StudentExample]:
    """The planner's update prompts along the gold plan, as a planner whose every step found its gold
    answer would send them (``skip_needless_updates``: after a step only while a remaining step names a
    ``[placeholder]``, and after the last step): the targets rewrite the remaining steps with the found
    answers in place of their placeholders, and give ``Final answer: ANSWER`` after the last step.

    ``unknown_step``: that step (one whose answer later steps need) found nothing; its finding is
    ``unknown`` and the rewrite replaces its placeholder by the description itself ("Who directed the
    film written by X?"), a question that still names what to search for, instead of a name."""
    current = [s.step for s in plan]
    filled: dict[str, str] = {}
    found: list[tuple[str, str]] = []
    examples: list[StudentExample] = []
    for k, step in enumerate(plan):
        unknown = k == unknown_step and step.ref is not None
        found.append((current[k], UNKNOWN if unknown else step.answer))
        if step.ref is not None:
            filled[step.ref] = step.ref[1:-1] if unknown else step.answer
        remaining = current[k + 1 :]
        if remaining and not any(PLACEHOLDER.search(r) for r in remaining):
            continue
        if remaining:
            rewritten = [PLACEHOLDER.sub(lambda m: filled.get(m.group(0), m.group(0)), r) for r in remaining]
            target = numbered(rewritten, k + 2)
            current = current[: k + 1] + rewritten
        else:
            target = f"Final answer: {answer}"
        prompt = update_prompt(question, found, remaining, "completion", student=True).prompt
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
