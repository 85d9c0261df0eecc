"""The PAI-2 loop driven by a scripted LLM on the paper's "Payment On Demand" case."""

from __future__ import annotations

import pytest

from hoprag.planner import NOT_ENOUGH_INFO, Planner, PlannerConfig, PlannerInputError
from hoprag.planner import prompts as P
from tests.support.planner_llm import Rule, ScriptedPlannerLLM

QUESTION = "Do both films Payment On Demand and My Cousin From Warsaw have directors from the same country?"
PLAN = (
    "1. Who is the director of Payment On Demand?\n"
    "2. Who is the director of My Cousin From Warsaw?\n"
    "3. What country is [director of Payment On Demand] from?\n"
    "4. What country is [director of My Cousin From Warsaw] from?"
)
FILLED = "3. What country is Curtis Bernhardt from?\n4. What country is Carl Boese from?"


def _script(**overrides: str) -> list[Rule]:
    rules = {
        "plan": Rule("plan", PLAN),
        "a1": Rule("answer", "Curtis Bernhardt", "Question: Who is the director of Payment On Demand?"),
        "a2": Rule("answer", "Carl Boese", "Question: Who is the director of My Cousin From Warsaw?"),
        "a3": Rule("answer", "Germany", "Question: What country is Curtis Bernhardt from?"),
        "a4": Rule("answer", "Germany", "Question: What country is Carl Boese from?"),
        "final": Rule("update", "Final answer: yes", "4. What country is Carl Boese from? -> Germany"),
        "fill": Rule(
            "update", FILLED, "2. Who is the director of My Cousin From Warsaw? -> Carl Boese\nRemaining"
        ),
        "keep": Rule(
            "update", PLAN.split("\n", 1)[1], "1. Who is the director of Payment On Demand? -> Curtis"
        ),
        "summary": Rule("summary", "Germany", "What country"),
        "final_answer": Rule("final", "yes"),
        # a yes/no question's final answer is asked with the answer prompt over all steps' facts
        "yes_no_final": Rule("answer", "yes", f"Question: {QUESTION}"),
        "answerable": Rule("answerable", "yes", "4. What country is Carl Boese from? -> Germany"),
    }
    rules.update({k: Rule(**{**rules[k].__dict__, "response": v}) for k, v in overrides.items()})
    return list(rules.values())  # first match wins: the final update is listed before the others


def test_plan_enhancement_fills_placeholders_from_earlier_steps(film_kg) -> None:
    llm = ScriptedPlannerLLM(_script())
    result = Planner(film_kg, llm).answer(QUESTION)
    assert result.answer == "yes" and not result.not_enough_info
    assert [s.query for s in result.steps] == [
        "Who is the director of Payment On Demand?",
        "Who is the director of My Cousin From Warsaw?",
        "What country is Curtis Bernhardt from?",
        "What country is Carl Boese from?",
    ]
    assert result.plans[0][2] == "What country is [director of Payment On Demand] from?"
    # after step 1 only the placeholder naming it is filled; step 2's waits for step 2
    assert result.plans[1][2:] == [
        "What country is Curtis Bernhardt from?",
        "What country is [director of My Cousin From Warsaw] from?",
    ]
    assert result.plans[-1][2:] == [
        "What country is Curtis Bernhardt from?",
        "What country is Carl Boese from?",
    ]
    step3 = result.steps[2]
    assert step3.entity_source == "dictionary" and step3.matches["curtis bernhardt"][0][2] is True
    assert step3.seed_sources == {"curtis bernhardt": "dictionary"}
    assert "Curtis Bernhardt | born in | Worms" in [t.text for c in step3.clues for t in c.triples]
    # every answer cites the evidence that states it
    cited = {(c.kind, c.text) for c in result.steps[0].citations}
    assert ("triple", "Payment On Demand | directed by | Curtis Bernhardt") in cited
    assert ("thesis", "Payment On Demand directed by Curtis Bernhardt.") in cited  # the passage's statement
    # only what states the answer about the step's subject: not "Curtis Bernhardt | born in | Worms"
    assert all("Payment On Demand" in text and "Curtis Bernhardt" in text for _, text in cited)
    assert all(s.citations and not s.found_nothing for s in result.steps)
    # substitution rewrites the plan without update calls: plan, 4 step answers, and one update
    # after the last step, which gives the final answer
    assert llm.kinds() == ["plan", "answer", "answer", "answer", "answer", "update"]
    assert result.llm_calls == 6 and result.calls_by_purpose["update"] == 1
    assert result.documents and result.documents[0].title in {
        "Curtis Bernhardt",
        "Payment On Demand",
        "Carl Boese",
    }


