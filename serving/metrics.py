"""Application metrics (``ray.util.metrics``, exported on Ray's Prometheus endpoint).

Created lazily inside replicas (metrics need a connected Ray worker), never at import.
"""

from __future__ import annotations

from functools import cache
from typing import Any

LATENCY_BOUNDARIES = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]


@cache
def ingress_metrics() -> dict[str, Any]:
    from ray.util import metrics

    return {
        "requests": metrics.Counter(
            "hoprag_requests_total", "QA requests by route and mode", tag_keys=("route", "mode")
        ),
        "errors": metrics.Counter(
            "hoprag_errors_total", "Failed requests by kind", tag_keys=("route", "kind")
        ),
        "latency": metrics.Histogram(
            "hoprag_stage_latency_s",
            "Seconds per stage",
            boundaries=LATENCY_BOUNDARIES,
            tag_keys=("stage", "mode"),
        ),
    }


@cache
def qa_metrics() -> dict[str, Any]:
    from ray.util import metrics

    return {
        "llm_calls": metrics.Histogram(
            "hoprag_llm_calls_per_question",
            "LLM calls per question",
            boundaries=[1, 2, 4, 8, 12, 16, 24, 32, 48],
            tag_keys=("mode",),
        ),
        "tokens": metrics.Counter("hoprag_llm_tokens_total", "LLM tokens", tag_keys=("mode", "kind")),
    }


@cache
def retriever_metrics() -> dict[str, Any]:
    from ray.util import metrics

    return {
        "batch_size": metrics.Histogram(
            "hoprag_retriever_batch_size", "Queries per retriever forward", boundaries=[1, 2, 4, 8, 16, 32]
        ),
    }


def process_rss_bytes() -> int:
    """Resident memory of this replica's process (what ``/v1/indexes`` reports per index)."""
    import psutil

    return int(psutil.Process().memory_info().rss)
