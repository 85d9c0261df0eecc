"""``hoprag bench extract``: OpenIE precision, recall and F1 against a generated benchmark's true facts.

Each *system* (an LLM backend config) extracts triples from the same documents with indexing's own code
path (:func:`indexing.extract.extract_documents`: the versioned prompts of ``hoprag/extraction/prompts.py``
and the defensive parser, in batches of ``extraction.batch_size`` documents as one indexing actor runs
them), and the triples are scored against ``raw/facts.json``, the facts the generator states in each
document (``hoprag generate``). The defaults compare the embedded default (the distilled student
shipped with hoprag: Gemma 3 270M + its LoRA adapter, student prompts), the embedded base model (the
few-shot prompts, no adapter) and the ``reference`` oracle; any other backend config joins through
``--llm-config NAME=FILE`` or ``--set systems.NAME.KEY=VALUE`` (e.g. another distilled adapter).

Scoring, per document, micro-averaged over documents:

* Entity strings are normalized as indexing normalizes them (lowercase, non-alphanumerics to spaces,
  collapsed; :func:`hoprag.text.normalize_entity`) with a leading article dropped ("The Salt Ledger" and
  "Salt Ledger" are one entity, "an actor" and "actor" one value).
* **Pair match**: an extracted triple counts for a true fact when its normalized head and tail equal the
  fact's, in either direction ("(Quifen | birthplace of | Juno)" counts for ``(Juno, born_in, Quifen)``).
* **Relation agreement**: a pair match whose relation also agrees with the fact's. A relation's *wordings*
  are its name as words ("born in") and the wordings of its templates in the generator, slots removed
  ("is the birthplace of", "a native of", "hails from"; for attributes their name and verb: "birth year",
  "was born in"; ``kind``: "is a", "works as"; see
  :func:`synthetic.phrasing.relation_wordings`). The extracted relation agrees when its
  normalized string equals a wording, or its MiniLM embedding (the packaged all-MiniLM-L6-v2) has cosine
  >= ``relation_cosine`` (default 0.6) with the closest wording. The threshold comes from the wordings
  alone, never from a model's output: holding each template wording out of its relation's list, 78% of
  them reach >= 0.6 with their own relation's other wordings and 2.6% of (wording, other relation) pairs
  do (0.5: 90% and 6.9%; 0.7: 63% and 1.2%).
* True facts are relation facts (``type: relation``, the KG edges questions hop over) and the intro's
  attributes (``type: attribute``: year, kind, a protein's mass), since the few-shot prompt asks for those
  too. Reported: **relations** (recall over relation facts; precision over extracted triples, leaving out
  those whose pair matches only an attribute: they are right but not edges), **all** (every fact and every
  triple), attribute recall, and relation-fact pair recall by how the fact is worded (frame, pronoun
  subject, held-out template).

Throughput is documents per minute of extraction alone (model load reported apart) for every system in the
same run, with this process's CPU seconds per document beside it (on a shared machine wall time depends on
the neighbours' load, recorded as the 1-minute load average before and after); prompt tokens per document are as each backend counts them (the embedded model: its tokenizer's
tokens; the reference backend: whitespace words).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from pydantic import Field

from benchmarks.harness import publish
from hoprag.config import StrictModel
from hoprag.embedding import EmbedderConfig
from hoprag.llm.factory import LLMBackendConfig
from hoprag.text import normalize_entity
from indexing.config import ExtractionConfig
from indexing.formats.gold import normalize_argument

RELATION_COSINE = 0.6
ConfigT = TypeVar("ConfigT", bound=StrictModel)
DEFAULT_SYSTEMS = ("embedded", "reference")


class ExtractBenchConfig(StrictModel):
    """Systems to compare and how extraction and scoring run (``--config FILE``, ``--set KEY=VALUE``)."""

    systems: dict[str, LLMBackendConfig] = Field(
        default_factory=dict,
        description="LLM backend config per system name. Defaults: 'student' (the embedded default: the "
        "packaged Gemma 3 270M with the shipped student adapter), 'base' (the same model without it, "
        "few-shot prompts) and 'reference' (the oracle, reading the benchmark's world.json). A config "
        "file's 'systems' "
        "replaces the defaults; --set systems.NAME.KEY=VALUE adds or changes one.",
    )
    extraction: ExtractionConfig = Field(
        default_factory=ExtractionConfig,
        description="As in the indexing config: mode, passage size, generation budget, batch size.",
    )
    embedder: EmbedderConfig = Field(
        default_factory=EmbedderConfig, description="Embeds relation strings for relation agreement."
    )
    relation_cosine: float = Field(
        default=RELATION_COSINE,
        gt=0.0,
        le=1.0,
        description="Cosine at or above which an extracted relation agrees with the true one.",
    )


# -- gold facts and documents ------------------------------------------------------------------------


@dataclass(frozen=True)
class GoldFact:
    """One fact a document states (a ``facts.json`` entry)."""

    head: str
    relation: str
    tail: str
    type: str = "relation"  # or "attribute"
    template: str = ""
    frame: str = "single"
    pronoun: str | None = None


@dataclass
class BenchDocuments:
    titles: list[str]
    texts: list[str]
    gold: list[list[GoldFact]]
    held_out_templates: set[str] = field(default_factory=set)
    filters: dict[str, Any] = field(default_factory=dict)


def _raw_dir(benchmark: Path) -> Path:
    return benchmark / "raw" if (benchmark / "raw").is_dir() else benchmark


def load_documents(
    benchmark: Path,
    held_out_domains: bool = False,
    held_out_templates: bool = False,
    limit: int | None = None,
    seed: int = 0,
    seen_templates: bool = False,
) -> BenchDocuments:
    """The benchmark's documents that state at least one relation fact, optionally only those of its
    held-out domains and/or those using a held-out template (both: documents that are both) or those
    using none (``seen_templates``: what a model trained on the training side has seen), then a seeded
    sample of ``limit`` of them, in corpus order."""
    if held_out_templates and seen_templates:
        raise ValueError("held-out templates and seen templates exclude each other")
    raw = _raw_dir(Path(benchmark))
    paths = {name: raw / f"{name}.json" for name in ("dataset_corpus", "facts", "world")}
    for name, path in paths.items():
        if not path.is_file():
            hint = " (generators before facts.json existed did not write it)" if name == "facts" else ""
            raise ValueError(f"{path} is missing: bench extract needs a `hoprag generate` benchmark{hint}")
    corpus: dict[str, str] = json.loads(paths["dataset_corpus"].read_text(encoding="utf-8"))
    facts: dict[str, list[dict[str, Any]]] = json.loads(paths["facts"].read_text(encoding="utf-8"))
    world = json.loads(paths["world"].read_text(encoding="utf-8"))
    domain_of = {e["name"]: e["domain"] for e in world["entities"]}
    ho_domains = set(world["config"].get("held_out_domains", []))
    ho_templates = set(world.get("phrasing", {}).get("held_out_templates", []))
    if held_out_domains and not ho_domains:
        raise ValueError(f"{raw.parent} has no held-out domains (hoprag generate --held-out-domains)")
    if (held_out_templates or seen_templates) and not ho_templates:
        raise ValueError(
            f"{raw.parent} has no held-out templates (hoprag generate --held-out-templates / "
            "--held-out-template-fraction)"
        )
    chosen = []
    for title in corpus:
        stated = facts.get(title, [])
        if not any(f["type"] == "relation" for f in stated):
            continue
        if held_out_domains and domain_of.get(title) not in ho_domains:
            continue
        uses_held_out = any(f["template"] in ho_templates for f in stated)
        if (held_out_templates and not uses_held_out) or (seen_templates and uses_held_out):
            continue
        chosen.append(title)
    available = len(chosen)
    if limit is not None and limit < len(chosen):
        keep = set(random.Random(f"bench-extract:{seed}").sample(chosen, limit))
        chosen = [t for t in chosen if t in keep]
    gold = [
        [
            GoldFact(
                f["head"],
                f["relation"],
                f["tail"],
                f["type"],
                f.get("template", ""),
                f.get("frame", "single"),
                f.get("pronoun"),
            )
            for f in facts[t]
        ]
        for t in chosen
    ]
    filters = {
        "held_out_domains": sorted(ho_domains) if held_out_domains else None,
        "templates": "held_out" if held_out_templates else "seen" if seen_templates else "any",
        "available_documents": available,
        "seed": seed,
    }
    return BenchDocuments(chosen, [corpus[t] for t in chosen], gold, ho_templates, filters)


# -- scoring -------------------------------------------------------------------------------------------


def relation_words(relation: str) -> str:
    """A fact's relation as words: ``born_in`` -> "born in", ``kind`` -> "is a", ``mass_kda`` -> "mass"."""
    if relation == "kind":
        return "is a"
    if relation == "mass_kda":
        return "mass"
    return relation.replace("_", " ")


