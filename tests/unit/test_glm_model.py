"""The GLM retriever network end to end on a tiny index: examples, batches, logits, loss, gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hoprag.glm.backbone import BackboneConfig, build_backbone, load_tokenizer
from hoprag.glm.data import build_example, collate
from hoprag.glm.encoder import GraphT5Encoder
from hoprag.glm.levi import encode_levi_graph
from hoprag.glm.losses import retrieval_loss
from hoprag.glm.model import GLMRetrieverModel
from hoprag.glm.sampler import SamplerConfig
from tests.support.glm import ember_example


@pytest.fixture(scope="module")
def parts():
    cfg = BackboneConfig(num_layers=2)
    torch.manual_seed(0)
    encoder = GraphT5Encoder(build_backbone(cfg))
    return GLMRetrieverModel(encoder, question_dim=384).eval(), load_tokenizer(cfg)


def test_example_contents(glm_index, parts, embedder):
    _, tok = parts
    ex = ember_example(glm_index, tok, embedder)
    names = [glm_index.entity_names[e] for e in ex.entity_ids]
    assert set(names) == {"the ember road", "mira castell", "tavin orlo", "dornwick"}  # 2 hops from the seed
    assert dict(zip(names, ex.labels.tolist(), strict=True))["mira castell"] == 1.0
    assert ex.positives_outside_subgraph == 0
    far = ember_example(glm_index, tok, embedder, supporting=("halvaria",))
    assert far.positives_outside_subgraph == 1 and far.labels.sum() == 0


def test_forward_loss_backward_and_differential_lrs(glm_index, parts, embedder):
    model, tok = parts
    model.train()
    batch = collate(
        [
            ember_example(glm_index, tok, embedder),
            ember_example(glm_index, tok, embedder, seeds=("dornwick",)),
        ],
        tok.pad_token_id,
        32,
        128,
    )
    logits = model(batch)
    assert logits.shape == batch.entity_mask.shape
    loss = retrieval_loss(logits, batch.labels, batch.entity_mask)
    loss.backward()
    assert torch.isfinite(loss)
    # the loss reaches the scoring head and, through the encoder, the token embeddings
    assert model.entity_scorer[0].weight.grad.abs().sum() > 0
    assert model.encoder.backbone.shared.weight.grad.abs().sum() > 0
    bias_grad = (
        model.encoder.backbone.encoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight.grad
    )
    assert bias_grad is not None and bias_grad[32:].abs().sum() > 0  # the extra buckets are trained
    groups = model.parameter_groups(5e-4, 1e-4)
    assert [g["lr"] for g in groups] == [5e-4, 1e-4]
    assert sum(p.numel() for g in groups for p in g["params"]) == sum(p.numel() for p in model.parameters())
    model.zero_grad()
    model.eval()


def test_logits_do_not_depend_on_concept_or_triple_order(glm_index, parts, embedder):
    model, tok = parts
    ex = ember_example(glm_index, tok, embedder)
    names = [glm_index.entity_names[e] for e in ex.entity_ids]
    triples = [glm_index.triple(t) for t in ex.subgraph.triple_ids]
    q = "Where was the star of The Ember Road born?"
    shuffled = encode_levi_graph(list(reversed(triples)), q, tok, concepts=list(reversed(names)))
    ex2 = ember_example(glm_index, tok, embedder)
    ex2.encoding = shuffled
    ex2.entity_ids = list(reversed(ex.entity_ids))
    ex2.labels = ex.labels[::-1].copy()
    with torch.no_grad():
        a = model(collate([ex], tok.pad_token_id, 32, 128))[0]
        b = model(collate([ex2], tok.pad_token_id, 32, 128))[0]
    assert torch.allclose(a, b.flip(0), atol=1e-4)


def test_tiny_budgets_and_unknown_seeds(glm_index, parts, embedder):
    _, tok = parts
    ex = build_example(
        glm_index,
        "What about Halvaria?",
        ["halvaria"],
        np.zeros(384, np.float32),
        tok,
        SamplerConfig(max_hops=1, max_triplets=1),
    )
    assert [glm_index.entity_names[e] for e in ex.entity_ids] == ["dornwick", "halvaria"]
    nothing = build_example(
        glm_index, "Unknown?", ["no such entity"], np.zeros(384, np.float32), tok, SamplerConfig()
    )
    assert nothing.entity_ids == [] and nothing.encoding.num_graph_tokens == 0


def test_an_empty_subgraph_in_a_batch_is_harmless(glm_index, parts, embedder):
    model, tok = parts
    empty = build_example(glm_index, "Unknown?", [], np.zeros(384, np.float32), tok, SamplerConfig())
    batch = collate([ember_example(glm_index, tok, embedder), empty], tok.pad_token_id, 32, 128)
    with torch.no_grad():
        logits = model(batch)
    assert torch.isfinite(logits).all()
    assert not batch.entity_mask[1].any()
    assert torch.isfinite(retrieval_loss(logits, batch.labels, batch.entity_mask))


def test_padding_the_token_axis_to_a_multiple_changes_no_logit(glm_index, parts, embedder):
    model, tok = parts
    model.eval()
    ex = ember_example(glm_index, tok, embedder)
    plain = collate([ex], tok.pad_token_id, 32, 128)
    padded = collate([ex], tok.pad_token_id, 32, 128, pad_to_multiple_of=64)
    assert padded.input_ids.shape[1] % 64 == 0 and padded.input_ids.shape[1] > plain.input_ids.shape[1]
    assert not padded.attention[0, plain.input_ids.shape[1] :].any()  # pad tokens attend to nothing
    with torch.no_grad():
        torch.testing.assert_close(model(padded), model(plain))


def test_the_attention_bias_is_contiguous_in_the_compute_dtype(glm_index, parts, embedder):
    model, tok = parts
    batch = collate([ember_example(glm_index, tok, embedder)], tok.pad_token_id, 32, 128)
    bias = model.encoder.attention_bias(batch.buckets, batch.attention, torch.bfloat16)
    # SDPA's fused kernels read the bias only with a contiguous last axis, in the query's dtype
    assert bias.is_contiguous() and bias.dtype == torch.bfloat16
    assert bias.shape == (1, model.encoder.backbone.config.num_heads, *batch.buckets.shape[1:])
    assert (bias[0, :, ~batch.attention[0]] == torch.finfo(torch.bfloat16).min).all()


@pytest.mark.parametrize("backbone", ["embedded", "minilm"])
def test_activation_checkpointing_gives_the_same_gradients(glm_index, embedder, backbone):
    from hoprag.glm.backbone import build_graph_encoder

    cfg = BackboneConfig(model=backbone, num_layers=2)
    tok = load_tokenizer(cfg)
    batch = collate([ember_example(glm_index, tok, embedder)], tok.pad_token_id, 32, 128)
    grads, saved = [], []
    for on in (False, True):
        torch.manual_seed(0)
        model = GLMRetrieverModel(build_graph_encoder(cfg), question_dim=384).train()
        for module in model.modules():  # training mode (checkpointing is on only then), no dropout noise
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        model.encoder.set_activation_checkpointing(on)
        kept = []  # bytes the forward keeps for the backward

        def keep(tensor: torch.Tensor, kept: list[int] = kept) -> torch.Tensor:
            kept.append(tensor.numel() * tensor.element_size())
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
            loss = retrieval_loss(model(batch), batch.labels, batch.entity_mask)
        loss.backward()
        saved.append(sum(kept))
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    assert saved[1] < 0.6 * saved[0], saved  # the layers' activations are recomputed, not kept
    assert grads[0].keys() == grads[1].keys()
    for name, grad in grads[0].items():
        torch.testing.assert_close(grads[1][name], grad, msg=name)


def test_activation_checkpointing_is_refused_for_the_gnn():
    from training.config import TrainConfig

    with pytest.raises(ValueError, match="a gnn run has none"):
        TrainConfig.model_validate({"retriever": "gnn", "deepspeed": {"activation_checkpointing": True}})
