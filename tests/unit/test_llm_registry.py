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
    base = LLMBackendConfig.model_validate({"embedded": {"adapter": None, "dtype": "bfloat16"}})
    assert expected_model_id(base) == "embedded:gemma-3-270m-q4_k_m@bfloat16"
    dtype = LLMBackendConfig().embedded.compute_dtype  # "auto": this machine's CPU decides
    assert expected_model_id(LLMBackendConfig()).startswith(f"embedded:gemma-3-270m-q4_k_m@{dtype}+adapter:")
    vllm = LLMBackendConfig.model_validate({"backend": "vllm", "vllm": {"model": "org/m"}})
    assert expected_model_id(vllm) == "vllm:org/m"


@pytest.mark.parametrize(("native_bf16", "expected"), [(True, "bfloat16"), (False, "float32")])
def test_auto_dtype_is_bf16_only_on_cpus_that_compute_it_natively(
    monkeypatch: pytest.MonkeyPatch, native_bf16: bool, expected: str
) -> None:
    """Without AVX512-BF16 / AMX, bf16 answer prompts took 3.9x as long as fp32 (docs/bench-models.md);
    the model id (the extraction-cache key) names the dtype the model really runs in."""
    import hoprag.llm.embedded as embedded

    monkeypatch.setattr(embedded, "cpu_has_native_bf16", lambda: native_bf16)
    auto = LLMBackendConfig.model_validate({"embedded": {"adapter": None}})
    assert auto.embedded.dtype == "auto" and auto.embedded.compute_dtype == expected
    assert expected_model_id(auto) == f"embedded:gemma-3-270m-q4_k_m@{expected}"
    for pinned in ("bfloat16", "float32"):  # a set dtype is kept whatever the CPU
        config = LLMBackendConfig.model_validate({"embedded": {"adapter": None, "dtype": pinned}})
        assert config.embedded.compute_dtype == pinned


def test_the_cpu_check_reads_this_machines_capabilities() -> None:
    import torch

    from hoprag.machine import cpu_has_native_bf16

    capabilities = torch.cpu.get_capabilities()
    assert cpu_has_native_bf16() == bool(capabilities.get("avx512_bf16") or capabilities.get("amx_tile"))
