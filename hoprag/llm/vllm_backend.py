"""vLLM on GPUs (optional extra ``vllm``): an in-process :class:`~hoprag.llm.base.LLM`, and the
Ray Data batch path (``ray.data.llm``) for bulk OpenIE over a corpus.

Two ways to run the same weights:

* :class:`VLLMEngineLLM` owns a ``vllm.LLM`` in the current process and implements the
  :class:`~hoprag.llm.base.LLM` protocol, so it drops in wherever the embedded or HTTP backends do
  (question-time NER, small extraction runs, a Ray Data actor that the caller manages itself).
* :func:`build_ray_data_processor` / :func:`build_openie_processor` build a ``ray.data.llm``
  processor: Ray Data runs chat templating and tokenization on CPU workers and a pool of vLLM
  engine replicas on GPUs, streaming rows through them. That is the fast path for indexing.

Nothing in this module imports vLLM (or ``ray.data.llm``) at import time, so the config and the
pure row/output helpers work, and are unit-tested, on CPU-only machines. Everything that needs vLLM
first calls :func:`hoprag.deps.require_vllm`, which names the extra to install.

The parts: settings and model ids (:mod:`hoprag.llm.vllm_config`), LoRA adapters, sampling
parameters and output parsing (:mod:`hoprag.llm.vllm_requests`), the Ray Data batch path
(:mod:`hoprag.llm.vllm_ray_data`); this module runs the engine in-process.

"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from hoprag.deps import require_vllm
from hoprag.llm.adapters import (
    adapter_for_task,
    task_routes,
)
from hoprag.llm.base import (
    BackendSpec,
    ChatMessage,
    Completion,
    GenerationParams,
    Prompt,
    PromptStyle,
    render_chat_as_completion,
)
from hoprag.llm.vllm_config import ADAPTER_SETTING, VLLMConfig, vllm_model_id, vllm_task_model_id
from hoprag.llm.vllm_requests import (
    check_adapter,
    completion_from_vllm_output,
    engine_sampling_params,
    error_completion,
    lora_requests_kwargs,
    short_detail,
)

logger = logging.getLogger(__name__)


# -- in-process engine --------------------------------------------------------------------------


class VLLMEngineLLM:
    """An :class:`~hoprag.llm.base.LLM` backed by a ``vllm.LLM`` in this process.

    Plain-text prompts go through ``llm.generate``; chat prompts through ``llm.chat`` (the model's
    chat template) when ``config.prompt_style == "chat"``, or are flattened with
    :func:`~hoprag.llm.base.render_chat_as_completion` for base models that have no template. A
    mixed batch is split by kind, each kind is generated as one vLLM batch, and the results are put
    back in prompt order.

    Thread-safe in the sense that concurrent :meth:`generate` calls are serialised: ``vllm.LLM`` is
    not re-entrant, and one call already keeps the GPU busy with the whole batch.
    """

    def __init__(self, config: VLLMConfig) -> None:
        """Load the model (and its LoRA adapter, if configured) onto the visible GPU(s); raises
        :class:`~hoprag.llm.adapters.AdapterError` for an unusable adapter and
        :class:`~hoprag.deps.MissingExtraError` without vLLM."""
        check_adapter(config)
        require_vllm("The vLLM LLM backend (llm.backend=vllm)")
        import vllm

        self.config = config
        self._vllm = vllm
        self._llm = vllm.LLM(model=config.model, **config.engine_args())
        self._routes = task_routes(config.adapter_dirs, ADAPTER_SETTING)
        self.student_tasks: frozenset[str] = frozenset(self._routes)
        self._lora_requests: list[Any] = []
        if config.adapter_dirs:
            from vllm.lora.request import LoRARequest

            self._lora_requests = [LoRARequest(**kwargs) for kwargs in lora_requests_kwargs(config)]
        self._lock = threading.Lock()

    # -- LLM protocol -------------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        return vllm_model_id(self.config)

    def task_model_id(self, task: str) -> str:
        """The id of the weights this engine answers ``task`` with (:func:`vllm_task_model_id`)."""
        return vllm_task_model_id(self.config, task)

    @property
    def prompt_style(self) -> PromptStyle:
        """The prompt form the configured model expects."""
        return self.config.prompt_style

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        """Complete every prompt; one result per prompt, in order.

        Raises only for a prompt of the wrong type. If vLLM rejects a batch because of some of its
        prompts (e.g. one longer than ``max_model_len``), the batch is bisected so only those
        prompts fail; any other engine failure marks the whole group as ``engine_error``.
        """
        texts: list[tuple[int, str]] = []
        chats: list[tuple[int, list[ChatMessage]]] = []
        for i, p in enumerate(prompts):
            if isinstance(p, str):
                texts.append((i, p))
            elif isinstance(p, list):
                if self.config.prompt_style == "chat":
                    chats.append((i, p))
                else:
                    texts.append((i, render_chat_as_completion(p)))
            else:
                raise TypeError(f"prompt must be str or list of chat messages, got {type(p).__name__}")
        if not prompts:
            return []
        results: list[Completion | None] = [None] * len(prompts)
        sampling = engine_sampling_params(self._vllm, params, self.config.structured_output)
        with self._lock:
            if texts:
                done = self._run_group(
                    partial(self._generate_texts, task=params.task),
                    [t for _, t in texts],
                    sampling,
                    params.stop,
                )
                for (i, _), c in zip(texts, done, strict=True):
                    results[i] = c
            if chats:
                done = self._run_group(
                    partial(self._generate_chats, task=params.task),
                    [m for _, m in chats],
                    sampling,
                    params.stop,
                )
                for (i, _), c in zip(chats, done, strict=True):
                    results[i] = c
        assert all(c is not None for c in results)
        return [c for c in results if c is not None]

    def _generate_texts(self, items: list[Any], sampling: Any, task: str | None = None) -> list[Any]:
        return list(self._llm.generate(items, sampling, use_tqdm=False, **self._lora_for(task)))

    def _generate_chats(self, items: list[Any], sampling: Any, task: str | None = None) -> list[Any]:
        return list(self._llm.chat(items, sampling, use_tqdm=False, **self._lora_for(task)))

    def _lora_for(self, task: str | None) -> dict[str, Any]:
        """The adapter serving ``task`` (:func:`~hoprag.llm.adapters.adapter_for_task`): the student
        trained on it; no LoRA (the base model) for a task no student lists."""
        index = adapter_for_task(self._routes, len(self._lora_requests), task)
        return {} if index is None else {"lora_request": self._lora_requests[index]}

    def _run_group(
        self,
        call: Callable[[list[Any], Any], list[Any]],
        items: list[Any],
        sampling: Any,
        stop: Sequence[str],
    ) -> list[Completion]:
        try:
            outputs = call(items, sampling)
        except (ValueError, TypeError) as e:
            # vLLM validates every input (length vs max_model_len, chat template rendering) before
            # scheduling and rejects the whole call for one bad prompt. Bisecting keeps the good
            # prompts batched and costs only O(bad * log n) extra calls.
            if len(items) == 1:
                logger.warning("vLLM rejected a prompt: %s", short_detail(repr(e)))
                return [error_completion("prompt_rejected", e)]
            mid = len(items) // 2
            return self._run_group(call, items[:mid], sampling, stop) + self._run_group(
                call, items[mid:], sampling, stop
            )
        except Exception as e:
            # A dead or out-of-memory engine: report it per prompt, so the caller's bookkeeping
            # (retry later, mark documents failed) works exactly as for HTTP failures.
            logger.exception("vLLM engine call failed for %d prompt(s)", len(items))
            return [error_completion("engine_error", e) for _ in items]
        if len(outputs) != len(items):
            err = RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(items)} prompts")
            return [error_completion("bad_output_count", err) for _ in items]
        return [completion_from_vllm_output(o, stop) for o in outputs]

    def __repr__(self) -> str:
        adapter = f", adapter={self.config.adapter!r}" if self.config.adapter else ""
        return f"VLLMEngineLLM(model={self.config.model!r}, style={self.config.prompt_style!r}{adapter})"


BACKEND = BackendSpec(
    name="vllm",
    config_type=VLLMConfig,
    constructor=VLLMEngineLLM,
    model_id=vllm_model_id,
    needs="model, ...",
    task_model_id=vllm_task_model_id,
)
