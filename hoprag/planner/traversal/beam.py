"""BeamSearch: the best paths of up to ``depth`` triples from each seed vertex.

A triple's cost is ``-ln(similarity)`` between the clue query and the triple's text (so a path
of relevant triples is cheap); a path's score is its summed cost divided by ``length ** alpha``
(alpha < 1 lets longer paths compete without favouring them outright); lower is better. Triples
below ``min_similarity`` are never walked. No vertex or triple is reused within a path or
across the paths of the current beam, so cycles cannot be walked and paths spread out. With a
memory graph, the walk also reads the theses of the vertices its paths pass (``theses`` of them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hoprag.planner.knowledge import KnowledgeGraphView
from hoprag.planner.traversal.base import ClueQuery, Knowledge, ScoredTriple, theses_of_walk


@dataclass(frozen=True)
class _Path:
    nodes: tuple[int, ...]
    triples: tuple[int, ...]
    cost: float

    def score(self, alpha: float) -> float:
        return self.cost / (len(self.triples) ** alpha)


class BeamSearchTraversal:
    """PAI-2's BeamSearch (paper defaults: depth 3, 10 paths, alpha 0.75)."""

    name = "beam"

    def __init__(
        self,
        kg: KnowledgeGraphView,
        depth: int = 3,
        max_paths: int = 10,
        alpha: float = 0.75,
        fetch: int = 50,
        min_similarity: float = 0.1,
        theses: int = 0,
    ) -> None:
        self.kg = kg
        self.depth = depth
        self.max_paths = max_paths
        self.alpha = alpha
        self.fetch = fetch
        self.min_similarity = min_similarity
        self.theses = theses

    def paths(self, query: ClueQuery, seed: int) -> list[_Path]:
        """The selected paths from one seed, best first."""
        beam = [_Path((seed,), (), 0.0)]
        ended: list[_Path] = []
        for _ in range(self.depth):
            used_nodes = {n for p in beam for n in p.nodes}
            used_triples = {t for p in beam for t in p.triples}
            candidates: list[_Path] = []
            for path in beam:
                neighbors, triple_ids = self.kg.index.neighbors(path.nodes[-1])
                keep = np.array(
                    [
                        n not in used_nodes and t not in used_triples
                        for n, t in zip(neighbors.tolist(), triple_ids.tolist(), strict=False)
                    ],
                    dtype=bool,
                )
                neighbors, triple_ids = neighbors[keep], triple_ids[keep]
                sims = self.kg.similarity(query.vector, triple_ids) if len(triple_ids) else np.zeros(0)
                ok = np.flatnonzero(sims >= self.min_similarity)
                ok = ok[np.lexsort((triple_ids[ok], -sims[ok]))][: self.fetch]
                if len(ok) == 0:
                    if path.triples:
                        ended.append(path)
                    continue
                extensions = [
                    _Path(
                        (*path.nodes, int(neighbors[i])),
                        (*path.triples, int(triple_ids[i])),
                        path.cost - math.log(max(float(sims[i]), 1e-6)),
                    )
                    for i in ok.tolist()
                ]
                extensions.sort(key=lambda p: p.cost)
                candidates.extend(extensions[: self.max_paths])
            candidates.sort(key=lambda p: (p.cost, p.triples))
            # Two extensions made in the same round may not share a vertex either.
            beam = []
            taken: set[int] = set()
            for c in candidates:
                if c.nodes[-1] in taken:
                    continue
                taken.add(c.nodes[-1])
                beam.append(c)
                if len(beam) == self.max_paths:
                    break
            if not beam:
                break
        pool = [p for p in beam if p.triples] + ended
        pool.sort(key=lambda p: (p.score(self.alpha), p.triples))
        return pool[: self.max_paths]

    def retrieve(self, query: ClueQuery) -> Knowledge:
        best: dict[int, float] = {}
        walked: list[int] = []
        for seed in dict.fromkeys(query.seeds):
            for path in self.paths(query, seed):
                score = -path.score(self.alpha)  # higher is better outside the search
                walked.extend(path.nodes)
                for t in path.triples:
                    best[t] = max(best.get(t, -math.inf), score)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
        notes = [] if query.seeds else ["beam: no seed vertex"]
        return Knowledge(
            triples=[ScoredTriple(t, s, self.name) for t, s in ranked],
            notes=notes,
            theses=theses_of_walk(self.kg, walked or list(query.seeds), query, self.theses, self.name),
        )
