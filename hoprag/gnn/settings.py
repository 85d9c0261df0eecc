"""A GNN retriever's settings besides its weights (torch-free, so configs can be read without it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hoprag.retrieval.subgraph import SubgraphRetrieverSettings


class GNNSettings(SubgraphRetrieverSettings):
    """GFM-RAG's QueryNBFNet (``gfm_rag/sft_training.yaml``: 6 layers of 512, DistMult messages,
    sum aggregation, layer norm, shortcuts, seed weights 1/document-frequency), over the same
    sampled question subgraph and with the same document ranker as the GLM."""

    hidden_dim: int = Field(default=512, ge=8, description="Width of node states (GFM-RAG: 512).")
    num_layers: int = Field(
        default=6, ge=1, le=12, description="Message-passing layers, i.e. hops a signal travels (GFM-RAG: 6)."
    )
    message: Literal["distmult", "transe"] = Field(
        default="distmult",
        description="Message of an edge: source state × (distmult) or + (transe) relation.",
    )
    aggregate: Literal["sum", "mean", "max"] = Field(
        default="sum", description="How a node combines incoming messages (GFM-RAG: sum)."
    )
    layer_norm: bool = Field(default=True, description="LayerNorm after each layer's update.")
    short_cut: bool = Field(default=True, description="Residual connection around each layer.")
    seed_weighting: Literal["idf", "uniform"] = Field(
        default="idf",
        description="Initial weight of each seed entity: idf (GFM-RAG's init_nodes_weight: 1 / number of "
        "documents the entity occurs in; 1 when it occurs in none) or uniform (1).",
    )

    def index_mismatch(self, index_name: str, index_embedder: str | None, relation_dim: int) -> str | None:
        """Why an index whose relation vectors come from ``index_embedder`` (``relation_dim`` wide;
        None: not recorded) cannot feed this GNN, or None when it can: the GNN reads those vectors
        next to question vectors of its own embedder, so both must be one model."""
        wanted = self.question_embedder.model
        if (index_embedder is None or index_embedder == wanted) and relation_dim == self.question_dim:
            return None
        return (
            f"{index_name} was embedded by {index_embedder} ({relation_dim}-d relation vectors); the GNN's "
            f"question embedder is {wanted} ({self.question_dim}-d): build the index with that embedder, or "
            "set gnn.question_embedder.model (and gnn.question_dim) to the index's"
        )
