"""The Retriever deployment: the KG index and the exported GLM retriever (or the dense baseline).

Concurrent requests are grouped by ``@serve.batch`` into one batched forward (the GLM scores many
subgraphs per pass); with batching off every request is its own forward (the benchmark baseline).
"""

from __future__ import annotations

import asyncio

from ray import serve

from hoprag.retrieval.base import RetrievalQuery, RetrievalResult
from serving.settings import BatchingSettings


@serve.deployment(name="Retriever")
class RetrieverDeployment:
    def __init__(self, index_dir: str, retriever_spec: str, batching: BatchingSettings) -> None:
        from hoprag.kg.index import KGIndex
        from hoprag.retrieval.loading import load_retriever
        from serving.deployments.memory import ReplicaMemory

        self._memory = ReplicaMemory()
        self._index = KGIndex(index_dir)
        self._retriever = load_retriever(retriever_spec, self._index)
        self._memory.loaded()
        self._batching = batching
        self._batched.set_max_batch_size(batching.max_batch_size)
        self._batched.set_batch_wait_timeout_s(batching.batch_wait_timeout_s)

    async def retrieve(self, query: RetrievalQuery, k: int) -> RetrievalResult:
        if self._batching.enabled:
            return await self._batched((query, k))
        return (await asyncio.to_thread(self._run, [query], k))[0]

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.01)
    async def _batched(self, items: list[tuple[RetrievalQuery, int]]) -> list[RetrievalResult]:
        k = max(k for _, k in items)
        results = await asyncio.to_thread(self._run, [q for q, _ in items], k)
        for res, (_, wanted) in zip(results, items, strict=True):
            res.documents = res.documents[:wanted]
        return results

    def _run(self, queries: list[RetrievalQuery], k: int) -> list[RetrievalResult]:
        from serving.metrics import retriever_metrics

        retriever_metrics()["batch_size"].observe(len(queries))
        return self._retriever.retrieve(queries, k)

    def memory(self) -> dict[str, object]:
        """This replica's RSS (now, peak, above its start-up baseline) and load seconds."""
        return self._memory.report()

    def describe(self) -> dict[str, object]:
        return {
            "retriever": self._retriever.name,
            "batching": self._batching.enabled,
            "entities": self._index.num_entities,
        }
