"""What every subgraph retriever shares: question subgraph → entity logits → ranked documents.

The GLM (a graph language model) and the GNN (GFM-RAG's query-dependent NBFNet) differ only in
how they score the entities of a question's sampled subgraph. The sampler, the question embedder,
the document ranker and the handling of questions without a linked seed entity are the same, and
live here so that both retrievers rank documents from entity scores in exactly one way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Literal, Protocol, get_args

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
DocRanker = Literal["idf", "score_idf", "score"]
DOC_RANKERS: tuple[DocRanker, ...] = get_args(DocRanker)


class SubgraphRetrieverSettings(StrictModel):
    """Sampler, question embedder and document ranker of a retriever that scores subgraph entities."""

    sampler: SamplerConfig = Field(default_factory=SamplerConfig)
    question_embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    question_dim: int = Field(default=384, ge=1)
    top_entities: int = Field(default=20, ge=1, description="Entities that vote for documents (IDF ranker).")
    doc_ranker: DocRanker = Field(
        default="idf",
        description="idf: GFM-RAG's ranker (top entities vote 1/df); score_idf: votes weighted by the entity's "
        "probability (better when subgraphs have fewer entities than top_entities); score: the top "
        "entities' probabilities summed per document, no 1/df (GFM-RAG's SimpleRanker).",
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
            weight_by_score=self.doc_ranker in ("score_idf", "score"),
            inverse_document_frequency=self.doc_ranker != "score",
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
    seeded = [i for i, q in enumerate(queries) if _has_seed(index, q)]
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


def _has_seed(index: KGIndex, query: RetrievalQuery) -> bool:
    return any(index.entity_id(e) is not None for e in query.question_entities)


class SubgraphRetriever(Protocol):
    """A retriever that scores subgraph entities (the GLM, the GNN): what :func:`retrieve_by_each_ranker`
    reads of it."""

    index: KGIndex
    settings: SubgraphRetrieverSettings
    fallback: Retriever | None

    def score(self, queries: Sequence[RetrievalQuery]) -> EntityScores: ...


def retrieve_by_each_ranker(
    retriever: SubgraphRetriever, queries: Sequence[RetrievalQuery], k: int
) -> dict[DocRanker, list[RetrievalResult]]:
    """``retriever``'s results for ``queries`` under every document ranker (``DOC_RANKERS``): the
    entities are scored once (the model's forward is the cost) and ranked into documents each way,
    so validation can say which ranker suits a model without a forward per ranker."""
    queries = list(queries)
    # the queries retrieve_by_entity_scores would score, batched as it batches them
    seeded = [q for q in queries if _has_seed(retriever.index, q)]
    scores = {id(q): s for q, s in zip(seeded, retriever.score(seeded) if seeded else [], strict=True)}

    def cached(subset: Sequence[RetrievalQuery]) -> EntityScores:
        return [scores[id(q)] for q in subset]

    fallback = _OnceRetriever(retriever.fallback) if retriever.fallback is not None else None
    return {
        ranker: retrieve_by_entity_scores(
            retriever.index,
            queries,
            k,
            cached,
            retriever.settings.model_copy(update={"doc_ranker": ranker}),
            fallback,
        )
        for ranker in DOC_RANKERS
    }


class _OnceRetriever:
    """A retriever whose results for the same query objects are computed once (the dense fallback
    of :func:`retrieve_by_each_ranker`, asked the same unseeded questions for every ranker)."""

    def __init__(self, inner: Retriever) -> None:
        self.inner = inner
        self.name = inner.name
        self._cache: dict[tuple[int, int], RetrievalResult] = {}

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        missing = [q for q in queries if (id(q), k) not in self._cache]
        for q, result in zip(missing, self.inner.retrieve(missing, k) if missing else [], strict=True):
            self._cache[(id(q), k)] = result
        # copies: the caller appends its fallback note to each result's notes
        return [_copy(self._cache[(id(q), k)]) for q in queries]


def _copy(result: RetrievalResult) -> RetrievalResult:
    return replace(
        result, documents=list(result.documents), entities=list(result.entities), notes=list(result.notes)
    )
