"""Shared fixtures: real embedded models (loaded once per session) and a local Ray cluster."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# Tests never touch the network: the packaged models are complete.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


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

    ray.init(num_cpus=6, object_store_memory=256 * 1024**2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
