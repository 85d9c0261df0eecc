"""Warm start (``hoprag train --init``): checks on the driver, the effective config, the weights."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
import torch

from hoprag.config import load_config
from hoprag.glm.backbone import BackboneConfig, build_graph_encoder, load_tokenizer
from hoprag.glm.data import collate
from hoprag.glm.model import GLMRetrieverModel
from hoprag.glm.retriever import load_retriever_model, save_retriever
from hoprag.glm.sampler import SamplerConfig
from hoprag.glm.settings import GLMSettings
from hoprag_cli import main
from tests.support.glm import ember_example
from training.config import TrainConfig
from training.warm_start import (
    INIT_FILE,
    InitError,
    remember_init,
    resolve_init,
    retriever_backbone,
    warm_start_model,
)

BACKBONE = {"num_layers": 1, "d_ff": 64}
SETTINGS = GLMSettings(sampler=SamplerConfig(max_hops=3, max_triplets=50), top_entities=7)


@pytest.fixture(scope="module")
def run_a(tmp_path_factory):
    """An exported retriever (embedded T5, 1 layer) with non-default sampler and ranker settings,
    its weights moved off a fresh build's (as training would)."""
    cfg = BackboneConfig.model_validate(BACKBONE)
    model = GLMRetrieverModel(build_graph_encoder(cfg), question_dim=384).eval()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.05 * torch.randn(param.shape, generator=generator))
    run = tmp_path_factory.mktemp("run-a")
    save_retriever(run / "retriever", model, load_tokenizer(cfg), SETTINGS)
    return run, model


def _config(**data) -> TrainConfig:
    return TrainConfig.model_validate(data)


def test_init_is_a_config_field_yaml_can_set(tmp_path):
    assert TrainConfig().init is None
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("init: runs/big\nmax_steps: 3\n")
    assert load_config(TrainConfig, recipe).init == "runs/big"
    assert "Warm start" in (TrainConfig.model_fields["init"].description or "")


def test_the_effective_config_takes_the_architecture_and_defaults_from_the_retriever(run_a, tmp_path):
    run, _ = run_a
    config = _config(init=str(run), glm={"sampler": {"max_triplets": 20}, "doc_ranker": "score_idf"})
    effective, record = resolve_init(config, tmp_path / "b")
    assert effective.init == str((run / "retriever").resolve())
    # unset glm settings: the retriever's; explicit ones (even nested): the config's
    assert effective.glm.sampler == SamplerConfig(max_hops=3, max_triplets=20)
    assert (effective.glm.top_entities, effective.glm.doc_ranker) == (7, "score_idf")
    assert effective.backbone.model == "embedded"
    assert (effective.backbone.num_layers, effective.backbone.d_ff) == (1, 64)
    weights = (run / "retriever" / "model.safetensors").read_bytes()
    assert record == {
        "path": effective.init,
        "weights_sha256": hashlib.sha256(weights).hexdigest(),
        "backbone": record["backbone"],
    }
    assert record["backbone"].startswith("'embedded' (t5, num_layers=1")


def test_explicit_settings_that_agree_with_the_retriever_are_fine(run_a, tmp_path):
    run, _ = run_a
    config = _config(init=str(run), backbone={**BACKBONE, "model": "embedded-t5", "seed": 5})
    effective, _ = resolve_init(config, tmp_path / "b")
    assert effective.backbone.seed == 5  # the init seed of fresh weights: none are fresh, no conflict


def test_a_different_backbone_is_refused_naming_both(run_a, tmp_path):
    run, _ = run_a
    with pytest.raises(InitError, match=r"backbone 'embedded' \(t5.*asks for backbone.model='minilm'"):
        resolve_init(_config(init=str(run), backbone={"model": "minilm"}), tmp_path / "b")
    with pytest.raises(InitError, match=r"backbone.d_ff=1024"):
        resolve_init(_config(init=str(run), backbone={"d_ff": 1024}), tmp_path / "b")


def test_weight_shaping_glm_settings_are_refused(run_a, tmp_path):
    run, _ = run_a
    with pytest.raises(InitError, match=r"glm.global_graph=False \(the retriever's: True\)"):
        resolve_init(_config(init=str(run), glm={"global_graph": False}), tmp_path / "b")
    with pytest.raises(InitError, match=r"glm.question_embedder.model='other/embedder'"):
        resolve_init(
            _config(init=str(run), glm={"question_embedder": {"model": "other/embedder"}}), tmp_path / "b"
        )
    # the embedder's device is not a weight
    effective, _ = resolve_init(
        _config(init=str(run), glm={"question_embedder": {"device": "cuda"}}), tmp_path / "b"
    )
    assert effective.glm.question_embedder.device == "cuda"


