"""Traversals on a small hand-built KG with known answers (see ``film_kg`` in conftest)."""

from __future__ import annotations

import numpy as np
import pytest

from hoprag.planner.search import BM25
from hoprag.planner.traversal.base import ClueQuery
from hoprag.planner.traversal.beam import BeamSearchTraversal
from hoprag.planner.traversal.naive import NaiveTraversal
from hoprag.planner.traversal.retriever import RetrieverTraversal
from hoprag.planner.traversal.water_circles import WaterCirclesTraversal
from hoprag.retrieval.dense import DenseRetriever
from hoprag.retrieval.fusion import weighted_rrf


def _query(kg, text: str, *seeds: str) -> ClueQuery:
    ids = tuple(kg.index.entity_id(s) for s in seeds)
    assert None not in ids
    return ClueQuery(text, kg.embed([text])[0], ids)


def _texts(kg, knowledge) -> list[str]:
    return [" | ".join(kg.triple_parts(t.triple_id)) for t in knowledge.triples]


def test_weighted_rrf_by_hand() -> None:
    # a: 0.7/61 + 0.3/62; b: 0.7/62; c: 0.3/61
    fused = dict(weighted_rrf([["a", "b"], ["c", "a"]], [0.7, 0.3]))
    assert fused["a"] == pytest.approx(0.7 / 61 + 0.3 / 62)
    assert fused["b"] == pytest.approx(0.7 / 62)
    assert list(dict(weighted_rrf([["a", "b"], ["c", "a"]], [0.7, 0.3]))) == ["a", "b", "c"]


def test_bm25_prefers_rare_terms_and_ignores_absent_ones() -> None:
    bm25 = BM25(["carl boese", "carl berlin", "worms germany"])
    s = bm25.scores("Boese")
    assert s[0] > 0 and s[1] == 0 and s[2] == 0
    assert bm25.scores("nothing here").sum() == 0


def test_beam_depth_limits_paths_and_no_vertex_is_reused(film_kg) -> None:
    q = _query(film_kg, "What country is the director of Payment On Demand from?", "Payment On Demand")
    for depth in (1, 2, 3):
        beam = BeamSearchTraversal(film_kg, depth=depth, max_paths=10, min_similarity=-1.0)
        paths = beam.paths(q, q.seeds[0])
        assert paths and all(1 <= len(p.triples) <= depth for p in paths)
        assert max(len(p.triples) for p in paths) == depth  # the graph is deep enough
        for p in paths:
            assert len(set(p.nodes)) == len(p.nodes)  # the Worms-Berlin-Germany cycle is never closed
            assert len(set(p.triples)) == len(p.triples)
    two_hops = _texts(film_kg, BeamSearchTraversal(film_kg, depth=2, min_similarity=-1.0).retrieve(q))
    assert "Curtis Bernhardt | born in | Worms" in two_hops
    assert "Worms | city in | Germany" not in two_hops  # three hops away
    assert "Ostarizumab | treats | Kellan fever" not in two_hops  # another component


def test_beam_paths_do_not_share_vertices_across_the_beam(film_kg) -> None:
    q = _query(film_kg, "Where was Curtis Bernhardt born?", "Curtis Bernhardt")
    paths = BeamSearchTraversal(film_kg, depth=3, max_paths=10, min_similarity=-1.0).paths(q, q.seeds[0])
    ends = [p.nodes[-1] for p in paths]
    assert len(ends) == len(set(ends))


def test_beam_threshold_prunes_irrelevant_triples_and_needs_seeds(film_kg) -> None:
    q = _query(film_kg, "Where was Curtis Bernhardt born?", "Curtis Bernhardt")
    assert BeamSearchTraversal(film_kg, min_similarity=0.99).retrieve(q).triples == []
    unseeded = BeamSearchTraversal(film_kg).retrieve(ClueQuery(q.text, q.vector, ()))
    assert unseeded.triples == [] and unseeded.notes == ["beam: no seed vertex"]


def test_water_circles_joins_two_seeds_through_where_their_circles_meet(film_kg) -> None:
    q = _query(
        film_kg,
        "Are Curtis Bernhardt and Carl Boese from the same country?",
        "Curtis Bernhardt",
        "Carl Boese",
    )
    found = _texts(film_kg, WaterCirclesTraversal(film_kg, depth=2).retrieve(q))
    # Curtis -> Worms -> {Germany, Berlin} and Carl -> Berlin -> Germany meet at Berlin and Germany.
    assert {"Curtis Bernhardt | born in | Worms", "Carl Boese | born in | Berlin"} <= set(found)
    assert "Worms | twinned with | Berlin" in found or "Worms | city in | Germany" in found
    assert not any("Payment On Demand" in t or "Pearl Argyle" in t for t in found)  # off the chains


