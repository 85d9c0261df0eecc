"""Public generation API: result types, ``generate``, ``write_benchmark`` and the shipped sample."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoprag.atomic import atomic_write_text
from hoprag.paths import SAMPLE_CORPUS

from .config import SyntheticConfig
from .documents import render_documents
from .phrasing import TEMPLATES, held_out_template_ids
from .questions import _TOPIC_CLOSE, _TOPIC_OPEN, _aliases, _Question, _QuestionMaker, _ucfirst
from .schema import _TYPES
from .spelling import EXACT, NameMatcher, spelling_variants
from .world import _assign_pronouns, _make_entities, _make_facts, _World


@dataclass(frozen=True)
class WorldEntity:
    """One entity of the synthetic world (one document)."""

    name: str
    type: str
    domain: str
    distractor: bool
    attributes: dict[str, Any]


@dataclass
class SyntheticBenchmark:
    """A generated benchmark: the corpus, the two question splits and the world behind them."""

    config: SyntheticConfig
    corpus: dict[str, str]
    train: list[dict[str, Any]]
    test: list[dict[str, Any]]
    entities: list[WorldEntity] = field(default_factory=list)
    facts: list[tuple[str, str, str]] = field(default_factory=list)
    # Question id -> gold reasoning triples (subject, relation or attribute, object or value).
    reasoning: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    # Document title -> the facts it states, in order (``facts.json``; see ``documents.py``).
    document_facts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # Template ids only test-side documents use, and those documents' titles (entity order).
    held_out_templates: list[str] = field(default_factory=list)
    test_side_documents: list[str] = field(default_factory=list)


def _record(q: _Question, qid: str, names: list[str], spelling: str, question: str) -> dict[str, Any]:
    return {
        "id": qid,
        "question": question,
        "answer": q.answer,
        "answer_aliases": _aliases(q.answer),
        "supporting_facts": [names[d] for d in q.docs],
        "type": q.qtype,
        "hops": len(q.docs),
        "domain": q.domain,
        "supporting_entities": [names[e] for e in q.entities],
        "spelling": spelling,
        "plan": _plan_record(q, question),
    }


def _plan_record(q: _Question, question: str) -> list[dict[str, Any]]:
    """The gold plan as written to the question record: the topic entity is named in every step as
    ``question`` (respelled or not) names it, so the steps read like a split of that question."""
    start, end = q.topic_span
    mention = question[start : len(question) - (len(q.question) - end)]
    marked = _TOPIC_OPEN + q.question[start:end] + _TOPIC_CLOSE

    def fill(text: str) -> str:
        return text.replace(marked, mention)

    return [
        {"step": _ucfirst(fill(p.step)), "answer": p.answer, "ref": fill(p.ref) if p.ref else None}
        for p in q.plan
    ]


def _respell(q: _Question, world: _World, matcher: NameMatcher, rng: random.Random) -> tuple[str, str]:
    """``q``'s text with its topic entity's mention respelled by one variant kind: ``(kind, text)``.

    A kind is a candidate only when one of its variants changes the question and still refers to the
    topic entity alone (:meth:`NameMatcher.resolve`); the kind and then the variant are drawn from
    ``rng``. ``(EXACT, q.question)`` when no kind applies.
    """
    topic = q.entities[0]
    name = world.names[topic]
    start, end = q.topic_span
    assert q.question[start:end] == name, (q.question, name)
    before, after = q.question[:start], q.question[end:]
    options: dict[str, list[str]] = {}
    for kind, variants in spelling_variants(name, world.types[topic]).items():
        texts = []
        for variant in variants:
            if (
                kind == "the_prefix"
                and variant.casefold().startswith("the ")
                and before.casefold().endswith("the ")
            ):
                continue  # never "the the ..."
            text = before + variant + after
            text = _ucfirst(text) if start == 0 else text
            if text != q.question and matcher.resolve(variant) == {name}:
                texts.append(text)
        if texts:
            options[kind] = texts
    if not options:
        return EXACT, q.question
    kind = rng.choice(list(options))
    return kind, rng.choice(options[kind])


def _spellings(
    config: SyntheticConfig, split: str, questions: list[_Question], world: _World, matcher: NameMatcher
) -> list[tuple[str, str]]:
    """``(spelling, question text)`` per question; round(fraction × n) of them respelled.

    The questions to respell are drawn by an RNG of their own, separate from the one that makes questions,
    so every question that keeps its exact spelling is the same as with ``variant_spelling_fraction=0``.
    """
    rng = random.Random(f"hoprag-synthetic:{config.seed}:spelling:{split}")
    count = int(len(questions) * config.variant_spelling_fraction + 0.5)
    chosen = set(rng.sample(range(len(questions)), count))
    return [
        _respell(q, world, matcher, rng) if i in chosen else (EXACT, q.question)
        for i, q in enumerate(questions)
    ]


def generate(config: SyntheticConfig) -> SyntheticBenchmark:
    """Build the world, its documents and the train/test questions described by ``config``.

    Raises ``ValueError`` when the world is too small to hold the requested number of distinct questions.
    """
    world = _World()
    _make_entities(config, world)
    _make_facts(config, world)
    _assign_pronouns(config, world)

    maker = _QuestionMaker(config, world)
    matcher = NameMatcher(world.names)
    train_domains = [d for d in config.domains if d not in config.held_out_domains]
    splits: dict[str, list[dict[str, Any]]] = {"train": [], "test": []}
    reasoning: dict[str, list[tuple[str, str, str]]] = {}
    supporting: dict[str, set[int]] = {}
    for split, count, domains in (
        ("train", config.num_train_questions, train_domains),
        ("test", config.num_test_questions, config.domains),
    ):
        questions = maker.split(count, domains)
        supporting[split] = {d for q in questions for d in q.docs}
        spellings = _spellings(config, split, questions, world, matcher)
        for i, (q, (spelling, text)) in enumerate(zip(questions, spellings, strict=True)):
            qid = f"syn{config.seed}-{split}-{i:06d}"
            splits[split].append(_record(q, qid, world.names, spelling, text))
            reasoning[qid] = q.reasoning

    # Documents come after the questions (their RNGs are separate, so neither changes the other): the
    # test side, where held-out templates go, is the test questions' supporting documents that support
    # no training question.
    held_out = held_out_template_ids(
        config.phrasing.held_out_templates, config.phrasing.held_out_template_fraction
    )
    test_side = supporting["test"] - supporting["train"]
    corpus, document_facts = render_documents(config, world, set(held_out), test_side)

    names = world.names
    entities = []
    for eid, name in enumerate(names):
        etype = world.types[eid]
        attributes: dict[str, Any] = {_TYPES[etype].year_attr: world.years[eid]}
        if world.kind[eid]:
            attributes["kind"] = world.kind[eid].split(" ", 1)[1]
        if etype == "protein":
            attributes["mass_kda"] = world.mass[eid]
        attributes["pronoun"] = world.pronoun[eid]
        entities.append(WorldEntity(name, etype, world.domain(eid), not world.core[eid], attributes))
    facts = [(names[s], r, names[o]) for s, r, o in world.facts]
    return SyntheticBenchmark(
        config,
        corpus,
        splits["train"],
        splits["test"],
        entities,
        facts,
        reasoning,
        document_facts,
        held_out,
        [names[e] for e in sorted(test_side)],
    )


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def _atomic_write(path: Path, text: str) -> None:
    atomic_write_text(path, text, newline="\n")


def write_benchmark(config: SyntheticConfig, out_dir: Path) -> SyntheticBenchmark:
    """Generate the benchmark and write ``out_dir/raw/{dataset_corpus,train,test,world,facts}.json``
    atomically (each file)."""
    bench = generate(config)
    raw = Path(out_dir) / "raw"
    world = {
        "config": config.model_dump(mode="json"),
        "entities": [
            {
                "name": e.name,
                "type": e.type,
                "domain": e.domain,
                "distractor": e.distractor,
                "attributes": e.attributes,
            }
            for e in bench.entities
        ],
        "facts": [list(f) for f in bench.facts],
        "reasoning": {qid: [list(t) for t in triples] for qid, triples in bench.reasoning.items()},
        "phrasing": {
            "templates": {
                tid: {"relation": rel, "kind": phrase.kind, "text": phrase.text}
                for tid, (rel, phrase) in TEMPLATES.items()
            },
            "held_out_templates": bench.held_out_templates,
            "test_side_documents": bench.test_side_documents,
        },
    }
    _atomic_write(raw / "dataset_corpus.json", _dumps(bench.corpus))
    _atomic_write(raw / "train.json", _dumps(bench.train))
    _atomic_write(raw / "test.json", _dumps(bench.test))
    _atomic_write(raw / "world.json", _dumps(world))
    _atomic_write(raw / "facts.json", _dumps(bench.document_facts))
    return bench


SAMPLE_CONFIG = SyntheticConfig(seed=7, num_documents=60, num_train_questions=60, num_test_questions=20)
"""The config of the corpus shipped in ``hoprag/data/sample`` (small enough for a 270M LLM on CPU)."""

SAMPLE_DIR = SAMPLE_CORPUS
"""Benchmark directory of the shipped sample (packaged with the core, ``hoprag/data/sample``: the
demo reads it); its files are in ``SAMPLE_DIR / "raw"``."""
