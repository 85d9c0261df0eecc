"""The vLLM backend: pure parts on CPU (fake vLLM objects), real generation only on a GPU with vLLM."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from hoprag.deps import MissingExtraError, is_cuda_available, is_vllm_available, require_vllm
from hoprag.extraction.prompts import openie_prompt
from hoprag.llm import vllm_backend, vllm_ray_data, vllm_requests
from hoprag.llm.adapters import AdapterError, adapter_fingerprint, lora_rank
from hoprag.llm.base import (
    LLM,
    ChatMessage,
    GenerationParams,
    PromptStyle,
    render_chat_as_completion,
    uses_student_prompt,
)
from hoprag.llm.factory import LazyLLM, LLMBackendConfig, expected_model_id
from hoprag.llm.vllm_backend import VLLMEngineLLM
from hoprag.llm.vllm_config import (
    ERROR_COLUMN,
    MAX_TOKENS_COLUMN,
    OPENIE_OUTPUT_COLUMNS,
    STOP_COLUMN,
    VLLMConfig,
    vllm_model_id,
)
from hoprag.llm.vllm_ray_data import (
    build_openie_processor,
    build_ray_data_processor,
    chat_template_stage_enabled,
    lora_row_columns,
    openie_finalize_row,
    openie_postprocess_row,
    openie_preprocess_row,
    processor_input_columns,
    ray_processor_config_kwargs,
    with_lora_columns,
)
from hoprag.llm.vllm_requests import (
    check_adapter,
    completion_from_vllm_output,
    lora_requests_kwargs,
    student_base_mismatch,
    to_sampling_params,
    vllm_student_tasks,
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


def test_a_json_prompt_constrains_decoding_to_its_schema_unless_turned_off() -> None:
    from hoprag.extraction.prompts import OPENIE_JSON_SCHEMA

    params = GenerationParams(max_new_tokens=64, json_schema=OPENIE_JSON_SCHEMA)
    assert to_sampling_params(params)["structured_outputs"] == {"json": OPENIE_JSON_SCHEMA}
    assert "structured_outputs" not in to_sampling_params(params, structured_output=False)
    assert "structured_outputs" not in to_sampling_params(GenerationParams())  # a line-format prompt


class FakeStructuredOutputsParams:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


def test_the_engine_gets_vllm_structured_outputs_for_json_prompts(fake_vllm: types.ModuleType) -> None:
    from hoprag.extraction.prompts import OPENIE_JSON_SCHEMA
    from hoprag.llm.vllm_requests import engine_sampling_params

    fake_vllm.sampling_params = types.SimpleNamespace(StructuredOutputsParams=FakeStructuredOutputsParams)
    sampling = engine_sampling_params(fake_vllm, GenerationParams(json_schema=OPENIE_JSON_SCHEMA))
    structured = sampling.kwargs["structured_outputs"]
    assert isinstance(structured, FakeStructuredOutputsParams) and structured.kwargs == {
        "json": OPENIE_JSON_SCHEMA
    }
    assert "structured_outputs" not in engine_sampling_params(fake_vllm, GenerationParams()).kwargs
    assert VLLMConfig(model="m").structured_output is True


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
        self.lora_requests: list[Any] = []

    def _check(self, kind: str, n: int, texts: Sequence[str]) -> None:
        self.calls.append((kind, n))
        if self.fail_with is not None:
            raise self.fail_with
        if any("TOO LONG" in t for t in texts):
            raise ValueError("The decoder prompt (length 9999) is longer than the maximum model length")

    def generate(
        self, prompts: list[str], sampling: Any, use_tqdm: bool = True, lora_request: Any = None
    ) -> list[FakeOutput]:
        assert isinstance(prompts, list) and not use_tqdm
        self.lora_requests.append(lora_request)
        self._check("generate", len(prompts), prompts)
        self.seen.extend(prompts)
        return [fake_output(f"gen:{p}\n\nPassage:", gen_len=sampling.kwargs["max_tokens"]) for p in prompts]

    def chat(
        self, convs: list[list[ChatMessage]], sampling: Any, use_tqdm: bool = True, lora_request: Any = None
    ) -> list[FakeOutput]:
        assert not use_tqdm
        self.lora_requests.append(lora_request)
        self._check("chat", len(convs), [c[-1]["content"] for c in convs])
        return [fake_output(f"chat:{c[-1]['content']}", reason="length") for c in convs]


class FakeSamplingParams:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


@dataclass(frozen=True)
class FakeLoRARequest:
    lora_name: str
    lora_int_id: int
    lora_path: str


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    mod = types.ModuleType("vllm")
    mod.LLM = FakeEngine  # type: ignore[attr-defined]
    mod.SamplingParams = FakeSamplingParams  # type: ignore[attr-defined]
    lora = types.ModuleType("vllm.lora")
    request = types.ModuleType("vllm.lora.request")
    request.LoRARequest = FakeLoRARequest  # type: ignore[attr-defined]
    lora.request = request  # type: ignore[attr-defined]
    mod.lora = lora  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", mod)
    monkeypatch.setitem(sys.modules, "vllm.lora", lora)
    monkeypatch.setitem(sys.modules, "vllm.lora.request", request)
    monkeypatch.setattr(vllm_backend, "require_vllm", lambda feature: None)
    monkeypatch.setattr(vllm_ray_data, "require_vllm", lambda feature: None)
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
    # the JSON prompt's schema rides along: Ray's engine stage turns it into vLLM structured outputs
    structured = {"structured_outputs": {"json": spec.params.json_schema}}
    assert spec.params.json_schema and row["sampling_params"] == {
        "n": 1,
        "max_tokens": 100,
        "temperature": 0.0,
        **structured,
    }
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
# LoRA adapters (a `hoprag distill` student served by vLLM)
# ---------------------------------------------------------------------------------------------


def _adapter(
    root: Path,
    r: int = 8,
    tasks: list[str] | None = None,
    base_model: str | None = None,
    weights: bytes = b"w1",
    **peft: Any,
) -> Path:
    """A tiny PEFT-shaped adapter directory (hand-written config, placeholder weights)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": r, **peft}))
    (root / "adapter_model.safetensors").write_bytes(weights)
    if tasks is not None or base_model is not None:
        meta: dict[str, Any] = {"tasks": tasks or []}
        if base_model is not None:
            meta["base_model"] = base_model
        (root / "student.json").write_text(json.dumps(meta))
    return root


