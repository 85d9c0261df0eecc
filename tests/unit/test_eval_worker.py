"""The evaluation worker in-process: a QA system over real HTTP to a scripted LLM, judged by all
three LLM judges (answer correctness, context relevance, faithfulness)."""

from __future__ import annotations

import json

from evaluation.worker import EvalWorker
from hoprag.llm.openai_server import OpenAIProtocolServer
from tests.support.film_kg import film_questions, write_film_index
from tests.support.planner_llm import Rule, ScriptedPlannerLLM


def test_rag_system_answers_scores_and_is_judged(tmp_path, embedder) -> None:
    index = write_film_index(tmp_path / "index", embedder, questions=True)
    llm = ScriptedPlannerLLM(
        [
            Rule("answer", "Carl Boese", "Question: Who directed My Cousin From Warsaw?"),
            Rule("other", "yes", "Generated answer: Carl Boese"),  # the judge agrees
            Rule("other", "perhaps", "Generated answer: Germany"),  # a verdict neither yes nor no
            # Context relevance: the second question's ratings are unreadable, the others fully relevant.
            Rule("other", "high", "Where was the director of Payment On Demand born?\nContext:"),
            Rule("other", "2", "Rating:"),
            Rule("other", "Carl Boese directed My Cousin From Warsaw.\nHe won an award.", "Statements:"),
            Rule("other", "no", "Statement: He won an award."),
            Rule("other", "yes", "Supported:"),
        ],
        default="Germany",
    )
    with OpenAIProtocolServer(llm, model_name="scripted") as server:
        llm_config = {
            "backend": "openai",
            "openai": {"base_url": server.base_url, "model": "scripted", "prompt_style": "completion"},
        }
        worker = EvalWorker(
            str(index),
            {"name": "dense-rag", "kind": "qa", "pipeline": "rag", "retriever": "dense"},
            {"llm": llm_config},
            [1, 2],
            judge={"enabled": True, "context_relevance": True, "faithfulness": True, "llm": llm_config},
        )
        rows = film_questions()[:3]
        out = worker({"row": [json.dumps(r) for r in rows]})
    first, second, third = (json.loads(r) for r in out["result"])
    assert first["answer"] == "Carl Boese" and first["error"] is None
    assert first["metrics"]["em"] == 1.0 and first["metrics"]["judge"] == 1.0
    assert first["metrics"]["recall@1"] == 1.0 and first["llm_calls"] == 1
    # Two statements, one supported by the retrieved context.
    assert first["metrics"]["context_relevance"] == 1.0 and first["metrics"]["faithfulness"] == 0.5
    assert "invalid_judgements" not in first
    assert first["judge_prompts"] == {
        "judge": "judge-v2",
        "context_relevance": "context-relevance-v2",
        "faithfulness": "faithfulness-v2",
    }
    assert second["answer"] == "Germany" and "judge" not in second["metrics"]
    # Unreadable verdicts are listed, never guessed.
    assert second["invalid_judgements"] == ["judge", "context_relevance"]
    assert "context_relevance" not in second["metrics"]
    assert third["metrics"]["em"] == 1.0  # gold "Germany" for the 3-hop question


def test_entity_level_distance_by_hand(tmp_path, embedder) -> None:
    index = write_film_index(tmp_path / "index", embedder, questions=True)
    worker = EvalWorker(str(index), {"name": "dense", "kind": "retrieval", "retriever": "dense"}, {}, [2])
    rows = film_questions()
    out = [json.loads(r) for r in worker({"row": [json.dumps(r) for r in rows]})["result"]]
    by_id = {r["id"]: r for r in out}
    # "In which country was the director of My Cousin From Warsaw born?": from the seed
    # my cousin from warsaw -> carl boese (1) -> berlin (2) -> germany (3): depth 3.
    assert by_id["film-2"]["analysis"]["entity_distance"] == 3
    # "Who directed My Cousin From Warsaw?": supporting entities carl boese (1) besides the seed.
    assert by_id["film-0"]["analysis"]["entity_distance"] == 1
    assert "retrieved_similarity" not in by_id["film-0"]["analysis"]  # dense scores no entities
    from evaluation.questions import select_questions
    from hoprag.kg.index import KGIndex

    _, report = select_questions(KGIndex(index))
    assert report.questions == len(rows) and report.missing_supporting_docs == 1


def test_a_plan_system_records_its_steps_and_scores_them_against_a_gold_decomposition(
    tmp_path, embedder
) -> None:
    index = write_film_index(tmp_path / "index", embedder, questions=True)
    # one-step plans ("1. x"), every step answered "Curtis Bernhardt", the final answer "Germany"
    llm = ScriptedPlannerLLM([Rule("answer", "Curtis Bernhardt"), Rule("final", "Germany")], default="1. x")
    with OpenAIProtocolServer(llm, model_name="scripted") as server:
        llm_config = {
            "backend": "openai",
            "openai": {"base_url": server.base_url, "model": "scripted", "prompt_style": "completion"},
        }
        worker = EvalWorker(
            str(index), {"name": "plan", "kind": "qa", "pipeline": "plan"}, {"llm": llm_config}, [2]
        )
        first, second = film_questions()[:2]
        gold = [
            {"question": "Who directed Payment On Demand?", "answer": "Curtis Bernhardt"},
            {"question": "Where was #1 born?", "answer": "Worms"},
        ]
        rows = [
            {**first, "meta": first["metadata"]},
            {**second, "meta": {**second["metadata"], "decomposition": gold}},
        ]
        out = [json.loads(r) for r in worker({"row": [json.dumps(r) for r in rows]})["result"]]
    assert all(r["error"] is None for r in out)
    assert out[1]["steps"] and all(s["answer"] == "Curtis Bernhardt" for s in out[1]["steps"])
    assert out[1]["metrics"]["step_recall"] == 1.0  # the one intermediate answer was found by a step
    assert "step_recall" not in out[0]["metrics"]  # no gold decomposition, no step score
    assert "step_evidence_recall" in out[1]["metrics"]  # the planner says what its steps were shown
    assert "step_evidence_recall" not in out[0]["metrics"]


def test_step_evidence_recall_tells_a_hop_the_llm_missed_from_one_the_search_never_reached() -> None:
    from evaluation.worker import score_steps

    gold = [
        {"question": "Who directed Payment On Demand?", "answer": "Curtis Bernhardt"},
        {"question": "Where was #1 born?", "answer": "Worms"},
    ]
    row = {"question": "Where was the director of Payment On Demand born?", "meta": {"decomposition": gold}}
    steps = [{"query": "Who directed Payment On Demand?", "answer": "Frank Capra"}]
    shown = ["Payment On Demand | directed by | Curtis Bernhardt", "Payment On Demand: a 1951 film."]
    assert score_steps(row, steps, shown) == {
        "step_recall": 0.0,
        "step_evidence_recall": 1.0,
    }  # shown, missed
    assert score_steps(row, steps, shown[1:]) == {
        "step_recall": 0.0,
        "step_evidence_recall": 0.0,
    }  # never reached
    assert score_steps(row, steps) == {"step_recall": 0.0}  # a system that does not say what it showed
    assert score_steps({"question": row["question"]}, steps, shown) == {}  # no decomposition
