"""GLM training on CPU: 2 Ray Train workers + DeepSpeed (gloo), checkpoints, resume, export, eval."""

from __future__ import annotations

import hashlib
import json
import signal
import threading
import time
from pathlib import Path

import pytest

from evaluation.retrieval import evaluate_retrieval
from hoprag.kg.index import KGIndex
from hoprag.ray_runtime import RayConfig
from hoprag.retrieval.base import RetrievalQuery
from hoprag.retrieval.loading import load_retriever
from hoprag.retrieval.metrics import recall_at_k
from indexing.corpus import read_corpus
from indexing.pipeline import build_index
from synthetic import SyntheticConfig, write_benchmark
from tests.integration.conftest import http_index_config
from tests.support.local_ray import own_ray_train_workers
from training.config import OptimConfig, TrainConfig
from training.trainer import run_training
from training.warm_start import InitError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def train_index(tmp_path_factory, synthetic_corpus, rule_server, ray_cluster):
    out = tmp_path_factory.mktemp("train-index") / "index"
    build_index(
        out, http_index_config(rule_server.base_url, ray_cluster), corpus=read_corpus(synthetic_corpus)
    )
    return out


@pytest.fixture(scope="module")
def second_index(tmp_path_factory, rule_server, ray_cluster):
    """A second, smaller index: another synthetic benchmark (different seed and documents)."""
    corpus = tmp_path_factory.mktemp("synthetic-b")
    write_benchmark(
        SyntheticConfig(seed=11, num_documents=36, num_train_questions=8, num_test_questions=2), corpus
    )
    out = tmp_path_factory.mktemp("train-index-b") / "index"
    build_index(out, http_index_config(rule_server.base_url, ray_cluster), corpus=read_corpus(corpus))
    return out


def _config(max_steps: int, **extra) -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "backbone": {"num_layers": 1, "d_ff": 256},
            "glm": {"sampler": {"max_triplets": 40}},
            "max_steps": max_steps,
            "epochs": 20,
            "run": {"num_workers": 2, "checkpoint_every": 2, "cpus_per_worker": 1},
            **extra,
        }
    )


SCHEDULE = {"optim": {"lr_schedule": "warmup_linear", "warmup_steps": 2}}


@pytest.fixture(scope="module")
def glm_run(tmp_path_factory, train_index, ray_cluster) -> tuple[Path, dict]:
    """A 4-step GLM run on ``train_index`` (run directory, final metrics). The resume test goes on
    with it in place; the warm-start test starts from a copy of its export."""
    run = tmp_path_factory.mktemp("glm-run") / "run"
    return run, run_training(train_index, run, _config(4, **SCHEDULE), RayConfig(address=ray_cluster))


def test_train_resume_export_and_evaluate(glm_run, train_index, ray_cluster):
    run, first = glm_run
    assert first["step"] == 4 and first["loss"] > 0
    assert first["lr_factor"] == pytest.approx(0.5)  # step 4 of 4: halfway down from the peak at 3
    assert (run / "retriever" / "retriever.json").is_file()
    # re-running the same command with a larger budget resumes from the step-4 checkpoint, and the
    # schedule stretches to the new budget: step 6 of 6, (6 - 3) / (6 - 2) of the way down
    second = run_training(train_index, run, _config(6, **SCHEDULE), RayConfig(address=ray_cluster))
    assert second["step"] == 6
    assert second["lr_factor"] == pytest.approx(0.25)
    states = sorted((run / "ray" / "glm").glob("checkpoint_*/trainer_state.json"))
    assert states and max(json.loads(p.read_text())["step"] for p in states) == 6
    index = KGIndex(train_index)
    retriever = load_retriever(str(run), index)
    result = evaluate_retrieval(index, retriever)
    # every one of the 10 synthetic test questions has gold documents and is scored
    assert (result["n"], result["errors"], result["skipped_no_gold"]) == (10, 0, 0)
    # the means are those of the exported retriever's own rankings, recomputed here
    rows = [r for r in index.questions.to_pylist() if r["split"] == "test"]
    ranked = retriever.retrieve(
        [RetrievalQuery(r["question"], tuple(r["question_entities"])) for r in rows], 10
    )
    for k in (2, 5):
        recalls = [
            recall_at_k([d.title for d in res.documents], r["supporting_docs"], k)
            for r, res in zip(rows, ranked, strict=True)
        ]
        assert result[f"recall@{k}"] == round(sum(recalls) / len(recalls), 4)
    assert result["recall@5"] >= result["recall@2"]


