"""Exported GLM retriever directories and the GLM retriever behind the Retriever protocol."""

from __future__ import annotations

import json
import math

import pytest
import torch

from hoprag.glm.backbone import BackboneConfig, build_backbone, load_tokenizer
from hoprag.glm.data import collate
from hoprag.glm.encoder import GraphT5Encoder
from hoprag.glm.model import GLMRetrieverModel
from hoprag.glm.retriever import (
    GLMRetriever,
    GLMSettings,
    RetrieverLoadError,
    load_retriever_model,
    save_retriever,
)
from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import RetrievalQuery
from hoprag.retrieval.dense import DenseRetriever
from hoprag.retrieval.loading import load_retriever, with_doc_ranker
from hoprag.retrieval.subgraph import DOC_RANKERS, retrieve_by_each_ranker
from hoprag_cli import main
from tests.support.glm import ember_example


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    cfg = BackboneConfig(num_layers=2)
    torch.manual_seed(0)
    model = GLMRetrieverModel(GraphT5Encoder(build_backbone(cfg)), question_dim=384).eval()
    tok = load_tokenizer(cfg)
    run = tmp_path_factory.mktemp("run")
    save_retriever(run / "retriever", model, tok, GLMSettings())
    return run, model, tok


def test_round_trip_gives_identical_logits(exported, glm_index, embedder):
    run, model, tok = exported
    loaded, tok2, settings = load_retriever_model(run)  # RUN_DIR works as well as RUN_DIR/retriever
    assert settings == GLMSettings()
    batch = collate([ember_example(glm_index, tok, embedder)], tok.pad_token_id, 32, 128)
    with torch.no_grad():
        assert torch.equal(model(batch), loaded(batch))
    assert tok2("Mira Castell")["input_ids"] == tok("Mira Castell")["input_ids"]


