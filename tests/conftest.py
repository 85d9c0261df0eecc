"""Shared fixtures: real embedded models (loaded once per session) and a local Ray cluster."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# Tests never touch the network: the packaged models are complete.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Ray Train in tests (read by the session cluster's processes and by hoprag subprocesses): no
# cloud-preemption watcher actor per run (a process start each; no test preempts a node), and the
# controller polls its workers every 0.5 s instead of 2 s, so a finished or killed worker is seen
# sooner. What a run does is unchanged.
os.environ.setdefault("RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", "0")
os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.5")
# Each pytest-xdist worker is one of N processes sharing the machine's cores, and so are the
# processes it starts (its Ray cluster's workers inherit this too): its torch (OpenMP) thread pool
# gets cores / N threads. Pools sized to every core oversubscribe them, and OpenMP threads spin at
# their barriers waiting for a descheduled sibling (the embedded-Gemma LoRA test beside a training
# loop: 172 s with 2 threads, 102 s with 1; docs/testing.md). An OMP_NUM_THREADS already set wins.
# Idle OpenMP threads sleep instead of spinning against the other worker (hoprag/threads.py).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
_XDIST_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _XDIST_WORKERS > 1:
    _cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, _cores // _XDIST_WORKERS)))


# The files that take minutes, slowest first (measured: docs/testing.md). `make test` runs the suite
# on two pytest-xdist workers, a file to a worker (--dist loadfile); handing out the longest files
# first keeps one worker from running a long file alone at the end. Files not named keep their order.
SLOWEST_FIRST = (
    "test_training.py",
    "test_serving.py",
    "test_distill.py",
    "test_cluster_submit.py",
    "test_embedded_models.py",
    "test_served_equals_evaluated.py",
    "test_evaluation.py",
    "test_serving_indexes.py",
    "test_index_pipeline.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's order kept


@pytest.fixture(scope="session")
def embedder():
    """The packaged all-MiniLM-L6-v2 (real weights, ~3 s to load)."""
    from hoprag.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """A local Ray cluster for the session; yields its GCS address so subprocesses can join it.

    More logical CPUs than the 2 physical ones, so Ray Data's LLM actor does not starve the
    read/write stages on small CI machines.
    """
    import ray

    from hoprag.ray_runtime import start_local_ray

    # hoprag's own way of starting a local cluster: never joins a recorded `ray start` head, and
    # leaves Ray's default ports to a user's head (test_cluster_submit starts one beside it).
    address = start_local_ray(num_cpus=6, object_store_memory_mb=256, log_to_driver=False)
    try:
        yield address
    finally:
        ray.shutdown()
