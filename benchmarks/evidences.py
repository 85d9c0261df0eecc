"""``hoprag bench evidences``: extraction on real paragraphs against a published benchmark's gold facts.

2WikiMultihopQA gives each question its gold facts (``evidences``: ``[subject, relation, object]``,
names as Wikidata labels). MuSiQue gives them in part: a decomposition step written
``SUBJECT >> relation`` (a Wikidata hop; ``#1 >> ...`` steps, which name an earlier answer, and
free-text sub-questions are left out) with its answer is the fact ``(SUBJECT, relation, answer)``.
Each *system* (an LLM backend config, as in ``hoprag bench extract``) extracts triples from the questions' supporting paragraphs with indexing's own code path
(:func:`benchmarks.extract.run_system`), and every question's gold facts are looked for among the
triples of its supporting paragraphs:

* **pair found, equal**: a triple whose normalized subject and object equal the fact's, in either
  direction (normalized as ``hoprag bench extract`` does: lowercase, punctuation to spaces, a
  leading article dropped);
* **pair found, loose**: the same where one name may contain the other as whole words (the
  paragraph "Aylwin (film)" and the label "Aylwin"; "Frank McDonald" and "Frank McDonald
  (director)").

Per system it also reports what became of every output (the *format* failures issue 54 counts):

* ``status``: ``ok``, ``no_triples`` (parsed, every triple dropped), ``unparseable`` (nothing
  triple-shaped in the output), ``empty_output``, ``error``;
* **format-lost**: paragraphs left without a triple because of the output's form, not its content:
  ``unparseable``, or ``no_triples`` where every dropped row was mis-shaped (two parts, too many, too
  few); content drops (a name not in the passage, a self loop, a duplicate) are not format;
* **repaired**: outputs whose JSON had to be repaired to be read (cut off, trailing comma, quotes),
  and rows put back into three parts (``repaired`` rows).

Relations are not scored here: a real paragraph's relation and Wikidata's property name ("director"
vs "directed by") need a judgment this script does not make.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from benchmarks.extract import (
    BenchDocuments,
    BenchInputError,
    build_systems_config,
    run_system,
)
from benchmarks.harness import publish
from hoprag.config import StrictModel
from hoprag.llm.embedded import EmbeddedLLMConfig
from hoprag.llm.factory import LLMBackendConfig
from hoprag.text import normalize_entity
from indexing.config import ExtractionConfig
from indexing.formats.gold import committee_triples, gold_facts, links_pair, pair_found

FORMAT_DROPS = frozenset({"two_parts", "too_many_parts", "too_few_parts"})


class EvidenceBenchConfig(StrictModel):
    """Systems and extraction settings (``--config FILE``, ``--set KEY=VALUE``, ``--llm-config``)."""

    systems: dict[str, LLMBackendConfig] = Field(
        default_factory=lambda: {"student": LLMBackendConfig.model_validate({"backend": "embedded"})},
        description="LLM backend config per system name (default: 'student', the embedded default). "
        "--llm-config NAME=FILE or --set systems.NAME.KEY=VALUE adds or changes one.",
    )
    extraction: ExtractionConfig = Field(
        default_factory=ExtractionConfig,
        description="As in the indexing config: passage size, generation budget, batch size.",
    )
    served: EmbeddedLLMConfig = Field(
        default_factory=lambda: EmbeddedLLMConfig(adapter=None),
        description="With --served NAME: the embedded model put behind hoprag's OpenAI-protocol server "
        "(default: the base model, whose few-shot prompts include the JSON chat ones).",
    )


@dataclass
class EvidenceQuestions:
    """The questions with gold facts, and the paragraphs they need (each once)."""

    ids: list[str]
    facts: list[list[tuple[str, str, str]]]
    paragraphs: list[list[int]]  # per question: positions in ``documents``
    documents: BenchDocuments


def load_evidence_questions(
    path: Path, fmt: str = "auto", limit: int | None = None, train_fraction: float = 0.0, side: str = "test"
) -> EvidenceQuestions:
    """Questions of a published benchmark file that carry gold facts, with their supporting
    paragraphs; with ``train_fraction``, only the ``side`` of the id-hash split: ``test`` (the side
    a student taught by the training side's gold facts never saw: distillation/gold.py), or
    ``train`` (where a prompt or a teacher setting is chosen before the test side reports it)."""
    if side not in ("train", "test"):
        raise BenchInputError(f"side must be 'train' or 'test', got {side!r}")
    if side == "train" and not train_fraction:
        raise BenchInputError(
            "--side train needs --train-fraction F > 0 (without a split every question is test)"
        )
    from indexing.formats import read_published

    corpus = read_published(path, fmt, train_fraction)  # type: ignore[arg-type]
    text_of = {d.title: d.text for d in corpus.documents}
    rows = [q for q in corpus.questions.get(side, []) if gold_facts(q) and q["supporting_facts"]]
    if not rows:
        raise BenchInputError(
            f"{path}: no question with gold facts (2WikiMultihopQA 'evidences', MuSiQue 'X >> relation' "
            "decomposition steps) and paragraphs"
        )
    rows = rows[:limit] if limit else rows
    titles: dict[str, int] = {}
    for q in rows:
        for key in q["supporting_facts"]:
            titles.setdefault(key, len(titles))
    docs = BenchDocuments(list(titles), [text_of[t] for t in titles], [[] for _ in titles])
    return EvidenceQuestions(
        [q["id"] for q in rows],
        [gold_facts(q) for q in rows],
        [[titles[k] for k in q["supporting_facts"]] for q in rows],
        docs,
    )


# Words a relation that states a Wikidata property may use (stems: a word fits when it starts with
# one). A property not listed fits a relation sharing a content word's first four letters with it.
RELATION_STEMS: dict[str, tuple[str, ...]] = {
    "director": ("direct",),
    "date of birth": ("born", "birth"),
    "place of birth": ("born", "birth"),
    "date of death": ("died", "death", "dead"),
    "place of death": ("died", "death", "dead"),
    "place of burial": ("buri", "interr"),
    "father": ("father", "son", "daughter", "child", "parent"),
    "mother": ("mother", "son", "daughter", "child", "parent"),
    "child": ("child", "son", "daughter", "father", "mother", "parent"),
    "spouse": ("spouse", "marri", "wife", "husband", "wed"),
    "sibling": ("sibling", "brother", "sister"),
    "country of citizenship": ("citizen", "national", "country"),
    "educated at": ("educat", "stud", "attend", "graduat", "alumn"),
    "performer": ("perform", "sing", "sang", "sung", "artist", "record", "band"),
    "composer": ("compos", "music", "score"),
    "publication date": ("publi", "releas", "premier", "aired", "date"),
    "cast member": ("star", "cast", "act", "appear"),
    "inception": ("found", "establish", "incept", "formed", "creat"),
    "located in the administrative territorial entity": ("locat", "in"),
}
_RELATION_FILLER = frozenset(
    {"a", "an", "the", "of", "in", "on", "at", "by", "to", "for", "is", "was", "has"}
)


def relation_fits(gold_relation: str, relation: str) -> bool:
    """Whether an extracted ``relation`` states the gold (Wikidata) property, by :data:`RELATION_STEMS`."""
    words = normalize_entity(relation).split()
    stems = RELATION_STEMS.get(gold_relation.lower())
    if stems is None:
        stems = tuple(w[:4] for w in normalize_entity(gold_relation).split() if w not in _RELATION_FILLER)
    return any(w.startswith(stem) for w in words for stem in stems if len(w) > 1)


def score_questions(
    questions: EvidenceQuestions, triples: Sequence[Sequence[tuple[str, str, str]]]
) -> dict[str, Any]:
    """Gold-fact pair recall (equal and loose), micro-averaged over facts, and per relation; of the
    loosely found pairs, the share where a linking triple's relation fits the fact's
    (:func:`relation_fits`); ``pairs``: every found fact with its linking triples, for a hand check."""
    n: Counter[str] = Counter()
    by_relation: dict[str, Counter[str]] = {}
    pairs: list[dict[str, Any]] = []
    for qid, facts, paragraphs in zip(questions.ids, questions.facts, questions.paragraphs, strict=True):
        pooled = [t for p in paragraphs for t in triples[p]]
        for fact in facts:
            counts = by_relation.setdefault(fact[1], Counter())
            n["facts"] += 1
            counts["facts"] += 1
            linking = [t for t in pooled if links_pair(fact, t, loose=True)]
            # an equal match is a loose one, so only the linking triples can hold it
            for kind, hit in (("equal", pair_found(fact, linking, False)), ("loose", bool(linking))):
                n[kind] += hit
                counts[kind] += hit
            if linking:
                fits = any(relation_fits(fact[1], t[1]) for t in linking)
                n["fits"] += fits
                counts["fits"] += fits
                pairs.append(
                    {"id": qid, "fact": list(fact), "triples": [list(t) for t in linking], "fits": fits}
                )
    facts = max(1, n["facts"])
    return {
        "gold_facts": n["facts"],
        "pair_recall_equal": round(n["equal"] / facts, 4),
        "pair_recall_loose": round(n["loose"] / facts, 4),
        "relation_fits_of_found": round(n["fits"] / max(1, n["loose"]), 4),
        "pair_recall_loose_by_relation": {
            rel: [round(c["loose"] / c["facts"], 3), c["facts"]] for rel, c in sorted(by_relation.items())
        },
        "relation_fits_by_relation": {
            rel: [c["fits"], c["loose"]] for rel, c in sorted(by_relation.items()) if c["loose"]
        },
        "pairs": pairs,
    }


def output_forms(records: Sequence[Any]) -> dict[str, Any]:
    """What became of each paragraph's output (module docstring: statuses, format-lost, repaired)."""
    statuses = Counter(r.status for r in records)
    dropped: Counter[str] = Counter()
    format_lost = 0
    for r in records:
        rows = {k for k, v in r.dropped.items() if v and not k.startswith("passage_")}
        format_lost += r.status == "unparseable" or (
            r.status == "no_triples" and bool(rows) and rows <= FORMAT_DROPS
        )
        dropped.update(r.dropped)
    return {
        "statuses": dict(statuses),
        "format_lost": format_lost,
        "json_repaired_outputs": dropped.pop("passage_json_repaired", 0),
        "repaired_rows": sum(r.repaired for r in records),
        "dropped_rows": {k: v for k, v in dropped.most_common() if not k.startswith("passage_")},
        "truncated_passages": sum(r.truncated_passages for r in records),
    }


def build_config(
    config_file: Path | None, overrides: Sequence[str] = (), llm_configs: Sequence[str] = ()
) -> EvidenceBenchConfig:
    """Defaults, then ``--config FILE``, ``--llm-config NAME=FILE``, ``--set KEY=VALUE``."""
    systems = {"student": {"backend": "embedded"}}
    return build_systems_config(EvidenceBenchConfig, systems, config_file, overrides, llm_configs)


def run_evidence_benchmark(args: argparse.Namespace) -> int:
    """Entry point of ``hoprag bench evidences``: every selected system on the same paragraphs."""
    config = build_config(args.config, args.overrides, args.llm_config)
    names = list(args.systems or [*config.systems, *args.served])
    unknown = [n for n in names if n not in config.systems and n not in args.served]
    if unknown:
        raise BenchInputError(
            f"unknown system(s) {unknown}; configured: {sorted(config.systems)}, served: {args.served}"
        )
    for members in (c.split("+") for c in args.committee):
        if len(members) < 2 or not set(members) <= set(names):
            raise BenchInputError(
                f"--committee {'+'.join(members)}: name two or more of the systems run ({names}), joined by '+'"
            )
    questions = load_evidence_questions(
        args.benchmark, args.format, args.questions, args.train_fraction, args.side
    )
    with contextlib.ExitStack() as stack:
        for name in args.served:
            if name in names:
                config.systems[name] = stack.enter_context(_served_embedded(config.served))
        return _run(args, config, names, questions)


@contextlib.contextmanager
def _served_embedded(embedded: EmbeddedLLMConfig) -> Iterator[LLMBackendConfig]:
    """The embedded model behind the OpenAI-protocol server in this process, as a client config:
    the path of a user's OpenAI-compatible endpoint (chat prompts, JSON with response_format)."""
    from hoprag.llm.embedded import EmbeddedLLM
    from hoprag.llm.openai_server import OpenAIProtocolServer

    with OpenAIProtocolServer(EmbeddedLLM(embedded), model_name="embedded") as server:
        yield LLMBackendConfig.model_validate(
            {
                "backend": "openai",
                "openai": {
                    "base_url": server.base_url,
                    "model": "embedded",
                    "prompt_style": "chat",
                    "timeout_s": 600,
                    "max_concurrency": 1,
                },
            }
        )


def _run(
    args: argparse.Namespace, config: EvidenceBenchConfig, names: list[str], questions: EvidenceQuestions
) -> int:
    """Each system on the questions' paragraphs, scored; the report and per-paragraph outputs written."""
    from hoprag.llm.factory import build_llm

    docs = questions.documents
    result: dict[str, Any] = {
        "load_average_1min": [round(os.getloadavg()[0], 2)],
        "benchmark": str(args.benchmark),
        "questions": len(questions.ids),
        "train_fraction": args.train_fraction,
        "side": args.side,
        "paragraphs": len(docs.titles),
        "extraction": config.extraction.model_dump(mode="json"),
        "systems": {},
    }
    outputs: list[dict[str, Any]] = [{"title": t, "systems": {}} for t in docs.titles]
    found_pairs: dict[str, list[dict[str, Any]]] = {}
    started = time.perf_counter()
    for name in names:
        load_started = time.perf_counter()
        llm = build_llm(config.systems[name])
        run = run_system(name, llm, docs, config.extraction, time.perf_counter() - load_started)
        del llm
        n = max(1, len(docs.titles))
        result["systems"][name] = {
            "model_id": run.model_id,
            "load_seconds": round(run.load_seconds, 1),
            "paragraphs_per_min": round(60 * len(docs.titles) / run.seconds, 1) if run.seconds > 0 else None,
            "cpu_seconds_per_paragraph": round(run.cpu_seconds / n, 3),
            "completion_tokens_per_paragraph": round(run.completion_tokens / n, 1),
            "triples_per_paragraph": round(sum(len(t) for t in run.triples) / n, 2),
            **output_forms(run.records),
            **score_questions(questions, run.triples),
        }
        pairs = result["systems"][name].pop("pairs")
        found_pairs[name] = pairs
        for row, record in zip(outputs, run.records, strict=True):
            row["systems"][name] = {
                "status": record.status,
                "output": record.raw_output,
                "triples": [list(t) for t in record.triples],
                "dropped": dict(record.dropped),
            }
    result["committees"] = {}
    for members in (c.split("+") for c in args.committee):
        name = "+".join(members)
        result["committees"][name] = committee_scores(questions, outputs, members)
        found_pairs[name] = result["committees"][name].pop("pairs")
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    result["load_average_1min"].append(round(os.getloadavg()[0], 2))
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    outputs_file = workdir / "evidences-bench-paragraphs.jsonl"
    with outputs_file.open("w", encoding="utf-8") as handle:
        for row in outputs:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    result["paragraphs_file"] = str(outputs_file)
    pairs_file = workdir / "evidences-bench-pairs.jsonl"
    with pairs_file.open("w", encoding="utf-8") as handle:
        for name, rows in found_pairs.items():
            for row in rows:
                handle.write(json.dumps({"system": name, **row}, ensure_ascii=False) + "\n")
    result["pairs_file"] = str(pairs_file)
    publish("evidences", result, args, table=_table)
    return 0


def committee_scores(
    questions: EvidenceQuestions, outputs: Sequence[dict[str, Any]], members: Sequence[str]
) -> dict[str, Any]:
    """:func:`score_questions` of systems run together as a distill recipe's committee
    (``gold.teacher`` then ``gold.extra_teachers``): per paragraph (``outputs``' rows, in the
    documents' order), the first member's triples and each other's on pairs no earlier one linked."""
    merged = []
    for row in outputs:
        first, *others = (row["systems"][m]["triples"] for m in members)
        merged.append(committee_triples(first, others))
    n = max(1, len(merged))
    return {
        "triples_per_paragraph": round(sum(len(t) for t in merged) / n, 2),
        **score_questions(questions, merged),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``hoprag bench evidences``'s flags (the CLI adds ``--config`` / ``--set``)."""
    from indexing.formats import FORMATS

    parser.add_argument(
        "--benchmark",
        type=Path,
        required=True,
        help="a 2WikiMultihopQA file (or HippoRAG 2 release) with evidences, or a MuSiQue file "
        "(its SUBJECT >> relation decomposition steps are the gold facts)",
    )
    parser.add_argument("--format", choices=FORMATS, default="auto", help="its format (default: detected)")
    parser.add_argument("--questions", type=int, default=None, help="the first N questions with evidences")
    parser.add_argument(
        "--train-fraction",
        type=float,
        default=0.0,
        metavar="F",
        help="score only the test side of the id-hash split with this training fraction (as hoprag index "
        "--train-fraction and a distill recipe's gold sources split); default: every question",
    )
    parser.add_argument(
        "--side",
        choices=("test", "train"),
        default="test",
        help="with --train-fraction: score that side of the split (train: to choose a prompt or a "
        "teacher setting before the test side reports it; default: test)",
    )
    parser.add_argument(
        "--systems", nargs="+", default=None, metavar="NAME", help="systems to run (default: all)"
    )
    parser.add_argument(
        "--committee",
        action="append",
        default=[],
        metavar="A+B",
        help="also score systems A, B, ... as a committee (a distill recipe's gold.teacher and "
        "gold.extra_teachers): A's triples, then each other's on pairs no earlier one linked; repeatable",
    )
    parser.add_argument(
        "--llm-config",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="add system NAME from a YAML LLM config",
    )
    parser.add_argument(
        "--served",
        action="append",
        default=[],
        metavar="NAME",
        help="add system NAME: the embedded model (config: served.*) behind hoprag's OpenAI-protocol "
        "server in this process, reached by the OpenAI-compatible client (chat prompts, JSON with "
        "response_format): an endpoint's path without a remote server; repeatable",
    )
    parser.add_argument("--json", action="store_true", help="one line of JSON")
    parser.add_argument(
        "--workdir", type=Path, default=Path("runs/bench-evidences"), help="results and outputs"
    )


def _table(result: dict[str, Any]) -> Iterator[str]:
    yield (
        f"{result['questions']} questions, {result['paragraphs']} supporting paragraphs of {result['benchmark']}; "
        f"{result['total_seconds']} s; 1-min load average before/after: {result['load_average_1min']}"
    )
    head = (
        f"{'system':<12} {'para/min':>8} {'triples/para':>12} {'pair R =':>8} {'pair R ~':>8} {'rel fits':>8} "
        f"{'format-lost':>11} {'json repaired':>13} {'statuses'}"
    )
    yield head
    yield "-" * len(head)
    for name, s in result["systems"].items():
        ppm = f"{s['paragraphs_per_min']:.1f}" if s["paragraphs_per_min"] is not None else "-"
        yield (
            f"{name:<12} {ppm:>8} {s['triples_per_paragraph']:>12.2f} {s['pair_recall_equal']:>8.3f} "
            f"{s['pair_recall_loose']:>8.3f} {s['relation_fits_of_found']:>8.3f} {s['format_lost']:>11} {s['json_repaired_outputs']:>13} "
            f"{s['statuses']}"
        )
    for name, s in result.get("committees", {}).items():
        yield (
            f"{name:<12} {'-':>8} {s['triples_per_paragraph']:>12.2f} {s['pair_recall_equal']:>8.3f} "
            f"{s['pair_recall_loose']:>8.3f} {s['relation_fits_of_found']:>8.3f}   (committee)"
        )
    yield f"per-paragraph outputs: {result['paragraphs_file']}; found pairs: {result['pairs_file']}"
