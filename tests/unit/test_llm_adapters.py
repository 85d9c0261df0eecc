"""LoRA adapters of the embedded model: identity in the model id, student metadata, the short
student prompts for the tasks a distilled student was trained on, and the base model for the rest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.judge import judge_prompt
from hoprag.extraction.prompts import STUDENT_PROMPT_VERSION, ner_prompt, openie_prompt
from hoprag.llm.adapters import (
    AdapterError,
    adapter_fingerprint,
    adapter_for_task,
    adapters_id_suffix,
    read_student_meta,
    task_adapter_id_suffix,
)
from hoprag.llm.base import GenerationParams, PromptSpec, uses_student_prompt
from hoprag.llm.embedded import EmbeddedLLMConfig, embedded_model_id, embedded_task_model_id
from hoprag.llm.factory import LazyLLM, LLMBackendConfig, expected_model_id
from hoprag.planner import prompts as P
from indexing.config import ExtractionConfig
from indexing.extract import extract_documents, extract_question_mentions, extraction_model_id
from tests.support.scripted_llm import RuleBasedLLM
from tests.support.tiny_gemma import tiny_gemma


def _adapter(root: Path, tasks: list[str] | None = None, weights: bytes = b"w1") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 4}))
    (root / "adapter_model.safetensors").write_bytes(weights)
    if tasks is not None:
        (root / "student.json").write_text(json.dumps({"tasks": tasks}))
    return root


def test_the_adapter_is_part_of_the_model_id_by_content(tmp_path) -> None:
    adapter = _adapter(tmp_path / "a")
    base = embedded_model_id(EmbeddedLLMConfig(adapter=None))
    with_adapter = embedded_model_id(EmbeddedLLMConfig(adapter=str(adapter)))
    assert (
        with_adapter == f"{base}+adapter:{adapter_fingerprint(adapter)}"
        and len(adapter_fingerprint(adapter)) == 12
    )
    (adapter / "adapter_model.safetensors").write_bytes(
        b"w2-retrained"
    )  # new weights: new id, new cache keys
    assert embedded_model_id(EmbeddedLLMConfig(adapter=str(adapter))) != with_adapter


def test_unusable_adapter_directories_are_clear_errors(tmp_path) -> None:
    with pytest.raises(AdapterError, match=r"no adapter_config\.json"):
        adapter_fingerprint(tmp_path / "missing")
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "adapter_config.json").write_text("{}")
    with pytest.raises(AdapterError, match=r"adapter_model\.safetensors is missing"):
        embedded_model_id(EmbeddedLLMConfig(adapter=str(partial)))
    broken = _adapter(tmp_path / "broken")
    (broken / "student.json").write_text("{not json")
    with pytest.raises(AdapterError, match="not valid JSON"):
        read_student_meta(broken)
    assert read_student_meta(_adapter(tmp_path / "plain")) == {}  # a PEFT adapter made elsewhere


def test_a_planner_student_of_other_planner_prompts_gets_the_base_plan_and_update_prompts(tmp_path) -> None:
    from hoprag.llm.adapters import student_tasks

    tasks = ["answer", "plan", "update"]
    adapter = _adapter(tmp_path / "now", tasks=tasks)
    versions = {"student": STUDENT_PROMPT_VERSION, "planner": P.PLANNER_PROMPT_VERSION}
    (adapter / "student.json").write_text(json.dumps({"tasks": tasks, "prompt_versions": versions}))
    assert student_tasks(adapter) == set(tasks)
    old = {**versions, "planner": "pai2-v0"}
    (adapter / "student.json").write_text(json.dumps({"tasks": tasks, "prompt_versions": old}))
    assert student_tasks(adapter) == {"answer"}  # its plan/update prompts would not be the ones it learnt


def test_student_tasks_are_known_without_loading_the_model(tmp_path) -> None:
    adapter = _adapter(tmp_path / "student", tasks=["openie", "ner"])
    lazy = LazyLLM(LLMBackendConfig.model_validate({"embedded": {"adapter": str(adapter)}}))
    assert lazy.student_tasks == {"openie", "ner"} and not lazy.loaded
    base = LazyLLM(LLMBackendConfig.model_validate({"embedded": {"adapter": None}}))
    assert uses_student_prompt(lazy, "ner") and not uses_student_prompt(base, "ner")
    assert uses_student_prompt(LazyLLM(LLMBackendConfig()), "ner")  # the default: the shipped student


def test_several_students_each_serve_their_own_tasks_and_a_task_two_list_goes_to_the_later(tmp_path) -> None:
    from hoprag.llm.adapters import task_routes

    extraction = _adapter(tmp_path / "extraction", tasks=["openie", "ner", "answer"])
    planner = _adapter(tmp_path / "planner", tasks=["plan", "update"], weights=b"w2")
    assert task_routes([extraction, planner]) == {"openie": 0, "ner": 0, "answer": 0, "plan": 1, "update": 1}
    assert task_routes([_adapter(tmp_path / "plain")]) == {}  # one adapter without tasks serves all
    answerer = _adapter(tmp_path / "answerer", tasks=["answer", "plan"])
    # a task two students list goes to the later: a new answer student over the shipped one
    assert task_routes([extraction, answerer]) == {"openie": 0, "ner": 0, "answer": 1, "plan": 1}
    assert task_routes([answerer, extraction]) == {"openie": 1, "ner": 1, "answer": 1, "plan": 0}
    with pytest.raises(AdapterError, match="lists no tasks"):
        task_routes([extraction, _adapter(tmp_path / "plain")])

    config = EmbeddedLLMConfig(adapter=[str(extraction), str(planner)])
    base = embedded_model_id(EmbeddedLLMConfig(adapter=None))
    assert embedded_model_id(config) == (
        f"{base}+adapter:{adapter_fingerprint(extraction)}+adapter:{adapter_fingerprint(planner)}"
    )
    lazy = LazyLLM(
        LLMBackendConfig.model_validate({"embedded": {"adapter": [str(extraction), str(planner)]}})
    )
    assert lazy.student_tasks == {"openie", "ner", "answer", "plan", "update"} and not lazy.loaded
    clash = EmbeddedLLMConfig(adapter=[str(extraction), str(extraction.parent / "plain")])
    with pytest.raises(AdapterError, match="lists no tasks"):  # before any weights are loaded
        embedded_model_id(clash)
    for bad, message in (([], "empty list"), ([str(planner), str(planner)], "listed twice")):
        with pytest.raises(ValueError, match=message):
            EmbeddedLLMConfig(adapter=bad)
    # the packaged student stays the first of a list, and with a model_path of its own it drops out
    packaged = EmbeddedLLMConfig(adapter=["packaged", str(planner)])
    assert packaged.adapter_dirs[1] == planner and packaged.adapter_dirs[0].name == "student"
    assert EmbeddedLLMConfig(adapter=["packaged", str(planner)], model_path="m").adapter_dirs == (planner,)


def test_student_prompts_are_short_and_parse_like_the_few_shot_ones() -> None:
    passage = "Mira Castell was born in Dornwick."
    for few_shot, student in (
        (openie_prompt(passage, "completion"), openie_prompt(passage, "completion", student=True)),
        (
            ner_prompt("Who is Mira Castell?", "completion"),
            ner_prompt("Who is Mira Castell?", "completion", student=True),
        ),
    ):
        assert student.output_format == few_shot.output_format and student.params == few_shot.params
        assert len(student.prompt) < len(few_shot.prompt) / 3  # no examples
    assert openie_prompt(passage, "completion", student=True).prompt.count("Passage:") == 1


class StudentRuleLLM(RuleBasedLLM):
    """The rule-based LLM posing as a distilled student of ``tasks``."""

    def __init__(self, tasks: set[str]) -> None:
        super().__init__()
        self.student_tasks = frozenset(tasks)
        self.prompts: list[str] = []

    def generate(self, prompts, params):
        self.prompts.extend(str(p) for p in prompts)
        return super().generate(prompts, params)


def test_extraction_uses_the_student_prompt_only_for_the_students_tasks() -> None:
    llm = StudentRuleLLM({"openie"})
    (record,) = extract_documents(llm, ["k"], ["Mira Castell was born in Dornwick."], ExtractionConfig())
    assert record.status == "ok" and record.triples
    assert [p.count("Passage:") for p in llm.prompts] == [1]  # the student prompt: no examples
    extract_question_mentions(llm, ["q"], ["Where was Mira Castell born?"])
    assert llm.prompts[-1].count("Question:") > 1  # ner is not a student task: few-shot prompt


def test_a_students_adapter_serves_its_own_tasks_and_the_base_model_the_rest() -> None:
    one = {"openie": 0, "ner": 0, "answer": 0}
    assert adapter_for_task(one, 1, "openie") == 0
    assert adapter_for_task(one, 1, "plan") is None  # not a student task: the base model
    assert adapter_for_task({}, 1, "plan") == 0  # an adapter without student.json tasks: everything
    assert adapter_for_task(one, 1, None) == 0  # a prompt nobody labelled (HTTP server)
    assert adapter_for_task({}, 0, "openie") is None  # no adapters at all
    two = {"openie": 0, "answer": 0, "plan": 1, "update": 1}
    assert [adapter_for_task(two, 2, t) for t in ("openie", "plan", "update", "judge", None)] == [
        0,
        1,
        1,
        None,
        0,
    ]


def _every_prompt_of_every_task() -> list[tuple[str, PromptSpec]]:
    found = [("q", "A")]
    specs: list[tuple[str, PromptSpec]] = []
    for style in ("completion", "chat"):
        specs += [
            ("openie", openie_prompt("Mira was born in Dornwick.", style)),
            ("ner", ner_prompt("Where was Mira born?", style)),
            ("answer", P.answer_prompt("q", ["a | b | c"], style)),
            ("plan", P.plan_prompt("q", style)),
            ("update", P.update_prompt("q", found, ["r"], style)),
            ("enhance", P.enhance_prompt("q", found, ["r"], style)),
            ("answerable", P.answerable_prompt("q", found, style)),
            ("final_answer", P.final_answer_prompt("q", found, style)),
            ("step_summary", P.summary_prompt("q", found, style)),
            ("clue_query", P.clue_query_prompt("q", [("a", "A")], style)),
            ("denoise_question", P.rewrite_question_prompt("q", "denoise", style)),
            ("enhance_question", P.rewrite_question_prompt("q", "enhance", style)),
            ("decompose", P.decompose_prompt("q", style)),
            ("judge", judge_prompt("q", ["A"], "A", style)),
        ]
    specs += [
        ("openie", openie_prompt("Mira was born in Dornwick.", "completion", student=True)),
        ("ner", ner_prompt("Where was Mira born?", "completion", student=True)),
        ("answer", P.answer_prompt("q", ["a | b | c"], "completion", student=True)),
    ]
    return specs


def test_every_prompt_names_its_task_so_a_student_backend_can_route_it() -> None:
    for task, spec in _every_prompt_of_every_task():
        assert spec.params.task == task, (task, spec.prompt)


def test_the_planner_cache_tells_tasks_apart() -> None:
    from hoprag.planner.llm_calls import _cache_key

    plan, answer = GenerationParams(8, task="plan"), GenerationParams(8, task="answer")
    assert _cache_key("m", "same prompt", plan) != _cache_key("m", "same prompt", answer)


def test_merging_beside_the_base_leaves_the_base_untouched_and_shares_what_the_adapter_does_not_change(
    tmp_path: Path,
) -> None:
    """The merged twin computes what peft computes with the adapter; the base still computes the
    base; only the adapted projections are separate tensors (embeddings, MLPs, norms are shared)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from hoprag.llm.adapters import merged_beside

    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    trained = get_peft_model(tiny_gemma(2), lora)
    trained.save_pretrained(str(tmp_path / "adapter"))
    ids = torch.randint(1, 97, (2, 9))
    with torch.no_grad():
        expected_student = trained(input_ids=ids).logits
        expected_base = tiny_gemma(2)(input_ids=ids).logits  # same seed: the same base weights
    base = tiny_gemma(2).eval()
    twin = merged_beside(base, tmp_path / "adapter").eval()
    with torch.no_grad():
        torch.testing.assert_close(twin(input_ids=ids).logits, expected_student, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(base(input_ids=ids).logits, expected_base, rtol=0, atol=0)
    base_params, twin_params = dict(base.named_parameters()), dict(twin.named_parameters())
    assert set(base_params) == set(twin_params)
    separate = {name for name, p in twin_params.items() if p is not base_params[name]}
    assert separate == {
        f"model.layers.{i}.self_attn.{proj}.weight" for i in range(2) for proj in ("q_proj", "v_proj")
    }
    wider = tiny_gemma(2)
    wider.model.layers[0].self_attn.q_proj = torch.nn.Linear(32, 48, bias=False)  # another model's shape
    with pytest.raises(AdapterError, match="does not fit"):
        merged_beside(wider, tmp_path / "adapter")


def test_a_tasks_model_id_names_only_the_adapter_serving_it(tmp_path: Path) -> None:
    planner = _adapter(tmp_path / "planner", ["plan", "update"])
    shipped = EmbeddedLLMConfig()
    both = EmbeddedLLMConfig(adapter=["packaged", str(planner)])
    base = EmbeddedLLMConfig(adapter=None)
    # the shipped student alone: every task's id is the model's id (caches made before keep their keys)
    assert {embedded_task_model_id(shipped, t) for t in ("openie", "ner", "answer")} == {
        embedded_model_id(shipped)
    }
    # beside a planner student: OpenIE and NER keep the shipped student's id, plan gets the planner's
    assert embedded_task_model_id(both, "openie") == embedded_model_id(shipped) != embedded_model_id(both)
    assert (
        embedded_task_model_id(both, "plan")
        == embedded_model_id(base) + f"+adapter:{adapter_fingerprint(planner)}"
    )
    assert embedded_task_model_id(both, "judge") == embedded_model_id(base)  # no student: the base weights
    assert embedded_task_model_id(EmbeddedLLMConfig(adapter=str(planner)), "openie") == embedded_model_id(
        base
    )
    config = LLMBackendConfig.model_validate({"embedded": both.model_dump()})
    assert expected_model_id(config) == embedded_model_id(both)
    assert expected_model_id(config, "ner") == embedded_model_id(shipped)
    lazy = LazyLLM(config)
    assert lazy.task_model_id("ner") == embedded_model_id(shipped) and not lazy.loaded
    assert adapters_id_suffix((), "s") == task_adapter_id_suffix((), "openie", "s") == ""


def test_a_documents_extraction_key_names_the_weights_of_its_extraction_tasks() -> None:
    ids = {"openie": "m+adapter:s", "ner": "m+adapter:s", "plan": "m+adapter:p"}
    one_step, two_step = ExtractionConfig(), ExtractionConfig(mode="two_step")
    assert extraction_model_id(ids.__getitem__, one_step) == "m+adapter:s"
    assert extraction_model_id(ids.__getitem__, two_step) == "m+adapter:s"  # one student does both
    split = {"openie": "m+adapter:s", "ner": "m"}  # NER on the base weights: both ids in the key
    assert extraction_model_id(split.__getitem__, two_step) == "m|m+adapter:s"
    assert extraction_model_id(split.__getitem__, one_step) == "m+adapter:s"
