"""``hoprag bench graph``: how legible the evidence graph is at 10-50 triples, and what laying it out
costs, with label placement on and off in the same run.

Answers are random but shaped like real ones: a few seed entities, triples around them and one hop
further, relation and entity names of realistic lengths, and a plan whose steps found some of the
triples. Legibility is :func:`serving.evidence_graph.readability` (label boxes overlapping each
other or a node, labels leaving the canvas, the font size once the canvas fits a desktop page).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Iterator
from typing import Any

from benchmarks.harness import publish

RELATIONS = (
    "directed by", "born in", "country of citizenship", "place of death", "spouse", "educated at",
    "located in the administrative territorial entity", "member of sports team", "capital of",
    "performer", "publication date", "award received", "founded by", "headquarters location",
    "composer", "nominated for", "child", "occupation", "genre", "part of",
)  # fmt: skip
FIRST = ("Carl", "Maria", "Heinz", "Ana", "Kenji", "Olu", "Ingrid", "Rafael", "Lena", "Tomasz")
LAST = ("Boese", "Paul", "Okafor", "Lindqvist", "Tanaka", "Ferreira", "Novak", "Brennan", "Haddad")
PLACES = ("Berlin", "Lagos", "São Paulo", "Kraków", "Osaka", "Reykjavík", "Montevideo", "Nairobi")
WORKS = ("My Cousin From Warsaw", "The Glass Harbour", "Night Train to Lisbon", "Seven Bridges", "Aurora")


def random_entity(rng: random.Random) -> str:
    """A person, place, work or year name (4-30 characters)."""
    kind = rng.random()
    if kind < 0.45:
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if kind < 0.65:
        return rng.choice(PLACES) + rng.choice(("", " Province", " University", " FC"))
    if kind < 0.9:
        return rng.choice(WORKS) + rng.choice(("", " (1931 film)", " II", ": The Return"))
    return str(rng.randint(1890, 2020))


def random_answer(num_triples: int, rng: random.Random, seeds: int = 2, steps: int = 3) -> dict[str, Any]:
    """An ``Answer.to_dict()``-shaped answer with ``num_triples`` distinct triples around ``seeds``
    seed entities, found by ``steps`` plan steps (some by none), the answer two hops from a seed."""
    seed_names = [random_entity(rng) + f" #{i}" for i in range(seeds)]
    frontier = list(seed_names)
    triples: dict[tuple[str, str, str], float] = {}
    while len(triples) < num_triples:
        head = rng.choice(frontier) if rng.random() < 0.8 else random_entity(rng)
        tail = random_entity(rng) if rng.random() < 0.7 else rng.choice(frontier)
        if head == tail:
            continue
        triples[(head, rng.choice(RELATIONS), tail)] = round(rng.random(), 4)
        if rng.random() < 0.3:
            frontier.append(tail)
    rows = [{"head": h, "relation": r, "tail": t, "score": s} for (h, r, t), s in triples.items()]
    hop = next((t for t in rows if t["head"] == seed_names[0]), rows[0])["tail"]
    answer = next((t["tail"] for t in rows if t["head"] == hop), hop)
    plan_steps = []
    for i in range(steps):
        found = [t for t in rows if rng.random() < 0.25]
        plan_steps.append(
            {"index": i, "seed_sources": {seed_names[i % seeds]: "llm_exact"}, "clues": [{"triples": found}]}
        )
    return {"answer": answer, "not_enough_info": False, "triples": rows, "steps": plan_steps}


def measure(num_triples: int, answers: int, seed: int) -> dict[str, Any]:
    """Mean readability and layout time of ``answers`` random answers of ``num_triples`` triples,
    with the naive labels (``search=False``) and the placed ones, on the same layouts."""
    from serving.evidence_graph import build_graph, layout, place_labels, readability

    rng = random.Random(seed)
    rows: dict[str, list[dict[str, float]]] = {"naive": [], "placed": []}
    for _ in range(answers):
        answer = random_answer(num_triples, rng)
        started = time.perf_counter()
        graph = layout(build_graph(answer))
        layout_s = time.perf_counter() - started
        for name, search in (("naive", False), ("placed", True)):
            started = time.perf_counter()
            place_labels(graph, search=search)
            label_s = time.perf_counter() - started
            r = readability(graph)
            rows[name].append(
                {
                    **r.to_dict(),
                    "layout_ms": 1000 * layout_s,
                    "labels_ms": 1000 * label_s,
                    "nodes": len(graph.nodes),
                }
            )
    return {
        name: {key: round(statistics.mean(row[key] for row in values), 2) for key in values[0]}
        for name, values in rows.items()
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``hoprag bench graph``'s options."""
    parser.add_argument("--triples", type=int, nargs="+", default=[10, 25, 50], help="triples per answer")
    parser.add_argument("--answers", type=int, default=20, help="random answers per size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="one line of JSON")


def run_graph_benchmark(args: argparse.Namespace) -> int:
    """Print the readability table (or JSON) for each size."""
    results = {n: measure(n, args.answers, args.seed) for n in args.triples}
    publish("graph", {"sizes": results}, args, table=_table)
    return 0


def _table(report: dict[str, Any]) -> Iterator[str]:
    """``hoprag bench graph``'s report as a markdown table, one row per size and label mode."""
    yield (
        "| triples | labels | nodes | label overlaps | labels over nodes | labels outside | edge labels hidden | "
        "fit scale | smallest font px | layout ms | labels ms |"
    )
    yield ("|---|---|---|---|---|---|---|---|---|---|---|")
    for n, by_mode in report["sizes"].items():
        for mode, r in by_mode.items():
            yield (
                f"| {n} | {mode} | {r['nodes']:.1f} | {r['label_overlaps']:.1f} | {r['labels_over_nodes']:.1f} | "
                f"{r['labels_outside']:.1f} | {r['hidden_edge_labels']:.1f} | {r['fit_scale']:.2f} | {r['smallest_font_px']:.1f} | "
                f"{r['layout_ms']:.1f} | {r['labels_ms']:.1f} |"
            )
