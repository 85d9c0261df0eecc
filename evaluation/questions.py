"""The questions a benchmark evaluates: selection, input checks and per-question properties.

Used by ``hoprag eval run`` (per benchmark) and ``hoprag eval retrieval`` alike, so both see the
same questions, drop the same duplicates and report the same input problems.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluation.config import BenchmarkSpec
    from hoprag.kg.index import KGIndex

DISTANCE_CUTOFF = 10  # hops, as GLM-RAG's analysis
MAX_BFS_ENTITIES = 200_000


@dataclass
class InputReport:
    """What was wrong with a benchmark's questions (counted in the summary, never dropped silently)."""

    questions: int = 0
    duplicate_ids: list[str] = field(default_factory=list)
    no_gold_documents: int = 0
    missing_supporting_docs: int = 0
    empty_answers: int = 0


def select_questions(
    index: KGIndex,
    split: str = "test",
    where: Mapping[str, Sequence[str]] | None = None,
    limit: int | None = None,
) -> tuple[list[dict[str, Any]], InputReport]:
    """The split's questions (first of duplicate ids kept, metadata filter, first ``limit``), each
    with its parsed metadata as ``meta``, plus the input report."""
    if index.questions is None:
        raise ValueError(f"{index.path} has no processed questions; index a corpus with train.json/test.json")
    table = index.questions
    rows = [r for r in table.to_pylist() if r["split"] == split]
    if not rows:
        splits = sorted(set(table.column("split").to_pylist()))
        raise ValueError(f"{index.path} has no {split!r} questions (splits: {', '.join(splits) or 'none'})")
    report = InputReport()
    seen: set[str] = set()
    kept = []
    for r in rows:
        if r["id"] in seen:
            report.duplicate_ids.append(r["id"])
            continue
        seen.add(r["id"])
        kept.append(r)
    for r in kept:
        r["meta"] = json.loads(r.pop("metadata", None) or "{}")
    for key, values in (where or {}).items():
        allowed = set(values)
        kept = [r for r in kept if str(r["meta"].get(key)) in allowed]
    kept = kept[:limit] if limit else kept
    report.questions = len(kept)
    for r in kept:
        report.no_gold_documents += not r["supporting_docs"]
        report.missing_supporting_docs += len(
            set(r.get("supporting_facts") or []) - set(r["supporting_docs"])
        )
        report.empty_answers += not (r.get("answer") or "").strip()
    return kept, report


def load_questions(bench: BenchmarkSpec) -> tuple[list[dict[str, Any]], InputReport]:
    """:func:`select_questions` for a benchmark spec, with errors that name the benchmark."""
    from hoprag.kg.index import KGIndex
    from hoprag.kg.store import KGIndexError

    if not Path(bench.index).exists():
        if bench.data is not None:
            from evaluation.config import gfm_rag_index_command

            raise ValueError(
                f"benchmark {bench.name}: index {bench.index} does not exist; build it from the "
                f"GFM-RAG directory {bench.data}: {gfm_rag_index_command(bench.data, bench.index)}"
            )
        raise ValueError(f"benchmark {bench.name}: index {bench.index} does not exist")
    try:
        index = KGIndex(bench.index)
        return select_questions(index, bench.split, bench.where, bench.limit)
    except (KGIndexError, ValueError) as exc:
        raise ValueError(f"benchmark {bench.name}: {exc}") from exc


def question_seeds(index: KGIndex, row: Mapping[str, Any]) -> list[int]:
    """Entity ids of the question's linked entities that are in the KG."""
    ids = (index.entity_id(e) for e in row.get("question_entities") or [])
    return [i for i in ids if i is not None]


def seed_distances(index: KGIndex, seeds: Sequence[int]) -> dict[int, int]:
    """Hops from the nearest question entity to every entity within the cutoff (undirected KG)."""
    return index.k_hop(seeds, DISTANCE_CUTOFF, max_entities=MAX_BFS_ENTITIES)


def entity_distance(
    index: KGIndex, row: Mapping[str, Any], dist: Mapping[int, int] | None = None
) -> int | None:
    """GLM-RAG's entity-level distance: over the supporting entities reachable from the question's
    entities (undirected KG, cutoff 10), the largest hop count from the nearest question entity.
    ``None`` when no question entity is in the KG or no supporting entity is reachable. ``dist``:
    an already computed :func:`seed_distances` of the same question."""
    seeds = question_seeds(index, row)
    if not seeds:
        return None
    dist = dist if dist is not None else seed_distances(index, seeds)
    gold = (index.entity_id(e) for e in row.get("supporting_entities") or [])
    reachable = [dist[g] for g in gold if g is not None and g in dist and g not in seeds]
    return max(reachable) if reachable else None
