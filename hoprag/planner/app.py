"""Building a ready planner from an index directory, an LLM config and an optional retriever."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from hoprag.llm.factory import LLMBackendConfig
from hoprag.planner.config import PlannerConfig
from hoprag.planner.planner import Planner
from hoprag.qa import RetrieveThenAnswer

if TYPE_CHECKING:
    from hoprag.embedding import SentenceTransformerEmbedder
    from hoprag.kg.index import KGIndex


class AskConfig(BaseModel):
    """Config of ``hoprag ask`` and of the planner in serving: which LLM, which planner settings."""

    model_config = {"extra": "forbid"}  # unknown keys are errors, as in hoprag.config.StrictModel
    llm: LLMBackendConfig = Field(default_factory=LLMBackendConfig)
    planner: PlannerConfig = Field(default_factory=PlannerConfig)


def load_index_and_embedder(index_dir: str | Path) -> tuple[KGIndex, SentenceTransformerEmbedder]:
    """The index and the embedder its manifest names (query vectors must come from the same model)."""
    from hoprag.kg.index import KGIndex
    from hoprag.retrieval.loading import index_embedder

    index = KGIndex(index_dir)
    return index, index_embedder(index)


def build_retrieve_then_answer(
    index_dir: str | Path, config: AskConfig, retriever_spec: str = "dense"
) -> RetrieveThenAnswer:
    """Single-shot GLM-RAG over ``index_dir`` with ``retriever_spec`` ('dense' or a retriever directory)."""
    from hoprag.llm.factory import build_llm
    from hoprag.planner.knowledge import KnowledgeGraphView
    from hoprag.retrieval.loading import load_retriever

    index, embedder = load_index_and_embedder(index_dir)
    p = config.planner
    return RetrieveThenAnswer(
        KnowledgeGraphView(index, embedder),
        load_retriever(retriever_spec, index, embedder),
        build_llm(config.llm),
        context_documents=max(p.context_documents, 3),
        max_document_chars=p.max_document_chars,
        max_question_chars=p.max_question_chars,
    )


def build_planner(index_dir: str | Path, config: AskConfig, retriever_spec: str | None = None):
    """A :class:`~hoprag.planner.Planner` over ``index_dir``; with ``retriever_spec`` the GLM (or
    dense) retriever joins the traversals as ``glm`` unless the config already lists it."""
    from hoprag.llm.factory import build_llm
    from hoprag.planner.knowledge import KnowledgeGraphView
    from hoprag.retrieval.loading import load_retriever

    index, embedder = load_index_and_embedder(index_dir)
    planner_config = config.planner
    retriever = None
    if retriever_spec:
        retriever = load_retriever(retriever_spec, index, embedder)
        if "glm" not in planner_config.traversals:
            planner_config = planner_config.model_copy(
                update={"traversals": [*planner_config.traversals, "glm"]}
            )
    return Planner(KnowledgeGraphView(index, embedder), build_llm(config.llm), planner_config, retriever)
