"""``hoprag train``'s default recipe, the document ranker a run exports, and the closing comparison."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.config import load_config
from hoprag.glm.artifact import PACKAGED_GLM_NAME
from hoprag_cli.common import UserError
from hoprag_cli.demo import DEMO_TRAIN_STEPS, demo_train_config
from hoprag_cli.entry import build_parser
from hoprag_cli.train import train_config_from_args
from training.baselines import BaselineReport, RetrieverScore
from training.config import TrainConfig
from training.rankers import best_ranker, last_validation, recall_by_ranker
from training.recipes import default_recipe


def _config(*argv: str) -> TrainConfig:
    return train_config_from_args(build_parser().parse_args(["train", "--out", "runs/x", *argv]))


def test_hoprag_train_without_a_recipe_is_what_make_demo_trains():
    assert _config("--index", "runs/demo/index") == demo_train_config(DEMO_TRAIN_STEPS, PACKAGED_GLM_NAME)
    config = _config()
    assert config.init == PACKAGED_GLM_NAME and config.max_steps == 100 and not config.data.streaming


def test_the_recipe_file_is_the_default_recipe():
    path = Path(__file__).resolve().parents[2] / "training" / "configs" / "glm-packaged-finetune-cpu.yaml"
    assert path.read_text().startswith("# hoprag train --index")
    assert load_config(TrainConfig, path) == TrainConfig.model_validate(default_recipe())
    # and a run given the file is the default run
    assert _config("--config", str(path)) == _config()


def test_other_recipes_are_chosen_by_flag_or_file(tmp_path):
    scratch = _config("--from-scratch")
    assert scratch == TrainConfig() and scratch.init is None
    backbone = _config("--backbone", "minilm", "--max-steps", "7")
    assert (backbone.init, backbone.backbone.model, backbone.max_steps) == (None, "minilm", 7)
    recipe = tmp_path / "r.yaml"
    recipe.write_text("epochs: 3\n")
    assert _config("--config", str(recipe)).init is None  # a file is a whole recipe
    assert _config("--init", "runs/mine").init == "runs/mine"  # the default recipe from another start
    assert _config("--set", "retriever=gnn").init is None  # the GNN baseline has no warm start
    with pytest.raises(UserError, match="--config the file is the recipe"):
        _config("--config", str(recipe), "--from-scratch")
    with pytest.raises(SystemExit):  # argparse: not allowed with each other
        _config("--from-scratch", "--backbone", "minilm")


def _record(by_ranker: dict[str, tuple[float, float]], indexes=("a",)) -> dict[str, float]:
    return {
        f"val_recall@{k}/ranker={ranker}/{name}": value
        for ranker, pair in by_ranker.items()
        for k, value in zip((2, 5), pair, strict=True)
        for name in indexes
    } | {"step": 10, "epoch": 1}


def test_two_runs_whose_best_rankers_differ_export_different_rankers():
    first = _record({"idf": (0.2, 0.5), "score_idf": (0.3, 0.5), "score": (0.5, 0.6)})
    second = _record({"idf": (0.6, 0.7), "score_idf": (0.4, 0.7), "score": (0.3, 0.8)})
    assert best_ranker(first, "idf") == "score"
    assert best_ranker(second, "score") == "idf"


def test_ties_go_to_recall_at_5_then_to_the_configured_ranker():
    assert best_ranker(_record({"idf": (0.5, 0.6), "score": (0.5, 0.7)}), "idf") == "score"
    tie = _record({"idf": (0.5, 0.7), "score_idf": (0.5, 0.7), "score": (0.4, 0.9)})
    assert best_ranker(tie, "score_idf") == "score_idf"
    assert best_ranker(tie, "idf") == "idf"
    assert best_ranker({"step": 3}, "score") == "score"  # a run that never validated keeps its own


def test_recall_by_ranker_is_the_mean_over_the_runs_indexes():
    record = _record({"idf": (0.2, 0.4)}, indexes=("a",)) | _record({"idf": (0.6, 0.8)}, indexes=("b",))
    assert recall_by_ranker(record) == {"idf": {2: pytest.approx(0.4), 5: pytest.approx(0.6)}}


def test_last_validation_reads_the_final_record(tmp_path):
    path = tmp_path / "validation.jsonl"
    assert last_validation(path) == {}
    path.write_text('{"step": 2, "a": 1}\n{"step": 4, "a": 2}\n\n')
    assert last_validation(path) == {"step": 4, "a": 2}


def _report(run: tuple[float, float], dense: tuple[float, float]) -> BaselineReport:
    return BaselineReport(
        run=RetrieverScore("this run", "runs/x", {2: run[0], 5: run[1]}),
        others=[
            RetrieverScore("dense (MiniLM sentence embeddings)", "dense", {2: dense[0], 5: dense[1]}),
            RetrieverScore("shipped GLM, zero-shot", "packaged-glm", {2: 0.3, 5: 0.5}),
        ],
        n_questions=12,
    )


def test_a_run_below_dense_says_so_and_names_the_better_retriever():
    below = _report((0.4, 0.6), (0.5, 0.6))
    assert below.best.spec == "dense"
    assert "validates below dense" in below.render() and "--retriever dense instead" in below.render()
    above = _report((0.6, 0.7), (0.5, 0.6))
    assert above.best is above.run and "serve it with --retriever runs/x" in above.render()
    assert _report((0.5, 0.6), (0.5, 0.6)).best.spec == "runs/x"  # a tie keeps the run
    assert "12 held-out" in above.render() and above.to_dict()["best"] == "runs/x"
    empty = BaselineReport(RetrieverScore("this run", "runs/x", {}), [], 0)
    assert "no validation questions" in empty.render()