class RelationAgreement:
    """Whether an extracted relation string agrees with a true relation: equal (normalized) to one of the
    relation's wordings, or MiniLM cosine >= ``threshold`` with the closest of them.

    ``wordings``: relation -> its wordings (default: the generator's,
    :func:`synthetic.phrasing.relation_wordings`); a relation without any is read as words
    (:func:`relation_words`).
    """

    def __init__(
        self,
        embed: Callable[[list[str]], np.ndarray] | None,
        threshold: float = RELATION_COSINE,
        wordings: dict[str, list[str]] | None = None,
    ):
        from synthetic.phrasing import relation_wordings

        self._embed = embed
        self.threshold = threshold
        self.wordings = relation_wordings() if wordings is None else wordings
        self._vectors: dict[str, np.ndarray] = {}

    def candidates(self, relation: str) -> list[str]:
        return [normalize_entity(w) for w in self.wordings.get(relation) or [relation_words(relation)]]

    def prepare(self, texts: Sequence[str]) -> None:
        """Embed all these strings in one batch (optional: :meth:`agrees` embeds what is missing)."""
        if self._embed is None:
            return
        todo = sorted({normalize_entity(t) for t in texts} - set(self._vectors))
        if todo:
            for text, vec in zip(todo, self._embed(todo), strict=True):
                self._vectors[text] = np.asarray(vec, dtype=np.float32)

    def cosine(self, a: str, b: str) -> float:
        na, nb = normalize_entity(a), normalize_entity(b)
        self.prepare([na, nb])
        va, vb = self._vectors[na], self._vectors[nb]
        return float(va @ vb / max(1e-12, float(np.linalg.norm(va) * np.linalg.norm(vb))))

    def agrees(self, extracted: str, true_relation: str) -> bool:
        candidates = self.candidates(true_relation)
        if normalize_entity(extracted) in candidates:
            return True
        if self._embed is None:
            return False
        return max(self.cosine(extracted, c) for c in candidates) >= self.threshold


