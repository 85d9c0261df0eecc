"""Retrieval metrics shared by training-time validation and evaluation."""

from __future__ import annotations

from collections.abc import Sequence


def recall_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Document recall@k (GFM-RAG / GLM-RAG): the share of gold documents among the top ``k``.

    Raises ``ValueError`` for an empty gold set: such questions cannot be scored and must be
    skipped (and counted) by the caller.
    """
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("recall@k needs at least one gold document")
    return len(gold_set & set(retrieved[:k])) / len(gold_set)
