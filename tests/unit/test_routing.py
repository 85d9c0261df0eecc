"""The routed retriever: dense, fused with the graph retrievers only where those agree; its
agreement count, both routes with their entities and notes, validation, and the ``routed`` spec
loading dense, the packaged GLM and PPR on a real index."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import DEFAULT_RETRIEVER, RankedDocument, RetrievalQuery, RetrievalResult
from hoprag.retrieval.loading import check_retriever_spec, load_retriever
from hoprag.retrieval.routing import RoutedRetriever, route, shared_documents


def _result(
    *doc_ids: int, entities: Sequence[tuple[str, float]] = (), note: str | None = None
) -> RetrievalResult:
    return RetrievalResult(
        [RankedDocument(d, f"doc {d}", 1.0 - 0.01 * i) for i, d in enumerate(doc_ids)],
        entities=list(entities),
        notes=[note] if note else [],
    )


class _Fixed:
    """A retriever answering every question with one ranking; records the depth asked."""

    def __init__(self, name: str, result: RetrievalResult) -> None:
        self._name, self.result, self.asked = name, result, []

    @property
    def name(self) -> str:
        return self._name

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        self.asked.append(k)
        return [
            RetrievalResult(self.result.documents[:k], self.result.entities, self.result.notes)
            for _ in queries
        ]


def test_shared_documents_counts_the_top_depth_of_every_ranking():
    a, b, c = _result(1, 2, 3, 4, 5, 6), _result(6, 5, 1, 9, 8), _result(5, 1, 7)
    assert shared_documents([a, b], depth=5) == 2  # 1 and 5; 6 is below a's top 5
    assert shared_documents([a, b, c], depth=5) == 2
    assert shared_documents([a, b], depth=2) == 0
    assert shared_documents([], depth=5) == 0


def test_agreeing_graph_retrievers_are_fused_with_dense_disagreeing_ones_leave_dense():
    dense = _result(10, 11, 12, 13, 14)
    glm = _result(1, 2, 3, 4, 5, entities=[("mira castell", 3.0)], note="glm note")
    ppr_agrees = _result(2, 1, 3, 20, 21, entities=[("ember road", 0.1)], note="ppr seeds: x")
    fused = route(dense, [glm, ppr_agrees], k=3, min_agreement=3)
    # 1 and 2 are in both graph rankings: fused, they outrank dense's first document
    assert [d.doc_id for d in fused.documents] == [1, 2, 3]
    assert fused.entities == [("mira castell", 3.0)]  # the first graph retriever's
    assert fused.notes[-1] == "routed: graph retrievers agree (3 of top 5); fused"
    ppr_disagrees = _result(30, 31, 1, 32, 33, entities=[("ember road", 0.1)], note="ppr seeds: x")
    alone = route(dense, [glm, ppr_disagrees], k=3, min_agreement=2)
    assert [d.doc_id for d in alone.documents] == [10, 11, 12]
    assert alone.entities == [("mira castell", 3.0)]  # triples for the answer prompt still come
    assert alone.notes == [
        "glm note",
        "ppr seeds: x",
        "routed: graph retrievers disagree (1 of top 5); dense ranking",
    ]
    # 0: always fused
    assert [d.doc_id for d in route(dense, [glm, ppr_disagrees], k=1, min_agreement=0).documents] == [1]


def test_the_retriever_reads_every_part_to_the_fusion_depth_and_validates():
    dense = _Fixed("dense", _result(*range(100, 130)))
    glm = _Fixed("glm:packaged", _result(*range(30)))
    ppr = _Fixed("ppr", _result(4, 3, 2, 1, 0))
    routed = RoutedRetriever(dense, [glm, ppr], min_agreement=4)
    assert routed.name == "routed:dense+glm:packaged+ppr"
    assert routed.retrievers == [dense, glm, ppr]
    (result,) = routed.retrieve([RetrievalQuery("q")], k=2)
    assert dense.asked == glm.asked == ppr.asked == [20]
    # 0..4 are in both graph rankings; 0 and 4 (ranks 1 + 5) edge out 1 (ranks 2 + 4)
    assert [d.doc_id for d in result.documents] == [0, 4]
    assert routed.retrieve([], k=2) == []
    with pytest.raises(ValueError, match="at least two graph retrievers"):
        RoutedRetriever(dense, [glm])
    with pytest.raises(ValueError, match="min_agreement must be in"):
        RoutedRetriever(dense, [glm, ppr], min_agreement=6)
    with pytest.raises(ValueError, match="depth must be >= 1"):
        RoutedRetriever(dense, [glm, ppr], depth=0)


def test_routed_is_the_default_spec_and_loads_dense_the_packaged_glm_and_ppr(glm_index: KGIndex, embedder):
    assert DEFAULT_RETRIEVER == "routed"
    check_retriever_spec("routed")
    check_retriever_spec("routed+dense")
    routed = load_retriever("routed", glm_index, embedder)
    assert isinstance(routed, RoutedRetriever)
    names = [r.name for r in routed.retrievers]
    assert names[0].startswith("dense") and names[1].startswith("glm:") and names[2] == "ppr"
    [result] = routed.retrieve([RetrievalQuery("Where was Mira Castell born?", ("mira castell",))], k=3)
    assert len(result.documents) == 3
    assert result.notes[-1].startswith("routed: graph retrievers")


def test_bench_routing_fits_the_threshold_with_the_best_pooled_train_recall():
    from benchmarks.routing import fit, recalls

    dense = _result(10, 11, 12, 13, 14)
    # question 1: the graph retrievers share 3 documents and hold the gold one: fusing helps
    helped = {"gold": ["doc 1"], "kept": (dense, [_result(1, 2, 3, 4, 5), _result(1, 2, 3, 6, 7)])}
    # question 2: they share 1 document, gold is dense's second: fusing pushes it out of the top 2
    hurt = {"gold": ["doc 11"], "kept": (dense, [_result(2, 30, 31, 32, 33), _result(2, 40, 41, 42, 43)])}
    assert recalls([helped, hurt], None, 5)[2] == [0.0, 1.0]  # dense
    assert recalls([helped, hurt], 0, 5)[2] == [1.0, 0.0]  # always fused
    best, scores = fit([helped, hurt], agreement_depth=5)
    assert best == 2  # fuses the first (3 shared), not the second (1 shared): both right at @2
    assert scores[2] == (1.0, 1.0) and scores[6] == (0.5, 0.5)
