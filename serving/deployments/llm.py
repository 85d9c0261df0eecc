"""The LLM deployment: one configured backend (embedded Gemma, an OpenAI-compatible endpoint such
as a ``ray.serve.llm`` app, or in-process vLLM) shared by every QA replica."""

from __future__ import annotations

from collections.abc import Sequence

from ray import serve

from hoprag.llm.base import Completion, GenerationParams, Prompt, PromptStyle
from hoprag.llm.factory import LLMBackendConfig


@serve.deployment(name="LLM")
class LLMDeployment:
    def __init__(self, config: LLMBackendConfig) -> None:
        from hoprag.llm.factory import build_llm

        self._llm = build_llm(config)

    def describe(self) -> tuple[str, PromptStyle, list[str]]:
        """Model id, prompt style and (for a distilled student) the tasks with student prompts."""
        return self._llm.model_id, self._llm.prompt_style, sorted(getattr(self._llm, "student_tasks", ()))

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        return self._llm.generate(prompts, params)

    def check_health(self) -> None:
        """Serve's health check: the backend object exists (model loaded in ``__init__``)."""
        if self._llm is None:
            raise RuntimeError("LLM backend not loaded")