def test_unusable_init_directories(run_a, tmp_path):
    run, _ = run_a
    with pytest.raises(InitError, match="does not exist"):
        resolve_init(_config(init=str(tmp_path / "nope")), tmp_path / "b")
    with pytest.raises(InitError, match="not a retriever directory"):
        resolve_init(_config(init=str(tmp_path)), tmp_path / "b")
    with pytest.raises(InitError, match="this run's own export"):
        resolve_init(_config(init=str(run)), run)
    bad = tmp_path / "bad"
    shutil.copytree(run / "retriever", bad)
    (bad / "model.safetensors").write_bytes(b"garbage!garbage")
    with pytest.raises(InitError, match="not a safetensors file"):
        resolve_init(_config(init=str(bad)), tmp_path / "b")
    shutil.rmtree(bad / "tokenizer")
    with pytest.raises(InitError, match="no tokenizer/"):
        resolve_init(_config(init=str(bad)), tmp_path / "b")


def test_a_run_directory_keeps_the_init_it_started_from(tmp_path):
    a = {"path": "/runs/a/retriever", "weights_sha256": "a" * 64, "backbone": "'embedded' (t5)"}
    c = {**a, "path": "/runs/c/retriever", "weights_sha256": "c" * 64}
    out = tmp_path / "b"
    remember_init(out, a)
    assert json.loads((out / INIT_FILE).read_text()) == a
    remember_init(out, {**a, "path": "/elsewhere/a"})  # the same weights: the same command, resumes
    with pytest.raises(InitError, match=r"was started from init /runs/a/retriever .*give a new --out"):
        remember_init(out, c)
    with pytest.raises(InitError, match="re-run it with --init /runs/a/retriever"):
        remember_init(out, None)
    plain = tmp_path / "plain"
    remember_init(plain, None)  # no init, nothing recorded
    assert not plain.exists()
    plain.mkdir()
    (plain / "train_config.yaml").write_text("seed: 0\n")
    with pytest.raises(InitError, match="started without init"):
        remember_init(plain, a)


def test_warm_start_model_reproduces_the_exported_network(run_a, glm_index, embedder):
    run, original = run_a
    model, tokenizer = warm_start_model(run, embedder.dim)
    assert model.training  # ready to fine-tune
    batch = collate([ember_example(glm_index, tokenizer, embedder)], tokenizer.pad_token_id, 32, 128)
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(batch), original(batch))
        # a freshly built model of the same shape does not: the weights really come from the export
        fresh = GLMRetrieverModel(build_graph_encoder(BackboneConfig.model_validate(BACKBONE)), 384).eval()
        assert not torch.allclose(fresh(batch), original(batch))
    with pytest.raises(InitError, match="384-d question vectors"):
        warm_start_model(run, 768)


def test_retriever_json_records_the_init_and_loads_as_before(run_a, tmp_path):
    run, _ = run_a
    model, tokenizer = warm_start_model(run, 384)
    record = {"path": str(run), "weights_sha256": "ab" * 32, "backbone": "'embedded' (t5)"}
    save_retriever(tmp_path / "b" / "retriever", model, tokenizer, SETTINGS, init=record)
    meta = json.loads((tmp_path / "b" / "retriever" / "retriever.json").read_text())
    assert meta["init"] == record
    _, _, settings = load_retriever_model(tmp_path / "b")
    assert settings == SETTINGS
    # a retriever warm-started from this one records the whole lineage
    _, child = resolve_init(_config(init=str(tmp_path / "b")), tmp_path / "c")
    assert child["init"] == record


def test_retriever_backbone_of_legacy_and_bert_exports():
    assert retriever_backbone({"t5_config": {"num_layers": 2}}) == {}  # no name: nothing to compare
    bert = {"kind": "bert", "name": "minilm", "num_buckets": 32, "max_distance": 128}
    assert retriever_backbone({"backbone": {**bert, "absolute_positions": "none"}}) == {
        "model": "minilm",
        "absolute_positions": "none",
        "relative_attention_num_buckets": 32,
        "relative_attention_max_distance": 128,
        "frozen_local_layers": 0,  # exports before the option froze nothing
        "lora": None,  # nor trained LoRA updates
    }
    assert (
        retriever_backbone({"backbone": {**bert, "absolute_positions": "none", "frozen_local_layers": 3}})[
            "frozen_local_layers"
        ]
        == 3
    )
    lora = {"rank": 8, "alpha": 16, "dropout": 0.0, "target_modules": ["query"], "train_layer_norms": True}
    assert (
        retriever_backbone({"backbone": {**bert, "absolute_positions": "none", "lora": lora}})["lora"] == lora
    )


