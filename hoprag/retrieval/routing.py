"""The routed retriever: graph retrieval fused with dense only where the graph retrievers agree.

Fusing a graph retriever with dense retrieval helps on some questions and hurts on others: on the
train portions of the three real samples (HotpotQA, 2Wiki, MuSiQue, 143 questions), the GLM +
PPR + dense fusion lost to dense alone on HotpotQA and MuSiQue at recall@5. What told the two
kinds of question apart was whether the two graph retrievers, which reach documents by different
roads (PPR by random walks from the question's facts, the GLM by a trained scorer on the
question's subgraph), agree: where their top 5 shared no document the fusion lost 0.12 recall@5 to
dense, where they shared two or more it gained (docs/ppr.md, "The default retriever"). So, per
question: the graph retrievers' rankings are fused with dense's when they share at least
``min_agreement`` of their top ``agreement_depth`` documents; otherwise dense's ranking stands.

``min_agreement = 2`` is the one value fitted, on those train portions pooled (recall@5), never on
a test portion or a held-out set.
"""

from __future__ import annotations

from collections.abc import Sequence

from hoprag.retrieval.base import RetrievalQuery, RetrievalResult, Retriever
from hoprag.retrieval.fusion import DEFAULT_FUSION_DEPTH, RRF_CONSTANT, fuse_results

# Fitted once on the pooled train portions of the real samples (see the module docstring).
DEFAULT_MIN_AGREEMENT = 2
DEFAULT_AGREEMENT_DEPTH = 5


def shared_documents(results: Sequence[RetrievalResult], depth: int) -> int:
    """How many documents are in the top ``depth`` of every one of ``results``."""
    if not results:
        return 0
    common = {d.doc_id for d in results[0].documents[:depth]}
    for result in results[1:]:
        common &= {d.doc_id for d in result.documents[:depth]}
    return len(common)


class RoutedRetriever:
    """Dense retrieval, fused with graph retrievers for the questions on which those agree.

    Every retriever ranks ``max(k, depth)`` documents per question; where the graph retrievers
    share ``min_agreement`` documents of their top ``agreement_depth``, all rankings are fused by
    reciprocal rank fusion (dense first, so it wins ties), otherwise dense's ranking is returned.
    Either way the scored entities are the first graph retriever's that has any (the planner
    reads triples from them)."""

    def __init__(
        self,
        dense: Retriever,
        graph: Sequence[Retriever],
        min_agreement: int = DEFAULT_MIN_AGREEMENT,
        agreement_depth: int = DEFAULT_AGREEMENT_DEPTH,
        depth: int = DEFAULT_FUSION_DEPTH,
        constant: int = RRF_CONSTANT,
    ) -> None:
        if len(graph) < 2:
            raise ValueError(
                f"a routed retriever needs at least two graph retrievers to compare, got {len(graph)}"
            )
        if not 1 <= min_agreement <= agreement_depth:
            raise ValueError(
                f"min_agreement must be in [1, agreement_depth={agreement_depth}], got {min_agreement}"
            )
        if depth < 1:
            raise ValueError(f"fusion depth must be >= 1, got {depth}")
        self.dense = dense
        self.graph = list(graph)
        self.min_agreement = min_agreement
        self.agreement_depth = agreement_depth
        self.depth = depth
        self.constant = constant

    @property
    def retrievers(self) -> list[Retriever]:
        """Every part, dense first."""
        return [self.dense, *self.graph]

    @property
    def name(self) -> str:
        return "routed:" + "+".join(r.name for r in self.retrievers)

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        if not queries:
            return []
        return [
            route(dense, graph, k, self.min_agreement, self.agreement_depth, self.constant)
            for dense, graph in self.rankings(queries, k)
        ]

    def rankings(
        self, queries: Sequence[RetrievalQuery], k: int
    ) -> list[tuple[RetrievalResult, list[RetrievalResult]]]:
        """Each question's dense result and graph results, every part read to the fusion depth."""
        depth = max(k, self.depth, self.agreement_depth)
        dense = self.dense.retrieve(queries, depth)
        graph = [r.retrieve(queries, depth) for r in self.graph]
        return [(d, list(g)) for d, *g in zip(dense, *graph, strict=True)]


def route(
    dense: RetrievalResult,
    graph: Sequence[RetrievalResult],
    k: int,
    min_agreement: int = DEFAULT_MIN_AGREEMENT,
    agreement_depth: int = DEFAULT_AGREEMENT_DEPTH,
    constant: int = RRF_CONSTANT,
) -> RetrievalResult:
    """One question's result: ``dense`` and ``graph`` fused (dense first) when the ``graph``
    results share ``min_agreement`` documents of their top ``agreement_depth`` (0: always fused),
    else ``dense``'s top ``k`` with the graph results' entities and notes."""
    shared = shared_documents(graph, agreement_depth)
    if shared >= min_agreement:
        fused = fuse_results([dense, *graph], k, constant)
        fused.notes.append(f"routed: graph retrievers agree ({shared} of top {agreement_depth}); fused")
        return fused
    notes = [n for r in graph for n in r.notes]
    notes.append(f"routed: graph retrievers disagree ({shared} of top {agreement_depth}); dense ranking")
    return RetrievalResult(
        documents=list(dense.documents[:k]),
        entities=next((list(r.entities) for r in graph if r.entities), []),
        notes=list(dict.fromkeys(notes)),
        seeds=list(dict.fromkeys(s for r in graph for s in r.seeds)),
    )