def test_bad_retriever_directories(exported, tmp_path):
    run, _, _ = exported
    with pytest.raises(RetrieverLoadError, match="not a retriever directory"):
        load_retriever_model(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in (run / "retriever").iterdir():
        if f.is_file():
            (bad / f.name).write_bytes(f.read_bytes())
    (bad / "tokenizer").symlink_to(run / "retriever" / "tokenizer")
    (bad / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(RetrieverLoadError, match="cannot be read"):
        load_retriever_model(bad)
    meta = json.loads((bad / "retriever.json").read_text())
    (bad / "retriever.json").write_text(json.dumps({**meta, "settings": {**meta["settings"], "hops": 3}}))
    with pytest.raises(RetrieverLoadError, match=r"settings this hoprag cannot use \(unknown setting hops"):
        load_retriever_model(bad)
    meta["format_version"] = 99
    (bad / "retriever.json").write_text(json.dumps(meta))
    with pytest.raises(RetrieverLoadError, match="format"):
        load_retriever_model(bad)


def test_retrieve_ranks_documents_and_falls_back_without_seeds(exported, small_index, embedder):
    run, _, _ = exported
    model, tok, settings = load_retriever_model(run)
    ix = KGIndex(small_index)
    glm = GLMRetriever(ix, model, tok, settings, embedder, fallback=DenseRetriever(ix, embedder))
    seeded, unseeded = glm.retrieve(
        [
            RetrievalQuery("Which drug treats Kellan fever?", ("kellan fever",)),
            RetrievalQuery("Who directed it?"),
        ],
        k=2,
    )
    assert (
        seeded.documents and seeded.documents[0].title == "Ostarizumab"
    )  # the only document with that entity
    assert {name for name, _ in seeded.entities} == {"kellan fever", "ostarizumab"}
    assert not seeded.notes
    assert unseeded.notes == ["no linked seed entity: dense fallback"] and len(unseeded.documents) == 2


def test_eval_cli_accepts_run_dirs(exported, small_index, capsys):
    run, _, _ = exported
    assert main(["eval", "retrieval", "--index", str(small_index), "--retriever", str(run), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n"] == 2 and result["retriever"].startswith("glm:")
    assert result["fallbacks"] == 1  # the second question has no linked entity


def test_the_configured_document_ranker_is_used(exported, small_index, embedder):
    run, _, _ = exported
    model, tok, settings = load_retriever_model(run)
    ix = KGIndex(small_index)
    query = [RetrievalQuery("Which drug treats Kellan fever?", ("kellan fever",))]
    plain = GLMRetriever(ix, model, tok, settings, embedder).retrieve(query, k=1)[0]
    weighted_settings = settings.model_copy(update={"doc_ranker": "score_idf"})
    weighted = GLMRetriever(ix, model, tok, weighted_settings, embedder).retrieve(query, k=1)[0]
    assert plain.documents[0].score == 2.0  # two entities, each only in this document
    # the same two entities, each voting 1 / 1 times its probability (sigmoid of its logit)
    logits = dict(weighted.entities)
    assert set(logits) == {"kellan fever", "ostarizumab"}
    assert weighted.documents[0].score == pytest.approx(sum(1 / (1 + math.exp(-s)) for s in logits.values()))
    assert weighted.documents[0].score < plain.documents[0].score


def test_every_ranker_from_one_scoring_matches_each_ranker_alone(exported, small_index, embedder):
    run, _, _ = exported
    model, tok, settings = load_retriever_model(run)
    ix = KGIndex(small_index)
    queries = [
        RetrievalQuery("Which drug treats Kellan fever?", ("kellan fever",)),
        RetrievalQuery("Who directed it?"),  # no seed: the dense fallback answers, once
    ]
    glm = GLMRetriever(ix, model, tok, settings, embedder, fallback=DenseRetriever(ix, embedder))
    forwards = []
    score = glm.score
    glm.score = lambda qs: forwards.append(len(qs)) or score(qs)  # type: ignore[method-assign]
    by_ranker = retrieve_by_each_ranker(glm, queries, k=2)
    assert forwards == [1] and set(by_ranker) == set(DOC_RANKERS)
    for ranker, results in by_ranker.items():
        alone = GLMRetriever(
            ix,
            model,
            tok,
            settings.model_copy(update={"doc_ranker": ranker}),
            embedder,
            DenseRetriever(ix, embedder),
        ).retrieve(queries, k=2)
        assert results == alone, ranker  # documents, entities and notes, fallback note once


def test_eval_retrieval_can_rank_with_another_document_ranker(exported, small_index, capsys):
    run, _, _ = exported
    argv = ["eval", "retrieval", "--index", str(small_index), "--retriever", str(run), "--json"]
    assert main([*argv, "--doc-ranker", "score"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 2
    with pytest.raises(SystemExit):
        main([*argv, "--doc-ranker", "bm25"])
    capsys.readouterr()
    assert main([*argv[:-3], "--retriever", "dense", "--doc-ranker", "score"]) == 2
    assert "applies to GLM and GNN retrievers" in capsys.readouterr().err


def test_with_doc_ranker_reaches_the_graph_part_of_a_fused_retriever(exported, small_index, embedder):
    run, _, _ = exported
    ix = KGIndex(small_index)
    fused = with_doc_ranker(load_retriever(f"{run}+dense", ix, embedder), "score")
    glm, dense = fused.retrievers
    assert glm.settings.doc_ranker == "score" and not hasattr(dense, "settings")


def test_eval_retrieval_on_a_training_runs_validation_questions(exported, small_index, capsys, tmp_path):
    run, _, _ = exported
    argv = ["eval", "retrieval", "--index", str(small_index), "--retriever", str(run), "--json"]
    assert main(argv) == 0
    everything = json.loads(capsys.readouterr().out)
    held_back = tmp_path / "run"
    held_back.mkdir()
    (held_back / "train_config.yaml").write_text("train_split: test\nvalidation_fraction: 0.9\n")
    assert main([*argv, "--split", "train", "--validation-of", str(held_back)]) == 0
    validation = json.loads(capsys.readouterr().out)
    assert validation["n"] == 1 and everything["n"] == 2  # the one linked test question of two
    assert main([*argv, "--validation-of", str(tmp_path)]) == 2
    assert "no train_config.yaml" in capsys.readouterr().err
