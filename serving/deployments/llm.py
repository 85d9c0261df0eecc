"""The LLM deployment: one configured backend (embedded Gemma, an OpenAI-compatible endpoint such
as a ``ray.serve.llm`` app, or in-process vLLM) shared by every QA replica."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence

from ray import serve

from hoprag.llm.base import Completion, GenerationParams, Prompt, PromptStyle, task_model_id
from hoprag.llm.factory import LLMBackendConfig
from hoprag.llm.streaming import CancelToken, StreamItem


@serve.deployment(name="LLM")
class LLMDeployment:
    def __init__(self, config: LLMBackendConfig) -> None:
        from hoprag.llm.factory import build_llm

        self._llm = build_llm(config)

    def describe(self) -> tuple[str, PromptStyle, list[str]]:
        """Model id, prompt style and (for a distilled student) the tasks with student prompts."""
        return self._llm.model_id, self._llm.prompt_style, sorted(getattr(self._llm, "student_tasks", ()))

    def task_model_id(self, task: str) -> str:
        """The id of the weights ``task`` runs on (:func:`hoprag.llm.base.task_model_id`)."""
        return task_model_id(self._llm, task)

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        return self._llm.generate(prompts, params)

    async def stream(self, prompt: Prompt, params: GenerationParams) -> AsyncIterator[StreamItem]:
        """One prompt's text deltas, then its Completion (call with ``handle.options(stream=True)``).
        The backend streams in a thread; when the caller cancels (Serve raises ``CancelledError``
        here), the backend's cancel token is set and generation stops at the next token."""
        from hoprag.llm.streaming import stream_completion
        from serving.streaming import run_in_thread

        def work(emit: Callable[[object], None], cancel: CancelToken) -> None:
            items = stream_completion(self._llm, prompt, params, cancel)
            try:
                for item in items:
                    emit(item)
            finally:
                items.close()

        async for item in run_in_thread(work, "llm-stream"):
            yield item

    def check_health(self) -> None:
        """Serve's health check: the backend object exists (model loaded in ``__init__``)."""
        if self._llm is None:
            raise RuntimeError("LLM backend not loaded")