def test_the_llm_update_rewrites_the_plan_when_substitution_is_off(film_kg) -> None:
    llm = ScriptedPlannerLLM(_script())
    result = Planner(film_kg, llm, PlannerConfig(fill_placeholders=False)).answer(QUESTION)
    assert result.answer == "yes"
    assert result.plans[-1][2:] == [
        "What country is Curtis Bernhardt from?",
        "What country is Carl Boese from?",
    ]
    # plan, 4 step answers, updates after steps 1 and 2 (placeholders waiting), none after 3
    # (step 4 needs nothing from it), one after 4 that gives the final answer.
    assert llm.kinds() == ["plan", "answer", "update", "answer", "update", "answer", "answer", "update"]
    assert result.llm_calls == 8 and result.calls_by_purpose["update"] == 3


def test_the_last_step_of_a_chain_answers_and_a_missing_answer_is_not_guessed(film_kg) -> None:
    plan = Rule(
        "plan",
        "1. Who is the director of Payment On Demand?\n2. Who is the spouse of [director of Payment On Demand]?",
    )
    rules = [
        plan,
        Rule("answer", "Curtis Bernhardt", "Question: Who is the director of Payment On Demand?"),
        Rule("answer", "Pearl Argyle", "Question: Who is the spouse of Curtis Bernhardt?"),
    ]
    llm = ScriptedPlannerLLM(rules)
    question = "Who is the spouse of the director of Payment On Demand?"
    result = Planner(film_kg, llm).answer(question)
    assert [s.query for s in result.steps][1] == "Who is the spouse of Curtis Bernhardt?"
    assert result.answer == "Pearl Argyle"
    assert "Curtis Bernhardt | spouse | Pearl Argyle" in [c.text for c in result.steps[1].citations]
    assert llm.kinds() == ["plan", "answer", "answer"]  # no update, no restating final call

    # step 1 answers with a name no evidence states: recorded as found nothing, and step 2 searches
    # for the description instead of the guess
    guessing = ScriptedPlannerLLM(
        [
            plan,
            Rule("answer", "Orson Welles", "Question: Who is the director of Payment On Demand?"),
            Rule("answer", "unknown"),
            Rule("final", "unknown"),
        ]
    )
    result = Planner(film_kg, guessing).answer(question)
    first = result.steps[0]
    assert first.found_nothing and first.answer == "" and not first.citations
    assert any("stated by none" in d for d in first.degraded)
    assert result.steps[1].query == "Who is the spouse of director of Payment On Demand?"
    assert result.not_enough_info