def _kill_a_worker_after_first_checkpoint(run_dir, killed: list[int], stop: threading.Event) -> None:
    """Wait for the first checkpoint, then SIGKILL one Ray Train worker process."""
    while not stop.is_set():
        if list((run_dir / "ray" / "glm").glob("checkpoint_*/trainer_state.json")):
            for proc in own_ray_train_workers():
                proc.send_signal(signal.SIGKILL)
                killed.append(proc.pid)
                return
        time.sleep(0.05)


def test_a_killed_worker_is_replaced_and_training_finishes(tmp_path, train_index, ray_cluster):
    run = tmp_path / "run"
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(
        target=_kill_a_worker_after_first_checkpoint, args=(run, killed, stop), daemon=True
    )
    killer.start()
    try:
        metrics = run_training(train_index, run, _config(10), RayConfig(address=ray_cluster))
    finally:
        stop.set()
        killer.join(timeout=5)
    assert killed, "no worker was killed: the run ended before its first checkpoint"
    assert metrics["step"] == 10
    assert (run / "retriever" / "retriever.json").is_file()


def test_init_warm_starts_from_an_exported_retriever(tmp_path, glm_run, train_index, ray_cluster):
    """Run B with init=A starts from A's exported weights: with learning rates too small to move a
    float32 weight, B's export after its steps is exactly A's export (a B that ignored init would
    export a fresh build's weights, which A's training moved away from). A is a copy of the shared
    4-step run's export, taken now (the resume test goes on training that run)."""
    import shutil

    import torch
    from safetensors.torch import load_file

    from hoprag.glm.backbone import build_graph_encoder
    from hoprag.glm.model import GLMRetrieverModel
    from hoprag.glm.retriever import load_retriever_model, save_retriever

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(glm_run[0] / "retriever", a / "retriever")
    frozen = OptimConfig(head_lr=1e-30, backbone_lr=1e-30)
    config_b = _config(2).model_copy(update={"init": str(a), "optim": frozen})
    metrics = run_training(train_index, b, config_b, RayConfig(address=ray_cluster))
    assert metrics["step"] == 2 and metrics["loss"] > 0  # B trained (2 optimizer steps) and exported

    weights_a = load_file(str(a / "retriever" / "model.safetensors"))
    weights_b = load_file(str(b / "retriever" / "model.safetensors"))
    assert weights_a.keys() == weights_b.keys()
    for name, tensor in weights_a.items():
        assert torch.allclose(weights_b[name], tensor, rtol=0, atol=1e-12), name
    fresh = GLMRetrieverModel(build_graph_encoder(config_b.backbone), 384).state_dict()
    assert max(float((fresh[k] - v).abs().max()) for k, v in weights_a.items()) > 1e-4

    meta = json.loads((b / "retriever" / "retriever.json").read_text())
    assert meta["init"]["path"] == str((a / "retriever").resolve())
    assert (
        meta["init"]["weights_sha256"]
        == hashlib.sha256((a / "retriever" / "model.safetensors").read_bytes()).hexdigest()
    )
    assert meta["init"]["backbone"].startswith("'embedded' (t5, num_layers=1")
    assert "init" not in json.loads((a / "retriever" / "retriever.json").read_text())
    assert f"init: {(a / 'retriever').resolve()}" in (b / "train_config.yaml").read_text()
    assert json.loads((b / "metrics.json").read_text())["init"] == meta["init"]

    # re-running the same command resumes B from its own checkpoint (step 2 → 3)
    again = run_training(
        train_index, b, config_b.model_copy(update={"max_steps": 3}), RayConfig(address=ray_cluster)
    )
    assert again["step"] == 3
    states = sorted((b / "ray" / "glm").glob("checkpoint_*/trainer_state.json"))
    assert max(json.loads(p.read_text())["step"] for p in states) == 3
    # ... and refuses another init (other weights): B's checkpoints would win over it
    model, tokenizer, settings = load_retriever_model(a)
    with torch.no_grad():
        model.question_proj.bias.add_(1.0)
    save_retriever(tmp_path / "c" / "retriever", model, tokenizer, settings)
    with pytest.raises(InitError, match="was started from init"):
        run_training(
            train_index,
            b,
            config_b.model_copy(update={"init": str(tmp_path / "c")}),
            RayConfig(address=ray_cluster),
        )


