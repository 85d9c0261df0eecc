"""The vLLM backend: pure parts on CPU (fake vLLM objects), real generation only on a GPU with vLLM."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import ValidationError

from hoprag.deps import MissingExtraError, is_cuda_available, is_vllm_available, require_vllm
from hoprag.extraction.prompts import openie_prompt
from hoprag.llm import vllm_backend
from hoprag.llm.base import LLM, ChatMessage, GenerationParams, PromptStyle, render_chat_as_completion
from hoprag.llm.vllm_backend import (
    ERROR_COLUMN,
    MAX_TOKENS_COLUMN,
    OPENIE_OUTPUT_COLUMNS,
    STOP_COLUMN,
    VLLMConfig,
    VLLMEngineLLM,
    build_openie_processor,
    build_ray_data_processor,
    completion_from_vllm_output,
    openie_finalize_row,
    openie_postprocess_row,
    openie_preprocess_row,
    ray_processor_config_kwargs,
    to_sampling_params,
)

pytestmark = pytest.mark.timeout(60)

PASSAGE = "Ithva Ulmar is a painter. Ithva Ulmar was born in Quifen."


# ---------------------------------------------------------------------------------------------
# Fakes shaped like vLLM's RequestOutput / CompletionOutput
# ---------------------------------------------------------------------------------------------


@dataclass
class FakeSeq:
    text: str
    token_ids: list[int]
    finish_reason: str | None = "stop"
    stop_reason: int | str | None = None


@dataclass
class FakeOutput:
    prompt_token_ids: list[int] | None
    outputs: list[FakeSeq] = field(default_factory=list)


def fake_output(text: str, prompt_len: int = 5, gen_len: int = 3, reason: str | None = "stop") -> FakeOutput:
    return FakeOutput(list(range(prompt_len)), [FakeSeq(text, list(range(gen_len)), reason)])


# ---------------------------------------------------------------------------------------------
# deps
# ---------------------------------------------------------------------------------------------


def test_require_vllm_names_the_extra_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert not is_vllm_available()
    with pytest.raises(MissingExtraError, match=r"pip install 'hoprag\[vllm\]'") as info:
        require_vllm("Batch OpenIE")
    assert str(info.value).startswith("Batch OpenIE needs vLLM")
    assert isinstance(info.value, ImportError)


def test_require_vllm_passes_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    assert is_vllm_available()
    require_vllm("anything")


def test_broken_vllm_install_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str) -> None:
        raise ValueError("vllm.__spec__ is None")

    monkeypatch.setattr(importlib.util, "find_spec", broken)
    assert not is_vllm_available()


@pytest.mark.skipif(is_vllm_available(), reason="vLLM is installed here")
def test_engine_constructor_raises_missing_extra_on_this_machine() -> None:
    with pytest.raises(MissingExtraError, match=r"hoprag\[vllm\]"):
        VLLMEngineLLM(VLLMConfig(model="some/model"))


@pytest.mark.skipif(is_vllm_available(), reason="vLLM is installed here")
def test_ray_processor_builders_raise_missing_extra_on_this_machine() -> None:
    config = VLLMConfig(model="some/model")
    with pytest.raises(MissingExtraError, match=r"hoprag\[vllm\]"):
        build_ray_data_processor(config, dict, dict)
    with pytest.raises(MissingExtraError, match=r"hoprag\[vllm\]"):
        build_openie_processor(config)


# ---------------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------------


def test_config_defaults_and_engine_args() -> None:
    c = VLLMConfig(model="Qwen/Qwen2.5-0.5B-Instruct", engine_kwargs={"enable_prefix_caching": True})
    assert c.prompt_style == "chat"
    assert c.engine_args() == {
        "dtype": "auto",
        "tensor_parallel_size": 1,
        "max_model_len": 4096,
        "gpu_memory_utilization": 0.9,
        "max_num_seqs": 256,
        "trust_remote_code": False,
        "enable_prefix_caching": True,
    }


@pytest.mark.parametrize(
    "bad",
    [
        {"model": ""},
        {"gpu_memory_utilization": 0.0},
        {"gpu_memory_utilization": 1.5},
        {"tensor_parallel_size": 0},
        {"max_num_seqs": 0},
        {"batch_size": 0},
        {"concurrency": 0},
        {"num_gpus_per_worker": 0},
        {"num_gpus_per_worker": 2},
        {"dtype": "int3"},
        {"prompt_style": "instruct"},
        {"unknown_field": 1},
        {"engine_kwargs": {"dtype": "half"}},
        {"engine_kwargs": {"model": "other"}},
        # two replicas on one GPU cannot each claim 90% of it
        {"num_gpus_per_worker": 0.5, "gpu_memory_utilization": 0.9},
    ],
)
def test_config_rejects(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        VLLMConfig(**{"model": "m", **bad})


def test_fractional_gpu_with_matching_memory_share_is_fine() -> None:
    c = VLLMConfig(model="m", num_gpus_per_worker=0.5, gpu_memory_utilization=0.45)
    assert ray_processor_config_kwargs(c)["placement_group_config"] == {
        "bundle_per_worker": {"CPU": 1, "GPU": 0.5},
        "strategy": "PACK",
    }


# ---------------------------------------------------------------------------------------------
# Sampling params and output conversion
# ---------------------------------------------------------------------------------------------


def test_to_sampling_params() -> None:
    sp = to_sampling_params(GenerationParams(max_new_tokens=17, temperature=0.3, stop=("\n\n", "", "X:")))
    assert sp == {"n": 1, "max_tokens": 17, "temperature": 0.3, "stop": ["\n\n", "X:"]}
    assert to_sampling_params(GenerationParams())["stop"] == []


def test_completion_from_output_basic() -> None:
    c = completion_from_vllm_output(fake_output("(A | is | B)", prompt_len=7, gen_len=4), ())
    assert c.ok
    assert (c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason) == ("(A | is | B)", 7, 4, "stop")
    assert c.metadata["server_finish_reason"] == "stop"


def test_completion_from_output_truncates_at_stop() -> None:
    c = completion_from_vllm_output(fake_output("(A | is | B)\n\nPassage: more", reason="length"), ("\n\n",))
    assert c.text == "(A | is | B)"
    # the budget ran out only after the answer was complete: that is a stop, not a truncation
    assert c.finish_reason == "stop"


def test_completion_from_output_length_and_stop_reason() -> None:
    out = fake_output('{"triples": [["A", "is"', reason="length")
    out.outputs[0].stop_reason = None
    c = completion_from_vllm_output(out, ("\n\n",))
    assert c.finish_reason == "length"
    assert "stop_reason" not in c.metadata
    out = fake_output("x", reason="stop")
    out.outputs[0].stop_reason = "\n\n"
    assert completion_from_vllm_output(out, ()).metadata["stop_reason"] == "\n\n"


def test_completion_from_output_abort_and_empty() -> None:
    aborted = completion_from_vllm_output(fake_output("partial", reason="abort"), ())
    assert not aborted.ok and aborted.error == "aborted" and aborted.finish_reason == "error"
    empty = completion_from_vllm_output(FakeOutput(None, []), ())
    assert empty.error == "no_output" and empty.prompt_tokens == 0


# ---------------------------------------------------------------------------------------------
# VLLMEngineLLM with a fake `vllm` module (order restoring, chat vs text, bisection)
# ---------------------------------------------------------------------------------------------


class FakeEngine:
    """Answers ``gen:<prompt>`` / ``chat:<last user message>``; rejects prompts containing 'TOO LONG'."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.calls: list[tuple[str, int]] = []
        self.seen: list[Any] = []
        self.fail_with: Exception | None = None

    def _check(self, kind: str, n: int, texts: Sequence[str]) -> None:
        self.calls.append((kind, n))
        if self.fail_with is not None:
            raise self.fail_with
        if any("TOO LONG" in t for t in texts):
            raise ValueError("The decoder prompt (length 9999) is longer than the maximum model length")

    def generate(self, prompts: list[str], sampling: Any, use_tqdm: bool = True) -> list[FakeOutput]:
        assert isinstance(prompts, list) and not use_tqdm
        self._check("generate", len(prompts), prompts)
        self.seen.extend(prompts)
        return [fake_output(f"gen:{p}\n\nPassage:", gen_len=sampling.kwargs["max_tokens"]) for p in prompts]

    def chat(self, convs: list[list[ChatMessage]], sampling: Any, use_tqdm: bool = True) -> list[FakeOutput]:
        assert not use_tqdm
        self._check("chat", len(convs), [c[-1]["content"] for c in convs])
        return [fake_output(f"chat:{c[-1]['content']}", reason="length") for c in convs]