def test_the_question_fallback_searches_the_question_whole_when_the_plan_finds_nothing(film_kg) -> None:
    question = "Who is the spouse of the director of Payment On Demand?"
    rules = [
        # a wrong first hop: the plan's steps find nothing the final answer can stand on
        Rule(
            "plan",
            "1. Who produced Payment On Demand?\n2. Who is the spouse of [producer of Payment On Demand]?",
        ),
        Rule("answer", "Pearl Argyle", f"Question: {question}"),
        Rule("answer", "unknown"),
        Rule("final", "unknown"),
    ]
    off = Planner(film_kg, ScriptedPlannerLLM(rules)).answer(question)
    assert off.not_enough_info and len(off.steps) == 2
    llm = ScriptedPlannerLLM(rules)
    result = Planner(film_kg, llm, PlannerConfig(question_fallback=True)).answer(question)
    assert result.answer == "Pearl Argyle" and not result.not_enough_info
    assert [s.query for s in result.steps][-1] == question and len(result.steps) == 3
    assert "Curtis Bernhardt | spouse | Pearl Argyle" in [c.text for c in result.steps[-1].citations]
    assert result.plans[-1][-1] == question
    assert any(n.startswith("question_fallback: the plan found no answer") for n in result.notes)
    assert result.llm_calls == off.llm_calls + 1  # one step answer more
    # a step answering with a name its own question holds found nothing, and a final answer that
    # is a hop on the way (step 1's answer) is no answer: the fallback searches the question
    echoing = [
        Rule(
            "plan",
            "1. Who is the director of Payment On Demand?\n2. Who is the spouse of [director of Payment On Demand]?",
        ),
        Rule("answer", "Curtis Bernhardt", "Question: Who is the director of Payment On Demand?"),
        Rule("answer", "Curtis Bernhardt", "Question: Who is the spouse of Curtis Bernhardt?"),
        Rule("answer", "Pearl Argyle", f"Question: {question}"),
        Rule("update", "Final answer: Curtis Bernhardt"),
        Rule("final", "Curtis Bernhardt"),
    ]
    result = Planner(film_kg, ScriptedPlannerLLM(echoing), PlannerConfig(question_fallback=True)).answer(
        question
    )
    assert result.steps[1].found_nothing
    assert any("named by the step's own question" in d for d in result.steps[1].degraded)
    assert any("is an intermediate answer" in n for s in result.steps for n in [*s.degraded, *result.notes])
    assert result.answer == "Pearl Argyle" and [s.query for s in result.steps][-1] == question
    # a plan that searched the question itself is not searched again
    whole = [Rule("plan", f"1. {question}"), Rule("answer", "unknown"), Rule("final", "unknown")]
    again = Planner(film_kg, ScriptedPlannerLLM(whole), PlannerConfig(question_fallback=True)).answer(
        question
    )
    assert again.not_enough_info and len(again.steps) == 1
    assert not any(n.startswith("question_fallback") for n in again.notes)


def test_early_stop_when_the_update_answers(film_kg) -> None:
    rules = [
        Rule("plan", "1. Who is the spouse of Curtis Bernhardt?\n2. When was [spouse] born?"),
        Rule("answer", "Pearl Argyle"),
        Rule("update", "Final answer: Pearl Argyle"),
    ]
    llm = ScriptedPlannerLLM(rules)
    # substitution off: the update call is what can stop a plan early
    config = PlannerConfig(fill_placeholders=False)
    result = Planner(film_kg, llm, config).answer("Who is the spouse of Curtis Bernhardt?")
    assert result.answer == "Pearl Argyle" and len(result.steps) == 1
    assert "final" not in llm.kinds()


def test_paper_like_pattern_costs_more_calls_than_ours_for_the_same_answer(film_kg) -> None:
    ours_llm, paper_llm = ScriptedPlannerLLM(_script()), ScriptedPlannerLLM(_script())
    ours = Planner(film_kg, ours_llm).answer(QUESTION)
    paper = Planner(film_kg, paper_llm, PlannerConfig.paper_like()).answer(QUESTION)
    assert ours.answer == paper.answer == "yes"
    assert paper.llm_calls > ours.llm_calls
    kinds = set(paper_llm.kinds())
    assert {"plan", "entities", "answer", "summary", "enhance", "answerable"} <= kinds
    # the yes/no question's final answer: the answer prompt on the whole question, not "final"
    assert "final" not in kinds and paper_llm.prompts[-1] == ("answer", paper_llm.prompts[-1][1])
    assert f"Question: {QUESTION}" in paper_llm.prompts[-1][1]
    assert max(paper_llm.batches) == 1  # no batching in the paper-like pattern


def test_independent_calls_of_a_step_go_as_one_batch(film_kg) -> None:
    # The mention "Bernhardt Boese" is not a vertex name: it fuzzy-matches several vertices, so the
    # step has one clue query per vertex, rewritten by the LLM in one batch, and (paper-style
    # answers) one clue answer per clue query, again in one batch.
    rules = [
        Rule("plan", "1. Where was Bernhardt Boese born?"),
        Rule("entities", "Bernhardt Boese"),
        Rule("clue_query", "Where was Curtis Bernhardt born?", "= Curtis Bernhardt"),
        Rule("clue_query", "Where was Carl Boese born?", "= Carl Boese"),
        Rule("answer", "Worms"),
    ]
    config = PlannerConfig(merged_prompts=False, dictionary_entities=False, literal_clue_queries=False)
    llm = ScriptedPlannerLLM(rules)
    result = Planner(film_kg, llm, config).answer("Where was Bernhardt Boese born?")
    clues = result.steps[0].clues
    assert {"Where was Curtis Bernhardt born?", "Where was Carl Boese born?"} <= {c.query for c in clues}
    assert llm.batches.count(len(clues)) == 2  # the rewrites, then the clue answers
    assert result.calls_by_purpose["clue_answer"] == len(clues)  # a batch of k prompts is k calls
    unbatched = ScriptedPlannerLLM(rules)
    Planner(film_kg, unbatched, config.model_copy(update={"batch_calls": False})).answer(
        "Where was Bernhardt Boese born?"
    )
    assert max(unbatched.batches) == 1 and len(unbatched.prompts) == len(llm.prompts)


