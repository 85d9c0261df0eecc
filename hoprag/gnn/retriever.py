"""The GNN retriever as a :class:`~hoprag.retrieval.base.Retriever`, and its directory.

The directory has the GLM's layout (:mod:`hoprag.glm.artifact`) with ``kind: gnn``::

    retriever.json       format version, kind, the GNN settings (network shape, sampler, ranker,
                         question embedder)
    model.safetensors    the network's weights

There is no tokenizer: nodes and relations enter as the index's sentence vectors.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from pydantic import ValidationError

from hoprag.config import describe_errors
from hoprag.embedding import Embedder
from hoprag.glm.artifact import (
    FORMAT_VERSION,
    RETRIEVER_CONFIG,
    WEIGHTS,
    RetrieverLoadError,
    read_retriever_meta,
    replace_directory,
)
from hoprag.gnn.data import build_example, collate
from hoprag.gnn.model import QueryNBFNet
from hoprag.gnn.settings import GNNSettings
from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import RetrievalQuery, RetrievalResult, Retriever
from hoprag.retrieval.subgraph import EntityScores, retrieve_by_entity_scores, score_in_batches

KIND = "gnn"


def save_gnn_retriever(out_dir: Path, model: QueryNBFNet, settings: GNNSettings) -> Path:
    """Write a GNN retriever directory atomically (temp dir + rename)."""
    from safetensors.torch import save_file

    with replace_directory(out_dir) as tmp:
        state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        save_file(state, str(tmp / WEIGHTS), metadata={"format": "pt"})
        meta = {"format_version": FORMAT_VERSION, "kind": KIND, "settings": settings.model_dump(mode="json")}
        (tmp / RETRIEVER_CONFIG).write_text(json.dumps(meta, indent=2, sort_keys=True))
    return out_dir


def load_gnn_retriever_model(path: str | Path) -> tuple[QueryNBFNet, GNNSettings]:
    """The network (eval mode) and settings stored in a GNN retriever directory."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    directory, meta = read_retriever_meta(path, kind=KIND)
    try:
        settings = GNNSettings.model_validate(meta.get("settings"))
    except ValidationError as exc:
        raise RetrieverLoadError(
            f"{directory / RETRIEVER_CONFIG}: settings this hoprag cannot use "
            f"({describe_errors(GNNSettings, exc)}); re-export the retriever"
        ) from exc
    model = QueryNBFNet(settings)
    try:
        state = load_file(str(directory / WEIGHTS))
    except (SafetensorError, OSError) as exc:
        raise RetrieverLoadError(
            f"{directory / WEIGHTS} cannot be read ({exc}); re-export the retriever"
        ) from exc
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise RetrieverLoadError(
            f"{directory / WEIGHTS} does not match its config (missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    return model.eval(), settings


class GNNRetriever:
    """Scores the entities of each question's subgraph with the NBFNet, then ranks documents with
    the same ranker as the GLM. Questions without a linked seed entity go to ``fallback``."""

    def __init__(
        self,
        index: KGIndex,
        model: QueryNBFNet,
        settings: GNNSettings,
        question_embedder: Embedder,
        fallback: Retriever | None = None,
        name: str = "gnn",
    ) -> None:
        problem = settings.index_mismatch(
            f"index {index.path}", index.manifest.get("embedder"), index.relation_embeddings.shape[1]
        )
        if problem:
            raise RetrieverLoadError(problem)
        self.index = index
        self.model = model.eval()
        self.settings = settings
        self.question_embedder = question_embedder
        self.fallback = fallback
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def score(self, queries: Sequence[RetrievalQuery]) -> EntityScores:
        """``(entity_id, logit)`` for every entity in each query's subgraph (empty without seeds)."""
        return score_in_batches(queries, self.question_embedder, self.settings.batch_size, self._score_batch)

    def _score_batch(self, queries: Sequence[RetrievalQuery], vectors: np.ndarray) -> EntityScores:
        settings = self.settings
        examples = [
            build_example(self.index, q.question_entities, v, settings.sampler, settings.seed_weighting)
            for q, v in zip(queries, vectors, strict=True)
        ]
        with torch.no_grad():
            logits = (
                self.model(collate(examples).to(next(self.model.parameters()).device)).float().cpu().numpy()
            )
        return [
            list(zip(ex.entity_ids.tolist(), row[: len(ex.entity_ids)].tolist(), strict=True))
            for row, ex in zip(logits, examples, strict=True)
        ]

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        return retrieve_by_entity_scores(self.index, queries, k, self.score, self.settings, self.fallback)
