"""The QA deployment of one served index: the PAI-2 planner (``plan`` mode) and single-shot
GLM-RAG (``retrieve`` mode), built by :mod:`hoprag.qa.builder` (as ``hoprag ask`` and evaluation
build them) over the index's Retriever deployment and the shared LLM deployment, reached through
handles.

A replica loads its index and embedder and waits for the LLM and Retriever deployments in its
constructor by default, so Serve routes to it only once it can answer: a rolling update (a new
retriever checkpoint, new settings) then sends no request to a replica that is still loading,
and a replica that cannot load fails its deployment with the load error. With
``load_in_background`` the loading runs in a thread instead: the replica starts at once and reports
not-ready (``/readyz`` 503, QA 503 with Retry-After) until loading has finished.

Once loaded, the replica follows the index's snapshots (:mod:`serving.snapshots`): a new snapshot
(a document update) is loaded beside the one being served, then swapped in; a request runs
entirely on the systems it started with.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from ray import serve

from serving.settings import QAAppSettings, ServedIndex


class NotReadyError(RuntimeError):
    """The replica is still loading its index and models."""


@serve.deployment(name="QA")
class QADeployment:
    # Serve awaits an async constructor; loading runs in a thread because blocking handle calls
    # (`.result()`) are refused on the replica's event loop.
    async def __init__(  # type: ignore[misc]
        self, settings: QAAppSettings, served: ServedIndex, llm_handle: Any, retriever_handle: Any
    ) -> None:
        from serving.deployments.memory import ReplicaMemory

        self._memory = ReplicaMemory()
        self._settings = settings
        self._served = served
        self._llm_handle = llm_handle
        self._retriever_handle = retriever_handle
        self._ready = threading.Event()
        self._delay_over = threading.Event()  # set by start_loading(): the startup delay ends early
        self._load_error: BaseException | None = None
        self._systems: dict[str, Any] = {}
        self._index: Any = None  # the KGIndex of the snapshot being served
        self._snapshot = ""
        self._index_stats: dict[str, int] = {}
        self._remote: tuple[Any, Any] | None = None  # RemoteLLM, RemoteRetriever
        self._embedder: Any = None
        self._watcher: Any = None
        if settings.load_in_background:
            threading.Thread(target=self._load, name="qa-load", daemon=True).start()
            return
        await asyncio.to_thread(self._load)
        if self._load_error is not None:  # Serve reports the failed constructor and retries it
            raise RuntimeError(f"QA replica failed to load: {self._load_error!r}") from self._load_error

    def _load(self) -> None:
        try:
            self._delay_over.wait(self._settings.startup_delay_s)
            from serving.remote import RemoteLLM, RemoteRetriever
            from serving.snapshots import SnapshotWatcher

            s = self._settings
            llm = RemoteLLM(self._llm_handle, timeout_s=s.request_timeout_s)
            _ = llm.model_id  # waits for the LLM deployment
            described = self._retriever_handle.describe.remote().result(
                timeout_s=s.request_timeout_s * 5
            )  # and the Retriever
            self._remote = (llm, RemoteRetriever(self._retriever_handle, name=str(described["retriever"])))
            self._swap_to_current()
            self._watcher = SnapshotWatcher(
                self._served.index,
                self._snapshot,
                lambda _: self._swap_to_current(),
                s.updates.watch_interval_s,
                name=f"qa-{self._served.name}-watch",
            )
            self._memory.loaded()
        except BaseException as exc:  # reported by ready() and check_health()
            self._load_error = exc
        finally:
            self._ready.set()

    def _swap_to_current(self) -> None:
        """Load the index's current snapshot and its QA systems, then make them the ones answering."""
        from hoprag.planner.llm_calls import CachedLLM
        from hoprag.qa.builder import assemble_qa_system, load_components

        assert self._remote is not None
        llm, retriever = self._remote
        s = self._settings
        components = load_components(
            self._served.index, s, retriever=retriever, llm=llm, embedder=self._embedder
        )
        index = components.kg.index.preload()
        components.retriever = retriever.for_snapshot(index.snapshot_id)
        # Opened before taking traffic: the snapshot's triple and entity vectors and ANN indexes
        # (memory-mapped), or for an older index the triple vectors computed / read from the cache.
        _ = components.kg.triple_search
        _ = index.vector_search("entity")
        systems = {mode: assemble_qa_system(components, s, mode) for mode in ("retrieve", "plan")}
        for mode, system in systems.items():  # answers to unchanged prompts stay cached
            old, new = getattr(self._systems.get(mode), "client", None), getattr(system, "client", None)
            if isinstance(old, CachedLLM) and isinstance(new, CachedLLM):
                new.adopt_cache(old)
        self._embedder = components.embedder
        self._index_stats = {
            "documents": index.documents.num_rows,
            "entities": index.num_entities,
            "triples": index.num_triples,
        }
        # One swap: requests see the old systems, index and snapshot or the new ones.
        self._systems, self._index, self._snapshot = systems, index, index.snapshot_id

    def start_loading(self) -> None:
        """End this replica's ``startup_delay_s`` now: an operator starting a staggered replica
        early, or a test that has seen the replica report not-ready. No effect once loading began."""
        self._delay_over.set()

    def ready(self) -> bool:
        return self._ready.is_set() and self._load_error is None

    def load_status(self) -> str:
        """'ready', 'loading', or 'failed: <error>' (shown by /readyz)."""
        if not self._ready.is_set():
            return "loading"
        return "ready" if self._load_error is None else f"failed: {self._load_error!r}"

    def memory(self) -> dict[str, Any]:
        """This replica's RSS (now, peak, above its start-up baseline) and load seconds."""
        return self._memory.report()

    def check_health(self) -> None:
        if self._load_error is not None:
            raise RuntimeError(f"QA replica failed to load: {self._load_error!r}")

    async def describe(self) -> dict[str, Any]:
        """This index as ``/v1/indexes`` lists it: snapshot, sizes, and the resident memory of this
        QA replica and of a Retriever replica of the index."""
        from serving.metrics import process_rss_bytes

        info: dict[str, Any] = {
            "name": self._served.name,
            "status": self.load_status().partition(":")[0],
            "retriever": self._served.retriever,
            "snapshot": self._snapshot or None,
            **self._index_stats,
            "memory": {"qa_replica_rss_bytes": process_rss_bytes(), "retriever_replica_rss_bytes": None},
        }
        try:
            retriever = await asyncio.wait_for(self._retriever_handle.describe.remote(), timeout=5)
            info["memory"]["retriever_replica_rss_bytes"] = retriever["rss_bytes"]
        except Exception:  # starting, or busy: the QA side is still worth reporting
            pass
        return info

    def snapshot(self) -> str:
        """The snapshot this replica answers from ('' while loading)."""
        return self._snapshot

    def document(self, title: str) -> dict[str, Any] | None:
        """The document titled ``title`` in the served snapshot (``doc_id``, ``title``, ``text``), or
        None; raises NotReadyError while loading."""
        if not self.ready() or self._index is None:
            raise NotReadyError("the index and models are still loading")
        import pyarrow.compute as pc

        table = self._index.documents
        rows = table.filter(pc.equal(table.column("title"), title)).slice(0, 1).to_pylist()
        if not rows:
            return None
        return {
            "doc_id": int(rows[0]["doc_id"]),
            "title": str(rows[0]["title"]),
            "text": str(rows[0]["text"]),
        }

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
        from hoprag.planner.questions import check_question
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
