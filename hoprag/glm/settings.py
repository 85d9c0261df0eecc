"""A GLM retriever's settings besides its weights (torch-free, so configs can be read without it)."""

from __future__ import annotations

from pydantic import Field

from hoprag.retrieval.subgraph import SubgraphRetrieverSettings


class GLMSettings(SubgraphRetrieverSettings):
    """Everything about a GLM retriever besides its weights: the graph variant, and the sampler,
    question embedder and document ranker it shares with the GNN retriever."""

    global_graph: bool = Field(default=True, description="Global GLM (far bucket) instead of local (masked).")
    with_text: bool = Field(default=True, description="Question tokens fully connected to the graph.")
