"""The Retriever deployment of one served index: the KG index and its retriever (GLM, GNN or the
dense baseline).

Concurrent requests are grouped by ``@serve.batch`` into one batched forward (the GLM scores many
subgraphs per pass); with batching off every request is its own forward (the benchmark baseline).
The replica follows the index's snapshots (:mod:`serving.snapshots`): each request names the
snapshot its QA replica is answering from, and is served from that snapshot.
"""

from __future__ import annotations

import asyncio
from itertools import groupby
from typing import Any

from ray import serve

from hoprag.retrieval.base import RetrievalQuery, RetrievalResult, Retriever
from hoprag.retrieval.ppr_settings import PPRSettings
from hoprag.vectorsearch import VectorSearchConfig
from serving.settings import BatchingSettings, ServedIndex


@serve.deployment(name="Retriever")
class RetrieverDeployment:
    def __init__(
        self,
        served: ServedIndex,
        batching: BatchingSettings,
        watch_interval_s: float = 0.0,
        vectors: VectorSearchConfig | None = None,
        ppr: PPRSettings | None = None,
    ) -> None:
        from serving.snapshots import SnapshotSet, SnapshotWatcher

        self._served = served
        self._vectors = vectors
        self._ppr = ppr
        from serving.deployments.memory import ReplicaMemory

        self._memory = ReplicaMemory()
        self._batching = batching
        self._embedder: Any = None
        self._snapshots: SnapshotSet[tuple[Any, Retriever]] = SnapshotSet(served.index, self._load)
        current = self._snapshots.load_current()
        self._memory.loaded()
        self._watcher = SnapshotWatcher(
            served.index,
            current,
            lambda _: self._snapshots.load_current(),
            watch_interval_s,
            name=f"retriever-{served.name}-watch",
        )
        self._batched.set_max_batch_size(batching.max_batch_size)
        self._batched.set_batch_wait_timeout_s(batching.batch_wait_timeout_s)

    def _load(self, _: str) -> tuple[str, tuple[Any, Retriever]]:
        from hoprag.kg.index import LAZY_TABLES, KGIndex
        from hoprag.retrieval.loading import index_embedder, load_retriever

        # Everything retrievers read; triple provenance and questions are the planner's and the
        # linker's (QA replicas), and at 1M triples provenance alone is ~100 MB of Python lists.
        index = KGIndex(self._served.index, vectors=self._vectors).preload(
            t for t in LAZY_TABLES if t not in ("triple_doc_ids", "questions")
        )
        self._embedder = index_embedder(index, reuse=self._embedder)
        retriever = load_retriever(self._served.retriever, index, self._embedder, self._ppr)
        return index.snapshot_id, (index, retriever)

    async def retrieve(self, query: RetrievalQuery, k: int, snapshot: str | None = None) -> RetrievalResult:
        if self._batching.enabled:
            return await self._batched((query, k, snapshot))
        return (await asyncio.to_thread(self._run, [query], k, snapshot))[0]

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.01)
    async def _batched(self, items: list[tuple[RetrievalQuery, int, str | None]]) -> list[RetrievalResult]:
        results: list[RetrievalResult | None] = [None] * len(items)
        order = sorted(range(len(items)), key=lambda i: items[i][2] or "")
        for snapshot, group in groupby(order, key=lambda i: items[i][2] or ""):
            ids = list(group)
            k = max(items[i][1] for i in ids)
            found = await asyncio.to_thread(self._run, [items[i][0] for i in ids], k, snapshot or None)
            for i, res in zip(ids, found, strict=True):
                res.documents = res.documents[: items[i][1]]
                results[i] = res
        return [r for r in results if r is not None]

    def _run(self, queries: list[RetrievalQuery], k: int, snapshot: str | None) -> list[RetrievalResult]:
        from serving.metrics import retriever_metrics

        _, retriever = self._snapshots.get(snapshot)
        retriever_metrics()["batch_size"].observe(len(queries))
        return retriever.retrieve(queries, k)

    def memory(self) -> dict[str, object]:
        """This replica's RSS (now, peak, above its start-up baseline) and load seconds."""
        return self._memory.report()

    def describe(self) -> dict[str, object]:
        from serving.metrics import process_rss_bytes

        index, retriever = self._snapshots.get(None)
        return {
            "retriever": retriever.name,
            "batching": self._batching.enabled,
            "entities": index.num_entities,
            "snapshot": self._snapshots.current_name,
            "snapshots_loaded": self._snapshots.names,
            "rss_bytes": process_rss_bytes(),
        }