class FakeSamplingParams:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    mod = types.ModuleType("vllm")
    mod.LLM = FakeEngine  # type: ignore[attr-defined]
    mod.SamplingParams = FakeSamplingParams  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", mod)
    monkeypatch.setattr(vllm_backend, "require_vllm", lambda feature: None)
    return mod


def test_engine_llm_builds_vllm_with_config(fake_vllm: types.ModuleType) -> None:
    cfg = VLLMConfig(model="org/m", dtype="bfloat16", max_model_len=2048, engine_kwargs={"seed": 1})
    llm = VLLMEngineLLM(cfg)
    assert isinstance(llm, LLM)
    assert llm.model_id == "vllm:org/m" and llm.prompt_style == "chat"
    assert llm._llm.kwargs == {"model": "org/m", **cfg.engine_args()}
    assert llm.generate([], GenerationParams()) == []


def test_engine_llm_mixed_batch_keeps_order(fake_vllm: types.ModuleType) -> None:
    llm = VLLMEngineLLM(VLLMConfig(model="m"))
    chat: list[ChatMessage] = [{"role": "user", "content": "hi"}]
    out = llm.generate(["a", chat, "b"], GenerationParams(max_new_tokens=4, stop=("\n\n",)))
    assert [c.text for c in out] == ["gen:a", "chat:hi", "gen:b"]
    assert [c.finish_reason for c in out] == ["stop", "length", "stop"]
    assert out[0].completion_tokens == 4 and out[0].prompt_tokens == 5
    assert llm._llm.calls == [("generate", 2), ("chat", 1)]


