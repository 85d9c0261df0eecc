"""The dense baseline: the same embedder as indexing, cosine similarity between question and document."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from hoprag.embedding import Embedder
from hoprag.kg.index import KGIndex
from hoprag.kg.tables import document_passage
from hoprag.retrieval.base import RankedDocument, RetrievalQuery, RetrievalResult
from hoprag.vectorsearch import ExactSearch, VectorSearch

logger = logging.getLogger(__name__)


def document_passages(index: KGIndex) -> list[str]:
    """What the dense retriever embeds per document: title, then text."""
    titles = index.document_titles
    texts = index.documents.column("text").to_pylist()
    return [document_passage(t, x) for t, x in zip(titles, texts, strict=True)]


class DenseRetriever:
    """Top-k documents by cosine similarity of sentence embeddings (GLM-RAG's vanilla RAG baseline).

    Document vectors come from the snapshot (``document_embeddings.npy``, searched through the
    index's vector search) when they were made by this embedder; otherwise (an older index, or
    another embedder) they are computed here, at load, and searched exactly.
    """

    def __init__(self, index: KGIndex, embedder: Embedder) -> None:
        self._embedder = embedder
        self._titles: list[str] = index.document_titles
        stored = (
            index.vector_search("document") if index.manifest.get("embedder") == embedder.model_id else None
        )
        if stored is not None and stored.size == len(self._titles):
            self._search: VectorSearch = stored
        else:
            if self._titles:
                logger.info(
                    "embedding %d documents of %s (not in the snapshot)", len(self._titles), index.path
                )
            self._search = ExactSearch(
                embedder.encode(document_passages(index))
                if self._titles
                else np.zeros((0, embedder.dim), np.float32)
            )

    @property
    def name(self) -> str:
        return f"dense:{self._embedder.model_id}"

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        if not queries:
            return []
        idx, sims = self._search.search(self._embedder.encode([q.question for q in queries]), k)
        return [
            RetrievalResult(
                documents=[
                    RankedDocument(int(d), self._titles[int(d)], float(s))
                    for d, s in zip(row_i, row_s, strict=True)
                ]
            )
            for row_i, row_s in zip(idx, sims, strict=True)
        ]
