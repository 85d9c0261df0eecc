"""What a run trains on: its indexes, their usable questions and the seeded train/validation split.

The bottom of the training package: :mod:`training.encoding`, :mod:`training.families`,
:mod:`training.data` and :mod:`training.loop` import it, it imports none of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from training.config import TrainConfig


class TrainDataError(ValueError):
    """An index that cannot be trained on (missing, unreadable, no usable questions, mismatched)."""


@dataclass(frozen=True)
class SourceInfo:
    """What the driver learned about one index: enough for every worker to rebuild the epoch plans."""

    name: str
    path: str
    n_train: int
    n_val: int
    weight: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def inspect_sources(config: TrainConfig) -> list[SourceInfo]:
    """Open every index of ``config.data.indexes`` and count its usable questions.

    Raises :class:`TrainDataError` naming the index for a missing or corrupt index, one without
    processed questions or without usable training questions, and for indexes built with different
    embedders.
    """
    from hoprag.kg.index import KGIndex
    from hoprag.kg.store import KGIndexError

    if not config.data.indexes:
        raise TrainDataError("no index to train on: pass --index or set data.indexes in the config")
    out: list[SourceInfo] = []
    embedders: dict[str, str] = {}
    for source in config.data.indexes:
        label = f"index '{source.label}' ({source.path})"
        try:
            index = KGIndex(source.path)
        except (KGIndexError, OSError) as exc:
            raise TrainDataError(f"{label}: {exc}") from exc
        if index.questions is None:
            raise TrainDataError(f"{label} has no processed questions to train on")
        train, val = split_questions(index.questions.to_pylist(), config)
        if not train:
            raise TrainDataError(
                f"{label}: no '{config.train_split}' questions with linked entities and gold documents "
                "left for training"
            )
        embedders[source.label] = str(index.manifest.get("embedder"))
        if config.retriever == "gnn":
            problem = config.gnn.index_mismatch(
                label, index.manifest.get("embedder"), index.relation_embeddings.shape[1]
            )
            if problem:
                raise TrainDataError(problem)
        out.append(
            SourceInfo(source.label, str(Path(source.path).resolve()), len(train), len(val), source.weight)
        )
    if len(set(embedders.values())) > 1:
        listed = ", ".join(f"{name}: {model}" for name, model in embedders.items())
        raise TrainDataError(f"the indexes were built with different embedders ({listed}); use one")
    return out


def sources_from_params(params: dict[str, Any]) -> list[SourceInfo]:
    return [SourceInfo(**s) for s in params["sources"]]


def split_questions(
    rows: list[dict[str, Any]], config: TrainConfig
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Deterministic train/validation split of the usable questions (linked and with gold documents)."""
    usable = [
        r
        for r in rows
        if r["split"] == config.train_split and r["question_entities"] and r["supporting_docs"]
    ]
    order = np.random.default_rng(config.seed).permutation(len(usable))
    n_val = round(len(usable) * config.validation_fraction)
    val = [usable[i] for i in order[:n_val]]
    train = [usable[i] for i in order[n_val:]]
    return train, val


class TrainSet:
    """The indexes of a run with their training and validation questions (as split by the seed)."""

    def __init__(self, sources: Sequence[SourceInfo], config: TrainConfig) -> None:
        from hoprag.kg.index import KGIndex

        self.sources = list(sources)
        self.indexes = [KGIndex(s.path) for s in sources]
        self.train: list[list[dict[str, Any]]] = []
        self.val: list[list[dict[str, Any]]] = []
        for source, index in zip(sources, self.indexes, strict=True):
            if index.questions is None:
                raise TrainDataError(f"index '{source.name}' ({source.path}) has no processed questions")
            train, val = split_questions(index.questions.to_pylist(), config)
            if len(train) != source.n_train:
                raise TrainDataError(
                    f"index '{source.name}' ({source.path}) changed during training: "
                    f"{len(train)} training questions, {source.n_train} expected"
                )
            self.train.append(train)
            self.val.append(val)


def validation_queries(rows: Sequence[dict[str, Any]]) -> list[Any]:
    """The retrieval queries of held-out question rows (question text and its linked entities)."""
    from hoprag.retrieval.base import RetrievalQuery

    return [RetrievalQuery(r["question"], tuple(r["question_entities"])) for r in rows]


def mean_recall(rows: Sequence[dict[str, Any]], results: Sequence[Any], k: int) -> float:
    """Mean recall@k of ``results`` (one retrieval result per row) against the rows' gold documents."""
    from hoprag.retrieval.metrics import recall_at_k

    return float(
        np.mean(
            [
                recall_at_k([d.title for d in res.documents], r["supporting_docs"], k)
                for r, res in zip(rows, results, strict=True)
            ]
        )
    )
