"""Reciprocal rank fusion: one document ranking from several retrievers' rankings.

A graph retriever (the GLM, the GNN) and the dense baseline miss different documents: the graph
retriever follows relations from the question's entities, dense retrieval matches the question's
wording against each document's text. Fusing their rankings keeps what each finds.

Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009) scores a document by the sum of
``1 / (c + rank)`` over the rankings that hold it. It reads ranks only, so retrievers whose scores
live on different scales (entity votes, cosine similarities) combine without calibration, and its
constant ``c = 60`` is that paper's, not a value fitted to any of our benchmarks.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

from hoprag.retrieval.base import RankedDocument, RetrievalQuery, RetrievalResult, Retriever

RRF_CONSTANT = 60
# How deep each retriever's ranking is read: a document in one retriever's top k can be lifted by
# the other's rank 11-20, which a cut at k would ignore.
DEFAULT_FUSION_DEPTH = 20

Item = TypeVar("Item", bound=Hashable)


def weighted_rrf(
    rankings: Sequence[Sequence[Item]], weights: Sequence[float] | None = None, constant: float = RRF_CONSTANT
) -> list[tuple[Item, float]]:
    """Every item of ``rankings`` (each best first) with its fused score ``sum_i w_i / (constant +
    rank_i)`` over the rankings that hold it (rank from 1; ``weights`` default to 1 each), best
    first. Equal scores keep the order in which items first appear, the first ranking's before the
    second's, so the result is deterministic."""
    if constant < 0:
        raise ValueError(f"reciprocal rank fusion: constant must be >= 0, got {constant}")
    weights = [1.0] * len(rankings) if weights is None else weights
    fused: dict[Item, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (constant + rank)
    return sorted(fused.items(), key=lambda kv: -kv[1])


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[RankedDocument]], k: int, constant: int = RRF_CONSTANT
) -> list[RankedDocument]:
    """The ``k`` best documents of ``rankings`` (each best first) by reciprocal rank fusion; a
    document's score is ``sum(1 / (constant + rank))`` over the rankings that hold it (rank from 1).

    Equal scores keep the order in which the documents first appear, the first ranking's before the
    second's, so the result is deterministic."""
    titles = {d.doc_id: d.title for ranking in reversed(rankings) for d in reversed(ranking)}
    fused = weighted_rrf([[d.doc_id for d in ranking] for ranking in rankings], constant=constant)
    return [RankedDocument(doc_id, titles[doc_id], score) for doc_id, score in fused[:k]]


def fuse_results(results: Sequence[RetrievalResult], k: int, constant: int = RRF_CONSTANT) -> RetrievalResult:
    """One question's results from several retrievers as one: documents by reciprocal rank fusion,
    the scored entities of the first retriever that has any (the graph retriever's; the planner
    reads triples from them), every retriever's notes once each, and every retriever's seeds."""
    notes: list[str] = []
    for result in results:
        notes.extend(note for note in result.notes if note not in notes)
    return RetrievalResult(
        documents=reciprocal_rank_fusion([r.documents for r in results], k, constant),
        entities=next((list(r.entities) for r in results if r.entities), []),
        notes=notes,
        seeds=list(dict.fromkeys(s for r in results for s in r.seeds)),
    )


class FusedRetriever:
    """Several retrievers as one :class:`~hoprag.retrieval.base.Retriever`: each ranks
    ``max(k, depth)`` documents per question, then reciprocal rank fusion keeps the best ``k``."""

    def __init__(
        self,
        retrievers: Sequence[Retriever],
        depth: int = DEFAULT_FUSION_DEPTH,
        constant: int = RRF_CONSTANT,
    ) -> None:
        if len(retrievers) < 2:
            raise ValueError(f"a fused retriever needs at least two retrievers, got {len(retrievers)}")
        if depth < 1:
            raise ValueError(f"fusion depth must be >= 1, got {depth}")
        if constant < 0:
            raise ValueError(f"reciprocal rank fusion: constant must be >= 0, got {constant}")
        self.retrievers = list(retrievers)
        self.depth = depth
        self.constant = constant

    @property
    def name(self) -> str:
        # The first retriever's name leads, so a planner traversal over a fused GLM is still "glm".
        return "+".join(r.name for r in self.retrievers)

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        if not queries:
            return []
        depth = max(k, self.depth)
        per_retriever = [r.retrieve(queries, depth) for r in self.retrievers]
        return [fuse_results(results, k, self.constant) for results in zip(*per_retriever, strict=True)]
