"""What evaluation measures is what the endpoint serves.

One index (with questions that spell their entities differently from the KG), one retriever (a
real exported GLM, whose subgraphs depend on the seeds), one LLM (scripted, behind the OpenAI
protocol, a different model than the one that linked the index's questions, so both sides link
every question at query time): the documents ``POST /v1/qa`` returns equal those ``hoprag eval run``
stored per question, in ``retrieve`` mode (against both the retrieval system and the rag system)
and in ``plan`` mode; the recall computed from the HTTP responses equals the reported recall.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from evaluation.config import EvalConfig
from evaluation.metrics import recall_at_k
from evaluation.runner import run_evaluation
from hoprag.llm.base import Completion
from hoprag.llm.openai_server import OpenAIProtocolServer
from hoprag.ports import pick_free_port
from hoprag.ray_runtime import RayConfig
from serving.settings import QAAppSettings
from tests.support.film_kg import film_ner_answer, write_film_index, write_tiny_glm
from tests.support.planner_llm import Rule, ScriptedPlannerLLM, prompt_kind

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


class FilmLLM(ScriptedPlannerLLM):
    """Scripted planner answers; NER finds the film KG's names however the question spells their
    case, and returns them as written (as a real NER model does)."""

    def _respond(self, prompt: str):
        kind, block = prompt_kind(prompt)
        if kind != "entities":
            return super()._respond(prompt)
        self.prompts.append((kind, block))
        question = block.split("Question:", 1)[-1].rsplit("Entities:", 1)[0]
        answer = film_ner_answer(question)
        return Completion(text=answer, prompt_tokens=10, completion_tokens=len(answer.split()))


@pytest.fixture(scope="module")
def setup(ray_cluster, tmp_path_factory, embedder) -> Iterator[dict]:
    from ray import serve

    from serving.builder import build_app
    from serving.run import start_serve, wait_until_ready

    root = tmp_path_factory.mktemp("served-vs-evaluated")
    # Index-time NER by another model: the stored links are no cache for the served LLM.
    index = write_film_index(
        root / "index", embedder, questions=True, ner_llm=FilmLLM([], model_id="index-ner"), variants=True
    )
    glm = write_tiny_glm(root / "glm" / "retriever").parent
    llm = FilmLLM(
        [
            Rule("plan", "1. Who is the director of My Cousin From Warsaw?", "My Cousin From Warsaw"),
            Rule("plan", "1. Who is the spouse of Curtis Bernhardt?"),
            Rule("answer", "Carl Boese", "My Cousin From Warsaw"),
            Rule("update", "Final answer: Carl Boese"),
        ],
        default="Germany",
    )
    with OpenAIProtocolServer(llm, model_name="scripted") as server:
        llm_config = {
            "backend": "openai",
            "openai": {"base_url": server.base_url, "model": "scripted", "prompt_style": "completion"},
        }
        small = {"num_cpus": 0.1, "autoscaling": {"min_replicas": 1, "max_replicas": 1}}
        settings = QAAppSettings.model_validate(
            {
                "index": str(index),
                "retriever": str(glm),
                "llm": llm_config,
                "request_timeout_s": 60,
                **{name: dict(small) for name in ("ingress", "qa", "retriever_deployment", "llm_deployment")},
            }
        )
        port = pick_free_port()
        start_serve("127.0.0.1", port)
        base = f"http://127.0.0.1:{port}"
        serve.run(build_app(settings), name="hoprag", route_prefix="/", blocking=False)
        try:
            wait_until_ready(base, timeout_s=300, progress=False)
            out = root / "eval"
            config = EvalConfig.model_validate(
                {
                    "benchmarks": [{"name": "films", "index": str(index)}],
                    "systems": [
                        {"name": "glm", "kind": "retrieval", "retriever": str(glm)},
                        {"name": "glm-rag", "kind": "qa", "pipeline": "rag", "retriever": str(glm)},
                        {"name": "glm-plan", "kind": "qa", "pipeline": "plan", "retriever": str(glm)},
                    ],
                    "out": str(out),
                    "llm": llm_config,
                    "batch_size": 4,
                    "cpus_per_actor": 0.5,
                    "bootstrap_resamples": 100,
                    "ray": RayConfig(address=ray_cluster).model_dump(),
                }
            )
            summary = run_evaluation(config, progress=False)
            yield {
                "base": base,
                "out": out,
                "summary": summary,
                "index": index,
                "glm": glm,
                "llm_config": llm_config,
            }
        finally:
            serve.shutdown()


def _results(out: Path, system: str) -> dict[str, dict]:
    lines = (out / "results" / "films" / f"{system}.jsonl").read_text().splitlines()
    return {r["question"]: r for r in map(json.loads, lines)}


def _ask(base: str, question: str, mode: str) -> dict:
    r = httpx.post(
        f"{base}/v1/qa",
        json={"question": question, "mode": mode, "top_k": 10, "return_trace": True},
        timeout=120,
    )
    assert r.status_code == 200, r.text
    return r.json()


def test_retrieve_mode_serves_the_documents_and_recall_that_evaluation_reports(setup) -> None:
    retrieval, rag = _results(setup["out"], "glm"), _results(setup["out"], "glm-rag")
    assert len(retrieval) == 9 and not any(r["error"] for r in retrieval.values())
    recalls = {2: [], 5: []}
    linkers: dict[str, int] = {}
    for question, evaluated in retrieval.items():
        served = _ask(setup["base"], question, "retrieve")
        titles = [d["title"] for d in served["documents"]]
        assert titles == evaluated["documents"] == rag[question]["documents"], question
        seeds = served["trace"]["steps"][0]["seed_sources"]
        assert list(seeds) == evaluated["question_entities"] == rag[question]["question_entities"]
        for source in seeds.values():
            linkers[source] = linkers.get(source, 0) + 1
        if evaluated["supporting_docs"]:
            for k in recalls:
                recalls[k].append(recall_at_k(titles, evaluated["supporting_docs"], k))
    # The lower-case variants are linked by NER on both sides (dictionary matching misses them).
    lower = _ask(setup["base"], "who directed my cousin from warsaw?", "retrieve")
    assert lower["trace"]["steps"][0]["seed_sources"] == {"my cousin from warsaw": "llm_exact"}
    # The hyphenated variant escapes this NER model; normalized dictionary matching links it.
    hyphen = _ask(setup["base"], "Who is the spouse of Curtis-Bernhardt?", "retrieve")
    assert hyphen["trace"]["steps"][0]["seed_sources"] == {"curtis bernhardt": "dictionary"}
    assert set(linkers) == {"llm_exact", "dictionary"}
    (reported,) = [r for r in setup["summary"]["results"] if r["system"] == "glm"]
    for k, values in recalls.items():  # the summary rounds means to 4 digits
        assert round(sum(values) / len(values), 4) == reported["metrics"][f"recall@{k}"]


def test_plan_mode_serves_what_evaluation_reports(setup) -> None:
    plan = _results(setup["out"], "glm-plan")
    assert not any(r["error"] for r in plan.values())
    for question, evaluated in plan.items():
        served = _ask(setup["base"], question, "plan")
        assert [d["title"] for d in served["documents"]] == evaluated["documents"], question
        assert (served["answer"] if not served["not_enough_info"] else "") == evaluated["answer"]
        assert served["llm_calls"] >= 1


def test_eval_retrieval_of_the_endpoint_equals_eval_retrieval_in_process(setup, capsys) -> None:
    from evaluation.retrieval import evaluate_retrieval
    from hoprag.kg.index import KGIndex
    from hoprag.llm.factory import LLMBackendConfig, build_llm
    from hoprag.retrieval.loading import load_retriever
    from hoprag_cli import main

    per_question = setup["out"] / "endpoint.jsonl"
    argv = ["eval", "retrieval", "--index", str(setup["index"]), "--url", setup["base"], "--json"]
    assert main([*argv, "--per-question", str(per_question)]) == 0
    served = json.loads(capsys.readouterr().out)
    index = KGIndex(setup["index"])
    llm = build_llm(LLMBackendConfig.model_validate(setup["llm_config"]))  # the served LLM
    evaluated = evaluate_retrieval(index, load_retriever(str(setup["glm"]), index), llm=llm)
    for key in ("recall@2", "recall@5", "n", "seeds_by_linker", "fallbacks"):
        assert served[key] == evaluated[key], key
    assert served["seeds_by_linker"] == {"dictionary": 1, "llm_exact": 8}
    served_rows = [json.loads(line) for line in per_question.read_text().splitlines()]
    assert served_rows == [json.loads(json.dumps(r, sort_keys=True)) for r in evaluated["per_question"]]


@pytest.fixture(scope="module")
def generated(setup, ray_cluster, tmp_path_factory) -> dict:
    """The packaged sample (a generated benchmark, 16 of its 80 questions respelled) indexed by the
    reference extractor, served as a second app next to the first. The served LLM is the reference
    extractor on a copy of the world, so its model id differs from the one that linked the index:
    both sides link every question at query time, with real NER of respelled names."""
    import shutil

    from ray import serve

    from serving.builder import build_app
    from serving.run import wait_until_ready
    from tests.support.local_ray import SAMPLE, build_reference_index

    root = tmp_path_factory.mktemp("generated")
    build_reference_index(root / "index", ray_cluster)
    world = root / "served-world" / "raw" / "world.json"
    world.parent.mkdir(parents=True)
    shutil.copy(SAMPLE / "raw" / "world.json", world)
    llm_config = {"backend": "reference", "reference": {"world": str(world)}}
    small = {"num_cpus": 0.1, "autoscaling": {"min_replicas": 1, "max_replicas": 1}}
    settings = QAAppSettings.model_validate(
        {
            "index": str(root / "index"),
            "retriever": "dense",  # served as the evaluated system below (the default fuses the GLM)
            "llm": llm_config,
            "request_timeout_s": 60,
            **{name: dict(small) for name in ("ingress", "qa", "retriever_deployment", "llm_deployment")},
        }
    )
    serve.run(build_app(settings), name="generated", route_prefix="/generated", blocking=False)
    base = f"{setup['base']}/generated"
    wait_until_ready(base, timeout_s=300, progress=False)
    out = root / "eval"
    config = EvalConfig.model_validate(
        {
            "benchmarks": [{"name": "sample", "index": str(root / "index")}],
            "systems": [{"name": "dense", "kind": "retrieval", "retriever": "dense"}],
            "out": str(out),
            "llm": llm_config,
            "batch_size": 8,
            "cpus_per_actor": 0.5,
            "bootstrap_resamples": 100,
            "ray": RayConfig(address=ray_cluster).model_dump(),
        }
    )
    summary = run_evaluation(config, progress=False)
    return {"base": base, "out": out, "summary": summary}


def test_a_generated_benchmark_with_respelled_questions_is_served_as_evaluated(generated) -> None:
    evaluated = {
        r["id"]: r for r in map(json.loads, (generated["out"] / "results" / "sample" / "dense.jsonl").open())
    }
    assert len(evaluated) == 20 and not any(r["error"] for r in evaluated.values())
    recalls: dict[int, list[float]] = {2: [], 5: []}
    respelled = 0
    for record in evaluated.values():
        served = _ask(generated["base"], record["question"], "retrieve")
        titles = [d["title"] for d in served["documents"]]
        assert titles == record["documents"], record["question"]
        seeds = served["trace"]["steps"][0]["seed_sources"]
        assert (list(seeds), list(seeds.values())) == (record["question_entities"], record["link_sources"])
        respelled += record["meta"].get("spelling", "exact") != "exact"
        for k in recalls:
            recalls[k].append(recall_at_k(titles, record["supporting_docs"], k))
    assert respelled == 4  # the sample's test split: 2 case variants, 2 abbreviations
    (reported,) = generated["summary"]["results"]
    for k, values in recalls.items():
        assert round(sum(values) / len(values), 4) == reported["metrics"][f"recall@{k}"]
