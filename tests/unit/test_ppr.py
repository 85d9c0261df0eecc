"""HippoRAG 2's PPR retriever: the walk against networkx's PageRank and a closed form, the passage
graph it walks, multi-hop retrieval on a small real index, its dense fallback, and its spec."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from hoprag.kg.index import KGIndex
from hoprag.kg.store import write_snapshot
from hoprag.retrieval.base import RetrievalQuery
from hoprag.retrieval.loading import check_retriever_spec, load_retriever
from hoprag.retrieval.ppr import (
    PassageGraph,
    PPRRetriever,
    PPRSettings,
    build_passage_graph,
    personalized_pagerank,
)
from indexing.config import SynonymConfig
from indexing.corpus import Document
from indexing.graph import build_tables


def _graph(edges: list[tuple[int, int, float]], n: int) -> PassageGraph:
    rows = [a for a, b, _ in edges] + [b for a, b, _ in edges]
    cols = [b for a, b, _ in edges] + [a for a, b, _ in edges]
    weights = [w for *_, w in edges] * 2
    adjacency = sp.csc_matrix((weights, (rows, cols)), shape=(n, n))
    out = np.asarray(adjacency.sum(axis=0)).ravel()
    scale = np.divide(1.0, out, out=np.zeros_like(out), where=out > 0)
    return PassageGraph((adjacency @ sp.diags(scale)).tocsr(), n, 0, np.zeros(n, np.int64), out == 0)


def test_two_nodes_match_the_closed_form() -> None:
    # r0 = (1-d) + d r1, r1 = d r0  =>  r0 = 1 / (1 + d), r1 = d / (1 + d)
    scores = personalized_pagerank(_graph([(0, 1, 1.0)], 2), np.array([[1.0], [0.0]]), 0.5, 200, 1e-12)
    assert scores[:, 0] == pytest.approx([2 / 3, 1 / 3])


@pytest.mark.parametrize("seed", range(5))
def test_the_walk_equals_networkx_pagerank_with_personalization(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 30
    edges = [
        (int(a), int(b), float(rng.uniform(0.5, 2.0)))
        for a, b in rng.integers(0, n - 3, size=(50, 2))
        if a != b
    ]
    restart = rng.uniform(0, 1, size=n) * (rng.uniform(size=n) < 0.3)
    restart[n - 1] = 0.5  # an isolated node in the restart vector: a dangling node
    restart /= restart.sum()
    ours = personalized_pagerank(_graph(edges, n), restart[:, None], 0.5, 500, 1e-14)[:, 0]
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for a, b, w in edges:  # networkx adds repeated pairs' weights as one edge's
        g.add_edge(a, b, weight=g.get_edge_data(a, b, {"weight": 0.0})["weight"] + w)
    theirs = nx.pagerank(g, alpha=0.5, personalization=dict(enumerate(restart)), weight="weight", tol=1e-14)
    assert ours == pytest.approx([theirs[i] for i in range(n)], abs=1e-9)
    assert ours.sum() == pytest.approx(1.0)


def test_the_passage_graph_joins_triples_synonyms_and_mentions(glm_index: KGIndex) -> None:
    graph = build_passage_graph(glm_index)
    assert (graph.num_entities, graph.num_documents) == (glm_index.num_entities, 3)
    columns = np.asarray(graph.transition.sum(axis=0)).ravel()  # type: ignore[attr-defined]
    assert columns == pytest.approx(np.ones(graph.num_nodes))  # every node has an edge here
    mira, dornwick = glm_index.entity_id("Mira Castell"), glm_index.entity_id("Dornwick")
    assert graph.transition[dornwick, mira] > 0 and graph.transition[mira, dornwick] > 0  # type: ignore[index]
    doc0 = graph.num_entities + 0
    assert graph.transition[doc0, mira] > 0 and graph.transition[mira, doc0] > 0  # type: ignore[index]
    assert graph.entity_doc_counts[dornwick] == 2  # doc0 and doc2 mention it


def test_a_two_hop_question_reaches_the_second_document(glm_index: KGIndex, embedder) -> None:
    retriever = PPRRetriever(glm_index, embedder)
    question = "Which country is the birthplace of Mira Castell in?"
    [result] = retriever.retrieve([RetrievalQuery(question)], k=3)
    assert {d.title for d in result.documents[:2]} == {"doc0", "doc2"}  # Mira's doc, then Dornwick's
    scores = [d.score for d in result.documents]
    assert scores == sorted(scores, reverse=True) and sum(scores) < 1.0  # entities hold the rest
    assert result.notes[0].startswith("ppr seeds: ") and "mira castell" in result.seeds
    assert result.entities and result.entities[0][1] >= result.entities[-1][1]
    batched = retriever.retrieve(
        [RetrievalQuery("Who directed The Ember Road?"), RetrievalQuery(question)], k=3
    )
    # a question's ranking does not depend on its batch (scores to the walk's tolerance)
    assert [d.title for d in batched[1].documents] == [d.title for d in result.documents]
    assert [d.score for d in batched[1].documents] == pytest.approx(scores, abs=1e-6)


def test_an_index_without_facts_ranks_by_dense_similarity(tmp_path, embedder) -> None:
    docs = [Document("Alpha", "Alpha is a harbour city."), Document("Beta", "Beta is a mountain village.")]
    tables = build_tables(docs, [[], []], [[], []], embedder, SynonymConfig(enabled=False))
    write_snapshot(tmp_path / "index", tables, {"counts": {}})
    [result] = PPRRetriever(KGIndex(tmp_path / "index"), embedder).retrieve(
        [RetrievalQuery("a village")], k=2
    )
    assert [d.title for d in result.documents] == ["Beta", "Alpha"]
    assert result.notes == ["ppr: no fact or linked entity matched the question; dense ranking"]


def test_ppr_is_a_retriever_spec_alone_and_fused(glm_index: KGIndex, embedder) -> None:
    check_retriever_spec("ppr")
    check_retriever_spec("ppr+dense")
    fused = load_retriever("ppr+dense", glm_index, embedder)
    assert fused.name.startswith("ppr+dense:")
    [result] = fused.retrieve([RetrievalQuery("Where was Mira Castell born?")], k=2)
    assert result.documents[0].title == "doc0"


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError):
        PPRSettings(damping=1.0)
    with pytest.raises(ValueError):
        PPRSettings(linking_top_k=0)
    assert PPRSettings().model_dump()["damping"] == 0.5


class _Renamed:
    """The same embedder under another model id: the index's stored vectors no longer fit it."""

    def __init__(self, inner) -> None:
        self._inner, self.dim, self.model_id = inner, inner.dim, "another-embedder"

    def encode(self, texts):
        return self._inner.encode(texts)