def test_water_circles_quota_and_fallback_without_chains(film_kg) -> None:
    q = _query(
        film_kg,
        "Are Curtis Bernhardt and Carl Boese from the same country?",
        "Curtis Bernhardt",
        "Carl Boese",
    )
    small = WaterCirclesTraversal(film_kg, depth=2, chain_quota=2).retrieve(q)
    assert 0 < len(small.triples) <= 2  # quota 2 for two seeds with chains: int(2 / 2) = 1 each
    # Seeds in different components never meet: each gives its one-hop triples (other_quota).
    apart = _query(film_kg, "Does Ostarizumab treat Curtis Bernhardt?", "Ostarizumab", "Curtis Bernhardt")
    found = _texts(film_kg, WaterCirclesTraversal(film_kg, depth=3, other_quota=1).retrieve(apart))
    assert len(found) == 2 and "Ostarizumab | treats | Kellan fever" in found


def test_naive_finds_the_fact_without_seeds(film_kg) -> None:
    q = ClueQuery(
        "Who directed My Cousin From Warsaw?", film_kg.embed(["Who directed My Cousin From Warsaw?"])[0]
    )
    found = _texts(film_kg, NaiveTraversal(film_kg, k=3).retrieve(q))
    assert found[0] == "My Cousin From Warsaw | directed by | Carl Boese"
    assert len(found) == 3


def test_retriever_traversal_gives_documents_from_the_dense_baseline(film_kg, embedder) -> None:
    q = _query(film_kg, "Who directed My Cousin From Warsaw?", "My Cousin From Warsaw")
    knowledge = RetrieverTraversal(
        film_kg, DenseRetriever(film_kg.index, embedder), top_documents=2
    ).retrieve(q)
    assert knowledge.documents[0].title == "My Cousin From Warsaw"
    assert knowledge.triples == []  # the dense baseline scores no entities


