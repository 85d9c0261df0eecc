"""``hoprag bench train``'s backbone latency breakdown: stage timing hooks and the aggregation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from benchmarks.retrieval_latency import (
    LATENCY_STAGES,
    StageTimer,
    paired_ratio,
    sample_total,
    split_forward,
    summarize_latency,
    timed_glm,
)
from hoprag.glm.bert_encoder import GraphBertEncoder
from hoprag.glm.encoder import GraphT5Encoder
from hoprag.glm.levi import bucket_ids
from hoprag.glm.model import GLMBatch, GLMRetrieverModel


def test_summary_has_median_p90_per_stage_and_a_total_per_sample() -> None:
    samples = [
        {"sampling": 0.001, "attention": 0.010, "attention_projections": 0.004, "feed_forward": 0.005},
        {"sampling": 0.003, "attention": 0.020, "attention_projections": 0.006, "feed_forward": 0.001},
        {"sampling": 0.002, "attention": 0.030, "attention_projections": 0.008, "feed_forward": 0.003},
    ]
    summary = summarize_latency(samples)
    assert summary["samples"] == 3
    # totals 16, 24, 35 ms: the nested projections are inside attention, not added again
    assert sample_total(samples[0]) == pytest.approx(0.016)
    assert summary["total"] == {"median_ms": 24.0, "p90_ms": pytest.approx(32.8)}
    assert summary["stages"]["sampling"] == {"median_ms": 2.0, "p90_ms": pytest.approx(2.8)}
    assert summary["stages"]["attention_projections"]["median_ms"] == 6.0
    # pipeline order, only the stages that were timed
    assert list(summary["stages"]) == ["sampling", "attention", "attention_projections", "feed_forward"]
    assert summarize_latency([]) == {}


def test_split_forward_attributes_the_encoder_remainder_and_the_scoring() -> None:
    seconds = {"model": 1.0, "encoder": 0.9, "bias": 0.1, "embedding": 0.05, "attention": 0.4}
    seconds |= {"attention_projections": 0.1, "feed_forward": 0.3, "collate": 0.2}
    out = split_forward(seconds)
    assert "model" not in out and "encoder" not in out
    assert out["encoder_other"] == pytest.approx(0.05)
    assert out["scoring"] == pytest.approx(0.1)
    assert sample_total(out) == pytest.approx(1.2)  # collate + the whole model forward


def test_paired_ratio_is_per_sample() -> None:
    # the machine slowed down for the second pair: per-pair ratios stay 2 and 1.5
    assert paired_ratio([2.0, 30.0], [1.0, 20.0]) == {"median": 1.75, "p90": 1.95}


def test_stage_timer_nests_and_resets() -> None:
    timer = StageTimer()
    with timer.stage("a"), timer.stage("a"):  # re-entrant: both spans counted
        pass
    with timer.stage("b"):
        sum(range(10_000))
    taken = timer.take()
    assert set(taken) == set(StageTimer.CLOCKS)
    assert set(taken["wall"]) == {"a", "b"} and taken["wall"]["b"] > 0
    assert timer.take() == {clock: {} for clock in StageTimer.CLOCKS}


def _tiny_batch(n_tokens: int = 7, n_entities: int = 2) -> GLMBatch:
    positions = np.zeros((1, n_tokens, n_tokens), dtype=np.int32)
    kinds = np.zeros((1, n_tokens, n_tokens), dtype=np.int8)
    buckets, attention = bucket_ids(positions, kinds, 8, 16)
    pooling = torch.zeros(1, n_entities, n_tokens)
    pooling[0, 0, :2] = 0.5
    pooling[0, 1, 2:4] = 0.5
    return GLMBatch(
        input_ids=torch.arange(1, n_tokens + 1).unsqueeze(0),
        node_positions=torch.zeros(1, n_tokens, dtype=torch.long),
        buckets=buckets,
        attention=attention,
        pooling=pooling,
        entity_mask=torch.ones(1, n_entities, dtype=torch.bool),
        question_vectors=torch.randn(1, 8),
        labels=torch.zeros(1, n_entities),
    )


def _tiny_encoder(kind: str) -> torch.nn.Module:
    from transformers import BertConfig, BertModel, T5Config, T5EncoderModel

    torch.manual_seed(0)
    if kind == "t5":
        config = T5Config(
            vocab_size=32,
            d_model=16,
            d_kv=8,
            d_ff=32,
            num_layers=2,
            num_heads=2,
            relative_attention_num_buckets=8,
            relative_attention_max_distance=16,
            feed_forward_proj="gated-gelu",
        )
        return GraphT5Encoder(T5EncoderModel(config))
    config = BertConfig(
        vocab_size=32, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32
    )
    encoder = GraphBertEncoder(BertModel(config, add_pooling_layer=False), num_buckets=8, max_distance=16)
    torch.nn.init.normal_(encoder.graph_bias.weight)
    return encoder


@pytest.mark.parametrize("kind", ["t5", "bert"])
def test_timed_glm_times_every_stage_without_changing_the_output(kind: str) -> None:
    model = GLMRetrieverModel(_tiny_encoder(kind), question_dim=8).eval()
    batch = _tiny_batch()
    timer = StageTimer()
    with torch.no_grad():
        plain = model(batch)
        with timed_glm(model, timer):
            timed = model(batch)
    assert torch.equal(plain, timed)
    stages = split_forward(timer.take()["wall"])
    forward_stages = {"bias", "embedding", "attention", "attention_projections", "feed_forward"}
    assert forward_stages | {"encoder_other", "scoring"} == set(stages)
    assert set(stages) <= set(LATENCY_STAGES)
    assert all(stages[s] > 0 for s in forward_stages)
    assert stages["attention_projections"] < stages["attention"]
    # the hooks and wrapped methods are gone after the block
    with torch.no_grad():
        assert torch.equal(model(batch), plain)
    assert timer.take()["wall"] == {}
    assert "attention_bias" not in model.encoder.__dict__ and "embed" not in model.encoder.__dict__


def test_gnn_latency_section_times_both_retrievers_on_the_same_subgraphs() -> None:
    from benchmarks.train import measure_gnn_latency

    out = measure_gnn_latency(2, kg_sizes=(2_000,), max_triplets=30, glm_backbone="embedded")
    section = out["kg_2000_triples"]
    assert out["gnn_parameters"] > 0 and section["mean_triples"] == 30
    for name in ("gnn", "glm_embedded"):
        assert section[name]["samples"] == 2
        assert set(section[name]["stages"]) == {"sampling", "layout", "forward", "ranking"}
    assert section["gnn_over_glm"]["median"] > 0


def test_frozen_layer_steps_time_each_setting_on_the_same_subgraphs() -> None:
    from benchmarks.train import measure_frozen_layer_steps

    out = measure_frozen_layer_steps([0, 3], steps=2, max_triplets=10)
    rows = out["by_frozen_layers"]
    assert set(rows) == {"0", "3"} and out["steps"] == 2 and out["mean_tokens"] > 0
    assert rows["0"]["ratio_to_first"]["median"] == 1.0
    assert rows["3"]["median_s"] > 0 and rows["3"]["ratio_to_first"]["median"] > 0
    # freezing the embeddings and 3 layers leaves the upper layers, the bias table and the head
    assert rows["3"]["trained_parameters"] < rows["0"]["trained_parameters"] / 2
