"""The QA deployment: the PAI-2 planner (``plan`` mode) and single-shot GLM-RAG (``retrieve``
mode), built by :mod:`hoprag.qa.builder` (as ``hoprag ask`` and evaluation build them) over the
Retriever and LLM deployments reached through handles.

A replica loads its index and embedder and waits for the LLM and Retriever deployments in its
constructor by default, so Serve routes to it only once it can answer: a rolling update (a new
retriever checkpoint, new settings) then sends no request to a replica that is still loading,
and a replica that cannot load fails its deployment with the load error. With
``load_in_background`` the loading runs in a thread instead: the replica starts at once and reports
not-ready (``/readyz`` 503, QA 503 with Retry-After) until loading has finished.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from ray import serve

from serving.settings import QAAppSettings


class NotReadyError(RuntimeError):
    """The replica is still loading its index and models."""


@serve.deployment(name="QA")
class QADeployment:
    # Serve awaits an async constructor; loading runs in a thread because blocking handle calls
    # (`.result()`) are refused on the replica's event loop.
    async def __init__(self, settings: QAAppSettings, llm_handle: Any, retriever_handle: Any) -> None:  # type: ignore[misc]
        self._settings = settings
        self._llm_handle = llm_handle
        self._retriever_handle = retriever_handle
        self._ready = threading.Event()
        self._load_error: BaseException | None = None
        self._systems: dict[str, Any] = {}
        if settings.load_in_background:
            threading.Thread(target=self._load, name="qa-load", daemon=True).start()
            return
        await asyncio.to_thread(self._load)
        if self._load_error is not None:  # Serve reports the failed constructor and retries it
            raise RuntimeError(f"QA replica failed to load: {self._load_error!r}") from self._load_error

    def _load(self) -> None:
        try:
            time.sleep(self._settings.startup_delay_s)
            from hoprag.qa.builder import assemble_qa_system, load_components
            from serving.remote import RemoteLLM, RemoteRetriever

            s = self._settings
            llm = RemoteLLM(self._llm_handle, timeout_s=s.request_timeout_s)
            _ = llm.model_id  # waits for the LLM deployment
            described = self._retriever_handle.describe.remote().result(
                timeout_s=s.request_timeout_s * 5
            )  # and the Retriever
            retriever = RemoteRetriever(self._retriever_handle, name=str(described["retriever"]))
            components = load_components(s.index, s, retriever=retriever, llm=llm)
            _ = components.kg.triple_vectors  # computed (or read from the cache) before taking traffic
            self._systems = {mode: assemble_qa_system(components, s, mode) for mode in ("retrieve", "plan")}
        except BaseException as exc:  # reported by ready() and check_health()
            self._load_error = exc
        finally:
            self._ready.set()

    def ready(self) -> bool:
        return self._ready.is_set() and self._load_error is None

    def load_status(self) -> str:
        """'ready', 'loading', or 'failed: <error>' (shown by /readyz)."""
        if not self._ready.is_set():
            return "loading"
        return "ready" if self._load_error is None else f"failed: {self._load_error!r}"

    def check_health(self) -> None:
        if self._load_error is not None:
            raise RuntimeError(f"QA replica failed to load: {self._load_error!r}")

    def answer(self, question: str, mode: str, top_k: int) -> dict[str, Any]:
        """The answer as ``Answer.to_dict()``; raises NotReadyError while loading."""
        if not self.ready():
            raise NotReadyError("the index and models are still loading")
        result = self._systems[mode].answer(question, top_k=top_k)
        self._observe(mode, result)
        return result.to_dict()

    async def answer_stream(
        self, question: str, mode: str, top_k: int, request_id: str = ""
    ) -> AsyncIterator[dict[str, Any]]:
        """The answer as events (call with ``handle.options(stream=True)``): ``{"event", "data"}``
        items, ``stage`` ``started`` first, then the pipeline's ``stage`` and ``token`` events
        (:mod:`hoprag.qa.events`), last ``result`` with the answer as :meth:`answer` returns it.
        A refused question or a replica still loading raises before the first event. Cancelling
        the call (the client went away) stops the pipeline and the LLM call it is streaming."""
        if not self.ready():
            raise NotReadyError("the index and models are still loading")
        from hoprag.llm.streaming import CancelToken
        from hoprag.planner.planner import check_question
        from hoprag.qa.events import EventSink, StreamCancelled
        from serving.streaming import run_in_thread

        check_question(question, self._settings.planner.max_question_chars)  # a 400, not a stream
        system = self._systems[mode]
        yield {"event": "stage", "data": {"stage": "started", "request_id": request_id, "mode": mode}}

        def work(emit: Callable[[object], None], cancel: CancelToken) -> None:
            sink = EventSink(lambda kind, data: emit({"event": kind, "data": data}), cancel)
            try:
                result = system.answer(question, top_k=top_k, events=sink)
            except StreamCancelled:
                return
            self._observe(mode, result)
            emit({"event": "result", "data": result.to_dict()})

        async for item in run_in_thread(work, "qa-stream"):
            yield item

    @staticmethod
    def _observe(mode: str, result: Any) -> None:
        from serving.metrics import qa_metrics

        m = qa_metrics()
        m["llm_calls"].observe(result.llm_calls, tags={"mode": mode})
        for kind, count in (("prompt", result.prompt_tokens), ("completion", result.completion_tokens)):
            if count > 0:  # Ray counters only take positive increments (cached answers cost 0)
                m["tokens"].inc(count, tags={"mode": mode, "kind": kind})
