"""WaterCircles: rings spread from every seed vertex like circles on water; where the circles of
two seeds meet, the chain of triples between them is what a multi-seed question asks about.

Each seed grows breadth-first rings up to ``depth``, remembering the triple it reached each vertex
by. A vertex reached from several seeds closes a *chain* (seed → ... → vertex ← ... ← other
seed); chains joining more seeds come first. Quotas keep many seeds from flooding the context:
``chain_quota`` triples for one seed with chains, half as many per seed for two, about a third
for three or more. With no chain at all (one seed, or seeds in disconnected components), each
seed contributes its ``other_quota`` one-hop triples most similar to the query. With a memory
graph, the theses of the seeds and of the vertices those triples join are read too (``theses``).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from hoprag.planner.knowledge import KnowledgeGraphView
from hoprag.planner.traversal.base import ClueQuery, Knowledge, ScoredTriple, theses_of_walk


class WaterCirclesTraversal:
    """PAI-1/PAI-2 WaterCircles (quotas 25/12/7 chain triples, 6 one-hop fallback triples per seed)."""

    name = "water_circles"

    def __init__(
        self,
        kg: KnowledgeGraphView,
        depth: int = 2,
        chain_quota: int = 25,
        other_quota: int = 6,
        max_ring: int = 2000,
        theses: int = 0,
    ) -> None:
        self.kg = kg
        self.depth = depth
        self.chain_quota = chain_quota
        self.other_quota = other_quota
        self.max_ring = max_ring
        self.theses = theses

    def _rings(self, seed: int) -> dict[int, tuple[int, int]]:
        """Vertex → (parent vertex, triple) for everything within ``depth`` hops of ``seed``."""
        reached: dict[int, tuple[int, int]] = {seed: (-1, -1)}
        frontier = [seed]
        for _ in range(self.depth):
            nxt = []
            for v in frontier:
                neighbors, triples = self.kg.index.neighbors(v)
                for n, t in zip(neighbors.tolist(), triples.tolist(), strict=True):
                    if n not in reached:
                        reached[n] = (v, t)
                        nxt.append(n)
                if len(reached) >= self.max_ring:  # hubs: a ring is capped, not walked whole
                    break
            frontier = nxt
        return reached

    @staticmethod
    def _chain(rings: dict[int, tuple[int, int]], vertex: int) -> list[int]:
        out = []
        while rings[vertex][1] >= 0:
            vertex, triple = rings[vertex]
            out.append(triple)
        return out[::-1]

    def retrieve(self, query: ClueQuery) -> Knowledge:
        seeds = list(dict.fromkeys(query.seeds))
        if not seeds:
            return Knowledge(notes=["water_circles: no seed vertex"])
        rings = {s: self._rings(s) for s in seeds}
        meets: dict[int, list[int]] = defaultdict(list)  # vertex -> seeds whose circles reach it
        for s in seeds:
            for v in rings[s]:
                meets[v].append(s)
        # Chains per seed: (number of seeds joined, triples from this seed to the meeting vertex).
        chains: dict[int, list[tuple[int, list[int]]]] = defaultdict(list)
        for v, who in meets.items():
            if len(who) < 2:
                continue
            for s in who:
                chains[s].append((len(who), self._chain(rings[s], v)))
        with_chains = [s for s in seeds if chains[s]]
        quota = (
            self.chain_quota if len(with_chains) <= 1 else int(self.chain_quota / min(len(with_chains), 3.5))
        )
        scored: dict[int, float] = {}
        for s in with_chains:
            ordered = sorted(chains[s], key=lambda c: (-c[0], len(c[1]), c[1]))
            taken: list[int] = []
            for joined, triples in ordered:
                for t in triples:
                    if t not in taken and len(taken) < quota:
                        taken.append(t)
                        scored[t] = max(scored.get(t, 0.0), float(joined))
        if not scored:
            for s in seeds:
                _, triples = self.kg.index.neighbors(s)
                if len(triples) == 0:
                    continue
                sims = self.kg.similarity(query.vector, triples)
                for i in np.lexsort((triples, -sims))[: self.other_quota].tolist():
                    scored[int(triples[i])] = max(scored.get(int(triples[i]), -1.0), float(sims[i]))
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))
        # The theses read: those of the seeds and of the vertices the chosen triples join.
        walked = seeds + [int(v) for t, _ in ranked for v in (self.kg.index.head[t], self.kg.index.tail[t])]
        return Knowledge(
            triples=[ScoredTriple(t, s, self.name) for t, s in ranked],
            theses=theses_of_walk(self.kg, walked, query, self.theses, self.name),
        )
