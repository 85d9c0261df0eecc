"""``hoprag bench steps``: plan and update agreement with gold plans, scored on scripted LLMs whose
right and wrong outputs are known."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from benchmarks.steps import BenchInputError, load_questions, score_system
from distillation.examples import plan_example, update_examples
from hoprag.llm.base import Completion, GenerationParams, truncate_at_stop
from hoprag.planner.gold import gold_plan
from hoprag.planner.prompts import plan_prompt
from synthetic import SyntheticConfig, write_benchmark


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("steps")
    write_benchmark(
        SyntheticConfig(
            seed=5,
            num_documents=120,
            num_train_questions=10,
            num_test_questions=24,
            held_out_domains=["biomedical"],
        ),
        out,
    )
    return out


class TaughtLLM:
    """Answers the student plan and update prompts of the given questions exactly as distillation
    teaches them; ``wrong`` answers every prompt with the question as the only step instead."""

    model_id = "taught"
    prompt_style = "completion"
    student_tasks = frozenset({"plan", "update"})

    def __init__(self, questions: Sequence[dict], wrong: bool = False) -> None:
        self.wrong = wrong
        self.taught: dict[str, str] = {}
        for q in questions:
            plan = gold_plan(q)
            assert plan is not None
            for e in [
                plan_example("k", q["question"], plan),
                *update_examples("u", q["question"], q["answer"], plan),
            ]:
                self.taught[e.prompt] = e.target

    def generate(self, prompts: Sequence[str], params: GenerationParams) -> list[Completion]:
        out = []
        for p in prompts:
            text = "1. " + p.rsplit("Question: ", 1)[-1].split("\n")[0] if self.wrong else self.taught[p]
            out.append(Completion(text=truncate_at_stop(text, params.stop)[0]))
        return out


def test_a_model_that_learnt_the_gold_plans_agrees_everywhere_one_that_did_not_nowhere(benchmark) -> None:
    questions, held_out = load_questions(benchmark, "test", 20)
    assert held_out == {"biomedical"} and len(questions) == 20
    right = score_system(TaughtLLM(questions), questions, held_out)["summary"]
    assert right["all"] == {
        "questions": 20,
        "plan_exact": 1.0,
        "steps_right": 1.0,
        "placeholders_right": 1.0,
        "chain_right": 1.0,
        "update_right": 1.0,
    }
    assert right["held-out domain"]["questions"] + right["training domains"]["questions"] == 20
    assert right["2 hops"]["questions"] + right["3-4 hops"]["questions"] == 20
    wrong = score_system(TaughtLLM(questions, wrong=True), questions, held_out)["summary"]["all"]
    # every gold plan has 2+ steps; a one-step plan and a "1. question" update are never right
    assert wrong["plan_exact"] == wrong["steps_right"] == wrong["update_right"] == wrong["chain_right"] == 0.0


def test_a_plan_in_other_words_that_chains_through_the_same_answers_is_chain_right(benchmark) -> None:
    """The gold steps' wording is a random template draw: other words with the same placeholders
    in the same order are chain-right (not exact); a plan that skips a hop is neither."""
    questions, held_out = load_questions(benchmark, "test", 20)
    q = next(q for q in questions if len(q["plan"]) >= 3)
    reworded = "\n".join(
        f"{i}. Tell me: {s['step'].lower().rstrip('?')}, please?" for i, s in enumerate(q["plan"], 1)
    )
    skipping = "\n".join(f"{i}. {s['step']}" for i, s in enumerate(q["plan"][1:], 1))
    for text, chain, exact in ((reworded, True, False), (skipping, False, False)):
        llm = TaughtLLM([q])
        plan_key = plan_prompt(q["question"], "completion", student=True).prompt
        assert plan_key in llm.taught
        llm.taught[plan_key] = text
        (row,) = score_system(llm, [q], held_out)["rows"]
        assert (row["chain_right"], row["plan_exact"]) == (chain, exact), text


def test_a_benchmark_without_gold_plans_is_a_clear_error(tmp_path, benchmark) -> None:
    with pytest.raises(BenchInputError, match="no such question file"):
        load_questions(tmp_path, "test", 5)
    raw = tmp_path / "raw"
    raw.mkdir()
    old = [
        {k: v for k, v in q.items() if k != "plan"}
        for q in json.loads((benchmark / "raw" / "test.json").read_text())
    ]
    (raw / "test.json").write_text(json.dumps(old))
    with pytest.raises(BenchInputError, match="no question has a gold plan"):
        load_questions(tmp_path, "test", 5)


def test_a_published_files_test_questions_are_scored_against_the_plans_their_chains_give() -> None:
    """MuSiQue's test split (by id hash, as `hoprag index --train-fraction 0.5`) with the plans of
    its decompositions; a model taught them agrees everywhere, HotpotQA (no chain) is refused."""
    real = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "real"
    questions, held_out = load_questions(real / "musique" / "dev-sample.jsonl", "test", 100)
    train, _ = load_questions(real / "musique" / "dev-sample.jsonl", "train", 100)
    assert held_out == set() and len(questions) == 52 and len(train) == 49
    assert not {q["id"] for q in questions} & {q["id"] for q in train}
    assert {q["hops"] for q in questions} == {2, 3, 4}
    right = score_system(TaughtLLM(questions), questions, held_out)["summary"]["all"]
    assert right["chain_right"] == right["update_right"] == 1.0
    with pytest.raises(BenchInputError, match="no test question states its chain"):
        load_questions(real / "hotpotqa" / "dev-distractor-sample.json", "test", 10)
    with pytest.raises(BenchInputError, match="no 'dev' split"):
        load_questions(real / "musique" / "dev-sample.jsonl", "dev", 10)
