"""Question subgraphs for the GLM retriever (GLM-RAG App. B): a bounded neighbourhood of the seeds.

Priorities, in order, until ``max_triplets`` triples are chosen:
1. triples that directly connect two seed entities (the evidence a multi-hop question is about);
2. a randomized breadth-first expansion from the seeds, hop by hop up to ``max_hops``: every
   triple reached at hop h is considered before any triple of hop h + 1, in a seeded random
   order within the hop.

The work done depends on the size of the neighbourhood and the budget, never on the size of the
KG: an entity with a huge degree contributes a random sample of at most ``max_triplets`` of its
triples (read by position from the CSR adjacency) instead of all of them.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pydantic import Field

from hoprag.config import StrictModel
from hoprag.kg.tables import Adjacency


class SamplerConfig(StrictModel):
    """Subgraph budget (paper defaults: 2 hops, 600 triples)."""

    max_hops: int = Field(default=2, ge=1, le=6, description="Largest distance from a seed entity.")
    max_triplets: int = Field(default=600, ge=1, description="Most triples in one subgraph.")
    seed: int = Field(
        default=0,
        description="Base seed of the randomized expansion (per question it is mixed "
        "with the seed entities, so a question always gets the same subgraph).",
    )


@dataclass
class Subgraph:
    """The chosen triples (by id, in priority order) and the entities they touch, with hop distances."""

    triple_ids: list[int] = field(default_factory=list)
    distance: dict[int, int] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=list)
    seed_pair_triples: int = 0

    @property
    def entity_ids(self) -> list[int]:
        return sorted(self.distance)


def _incident(adjacency: Adjacency, entity: int, limit: int, rng: random.Random) -> list[tuple[int, int]]:
    """``(triple_id, neighbor)`` pairs of ``entity``; a random subset of ``limit`` when the degree is larger."""
    lo = int(adjacency.indptr[entity])
    degree = adjacency.degree(entity)
    positions: Iterable[int] = (
        range(lo, lo + degree) if degree <= limit else (lo + i for i in rng.sample(range(degree), limit))
    )
    return [(int(adjacency.triple_id[p]), int(adjacency.neighbor[p])) for p in positions]


def sample_subgraph(adjacency: Adjacency, seeds: Sequence[int], config: SamplerConfig) -> Subgraph:
    """The question subgraph around ``seeds`` (entity ids); deterministic for a given config and seeds."""
    seed_list = sorted({int(s) for s in seeds})
    sub = Subgraph(seeds=seed_list, distance={s: 0 for s in seed_list})
    if not seed_list:
        return sub
    rng = random.Random(f"{config.seed}:{','.join(map(str, seed_list))}")
    budget = config.max_triplets
    chosen: set[int] = set()
    seed_set = set(seed_list)
    for s in seed_list:
        for tid, nbr in _incident(adjacency, s, budget, rng):
            if nbr in seed_set and tid not in chosen and len(chosen) < budget:
                chosen.add(tid)
                sub.triple_ids.append(tid)
    sub.seed_pair_triples = len(sub.triple_ids)
    frontier = seed_list
    for hop in range(1, config.max_hops + 1):
        candidates: list[tuple[int, int]] = []
        for entity in frontier:
            candidates.extend(_incident(adjacency, entity, budget, rng))
        rng.shuffle(candidates)
        next_frontier: list[int] = []
        for tid, nbr in candidates:
            if len(chosen) >= budget:
                return sub
            if tid in chosen:
                continue
            chosen.add(tid)
            sub.triple_ids.append(tid)
            if nbr not in sub.distance:
                sub.distance[nbr] = hop
                next_frontier.append(nbr)
        frontier = sorted(next_frontier)
        if not frontier:
            break
    return sub
