"""The run's questions, encoded once by the driver and read by every worker from the object store.

The retriever reads each question as the vector of its question embedder (the packaged MiniLM by
default). Encoded where they are used, every Ray Train worker and every Ray Data encoder actor
imported sentence-transformers (about 5 s on 2 cores: it brings scipy and scikit-learn), loaded
the model, and encoded a question again each epoch it was drawn. The driver encodes each distinct
training and validation question once (:func:`encode_run_questions`); workers and encoder actors
look the vectors up (:class:`PrecomputedQuestionEmbedder`). A text that is not among them is
encoded by the configured model, loaded on first need, so a lookup can never give a wrong vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hoprag.embedding import Embedder, EmbedderConfig, SentenceTransformerEmbedder
from training.config import TrainConfig
from training.families import family_of
from training.trainset import SourceInfo, TrainSet


@dataclass(frozen=True)
class QuestionVectors:
    """Distinct question texts and their vectors (float32, one row per text, L2-normalized)."""

    model_id: str
    texts: list[str]
    vectors: np.ndarray

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or len(self.vectors) != len(self.texts):
            raise ValueError(f"{len(self.texts)} texts but vectors of shape {self.vectors.shape}")


def question_embedder_config(config: TrainConfig) -> EmbedderConfig:
    """The question embedder of the run's retriever family."""
    return family_of(config).settings(config).question_embedder


def encode_run_questions(
    sources: Sequence[SourceInfo], config: TrainConfig, embedder: Embedder | None = None
) -> QuestionVectors:
    """Every distinct training and validation question of ``sources``, encoded once.

    ``embedder`` defaults to the run's configured question embedder; one passed in must be that
    model (its ``model_id`` is checked)."""
    wanted = question_embedder_config(config)
    if embedder is None:
        embedder = SentenceTransformerEmbedder(wanted)
    elif embedder.model_id != wanted.model:
        raise ValueError(f"the run's question embedder is {wanted.model!r}, not {embedder.model_id!r}")
    trainset = TrainSet(sources, config)
    texts = sorted({row["question"] for rows in (*trainset.train, *trainset.val) for row in rows})
    return QuestionVectors(embedder.model_id, texts, embedder.encode(texts))


class PrecomputedQuestionEmbedder:
    """An :class:`~hoprag.embedding.Embedder` that looks questions up in :class:`QuestionVectors`;
    texts not among them are encoded by ``config``'s model, loaded the first time one is asked for."""

    def __init__(self, vectors: QuestionVectors, config: EmbedderConfig) -> None:
        if vectors.model_id != config.model:
            raise ValueError(
                f"question vectors of {vectors.model_id!r}, but the embedder is {config.model!r}"
            )
        self._vectors = vectors
        self._config = config
        self._rows = {text: i for i, text in enumerate(vectors.texts)}
        self._model: SentenceTransformerEmbedder | None = None
        self.encoded_by_model = 0  # texts that were not precomputed

    @property
    def model_id(self) -> str:
        return self._config.model

    @property
    def dim(self) -> int:
        return int(self._vectors.vectors.shape[1])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = [self._rows.get(text, -1) for text in texts]
        out = self._vectors.vectors[np.asarray(rows, dtype=np.int64)] if texts else np.zeros((0, self.dim))
        missing = [i for i, row in enumerate(rows) if row < 0]
        if missing:
            if self._model is None:
                self._model = SentenceTransformerEmbedder(self._config)
            out[missing] = self._model.encode([texts[i] for i in missing])
            self.encoded_by_model += len(missing)
        return np.asarray(out, dtype=np.float32)
