"""LoRA adapters of the embedded model: identity in the model id, student metadata, and the short
student prompts for the tasks a distilled student was trained on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.extraction.prompts import ner_prompt, openie_prompt
from hoprag.llm.adapters import AdapterError, adapter_fingerprint, read_student_meta
from hoprag.llm.base import uses_student_prompt
from hoprag.llm.embedded import EmbeddedLLMConfig, embedded_model_id
from hoprag.llm.factory import LazyLLM, LLMBackendConfig
from indexing.config import ExtractionConfig
from indexing.extract import extract_documents, extract_question_mentions
from tests.support.scripted_llm import RuleBasedLLM


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


def test_student_tasks_are_known_without_loading_the_model(tmp_path) -> None:
    adapter = _adapter(tmp_path / "student", tasks=["openie", "ner"])
    lazy = LazyLLM(LLMBackendConfig.model_validate({"embedded": {"adapter": str(adapter)}}))
    assert lazy.student_tasks == {"openie", "ner"} and not lazy.loaded
    base = LazyLLM(LLMBackendConfig.model_validate({"embedded": {"adapter": None}}))
    assert uses_student_prompt(lazy, "ner") and not uses_student_prompt(base, "ner")
    assert uses_student_prompt(LazyLLM(LLMBackendConfig()), "ner")  # the default: the shipped student


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