def test_a_lora_minilm_glm_trains_exports_only_its_updates_and_fine_tunes(tmp_path, train_index, ray_cluster):
    """LoRA through Ray Train + DeepSpeed ZeRO-2: the pretrained weights never move, the export holds
    the trained tensors only (and loads onto the packaged MiniLM), and a run with it as init trains its
    updates on (what `hoprag demo` does with the shipped packaged-glm)."""
    import torch
    from safetensors.torch import load_file

    lora = {"backbone": {"model": "minilm", "lora": {"rank": 4}}, "data": {"streaming": False}}
    a, b = tmp_path / "a", tmp_path / "b"
    run_training(train_index, a, _config(2, **lora), RayConfig(address=ray_cluster))
    weights_a = load_file(str(a / "retriever" / "model.safetensors"))
    assert weights_a and all(
        ".lora_" in k or ".LayerNorm." in k or not k.startswith("encoder.backbone.") for k in weights_a
    )
    assert any(".lora_B." in k and v.abs().sum() > 0 for k, v in weights_a.items())  # B moved off zero
    assert (a / "retriever" / "model.safetensors").stat().st_size < 5_000_000
    plain = {"backbone": {"model": "minilm"}, "data": {"streaming": False}}
    run_training(train_index, b, _config(2, **plain, init=str(a)), RayConfig(address=ray_cluster))
    weights_b = load_file(str(b / "retriever" / "model.safetensors"))
    assert weights_b.keys() == weights_a.keys()  # still LoRA: the architecture is the init's
    assert any(not torch.equal(weights_b[k], v) for k, v in weights_a.items() if ".lora_" in k)
    index = KGIndex(train_index)
    recall = evaluate_retrieval(index, load_retriever(str(b), index))
    assert 0 <= recall["recall@2"] <= 1 and recall["n"] > 0


def test_two_indexes_are_mixed_and_validated_per_index(tmp_path, train_index, second_index, ray_cluster):
    sources = [{"path": str(train_index), "name": "first"}, {"path": str(second_index), "name": "second"}]
    metrics = run_training(
        None, tmp_path / "run", _config(6, data={"indexes": sources}), RayConfig(address=ray_cluster)
    )
    assert metrics["step"] == 6
    # both indexes fed the stream: 6 steps x 2 workers x micro-batch 2, split between them
    seen = {name: metrics[f"examples/{name}"] for name in ("first", "second")}
    assert sum(seen.values()) == 6 * 2 * 2 and min(seen.values()) > 0, seen
    for k in (2, 5):
        per_index = [metrics[f"val_recall@{k}/{name}"] for name in ("first", "second")]
        assert metrics[f"val_recall@{k}"] == pytest.approx(sum(per_index) / 2)
        # the same scores ranked by every document ranker, per index; the configured one is val_recall@K
        for name in ("first", "second"):
            by_ranker = {
                r: metrics[f"val_recall@{k}/ranker={r}/{name}"] for r in ("idf", "score_idf", "score")
            }
            assert by_ranker[TrainConfig().glm.doc_ranker] == metrics[f"val_recall@{k}/{name}"]
    # the export carries the ranker with the best mean validation recall@2 (then @5) over both indexes
    exported = json.loads((tmp_path / "run" / "retriever" / "retriever.json").read_text())["settings"][
        "doc_ranker"
    ]
    mean = {
        r: tuple(sum(metrics[f"val_recall@{k}/ranker={r}/{n}"] for n in ("first", "second")) for k in (2, 5))
        for r in ("idf", "score_idf", "score")
    }
    best = max(mean.values())
    assert mean[exported] == best and metrics["exported_ranker"] == exported
    if mean[TrainConfig().glm.doc_ranker] == best:  # ties keep the configured ranker
        assert exported == TrainConfig().glm.doc_ranker
    # the in-memory path (data.streaming false) trains on the same plans
    memory = run_training(
        None,
        tmp_path / "run-memory",
        _config(2, data={"indexes": sources, "streaming": False}),
        RayConfig(address=ray_cluster),
    )
    assert memory["step"] == 2
    assert sum(memory[f"examples/{name}"] for name in ("first", "second")) == 2 * 2 * 2


