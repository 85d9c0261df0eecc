"""Plan enhancement by substitution and answer citations (no LLM involved)."""

from __future__ import annotations

from hoprag.planner.citations import bridge_answers, cite, echoes, final_supported, states, supported
from hoprag.planner.enhance import fill_placeholders, referenced_step
from hoprag.planner.trace import Citation, StepTrace

FOUND = [("Who is the director of Payment On Demand?", "Curtis Bernhardt")]


def test_a_placeholder_gets_the_answer_of_the_step_it_names() -> None:
    filled = fill_placeholders(["What country is [director of Payment On Demand] from?"], FOUND)
    assert filled.steps == ["What country is Curtis Bernhardt from?"]
    assert filled.unresolved == filled.not_found == []
    # by number too
    assert fill_placeholders(["Where was [answer 1] born?"], FOUND).steps == [
        "Where was Curtis Bernhardt born?"
    ]
    assert fill_placeholders(["Where was [1] born?"], FOUND).steps == ["Where was Curtis Bernhardt born?"]


def test_a_placeholder_naming_a_later_step_waits_and_one_naming_none_is_unresolved() -> None:
    remaining = [
        "Who is the director of My Cousin From Warsaw?",
        "Are [director of Payment On Demand] and [director of My Cousin From Warsaw] compatriots?",
        "Where is [the moon]?",
    ]
    filled = fill_placeholders(remaining, FOUND)
    assert filled.steps[1] == "Are Curtis Bernhardt and [director of My Cousin From Warsaw] compatriots?"
    assert filled.steps[2] == "Where is [the moon]?" and filled.unresolved == ["the moon"]


def test_a_step_that_found_nothing_leaves_the_description_not_a_guess() -> None:
    filled = fill_placeholders(
        ["Who is the spouse of [director of Payment On Demand]?"], [(FOUND[0][0], "unknown")]
    )
    assert filled.steps == ["Who is the spouse of director of Payment On Demand?"]
    assert filled.not_found == ["director of Payment On Demand"]


def test_a_nested_placeholder_keeps_naming_its_own_step_once_the_inner_one_is_filled() -> None:
    """A 3-hop chain: step 3's placeholder holds step 2's description. Filling step 2's placeholder
    rewrites the words inside step 3's, so that after step 2 runs as "What is the spouse of Luke
    Bryan?" the placeholder still names step 2, not step 1 (whose words its old form shares most)."""
    plan = [
        "What is the performer of Country Man?",
        "What is the spouse of [the performer of Country Man]?",
        "Where was [the spouse of the performer of Country Man] born?",
    ]
    found = [(plan[0], "Luke Bryan")]
    after_one = fill_placeholders(plan[1:], found)
    assert after_one.steps == [
        "What is the spouse of Luke Bryan?",
        "Where was [the spouse of Luke Bryan] born?",
    ]
    found.append((after_one.steps[0], "Caroline Boyer"))
    assert fill_placeholders(after_one.steps[1:], found).steps == ["Where was Caroline Boyer born?"]
    # the inner step found nothing: its words stay, inside the waiting placeholder too
    nothing = fill_placeholders(plan[1:], [(plan[0], "unknown")])
    assert nothing.steps == [
        "What is the spouse of the performer of Country Man?",
        "Where was [the spouse of the performer of Country Man] born?",
    ]


def test_referenced_step_needs_half_of_the_placeholder_words_and_prefers_the_latest_tie() -> None:
    queries = ["Who directed Payment On Demand?", "Who is the director of the film Payment On Demand?"]
    assert referenced_step("director of Payment On Demand", queries) == 1
    assert referenced_step("spouse of the producer", queries) is None
    assert referenced_step("step 3", queries) is None