def test_engine_llm_completion_style_flattens_chat(fake_vllm: types.ModuleType) -> None:
    llm = VLLMEngineLLM(VLLMConfig(model="m", prompt_style="completion"))
    chat: list[ChatMessage] = [{"role": "user", "content": "hi"}]
    out = llm.generate([chat], GenerationParams(stop=("\n\n",)))
    assert out[0].ok
    assert llm._llm.seen == [render_chat_as_completion(chat)]
    assert llm._llm.calls == [("generate", 1)]


def test_engine_llm_isolates_rejected_prompts(fake_vllm: types.ModuleType) -> None:
    llm = VLLMEngineLLM(VLLMConfig(model="m"))
    prompts = [f"p{i}" for i in range(8)]
    prompts[5] = "TOO LONG"
    out = llm.generate(prompts, GenerationParams(stop=("\n\n",)))
    assert [c.ok for c in out] == [i != 5 for i in range(8)]
    assert out[5].error == "prompt_rejected" and "maximum model length" in str(out[5].metadata["detail"])
    assert out[6].text == "gen:p6"
    # bisection, not one call per prompt: 8 -> 4+4 -> 2+2 -> 1+1
    assert len(llm._llm.calls) == 7


def test_engine_llm_engine_failure_is_per_prompt(fake_vllm: types.ModuleType) -> None:
    llm = VLLMEngineLLM(VLLMConfig(model="m"))
    llm._llm.fail_with = RuntimeError("CUDA out of memory")
    out = llm.generate(["a", "b", [{"role": "user", "content": "c"}]], GenerationParams())
    assert [c.error for c in out] == ["engine_error"] * 3
    assert "CUDA out of memory" in str(out[0].metadata["detail"])
    assert len(llm._llm.calls) == 2  # no bisection for engine failures


def test_engine_llm_rejects_bad_prompt_type(fake_vllm: types.ModuleType) -> None:
    llm = VLLMEngineLLM(VLLMConfig(model="m"))
    with pytest.raises(TypeError):
        llm.generate([42], GenerationParams())  # type: ignore[list-item]


# ---------------------------------------------------------------------------------------------
# Ray Data rows
# ---------------------------------------------------------------------------------------------