def test_vertex_matching_exact_wins_and_fuzzy_returns_at_most_k(film_kg) -> None:
    exact = film_kg.match_vertices("curtis  Bernhardt")
    assert [(m.name, m.exact) for m in exact] == [("curtis bernhardt", True)]
    fuzzy = film_kg.match_vertices("Bernhardt", k=3)
    assert 1 <= len(fuzzy) <= 3 and fuzzy[0].name == "curtis bernhardt" and not fuzzy[0].exact
    assert film_kg.match_vertices("   ") == []
    vectors = film_kg.triple_vectors
    assert vectors.shape == (film_kg.index.num_triples, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_retriever_traversal_gives_gnn_scored_triples(film_kg, embedder) -> None:
    """The GNN baseline joins the planner like the GLM: its entity scores pick fact triples."""
    import torch

    from hoprag.gnn.model import QueryNBFNet
    from hoprag.gnn.retriever import GNNRetriever
    from hoprag.gnn.settings import GNNSettings

    torch.manual_seed(0)
    settings = GNNSettings(hidden_dim=16, num_layers=2)
    retriever = GNNRetriever(film_kg.index, QueryNBFNet(settings), settings, embedder, name="gnn:run")
    q = _query(film_kg, "Who directed My Cousin From Warsaw?", "My Cousin From Warsaw")
    traversal = RetrieverTraversal(film_kg, retriever, top_documents=2)
    knowledge = traversal.retrieve(q)
    assert traversal.name == "gnn"
    assert knowledge.documents and knowledge.triples
    assert all(t.source == "gnn" and 0 < t.score < 1 for t in knowledge.triples)
    seed = film_kg.index.entity_id("My Cousin From Warsaw")
    assert all(film_kg.is_fact(t.triple_id) for t in knowledge.triples)
    assert any(
        seed in (film_kg.index.head[t.triple_id], film_kg.index.tail[t.triple_id]) for t in knowledge.triples
    )


def _brute_force_cheapest(kg, query: ClueQuery, source: int, goal: int, max_hops: int):
    """Every simple path from source to goal (networkx), costed as A* costs them."""
    import networkx as nx

    from hoprag.planner.traversal.astar import triple_costs

    g = nx.MultiGraph()
    for t in range(kg.index.num_triples):
        g.add_edge(int(kg.index.head[t]), int(kg.index.tail[t]), key=t)
    best = None
    for edge_path in nx.all_simple_edge_paths(g, source, goal, cutoff=max_hops):
        triples = [k for _, _, k in edge_path]
        cost = float(triple_costs(kg.similarity(query.vector, np.array(triples))).sum())
        if best is None or cost < best[0] - 1e-9:
            best = (cost, tuple(triples))
    return best


def test_astar_finds_the_cheapest_path_between_two_seeds(film_kg) -> None:
    from hoprag.planner.traversal.astar import AStarTraversal

    astar = AStarTraversal(film_kg, max_depth=6)
    for text, a, b in [
        ("Where was the director of Payment On Demand born?", "Payment On Demand", "Worms"),
        (
            "Are Payment On Demand and My Cousin From Warsaw from the same country?",
            "Payment On Demand",
            "My Cousin From Warsaw",
        ),
        ("How is Pearl Argyle related to Berlin?", "Pearl Argyle", "Berlin"),
    ]:
        q = _query(film_kg, text, a, b)
        path = astar.best_path(q, q.seeds[0], {q.seeds[1]})
        expected = _brute_force_cheapest(film_kg, q, q.seeds[0], q.seeds[1], 6)
        assert path is not None and expected is not None
        assert path.triples == expected[1] and path.cost == pytest.approx(expected[0])
        assert path.nodes[0] == q.seeds[0] and path.nodes[-1] == q.seeds[1]
    # the two films connect through their directors' birthplaces: 5 hops (film, director, city,
    # city, director, film)
    q = _query(
        film_kg, "Payment On Demand and My Cousin From Warsaw", "Payment On Demand", "My Cousin From Warsaw"
    )
    found = _texts(film_kg, astar.retrieve(q))
    assert "Payment On Demand | directed by | Curtis Bernhardt" in found
    assert "Carl Boese | born in | Berlin" in found
    assert not any("Kellan fever" in t for t in found)


def test_astar_prefers_the_path_closer_to_the_query_among_equally_long_ones(film_kg) -> None:
    from hoprag.planner.traversal.astar import AStarTraversal

    # Worms -> Germany directly (1 hop) beats Worms -> Berlin -> Germany; and from Curtis Bernhardt
    # to Germany both 2- and 3-hop routes exist: the 2-hop one via Worms wins.
    q = _query(film_kg, "What country is Curtis Bernhardt's birthplace in?", "Curtis Bernhardt", "Germany")
    path = AStarTraversal(film_kg).best_path(q, q.seeds[0], {q.seeds[1]})
    assert path is not None
    assert [" | ".join(film_kg.triple_parts(t)) for t in path.triples] == [
        "Curtis Bernhardt | born in | Worms",
        "Worms | city in | Germany",
    ]
    assert AStarTraversal(film_kg, max_depth=1).best_path(q, q.seeds[0], {q.seeds[1]}) is None
    far = _query(film_kg, "Kellan fever and Berlin", "Kellan fever", "Berlin")
    assert AStarTraversal(film_kg).retrieve(far).notes == ["astar: no path between the clue query's vertices"]
    assert AStarTraversal(film_kg).retrieve(ClueQuery("x", q.vector, ())).notes == ["astar: no seed vertex"]


def test_traversals_read_the_theses_of_the_vertices_they_walk(film_kg) -> None:
    from hoprag.planner.traversal.astar import AStarTraversal

    assert film_kg.has_theses
    q = _query(film_kg, "Where was the director of Payment On Demand born?", "Payment On Demand")
    for traversal in (
        BeamSearchTraversal(film_kg, depth=2, theses=3),
        WaterCirclesTraversal(film_kg, theses=3),
        AStarTraversal(film_kg, theses=3),
        NaiveTraversal(film_kg, theses=3),
    ):
        found = traversal.retrieve(q)
        texts = [film_kg.thesis_text(t.thesis_id) for t in found.theses]
        assert 0 < len(texts) <= 3, traversal.name
        assert all(t.source == traversal.name for t in found.theses)
    beam = BeamSearchTraversal(film_kg, depth=2, theses=10).retrieve(q)
    texts = [film_kg.thesis_text(t.thesis_id) for t in beam.theses]
    # statements of walked vertices only; a statement joining two of them first
    assert "Payment On Demand directed by Curtis Bernhardt." in texts[:2]
    assert not any("Kellan" in t for t in texts)
    assert BeamSearchTraversal(film_kg, depth=2).retrieve(q).theses == []  # theses=0: triples only
