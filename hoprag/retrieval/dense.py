"""The dense baseline: the same embedder as indexing, cosine similarity between question and document."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hoprag.embedding import Embedder, top_k_cosine
from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import RankedDocument, RetrievalQuery, RetrievalResult


def document_passages(index: KGIndex) -> list[str]:
    """What the dense retriever embeds per document: title, then text."""
    titles = index.document_titles
    texts = index.documents.column("text").to_pylist()
    return [f"{t}\n{x}".strip() for t, x in zip(titles, texts, strict=True)]


class DenseRetriever:
    """Top-k documents by cosine similarity of sentence embeddings (GLM-RAG's vanilla RAG baseline)."""

    def __init__(self, index: KGIndex, embedder: Embedder) -> None:
        self._embedder = embedder
        self._titles: list[str] = index.document_titles
        self._vectors = (
            embedder.encode(document_passages(index)) if self._titles else np.zeros((0, embedder.dim))
        )

    @property
    def name(self) -> str:
        return f"dense:{self._embedder.model_id}"

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        if not queries:
            return []
        idx, sims = top_k_cosine(self._embedder.encode([q.question for q in queries]), self._vectors, k)
        return [
            RetrievalResult(
                documents=[
                    RankedDocument(int(d), self._titles[int(d)], float(s))
                    for d, s in zip(row_i, row_s, strict=True)
                ]
            )
            for row_i, row_s in zip(idx, sims, strict=True)
        ]