def test_cache_makes_a_repeated_question_free(film_kg) -> None:
    llm = ScriptedPlannerLLM(_script())
    planner = Planner(film_kg, llm)
    first = planner.answer(QUESTION)
    second = planner.answer(QUESTION)
    assert first.llm_calls == 6 and second.llm_calls == 0 and second.cache_hits == 6
    assert second.answer == first.answer
    no_cache = Planner(film_kg, ScriptedPlannerLLM(_script()), PlannerConfig(cache_size=0))
    no_cache.answer(QUESTION)
    assert no_cache.answer(QUESTION).llm_calls == 6


def test_a_new_planner_can_adopt_the_answers_an_old_one_cached(film_kg) -> None:
    """What a serving replica does when it swaps to a new index snapshot."""
    llm = ScriptedPlannerLLM(_script())
    old = Planner(film_kg, llm)
    old.answer(QUESTION)
    new = Planner(film_kg, llm)
    new.client.adopt_cache(old.client)
    again = new.answer(QUESTION)
    assert again.llm_calls == 0 and again.cache_hits == 6
    bounded = Planner(film_kg, llm, PlannerConfig(cache_size=3))
    bounded.client.adopt_cache(old.client)
    assert len(bounded.client._cache) == 3  # the newest entries, within its own bound


def test_malformed_outputs_degrade_steps_never_the_question(film_kg) -> None:
    rules = [
        Rule("plan", "Sure! Here is what I think about films."),  # no numbered steps
        Rule("answer", "", "Question"),  # empty answer
        Rule("update", "(((garbage"),
        Rule("final", "", error="timeout"),
    ]
    result = Planner(film_kg, ScriptedPlannerLLM(rules)).answer("Who directed Payment On Demand?")
    assert result.answer == NOT_ENOUGH_INFO and result.not_enough_info
    assert "plan: unusable output, the question is the only step" in result.notes
    assert [s.query for s in result.steps] == ["Who directed Payment On Demand?"]
    degraded = result.steps[0].degraded
    assert "step_answer: empty answer" in degraded
    assert "update: neither a final answer nor numbered steps" in degraded and "update: plan kept" in degraded


def test_a_question_without_matchable_entities_still_searches(film_kg) -> None:
    rules = [
        Rule("plan", "1. Which drug cures Zorblax?"),
        Rule("entities", "Zorblax"),
        Rule("answer", "Ostarizumab"),
        Rule("update", "Final answer: Ostarizumab"),
    ]
    result = Planner(film_kg, ScriptedPlannerLLM(rules), PlannerConfig(traversals=["beam", "naive"])).answer(
        "Which drug cures Zorblax?"
    )
    step = result.steps[0]
    assert step.entity_source == "llm" and step.matches == {"Zorblax": []} and step.seed_sources == {}
    assert any("no entity matched" in d for d in step.degraded)
    assert "Ostarizumab | treats | Kellan fever" in [
        t.text for t in step.clues[0].triples
    ]  # naive needs no seed
    assert result.answer == "Ostarizumab"


def test_max_steps_bounds_an_ever_growing_plan(film_kg) -> None:
    rules = [Rule("plan", "1. Who is [a]?\n2. Who is [b]?"), Rule("update", "2. Who is [c]?\n3. Who is [d]?")]
    result = Planner(film_kg, ScriptedPlannerLLM(rules), PlannerConfig(max_steps=3)).answer("Who is it?")
    assert len(result.steps) == 3
    assert any("max_steps=3" in n for n in result.notes)


