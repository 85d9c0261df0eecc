"""Lexical ranking used by the planner: BM25 (its weighted reciprocal-rank fusion with dense ranking is
:func:`hoprag.retrieval.fusion.weighted_rrf`).

PAI-2 fuses a dense and a BM25 ranking by *rank*, not by score (the two score scales are not
comparable): ``fused(d) = sum_i w_i / (c + rank_i(d))`` with ranks from 1 and ``c = 60``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

_TOKEN = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens (the same for documents and queries)."""
    return _TOKEN.findall(text.lower())


class BM25:
    """Okapi BM25 over a fixed list of texts, with an inverted index (query cost ~ postings read)."""

    def __init__(self, texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.size = len(texts)
        lengths = np.zeros(self.size, dtype=np.float32)
        postings: dict[str, list[tuple[int, int]]] = {}
        for i, text in enumerate(texts):
            counts = Counter(tokenize(text))
            lengths[i] = sum(counts.values())
            for term, tf in counts.items():
                postings.setdefault(term, []).append((i, tf))
        self._avg_len = float(lengths.mean()) if self.size else 0.0
        self._lengths = lengths
        self._postings = {
            t: (np.array([d for d, _ in p], dtype=np.int64), np.array([f for _, f in p], dtype=np.float32))
            for t, p in postings.items()
        }

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every text for ``query`` (zeros where no query term occurs)."""
        out = np.zeros(self.size, dtype=np.float32)
        if not self.size:
            return out
        norm = self.k1 * (1 - self.b + self.b * self._lengths / max(self._avg_len, 1e-9))
        for term in set(tokenize(query)):
            hit = self._postings.get(term)
            if hit is None:
                continue
            docs, tf = hit
            idf = math.log(1 + (self.size - len(docs) + 0.5) / (len(docs) + 0.5))
            out[docs] += idf * tf * (self.k1 + 1) / (tf + norm[docs])
        return out


def top_indices(
    scores: np.ndarray, k: int, subset: np.ndarray | None = None, positive: bool = False
) -> list[int]:
    """Indices of the ``k`` best scores (within ``subset`` if given), best first, ties by index."""
    candidates = np.arange(len(scores)) if subset is None else np.asarray(subset, dtype=np.int64)
    if positive:
        candidates = candidates[scores[candidates] > 0]
    if len(candidates) == 0 or k <= 0:
        return []
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order[:k]].tolist()