def test_an_answer_is_cited_by_the_evidence_that_states_it_about_the_step_subject() -> None:
    evidence = [
        Citation(
            "triple",
            0,
            "Payment On Demand | directed by | Curtis Bernhardt",
            ["payment on demand", "curtis bernhardt"],
        ),
        Citation("triple", 1, "Curtis Bernhardt | born in | Worms", ["curtis bernhardt", "worms"]),
        Citation(
            "thesis", 0, "Curtis Bernhardt: He was born in Worms, Germany.", ["curtis bernhardt", "worms"]
        ),
        Citation("triple", 2, "Worms | city in | Germany", ["worms", "germany"]),
        Citation("triple", 3, "Berlin | city in | Germany", ["berlin", "germany"]),
        Citation("triple", 4, "Ostarizumab | treats | Kellan fever", ["ostarizumab", "kellan fever"]),
    ]
    assert [c.id for c in cite("Curtis Bernhardt", evidence, ["Payment On Demand"])] == [0]
    assert [c.kind for c in cite("curtis  bernhardt.", evidence)] == ["triple", "triple", "thesis"]
    assert cite("Orson Welles", evidence) == []
    # about the step's subject: naming it, or one hop on from what names it; not elsewhere
    assert [(c.kind, c.id) for c in cite("Germany", evidence, ["Curtis Bernhardt"])] == [
        ("thesis", 0),
        ("triple", 2),
    ]
    # two hops: the director of Payment On Demand was born in Worms
    assert [(c.kind, c.id) for c in cite("Worms", evidence, ["Payment On Demand"])] == [
        ("triple", 1),
        ("thesis", 0),
    ]
    # connected through Worms and Germany (a step may ask several hops at once)
    assert [c.id for c in cite("Berlin", evidence, ["Curtis Bernhardt"])] == [3]
    # joined to nothing the step reached: not a citation
    assert cite("Kellan fever", evidence, ["Curtis Bernhardt"]) == []
    assert [c.id for c in cite("Kellan fever", evidence)] == [4]  # no anchors: any stating item
    assert states("Born in Worms, Germany.", "germany") and not states("German film", "Germany")
    assert supported("Worms", ["x", "born in Worms"]) and not supported("", ["anything"])


def test_an_answer_its_own_open_question_names_is_an_echo_unless_the_question_offers_it() -> None:
    assert echoes("Who plays Lemony Snicket in Batman Under the Red Hood?", "Lemony Snicket")
    assert echoes("What is the title of The Bourne Ultimatum?", "the bourne ultimatum")
    assert not echoes("Who plays Count Olaf in A Series of Unfortunate Events?", "Neil Patrick Harris")
    assert not echoes("Which film came out first, Niyoti or Angali Pangali?", "Niyoti")  # offered
    assert not echoes("Is Niyoti older than Angali Pangali?", "Niyoti")  # yes/no: not an open question
    assert echoes("Who directed Payment On Demand?", "Payment On Demand")


def _step(index: int, query: str, answer: str, cited: str = "") -> StepTrace:
    step = StepTrace(index=index, query=query)
    step.answer = answer
    if cited:
        step.citations = [Citation("triple", index, cited)]
    return step


def test_a_final_answer_must_be_stated_by_the_search_and_not_be_a_hop_on_the_way() -> None:
    question = "Who is the spouse of the director of Payment On Demand?"
    steps = [
        _step(
            0,
            "Who is the director of Payment On Demand?",
            "Curtis Bernhardt",
            "Payment On Demand | directed by | Curtis Bernhardt",
        ),
        _step(
            1,
            "Who is the spouse of Curtis Bernhardt?",
            "Pearl Argyle",
            "Curtis Bernhardt | spouse | Pearl Argyle",
        ),
    ]
    assert bridge_answers(steps) == {"curtis bernhardt"}
    assert final_supported("Pearl Argyle", question, steps) is None
    assert final_supported("Curtis Bernhardt", question, steps) == (
        "is an intermediate answer (a later step searched from it)"
    )
    assert (
        final_supported("Orson Welles", question, steps) == "is stated by none of the steps' cited evidence"
    )
    assert final_supported("Payment On Demand", question, steps) == "is named by the question it answers"
    # a bridge the question itself names may be its answer (a choice between named things)
    choice = "Who is older, Curtis Bernhardt or the director of My Cousin From Warsaw?"
    assert final_supported("Curtis Bernhardt", choice, steps) is None


def test_an_eval_plan_system_can_carry_its_own_planner_settings(tmp_path) -> None:
    import pytest

    from evaluation.config import EvalConfig

    config = EvalConfig.model_validate(
        {
            "out": str(tmp_path),
            "benchmarks": [{"name": "b", "index": str(tmp_path)}],
            "systems": [
                {"name": "plan", "kind": "qa", "pipeline": "plan"},
                {"name": "plan-no-theses", "kind": "qa", "pipeline": "plan", "planner": {"theses": 0}},
            ],
            "planner": {"max_steps": 4},
        }
    )
    default, ablation = config.systems
    assert (
        config.qa_settings(default).planner.max_steps == 4 and config.qa_settings(default).planner.theses == 5
    )
    assert (
        config.qa_settings(ablation).planner.theses == 0
        and config.qa_settings(ablation).planner.max_steps == 8
    )
    with pytest.raises(ValueError, match="apply to pipeline 'plan' only"):
        EvalConfig.model_validate(
            {
                "out": str(tmp_path),
                "benchmarks": [{"name": "b", "index": str(tmp_path)}],
                "systems": [
                    {"name": "d", "kind": "qa", "pipeline": "rag", "retriever": "dense", "planner": {}}
                ],
            }
        )