@pytest.mark.parametrize("budget", [4, 5, 6, 7])
def test_the_call_budget_holds_and_leaves_the_final_answer_a_call(film_kg, budget: int) -> None:
    # Without substitution the Payment On Demand case costs 8 calls (the test above). Under a
    # smaller budget the search stops early, says so, and still asks for the final answer.
    llm = ScriptedPlannerLLM(_script())
    config = PlannerConfig(fill_placeholders=False, max_llm_calls=budget)
    result = Planner(film_kg, llm, config).answer(QUESTION)
    assert result.llm_calls <= budget
    assert any(f"max_llm_calls={budget}" in n for n in result.notes)
    assert llm.kinds()[-1] in ("final", "answer")  # the last call answers the question


def test_an_ever_growing_plan_stops_at_the_call_budget_before_max_steps(film_kg) -> None:
    rules = [Rule("plan", "1. Who is [a]?\n2. Who is [b]?"), Rule("update", "2. Who is [c]?\n3. Who is [d]?")]
    config = PlannerConfig(max_steps=32, max_llm_calls=12)
    result = Planner(film_kg, ScriptedPlannerLLM(rules), config).answer("Who is it?")
    assert result.llm_calls <= 12 and len(result.steps) < 32
    assert any("max_llm_calls=12" in n for n in result.notes)
    unlimited = Planner(film_kg, ScriptedPlannerLLM(rules), PlannerConfig(max_steps=32, max_llm_calls=None))
    assert unlimited.answer("Who is it?").llm_calls > 12


@pytest.mark.parametrize("question", ["", "   ", "x" * 3000])
def test_empty_and_huge_questions_are_refused(film_kg, question: str) -> None:
    with pytest.raises(PlannerInputError):
        Planner(film_kg, ScriptedPlannerLLM([])).answer(question)


def test_glm_traversal_needs_a_retriever(film_kg) -> None:
    with pytest.raises(ValueError, match="retriever"):
        Planner(film_kg, ScriptedPlannerLLM([]), PlannerConfig(traversals=["glm"]))


def test_decomposition_answers_sub_questions_and_aggregates(film_kg) -> None:
    rules = [
        Rule("decompose", "1. When was Curtis Bernhardt born?\n2. When was Carl Boese born?"),
        Rule("plan", "1. Where was Curtis Bernhardt born?", "Curtis"),
        Rule("plan", "1. Where was Carl Boese born?", "Carl"),
        Rule("answer", "Worms", "Question: When was Curtis"),
        Rule("answer", "Berlin", "Question: When was Carl"),
        Rule("update", "Final answer: Worms", "Curtis"),
        Rule("update", "Final answer: Berlin", "Carl"),
        Rule("final", "Worms and Berlin"),
    ]
    llm = ScriptedPlannerLLM(rules)
    result = Planner(film_kg, llm, PlannerConfig(decompose=True)).answer(
        "Where were Curtis Bernhardt and Carl Boese born?"
    )
    assert result.sub_answers == [
        ("When was Curtis Bernhardt born?", "Worms"),
        ("When was Carl Boese born?", "Berlin"),
    ]
    assert result.answer == "Worms and Berlin" and result.calls_by_purpose["aggregate"] == 1
    # each one-step plan restated its sub-question: the sub-question itself was searched
    assert result.plans == [["When was Curtis Bernhardt born?"], ["When was Carl Boese born?"]]
    assert sum("the question itself is searched" in n for n in result.notes) == 2


def test_glm_traversal_brings_documents_into_the_answer_prompt(film_kg, embedder) -> None:
    import torch

    from hoprag.glm.backbone import BackboneConfig, build_backbone, load_tokenizer
    from hoprag.glm.encoder import GraphT5Encoder
    from hoprag.glm.model import GLMRetrieverModel
    from hoprag.glm.retriever import GLMRetriever, GLMSettings

    cfg = BackboneConfig(num_layers=1)
    torch.manual_seed(0)
    model = GLMRetrieverModel(GraphT5Encoder(build_backbone(cfg)), question_dim=384).eval()
    glm = GLMRetriever(film_kg.index, model, load_tokenizer(cfg), GLMSettings(), embedder)
    llm = ScriptedPlannerLLM([Rule("plan", "1. Where was Curtis Bernhardt born?"), Rule("answer", "Worms")])
    config = PlannerConfig(traversals=["glm"], context_documents=2)
    result = Planner(film_kg, llm, config, retriever=glm).answer("Where was Curtis Bernhardt born?")
    clue = result.steps[0].clues[0]
    assert clue.documents and all(t.source == "glm" for t in clue.triples)
    assert any("curtis bernhardt" in (t.head.lower(), t.tail.lower()) for t in clue.triples)
    answer_block = next(b for k, b in llm.prompts if k == "answer")
    assert answer_block.count("Document: ") == 2
    assert result.documents[0].title in {d.title for d in clue.documents}


