"""The LLM backend registry: one declaration per backend, read by config, factory and cache keys."""

from __future__ import annotations

import typing

import pytest

from hoprag.llm.factory import BACKENDS, LLMBackendConfig, build_llm, expected_model_id


def test_every_backend_is_selectable_and_has_its_config_section() -> None:
    selectable = typing.get_args(LLMBackendConfig.model_fields["backend"].annotation)
    assert set(selectable) == set(BACKENDS)
    for name, spec in BACKENDS.items():
        assert spec.name == name
        assert spec.config_type in typing.get_args(LLMBackendConfig.model_fields[name].annotation) or (
            LLMBackendConfig.model_fields[name].annotation is spec.config_type
        )


def test_a_missing_section_names_what_it_needs() -> None:
    with pytest.raises(ValueError, match=r"backend=openai needs a 'openai' section \(base_url, model"):
        LLMBackendConfig(backend="openai")
    with pytest.raises(ValueError, match=r"backend=vllm needs a 'vllm' section \(model"):
        LLMBackendConfig(backend="vllm")


def test_the_cache_key_is_the_model_id_the_built_backend_reports() -> None:
    config = LLMBackendConfig.model_validate(
        {"backend": "openai", "openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m-7b"}}
    )
    llm = build_llm(config)  # builds a client; no request is sent
    try:
        assert expected_model_id(config) == llm.model_id == "openai-compat:m-7b"
    finally:
        getattr(llm, "close", lambda: None)()
    base = LLMBackendConfig.model_validate({"embedded": {"adapter": None}})
    assert expected_model_id(base) == "embedded:gemma-3-270m-q4_k_m@bfloat16"
    assert expected_model_id(LLMBackendConfig()).startswith("embedded:gemma-3-270m-q4_k_m@bfloat16+adapter:")
    vllm = LLMBackendConfig.model_validate({"backend": "vllm", "vllm": {"model": "org/m"}})
    assert expected_model_id(vllm) == "vllm:org/m"