def _prf(hits_p: int, denom_p: int, hits_r: int, denom_r: int) -> dict[str, float]:
    p = hits_p / denom_p if denom_p else 0.0
    r = hits_r / denom_r if denom_r else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4)}


def score_extractions(
    gold: Sequence[Sequence[GoldFact]],
    extracted: Sequence[Sequence[tuple[str, str, str]]],
    agreement: RelationAgreement,
    held_out_templates: set[str] | None = None,
) -> dict[str, Any]:
    """Precision, recall and F1 of ``extracted`` triples against ``gold`` facts, document by document
    (see the module docstring for the rules)."""
    agreement.prepare(
        [r for triples in extracted for _, r, _ in triples]
        + [c for rel in {f.relation for facts in gold for f in facts} for c in agreement.candidates(rel)]
    )
    n: Counter[str] = Counter()  # counts, summed over documents
    by: dict[str, Counter[str]] = {"frame": Counter(), "subject": Counter(), "template": Counter()}
    by_hit: dict[str, Counter[str]] = {"frame": Counter(), "subject": Counter(), "template": Counter()}
    for facts, triples in zip(gold, extracted, strict=True):
        pairs: dict[tuple[str, str], list[int]] = {}
        for i, f in enumerate(facts):
            pairs.setdefault((normalize_argument(f.head), normalize_argument(f.tail)), []).append(i)
        seen: set[tuple[str, str, str]] = set()
        pair_found: set[int] = set()
        rel_found: set[int] = set()
        for h, r, t in triples:
            nh, nt = normalize_argument(h), normalize_argument(t)
            key = (nh, normalize_entity(r), nt)
            if key in seen:
                continue
            seen.add(key)
            matched = pairs.get((nh, nt), []) + (pairs.get((nt, nh), []) if nh != nt else [])
            agreeing = [i for i in matched if agreement.agrees(r, facts[i].relation)]
            pair_found.update(matched)
            rel_found.update(agreeing)
            relation_match = [i for i in matched if facts[i].type == "relation"]
            n["extracted"] += 1
            n["extracted_pair_ok"] += bool(matched)
            n["extracted_rel_ok"] += bool(agreeing)
            if matched and not relation_match:
                continue  # an attribute triple: right, but not an edge
            n["extracted_for_relations"] += 1
            n["relations_pair_ok"] += bool(relation_match)
            n["relations_rel_ok"] += any(facts[i].type == "relation" for i in agreeing)
        for i, f in enumerate(facts):
            n[f"gold_{f.type}"] += 1
            n[f"{f.type}_pair_found"] += i in pair_found
            n[f"{f.type}_rel_found"] += i in rel_found
            if f.type != "relation":
                continue
            groups = {
                "frame": f.frame,
                "subject": "pronoun" if f.pronoun else "name",
                "template": "held_out" if held_out_templates and f.template in held_out_templates else "seen",
            }
            for kind, value in groups.items():
                by[kind][value] += 1
                by_hit[kind][value] += i in pair_found
    gold_all = n["gold_relation"] + n["gold_attribute"]
    found_pair_all = n["relation_pair_found"] + n["attribute_pair_found"]
    found_rel_all = n["relation_rel_found"] + n["attribute_rel_found"]
    return {
        "documents": len(gold),
        "gold_relation_facts": n["gold_relation"],
        "gold_attribute_facts": n["gold_attribute"],
        "extracted_triples": n["extracted"],
        "relations": {
            "pair": _prf(
                n["relations_pair_ok"],
                n["extracted_for_relations"],
                n["relation_pair_found"],
                n["gold_relation"],
            ),
            "relation": _prf(
                n["relations_rel_ok"],
                n["extracted_for_relations"],
                n["relation_rel_found"],
                n["gold_relation"],
            ),
        },
        "all": {
            "pair": _prf(n["extracted_pair_ok"], n["extracted"], found_pair_all, gold_all),
            "relation": _prf(n["extracted_rel_ok"], n["extracted"], found_rel_all, gold_all),
        },
        "attribute_pair_recall": round(n["attribute_pair_found"] / n["gold_attribute"], 4)
        if n["gold_attribute"]
        else 0.0,
        "relation_pair_recall_by": {
            kind: {
                value: [round(by_hit[kind][value] / total, 4), total] for value, total in sorted(c.items())
            }
            for kind, c in by.items()
        },
    }