def _gnn_config(max_steps: int, **extra) -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "retriever": "gnn",
            "gnn": {"hidden_dim": 32, "num_layers": 3, "sampler": {"max_triplets": 40}},
            "max_steps": max_steps,
            "epochs": 20,
            "run": {"num_workers": 2, "checkpoint_every": 2, "cpus_per_worker": 1},
            **extra,
        }
    )


def test_the_gnn_trains_resumes_exports_and_evaluates(tmp_path, train_index, ray_cluster):
    """The GFM-RAG GNN baseline goes through the same job: 2 workers, streamed subgraphs, losses,
    checkpoints, resume, export and the shared retriever loader."""
    from hoprag.gnn.retriever import GNNRetriever

    run = tmp_path / "run"
    first = run_training(train_index, run, _gnn_config(4), RayConfig(address=ray_cluster))
    assert first["step"] == 4 and first["loss"] > 0 and first["subgraphs_per_s"] > 0
    assert "tokens_per_s" not in first  # the GNN reads no tokens
    assert 0 <= first["val_recall@2"] <= first["val_recall@5"] <= 1
    curve = [json.loads(line) for line in (run / "validation.jsonl").read_text().splitlines()]
    assert curve[-1]["step"] == 4 and curve[-1]["val_recall@2"] == first["val_recall@2"]
    meta = json.loads((run / "retriever" / "retriever.json").read_text())
    assert meta["kind"] == "gnn" and meta["settings"]["num_layers"] == 3
    second = run_training(train_index, run, _gnn_config(6), RayConfig(address=ray_cluster))
    assert second["step"] == 6
    states = sorted((run / "ray" / "gnn").glob("checkpoint_*/trainer_state.json"))
    assert states and max(json.loads(p.read_text())["step"] for p in states) == 6
    index = KGIndex(train_index)
    retriever = load_retriever(str(run), index)
    assert isinstance(retriever, GNNRetriever)
    result = evaluate_retrieval(index, retriever)
    assert (result["n"], result["errors"]) == (10, 0)
    # the in-memory path trains the GNN too, and warm start is refused for it
    memory = run_training(
        train_index,
        tmp_path / "memory",
        _gnn_config(2, data={"streaming": False}),
        RayConfig(address=ray_cluster),
    )
    assert memory["step"] == 2
    # a recipe with init is refused when read; --init (set on a validated config) before Ray starts
    with pytest.raises(ValueError, match="GLM retrievers only"):
        _gnn_config(2, init=str(run))
    with pytest.raises(InitError, match="GLM retrievers"):
        config = _gnn_config(2).model_copy(update={"init": str(run)})
        run_training(train_index, tmp_path / "init", config, RayConfig(address=ray_cluster))


def test_hoprag_train_with_no_recipe_fine_tunes_the_shipped_glm_and_compares(
    tmp_path, train_index, ray_cluster, capsys
):
    """The command a user types first: the default recipe (fine-tune packaged-glm), the validation-
    best ranker exported, and closing lines that compare the run with dense and the shipped GLM."""
    from hoprag_cli import main

    run = tmp_path / "run"
    argv = ["train", "--index", str(train_index), "--out", str(run), "--max-steps", "2"]
    assert main([*argv, "--ray-address", ray_cluster]) == 0
    out = capsys.readouterr().out
    assert "fine-tuning packaged-glm" in out
    meta = json.loads((run / "retriever" / "retriever.json").read_text())
    assert meta["init"]["path"].endswith("glm/retriever")  # started from the shipped GLM
    metrics = json.loads((run / "metrics.json").read_text())
    assert meta["settings"]["doc_ranker"] == metrics["exported_ranker"]
    scored = {r: metrics[f"val_recall@2/ranker={r}"] for r in ("idf", "score_idf", "score")}
    assert scored[metrics["exported_ranker"]] == max(scored.values())
    baselines = json.loads((run / "baselines.json").read_text())
    assert [o["spec"] for o in baselines["others"]] == [
        "dense",
        "ppr",
        "packaged-glm",
        "routed",
        f"{run}+dense",
    ]
    assert baselines["n_questions"] > 0 and "validation recall" in out
    best = baselines["best"]
    assert (f"serve --retriever {best} instead" in out) != (best == str(run))
