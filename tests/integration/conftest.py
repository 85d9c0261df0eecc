"""Integration fixtures: a rule-based LLM served over real HTTP, reached by Ray Data actors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hoprag.llm.factory import LLMBackendConfig
from hoprag.llm.openai_compat import OpenAICompatibleConfig
from hoprag.llm.openai_server import OpenAIProtocolServer
from hoprag.ray_runtime import RayConfig
from indexing.config import ExtractionConfig, IndexConfig
from synthetic import SyntheticConfig, write_benchmark
from tests.support.scripted_llm import RuleBasedLLM


@pytest.fixture(scope="module")
def rule_llm() -> RuleBasedLLM:
    return RuleBasedLLM(slow_s=3.0)


@pytest.fixture(scope="module")
def rule_server(rule_llm: RuleBasedLLM) -> Iterator[OpenAIProtocolServer]:
    with OpenAIProtocolServer(rule_llm, model_name="rule", max_concurrent_generations=8) as server:
        yield server


def http_index_config(base_url: str, gcs_address: str, batch_size: int = 4, **openai: object) -> IndexConfig:
    """Index config whose LLM is the loopback OpenAI-protocol server."""
    params: dict[str, object] = {
        "base_url": base_url,
        "model": "rule",
        "prompt_style": "completion",
        "timeout_s": 10.0,
        "max_retries": 1,
    }
    params.update(openai)
    return IndexConfig(
        llm=LLMBackendConfig(backend="openai", openai=OpenAICompatibleConfig.model_validate(params)),
        extraction=ExtractionConfig(batch_size=batch_size, num_cpus=0.5),
        ray=RayConfig(address=gcs_address),
    )


@pytest.fixture(scope="session")
def synthetic_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 40-document synthetic benchmark (all domains) in the GFM-RAG raw layout."""
    out = tmp_path_factory.mktemp("synthetic")
    write_benchmark(
        SyntheticConfig(seed=3, num_documents=40, num_train_questions=10, num_test_questions=10), out
    )
    return out


@pytest.fixture(scope="session")
def chromium() -> str:
    """Headless Chromium for the playground's browser tests (installed when missing, if it can be)."""
    from tests.support.browser import ensure_chromium

    path, why = ensure_chromium()
    if path is None:
        pytest.skip(f"no browser for the playground test: {why}")
    return path


@pytest.fixture
def dead_recorded_head() -> Iterator[dict[str, str]]:
    """The environment of a machine whose last `ray start` head died without `ray stop`."""
    from tests.support.local_ray import dead_head_environment

    with dead_head_environment() as env:
        yield env