def test_output_copied_from_the_prompt_examples_is_not_an_answer(film_kg) -> None:
    # A small base model may repeat the few-shot examples: their plan and their answer.
    rules = [
        Rule("plan", PLAN),  # the example's plan, for a question about something else
        Rule("answer", "Worms"),  # an example's answer, absent from the facts shown
        Rule("update", "Final answer: Pearl Argyle"),
        Rule("final", "Pearl Argyle"),
    ]
    beam_only = PlannerConfig(traversals=["beam"])  # facts about the drug only, none naming Pearl Argyle
    result = Planner(film_kg, ScriptedPlannerLLM(rules), beam_only).answer("Which drug treats Kellan fever?")
    assert "plan: unusable output, the question is the only step" in result.notes
    step = result.steps[0]
    assert "step_answer: output copied from the prompt's examples" in step.degraded
    assert "update: output copied from the prompt's examples" in step.degraded
    assert result.answer == NOT_ENOUGH_INFO


def test_a_plan_step_naming_what_only_the_examples_name_is_dropped(film_kg) -> None:
    # Not a verbatim copy ("wife", not "spouse"), but about the examples' film, not the question.
    rules = [
        Rule(
            "plan",
            "1. Which drug treats Kellan fever?\n2. Who is the wife of the director of Payment On Demand?",
        ),
        Rule("answer", "Ostarizumab"),
    ]
    llm = ScriptedPlannerLLM(rules)
    result = Planner(film_kg, llm, PlannerConfig(traversals=["beam", "naive"])).answer(
        "Which drug treats Kellan fever?"
    )
    assert result.plans[0] == ["Which drug treats Kellan fever?"]
    assert result.answer == "Ostarizumab"
    # the same step is kept where the question names that film
    assert not P.names_example_only(
        "Example: Payment On Demand\n\nQuestion: Who directed Payment On Demand?",
        "Who is the wife of the director of Payment On Demand?",
    )


def test_denoise_and_enhance_rewrite_the_question_first(film_kg) -> None:
    rules = [
        Rule("rewrite", "Who directed Payment On Demand?", "my friend"),
        Rule("rewrite", "", "Who directed Payment On Demand?"),  # enhance fails: question kept
        Rule("plan", "1. Who directed Payment On Demand?"),
        Rule("answer", "Curtis Bernhardt"),
        Rule("update", "Final answer: Curtis Bernhardt"),
    ]
    config = PlannerConfig(denoise=True, enhance_question=True)
    result = Planner(film_kg, ScriptedPlannerLLM(rules), config).answer(
        "So my friend asked me, who directed Payment On Demand?"
    )
    assert result.plans == [["Who directed Payment On Demand?"]] and result.answer == "Curtis Bernhardt"
    assert result.calls_by_purpose["denoise_question"] == result.calls_by_purpose["enhance_question"] == 1
    assert "enhance_question: unusable output, question kept" in result.notes


def _retrieve_mode(film_kg, embedder, llm, **retrieve):
    from hoprag.qa.builder import assemble_qa_system, retrieval_components
    from hoprag.qa.config import QASettings, RetrieveModeSettings
    from hoprag.retrieval.dense import DenseRetriever

    components = retrieval_components(film_kg.index, DenseRetriever(film_kg.index, embedder), embedder, llm)
    return assemble_qa_system(components, QASettings(retrieve=RetrieveModeSettings(**retrieve)), "retrieve")


