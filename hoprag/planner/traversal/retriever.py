"""A document retriever (the trained GLM, or the dense baseline) as a planner traversal.

The GLM scores the entities of the subgraph around the clue query's vertices; its top entities
give documents (the IDF ranker) and triples (the fact triples joining two top entities, or a top
entity and a seed). The dense baseline gives documents only.
"""

from __future__ import annotations

import math

from hoprag.planner.knowledge import KnowledgeGraphView
from hoprag.planner.traversal.base import ClueQuery, Knowledge, ScoredTriple
from hoprag.retrieval.base import RetrievalQuery, RetrievalResult, Retriever


class RetrieverTraversal:
    """Documents and entity-scored triples from a :class:`~hoprag.retrieval.base.Retriever`."""

    def __init__(
        self,
        kg: KnowledgeGraphView,
        retriever: Retriever,
        top_documents: int = 5,
        top_entities: int = 20,
        max_triples: int = 25,
    ) -> None:
        self.kg = kg
        self.retriever = retriever
        self.top_documents = top_documents
        self.top_entities = top_entities
        self.max_triples = max_triples

    @property
    def name(self) -> str:
        return "glm" if self.retriever.name.startswith("glm") else self.retriever.name.split(":")[0]

    def retrieve(self, query: ClueQuery) -> Knowledge:
        seeds = tuple(self.kg.index.entity_names[s] for s in query.seeds)
        result = self.retriever.retrieve([RetrievalQuery(query.text, seeds)], self.top_documents)[0]
        return self.knowledge(query.seeds, result)

    def knowledge(self, seeds: tuple[int, ...], result: RetrievalResult) -> Knowledge:
        """The documents of a retrieval result, and the fact triples joining its top entities (or a
        top entity and a seed), scored by the mean of their entity probabilities."""
        probability: dict[int, float] = {}
        for name, logit in result.entities[: self.top_entities]:
            eid = self.kg.index.entity_id(name)
            if eid is not None:
                probability[eid] = 1.0 / (1.0 + math.exp(-logit))
        anchors = set(probability) | set(seeds)
        scored: dict[int, float] = {}
        for e, p in probability.items():
            neighbors, triples = self.kg.index.neighbors(e)
            for n, t in zip(neighbors.tolist(), triples.tolist(), strict=True):
                if n in anchors and self.kg.is_fact(t):
                    scored[t] = max(scored.get(t, 0.0), (p + probability.get(n, 1.0)) / 2)
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_triples]
        return Knowledge(
            triples=[ScoredTriple(t, s, self.name) for t, s in ranked],
            documents=list(result.documents),
            notes=[f"{self.name}: {n}" for n in result.notes],
        )