# -- running systems -----------------------------------------------------------------------------------


def default_systems(world: Path) -> dict[str, dict[str, Any]]:
    return {
        "student": {"backend": "embedded"},
        "base": {"backend": "embedded", "embedded": {"adapter": None}},
        "reference": {"backend": "reference", "reference": {"world": str(world)}},
    }


def build_config(
    benchmark: Path,
    config_file: Path | None = None,
    overrides: Sequence[str] = (),
    llm_configs: Sequence[str] = (),
) -> ExtractBenchConfig:
    """Defaults (the two default systems), then ``--config FILE``, ``--llm-config NAME=FILE`` (an LLM
    backend mapping, or a mapping with an ``llm`` section such as an indexing config), ``--set``."""
    systems = default_systems(_raw_dir(Path(benchmark)) / "world.json")
    return build_systems_config(ExtractBenchConfig, systems, config_file, overrides, llm_configs)


def build_systems_config(
    model: type[ConfigT],
    systems: dict[str, dict[str, Any]],
    config_file: Path | None,
    overrides: Sequence[str],
    llm_configs: Sequence[str],
) -> ConfigT:
    """A benchmark config with LLM ``systems``: the default ``systems``, then ``--config FILE``,
    ``--llm-config NAME=FILE`` and ``--set KEY=VALUE`` (shared by the benchmarks that compare LLMs)."""
    from hoprag.config import ConfigError, load_config, read_yaml_mapping
    from hoprag.llm.factory import read_llm_config_args

    base: dict[str, Any] = {"systems": systems}
    if config_file is not None:
        try:
            base.update(read_yaml_mapping(config_file, "config file"))
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
    base.setdefault("systems", {}).update(read_llm_config_args(llm_configs))
    return load_config(model, None, overrides, base=base)