DOC = {"doc_id": "d1", "title": "Ithva Ulmar", "text": PASSAGE}


def test_preprocess_completion_row() -> None:
    row = openie_preprocess_row(DOC, "completion")
    spec = openie_prompt(PASSAGE, "completion")
    assert row["prompt"] == spec.prompt and "messages" not in row
    assert row["sampling_params"] == to_sampling_params(spec.params)
    assert json.loads(row[STOP_COLUMN]) == list(spec.params.stop)
    assert row[MAX_TOKENS_COLUMN] == spec.params.max_new_tokens
    json.dumps(row)  # plain Python values only, so Arrow can hold them


def test_preprocess_chat_row() -> None:
    row = openie_preprocess_row(DOC, "chat", max_new_tokens=50)
    spec = openie_prompt(PASSAGE, "chat", max_new_tokens=50)
    assert row["messages"] == spec.prompt and "prompt" not in row
    assert row["messages"][-1] == {"role": "user", "content": f"Passage: {PASSAGE}"}
    assert row["sampling_params"] == {"n": 1, "max_tokens": 100, "temperature": 0.0}
    assert json.loads(row[STOP_COLUMN]) == []
    json.dumps(row)


def _engine_output(pre: dict[str, Any], text: str, n_in: int, n_gen: int) -> dict[str, Any]:
    """What reaches postprocess: input columns + preprocess columns + vLLM stage columns."""
    row = {**DOC, **pre, "generated_text": text, "num_input_tokens": n_in, "num_generated_tokens": n_gen}
    row.pop("sampling_params")  # the engine stage pops it
    return row


def test_postprocess_completion_row_truncates_at_stop() -> None:
    pre = openie_preprocess_row(DOC, "completion")
    out = openie_postprocess_row(_engine_output(pre, "(Ithva Ulmar | is a | painter)\n\nPassage: x", 300, 20))
    assert out == {
        "doc_id": "d1",
        "raw_output": "(Ithva Ulmar | is a | painter)",
        "prompt_tokens": 300,
        "completion_tokens": 20,
        "finish_reason": "stop",
        "error": None,
    }
    assert tuple(out) == OPENIE_OUTPUT_COLUMNS


def test_postprocess_chat_row_length() -> None:
    pre = openie_preprocess_row(DOC, "chat", max_new_tokens=8)
    out = openie_postprocess_row(_engine_output(pre, '{"named_entities": ["Ith', 120, 16))
    assert out["raw_output"] == '{"named_entities": ["Ith'
    assert out["finish_reason"] == "length" and out["error"] is None


def test_postprocess_error_row() -> None:
    row = {**DOC, "generated_text": "", "num_input_tokens": 0, ERROR_COLUMN: "ValueError: too long"}
    out = openie_postprocess_row(row)
    assert out["finish_reason"] == "error" and out["error"] == "vllm_error: ValueError: too long"
    assert out["raw_output"] == "" and out["completion_tokens"] == 0


def test_rows_through_rays_own_wrappers() -> None:
    """Run preprocess/postprocess through the wrappers Ray's Processor applies (no cluster needed)."""
    from ray.llm._internal.batch.stages.base import wrap_postprocess, wrap_preprocess

    data = "__data"
    pre = wrap_preprocess(lambda r: openie_preprocess_row(r, "completion"), data)
    post = wrap_postprocess(openie_postprocess_row, data, include_error_column=True)

    ok = pre(dict(DOC))[data]
    ok.pop("sampling_params")
    ok.update(generated_text="(A | b | C)", num_input_tokens=9, num_generated_tokens=3, **{ERROR_COLUMN: ""})
    bad = pre({**DOC, "doc_id": "d2"})[data]
    bad.update(generated_text="", num_input_tokens=0, num_generated_tokens=0, **{ERROR_COLUMN: "boom"})

    finals = [openie_finalize_row(post({data: r})) for r in (ok, bad)]
    assert [tuple(f) for f in finals] == [OPENIE_OUTPUT_COLUMNS] * 2
    assert finals[0]["raw_output"] == "(A | b | C)" and finals[0]["error"] is None
    assert finals[1]["doc_id"] == "d2" and finals[1]["error"] == "vllm_error: boom"


