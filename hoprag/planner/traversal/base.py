"""The traversal contract: a clue query (text, vector, seed vertices) in, scored knowledge out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from hoprag.retrieval.base import RankedDocument

if TYPE_CHECKING:
    from hoprag.planner.knowledge import KnowledgeGraphView


@dataclass(frozen=True)
class ClueQuery:
    """What a traversal searches for: the query text, its vector and its matched KG vertices."""

    text: str
    vector: np.ndarray
    seeds: tuple[int, ...] = ()


@dataclass(frozen=True)
class ScoredTriple:
    """A KG triple a traversal found; ``score`` is higher-is-better within one traversal."""

    triple_id: int
    score: float
    source: str


@dataclass(frozen=True)
class ScoredThesis:
    """A memory-graph thesis (one statement, :mod:`hoprag.kg.memory`) a traversal found."""

    thesis_id: int
    score: float
    source: str


@dataclass
class Knowledge:
    """What one or more traversals found for a clue query: object triples, theses, and episodes
    (documents)."""

    triples: list[ScoredTriple] = field(default_factory=list)
    documents: list[RankedDocument] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    theses: list[ScoredThesis] = field(default_factory=list)


@runtime_checkable
class Traversal(Protocol):
    """A way to collect knowledge for a clue query from the KG."""

    @property
    def name(self) -> str: ...

    def retrieve(self, query: ClueQuery) -> Knowledge: ...


def merge_knowledge(parts: Sequence[Knowledge]) -> Knowledge:
    """Union of several traversals' findings: triples, theses and documents de-duplicated, first
    finder kept.

    Order: each traversal's results in turn (the first configured traversal leads), so a later
    filter that keeps order keeps the first traversal's preference.
    """
    merged = Knowledge()
    seen_triples: set[int] = set()
    seen_docs: set[int] = set()
    seen_theses: set[int] = set()
    for part in parts:
        for th in part.theses:
            if th.thesis_id not in seen_theses:
                seen_theses.add(th.thesis_id)
                merged.theses.append(th)
        for t in part.triples:
            if t.triple_id not in seen_triples:
                seen_triples.add(t.triple_id)
                merged.triples.append(t)
        for d in part.documents:
            if d.doc_id not in seen_docs:
                seen_docs.add(d.doc_id)
                merged.documents.append(d)
        merged.notes.extend(part.notes)
    return merged


def theses_of_walk(
    kg: KnowledgeGraphView, vertices: Sequence[int], query: ClueQuery, k: int, source: str
) -> list[ScoredThesis]:
    """The theses a graph walk reads: up to ``k`` statements mentioning the vertices it reached
    (:meth:`~hoprag.planner.knowledge.KnowledgeGraphView.theses_around`); none without theses."""
    found = kg.theses_around(list(dict.fromkeys(vertices)), query.vector, k)
    return [ScoredThesis(t, s, source) for t, s in found]
