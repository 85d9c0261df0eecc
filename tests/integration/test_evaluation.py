"""Batch evaluation on Ray Data: resume after an interruption, reports from stored results, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.config import EvalConfig
from evaluation.report import rebuild_report
from evaluation.results import read_results, results_path
from evaluation.runner import run_evaluation
from hoprag.kg.index import KGIndex
from hoprag.ray_runtime import RayConfig
from tests.support.film_kg import film_questions, write_film_index, write_tiny_glm

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def film_eval(tmp_path_factory, embedder, ray_cluster) -> dict:
    root = tmp_path_factory.mktemp("eval")
    index = write_film_index(root / "index", embedder, questions=True)
    glm = write_tiny_glm(root / "glm" / "retriever")
    return {"root": root, "index": index, "glm": glm.parent, "address": ray_cluster}


def _config(film_eval: dict, out: Path) -> EvalConfig:
    return EvalConfig.model_validate(
        {
            "benchmarks": [
                {"name": "films", "index": str(film_eval["index"])},
                {"name": "films-3hop", "index": str(film_eval["index"]), "where": {"hops": ["3"]}},
            ],
            "systems": [
                {"name": "dense", "kind": "retrieval", "retriever": "dense"},
                {"name": "glm", "kind": "retrieval", "retriever": str(film_eval["glm"])},
            ],
            "out": str(out),
            "batch_size": 2,
            "retrieval_actors": 2,
            "cpus_per_actor": 0.5,
            "bootstrap_resamples": 200,
            "ray": RayConfig(address=film_eval["address"]).model_dump(),
        }
    )


@pytest.fixture(scope="module")
def evaluated(film_eval) -> tuple[EvalConfig, dict]:
    """One complete evaluation run (config, summary): the tests below read it or copy its output."""
    config = _config(film_eval, film_eval["root"] / "eval")
    return config, run_evaluation(config, progress=False)


def test_interrupted_evaluation_resumes_with_only_the_missing_questions(
    film_eval, evaluated, tmp_path
) -> None:
    import shutil

    complete, first = evaluated
    config = _config(film_eval, tmp_path / "eval")
    shutil.copytree(complete.out, config.out)  # the complete run's output, then a kill simulated in it
    path = results_path(config.out, "films", "glm")
    before = read_results(path)
    assert len(before) == 6
    # Simulate a kill mid-run: the last two results never written, the one before torn mid-line.
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:3]) + "\n" + lines[3][: len(lines[3]) // 2])
    second = run_evaluation(config, progress=False)
    runs = {
        (r["benchmark"], r["system"]): r
        for r in json.loads((config.out / "eval_meta.json").read_text())["runs"]
    }
    assert runs[("films", "glm")]["computed"] == 3 and runs[("films", "glm")]["reused"] == 3
    assert runs[("films", "dense")]["computed"] == 0  # nothing missing there
    after = read_results(path)
    assert {q: r["metrics"] for q, r in after.items()} == {q: r["metrics"] for q, r in before.items()}
    assert first["results"] == second["results"]


# The 2-hop subgraph of each film question's seed (GLMSettings' sampler; 600 triples is no limit here).
FILM_SUBGRAPHS = [
    ["my cousin from warsaw", "carl boese", "berlin"],
    ["payment on demand", "curtis bernhardt", "1951", "worms", "pearl argyle"],
    ["my cousin from warsaw", "carl boese", "berlin"],
    ["kellan fever", "ostarizumab"],
    ["curtis bernhardt", "payment on demand", "worms", "pearl argyle", "1951", "germany", "berlin"],
    ["worms", "curtis bernhardt", "germany", "berlin", "payment on demand", "pearl argyle", "carl boese"],
]


def test_summary_report_plots_and_input_problems(film_eval, evaluated, embedder) -> None:
    config, summary = evaluated
    by = {(r["benchmark"], r["system"]): r for r in summary["results"]}
    assert by[("films", "dense")]["n"] == 6 and by[("films-3hop", "dense")]["n"] == 1
    assert set(by[("films", "dense")]["metrics"]) == {"recall@1", "recall@2", "recall@5", "recall@10"}
    assert "entity_recall@20" in by[("films", "glm")]["metrics"]  # the GLM scores entities
    assert summary["inputs"]["films"]["missing_supporting_docs"] == 1  # "Atlantis" is not in the corpus
    assert set(summary["breakdowns"]["films"]) >= {"hops", "supporting_docs", "entity_distance"}
    # The GLM scores entities; dense does not. The tiny GLM's 2-hop subgraphs hold fewer than 20
    # entities, so its top 20 are the whole subgraph whatever the scores: hops from the seed below.
    glm_analysis = summary["analysis"]["films"]["glm"]
    mean_hops = [(0 + 1 + 2) / 3, (0 + 1 + 1 + 2 + 2) / 5, (0 + 1 + 2) / 3, (0 + 1) / 2, 9 / 7, 9 / 7]
    assert glm_analysis["hop_distance"] == pytest.approx(sum(mean_hops) / 6, abs=1e-4)
    assert summary["analysis"]["films-3hop"]["glm"]["hop_distance"] == 1.0  # film-2: mcfw, boese, berlin
    # Semantic similarity: question vs those entities' embeddings, recomputed here.
    index = KGIndex(film_eval["index"])
    sims = []
    for row, names in zip(film_questions(), FILM_SUBGRAPHS, strict=True):
        q = embedder.encode([row["question"]])[0]
        sims.append(sum(float(index.entity_embeddings[index.entity_id(n)] @ q) for n in names) / len(names))
    assert glm_analysis["semantic_similarity"] == pytest.approx(sum(sims) / len(sims), abs=1e-3)
    assert "dense" not in summary["analysis"]["films"]
    assert all("p_holm" in c and c["p_holm"] >= c["p"] for c in summary["comparisons"])
    report = (config.out / "report.md").read_text()
    assert "## recall@2" in report and "| dense |" in report and "**" in report
    assert (config.out / "recall_at_2_bars.png").stat().st_size > 1000
    assert (config.out / "recall_vs_hops.png").is_file()
    (config.out / "report.md").unlink()
    rebuilt = rebuild_report(config.out)  # from stored results only
    assert rebuilt["results"] == summary["results"] and (config.out / "report.md").read_text() == report


def test_bad_benchmarks_and_configs_are_refused(film_eval, tmp_path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        run_evaluation(
            EvalConfig.model_validate(
                {
                    "benchmarks": [{"name": "nope", "index": str(tmp_path / "missing")}],
                    "systems": [{"name": "dense", "kind": "retrieval", "retriever": "dense"}],
                    "out": str(tmp_path / "o"),
                    "ray": {"address": film_eval["address"]},
                }
            ),
            progress=False,
        )
    with pytest.raises(ValueError, match="duplicate system"):
        EvalConfig.model_validate(
            {
                "benchmarks": [{"name": "a", "index": "x"}],
                "systems": [{"name": "s", "kind": "qa", "pipeline": "no_context"}] * 2,
                "out": "o",
            }
        )
    with pytest.raises(ValueError, match="needs 'retriever'"):
        EvalConfig.model_validate(
            {
                "benchmarks": [{"name": "a", "index": "x"}],
                "systems": [{"name": "r", "kind": "retrieval"}],
                "out": "o",
            }
        )


def test_eval_retrieval_is_a_shortcut_into_eval_run(film_eval, tmp_path, capsys) -> None:
    from hoprag_cli import main

    args = ["eval", "retrieval", "--index", str(film_eval["index"]), "--retriever", str(film_eval["glm"])]
    assert main([*args, "--json"]) == 0
    quick = json.loads(capsys.readouterr().out)
    assert main([*args, "--out", str(tmp_path / "ev")]) == 0
    (result,) = json.loads((tmp_path / "ev" / "summary.json").read_text())["results"]
    # In process or as a Ray Data job: the same questions, retrieval and scoring, the same figures.
    assert result["system"] == "glm" and quick["retriever"].startswith("glm") and quick["errors"] == 0
    assert result["metrics"]["recall@2"] == quick["recall@2"]
    assert result["metrics"]["recall@5"] == quick["recall@5"]
    assert (tmp_path / "ev" / "report.md").is_file()