@dataclass
class SystemRun:
    name: str
    model_id: str
    load_seconds: float
    seconds: float
    cpu_seconds: float  # this process's CPU time (all threads): comparable when the machine is shared
    triples: list[list[tuple[str, str, str]]]
    prompt_tokens: int
    completion_tokens: int
    statuses: Counter[str]
    records: list[Any] = field(default_factory=list)  # indexing.extract.ExtractionRecord per document


def run_system(
    name: str, llm: Any, docs: BenchDocuments, extraction: ExtractionConfig, load_seconds: float = 0.0
) -> SystemRun:
    """Extract every document with ``llm`` as one indexing actor does: batches of ``batch_size`` documents
    of similar length, each one :func:`~indexing.extract.extract_documents` call."""
    from indexing.extract import extract_documents

    # As the indexing pipeline does: documents of similar length share a batch.
    order = sorted(range(len(docs.titles)), key=lambda i: len(docs.texts[i]))
    records: list[Any] = [None] * len(order)
    started = time.perf_counter()
    cpu_started = time.process_time()
    step = extraction.batch_size
    for b in range(0, len(order), step):
        batch = order[b : b + step]
        done = extract_documents(
            llm, [docs.titles[i] for i in batch], [docs.texts[i] for i in batch], extraction
        )
        for i, record in zip(batch, done, strict=True):
            records[i] = record
    seconds = time.perf_counter() - started
    return SystemRun(
        name=name,
        model_id=llm.model_id,
        load_seconds=load_seconds,
        seconds=seconds,
        cpu_seconds=time.process_time() - cpu_started,
        triples=[list(r.triples) for r in records],
        prompt_tokens=sum(r.prompt_tokens for r in records),
        completion_tokens=sum(r.completion_tokens for r in records),
        statuses=Counter(r.status for r in records),
        records=records,
    )


def summarize(run: SystemRun, docs: BenchDocuments, agreement: RelationAgreement) -> dict[str, Any]:
    n = max(1, len(docs.titles))
    scores = score_extractions(docs.gold, run.triples, agreement, docs.held_out_templates)
    return {
        "model_id": run.model_id,
        "load_seconds": round(run.load_seconds, 1),
        "seconds": round(run.seconds, 1),
        "docs_per_min": round(60 * len(docs.titles) / run.seconds, 1) if run.seconds > 0 else None,
        "cpu_seconds_per_doc": round(run.cpu_seconds / n, 3),
        "prompt_tokens_per_doc": round(run.prompt_tokens / n, 1),
        "completion_tokens_per_doc": round(run.completion_tokens / n, 1),
        "triples_per_doc": round(sum(len(t) for t in run.triples) / n, 2),
        "statuses": dict(run.statuses),
        **scores,
    }


