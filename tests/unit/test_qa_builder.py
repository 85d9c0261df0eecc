"""The one QA-system builder: every mode from one typed config, the same rules for all callers."""

from __future__ import annotations

import pytest

from hoprag.qa.builder import assemble_qa_system, build_qa_system, load_components
from hoprag.qa.config import QASettings, QASystemConfig
from hoprag.qa.system import QA_MODES, QASystem
from tests.support.film_kg import write_film_index
from tests.support.planner_llm import Rule, ScriptedPlannerLLM


@pytest.fixture(scope="module")
def film_index(tmp_path_factory, embedder):
    return write_film_index(tmp_path_factory.mktemp("qa-builder") / "index", embedder, questions=True)


def test_every_mode_is_a_qa_system_and_answers(film_index) -> None:
    llm = ScriptedPlannerLLM([Rule("answer", "Carl Boese"), Rule("final", "Carl Boese")], default="1. x")
    for mode in QA_MODES:
        system = build_qa_system(QASystemConfig(index=str(film_index), mode=mode), llm=llm)
        assert isinstance(system, QASystem) and system.mode == mode
        answer = system.answer("Who directed My Cousin From Warsaw?", top_k=2)
        assert len(answer.documents) <= 2 and answer.llm_calls >= 1
    # retrieve mode without a retriever named: routed, dense with the shipped GLM and PPR (docs/ppr.md)
    retrieve = build_qa_system(QASystemConfig(index=str(film_index)), llm=llm)
    assert retrieve.retriever.name.startswith("routed:")  # type: ignore[attr-defined]
    parts = [r.name for r in retrieve.retriever.retrievers]  # type: ignore[attr-defined]
    assert parts[0].startswith("dense") and parts[1].startswith("glm:") and parts[2] == "ppr", parts


def test_a_retriever_joins_the_planner_as_glm_only_when_given(film_index) -> None:
    llm = ScriptedPlannerLLM([])
    without = load_components(film_index, QASettings(), llm=llm)
    with_dense = load_components(film_index, QASettings(), retriever="dense", llm=llm)
    names = lambda c: [t.name for t in assemble_qa_system(c, QASettings(), "plan").traversals]  # noqa: E731
    assert names(without) == ["beam", "naive"] and names(with_dense) == ["beam", "naive", "dense"]
    with pytest.raises(ValueError, match="retrieve mode needs a retriever"):
        assemble_qa_system(without, QASettings(), "retrieve")
    with pytest.raises(ValueError, match="unknown QA mode"):
        assemble_qa_system(without, QASettings(), "guess")


def test_the_qa_config_refuses_unknown_keys() -> None:
    with pytest.raises(ValueError, match="context_docs"):
        QASettings.model_validate({"retrieve": {"context_docs": 2}})
