"""Adapters that let the core (planner, single-shot QA) talk to other deployments through handles.

:class:`RemoteLLM` implements the :class:`~hoprag.llm.base.LLM` protocol and
:class:`RemoteRetriever` the :class:`~hoprag.retrieval.base.Retriever` protocol, so the same
``Planner`` and ``RetrieveThenAnswer`` run in serving, in ``hoprag ask`` and in tests. Both block on
``.result()``: call them from synchronous deployment methods (Serve runs those in a thread pool).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from hoprag.llm.base import Completion, GenerationParams, Prompt, PromptStyle
from hoprag.llm.streaming import CancelToken, StreamItem
from hoprag.retrieval.base import RetrievalQuery, RetrievalResult


class RemoteLLM:
    """The LLM deployment behind a DeploymentHandle."""

    def __init__(self, handle: Any, timeout_s: float = 300.0) -> None:
        self._handle = handle
        self._timeout_s = timeout_s
        self._info: tuple[str, PromptStyle, frozenset[str]] | None = None
        self._task_model_ids: dict[str, str] = {}

    def _describe(self) -> tuple[str, PromptStyle, frozenset[str]]:
        if self._info is None:
            model_id, style, tasks = self._handle.describe.remote().result(timeout_s=self._timeout_s)
            self._info = (model_id, style, frozenset(tasks))
        return self._info

    @property
    def model_id(self) -> str:
        return self._describe()[0]

    def task_model_id(self, task: str) -> str:
        """The id of the weights the deployment answers ``task`` with (asked once per task)."""
        if task not in self._task_model_ids:
            self._task_model_ids[task] = self._handle.task_model_id.remote(task).result(
                timeout_s=self._timeout_s
            )
        return self._task_model_ids[task]

    @property
    def prompt_style(self) -> PromptStyle:
        return self._describe()[1]

    @property
    def student_tasks(self) -> frozenset[str]:
        return self._describe()[2]

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        try:
            return self._handle.generate.remote(list(prompts), params).result(timeout_s=self._timeout_s)
        except TimeoutError:
            return [Completion(text="", finish_reason="error", error="timeout") for _ in prompts]

    def stream(
        self, prompt: Prompt, params: GenerationParams, cancel: CancelToken | None = None
    ) -> Iterator[StreamItem]:
        """The LLM deployment's stream of one prompt (``handle.options(stream=True)``). Cancelling
        ``cancel`` or closing this iterator cancels the call, and Serve cancels the deployment's
        generator, which stops the generation."""
        call = self._handle.options(stream=True).stream.remote(prompt, params)
        remove = cancel.on_cancel(call.cancel) if cancel is not None else (lambda: None)
        finished = False
        try:
            for item in call:
                if isinstance(item, Completion):
                    finished = True
                yield item
                if finished:
                    return
        except Exception as exc:  # the replica died, the call was cancelled, ...
            error = "cancelled" if cancel is not None and cancel.cancelled else f"stream_failed: {exc!r}"
            finished = True
            yield Completion(text="", finish_reason="error", error=error[:200])
        finally:
            remove()
            if not finished:
                call.cancel()


class RemoteRetriever:
    """The Retriever deployment behind a DeploymentHandle (one call per query; Serve batches them)."""

    def __init__(
        self, handle: Any, name: str = "remote", timeout_s: float = 120.0, snapshot: str | None = None
    ) -> None:
        self._handle = handle
        self._name = name
        self._timeout_s = timeout_s
        self._snapshot = snapshot

    @property
    def name(self) -> str:
        return self._name

    def for_snapshot(self, snapshot: str) -> RemoteRetriever:
        """The same deployment, answering from index snapshot ``snapshot`` (what the caller reads)."""
        return RemoteRetriever(self._handle, self._name, self._timeout_s, snapshot)

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        from serving.snapshots import SnapshotGoneError

        pending = [self._handle.retrieve.remote(q, k, self._snapshot) for q in queries]  # all in flight
        results = []
        for query, call in zip(queries, pending, strict=True):
            try:
                results.append(call.result(timeout_s=self._timeout_s))
            except SnapshotGoneError:  # two updates passed while this request ran: use the newest
                results.append(self._handle.retrieve.remote(query, k, None).result(timeout_s=self._timeout_s))
        return results
