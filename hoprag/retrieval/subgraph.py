"""What every subgraph retriever shares: question subgraph → entity logits → ranked documents.

The GLM (a graph language model) and the GNN (GFM-RAG's query-dependent NBFNet) differ only in
how they score the entities of a question's sampled subgraph. The sampler, the question embedder,
the document ranker and the handling of questions without a linked seed entity are the same, and
live here so that both retrievers rank documents from entity scores in exactly one way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field

from hoprag.config import StrictModel
from hoprag.embedding import EmbedderConfig
from hoprag.glm.sampler import SamplerConfig
from hoprag.retrieval.base import RankedDocument, RetrievalQuery, RetrievalResult, Retriever
from hoprag.retrieval.ranking import rank_documents_idf

if TYPE_CHECKING:
    from hoprag.embedding import Embedder
    from hoprag.kg.index import KGIndex

# (entity_id, logit) for every entity of each query's subgraph, in query order.
EntityScores = list[list[tuple[int, float]]]


class SubgraphRetrieverSettings(StrictModel):
    """Sampler, question embedder and document ranker of a retriever that scores subgraph entities."""

    sampler: SamplerConfig = Field(default_factory=SamplerConfig)
    question_embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    question_dim: int = Field(default=384, ge=1)
    top_entities: int = Field(default=20, ge=1, description="Entities that vote for documents (IDF ranker).")
    doc_ranker: Literal["idf", "score_idf"] = Field(
        default="idf",
        description="idf: GFM-RAG's ranker (top entities vote 1/df); score_idf: votes weighted by the entity's "
        "probability (better when subgraphs have fewer entities than top_entities).",
    )
    batch_size: int = Field(default=4, ge=1, description="Questions per forward at inference.")

    def rank_documents(
        self,
        entity_ids: Sequence[int],
        entity_logits: Sequence[float],
        entity_docs: tuple[np.ndarray, np.ndarray],
        k: int,
    ) -> list[tuple[int, float]]:
        """The ``k`` best ``(doc_id, score)`` for a subgraph's scored entities, with this retriever's
        ranker (``doc_ranker``, ``top_entities``); ``entity_docs``: the index's ``entity_documents``."""
        indptr, docs = entity_docs
        return rank_documents_idf(
            entity_ids,
            entity_logits,
            indptr,
            docs,
            k,
            self.top_entities,
            weight_by_score=self.doc_ranker == "score_idf",
        )


def score_in_batches(
    queries: Sequence[RetrievalQuery],
    question_embedder: Embedder,
    batch_size: int,
    score_batch: Callable[[Sequence[RetrievalQuery], np.ndarray], EntityScores],
) -> EntityScores:
    """Embed the questions once, then score their subgraphs ``batch_size`` queries at a time
    (``score_batch(queries, question_vectors)`` → one entity-score list per query)."""
    vectors = question_embedder.encode([q.question for q in queries])
    out: EntityScores = []
    for start in range(0, len(queries), batch_size):
        out.extend(score_batch(queries[start : start + batch_size], vectors[start : start + batch_size]))
    return out


def retrieve_by_entity_scores(
    index: KGIndex,
    queries: Sequence[RetrievalQuery],
    k: int,
    score: Callable[[Sequence[RetrievalQuery]], EntityScores],
    settings: SubgraphRetrieverSettings,
    fallback: Retriever | None,
) -> list[RetrievalResult]:
    """Rank documents for ``queries`` from the entity logits ``score`` gives their subgraphs.

    Questions without a linked seed entity have no subgraph; ``fallback`` (the dense baseline)
    answers them and the result says so in ``notes`` (no documents without a fallback).
    """
    results: list[RetrievalResult | None] = [None] * len(queries)
    seeded = [
        i for i, q in enumerate(queries) if any(index.entity_id(e) is not None for e in q.question_entities)
    ]
    seeded_set = set(seeded)
    unseeded = [i for i in range(len(queries)) if i not in seeded_set]
    entity_docs = index.entity_documents
    titles = index.document_titles
    for i, scored in zip(seeded, score([queries[i] for i in seeded]), strict=True):
        ranked = settings.rank_documents([e for e, _ in scored], [s for _, s in scored], entity_docs, k)
        top = sorted(scored, key=lambda x: -x[1])
        results[i] = RetrievalResult(
            documents=[RankedDocument(d, titles[d], s) for d, s in ranked],
            entities=[(index.entity_names[e], s) for e, s in top],
        )
    if unseeded:
        note = "no linked seed entity: " + ("dense fallback" if fallback else "no documents")
        answers = fallback.retrieve([queries[i] for i in unseeded], k) if fallback else None
        for j, i in enumerate(unseeded):
            res = answers[j] if answers else RetrievalResult(documents=[])
            res.notes.append(note)
            results[i] = res
    return [r if r is not None else RetrievalResult(documents=[]) for r in results]
