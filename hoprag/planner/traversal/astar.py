"""A* (PAI-1's fourth traversal): the cheapest paths between the clue query's vertices.

With two or more seed vertices, A* searches the best path between every pair of them (what a
question naming two things asks about is how they connect). With one seed, the targets are the
entities whose names are nearest the clue query (``targets`` of them).

A triple's cost is ``1 + (1 - cosine(query, triple)) / 2`` in [1, 2]: every hop costs at least one,
so shorter connections win, and among equally long ones the triples closer to the query. The
heuristic is 0 at a target and 1 elsewhere (at least one more hop remains): admissible and
consistent, so the first path that reaches a target is a cheapest one (no vertex is expanded
twice). ``max_expansions`` bounds the work around hubs; a path longer than ``max_depth`` hops
is not returned.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from hoprag.planner.knowledge import KnowledgeGraphView
from hoprag.planner.traversal.base import ClueQuery, Knowledge, ScoredTriple, theses_of_walk


@dataclass(frozen=True)
class Path:
    """A path found by A*: its vertices, the triples joining them, and its summed cost."""

    nodes: tuple[int, ...]
    triples: tuple[int, ...]
    cost: float


def triple_costs(similarities: np.ndarray) -> np.ndarray:
    """The cost of walking triples with these cosine similarities to the query (see the module)."""
    return 1.0 + (1.0 - np.clip(similarities, -1.0, 1.0)) / 2.0


class AStarTraversal:
    """Cheapest paths between seed vertices (or from the seed to the entities nearest the query)."""

    name = "astar"

    def __init__(
        self,
        kg: KnowledgeGraphView,
        max_depth: int = 4,
        targets: int = 3,
        max_expansions: int = 5000,
        theses: int = 0,
    ) -> None:
        self.kg = kg
        self.max_depth = max_depth
        self.targets = targets
        self.max_expansions = max_expansions
        self.theses = theses

    def best_path(self, query: ClueQuery, source: int, goals: set[int]) -> Path | None:
        """The cheapest path from ``source`` to any of ``goals`` (``None`` when none is reached
        within ``max_expansions`` expanded vertices or ``max_depth`` hops)."""
        goals = goals - {source}
        if not goals:
            return None
        best = {source: 0.0}
        parent: dict[int, tuple[int, int]] = {}
        closed: set[int] = set()
        heap = [(1.0, 0.0, source)]
        while heap and len(closed) < self.max_expansions:
            _, cost, vertex = heapq.heappop(heap)
            if vertex in closed:
                continue
            if vertex in goals:
                return self._path(parent, vertex, cost)
            closed.add(vertex)
            neighbors, triple_ids = self.kg.index.neighbors(vertex)
            if len(triple_ids) == 0:
                continue
            costs = triple_costs(self.kg.similarity(query.vector, triple_ids))
            for n, t, c in zip(neighbors.tolist(), triple_ids.tolist(), costs.tolist(), strict=True):
                reached = cost + c
                if n not in closed and reached < best.get(n, np.inf):
                    best[n] = reached
                    parent[n] = (vertex, t)
                    heapq.heappush(heap, (reached + (0.0 if n in goals else 1.0), reached, n))
        return None

    def _path(self, parent: dict[int, tuple[int, int]], end: int, cost: float) -> Path | None:
        nodes, triples = [end], []
        while end in parent:
            end, triple = parent[end]
            nodes.append(end)
            triples.append(triple)
        if len(triples) > self.max_depth:
            return None
        return Path(tuple(nodes[::-1]), tuple(triples[::-1]), cost)

    def _targets(self, query: ClueQuery, seeds: list[int]) -> list[int]:
        search = self.kg.index.vector_search("entity")
        if search is None:
            return []
        ids, _ = search.search(query.vector, self.targets + len(seeds))
        return [int(i) for i in ids[0] if i >= 0 and int(i) not in seeds][: self.targets]

    def retrieve(self, query: ClueQuery) -> Knowledge:
        seeds = list(dict.fromkeys(query.seeds))
        if not seeds:
            return Knowledge(notes=["astar: no seed vertex"])
        if len(seeds) >= 2:
            pairs = [(a, b) for i, a in enumerate(seeds) for b in seeds[i + 1 :]]
        else:
            pairs = [(seeds[0], t) for t in self._targets(query, seeds)]
        scored: dict[int, float] = {}
        walked: list[int] = list(seeds)
        for source, goal in pairs:
            path = self.best_path(query, source, {goal})
            if path is None:
                continue
            walked.extend(path.nodes)
            for t in path.triples:
                scored[t] = max(scored.get(t, -np.inf), -path.cost / len(path.triples))
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))
        return Knowledge(
            triples=[ScoredTriple(t, s, self.name) for t, s in ranked],
            notes=[] if ranked else ["astar: no path between the clue query's vertices"],
            theses=theses_of_walk(self.kg, walked, query, self.theses, self.name),
        )
