"""Entity scores → document ranking (GFM-RAG's rankers, as GLM-RAG uses them).

The top ``top_entities`` (20) entities vote for the documents that contain them. Three votes:

- ``idf`` (GFM-RAG's ``IDFWeightedTopKRanker``, GLM-RAG's): ``1 / (number of documents
  containing the entity)``, so rare entities count more than hubs; the scores only pick the top;
- ``score_idf``: that vote times the entity's probability (sigmoid of its logit);
- ``score`` (GFM-RAG's ``SimpleRanker`` over the top entities): the entity's probability, no
  document frequency, so a document holding several likely entities (a chain's bridge) leads.

Ties are broken by the summed entity scores, then by document id (deterministic output).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def entity_document_csr(
    doc_ids: np.ndarray, entity_ids: np.ndarray, num_entities: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, docs)``: the documents of each entity, from document↔entity link pairs."""
    order = np.lexsort((doc_ids, entity_ids))
    counts = (
        np.bincount(entity_ids, minlength=num_entities)
        if len(entity_ids)
        else np.zeros(num_entities, np.int64)
    )
    indptr = np.zeros(num_entities + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, doc_ids[order].astype(np.int64)


def rank_documents_idf(
    entity_ids: Sequence[int],
    entity_scores: Sequence[float],
    indptr: np.ndarray,
    entity_docs: np.ndarray,
    k: int,
    top_entities: int = 20,
    weight_by_score: bool = False,
    inverse_document_frequency: bool = True,
) -> list[tuple[int, float]]:
    """The ``k`` best ``(doc_id, score)`` from scored entities (any order in; best first out).

    ``weight_by_score`` multiplies each vote by the entity's probability (sigmoid of its logit).
    GFM-RAG uses the scores only to pick the top entities; when a subgraph has fewer entities than
    ``top_entities`` (sparse KGs, small budgets) every entity then votes equally and the ranking
    ignores the model, which the weighting avoids. ``inverse_document_frequency=False`` drops the
    ``1 / df`` factor (with ``weight_by_score``: the ``score`` ranker).
    """
    if not len(entity_ids):
        return []
    ids = np.asarray(entity_ids, dtype=np.int64)
    scores = np.asarray(entity_scores, dtype=np.float64)
    top = np.argsort(-scores, kind="stable")[:top_entities]
    doc_score: dict[int, float] = {}
    doc_tiebreak: dict[int, float] = {}
    for i in top.tolist():
        e = int(ids[i])
        docs = entity_docs[indptr[e] : indptr[e + 1]]
        if len(docs) == 0:
            continue
        weight = 1.0 / len(docs) if inverse_document_frequency else 1.0
        if weight_by_score:
            weight /= 1.0 + float(np.exp(-scores[i]))
        for d in docs.tolist():
            doc_score[d] = doc_score.get(d, 0.0) + weight
            doc_tiebreak[d] = doc_tiebreak.get(d, 0.0) + float(scores[i])
    ranked = sorted(doc_score, key=lambda d: (-doc_score[d], -doc_tiebreak[d], d))
    return [(d, doc_score[d]) for d in ranked[:k]]
