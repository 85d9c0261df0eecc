"""A GLM retriever's settings besides its weights (torch-free, so configs can be read without it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field

from hoprag.config import StrictModel
from hoprag.embedding import EmbedderConfig
from hoprag.glm.sampler import SamplerConfig
from hoprag.retrieval.ranking import rank_documents_idf


class GLMSettings(StrictModel):
    """Everything about a GLM retriever besides its weights."""

    global_graph: bool = Field(default=True, description="Global GLM (far bucket) instead of local (masked).")
    with_text: bool = Field(default=True, description="Question tokens fully connected to the graph.")
    sampler: SamplerConfig = Field(default_factory=SamplerConfig)
    question_embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    question_dim: int = Field(default=384, ge=1)
    top_entities: int = Field(default=20, ge=1, description="Entities that vote for documents (IDF ranker).")
    doc_ranker: Literal["idf", "score_idf"] = Field(
        default="idf",
        description="idf: GFM-RAG's ranker (top entities vote 1/df); score_idf: votes weighted by the entity's "
        "probability (better when subgraphs have fewer entities than top_entities).",
    )
    batch_size: int = Field(default=4, ge=1, description="Questions per forward at inference.")

    def rank_documents(
        self,
        entity_ids: Sequence[int],
        entity_logits: Sequence[float],
        entity_docs: tuple[np.ndarray, np.ndarray],
        k: int,
    ) -> list[tuple[int, float]]:
        """The ``k`` best ``(doc_id, score)`` for a subgraph's scored entities, with this retriever's
        ranker (``doc_ranker``, ``top_entities``); ``entity_docs``: the index's ``entity_documents``."""
        indptr, docs = entity_docs
        return rank_documents_idf(
            entity_ids,
            entity_logits,
            indptr,
            docs,
            k,
            self.top_entities,
            weight_by_score=self.doc_ranker == "score_idf",
        )
