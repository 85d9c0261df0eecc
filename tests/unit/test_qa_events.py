"""Streamed answers from the pipelines: stage events as they run, the answer call's text as it is
generated, and the same answer as without streaming (timings aside)."""

from __future__ import annotations

from typing import Any

import pytest

from hoprag.planner import Planner, PlannerConfig
from hoprag.qa.events import EventSink, StreamCancelled
from tests.support.planner_llm import Rule, ScriptedPlannerLLM
from tests.support.streaming_llm import StreamingWrapper
from tests.unit.test_planner import QUESTION, _retrieve_mode, _script

TIMINGS = ("seconds", "llm_seconds")


def _untimed(answer: Any) -> dict[str, Any]:
    data = answer.to_dict()
    for key in TIMINGS:
        data.pop(key)
    for step in data["steps"]:
        step.pop("seconds")
    return data


def _sink() -> tuple[EventSink, list[tuple[str, dict[str, Any]]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    return EventSink(lambda kind, data: events.append((kind, data))), events


def _stages(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [d["stage"] for k, d in events if k == "stage"]


def _tokens(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [d["text"] for k, d in events if k == "token"]


@pytest.mark.parametrize("config", [PlannerConfig(), PlannerConfig.paper_like()], ids=["ours", "paper"])
def test_a_streamed_plan_answer_equals_the_plain_one(film_kg, config: PlannerConfig) -> None:
    script = _script(yes_no_final="Answer: yes, both are German.")
    plain = Planner(film_kg, ScriptedPlannerLLM(script), config).answer(QUESTION, top_k=3)
    llm = StreamingWrapper(ScriptedPlannerLLM(script))
    sink, events = _sink()
    streamed = Planner(film_kg, llm, config).answer(QUESTION, top_k=3, events=sink)
    assert _untimed(streamed) == _untimed(plain)
    stages = _stages(events)
    assert stages[0] == "plan" and stages.count("step_answer") == len(plain.steps)
    assert stages.count("seeds") == stages.count("triples") == len(plain.steps)
    assert "".join(_tokens(events)) == plain.answer
    if config.merged_prompts:  # the last update gave the final answer: no answer call to stream
        assert [d.get("final_answer") for k, d in events if k == "stage" and d["stage"] == "update"][
            -1
        ] == "yes"
        assert _tokens(events) == ["yes"] and not llm.streams
    else:  # the final answer call was streamed; a yes/no answer is sent once checked, as one token
        assert len(llm.streams) == 1 and llm.streams[0].finished and llm.streams[0].deltas >= 3
        assert events[-1] == ("token", {"text": "yes"}) and _tokens(events) == ["yes"]
    seeds = next(d for k, d in events if k == "stage" and d["stage"] == "seeds")
    assert seeds["step"] == 0 and {"query", "entities", "entity_source", "seeds"} <= set(seeds)
    assert bool(seeds["seeds"]) == config.dictionary_entities  # the paper's NER call finds none here
    triples = next(d for k, d in events if k == "stage" and d["stage"] == "triples")
    assert triples["triples"] and {"head", "relation", "tail", "score", "source"} == set(
        triples["triples"][0]
    )
    assert triples["clue_queries"] == [c.query for c in plain.steps[0].clues]  # the playground lists them


def test_a_streamed_retrieve_answer_equals_the_plain_one(film_kg, embedder) -> None:
    rules = [Rule("answer", "Carl Boese, the director.", "Document: My Cousin From Warsaw")]
    plain = _retrieve_mode(film_kg, embedder, ScriptedPlannerLLM(rules)).answer("Who directed My Cousin?", 3)
    llm = StreamingWrapper(ScriptedPlannerLLM(rules))
    sink, events = _sink()
    streamed = _retrieve_mode(film_kg, embedder, llm).answer("Who directed My Cousin?", 3, events=sink)
    assert _untimed(streamed) == _untimed(plain) and plain.answer == "Carl Boese, the director"
    assert _stages(events) == ["seeds", "triples"]
    assert _tokens(events)[:2] == ["Carl", " Boese,"] and "".join(_tokens(events)) == plain.answer
    assert [k for k, _ in events][2:] == ["token"] * len(_tokens(events))


def test_a_listener_that_goes_away_stops_the_pipeline_and_the_generation(film_kg, embedder) -> None:
    rules = [Rule("answer", "Carl Boese", "Document: My Cousin From Warsaw")]
    llm = StreamingWrapper(ScriptedPlannerLLM(rules), extra_words=1000)
    events: list[str] = []
    sink = EventSink(lambda kind, data: events.append(kind))
    sink.emit = lambda kind, data: (events.append(kind), kind == "token" and sink.cancel.cancel())  # type: ignore[assignment]
    with pytest.raises(StreamCancelled):
        _retrieve_mode(film_kg, embedder, llm).answer("Who directed My Cousin From Warsaw?", events=sink)
    assert events.count("token") == 1
    assert llm.streams[0].stopped_early and llm.streams[0].deltas < 10