def test_the_cli_refuses_a_bad_init_before_starting_ray(small_index, tmp_path, capsys):
    code = main(
        ["train", "--index", str(small_index), "--out", str(tmp_path / "b"), "--init", str(tmp_path / "x")]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("hoprag: init retriever") and "does not exist" in err
    assert not (tmp_path / "b").exists()  # nothing written, no Ray started


def test_the_cli_names_both_backbones(run_a, small_index, tmp_path, capsys):
    run, _ = run_a
    argv = ["train", "--index", str(small_index), "--out", str(tmp_path / "b"), "--init", str(run)]
    assert main([*argv, "--set", "backbone.model=minilm"]) == 2
    err = capsys.readouterr().err
    assert "hoprag: init retriever" in err and "'embedded'" in err and "backbone.model='minilm'" in err


def test_zero_shot_on_an_index_the_retriever_never_saw(run_a, small_index, capsys):
    """``hoprag eval retrieval`` applies an exported retriever (here with a 3-hop sampler) to any index."""
    run, _ = run_a
    assert main(["eval", "retrieval", "--index", str(small_index), "--retriever", str(run), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n"] == 2 and result["errors"] == 0


def test_a_runs_attention_dropout_applies_to_a_bert_init(tmp_path):
    """Fine-tuning from a MiniLM retriever uses the config's ``backbone.attention_dropout`` where it
    sets one (the retriever's otherwise); a T5 retriever has none and refuses it by name."""
    minilm = BackboneConfig(model="minilm")
    model = GLMRetrieverModel(build_graph_encoder(minilm), question_dim=384)
    save_retriever(tmp_path / "bert" / "retriever", model, load_tokenizer(minilm), GLMSettings())

    def probabilities(net):
        return {layer.attention.self.dropout.p for layer in net.encoder.backbone.encoder.layer}

    assert probabilities(warm_start_model(tmp_path / "bert", 384)[0]) == {0.1}
    assert probabilities(warm_start_model(tmp_path / "bert", 384, attention_dropout=0.0)[0]) == {0.0}
    config = _config(init=str(tmp_path / "bert"), backbone={"model": "minilm", "attention_dropout": 0.0})
    assert resolve_init(config, tmp_path / "b")[0].backbone.attention_dropout == 0.0


def test_attention_dropout_is_refused_for_a_t5_init(run_a, tmp_path):
    run, _ = run_a
    config = _config(init=str(run), backbone={"model": "t5-small", "attention_dropout": 0.0})
    with pytest.raises(InitError, match=r"backbone.attention_dropout \(BERT backbones only\)"):
        resolve_init(config, tmp_path / "b")


def test_a_lora_init_fine_tunes_its_lora_updates(tmp_path):
    """A LoRA retriever (what hoprag can ship small) as init: the run's backbone is LoRA on the same
    checkpoint, the worker's model trains the updates only, and asking for full training is refused."""
    cfg = BackboneConfig(model="minilm", lora={"rank": 4})
    model = GLMRetrieverModel(build_graph_encoder(cfg), question_dim=384)
    save_retriever(tmp_path / "lora" / "retriever", model, load_tokenizer(cfg), GLMSettings())
    effective, record = resolve_init(_config(init=str(tmp_path / "lora")), tmp_path / "b")
    assert effective.backbone.lora is not None and effective.backbone.lora.rank == 4
    assert "lora=rank 4" in record["backbone"]
    warm, _ = warm_start_model(tmp_path / "lora", 384)
    trained = {n for n, p in warm.named_parameters() if p.requires_grad}
    assert any(".lora_B." in n for n in trained) and not any(".base_layer." in n for n in trained)
    with pytest.raises(InitError, match=r"backbone\.lora=None"):
        resolve_init(
            _config(init=str(tmp_path / "lora"), backbone={"model": "minilm", "lora": None}), tmp_path / "c"
        )