@pytest.mark.parametrize("style", ["chat", "completion"])
def test_ray_processor_config_kwargs_match_installed_ray(style: PromptStyle) -> None:
    from ray.data.llm import vLLMEngineProcessorConfig

    cfg = VLLMConfig(model="org/m", prompt_style=style, batch_size=16, concurrency=3, accelerator_type="A100")
    kwargs = ray_processor_config_kwargs(cfg)
    assert "placement_group_config" not in kwargs
    pc = vLLMEngineProcessorConfig(**kwargs)
    assert pc.model_source == "org/m" and pc.batch_size == 16 and pc.concurrency == 3
    assert pc.accelerator_type == "A100" and pc.should_continue_on_error
    assert pc.chat_template_stage is (style == "chat")
    assert pc.detokenize_stage is False
    assert pc.engine_kwargs["max_model_len"] == 4096 and pc.engine_kwargs["task_type"] == "generate"
    # Ray's validator adds task_type in place; our config must be unaffected
    assert "task_type" not in cfg.engine_args()


# ---------------------------------------------------------------------------------------------
# Real generation (GPU + vLLM + HOPRAG_TEST_VLLM_MODEL)
# ---------------------------------------------------------------------------------------------


# vLLM is checked first so that torch is only imported where vLLM is installed at all.
needs_vllm_and_gpu = pytest.mark.skipif(
    not is_vllm_available() or not is_cuda_available(), reason="needs vLLM and a CUDA GPU"
)


def _test_model() -> str:
    model = os.environ.get("HOPRAG_TEST_VLLM_MODEL")
    if not model:
        pytest.skip("set HOPRAG_TEST_VLLM_MODEL to a small model (hub id or local path)")
    return model


@pytest.mark.timeout(900)
@pytest.mark.gpu
@pytest.mark.vllm
@needs_vllm_and_gpu
def test_vllm_engine_really_generates() -> None:
    cfg = VLLMConfig(model=_test_model(), max_model_len=2048, gpu_memory_utilization=0.4, max_num_seqs=16)
    llm = VLLMEngineLLM(cfg)
    spec = openie_prompt(PASSAGE, "completion", max_new_tokens=48)
    prompts: list[Any] = [spec.prompt, "The capital of France is"]
    tokenizer = llm._llm.get_tokenizer()
    if getattr(tokenizer, "chat_template", None):
        prompts.append([{"role": "user", "content": "Say hello."}])
    out = llm.generate(prompts, spec.params)
    assert len(out) == len(prompts)
    for c in out:
        assert c.ok, c
        assert c.prompt_tokens > 0 and 0 < c.completion_tokens <= spec.params.max_new_tokens
        assert not any(s in c.text for s in spec.params.stop)
    too_long = "word " * (cfg.max_model_len + 100)
    mixed = llm.generate([too_long, "1, 2, 3,"], GenerationParams(max_new_tokens=4))
    assert mixed[0].error == "prompt_rejected" and mixed[1].ok


@pytest.mark.timeout(900)
@pytest.mark.gpu
@pytest.mark.vllm
@needs_vllm_and_gpu
def test_ray_data_openie_processor_really_generates() -> None:
    import ray

    cfg = VLLMConfig(
        model=_test_model(),
        prompt_style=os.environ.get("HOPRAG_TEST_VLLM_STYLE", "completion"),  # type: ignore[arg-type]
        max_model_len=2048,
        gpu_memory_utilization=0.4,
        batch_size=4,
    )
    docs = [{"doc_id": f"d{i}", "title": f"T{i}", "text": PASSAGE} for i in range(6)]
    try:
        run = build_openie_processor(cfg, max_new_tokens=32)
        rows = run(ray.data.from_items(docs)).take_all()
    finally:
        ray.shutdown()
    assert sorted(r["doc_id"] for r in rows) == [d["doc_id"] for d in docs]
    for r in rows:
        assert set(r) == set(OPENIE_OUTPUT_COLUMNS)
        assert r["error"] is None, r
        assert r["prompt_tokens"] > 0 and r["completion_tokens"] > 0