def test_retrieve_mode_answers_in_one_call_from_documents_and_triples(film_kg, embedder) -> None:
    llm = ScriptedPlannerLLM([Rule("answer", "Carl Boese", "Document: My Cousin From Warsaw")])
    qa = _retrieve_mode(film_kg, embedder, llm, context_documents=2)
    result = qa.answer("Who directed My Cousin From Warsaw?", top_k=3)
    assert result.answer == "Carl Boese" and result.llm_calls == 1
    assert result.documents[0].title == "My Cousin From Warsaw" and len(result.documents) == 3
    assert result.steps[0].entities == ["my cousin from warsaw"]
    assert result.steps[0].seed_sources == {"my cousin from warsaw": "dictionary"}
    with pytest.raises(PlannerInputError):
        qa.answer("  ")
    failing = _retrieve_mode(film_kg, embedder, ScriptedPlannerLLM([Rule("answer", "", error="timeout")]))
    degraded = failing.answer("Who directed My Cousin From Warsaw?")
    assert degraded.not_enough_info and degraded.steps[0].degraded == ["answer: LLM error timeout"]


def test_retrieve_mode_traces_the_seeds_ppr_picked_and_the_evidence_graph_rings_them(
    film_kg, embedder
) -> None:
    from hoprag.qa.builder import assemble_qa_system, retrieval_components
    from hoprag.qa.config import QASettings
    from hoprag.retrieval.ppr import PPRRetriever
    from serving.evidence_graph import build_graph

    llm = ScriptedPlannerLLM([Rule("answer", "Carl Boese", "Document: My Cousin From Warsaw")])
    components = retrieval_components(film_kg.index, PPRRetriever(film_kg.index, embedder), embedder, llm)
    qa = assemble_qa_system(components, QASettings(), "retrieve")
    answer = qa.answer("Who directed My Cousin From Warsaw?", top_k=3)
    sources = answer.steps[0].seed_sources
    assert sources["my cousin from warsaw"] == "dictionary"  # the linker's seed keeps its linker
    picked = [name for name, source in sources.items() if source == "retriever"]
    assert picked and all(film_kg.index.entity_id(name) is not None for name in picked)
    ringed = {n.entity.lower() for n in build_graph(answer.to_dict()).nodes if n.seed}
    assert set(picked) <= ringed


def test_retrieve_mode_batches_and_keeps_a_refused_question_in_its_place(film_kg, embedder) -> None:
    llm = ScriptedPlannerLLM([Rule("answer", "Carl Boese", "Document: My Cousin From Warsaw")], default="x")
    qa = _retrieve_mode(film_kg, embedder, llm, context_documents=1)
    first, refused, third = qa.answer_batch(
        ["Who directed My Cousin From Warsaw?", " ", "Who is the spouse of Curtis Bernhardt?"], top_k=2
    )
    assert isinstance(refused, PlannerInputError)
    assert first.answer == "Carl Boese" and third.answer == "x"
    assert first.llm_calls == third.llm_calls == 1 and llm.batches == [2]  # one batch, a call each
    assert [d.title for d in first.documents][:1] == ["My Cousin From Warsaw"] and len(third.documents) == 2
    # Each prompt holds one document (context_documents=1; the default would give 3).
    block = next(b for k, b in llm.prompts if "Who directed My Cousin" in b)
    assert [line for line in block.splitlines() if line.startswith("Document: ")] == [
        "Document: My Cousin From Warsaw: My Cousin From Warsaw directed by Carl Boese."
    ]


def test_a_failing_traversal_degrades_to_a_note(film_kg) -> None:
    from hoprag.planner.traversal.naive import NaiveTraversal

    class Broken:
        name = "broken"

        def retrieve(self, query):
            raise RuntimeError("replica died")

    rules = [
        Rule("plan", "1. Who directed My Cousin From Warsaw?"),
        Rule("answer", "Carl Boese"),
        Rule("update", "Final answer: Carl Boese"),
    ]
    planner = Planner(film_kg, ScriptedPlannerLLM(rules), traversals=[Broken(), NaiveTraversal(film_kg)])
    result = planner.answer("Who directed My Cousin From Warsaw?")
    clue = result.steps[0].clues[0]
    assert "broken: failed (RuntimeError)" in clue.notes and clue.triples
    assert result.answer == "Carl Boese"


