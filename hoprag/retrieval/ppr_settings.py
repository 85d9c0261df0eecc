"""The settings of HippoRAG 2's PPR retriever (:mod:`hoprag.retrieval.ppr`), importable without it:
the ``ppr`` section of ``hoprag ask`` / ``serve`` / ``eval`` configs."""

from __future__ import annotations

from pydantic import Field

from hoprag.config import StrictModel


class PPRSettings(StrictModel):
    """HippoRAG 2's retrieval parameters (the paper's values as defaults)."""

    damping: float = Field(
        default=0.5,
        gt=0.0,
        lt=1.0,
        description="Probability of following an edge at each step (HippoRAG 2: 0.5).",
    )
    passage_node_weight: float = Field(
        default=0.05,
        ge=0.0,
        description="Scale of the passages' dense scores in the restart vector (HippoRAG 2: 0.05).",
    )
    linking_top_k: int = Field(
        default=5,
        ge=1,
        description="Facts matched to the question, and entities kept as seeds (HippoRAG 2: 5).",
    )
    question_entities: bool = Field(
        default=False,
        description="Also seed the question's linked entities (hoprag's linker), scored by their vector's "
        "cosine to the question; HippoRAG 2 seeds from facts alone (off: measured better, docs/ppr.md).",
    )
    max_iterations: int = Field(default=100, ge=1, description="Power-iteration steps at most.")
    tolerance: float = Field(
        default=1e-8, gt=0.0, description="Stop when the L1 change of the scores is below this."
    )
    top_entities: int = Field(
        default=20, ge=0, description="Entities reported with their PPR mass per question."
    )
