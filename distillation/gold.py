"""Student examples from real prose: a teacher's triples corrected by a benchmark's gold facts.

A generated corpus teaches the student its generator's relations only; on Wikipedia prose it then
forces them onto real facts (a mother becomes ``born in``). The published multi-hop benchmarks
state, for their *training* questions, the facts their paragraphs hold (2WikiMultihopQA's
``evidences``, MuSiQue's ``SUBJECT >> relation`` steps: :mod:`indexing.formats.gold`). For each
supporting paragraph of a training question:

1. the teacher (any backend; by default the packaged student) extracts its triples, through
   indexing's extraction stage and the distillation teacher cache;
2. every gold fact whose subject and object the paragraph names is put in: a teacher triple that
   links the pair (loosely, either direction) takes the gold relation and direction, and each name
   is written as the paragraph spells the gold name (the teacher's spelling where it does not); a
   fact no triple links is added with the paragraph's spelling of both names; a fact whose names
   the paragraph does not spell out is left out (counted);
3. the teacher's other triples stay as they are; with ``gold.drop_unstated``, only those whose
   relation the paragraph states: a content word of the relation shares its first four letters
   with a word of the paragraph (``directed by`` for "directed by"; not ``born in`` for "son of").
   Measured worse (docs/distillation.md, "Real prose"): it also drops the dates of parentheticals
   ("(November 11, 1890 – July 10, 1958)"), and the student learns to leave them out.

Questions are split into train and test by a hash of their id
(:func:`indexing.formats.reader.train_test_split`), as ``hoprag index --train-fraction`` and
``hoprag bench evidences --train-fraction`` split them with the same fraction: only training
questions teach, and a paragraph that supports any test question is never shown to the student,
not even as an answer prompt's distractor.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from distillation.config import DistillConfig, GoldSource
from distillation.examples import StudentExample, openie_example, teacher_passages
from hoprag.llm.base import TASK_ANSWER, TASK_OPENIE, TASK_PLAN, TASK_UPDATE
from hoprag.text import content_hash, normalize_entity
from indexing.corpus import Document
from indexing.extract import ExtractionRecord, extraction_key
from indexing.formats.gold import (
    Triple,
    committee_triples,
    gold_facts,
    links_pair,
    names_match,
    normalize_argument,
)

# Words that carry no relation of their own ("born in" is grounded by "born", not by "in").
_FUNCTION_WORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "by",
        "to",
        "for",
        "from",
        "with",
        "as",
        "and",
        "or",
        "is",
        "was",
        "are",
        "were",
        "be",
        "been",
        "has",
        "had",
        "have",
        "its",
        "his",
        "her",
        "their",
        "who",
        "which",
        "that",
    }
)
_STEM = 4
_TRAILING_PARENTHETICAL = re.compile(r"\s*\([^()]*\)\s*$")


@dataclass
class GoldReport:
    """What the gold sources gave (``summary.json``'s ``gold``)."""

    sources: list[str] = field(default_factory=list)
    train_questions: int = 0
    test_questions: int = 0
    paragraphs: int = 0
    paragraphs_held_out: int = 0  # a test question's supporting paragraphs and held-out titles: never shown
    passages: int = 0
    facts: int = 0  # distinct gold facts of the training questions
    facts_taught: set[Triple] = field(default_factory=set)  # put into at least one passage
    # per (passage, fact) that names the fact's subject or object:
    relabelled: int = 0  # a teacher triple linked the pair; it took the gold relation
    added: int = 0  # no triple linked it; the passage spells both names
    unspelled: int = 0  # no triple linked it and the passage does not spell one name: left out
    teacher_triples_kept: int = 0
    teacher_triples_dropped: int = 0  # relation not stated in the paragraph
    teacher_failed: int = 0
    committee_triples_added: int = 0  # the extra teachers' triples on pairs the first teacher did not link
    plans: int = 0  # training questions whose published chain taught the plan / update tasks
    plans_skipped: int = 0  # training questions that state no chain (HotpotQA) or a malformed one
    step_questions: int = 0  # steps of those chains asked as answer-prompt questions (gold.step_answers)
    relations: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["relations"] = dict(self.relations.most_common())
        out["facts_taught"] = len(self.facts_taught)
        return out


@dataclass
class GoldParagraphs:
    """The training side of the gold sources: paragraphs, their facts, and the training questions."""

    documents: list[Document]
    facts: dict[str, list[Triple]]  # title -> gold facts of the training questions it supports
    questions: list[dict[str, Any]]
    distractor_pool: list[Document]  # what answer prompts may show beside: no test question's paragraph


def spelled_name(name: str, passage: str) -> str | None:
    """The passage's own spelling of ``name`` (case-insensitive, whole words), also tried without a
    trailing parenthetical ("Charles Miller (director)"); ``None`` when the passage does not spell it."""
    for candidate in dict.fromkeys((name.strip(), _TRAILING_PARENTHETICAL.sub("", name).strip())):
        if candidate:
            found = re.search(rf"(?<!\w){re.escape(candidate)}(?!\w)", passage, re.IGNORECASE)
            if found:
                return found.group(0)
    return None


def relation_stated(relation: str, passage_words: set[str]) -> bool:
    """Whether a content word of ``relation`` shares its first four letters with a passage word (a
    relation of function words only counts as stated). ``passage_words``: :func:`word_stems`."""
    words = [w for w in normalize_entity(relation).split() if w not in _FUNCTION_WORDS and len(w) > 2]
    return not words or any(w[:_STEM] in passage_words for w in words)


def word_stems(passage: str) -> set[str]:
    """The first four letters of every word of ``passage`` (normalized)."""
    return {w[:_STEM] for w in normalize_entity(passage).split()}


def corrected_triples(
    passage: str,
    triples: Sequence[Triple],
    facts: Sequence[Triple],
    report: GoldReport,
    drop_unstated: bool = False,
) -> list[Triple]:
    """The teacher's ``triples`` of ``passage`` with ``facts`` put in (module docstring, steps 2–3;
    step 3 only with ``drop_unstated``)."""
    remaining = [tuple(t) for t in triples]
    gold: list[Triple] = []
    for fact in facts:
        linked = [t for t in remaining if links_pair(fact, t, loose=True)]  # type: ignore[arg-type]
        subject, obj = spelled_name(fact[0], passage), spelled_name(fact[2], passage)
        if linked:
            s, _, o = linked[0]
            if not names_match(normalize_argument(s), normalize_argument(fact[0]), loose=True):
                s, o = o, s
            # the passage's spelling of the gold name where it has one: the teacher's may be cut
            # short ("1890" for "November 11, 1890")
            subject, obj = subject or s, obj or o
            remaining = [t for t in remaining if t not in linked]
            report.relabelled += 1
        elif subject is None or obj is None:
            report.unspelled += 1
            continue
        else:
            report.added += 1
        report.relations[fact[1]] += 1
        report.facts_taught.add(fact)
        gold.append((subject, fact[1], obj))
    kept = remaining
    if drop_unstated:
        stems = word_stems(passage)
        kept = [t for t in remaining if relation_stated(t[1], stems)]
    report.teacher_triples_kept += len(kept)
    report.teacher_triples_dropped += len(remaining) - len(kept)
    return list(dict.fromkeys([*gold, *kept]))  # type: ignore[list-item]


def gold_paragraphs(
    sources: Sequence[GoldSource], report: GoldReport, held_out: frozenset[str] = frozenset()
) -> GoldParagraphs:
    """Read every source; keep training questions with gold facts and their supporting paragraphs.
    A paragraph titled in ``held_out`` (the config's ``held_out_titles``) is never kept, as a test
    question's paragraphs are not."""
    from indexing.formats import read_published

    documents: dict[str, Document] = {}
    facts: dict[str, list[Triple]] = {}
    questions: list[dict[str, Any]] = []
    others: dict[str, Document] = {}
    distinct: set[Triple] = set()
    for source in sources:
        corpus = read_published(Path(source.path), source.format, source.train_fraction)
        report.sources.append(f"{source.path} ({corpus.format})")
        by_title = {d.title: d for d in corpus.documents}
        test = corpus.questions.get("test", [])
        train = corpus.questions.get("train", [])
        report.train_questions += len(train)
        report.test_questions += len(test)
        unseen = {t for q in test for t in q.get("supporting_facts") or []}
        unseen |= held_out & by_title.keys()
        report.paragraphs_held_out += len(unseen)
        for q in train:
            titles = [t for t in q.get("supporting_facts") or [] if t in by_title and t not in unseen]
            if not titles:
                continue
            questions.append(q)
            for title in titles:
                documents.setdefault(title, by_title[title])
                facts.setdefault(title, [])
            for fact in gold_facts(q):
                distinct.add(fact)
                for title in titles:
                    if fact not in facts[title] and _names_either(fact, by_title[title].text):
                        facts[title].append(fact)
        others.update({d.title: d for d in corpus.documents if d.title not in unseen})
    report.paragraphs = len(documents)
    report.facts = len(distinct)
    return GoldParagraphs(list(documents.values()), facts, questions, distractor_pool=list(others.values()))


def _names_either(fact: Triple, text: str) -> bool:
    """Whether a paragraph may hold the fact: it names its subject or object (the other name may be
    spelled another way, and the teacher's triple may still link it loosely)."""
    return spelled_name(fact[0], text) is not None or spelled_name(fact[2], text) is not None


def gold_examples(config: DistillConfig, run_dir: Path) -> tuple[list[StudentExample], GoldReport]:
    """The real-prose examples of ``config.gold``: one
    ``openie`` example per passage of a training paragraph with the corrected triples; with
    ``gold.answer`` and the ``answer`` task, one answer example per training question (with
    ``gold.step_answers``, also one per step of its published chain: :func:`gold_step_questions`); with the
    ``plan`` / ``update`` tasks, those of every training question whose benchmark states its chain
    (:func:`gold_plan_examples`). The teacher extracts only when ``openie`` or ``answer`` needs it."""
    from distillation.held_out import held_out_titles
    from distillation.teacher import TeacherReport, answer_examples
    from distillation.teacher_set import teacher_cache
    from hoprag.llm.factory import expected_model_id
    from indexing.config import IndexConfig
    from indexing.extract import split_passages
    from indexing.pipeline import run_extraction

    settings = config.gold
    report = GoldReport()
    if not settings.sources:
        return [], report
    paragraphs = gold_paragraphs(settings.sources, report, held_out_titles(config.held_out_titles))
    planned = gold_plan_examples(paragraphs.questions, config, report)
    steps = gold_step_questions(paragraphs.questions, report) if settings.step_answers else []
    teaches_answer = (settings.answer or bool(steps)) and TASK_ANSWER in config.tasks
    if TASK_OPENIE not in config.tasks and not teaches_answer:
        return planned, report
    extraction = config.extraction.model_copy(update={"mode": "one_step"})
    passages = teacher_passages([d.text for d in paragraphs.documents], extraction)
    report.passages = len(passages)
    cache = teacher_cache(run_dir)
    cached = cache.load()
    answers: list[dict[str, ExtractionRecord | None]] = []  # per teacher (the first is `teacher`)
    for teacher in [settings.teacher, *settings.extra_teachers]:
        model_id = expected_model_id(teacher)
        keys = {key: extraction_key(content_hash(p), model_id, extraction) for key, p in passages}
        pending = [(TASK_OPENIE, keys[k], p) for k, p in passages if keys[k] not in cached]
        if pending:
            index_config = IndexConfig(llm=teacher, extraction=extraction, ray=config.ray)
            for record in run_extraction(pending, index_config, cache):
                cached[record.doc_key] = record
        answers.append({key: cached.get(keys[key]) for key, _ in passages})
    facts_of_passage: dict[str, list[Triple]] = {}
    for doc in paragraphs.documents:
        for passage in split_passages(doc.text, extraction.max_chunk_chars)[
            : extraction.max_chunks_per_document
        ]:
            key = content_hash(TASK_OPENIE, passage)
            facts_of_passage.setdefault(key, [])
            for fact in paragraphs.facts[doc.title]:
                if fact not in facts_of_passage[key]:
                    facts_of_passage[key].append(fact)
    examples: list[StudentExample] = []
    corrected: dict[str, ExtractionRecord | None] = {}
    for key, passage in passages:
        record = answers[0][key]
        if record is None or record.status not in ("ok", "no_triples"):
            report.teacher_failed += 1
            corrected[key] = None
            continue
        others = [a[key] for a in answers[1:]]
        taught = committee_triples(
            record.triples, [r.triples for r in others if r is not None and r.status == "ok"]
        )
        report.committee_triples_added += len(taught) - len(record.triples)
        facts = [f for f in facts_of_passage.get(key, []) if _names_either(f, passage)]
        triples = corrected_triples(passage, taught, facts, report, settings.drop_unstated)
        fixed = replace(record, status="ok" if triples else "no_triples", triples=[list(t) for t in triples])
        corrected[key] = fixed
        example = openie_example(key, passage, fixed, extraction.max_new_tokens)
        if example is not None and TASK_OPENIE in config.tasks:
            examples.append(example)
    if teaches_answer:
        teacher_report = TeacherReport()
        context = list({d.title: d for d in [*paragraphs.documents, *paragraphs.distractor_pool]}.values())
        asked = [*(paragraphs.questions if settings.answer else []), *steps]
        examples += answer_examples(context, asked, corrected, config, teacher_report)
    return examples + planned, report


def gold_step_questions(questions: Sequence[dict[str, Any]], report: GoldReport) -> list[dict[str, Any]]:
    """The steps of the training questions' published chains as questions for the answer prompt
    (:func:`indexing.formats.plans.published_steps`: earlier answers filled in, the step's own
    supporting paragraph): what the planner's step answers are asked."""
    from indexing.formats.plans import published_steps

    out = [
        {"id": f"{q.get('id')}#step{k}", **step}
        for q in questions
        for k, step in enumerate(published_steps(q) or [], start=1)
    ]
    report.step_questions = len(out)
    return out


def gold_plan_examples(
    questions: Sequence[dict[str, Any]], config: DistillConfig, report: GoldReport
) -> list[StudentExample]:
    """``plan`` / ``update`` examples of the training questions whose benchmark states their chain
    (MuSiQue's decomposition, 2Wiki's evidences: :func:`indexing.formats.plans.published_plan`);
    none unless those tasks are asked for."""
    from distillation.teacher import TeacherReport, plan_examples
    from indexing.formats.plans import published_plan

    if TASK_PLAN not in config.tasks and TASK_UPDATE not in config.tasks:
        return []
    planned = [{**q, "plan": plan} for q in questions if (plan := published_plan(q)) is not None]
    teacher_report = TeacherReport()
    examples = plan_examples(planned, config, teacher_report, required=False)
    report.plans = teacher_report.plans
    report.plans_skipped = len(questions) - teacher_report.plans
    return examples
