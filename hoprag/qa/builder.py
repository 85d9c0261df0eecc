"""The one place a QA system is built: ``hoprag ask``, the Serve QA deployment and the evaluation
workers all call :func:`build_qa_system` (or :func:`assemble_qa_system` with components they
already hold, e.g. an LLM and a retriever behind Serve handles).

So what evaluation measures is what the endpoint serves: the same linking on the question text,
the same retriever call, the same prompts and settings, the same rule that a configured retriever
joins the planner's traversals as ``glm``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hoprag.embedding import Embedder, SentenceTransformerEmbedder
from hoprag.linking.linker import QuestionLinker
from hoprag.llm.base import LLM
from hoprag.llm.factory import LLMBackendConfig
from hoprag.planner.config import PlannerConfig
from hoprag.planner.knowledge import KnowledgeGraphView
from hoprag.qa.config import QASettings, QASystemConfig
from hoprag.qa.system import QASystem
from hoprag.retrieval.base import Retriever

if TYPE_CHECKING:
    from hoprag.kg.index import KGIndex


@dataclass
class QAComponents:
    """What a QA system runs on: the index view, the LLM, the retriever (if any), the linker."""

    kg: KnowledgeGraphView
    llm: LLM
    retriever: Retriever | None
    linker: QuestionLinker

    @property
    def embedder(self) -> Embedder:
        return self.kg.embedder


def load_components(
    index_dir: str | Path,
    settings: QASettings,
    retriever: str | Retriever | None = None,
    llm: LLM | None = None,
    embedder: Embedder | None = None,
) -> QAComponents:
    """Open the index with the embedder its manifest names, the retriever (a spec such as 'dense'
    or a directory, or one already built) and the LLM (``llm``, else the configured backend,
    built on its first call so that a retrieval-only use never loads it). ``embedder`` is reused
    when it is the model the index names (a serving replica swapping snapshots)."""
    from hoprag.kg.index import KGIndex
    from hoprag.llm.factory import LazyLLM
    from hoprag.retrieval.loading import index_embedder, load_retriever

    index = KGIndex(index_dir, vectors=settings.vector_search)
    embedder = index_embedder(
        index, reuse=embedder if isinstance(embedder, SentenceTransformerEmbedder) else None
    )
    backend: LLM = llm if llm is not None else LazyLLM(settings.llm)
    built = (
        load_retriever(retriever, index, embedder, settings.ppr) if isinstance(retriever, str) else retriever
    )
    return QAComponents(
        kg=KnowledgeGraphView(index, embedder),
        llm=backend,
        retriever=built,
        linker=QuestionLinker(index, embedder, backend, cache_size=settings.planner.cache_size),
    )


def retrieval_components(index: KGIndex, retriever: Retriever, embedder: Embedder, llm: LLM) -> QAComponents:
    """Components over an index and a retriever already in memory (``hoprag eval retrieval``)."""
    return QAComponents(
        kg=KnowledgeGraphView(index, embedder),
        llm=llm,
        retriever=retriever,
        linker=QuestionLinker(index, embedder, llm),
    )


def index_llm_config(index: KGIndex) -> LLMBackendConfig:
    """The LLM an index was built with (its manifest's config), else the default backend: what
    retrieval-only evaluation links questions with unless told otherwise."""
    from pydantic import ValidationError

    recorded = (index.manifest.get("config") or {}).get("llm")
    if recorded:
        try:
            return LLMBackendConfig.model_validate(recorded)
        except ValidationError:
            pass
    return LLMBackendConfig()


def planner_config_with_retriever(config: PlannerConfig, has_retriever: bool) -> PlannerConfig:
    """A configured retriever joins the planner's traversals as ``glm`` (unless already listed)."""
    if has_retriever and "glm" not in config.traversals:
        return config.model_copy(update={"traversals": [*config.traversals, "glm"]})
    return config


def assemble_qa_system(components: QAComponents, config: QASystemConfig | QASettings, mode: str) -> QASystem:
    """The QA system of ``mode`` over ``components`` (the only construction site of the planner and
    of single-shot GLM-RAG outside tests)."""
    from hoprag.planner.planner import Planner
    from hoprag.qa.no_context import NoContextAnswer
    from hoprag.qa.retrieve import RetrieveThenAnswer

    planner = config.planner
    if mode == "plan":
        return Planner(
            components.kg,
            components.llm,
            planner_config_with_retriever(planner, components.retriever is not None),
            retriever=components.retriever,
        )
    if mode == "retrieve":
        if components.retriever is None:
            raise ValueError("retrieve mode needs a retriever ('dense' or a GLM retriever directory)")
        return RetrieveThenAnswer(
            components.kg,
            components.retriever,
            components.llm,
            components.linker,
            config.retrieve,
            max_question_chars=planner.max_question_chars,
            cache_size=planner.cache_size,
        )
    if mode == "no_context":
        return NoContextAnswer(
            components.llm, max_question_chars=planner.max_question_chars, cache_size=planner.cache_size
        )
    raise ValueError(f"unknown QA mode {mode!r} (retrieve, plan, no_context)")


def retriever_for(config: QASystemConfig) -> str | None:
    """The retriever a config's mode uses: retrieve mode defaults to
    :data:`~hoprag.retrieval.base.DEFAULT_RETRIEVER`; plan mode walks one only when given."""
    from hoprag.retrieval.base import DEFAULT_RETRIEVER

    if config.mode == "retrieve":
        return config.retriever or DEFAULT_RETRIEVER
    return config.retriever if config.mode == "plan" else None


def build_qa_system(config: QASystemConfig, llm: LLM | None = None) -> QASystem:
    """Load the index, retriever and LLM a config names and assemble its QA system."""
    components = load_components(config.index, config, retriever_for(config), llm)
    return assemble_qa_system(components, config, config.mode)
