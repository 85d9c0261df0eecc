"""Evaluation metrics and statistics against worked examples."""

from __future__ import annotations

import pytest

from evaluation.metrics import entity_recall, exact_match, f1_score, normalize_answer, recall_at_k
from evaluation.stats import bootstrap_ci, holm_bonferroni, paired_bootstrap


@pytest.mark.parametrize(
    ("prediction", "golds", "em", "f1"),
    [
        ("The Broken Harbor.", ["Broken Harbor"], 1.0, 1.0),  # article and punctuation
        ("the Broken Harbor film", ["Broken Harbor"], 0.0, 0.8),  # P 2/3, R 1 -> 0.8
        ("Yes", ["yes"], 1.0, 1.0),
        ("yes", ["no"], 0.0, 0.0),  # yes/no never earn partial credit
        ("no answer here", ["no"], 0.0, 0.0),
        ("Carl", ["Carl Boese", "C. Boese"], 0.0, 2 / 3),  # best alias: P 1, R 1/2
        ("anything", [""], 0.0, 0.0),  # an empty gold answer scores nothing
    ],
)
def test_em_and_f1_worked_examples(prediction, golds, em, f1) -> None:
    assert exact_match(prediction, golds) == em
    assert f1_score(prediction, golds) == pytest.approx(f1)


def test_normalization() -> None:
    assert normalize_answer("  An  Apple's  day! ") == "apples day"


def test_recall_with_duplicate_and_missing_titles() -> None:
    # Duplicated retrieved titles count once; gold titles never retrieved count as misses.
    assert recall_at_k(["A", "A", "B"], ["A", "C"], 2) == 0.5
    assert recall_at_k(["A", "B"], ["A", "A", "B"], 1) == 0.5  # duplicate gold titles collapse
    assert recall_at_k([], ["A"], 5) == 0.0
    with pytest.raises(ValueError):
        recall_at_k(["A"], [], 2)
    assert entity_recall(["x", "y", "z"], ["y", "w"], 2) == 0.5


def test_bootstrap_ci_is_deterministic_and_exact_on_constant_scores() -> None:
    assert bootstrap_ci([0.5] * 7, 200, seed=1) == (0.5, 0.5, 0.5)  # no spread, no interval
    a = bootstrap_ci([0, 1, 1, 0, 1, 1, 1, 0], 500, seed=3)
    assert a == bootstrap_ci([0, 1, 1, 0, 1, 1, 1, 0], 500, seed=3)
    # A resample's mean is Binomial(8, 5/8) / 8: P(mean <= 1/8) = 0.0056 and P(mean <= 2/8) = 0.036
    # put the 2.5% quantile at 2/8; P(mean <= 6/8) = 0.865 and P(mean <= 7/8) = 0.977 put the
    # 97.5% quantile at 7/8. 500 resamples with seed 3 land on exactly these.
    assert a == (0.625, 0.25, 0.875)


def test_bootstrap_ci_on_two_values_by_hand() -> None:
    # Scores [0, 1]: each resample of 2 is (0,0), (0,1), (1,0) or (1,1) -> means 0, .5, .5, 1.
    # With many resamples the 2.5% and 97.5% quantiles are 0 and 1.
    assert bootstrap_ci([0, 1], 4000, seed=0) == (0.5, 0.0, 1.0)


def test_paired_bootstrap() -> None:
    same = paired_bootstrap([1, 0, 1], [1, 0, 1], 500, seed=0)
    assert same["diff"] == 0 and same["p"] == 1.0
    better = paired_bootstrap([1] * 20, [0] * 20, 500, seed=0)
    assert better["diff"] == 1.0 and better["p"] == pytest.approx(1 / 500)  # floor: 1 / resamples
    with pytest.raises(ValueError):
        paired_bootstrap([1, 0], [1], 100)


