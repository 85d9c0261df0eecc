"""Naive retrieval: the KG's fact triples most similar to the clue query (dense + BM25, fused), and
with a memory graph its nearest theses."""

from __future__ import annotations

from hoprag.planner.knowledge import KnowledgeGraphView
from hoprag.planner.traversal.base import ClueQuery, Knowledge, ScoredThesis, ScoredTriple


class NaiveTraversal:
    """Top ``k`` triples of the whole KG by weighted RRF of dense and BM25 rankings (no seeds needed)."""

    name = "naive"

    def __init__(
        self,
        kg: KnowledgeGraphView,
        k: int = 25,
        weights: tuple[float, float] = (0.7, 0.3),
        theses: int = 0,
    ) -> None:
        self.kg = kg
        self.k = k
        self.weights = weights
        self.theses = theses

    def retrieve(self, query: ClueQuery) -> Knowledge:
        found = self.kg.search_triples(query.vector, query.text, self.k, weights=self.weights)
        return Knowledge(
            triples=[ScoredTriple(t, s, self.name) for t, s in found],
            theses=[
                ScoredThesis(t, s, self.name) for t, s in self.kg.search_theses(query.vector, self.theses)
            ],
        )
