"""Typed config of a QA system: index, retriever, LLM, mode and the modes' settings."""

from __future__ import annotations

from pydantic import Field

from hoprag.config import StrictModel
from hoprag.llm.factory import LLMBackendConfig
from hoprag.llm.gguf_models import QWEN_15B
from hoprag.planner.config import PlannerConfig
from hoprag.qa.system import QAMode
from hoprag.retrieval.ppr_settings import PPRSettings
from hoprag.vectorsearch import VectorSearchConfig


class RetrieveModeSettings(StrictModel):
    """Single-shot GLM-RAG (``retrieve`` mode): what goes into its one answer prompt."""

    context_documents: int = Field(
        default=3, ge=0, description="Texts of the top documents in the answer prompt."
    )
    max_document_chars: int = Field(
        default=600, ge=50, description="Each document text is cut to this length."
    )
    max_triples: int = Field(
        default=25, ge=0, description="Fact triples joining the retriever's top entities in the prompt."
    )


def answering_llm() -> LLMBackendConfig:
    """The LLM that answers, plans and links questions unless one is configured: Qwen2.5-Coder 1.5B
    Instruct on llama.cpp, the best reader measured within retrieve mode's 15 s p50 on 2 cores
    (docs/llm-engines.md). Indexing keeps its own default (the embedded student extracts faster)."""
    return LLMBackendConfig.model_validate({"backend": "llamacpp", "llamacpp": {"model": QWEN_15B}})


ANSWERING_LLM_HELP = (
    "The LLM that answers, plans and links questions. Default: llamacpp with qwen2.5-coder-1.5b "
    "(docs/llm-engines.md); --set llm.backend=embedded for the packaged 270M student."
)


class QASettings(StrictModel):
    """How questions are answered: the LLM and each mode's settings (``hoprag ask --config``, the
    ``llm``/``planner``/``retrieve`` sections of serving and evaluation configs)."""

    llm: LLMBackendConfig = Field(default_factory=answering_llm, description=ANSWERING_LLM_HELP)
    planner: PlannerConfig = Field(default_factory=PlannerConfig)
    retrieve: RetrieveModeSettings = Field(default_factory=RetrieveModeSettings)
    ppr: PPRSettings = Field(
        default_factory=PPRSettings,
        description="HippoRAG 2's PPR retriever (a retriever spec naming 'ppr'): damping, passage weight, "
        "linking top-k (docs/ppr.md).",
    )
    vector_search: VectorSearchConfig = Field(
        default_factory=VectorSearchConfig,
        description="How entity, triple and document vectors are searched (the snapshot's ANN indexes, "
        "or exact scans).",
    )


class QASystemConfig(QASettings):
    """One QA system: :func:`hoprag.qa.builder.build_qa_system` turns it into a ready system."""

    index: str = Field(description="KG index directory.")
    mode: QAMode = Field(
        default="retrieve",
        description="retrieve: single-shot GLM-RAG; plan: the PAI-2 planner; no_context: the LLM alone.",
    )
    retriever: str | None = Field(
        default=None,
        description="'dense', a GLM retriever / training run directory, or several joined by '+'. retrieve "
        "mode: default 'routed' (dense, fused with the shipped GLM and PPR where those agree; docs/ppr.md); "
        "plan mode: when given, the planner also walks it as the 'glm' traversal.",
    )
