"""The run's questions encoded once by the driver, looked up by workers (training.question_vectors)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import training.question_vectors as qv
from hoprag.embedding import EmbedderConfig
from training.config import TrainConfig
from training.question_vectors import PrecomputedQuestionEmbedder, QuestionVectors, encode_run_questions
from training.trainset import TrainSet, inspect_sources


def _config(path: Path) -> TrainConfig:
    return TrainConfig.model_validate(
        {"train_split": "test", "validation_fraction": 0, "data": {"indexes": [{"path": str(path)}]}}
    )


def test_the_driver_encodes_each_distinct_question_once_with_the_runs_embedder(small_index, embedder):
    config = _config(small_index)
    sources = inspect_sources(config)
    vectors = encode_run_questions(sources, config, embedder)
    trainset = TrainSet(sources, config)
    questions = [row["question"] for rows in (*trainset.train, *trainset.val) for row in rows]
    assert vectors.texts == sorted(set(questions)) and vectors.model_id == embedder.model_id
    assert np.allclose(vectors.vectors, embedder.encode(vectors.texts), atol=1e-5)

    other = config.model_copy(deep=True)
    other.glm.question_embedder = EmbedderConfig(model="/models/other")
    with pytest.raises(ValueError, match="question embedder is '/models/other'"):
        encode_run_questions(sources, other, embedder)


class _CountingModel:
    """Stands in for the configured model on a lookup miss: a fixed vector per text, counted."""

    loads = 0

    def __init__(self, config: EmbedderConfig) -> None:
        type(self).loads += 1

    def encode(self, texts):
        return np.stack([np.full(3, float(len(t)), np.float32) for t in texts])


def test_workers_look_questions_up_and_encode_only_what_was_not_precomputed(monkeypatch):
    monkeypatch.setattr(qv, "SentenceTransformerEmbedder", _CountingModel)
    stored = np.arange(6, dtype=np.float32).reshape(2, 3)
    stored.setflags(write=False)  # as an object-store array arrives in a worker
    embedder = PrecomputedQuestionEmbedder(
        QuestionVectors("m", ["a?", "bb?"], stored), EmbedderConfig(model="m")
    )
    assert (embedder.model_id, embedder.dim) == ("m", 3)

    looked_up = embedder.encode(["bb?", "a?", "bb?"])
    assert looked_up.dtype == np.float32 and np.array_equal(looked_up, stored[[1, 0, 1]])
    assert _CountingModel.loads == 0 and embedder.encoded_by_model == 0  # no model without a miss
    assert embedder.encode([]).shape == (0, 3)

    mixed = embedder.encode(["a?", "cccc?", "dd?"])
    assert np.array_equal(mixed[0], stored[0])
    assert np.array_equal(mixed[1:], np.array([[5.0] * 3, [3.0] * 3], np.float32))
    embedder.encode(["eeeeee?"])
    assert _CountingModel.loads == 1 and embedder.encoded_by_model == 3  # loaded once, on the first miss


def test_vectors_of_another_model_or_shape_are_refused():
    with pytest.raises(ValueError, match="question vectors of 'a', but the embedder is 'b'"):
        PrecomputedQuestionEmbedder(QuestionVectors("a", [], np.zeros((0, 3))), EmbedderConfig(model="b"))
    with pytest.raises(ValueError, match="2 texts but vectors of shape"):
        QuestionVectors("a", ["x", "y"], np.zeros((3, 3)))
