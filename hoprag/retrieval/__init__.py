"""Retrievers behind one protocol (dense baseline, GLM) and the entity → document ranker."""

from hoprag.retrieval.base import RankedDocument, RetrievalQuery, RetrievalResult, Retriever

__all__ = ["RankedDocument", "RetrievalQuery", "RetrievalResult", "Retriever"]