def format_table(result: dict[str, Any]) -> str:
    head = (
        f"{'system':<12} {'docs/min':>8} {'CPU s/doc':>9} {'prompt tok/doc':>14} {'triples/doc':>11} "
        f"{'pair P':>7} {'pair R':>7} {'pair F1':>7} {'+rel P':>7} {'+rel R':>7} {'+rel F1':>7} {'attr R':>7}"
    )
    lines = [head, "-" * len(head)]
    for name, s in result["systems"].items():
        pair, rel = s["relations"]["pair"], s["relations"]["relation"]
        dpm = f"{s['docs_per_min']:.1f}" if s["docs_per_min"] is not None else "-"
        lines.append(
            f"{name:<12} {dpm:>8} {s['cpu_seconds_per_doc']:>9.2f} {s['prompt_tokens_per_doc']:>14.1f} "
            f"{s['triples_per_doc']:>11.2f} "
            f"{pair['precision']:>7.3f} {pair['recall']:>7.3f} {pair['f1']:>7.3f} "
            f"{rel['precision']:>7.3f} {rel['recall']:>7.3f} {rel['f1']:>7.3f} {s['attribute_pair_recall']:>7.3f}"
        )
    lines.append("")
    lines.append("relation-fact pair recall by wording (recall, facts):")
    for name, s in result["systems"].items():
        parts = [
            f"{value}={r:.2f} ({total})"
            for groups in s["relation_pair_recall_by"].values()
            for value, (r, total) in groups.items()
        ]
        lines.append(f"  {name:<10} " + "  ".join(parts))
    return "\n".join(lines)


def run_extract_benchmark(args: argparse.Namespace) -> int:
    """Entry point of ``hoprag bench extract``: every selected system on the same documents, one table."""
    from hoprag.embedding import SentenceTransformerEmbedder
    from hoprag.llm.factory import build_llm

    config = build_config(args.benchmark, args.config, args.overrides, args.llm_config)
    names = list(args.systems or config.systems)
    unknown = [n for n in names if n not in config.systems]
    if unknown:
        raise BenchInputError(
            f"unknown system(s) {unknown}; configured: {sorted(config.systems)} "
            "(add one with --llm-config NAME=FILE or --set systems.NAME.backend=...)"
        )
    try:
        docs = load_documents(
            args.benchmark,
            args.held_out_domains,
            args.held_out_templates,
            args.docs,
            args.seed,
            args.seen_templates,
        )
    except ValueError as exc:
        raise BenchInputError(str(exc)) from exc
    if not docs.titles:
        raise BenchInputError(f"no documents of {args.benchmark} pass the filters {docs.filters}")
    embedder = SentenceTransformerEmbedder(config.embedder)
    agreement = RelationAgreement(embedder.encode, config.relation_cosine)
    result: dict[str, Any] = {
        # Machines are shared: the load before and after the run says how much the figures are worth.
        "load_average_1min": [round(os.getloadavg()[0], 2)],
        "benchmark": str(args.benchmark),
        "filters": docs.filters,
        "documents": len(docs.titles),
        "relation_cosine": config.relation_cosine,
        "extraction": config.extraction.model_dump(mode="json"),
        "systems": {},
    }
    details: list[dict[str, Any]] = [
        {"title": t, "gold": [vars(f) for f in g], "systems": {}}
        for t, g in zip(docs.titles, docs.gold, strict=True)
    ]
    started = time.perf_counter()
    for name in names:
        load_started = time.perf_counter()
        llm = build_llm(config.systems[name])
        load_s = time.perf_counter() - load_started
        run = run_system(name, llm, docs, config.extraction, load_s)
        del llm
        result["systems"][name] = summarize(run, docs, agreement)
        for row, triples in zip(details, run.triples, strict=True):
            row["systems"][name] = [list(t) for t in triples]
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    result["load_average_1min"].append(round(os.getloadavg()[0], 2))
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    with (workdir / "extract-bench-documents.jsonl").open("w", encoding="utf-8") as fh:
        for row in details:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    result["documents_file"] = str(workdir / "extract-bench-documents.jsonl")
    publish("extract", result, args, table=_table)
    return 0


class BenchInputError(ValueError):
    """A benchmark, filter or system choice that cannot run (the CLI shows it as a user error)."""


def _table(result: dict[str, Any]) -> Iterator[str]:
    """The human-readable lines of ``hoprag bench extract``'s report."""
    yield (
        f"{result['documents']} documents of {result['benchmark']} (filters: {result['filters']}); relation "
        f"agreement: equal or MiniLM cosine >= {result['relation_cosine']}; {result['total_seconds']} s in all; "
        f"1-min load average before/after: {result['load_average_1min']}"
    )
    yield (format_table(result))
    yield (f"per-document triples: {result['documents_file']}")
