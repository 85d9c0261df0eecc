"""The llama.cpp backend's settings without loading a model: the recipe, the model id (a cache key
known before loading), the missing-package error, and the threads every model runner takes."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from hoprag.deps import MissingExtraError, require_llamacpp
from hoprag.llm.factory import LLMBackendConfig, expected_model_id
from hoprag.threads import runner_threads, usable_cpus, wait_passively

RECIPE = Path(__file__).resolve().parents[2] / "indexing" / "configs" / "llamacpp-cpu.yaml"


def test_the_llamacpp_recipe_validates_and_opens_with_its_command() -> None:
    from hoprag.config import load_config
    from indexing.config import IndexConfig

    config = load_config(IndexConfig, RECIPE)
    assert config.llm.backend == "llamacpp" and config.llm.llamacpp.model == "gemma-3-270m"
    command = shlex.split(RECIPE.read_text().splitlines()[0].lstrip("# "))
    assert (
        command[:2] == ["hoprag", "index"]
        and command[command.index("--config") + 1] == "indexing/configs/llamacpp-cpu.yaml"
    )


def test_the_model_id_is_known_before_loading_and_differs_per_model() -> None:
    ids = {
        model: expected_model_id(
            LLMBackendConfig.model_validate({"backend": "llamacpp", "llamacpp": {"model": model}})
        )
        for model in ("gemma-3-270m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    }
    assert ids["qwen2.5-coder-1.5b"] == "llamacpp:qwen2.5-coder-1.5b@cc324af070c2"
    assert len(set(ids.values())) == 3 and all(i.startswith("llamacpp:") for i in ids.values())
    # the same GGUF through transformers is another engine: caches never mix the two
    assert expected_model_id(LLMBackendConfig()) != ids["gemma-3-270m"]


def test_unknown_settings_are_refused() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="threads"):
        LLMBackendConfig.model_validate({"backend": "llamacpp", "llamacpp": {"threads": 2}})


def test_a_missing_llamacpp_names_the_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import hoprag.deps

    monkeypatch.setattr(hoprag.deps, "is_llamacpp_available", lambda: False)
    with pytest.raises(
        MissingExtraError, match=r"llm.backend=llamacpp needs .*pip install 'llama-cpp-python"
    ):
        require_llamacpp("llm.backend=llamacpp")


def test_a_runner_takes_the_launchers_thread_count_never_more_than_its_cpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert runner_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "4096")
    assert runner_threads() == usable_cpus()
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert runner_threads() == usable_cpus()


def test_idle_openmp_threads_wait_passively_unless_the_user_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    wait_passively()
    import os

    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    wait_passively()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_each_indexing_actor_gets_its_share_of_the_cores() -> None:
    from indexing.config import IndexConfig
    from indexing.pipeline import _actor_llm_config

    config = IndexConfig.model_validate({"llm": {"backend": "llamacpp"}, "extraction": {"concurrency": 2}})
    assert _actor_llm_config(config).llamacpp.n_threads == max(1, usable_cpus() // 2)
    pinned = IndexConfig.model_validate({"llm": {"backend": "llamacpp", "llamacpp": {"n_threads": 3}}})
    assert _actor_llm_config(pinned).llamacpp.n_threads == 3


def test_questions_are_answered_by_the_15b_unless_configured_and_indexing_keeps_the_student() -> None:
    """The measured defaults (docs/llm-engines.md): ask / serve / eval answer with Qwen2.5-Coder
    1.5B on llama.cpp, whose part packages the default install brings; indexing keeps the embedded
    student, the faster extractor."""
    from evaluation.config import EvalConfig
    from hoprag.llm.gguf_models import KNOWN_MODELS, QWEN_15B, part_files
    from hoprag.qa.config import QASettings
    from indexing.config import IndexConfig
    from serving.settings import QAAppSettings

    answering = [
        QASettings().llm,
        QAAppSettings(index="x").llm,
        EvalConfig.model_validate(
            {
                "benchmarks": [{"name": "b", "index": "x"}],
                "systems": [{"name": "d", "kind": "retrieval", "retriever": "dense"}],
                "out": "o",
            }
        ).llm,
    ]
    for llm in answering:
        assert (llm.backend, llm.llamacpp.model) == ("llamacpp", QWEN_15B)
        assert llm.llamacpp.adapter_dirs == ()  # the packaged student fits the 270M only
    assert len(part_files(KNOWN_MODELS[QWEN_15B])) == 22  # installed: no download at run time
    assert IndexConfig().llm.backend == "embedded"
    overridden = QASettings.model_validate({"llm": {"backend": "embedded"}})
    assert overridden.llm.backend == "embedded"