def test_vectors_encoded_at_load_rank_as_the_stored_ones(glm_index: KGIndex, embedder) -> None:
    """An index built with another embedder: facts and documents are encoded at load and searched
    exactly; with the same model underneath, the ranking is the stored vectors' one."""
    question = [RetrievalQuery("Which country is the birthplace of Mira Castell in?")]
    stored = PPRRetriever(glm_index, embedder).retrieve(question, k=3)[0]
    encoded = PPRRetriever(glm_index, _Renamed(embedder)).retrieve(question, k=3)[0]
    assert [d.title for d in encoded.documents] == [d.title for d in stored.documents]
    assert [d.score for d in encoded.documents] == pytest.approx(
        [d.score for d in stored.documents], abs=1e-4
    )
    assert encoded.notes == stored.notes


def test_the_ppr_section_of_a_config_reaches_the_retriever(glm_index: KGIndex) -> None:
    """`--set ppr.damping=0.6` on ask / serve / eval: the QA settings' section builds the retriever,
    alone and inside a fusion; evaluation passes its own section and records it with the results."""
    from evaluation.config import EvalConfig
    from evaluation.provenance import pair_provenance
    from hoprag.qa.builder import load_components
    from hoprag.qa.config import QASettings

    settings = QASettings.model_validate({"ppr": {"damping": 0.6, "linking_top_k": 3}})
    alone = load_components(glm_index.path, settings, retriever="ppr").retriever
    assert (alone.settings.damping, alone.settings.linking_top_k) == (0.6, 3)  # type: ignore[attr-defined]
    fused = load_components(glm_index.path, settings, retriever="dense+ppr").retriever
    assert fused.retrievers[1].settings.damping == 0.6  # type: ignore[attr-defined]
    config = EvalConfig.model_validate(
        {
            "benchmarks": [{"name": "b", "index": str(glm_index.path)}],
            "systems": [{"name": "p", "kind": "retrieval", "retriever": "ppr+dense"}],
            "out": "unused",
            "ppr": {"damping": 0.7},
        }
    )
    assert config.qa_settings(config.systems[0]).ppr.damping == 0.7
    assert pair_provenance(config, config.benchmarks[0], config.systems[0])["ppr"]["damping"] == 0.7
    with pytest.raises(ValueError, match="damping"):
        QASettings.model_validate({"ppr": {"damping": 1.5}})
