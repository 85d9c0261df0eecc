"""Build the configured LLM backend from the one registry of backends.

Each backend module declares a :class:`~hoprag.llm.base.BackendSpec` (name, config type,
constructor, model-id function) once; the config validation, :func:`build_llm` and
:func:`expected_model_id` (the extraction-cache key) all read it from :data:`BACKENDS`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from hoprag.config import StrictModel
from hoprag.llm import embedded, llamacpp, openai_compat, reference, vllm_backend
from hoprag.llm.base import (
    LLM,
    BackendSpec,
    Completion,
    GenerationParams,
    Prompt,
    PromptStyle,
    task_model_id,
)
from hoprag.llm.embedded import EmbeddedLLMConfig
from hoprag.llm.llamacpp_config import LlamaCppConfig
from hoprag.llm.openai_compat import OpenAICompatibleConfig
from hoprag.llm.reference import ReferenceLLMConfig
from hoprag.llm.streaming import CancelToken, StreamItem, stream_completion
from hoprag.llm.vllm_config import VLLMConfig

BACKENDS: dict[str, BackendSpec] = {
    spec.name: spec
    for spec in (
        embedded.BACKEND,
        llamacpp.BACKEND,
        openai_compat.BACKEND,
        vllm_backend.BACKEND,
        reference.BACKEND,
    )
}


class LLMBackendConfig(StrictModel):
    """Which LLM a stage uses. Only the section named by ``backend`` is read."""

    backend: Literal["embedded", "llamacpp", "openai", "vllm", "reference"] = Field(
        default="embedded",
        description="embedded: packaged Gemma 3 270M on CPU (transformers, with the distilled student); "
        "llamacpp: any GGUF through llama.cpp on CPU (known names: gemma-3-270m, qwen2.5-coder-0.5b, "
        "qwen2.5-coder-1.5b); openai: any OpenAI-compatible HTTP endpoint; "
        "vllm: in-process vLLM on GPUs (extra 'vllm'); reference: oracle OpenIE/NER from a synthetic "
        "benchmark's world.json (to measure retrievers apart from extraction quality).",
    )
    embedded: EmbeddedLLMConfig = Field(default_factory=EmbeddedLLMConfig)
    llamacpp: LlamaCppConfig = Field(default_factory=LlamaCppConfig)
    openai: OpenAICompatibleConfig | None = Field(default=None, description="Required when backend=openai.")
    vllm: VLLMConfig | None = Field(default=None, description="Required when backend=vllm.")
    reference: ReferenceLLMConfig | None = Field(default=None, description="Required when backend=reference.")

    @model_validator(mode="after")
    def _section_present(self) -> LLMBackendConfig:
        if self.section() is None:
            spec = BACKENDS[self.backend]
            raise ValueError(f"backend={spec.name} needs a '{spec.name}' section ({spec.needs})")
        return self

    def section(self) -> Any:
        """The config section of the selected backend."""
        return getattr(self, self.backend)


def build_llm(config: LLMBackendConfig) -> LLM:
    """Instantiate the backend; heavy imports happen here, not at module import."""
    return BACKENDS[config.backend].constructor(config.section())


def expected_model_id(config: LLMBackendConfig, task: str | None = None) -> str:
    """The ``model_id`` the configured backend will report, known without loading it; with a
    ``task``, the id of the weights that task's prompts run on (``task_model_id``: they differ
    only for a backend serving several students).

    Extraction-cache keys need it before any model is loaded (to decide what to skip).
    """
    spec = BACKENDS[config.backend]
    if task is not None and spec.task_model_id is not None:
        return spec.task_model_id(config.section(), task)
    return spec.model_id(config.section())


class LazyLLM:
    """The configured backend, built on first use: ``model_id`` is known without loading it.

    Evaluation workers of retrieval systems hold one for query-time entity linking, which reads
    the index's stored links (keyed by model id) and loads the model only for a question that
    has none. Thread-safe.
    """

    def __init__(self, config: LLMBackendConfig) -> None:
        import threading

        self.config = config
        self._llm: LLM | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    def get(self) -> LLM:
        """The backend (built now if it is not yet)."""
        with self._lock:
            if self._llm is None:
                self._llm = build_llm(self.config)
            return self._llm

    @property
    def model_id(self) -> str:
        return self._llm.model_id if self._llm is not None else expected_model_id(self.config)

    def task_model_id(self, task: str) -> str:
        """The id of the weights ``task`` runs on (:func:`~hoprag.llm.base.task_model_id`), known
        without loading the model."""
        if self._llm is not None:
            return task_model_id(self._llm, task)
        return expected_model_id(self.config, task)

    @property
    def prompt_style(self) -> PromptStyle:
        return self.get().prompt_style

    @property
    def student_tasks(self) -> frozenset[str]:
        """The tasks of a distilled student adapter, read from its student.json without loading."""
        if self._llm is not None:
            return frozenset(getattr(self._llm, "student_tasks", ()))
        section = self.config.section()
        adapters = getattr(section, "adapter_dirs", ())  # backends without adapters have none
        if not adapters:
            return frozenset()
        from hoprag.llm.adapters import task_routes

        # the setting named in warnings and errors is the selected backend's own
        return frozenset(task_routes(adapters, f"llm.{self.config.backend}.adapter"))

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        return self.get().generate(prompts, params)

    def stream(
        self, prompt: Prompt, params: GenerationParams, cancel: CancelToken | None = None
    ) -> Iterator[StreamItem]:
        """The backend's stream (one delta with the whole completion if it cannot stream)."""
        return stream_completion(self.get(), prompt, params, cancel)


def read_llm_config_args(items: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Benchmarks' ``--llm-config NAME=FILE`` arguments → ``{NAME: LLM backend mapping}``. A file is an
    LLM backend mapping, or a mapping with an ``llm`` section (an indexing config, for example).
    Raises :class:`~hoprag.config.ConfigError` on a malformed argument or an unreadable file."""
    from hoprag.config import ConfigError, read_yaml_mapping

    systems: dict[str, dict[str, Any]] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--llm-config takes NAME=FILE, got {item!r}")
        try:
            mapping = read_yaml_mapping(path, "LLM config file")
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        systems[name] = mapping.get("llm", mapping)
    return systems