def test_adapter_enables_lora_in_the_engine_args(tmp_path: Path) -> None:
    adapter = _adapter(tmp_path / "a")
    plain = VLLMConfig(model="m")
    assert "enable_lora" not in plain.engine_args() and "max_lora_rank" not in plain.engine_args()
    assert plain.adapter is None and plain.max_lora_rank == 16
    args = VLLMConfig(model="m", adapter=str(adapter), max_lora_rank=32).engine_args()
    assert args["enable_lora"] is True and args["max_lora_rank"] == 32 and args["max_loras"] == 1
    lora_keys = {"enable_lora", "max_lora_rank", "max_loras"}
    assert {k: v for k, v in args.items() if k not in lora_keys} == plain.engine_args()


@pytest.mark.parametrize(
    "bad",
    [
        {"max_lora_rank": 0},
        {"engine_kwargs": {"max_lora_rank": 8}},
        {"engine_kwargs": {"enable_lora": True}},
        {"engine_kwargs": {"max_loras": 2}},
        {"adapter": []},
        {"adapter": ["a", "a"]},
    ],
)
def test_config_rejects_lora_settings_outside_their_fields(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        VLLMConfig(**{"model": "m", **bad})


def test_adapter_rank_above_max_lora_rank_is_a_clear_error(tmp_path: Path) -> None:
    adapter = _adapter(tmp_path / "r32", r=32)
    config = VLLMConfig(model="m", adapter=str(adapter))  # validating the config reads no files
    with pytest.raises(AdapterError, match=r"llm\.vllm\.max_lora_rank=16 is below the LoRA rank 32") as info:
        check_adapter(config)
    assert "at least 32" in str(info.value)
    with pytest.raises(AdapterError, match="max_lora_rank"):
        ray_processor_config_kwargs(config)  # building the Ray processor checks it too
    with pytest.raises(AdapterError, match="max_lora_rank"):
        VLLMEngineLLM(config)  # before any vLLM import or GPU work
    check_adapter(VLLMConfig(model="m", adapter=str(adapter), max_lora_rank=32))
    check_adapter(VLLMConfig(model="m"))  # no adapter: nothing to check


def test_lora_rank_covers_per_module_ranks(tmp_path: Path) -> None:
    assert lora_rank(_adapter(tmp_path / "plain", r=4)) == 4
    patterned = _adapter(tmp_path / "pattern", r=8, rank_pattern={"q_proj": 64})
    assert lora_rank(patterned) == 64
    with pytest.raises(AdapterError, match="max_lora_rank=16 is below the LoRA rank 64"):
        check_adapter(VLLMConfig(model="m", adapter=str(patterned)))
    no_rank = tmp_path / "no-rank"
    _adapter(no_rank)
    (no_rank / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
    with pytest.raises(AdapterError, match="no LoRA rank"):
        lora_rank(no_rank)


def test_unusable_adapter_names_the_vllm_setting(tmp_path: Path) -> None:
    with pytest.raises(AdapterError, match=r"llm\.vllm\.adapter=.*no adapter_config\.json"):
        check_adapter(VLLMConfig(model="m", adapter=str(tmp_path / "missing")))
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "adapter_config.json").write_text(json.dumps({"r": 4}))
    with pytest.raises(AdapterError, match=r"llm\.vllm\.adapter=.*adapter_model\.safetensors is missing"):
        vllm_model_id(VLLMConfig(model="m", adapter=str(partial)))


def test_the_adapter_is_part_of_the_model_id_by_content(tmp_path: Path) -> None:
    adapter = _adapter(tmp_path / "a")
    config = VLLMConfig(model="org/m", adapter=str(adapter))
    with_adapter = vllm_model_id(config)
    assert with_adapter == f"vllm:org/m+adapter:{adapter_fingerprint(adapter)}"
    assert vllm_model_id(VLLMConfig(model="org/m")) == "vllm:org/m"
    llm_config = LLMBackendConfig.model_validate(
        {"backend": "vllm", "vllm": {"model": "org/m", "adapter": str(adapter)}}
    )
    assert expected_model_id(llm_config) == with_adapter
    (adapter / "adapter_model.safetensors").write_bytes(b"w2-retrained")  # new weights, new cache keys
    assert vllm_model_id(config) != with_adapter


def test_student_tasks_are_known_without_loading_the_model(tmp_path: Path) -> None:
    student = _adapter(tmp_path / "student", tasks=["openie", "ner", "answer"])
    config = VLLMConfig(model="m", adapter=str(student))
    assert vllm_student_tasks(config) == {"openie", "ner", "answer"}
    assert vllm_student_tasks(VLLMConfig(model="m")) == frozenset()
    assert vllm_student_tasks(VLLMConfig(model="m", adapter=str(_adapter(tmp_path / "peft")))) == frozenset()
    lazy = LazyLLM(LLMBackendConfig.model_validate({"backend": "vllm", "vllm": config.model_dump()}))
    assert lazy.student_tasks == {"openie", "ner", "answer"} and not lazy.loaded
    assert uses_student_prompt(lazy, "openie")
    # a bad adapter directory is reported under the vLLM backend's own setting
    missing = {"backend": "vllm", "vllm": {"model": "m", "adapter": str(tmp_path / "nowhere")}}
    with pytest.raises(AdapterError, match=r"^llm\.vllm\.adapter="):
        _ = LazyLLM(LLMBackendConfig.model_validate(missing)).student_tasks


@pytest.mark.parametrize(
    ("model", "base_model", "warns"),
    [
        ("google/gemma-3-270m", "packaged:gemma-3-270m", False),
        ("/models/gemma-3-270m/", "packaged:gemma-3-270m", False),
        ("/cache/hub/models--google--gemma-3-270m/snapshots/0123abcd", "packaged:gemma-3-270m", False),
        ("/ckpt/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct", False),
        ("Qwen/Qwen3-8B", "packaged:gemma-3-270m", True),
        ("google/gemma-3-4b-it", "packaged:gemma-3-270m", True),
        ("Qwen/Qwen3-8B", None, False),  # an adapter made elsewhere says nothing
    ],
)
def test_student_base_mismatch(model: str, base_model: str | None, warns: bool) -> None:
    warning = student_base_mismatch(model, base_model)
    assert (warning is not None) is warns
    if warning:
        assert repr(base_model) in warning and repr(model) in warning


def test_check_adapter_warns_about_another_base_model_but_does_not_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warnings: list[str] = []
    monkeypatch.setattr(
        vllm_requests.logger, "warning", lambda msg, *a: warnings.append(msg % a if a else msg)
    )
    student = _adapter(tmp_path / "s", tasks=["openie"], base_model="packaged:gemma-3-270m")
    check_adapter(VLLMConfig(model="google/gemma-3-270m", adapter=str(student)))
    assert warnings == []
    check_adapter(VLLMConfig(model="Qwen/Qwen3-8B", adapter=str(student)))
    assert len(warnings) == 1 and "packaged:gemma-3-270m" in warnings[0]


def test_lora_requests_kwargs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = _adapter(tmp_path / "a")
    monkeypatch.chdir(tmp_path)
    kwargs = lora_requests_kwargs(VLLMConfig(model="m", adapter="a"))  # relative: resolved now
    assert kwargs == [
        {
            "lora_name": f"adapter-{adapter_fingerprint(adapter)}",
            "lora_int_id": 1,
            "lora_path": str(adapter.resolve()),
        }
    ]
    assert lora_requests_kwargs(VLLMConfig(model="m")) == []


def test_engine_llm_serves_the_students_tasks_through_the_adapter(
    fake_vllm: types.ModuleType, tmp_path: Path
) -> None:
    student = _adapter(tmp_path / "s", r=8, tasks=["openie", "ner"])
    cfg = VLLMConfig(model="org/m", adapter=str(student), max_lora_rank=8)
    llm = VLLMEngineLLM(cfg)
    assert llm._llm.kwargs == {"model": "org/m", **cfg.engine_args()}
    assert llm._llm.kwargs["enable_lora"] is True and llm._llm.kwargs["max_lora_rank"] == 8
    assert llm.model_id == f"vllm:org/m+adapter:{adapter_fingerprint(student)}"
    assert llm.student_tasks == {"openie", "ner"} and uses_student_prompt(llm, "ner")
    out = llm.generate(["a", [{"role": "user", "content": "hi"}]], GenerationParams(stop=("\n\n",)))
    assert [c.text for c in out] == ["gen:a", "chat:hi"]
    (expected,) = [FakeLoRARequest(**kwargs) for kwargs in lora_requests_kwargs(cfg)]
    assert llm._llm.lora_requests == [expected, expected]  # generate and chat, no task named
    llm._llm.lora_requests.clear()
    llm.generate(["a"], GenerationParams(task="ner"))
    llm.generate(["a", [{"role": "user", "content": "hi"}]], GenerationParams(task="plan"))
    assert llm._llm.lora_requests == [expected, None, None]  # plan is not a student task: base model
    assert "adapter=" in repr(llm)


def test_engine_llm_serves_each_task_through_the_student_trained_on_it(
    fake_vllm: types.ModuleType, tmp_path: Path
) -> None:
    shipped = _adapter(tmp_path / "shipped", r=8, tasks=["openie", "ner", "answer"], weights=b"w-shipped")
    planner = _adapter(tmp_path / "planner", r=16, tasks=["plan", "update"], weights=b"w-planner")
    cfg = VLLMConfig(model="org/m", adapter=[str(shipped), str(planner)])
    llm = VLLMEngineLLM(cfg)
    assert llm._llm.kwargs["max_loras"] == 2 and llm._llm.kwargs["max_lora_rank"] == 16
    assert llm.model_id == (
        f"vllm:org/m+adapter:{adapter_fingerprint(shipped)}+adapter:{adapter_fingerprint(planner)}"
    )
    assert llm.student_tasks == {"openie", "ner", "answer", "plan", "update"}
    # the weights a task runs on: what extraction and NER caches key on
    assert llm.task_model_id("openie") == vllm_model_id(VLLMConfig(model="org/m", adapter=str(shipped)))
    assert llm.task_model_id("update") == f"vllm:org/m+adapter:{adapter_fingerprint(planner)}"
    assert llm.task_model_id("judge") == "vllm:org/m"
    vllm_llm = LLMBackendConfig.model_validate({"backend": "vllm", "vllm": cfg.model_dump()})
    assert expected_model_id(vllm_llm, "ner") == llm.task_model_id("ner")
    first, second = (FakeLoRARequest(**kwargs) for kwargs in lora_requests_kwargs(cfg))
    assert (first.lora_int_id, second.lora_int_id) == (1, 2) and first.lora_path == str(shipped.resolve())
    for task in ("openie", "plan", "answer", "update", "judge", None):
        llm.generate(["a"], GenerationParams(task=task))
    # judge: no student lists it, so the base weights; no task: the first adapter
    assert llm._llm.lora_requests == [first, second, first, second, None, first]


def test_a_list_of_students_that_cannot_be_routed_fails_before_the_engine_starts(
    fake_vllm: types.ModuleType, tmp_path: Path
) -> None:
    a = str(_adapter(tmp_path / "a", tasks=["openie", "answer"]))
    b = str(_adapter(tmp_path / "b", tasks=["answer", "plan"]))
    plain = str(_adapter(tmp_path / "plain"))  # no student.json: no tasks to route by
    config = VLLMConfig(model="m", adapter=[a, plain])
    for call in (check_adapter, vllm_model_id, vllm_student_tasks, VLLMEngineLLM):
        with pytest.raises(AdapterError, match=r"^llm\.vllm\.adapter: .*lists no tasks"):
            call(config)
    # two students listing one task is routable: the later serves it
    assert vllm_student_tasks(VLLMConfig(model="m", adapter=[a, b])) == {"openie", "answer", "plan"}
    big = str(_adapter(tmp_path / "big", r=64, tasks=["plan"]))
    with pytest.raises(AdapterError, match=r"max_lora_rank=16 is below the LoRA rank 64 of .*big"):
        check_adapter(VLLMConfig(model="m", adapter=[a, big]))  # every adapter's rank is checked


def test_ray_rows_of_a_student_list_go_to_their_tasks_student(tmp_path: Path) -> None:
    openie = _adapter(tmp_path / "openie", tasks=["openie"])
    ner = _adapter(tmp_path / "ner", tasks=["ner"])
    config = VLLMConfig(model="org/m", adapter=[str(openie), str(ner)])
    assert lora_row_columns(config, "openie") == {"model": str(openie.resolve())}
    assert lora_row_columns(config, "ner") == {"model": str(ner.resolve())}
    assert lora_row_columns(config, "judge") == {"model": "org/m"}  # model_source: no LoRA request
    assert lora_row_columns(config) == {"model": str(openie.resolve())}  # no task: the first
    pre = with_lora_columns(config, lambda row: {"prompt": row["text"]}, default_task="openie")
    assert pre({"text": "x", "task": "ner"}) == {"prompt": "x", "model": str(ner.resolve())}
    assert pre({"text": "x"})["model"] == str(openie.resolve())  # the processor's own task
    # a student of one task: rows of other tasks get the base weights, as in-process
    only_ner = VLLMConfig(model="org/m", adapter=str(ner))
    assert with_lora_columns(only_ner, lambda row: {})({"task": "openie"}) == {"model": "org/m"}


def test_engine_llm_without_adapter_sends_no_lora_request(fake_vllm: types.ModuleType) -> None:
    llm = VLLMEngineLLM(VLLMConfig(model="m"))
    llm.generate(["a"], GenerationParams())
    assert llm._llm.lora_requests == [None] and llm.student_tasks == frozenset()
    assert "enable_lora" not in llm._llm.kwargs


def test_ray_rows_select_the_adapter_by_model_column(tmp_path: Path) -> None:
    adapter = _adapter(tmp_path / "a")
    config = VLLMConfig(model="org/m", adapter=str(adapter))
    assert lora_row_columns(config) == {"model": str(adapter.resolve())}
    assert lora_row_columns(VLLMConfig(model="org/m")) == {}

    def pre(row: dict[str, Any]) -> dict[str, Any]:
        return openie_preprocess_row(row, "completion")

    assert with_lora_columns(VLLMConfig(model="org/m"), pre) is pre
    row = with_lora_columns(config, pre)(dict(DOC))
    assert row["model"] == str(adapter.resolve()) != config.model  # != model_source: a LoRA request
    assert row["prompt"] == pre(dict(DOC))["prompt"]


def test_rows_with_the_adapter_through_rays_own_wrapper(tmp_path: Path) -> None:
    from ray.llm._internal.batch.stages.base import wrap_preprocess

    adapter = _adapter(tmp_path / "a", tasks=["openie"])
    config = VLLMConfig(model="org/m", adapter=str(adapter))
    pre = with_lora_columns(config, lambda r: openie_preprocess_row(r, "chat", student=True))
    row = wrap_preprocess(pre, "__data")(dict(DOC))["__data"]
    assert row["model"] == str(adapter.resolve()) and row["doc_id"] == "d1"
    assert row["prompt"] == openie_prompt(PASSAGE, "chat", student=True).prompt and "messages" not in row


@pytest.mark.parametrize("style", ["chat", "completion"])
def test_ray_processor_config_kwargs_with_adapter_match_installed_ray(
    style: PromptStyle, tmp_path: Path
) -> None:
    from ray.data.llm import vLLMEngineProcessorConfig

    adapter = _adapter(tmp_path / "a", r=16, tasks=["openie"])
    cfg = VLLMConfig(model="org/m", prompt_style=style, adapter=str(adapter))
    pc = vLLMEngineProcessorConfig(**ray_processor_config_kwargs(cfg))
    assert pc.engine_kwargs["enable_lora"] is True and pc.engine_kwargs["max_lora_rank"] == 16
    assert pc.dynamic_lora_loading_path is None  # the row's `model` is the adapter's local path
    assert pc.chat_template_stage is (style == "chat")
    plain = vLLMEngineProcessorConfig(**ray_processor_config_kwargs(cfg, chat_template=False))
    assert plain.chat_template_stage is False


def test_chat_template_stage_is_off_for_student_prompts(tmp_path: Path) -> None:
    student = str(_adapter(tmp_path / "s", tasks=["openie"]))
    chat = VLLMConfig(model="m", prompt_style="chat", adapter=student)
    assert not chat_template_stage_enabled(chat, ["openie"])
    assert not chat_template_stage_enabled(chat, ["openie", "ner"])  # one stage for both tasks
    assert chat_template_stage_enabled(chat, ["ner"])
    assert chat_template_stage_enabled(VLLMConfig(model="m"), ["openie"])
    assert not chat_template_stage_enabled(VLLMConfig(model="m", prompt_style="completion"), ["ner"])


def test_preprocess_row_uses_the_student_prompt() -> None:
    for style in ("chat", "completion"):
        row = openie_preprocess_row(DOC, style, max_new_tokens=64, student=True)  # type: ignore[arg-type]
        spec = openie_prompt(PASSAGE, style, max_new_tokens=64, student=True)  # type: ignore[arg-type]
        assert row["prompt"] == spec.prompt and "messages" not in row
        assert row["prompt"].count("Passage:") == 1  # no few-shot examples
        assert row["sampling_params"] == to_sampling_params(spec.params)
        assert json.loads(row[STOP_COLUMN]) == list(spec.params.stop)
        json.dumps(row)
    assert openie_preprocess_row(DOC, "completion")["prompt"].count("Passage:") > 1  # few-shot


def test_chat_prompts_are_flattened_without_the_chat_template_stage() -> None:
    spec = openie_prompt(PASSAGE, "chat")
    cols = processor_input_columns(spec, chat_template=False)
    assert cols["prompt"] == render_chat_as_completion(spec.prompt) and "messages" not in cols  # type: ignore[arg-type]
    assert processor_input_columns(spec)["messages"][-1]["content"] == f"Passage: {PASSAGE}"


def test_openie_processor_sends_the_student_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_build(config: VLLMConfig, preprocess: Any, postprocess: Any, **kwargs: Any) -> Any:
        seen.update(preprocess=preprocess, **kwargs)
        return lambda ds: ds

    monkeypatch.setattr(vllm_ray_data, "build_ray_data_processor", fake_build)
    student = str(_adapter(tmp_path / "s", tasks=["openie"]))
    build_openie_processor(VLLMConfig(model="m", adapter=student), max_new_tokens=40)
    assert seen["chat_template"] is False
    assert seen["preprocess"](dict(DOC))["prompt"] == openie_prompt(PASSAGE, "chat", 40, student=True).prompt
    ner_only = str(_adapter(tmp_path / "n", tasks=["ner"]))
    build_openie_processor(VLLMConfig(model="m", adapter=ner_only), max_new_tokens=40)
    assert seen["chat_template"] is True
    assert seen["preprocess"](dict(DOC))["messages"] == openie_prompt(PASSAGE, "chat", 40).prompt


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


@pytest.mark.timeout(900)
@pytest.mark.gpu
@pytest.mark.vllm
@needs_vllm_and_gpu
def test_vllm_engine_really_serves_a_lora_adapter(tmp_path: Path) -> None:
    """A freshly initialised LoRA (B = 0, so the base model's outputs) served through vLLM."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = _test_model()
    base = AutoModelForCausalLM.from_pretrained(model)
    peft_model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear"))
    adapter = tmp_path / "adapter"
    peft_model.save_pretrained(str(adapter))
    (adapter / "student.json").write_text(json.dumps({"base_model": model, "tasks": ["openie"]}))
    del peft_model, base
    cfg = VLLMConfig(
        model=model, max_model_len=2048, gpu_memory_utilization=0.4, max_num_seqs=16, adapter=str(adapter)
    )
    llm = VLLMEngineLLM(cfg)
    assert llm.student_tasks == {"openie"} and "+adapter:" in llm.model_id
    spec = openie_prompt(PASSAGE, "completion", max_new_tokens=32, student=True)
    (out,) = llm.generate([spec.prompt], spec.params)
    assert out.ok and out.completion_tokens > 0, out


def test_packaged_names_the_shipped_student_for_vllm_too(tmp_path: Path) -> None:
    from hoprag.llm.adapters import packaged_student_dir

    planner = _adapter(tmp_path / "planner", tasks=["plan", "update"])
    config = VLLMConfig(model="google/gemma-3-270m", adapter=["packaged", str(planner)])
    assert config.adapter_dirs == (packaged_student_dir(), planner)
    check_adapter(config)  # the shipped student's base is this model: no error, routes are disjoint
    assert {"openie", "plan"} <= vllm_student_tasks(config)