@pytest.mark.parametrize(
    "plan",
    ["1. Who directed Payment On Demand?", "Sure! Here is what I think about films."],
    ids=["the question as its one step", "unusable plan"],
)
def test_a_plan_that_is_the_question_itself_answers_with_its_step(film_kg, plan: str) -> None:
    """One step that is the question: its answer is final, with no update or final-answer call to
    restate it (or lose it: a small model restating tends to answer with a name from the question)."""
    rules = [
        Rule("plan", plan),
        Rule("answer", "Curtis Bernhardt"),
        Rule("update", "Final answer: Payment On Demand"),
        Rule("final", "Payment On Demand"),
    ]
    llm = ScriptedPlannerLLM(rules)
    result = Planner(film_kg, llm).answer("Who directed Payment On Demand?")
    assert result.answer == "Curtis Bernhardt" and llm.kinds() == ["plan", "answer"]
    paper = ScriptedPlannerLLM(rules)  # the paper's call pattern keeps its answerability and final calls
    Planner(film_kg, paper, PlannerConfig.paper_like()).answer("Who directed Payment On Demand?")
    assert "final" in paper.kinds()


YES_NO = "Are Curtis Bernhardt and Carl Boese from the same country?"
YES_NO_PLAN = "1. What country is Curtis Bernhardt from?\n2. What country is Carl Boese from?"


def test_a_yes_no_question_answered_with_a_name_is_asked_again_from_all_steps_facts(film_kg) -> None:
    # The base model's update answered the demo's yes/no question with a name found on the way.
    rules = [
        Rule("plan", YES_NO_PLAN),
        Rule("answer", "Yes", f"Question: {YES_NO}"),
        Rule("answer", "Germany", "Question: What country"),
        Rule("update", "Final answer: Germany"),
    ]
    llm = ScriptedPlannerLLM(rules)
    result = Planner(film_kg, llm).answer(YES_NO)
    assert result.answer == "Yes" and not result.not_enough_info
    assert result.steps[-1].degraded == [
        "update: 'Germany' does not answer a yes/no question; the final answer is asked from the findings"
    ]
    assert not any("max_steps" in n for n in result.notes)  # the search ended, it was not cut short
    assert llm.kinds()[-2:] == ["update", "answer"] and "final" not in llm.kinds()
    final_prompt = llm.prompts[-1][1]
    for step in result.steps:  # every step's facts, side by side
        for triple in (t for c in step.clues for t in c.triples):
            assert f"- {triple.text}" in final_prompt


def test_a_yes_no_question_without_a_yes_or_no_answer_has_not_enough_info(film_kg) -> None:
    rules = [
        Rule("plan", YES_NO_PLAN),
        Rule("answer", "Germany"),
        Rule("update", "Final answer: Germany"),
    ]
    result = Planner(film_kg, ScriptedPlannerLLM(rules)).answer(YES_NO)
    assert result.answer == NOT_ENOUGH_INFO and result.not_enough_info
    assert result.notes[-1] == "final_answer: 'Germany' does not answer a yes/no question"


def test_a_yes_to_an_open_step_is_no_step_answer(film_kg) -> None:
    rules = [Rule("plan", "1. Who directed My Cousin From Warsaw?"), Rule("answer", "yes")]
    result = Planner(film_kg, ScriptedPlannerLLM(rules)).answer("Who directed My Cousin From Warsaw?")
    assert result.steps[0].answer == "" and result.not_enough_info
    assert result.steps[0].degraded[0].startswith("step_answer: 'yes' answers yes/no")


def test_retrieve_mode_checks_the_answer_kind(film_kg, embedder) -> None:
    llm = ScriptedPlannerLLM([Rule("answer", "Germany", "Question: Are"), Rule("answer", "Yes")])
    qa = _retrieve_mode(film_kg, embedder, llm)
    wrong_kind, open_yes = qa.answer_batch([YES_NO, "Who directed My Cousin From Warsaw?"])
    assert wrong_kind.not_enough_info and wrong_kind.answer == NOT_ENOUGH_INFO
    assert wrong_kind.steps[0].degraded == ["answer: 'Germany' does not answer a yes/no question"]
    assert open_yes.not_enough_info and open_yes.steps[0].degraded[0].startswith("answer: 'Yes' answers")
    right = _retrieve_mode(film_kg, embedder, ScriptedPlannerLLM([Rule("answer", "yes, both")]))
    assert right.answer(YES_NO).answer == "yes"
