"""Build the configured LLM backend (embedded, OpenAI-compatible endpoint or vLLM)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from hoprag.data.synthetic.reference_llm import ReferenceLLMConfig, reference_model_id
from hoprag.llm.base import LLM
from hoprag.llm.embedded import EmbeddedLLMConfig
from hoprag.llm.openai_compat import OpenAICompatibleConfig
from hoprag.llm.vllm_backend import VLLMConfig


class LLMBackendConfig(BaseModel):
    """Which LLM a stage uses. Only the section named by ``backend`` is read."""

    backend: Literal["embedded", "openai", "vllm", "reference"] = Field(
        default="embedded",
        description="embedded: packaged Gemma 3 270M on CPU; openai: any OpenAI-compatible HTTP endpoint; "
        "vllm: in-process vLLM on GPUs (extra 'vllm'); reference: oracle OpenIE/NER from a synthetic "
        "benchmark's world.json (to measure retrievers apart from extraction quality).",
    )
    embedded: EmbeddedLLMConfig = Field(default_factory=EmbeddedLLMConfig)
    openai: OpenAICompatibleConfig | None = Field(default=None, description="Required when backend=openai.")
    vllm: VLLMConfig | None = Field(default=None, description="Required when backend=vllm.")
    reference: ReferenceLLMConfig | None = Field(default=None, description="Required when backend=reference.")

    @model_validator(mode="after")
    def _section_present(self) -> LLMBackendConfig:
        if self.backend == "openai" and self.openai is None:
            raise ValueError("backend=openai needs an 'openai' section (base_url, model, ...)")
        if self.backend == "vllm" and self.vllm is None:
            raise ValueError("backend=vllm needs a 'vllm' section (model, ...)")
        if self.backend == "reference" and self.reference is None:
            raise ValueError("backend=reference needs a 'reference' section (world: PATH/raw/world.json)")
        return self


def build_llm(config: LLMBackendConfig) -> LLM:
    """Instantiate the backend; heavy imports happen here, not at module import."""
    if config.backend == "openai":
        from hoprag.llm.openai_compat import OpenAICompatibleLLM

        assert config.openai is not None
        return OpenAICompatibleLLM(config.openai)
    if config.backend == "vllm":
        from hoprag.llm.vllm_backend import VLLMEngineLLM

        assert config.vllm is not None
        return VLLMEngineLLM(config.vllm)
    if config.backend == "reference":
        from hoprag.data.synthetic.reference_llm import ReferenceExtractorLLM

        assert config.reference is not None
        return ReferenceExtractorLLM(config.reference)
    from hoprag.llm.embedded import EmbeddedLLM

    return EmbeddedLLM(config.embedded)


def expected_model_id(config: LLMBackendConfig) -> str:
    """The ``model_id`` the configured backend will report, known without loading it.

    Extraction-cache keys need it before any model is loaded (to decide what to skip).
    """
    if config.backend == "openai":
        assert config.openai is not None
        return f"openai-compat:{config.openai.model}"
    if config.backend == "vllm":
        assert config.vllm is not None
        return f"vllm:{config.vllm.model}"
    if config.backend == "reference":
        assert config.reference is not None
        return reference_model_id(config.reference.world)
    from hoprag.llm.embedded import EMBEDDED_MODEL_NAME

    return f"embedded:{config.embedded.model_path or EMBEDDED_MODEL_NAME}@{config.embedded.dtype}"
