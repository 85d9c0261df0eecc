"""Reciprocal rank fusion of retrievers: the arithmetic, the result it builds, the ``A+B`` spec
that evaluation, serving and cluster jobs share (the cluster check: test_cluster_params), and a real
GNN fused with the dense baseline."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch

from hoprag.gnn.model import QueryNBFNet
from hoprag.gnn.retriever import GNNRetriever, save_gnn_retriever
from hoprag.gnn.settings import GNNSettings
from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import RankedDocument, RetrievalQuery, RetrievalResult
from hoprag.retrieval.dense import DenseRetriever
from hoprag.retrieval.fusion import FusedRetriever, fuse_results, reciprocal_rank_fusion
from hoprag.retrieval.loading import (
    RetrieverSpecError,
    check_retriever_spec,
    load_retriever,
    retriever_spec_parts,
)


def _ranking(*doc_ids: int) -> list[RankedDocument]:
    return [RankedDocument(d, f"doc {d}", 1.0 - 0.1 * i) for i, d in enumerate(doc_ids)]


def test_rrf_sums_reciprocal_ranks_and_breaks_ties_by_first_appearance():
    fused = reciprocal_rank_fusion([_ranking(1, 2, 3), _ranking(3, 4)], k=4, constant=60)
    # 3: 1/63 + 1/61 beats 1 (1/61); 2 and 4 tie at 1/62, the first ranking's document first
    assert [d.doc_id for d in fused] == [3, 1, 2, 4]
    assert fused[0].score == pytest.approx(1 / 63 + 1 / 61)
    assert fused[0].title == "doc 3"
    assert [d.doc_id for d in reciprocal_rank_fusion([_ranking(1, 2, 3), _ranking(3, 4)], k=2)] == [3, 1]


def test_rrf_constant_decides_how_much_one_top_rank_outweighs_agreement():
    rankings = [_ranking(7, 8, 9), _ranking(5, 6, 8)]
    # with c = 60 agreement wins (8 is second and third); with c = 0 a lone first rank (1/1) does
    assert reciprocal_rank_fusion(rankings, k=1, constant=60)[0].doc_id == 8
    assert reciprocal_rank_fusion(rankings, k=1, constant=0)[0].doc_id == 7
    with pytest.raises(ValueError, match="constant must be >= 0"):
        reciprocal_rank_fusion(rankings, k=1, constant=-1)


def test_fused_result_keeps_the_graph_retrievers_entities_and_every_note_once():
    graph = RetrievalResult(_ranking(1, 2), entities=[("halvaria", 2.0)], notes=["a"])
    dense = RetrievalResult(_ranking(2, 3), notes=["a", "b"])
    fused = fuse_results([dense, graph], k=3)
    assert [d.doc_id for d in fused.documents] == [2, 1, 3]
    assert fused.entities == [("halvaria", 2.0)]
    assert fused.notes == ["a", "b"]
    assert fuse_results([RetrievalResult([]), RetrievalResult([])], k=3).documents == []


class _Ranked:
    """A retriever with a fixed ranking that records the depth it was asked for."""

    def __init__(self, name: str, doc_ids: Sequence[int]) -> None:
        self._name = name
        self.doc_ids = list(doc_ids)
        self.asked: list[int] = []

    @property
    def name(self) -> str:
        return self._name

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        self.asked.append(k)
        return [RetrievalResult(_ranking(*self.doc_ids[:k])) for _ in queries]


def test_fused_retriever_reads_each_ranking_to_its_depth_and_cuts_at_k():
    first = _Ranked("glm:run", list(range(30)))
    # the second retriever ranks the first's 12th document first: read to depth 20, it is lifted
    second = _Ranked("dense", [11, 100, 101])
    fused = FusedRetriever([first, second], depth=20)
    assert fused.name == "glm:run+dense"
    (result,) = fused.retrieve([RetrievalQuery("q")], k=2)
    assert first.asked == [20] and second.asked == [20]
    assert [d.doc_id for d in result.documents] == [11, 0]
    fused.retrieve([RetrievalQuery("q")], k=25)  # a k past the depth reads k
    assert first.asked[-1] == 25
    assert fused.retrieve([], k=2) == []
    with pytest.raises(ValueError, match="at least two"):
        FusedRetriever([first])
    with pytest.raises(ValueError, match="depth must be >= 1"):
        FusedRetriever([first, second], depth=0)


def test_spec_grammar(tmp_path):
    assert retriever_spec_parts("dense") == ["dense"]
    assert retriever_spec_parts("runs/glm + dense") == ["runs/glm", "dense"]
    plus_dir = tmp_path / "owner+name"
    plus_dir.mkdir()
    assert retriever_spec_parts(str(plus_dir)) == [str(plus_dir)]  # an existing path is one retriever
    with pytest.raises(RetrieverSpecError, match="empty name"):
        retriever_spec_parts("runs/glm+")
    with pytest.raises(RetrieverSpecError, match="twice"):
        retriever_spec_parts("dense+dense")
    with pytest.raises(
        RetrieverSpecError, match="'nowhere': expected 'dense', 'ppr', 'routed' or a retriever directory"
    ):
        check_retriever_spec("dense+nowhere")


def test_a_gnn_fused_with_dense_loads_from_one_spec_and_keeps_both_rankings(tmp_path, small_index):
    torch.manual_seed(0)
    settings = GNNSettings(hidden_dim=16, num_layers=2, doc_ranker="score_idf")
    out = save_gnn_retriever(tmp_path / "gnn", QueryNBFNet(settings), settings)
    index = KGIndex(small_index)
    check_retriever_spec(f"{out}+dense")
    fused = load_retriever(f"{out}+dense", index)
    assert isinstance(fused, FusedRetriever)
    gnn, dense = fused.retrievers
    assert isinstance(gnn, GNNRetriever) and isinstance(dense, DenseRetriever)
    queries = [
        RetrievalQuery("Which drug treats Kellan fever?", ("kellan fever",)),
        RetrievalQuery("Which city is a harbour known for shipbuilding?", ()),
    ]
    results = fused.retrieve(queries, k=3)
    gnn_results = gnn.retrieve(queries, k=20)
    dense_results = dense.retrieve(queries, k=20)
    for result, g, d in zip(results, gnn_results, dense_results, strict=True):
        expected = reciprocal_rank_fusion([g.documents, d.documents], k=3)
        assert [x.doc_id for x in result.documents] == [x.doc_id for x in expected]
        assert result.entities == g.entities
    # the unlinked question: the GNN's dense fallback and the dense baseline agree, so fusion does too
    assert [x.doc_id for x in results[1].documents] == [x.doc_id for x in dense_results[1].documents[:3]]
    assert results[1].notes == ["no linked seed entity: dense fallback"]


def test_the_serving_preflight_reads_the_fused_spec(tmp_path, small_index):
    from serving.builder import check_sources
    from serving.settings import QAAppSettings

    settings = GNNSettings(hidden_dim=8, num_layers=1)
    out = save_gnn_retriever(tmp_path / "gnn", QueryNBFNet(settings), settings)
    check_sources(QAAppSettings(index=str(small_index), retriever=f"{out}+dense"))
    with pytest.raises(ValueError, match="expected 'dense', 'ppr', 'routed' or a retriever directory"):
        check_sources(QAAppSettings(index=str(small_index), retriever=f"dense+{tmp_path / 'missing'}"))


def test_eval_retrieval_takes_a_fused_spec(tmp_path, small_index, capsys):
    import json

    from hoprag_cli import main
    from hoprag_cli.evaluate import retrieval_system_name

    settings = GNNSettings(hidden_dim=8, num_layers=1)
    out = save_gnn_retriever(tmp_path / "gnn" / "retriever", QueryNBFNet(settings), settings)
    assert (
        main(["eval", "retrieval", "--index", str(small_index), "--retriever", f"{out}+dense", "--json"]) == 0
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["retriever"].startswith(f"gnn:{out}+dense:")  # both names, the graph retriever first
    # `--out` runs it as an eval system, whose name may not hold '+'
    assert retrieval_system_name(f"{tmp_path / 'gnn'}+dense") == "gnn-rrf-dense"
    assert retrieval_system_name("dense") == "dense"
    assert main(["eval", "retrieval", "--index", str(small_index), "--retriever", "dense+"]) == 2
    assert "an empty name around '+'" in capsys.readouterr().err
