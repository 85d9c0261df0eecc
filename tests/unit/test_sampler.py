"""The GLM subgraph sampler: budget, hop limit, priorities, determinism, hub handling."""

from __future__ import annotations

import numpy as np

from hoprag.glm.sampler import SamplerConfig, sample_subgraph
from hoprag.kg.tables import Adjacency


def graph(edges: list[tuple[int, int]], n: int) -> tuple[Adjacency, np.ndarray, np.ndarray]:
    head = np.array([h for h, _ in edges], dtype=np.int32)
    tail = np.array([t for _, t in edges], dtype=np.int32)
    return Adjacency.build(n, head, tail), head, tail


# 0 - 1 - 2 - 3 - 4 (a chain), 0 - 5, 1 - 6, and a direct edge between the seeds 0 and 3
CHAIN = [(0, 1), (1, 2), (2, 3), (3, 4), (0, 5), (1, 6), (3, 0)]


def test_seed_pair_triples_come_first_even_with_a_tiny_budget():
    adj, _, _ = graph(CHAIN, 7)
    sub = sample_subgraph(adj, [3, 0], SamplerConfig(max_triplets=1))
    assert sub.triple_ids == [6]  # (3, 0) connects the two seeds
    assert sub.seed_pair_triples == 1
    assert sub.seeds == [0, 3]


def test_hop_limit_and_hop_priority():
    adj, head, tail = graph(CHAIN, 7)
    one = sample_subgraph(adj, [0], SamplerConfig(max_hops=1, max_triplets=100))
    assert sorted(one.triple_ids) == [0, 4, 6]  # every triple touching entity 0, nothing further
    assert one.distance == {0: 0, 1: 1, 5: 1, 3: 1}
    two = sample_subgraph(adj, [0], SamplerConfig(max_hops=2, max_triplets=100))
    assert set(two.triple_ids) == {0, 4, 6, 1, 5, 2, 3}
    assert two.triple_ids[:3] == [t for t in two.triple_ids if 0 in (head[t], tail[t])]  # hop-1 first
    assert two.distance[2] == 2 and two.distance[4] == 2 and two.distance[6] == 2


def test_budget_is_respected_and_sampling_is_deterministic():
    rng = np.random.default_rng(0)
    edges = [(int(a), int(b)) for a, b in rng.integers(0, 200, size=(2000, 2)) if a != b]
    adj, _, _ = graph(edges, 200)
    cfg = SamplerConfig(max_triplets=50, seed=1)
    first = sample_subgraph(adj, [5, 17], cfg)
    assert len(first.triple_ids) == 50 == len(set(first.triple_ids))
    assert sample_subgraph(adj, [17, 5], cfg).triple_ids == first.triple_ids  # seed order does not matter
    other = sample_subgraph(adj, [5, 17], SamplerConfig(max_triplets=50, seed=2))
    assert other.triple_ids != first.triple_ids


def test_hub_entities_are_subsampled_not_enumerated():
    hub_edges = [(0, i) for i in range(1, 50_001)]
    adj, _, _ = graph(hub_edges, 50_001)
    sub = sample_subgraph(adj, [0], SamplerConfig(max_triplets=30, max_hops=2))
    assert len(sub.triple_ids) == 30
    assert len(sub.entity_ids) == 31


def test_no_seeds_or_isolated_seeds_give_empty_subgraphs():
    adj, _, _ = graph(CHAIN, 8)
    assert sample_subgraph(adj, [], SamplerConfig()).triple_ids == []
    isolated = sample_subgraph(adj, [7], SamplerConfig())
    assert isolated.triple_ids == [] and isolated.entity_ids == [7]
