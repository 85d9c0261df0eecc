"""Planner prompts (both styles) and their parsers, including the malformed outputs small models write."""

from __future__ import annotations

import pytest

from evaluation.metrics import exact_match, normalize_answer
from hoprag.planner import prompts as P
from hoprag.planner.parsing import parse_answer, parse_rewritten, parse_steps, parse_update, parse_yes_no
from tests.support.planner_llm import prompt_kind

FOUND = [("Who is the director of Payment On Demand?", "Curtis Bernhardt")]


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        (P.plan_prompt("Q?", "completion"), "plan"),
        (P.answer_prompt("Q?", ["a | b | c"], "completion"), "answer"),
        (P.update_prompt("Q?", FOUND, ["What country is [director] from?"], "completion"), "update"),
        (P.enhance_prompt("Q?", FOUND, ["What country is [director] from?"], "completion"), "enhance"),
        (P.answerable_prompt("Q?", FOUND, "completion"), "answerable"),
        (P.final_answer_prompt("Q?", FOUND, "completion"), "final"),
        (P.summary_prompt("Q?", FOUND, "completion"), "summary"),
        (P.clue_query_prompt("Q?", [("x", "X")], "completion"), "clue_query"),
        (P.rewrite_question_prompt("Q?", "denoise", "completion"), "rewrite"),
        (P.decompose_prompt("Q?", "completion"), "decompose"),
    ],
)
def test_completion_prompts_end_with_their_instance(spec, kind) -> None:
    assert isinstance(spec.prompt, str) and spec.params.temperature == 0.0
    assert prompt_kind(spec.prompt)[0] == kind
    assert "Q?" in spec.prompt.rsplit("\n\n", 1)[-1]  # the instance is the last block
    assert spec.params.stop  # base models need stop sequences to end their answer


def test_chat_prompts_carry_task_example_and_instance() -> None:
    spec = P.update_prompt("Q?", FOUND, ["What country is [director] from?"], "chat")
    system, user = spec.prompt
    assert system["role"] == "system" and "placeholders" in system["content"]
    assert "Example:" in user["content"] and user["content"].rstrip().endswith("Next:")
    assert "1. Who is the director of Payment On Demand? -> Curtis Bernhardt" in user["content"]


def test_placeholder_step_numbering_continues_after_the_found_steps() -> None:
    spec = P.update_prompt("Q?", FOUND, ["What country is [director] from?"], "completion")
    block = spec.prompt.rsplit("\n\n", 1)[-1]
    assert "Remaining:\n2. What country is [director] from?\nNext:" in block


def test_parse_steps() -> None:
    assert parse_steps("1. A?\n2) B?\n  3.C?\nnoise\n2. A?").value == ["A?", "B?", "C?"]
    assert not parse_steps("I think the answer is Paris.").ok
    assert len(parse_steps("\n".join(f"{i}. s{i}" for i in range(1, 40))).value) == 12


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Curtis Bernhardt\nQuestion: more", "Curtis Bernhardt"),
        (' Answer: "Worms".', "Worms"),
        ("unknown", ""),
        ("<|NotEnoughtInfo|>", ""),
        ("Unknown.", ""),
    ],
)
def test_parse_answer(text: str, value: str) -> None:
    assert parse_answer(text).value == value


def test_parse_answer_rejects_empty_and_runaway_output() -> None:
    assert parse_answer("   \n").reason == "empty answer"
    assert "too long" in parse_answer("x" * 500).reason


def test_parse_update() -> None:
    final = parse_update("Final answer: Pearl Argyle\n3. ignored")
    assert final.value.final_answer == "Pearl Argyle" and final.value.remaining is None
    steps = parse_update("3. What country is Curtis Bernhardt from?")
    assert steps.value.remaining == ["What country is Curtis Bernhardt from?"]
    assert not parse_update("Final answer: unknown").ok  # an empty final answer is not an answer
    assert not parse_update("blah").ok


def test_parse_yes_no_and_rewritten() -> None:
    assert parse_yes_no(" Yes, enough.").value is True
    assert parse_yes_no("no").value is False
    assert not parse_yes_no("maybe").ok
    assert parse_rewritten("Rewritten: Who directed X?").value == "Who directed X?"
    assert not parse_rewritten("unknown").ok


def test_answer_normalization_and_exact_match() -> None:
    assert normalize_answer("The  Broken Harbor!") == "broken harbor"
    assert normalize_answer("An apple, a day") == "apple day"
    assert exact_match("the Broken Harbor.", ["Broken Harbor"]) == 1.0
    assert exact_match("Broken", ["Broken Harbor", ""]) == 0.0
    assert exact_match("1,995", ["1995"]) == 1.0  # punctuation removed, as HotpotQA does
