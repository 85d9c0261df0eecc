"""Public generation API: result types, ``generate``, ``write_benchmark`` and the shipped sample."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import SyntheticConfig
from .questions import _aliases, _Question, _QuestionMaker
from .schema import _TYPES
from .world import _make_entities, _make_facts, _render_documents, _World


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


def _record(q: _Question, qid: str, names: list[str]) -> dict[str, Any]:
    return {
        "id": qid,
        "question": q.question,
        "answer": q.answer,
        "answer_aliases": _aliases(q.answer),
        "supporting_facts": [names[d] for d in q.docs],
        "type": q.qtype,
        "hops": len(q.docs),
        "domain": q.domain,
        "supporting_entities": [names[e] for e in q.entities],
    }


def generate(config: SyntheticConfig) -> SyntheticBenchmark:
    """Build the world, its documents and the train/test questions described by ``config``.

    Raises ``ValueError`` when the world is too small to hold the requested number of distinct questions.
    """
    world = _World()
    _make_entities(config, world)
    _make_facts(config, world)
    corpus = _render_documents(config, world)

    maker = _QuestionMaker(config, world)
    train_domains = [d for d in config.domains if d not in config.held_out_domains]
    splits: dict[str, list[dict[str, Any]]] = {"train": [], "test": []}
    reasoning: dict[str, list[tuple[str, str, str]]] = {}
    for split, count, domains in (
        ("train", config.num_train_questions, train_domains),
        ("test", config.num_test_questions, config.domains),
    ):
        for i, q in enumerate(maker.split(count, domains)):
            qid = f"syn{config.seed}-{split}-{i:06d}"
            splits[split].append(_record(q, qid, world.names))
            reasoning[qid] = q.reasoning

    names = world.names
    entities = []
    for eid, name in enumerate(names):
        etype = world.types[eid]
        attributes: dict[str, Any] = {_TYPES[etype].year_attr: world.years[eid]}
        if world.kind[eid]:
            attributes["kind"] = world.kind[eid].split(" ", 1)[1]
        if etype == "protein":
            attributes["mass_kda"] = world.mass[eid]
        entities.append(WorldEntity(name, etype, world.domain(eid), not world.core[eid], attributes))
    facts = [(names[s], r, names[o]) for s, r, o in world.facts]
    return SyntheticBenchmark(config, corpus, splits["train"], splits["test"], entities, facts, reasoning)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates the file private (0600); benchmark files are meant to be shared and shipped.
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_benchmark(config: SyntheticConfig, out_dir: Path) -> SyntheticBenchmark:
    """Generate the benchmark and write ``out_dir/raw/{dataset_corpus,train,test,world}.json`` atomically."""
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
    }
    _atomic_write(raw / "dataset_corpus.json", _dumps(bench.corpus))
    _atomic_write(raw / "train.json", _dumps(bench.train))
    _atomic_write(raw / "test.json", _dumps(bench.test))
    _atomic_write(raw / "world.json", _dumps(world))
    return bench


SAMPLE_CONFIG = SyntheticConfig(seed=7, num_documents=60, num_train_questions=60, num_test_questions=20)
"""The config of the corpus shipped in ``hoprag/data/sample`` (small enough for a 270M LLM on CPU)."""

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample"
"""Benchmark directory of the shipped sample; its files are in ``SAMPLE_DIR / "raw"``."""