def test_holm_bonferroni_on_a_known_list() -> None:
    # Sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> monotone 0.06.
    assert holm_bonferroni([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_bonferroni([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm_bonferroni([]) == []


def test_score_row_scores_what_each_system_produces() -> None:
    from evaluation.worker import score_row

    row = {
        "supporting_docs": ["A", "B"],
        "supporting_entities": ["x"],
        "answer": "Worms",
        "answer_aliases": ["Worms, Germany"],
    }
    retrieval = score_row(row, ["B", "C", "A"], ["x", "y"], None, [1, 2])
    assert retrieval == {"recall@1": 0.5, "recall@2": 0.5, "entity_recall@20": 1.0}
    no_context = score_row(row, None, [], "worms", [1, 2])  # no retrieval: no recall at all
    assert no_context == {"em": 1.0, "f1": 1.0}
    no_gold = score_row({"supporting_docs": [], "answer": ""}, ["A"], [], "x", [1])
    assert no_gold == {}  # nothing to score against: counted, not guessed


def test_paired_t_test_by_hand() -> None:
    from evaluation.stats import paired_t_test

    # d = 1,2,3,4: mean 2.5, sd 1.2910, t = 2.5 / (1.2910 / 2) = 3.873 with 3 df -> p = 0.0305
    assert paired_t_test([1, 2, 3, 4], [0, 0, 0, 0]) == pytest.approx(0.0305, abs=5e-4)
    assert paired_t_test([1, 1], [1, 1]) == 1.0 and paired_t_test([1, 1], [0, 0]) == 0.0


def test_the_report_tests_significance_with_the_t_test_and_holm(tmp_path) -> None:
    """What docs/evaluation.md says: the p-value is the paired t-test's, Holm-corrected over all
    comparisons; the paired bootstrap only gives the difference's interval."""
    import json

    from evaluation.report import summarize
    from evaluation.results import results_path

    # System a beats b by 0.25, 0.5, 0.75, 1 on recall@2 and by the same on recall@5. The t-test
    # p-value is 0.0305 for each (test above); Holm over the two: 2 * 0.0305 = 0.061, not
    # significant. A bootstrap test would put p at its floor (every resampled difference is
    # positive) and call both significant.
    scores = {"a": [0.25, 0.5, 0.75, 1.0], "b": [0.0] * 4}
    for system, values in scores.items():
        path = results_path(tmp_path, "bench", system)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "".join(
                json.dumps({"id": f"q{i}", "error": None, "metrics": {"recall@2": v, "recall@5": v}}) + "\n"
                for i, v in enumerate(values)
            )
        )
    meta = {"benchmarks": {"bench": {"input": {}}}, "systems": [{"name": "a"}, {"name": "b"}]}
    comparisons = summarize(tmp_path, meta, resamples=500, seed=0)["comparisons"]
    assert [c["metric"] for c in comparisons] == ["recall@2", "recall@5"]
    for c in comparisons:
        assert (c["a"], c["b"], c["n"], c["diff"]) == ("a", "b", 4, 0.625)
        assert c["p"] == pytest.approx(0.0305, abs=5e-4)
        assert c["p_holm"] == pytest.approx(2 * c["p"], abs=1e-4) and not c["significant"]
    # the difference's interval is the paired bootstrap's
    interval = paired_bootstrap(scores["a"], scores["b"], 500, seed=0)
    assert comparisons[0]["low"] == round(interval["low"], 4) and comparisons[0]["high"] == round(
        interval["high"], 4
    )


def test_llm_judge_verdicts_and_invalid_outputs() -> None:
    from evaluation.judge import judge
    from tests.support.planner_llm import Rule, ScriptedPlannerLLM

    class JudgeLLM(ScriptedPlannerLLM):
        def _respond(self, prompt: str):
            from hoprag.llm.base import Completion

            instance = prompt.rsplit("\n\n", 1)[-1]
            text = (
                "yes" if "Generated answer: Worms" in instance else "maybe?" if "Berlin" in instance else "no"
            )
            return Completion(text=text)

    llm = JudgeLLM([Rule("other", "")])
    verdicts = judge(
        llm,
        [
            ("Where?", ["Worms"], "Worms"),
            ("Where?", ["Worms"], "Paris"),
            ("Where?", ["Worms"], "Berlin"),
            ("Where?", ["Worms"], ""),
        ],
    )
    assert verdicts == [1.0, 0.0, None, 0.0]  # "maybe?" is neither yes nor no: invalid, not guessed
    assert llm.batches == [3]  # one batch; the empty answer was never sent


class _FullPromptLLM:
    """Answers from the whole prompt (both context-relevance wordings share their last block)."""

    prompt_style = "completion"
    model_id = "rules"

    def __init__(self, respond) -> None:
        self.respond = respond
        self.batches: list[int] = []

    def generate(self, prompts, params):
        from hoprag.llm.base import Completion

        self.batches.append(len(prompts))
        return [Completion(text=self.respond(p)) for p in prompts]


def test_context_relevance_averages_two_ratings_and_never_guesses() -> None:
    from evaluation.judge import context_relevance, parse_rating

    assert [parse_rating(t) for t in ("2", " 1.", "**0**", "3", "two", "")] == [2, 1, 0, None, None, None]
    # Wording A rates 2, wording B rates 1: (1.0 + 0.5) / 2.
    both = _FullPromptLLM(lambda p: "2" if p.startswith("Rate how relevant") else "1")
    assert context_relevance(both, "Who directed X?", "X | directed by | Y") == 0.75
    one = _FullPromptLLM(lambda p: "1" if p.startswith("Rate how relevant") else "relevant")
    assert context_relevance(one, "Who directed X?", "X | directed by | Y") == 0.5  # the readable one
    assert context_relevance(_FullPromptLLM(lambda p: "n/a"), "Who?", "ctx") is None


def test_faithfulness_is_the_supported_fraction_of_statements() -> None:
    from evaluation.judge import faithfulness, parse_statements

    assert parse_statements("- A was born in B.\n2. A directed C.\n\n") == [
        "A was born in B.",
        "A directed C.",
    ]

    def respond(prompt: str) -> str:
        block = prompt.rsplit("\n\n", 1)[-1]
        if block.endswith("Statements:"):
            return (
                "1. Bernhardt directed Payment On Demand.\n2. Bernhardt was born in Worms.\n3. He was tall."
            )
        if "Statement: He was tall." in block:
            return "unclear"  # unreadable: left out of the fraction, not counted as unsupported
        return "yes" if "Worms" in block.split("Statement:")[0] or "directed" in block else "no"

    llm = _FullPromptLLM(respond)
    context = "Payment On Demand | directed by | Curtis Bernhardt\nCurtis Bernhardt | born in | Worms"
    assert faithfulness(llm, "Where was the director born?", "Worms", context) == 1.0
    assert llm.batches == [1, 3]  # one statements call, one batch of verdicts
    unsupported = _FullPromptLLM(
        lambda p: "Bernhardt was born in Paris." if p.endswith("Statements:") else "no"
    )
    assert faithfulness(unsupported, "Where?", "Paris", "Bernhardt | born in | Worms") == 0.0
    # A splitter that returns nothing: the answer is checked as one statement.
    empty = _FullPromptLLM(lambda p: "" if p.endswith("Statements:") else "yes")
    assert faithfulness(empty, "Where?", "Worms", "Bernhardt | born in | Worms") == 1.0
    assert faithfulness(_FullPromptLLM(lambda p: "???"), "Where?", "Worms", "ctx") is None


def test_chat_judges_get_the_examples_as_turns() -> None:
    from evaluation.judge import judge_prompt, parse_statements, statements_prompt

    messages = judge_prompt("Who?", ["Worms"], "Worms", "chat").prompt
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in messages if m["role"] == "assistant"] == ["yes", "no"]
    assert messages[-1]["content"].endswith("Generated answer: Worms\nCorrect:")
    chat = statements_prompt("Where?", "Worms", "chat").prompt
    assert "Output only the statements" in chat[0]["content"]
    # A chat model's preamble is not a claim.
    assert parse_statements("Here are the statements:\n- Bernhardt was born in Worms.") == [
        "Bernhardt was born in Worms."
    ]


def test_a_resumed_run_rejudges_results_from_other_judge_prompts() -> None:
    from evaluation.config import EvalConfig, SystemSpec
    from evaluation.results import reusable_results

    def config(**judge) -> EvalConfig:
        return EvalConfig.model_validate(
            {
                "benchmarks": [{"name": "b", "index": "x"}],
                "systems": [{"name": "s", "kind": "retrieval", "retriever": "dense"}],
                "out": "o",
                "judge": judge,
            }
        )

    qa = SystemSpec(name="rag", kind="qa", pipeline="rag", retriever="dense")
    done = {
        "unjudged": {"id": "unjudged"},
        "v1": {"id": "v1", "judge_prompts": {"judge": "judge-v1"}},
        "v2": {"id": "v2", "judge_prompts": {"judge": "judge-v2"}},
    }
    assert set(reusable_results(done, config(), qa)) == {"unjudged"}  # judges off
    assert set(reusable_results(done, config(enabled=True), qa)) == {"v2"}
    retrieval = SystemSpec(name="dense", kind="retrieval", retriever="dense")
    assert set(reusable_results(done, config(enabled=True), retrieval)) == set(done)  # nothing judged there


def test_step_recall_counts_gold_intermediate_answers_found_in_the_trace() -> None:
    from evaluation.metrics import step_recall

    gold = [
        {"question": "Who performed Green?", "answer": "Steve Hillage"},
        {"question": "Who is the spouse of #1?", "answer": "Miquette Giraudy"},
    ]
    question = "Who is the spouse of the Green performer?"
    # the final step's answer is the question's answer, not an intermediate one
    assert step_recall(question, gold, ["Who performed Green?", "steve hillage."]) == 1.0
    # a later step rewritten with it counts too; nothing found scores 0
    assert step_recall(question, gold, ["x", "", "Who is the spouse of Steve Hillage?", "Miquette"]) == 1.0
    assert step_recall(question, gold, ["Who performed Green?", "unknown"]) == 0.0
    three = [*gold[:1], {"question": "Where was #1 born?", "answer": "London"}, gold[1]]
    assert step_recall(question, three, ["Steve Hillage"]) == 0.5
    # an answer the question already names is no finding; with none left there is no score
    assert step_recall("Is Steve Hillage the Green performer?", gold, ["Steve Hillage"]) is None
    assert step_recall(question, gold[:1], ["anything"]) is None
