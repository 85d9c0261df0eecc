"""What differs between the retrievers ``hoprag train`` trains: the GLM and the GNN baseline.

Everything else — the indexes and their epoch plans, Ray Data streaming, DeepSpeed, checkpoints,
resume, the losses (0.44·BCE + 0.56·ListCE over each subgraph's entities) and validation — is one
code path (:mod:`training.loop`, :mod:`training.data`, which import this module; it imports
neither). A :class:`RetrieverFamily` supplies the
parts that depend on the network: how a question's subgraph becomes encoded columns (what the
Ray Data stage emits), how columns become a batch, the network itself, the
:class:`~hoprag.retrieval.base.Retriever` that validation runs, and the export. ``TrainConfig.retriever``
picks the family.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from training.config import TrainConfig
from training.encoding import (
    encode_glm_rows,
    encode_gnn_rows,
    glm_examples_from_columns,
    gnn_examples_from_columns,
)

if TYPE_CHECKING:
    from pathlib import Path

    from hoprag.retrieval.subgraph import SubgraphRetrieverSettings
    from training.trainset import TrainSet


class RetrieverFamily(Protocol):
    """The network-specific parts of training one kind of subgraph retriever."""

    name: str  # also Ray Train's run name under RUN_DIR/ray
    label: str  # for progress bars and messages

    def settings(self, config: TrainConfig) -> SubgraphRetrieverSettings:
        """The retriever's settings section of the config (sampler, ranker, question embedder)."""
        ...

    def load_encoding_resources(self, config: TrainConfig) -> Any:
        """What encoding needs besides the index and question vectors (the GLM's tokenizer)."""
        ...

    def encode_rows(
        self,
        trainset: TrainSet,
        pairs: Sequence[tuple[int, int]],
        resources: Any,
        vectors: np.ndarray,
        config: TrainConfig,
    ) -> dict[str, list[Any]]:
        """Encoded columns (one entry per question; always with ``index`` and ``row``) of the
        training questions ``pairs`` (``(index, row)``), whose question vectors are ``vectors``."""
        ...

    def examples_from_columns(self, batch: dict[str, Any]) -> list[Any]:
        """The examples of a batch of encoded columns."""
        ...

    def build_model(self, config: TrainConfig, question_dim: int) -> tuple[Any, Any]:
        """A fresh network and its encoding resources (the GLM's tokenizer; None for the GNN)."""
        ...

    def collate(self, examples: list[Any], model: Any, resources: Any, config: TrainConfig) -> Any:
        """One batch (with ``labels`` and ``entity_mask``) for ``model(batch)`` → entity logits."""
        ...

    def retriever(self, index: Any, model: Any, resources: Any, config: TrainConfig, embedder: Any) -> Any:
        """A Retriever over ``index`` with the model being trained (for validation)."""
        ...

    def export(
        self, out_dir: Path, model: Any, resources: Any, config: TrainConfig, init: dict[str, Any] | None
    ) -> None:
        """Write the servable retriever directory."""
        ...


class GLMFamily:
    """The graph language model (T5 or BERT backbone) over Levi-graph tokens."""

    name = "glm"
    label = "GLM"

    def settings(self, config: TrainConfig) -> SubgraphRetrieverSettings:
        return config.glm

    def load_encoding_resources(self, config: TrainConfig) -> Any:
        from hoprag.glm.backbone import load_tokenizer

        return load_tokenizer(config.backbone)

    def encode_rows(
        self,
        trainset: TrainSet,
        pairs: Sequence[tuple[int, int]],
        resources: Any,
        vectors: np.ndarray,
        config: TrainConfig,
    ) -> dict[str, list[Any]]:
        return encode_glm_rows(trainset, pairs, resources, vectors, config)

    def examples_from_columns(self, batch: dict[str, Any]) -> list[Any]:
        return glm_examples_from_columns(batch)

    def build_model(self, config: TrainConfig, question_dim: int) -> tuple[Any, Any]:
        from hoprag.glm.backbone import build_graph_encoder, load_tokenizer
        from hoprag.glm.model import GLMRetrieverModel

        encoder = build_graph_encoder(config.backbone, config.glm.global_graph, config.glm.with_text)
        return GLMRetrieverModel(encoder, question_dim), load_tokenizer(config.backbone)

    def collate(self, examples: list[Any], model: Any, resources: Any, config: TrainConfig) -> Any:
        from hoprag.glm.data import collate

        encoder = model.encoder
        return collate(
            examples,
            resources.pad_token_id,
            encoder.num_buckets,
            encoder.max_distance,
            config.glm.global_graph,
        )

    def retriever(self, index: Any, model: Any, resources: Any, config: TrainConfig, embedder: Any) -> Any:
        from hoprag.glm.retriever import GLMRetriever

        return GLMRetriever(index, model, resources, config.glm, embedder)

    def export(
        self, out_dir: Path, model: Any, resources: Any, config: TrainConfig, init: dict[str, Any] | None
    ) -> None:
        from hoprag.glm.retriever import save_retriever

        save_retriever(out_dir, model, resources, config.glm, init=init)


class GNNFamily:
    """GFM-RAG's query-dependent NBFNet over the same subgraphs (:mod:`hoprag.gnn`)."""

    name = "gnn"
    label = "GNN"

    def settings(self, config: TrainConfig) -> SubgraphRetrieverSettings:
        return config.gnn

    def load_encoding_resources(self, config: TrainConfig) -> Any:
        return None

    def encode_rows(
        self,
        trainset: TrainSet,
        pairs: Sequence[tuple[int, int]],
        resources: Any,
        vectors: np.ndarray,
        config: TrainConfig,
    ) -> dict[str, list[Any]]:
        return encode_gnn_rows(trainset, pairs, vectors, config)

    def examples_from_columns(self, batch: dict[str, Any]) -> list[Any]:
        return gnn_examples_from_columns(batch)

    def build_model(self, config: TrainConfig, question_dim: int) -> tuple[Any, Any]:
        from hoprag.gnn.model import QueryNBFNet

        if question_dim != config.gnn.question_dim:
            raise ValueError(
                f"gnn.question_dim is {config.gnn.question_dim} but the question embedder gives "
                f"{question_dim}-d vectors"
            )
        return QueryNBFNet(config.gnn), None

    def collate(self, examples: list[Any], model: Any, resources: Any, config: TrainConfig) -> Any:
        from hoprag.gnn.data import collate

        return collate(examples)

    def retriever(self, index: Any, model: Any, resources: Any, config: TrainConfig, embedder: Any) -> Any:
        from hoprag.gnn.retriever import GNNRetriever

        return GNNRetriever(index, model, config.gnn, embedder)

    def export(
        self, out_dir: Path, model: Any, resources: Any, config: TrainConfig, init: dict[str, Any] | None
    ) -> None:
        from hoprag.gnn.retriever import save_gnn_retriever

        save_gnn_retriever(out_dir, model, config.gnn)


FAMILIES: dict[str, RetrieverFamily] = {"glm": GLMFamily(), "gnn": GNNFamily()}


def family_of(config: TrainConfig) -> RetrieverFamily:
    """The family ``config.retriever`` names."""
    return FAMILIES[config.retriever]
