"""The MiniLM (BERT) GLM backbone: MiniLM's states at zero bias, the graph bias and masks, the
permutation invariance of the T5 GLM, training and export."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from hoprag.embedding import packaged_minilm_path
from hoprag.glm.artifact import RetrieverLoadError
from hoprag.glm.backbone import (
    BackboneConfig,
    backbone_summary,
    build_graph_encoder,
    is_bert_backbone,
    load_tokenizer,
)
from hoprag.glm.bert_encoder import GraphBertEncoder
from hoprag.glm.data import collate
from hoprag.glm.levi import bucket_ids, encode_levi_graph, pad_batch
from hoprag.glm.lora import GLMLoRAConfig, merge_lora_updates
from hoprag.glm.losses import retrieval_loss
from hoprag.glm.model import GLMRetrieverModel
from hoprag.glm.retriever import GLMSettings, load_retriever_model, save_retriever
from tests.support.glm import ember_example

MINILM = BackboneConfig(model="minilm")
QUESTION = "Where was the star of The Ember Road born?"


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(MINILM)


@pytest.fixture(scope="module")
def encoder():
    """The packaged MiniLM as a global GLM encoder, bias table still at its zero init."""
    return build_graph_encoder(MINILM).eval()


def _inputs(encodings, global_graph=True):
    padded = pad_batch(encodings, 0)
    buckets, mask = bucket_ids(padded["positions"], padded["kinds"], 32, 128, global_graph)
    return (
        torch.as_tensor(padded["input_ids"]),
        buckets,
        mask,
        torch.as_tensor(padded["node_positions"], dtype=torch.long),
    )


def test_weights_are_minilms_and_the_bias_table_starts_at_zero(encoder, tok):
    minilm = load_file(f"{packaged_minilm_path()}/model.safetensors")
    state = encoder.backbone.state_dict()
    for key, value in minilm.items():
        if key.startswith(("embeddings.", "encoder.")) and key in state:
            assert torch.equal(state[key], value.to(state[key].dtype)), key
    assert sum(k.startswith("encoder.") for k in state) == sum(k.startswith("encoder.") for k in minilm)
    assert encoder.graph_bias.weight.shape == (32 + 3, 12)
    assert not encoder.graph_bias.weight.any()
    assert encoder.d_model == 384 and tok.vocab_size == encoder.backbone.config.vocab_size
    assert backbone_summary(encoder)["layers"] == 6 and backbone_summary(encoder)["buckets"] == 32
    local = build_graph_encoder(MINILM, global_graph=False, with_text=False)
    assert local.graph_bias.num_embeddings == 32


def test_zero_bias_without_masking_reproduces_minilm(encoder, tok):
    """The question alone: per-node positions are its ordinary positions; padded batch vs HF's mask."""
    short = encode_levi_graph([], "Who directed it?", tok)
    long = encode_levi_graph([], QUESTION, tok)
    ids, buckets, mask, node_positions = _inputs([long, short])
    with torch.no_grad():
        ours = encoder(ids, buckets, mask, node_positions)
        hf_mask = torch.zeros_like(ids)
        hf_mask[0, : long.length] = 1
        hf_mask[1, : short.length] = 1
        stock = encoder.backbone(input_ids=ids, attention_mask=hf_mask).last_hidden_state
    assert torch.allclose(ours[0], stock[0], atol=1e-5)
    assert torch.allclose(ours[1, : short.length], stock[1, : short.length], atol=1e-5)


def test_sequence_positions_reproduce_minilm_on_the_concatenated_tokens(tok):
    """A whole graph + question with every pair unmasked: stock MiniLM on the same token sequence."""
    enc = build_graph_encoder(MINILM.model_copy(update={"absolute_positions": "sequence"})).eval()
    levi = encode_levi_graph([("mira castell", "born in", "dornwick")], QUESTION, tok)
    ids, buckets, mask, node_positions = _inputs([levi])
    assert mask.all()  # global GLM + question: nothing is masked
    with torch.no_grad():
        ours = enc(ids, buckets, mask, node_positions)
        stock = enc.backbone(input_ids=ids).last_hidden_state
    assert torch.allclose(ours, stock, atol=1e-5)


def test_graph_bias_changes_states_and_local_masks_are_honoured(tok):
    enc = build_graph_encoder(MINILM, global_graph=False, with_text=False).eval()
    torch.manual_seed(0)
    torch.nn.init.normal_(enc.graph_bias.weight)
    first = ("mira castell", "born in", "dornwick")
    a = encode_levi_graph([first, ("tavin orlo", "directed", "the ember road")], None, tok)
    b = encode_levi_graph([first, ("halvaria", "capital", "ostara")], None, tok)
    with torch.no_grad():
        states_a = enc(*_inputs([a], global_graph=False))[0]
        states_b = enc(*_inputs([b], global_graph=False))[0]
        zero = build_graph_encoder(MINILM, global_graph=False, with_text=False).eval()
        unbiased = zero(*_inputs([a], global_graph=False))[0]
    # the first triple's tokens (its two concepts come first) cannot see the other triple at all
    n = a.concept_spans[1][1]
    assert torch.allclose(states_a[:n], states_b[:n], atol=1e-5)
    assert not torch.allclose(states_a[:n], unbiased[:n], atol=1e-3)  # the bias is used
    # the bias tensor every layer adds: the table row of each pair's bucket, per head; blocked pairs
    _, buckets, mask, _ = _inputs([a, encode_levi_graph([first], None, tok)], global_graph=False)
    bias = enc.attention_bias(buckets, mask, torch.float32)
    expected = enc.graph_bias(buckets).permute(0, 3, 1, 2)
    assert bias.shape == expected.shape and bias.is_contiguous()
    assert torch.equal(bias[mask.unsqueeze(1).expand_as(bias)], expected[mask.unsqueeze(1).expand_as(bias)])
    assert (bias[~mask.unsqueeze(1).expand_as(bias)] == torch.finfo(torch.float32).min).all()
    assert (~mask[0]).any() and (~mask[1]).any()  # far pairs and padding are both blocked


@pytest.fixture(scope="module")
def minilm_glm():
    torch.manual_seed(0)
    model = GLMRetrieverModel(build_graph_encoder(MINILM), question_dim=384).eval()
    with torch.no_grad():
        torch.nn.init.normal_(model.encoder.graph_bias.weight)  # as if trained: buckets matter
    return model


def _example_and_its_reversal(glm_index, tok, embedder):
    """One example, and the same subgraph with its concepts and triples in reverse order."""
    ex = ember_example(glm_index, tok, embedder)
    names = [glm_index.entity_names[e] for e in ex.entity_ids]
    triples = [glm_index.triple(t) for t in ex.subgraph.triple_ids]
    reversed_ex = ember_example(glm_index, tok, embedder)
    reversed_ex.encoding = encode_levi_graph(
        list(reversed(triples)), QUESTION, tok, concepts=list(reversed(names))
    )
    reversed_ex.entity_ids = list(reversed(ex.entity_ids))
    reversed_ex.labels = ex.labels[::-1].copy()
    return ex, reversed_ex


def test_logits_do_not_depend_on_concept_or_triple_order(glm_index, minilm_glm, tok, embedder):
    """The T5 GLM's permutation test (test_glm_model.py), with the MiniLM backbone."""
    ex, ex2 = _example_and_its_reversal(glm_index, tok, embedder)
    with torch.no_grad():
        a = minilm_glm(collate([ex], tok.pad_token_id, 32, 128))[0]
        b = minilm_glm(collate([ex2], tok.pad_token_id, 32, 128))[0]
    assert torch.allclose(a, b.flip(0), atol=1e-4)
    # whole-sequence absolute positions would make the order matter: why per_node is the default
    encoder = minilm_glm.encoder
    encoder.absolute_positions = "sequence"
    try:
        with torch.no_grad():
            c = minilm_glm(collate([ex2], tok.pad_token_id, 32, 128))[0]
    finally:
        encoder.absolute_positions = "per_node"
    assert not torch.allclose(a, c.flip(0), atol=1e-4)


def test_forward_loss_backward_with_the_minilm_backbone(glm_index, tok, embedder):
    torch.manual_seed(0)
    model = GLMRetrieverModel(build_graph_encoder(MINILM), question_dim=384).train()
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
    assert model.entity_scorer[0].weight.grad.abs().sum() > 0
    assert model.encoder.backbone.embeddings.word_embeddings.weight.grad.abs().sum() > 0
    assert model.encoder.backbone.encoder.layer[5].attention.self.query.weight.grad.abs().sum() > 0
    bias_grad = model.encoder.graph_bias.weight.grad
    assert bias_grad is not None and bias_grad[32:].abs().sum() > 0  # the extra buckets are trained
    head, backbone = model.parameter_groups(5e-4, 1e-4)
    assert any(p is model.encoder.graph_bias.weight for p in head["params"])  # new, so at the head's rate
    assert sum(p.numel() for g in (head, backbone) for p in g["params"]) == sum(
        p.numel() for p in model.parameters()
    )


def test_exported_minilm_retriever_round_trips(tmp_path, glm_index, minilm_glm, tok, embedder):
    run = tmp_path / "run"
    save_retriever(run / "retriever", minilm_glm, tok, GLMSettings())
    meta = json.loads((run / "retriever" / "retriever.json").read_text())
    assert meta["backbone"]["kind"] == "bert" and meta["backbone"]["name"] == "minilm"
    assert meta["backbone"]["absolute_positions"] == "per_node" and "t5_config" not in meta
    loaded, tok2, settings = load_retriever_model(run)
    assert isinstance(loaded.encoder, GraphBertEncoder) and settings == GLMSettings()
    batch = collate([ember_example(glm_index, tok, embedder)], tok.pad_token_id, 32, 128)
    with torch.no_grad():
        assert torch.equal(minilm_glm(batch), loaded(batch))
    assert tok2(QUESTION)["input_ids"] == tok(QUESTION)["input_ids"]


def test_t5_exports_record_their_backbone_and_older_exports_still_load(tmp_path, glm_index, tok, embedder):
    torch.manual_seed(0)
    t5 = GLMRetrieverModel(build_graph_encoder(BackboneConfig(num_layers=1)), question_dim=384).eval()
    out = save_retriever(tmp_path / "t5", t5, tok, GLMSettings())
    meta = json.loads((out / "retriever.json").read_text())
    assert meta["backbone"] == {"kind": "t5", "name": "embedded"} and meta["t5_config"]["num_layers"] == 1
    del meta["backbone"]  # as exported before backbones were recorded
    (out / "retriever.json").write_text(json.dumps(meta))
    loaded, _, _ = load_retriever_model(out)
    batch = collate([ember_example(glm_index, tok, embedder)], tok.pad_token_id, 32, 128)
    with torch.no_grad():
        assert torch.equal(t5(batch), loaded(batch))


def test_backbone_names_and_options(encoder):
    assert BackboneConfig(model="embedded-t5").model == "embedded" == BackboneConfig().model
    assert BackboneConfig().absolute_positions == "per_node"
    assert is_bert_backbone(MINILM) and not is_bert_backbone(BackboneConfig())
    assert is_bert_backbone(BackboneConfig(model=packaged_minilm_path()))  # any BERT checkpoint path
    with pytest.raises(ValueError, match="absolute_positions"):
        GraphBertEncoder(encoder.backbone, absolute_positions="learned")  # type: ignore[arg-type]
    ids = torch.zeros(1, 600, dtype=torch.long)
    assert encoder.position_ids(ids, None).max() == 511  # sequence positions saturate at BERT's limit
    unpositioned = build_graph_encoder(MINILM.model_copy(update={"absolute_positions": "none"}))
    assert unpositioned.position_ids(ids, None) is None
    assert not unpositioned.backbone.embeddings.position_embeddings.weight.requires_grad


def _without_hidden_dropout(encoder: GraphBertEncoder) -> GraphBertEncoder:
    """Switch off every dropout but the attention probabilities' (embeddings and layer outputs)."""
    encoder.backbone.embeddings.dropout.p = 0.0
    for layer in encoder.backbone.encoder.layer:
        layer.attention.output.dropout.p = 0.0
        layer.output.dropout.p = 0.0
    return encoder


def test_attention_dropout_is_the_configs_and_zero_makes_training_deterministic(tmp_path, tok):
    """``backbone.attention_dropout``: None keeps MiniLM's 0.1 (train-mode attention is random);
    0 sets every layer, so with the other dropouts off a training forward equals evaluation's. The
    export records it; the embedded T5 rejects it."""
    levi = encode_levi_graph([("mira castell", "born in", "dornwick")], QUESTION, tok)
    inputs = _inputs([levi])
    stock = _without_hidden_dropout(build_graph_encoder(MINILM))
    assert stock.backbone.config.attention_probs_dropout_prob == 0.1
    off = _without_hidden_dropout(build_graph_encoder(MINILM.model_copy(update={"attention_dropout": 0.0})))
    assert [layer.attention.self.dropout.p for layer in off.backbone.encoder.layer] == [0.0] * 6
    assert off.describe()["config"]["attention_probs_dropout_prob"] == 0.0
    with torch.no_grad():
        torch.manual_seed(0)
        random_attention = stock.train()(*inputs)
        evaluated = stock.eval()(*inputs)
        assert not torch.allclose(random_attention, evaluated, atol=1e-4)
        torch.manual_seed(0)
        assert torch.allclose(off.train()(*inputs), evaluated, atol=1e-5)
    with pytest.raises(ValueError, match="attention_dropout applies to BERT"):
        BackboneConfig(attention_dropout=0.0)


FROZEN = MINILM.model_copy(update={"frozen_local_layers": 2})


def test_frozen_local_layers_encode_each_node_as_minilm_encodes_its_label_alone(tok):
    """Below ``frozen_local_layers`` every node (and the question) is MiniLM on its own tokens: the
    states after layer K equal stock MiniLM's hidden state K on each label alone, whatever the bias."""
    enc = build_graph_encoder(FROZEN).eval()
    torch.nn.init.normal_(enc.graph_bias.weight)  # the local layers must not use it
    triples = [("mira castell", "born in", "dornwick"), ("tavin orlo", "directed", "the ember road")]
    levi = encode_levi_graph(triples, QUESTION, tok)
    captured = {}
    hook = enc.backbone.encoder.layer[1].register_forward_hook(lambda m, a, out: captured.update(h=out))
    try:
        with torch.no_grad():
            enc(*_inputs([levi, encode_levi_graph(triples[:1], None, tok)]))  # padded batch
    finally:
        hook.remove()
    first_relation = levi.concept_spans[-1][1]  # relation nodes follow the concepts
    relation_length = len(tok("born in", add_special_tokens=False)["input_ids"])
    nodes = [
        *levi.concept_spans,
        (first_relation, first_relation + relation_length),
        (levi.num_graph_tokens, levi.length),  # the question
    ]
    for start, end in nodes:
        ids = torch.as_tensor(levi.input_ids[start:end]).unsqueeze(0)
        with torch.no_grad():
            alone = enc.backbone(input_ids=ids, output_hidden_states=True).hidden_states[2]
        assert torch.allclose(captured["h"][0, start:end], alone[0], atol=1e-5), (start, end)


def test_frozen_local_layers_train_only_the_graph_layers(glm_index, tok, embedder):
    torch.manual_seed(0)
    model = GLMRetrieverModel(build_graph_encoder(FROZEN), question_dim=384).train()
    encoder = model.encoder
    frozen = [encoder.backbone.embeddings, *encoder.backbone.encoder.layer[:2]]
    assert (
        all(not m.training for m in frozen) and encoder.backbone.encoder.layer[2].training
    )  # no dropout below
    batch = collate([ember_example(glm_index, tok, embedder)], tok.pad_token_id, 32, 128)
    retrieval_loss(model(batch), batch.labels, batch.entity_mask).backward()
    assert all(p.grad is None and not p.requires_grad for m in frozen for p in m.parameters())
    assert encoder.backbone.encoder.layer[2].attention.self.query.weight.grad.abs().sum() > 0
    assert encoder.graph_bias.weight.grad.abs().sum() > 0
    head, backbone = model.parameter_groups(5e-4, 1e-4)
    trained = {id(p) for g in (head, backbone) for p in g["params"]}
    assert trained == {id(p) for p in model.parameters() if p.requires_grad}
    assert not any(id(p) in trained for m in frozen for p in m.parameters())
    model.eval()
    with torch.no_grad():
        assert torch.allclose(model(batch), model(batch))  # eval is deterministic


def test_frozen_local_layers_keep_permutation_invariance_and_round_trip(tmp_path, glm_index, tok, embedder):
    torch.manual_seed(0)
    model = GLMRetrieverModel(build_graph_encoder(FROZEN), question_dim=384).eval()
    with torch.no_grad():
        torch.nn.init.normal_(model.encoder.graph_bias.weight)
    ex, ex2 = _example_and_its_reversal(glm_index, tok, embedder)
    batch = collate([ex], tok.pad_token_id, 32, 128)
    with torch.no_grad():
        a = model(batch)[0]
        b = model(collate([ex2], tok.pad_token_id, 32, 128))[0]
        full = GLMRetrieverModel(build_graph_encoder(MINILM), question_dim=384).eval()
        full.load_state_dict(model.state_dict())
        assert not torch.allclose(full(batch), model(batch), atol=1e-4)  # the split changes the network
    assert torch.allclose(a, b.flip(0), atol=1e-4)
    out = save_retriever(tmp_path / "r", model, tok, GLMSettings())
    assert json.loads((out / "retriever.json").read_text())["backbone"]["frozen_local_layers"] == 2
    loaded, _, _ = load_retriever_model(out)
    assert loaded.encoder.frozen_local_layers == 2
    with torch.no_grad():
        assert torch.equal(model(batch), loaded(batch))


def test_frozen_local_layers_are_validated(encoder):
    with pytest.raises(ValueError, match="at least one layer"):
        GraphBertEncoder(encoder.backbone, frozen_local_layers=6)
    with pytest.raises(ValueError, match="BERT backbones"):
        BackboneConfig(frozen_local_layers=1)
    with pytest.raises(ValueError, match="needs node_positions"):
        enc = GraphBertEncoder(build_graph_encoder(MINILM).backbone, frozen_local_layers=1)
        ids = torch.zeros(1, 3, dtype=torch.long)
        enc(ids, torch.zeros(1, 3, 3, dtype=torch.long), torch.ones(1, 3, 3, dtype=torch.bool), None)


LORA = BackboneConfig(model="minilm", lora=GLMLoRAConfig(rank=4))


def test_lora_backbone_starts_as_minilm_and_trains_only_updates_layer_norms_bias_and_head(
    glm_index, minilm_glm, tok, embedder
):
    torch.manual_seed(0)
    model = GLMRetrieverModel(build_graph_encoder(LORA), question_dim=384)
    model.load_state_dict(minilm_glm.state_dict(), strict=False)  # same head, graph bias and MiniLM
    batch = collate([ember_example(glm_index, tok, embedder)], tok.pad_token_id, 32, 128)
    with torch.no_grad():
        assert torch.allclose(model.eval()(batch), minilm_glm(batch), atol=1e-5)  # B = 0 at step 0
    model.train()
    retrieval_loss(model(batch), batch.labels, batch.entity_mask).backward()
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    assert all(".lora_" in n or ".LayerNorm." in n or not n.startswith("encoder.backbone.") for n in trained)
    assert not model.encoder.backbone.embeddings.word_embeddings.weight.requires_grad
    query = model.encoder.backbone.encoder.layer[5].attention.self.query
    assert (
        query.base_layer.weight.grad is None and query.lora_B["default"].weight.grad.abs().sum() > 0
    )  # A's is 0 while B = 0
    head, backbone = model.parameter_groups(5e-4, 1e-4)
    assert any(p is query.lora_B["default"].weight for p in head["params"])  # new: the head's rate
    assert {id(p) for g in (head, backbone) for p in g["params"]} == {
        id(p) for p in model.parameters() if p.requires_grad
    }
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) < 1_000_000


def test_lora_export_stores_only_trained_weights_and_checks_its_base(tmp_path, glm_index, tok, embedder):
    torch.manual_seed(0)
    model = GLMRetrieverModel(build_graph_encoder(LORA), question_dim=384).eval()
    with torch.no_grad():  # a trained-looking update, so a lost one would show
        for param in model.parameters():
            if param.requires_grad:
                param.add_(0.05 * torch.randn_like(param))
    ex, ex2 = _example_and_its_reversal(glm_index, tok, embedder)
    batch = collate([ex], tok.pad_token_id, 32, 128)
    with torch.no_grad():  # LoRA keeps the GLM's permutation invariance
        assert torch.allclose(
            model(batch)[0], model(collate([ex2], tok.pad_token_id, 32, 128))[0].flip(0), atol=1e-4
        )
    out = save_retriever(tmp_path / "r", model, tok, GLMSettings())
    stored = load_file(out / "model.safetensors")
    assert set(stored) == {n for n, p in model.named_parameters() if p.requires_grad}
    assert (out / "model.safetensors").stat().st_size < 5_000_000  # vs ~92 MB for the full network
    meta = json.loads((out / "retriever.json").read_text())
    assert meta["backbone"]["lora"]["rank"] == 4 and len(meta["backbone"]["base_weights_sha256"]) == 64
    loaded, _, _ = load_retriever_model(out)
    with torch.no_grad():
        assert torch.equal(model(batch), loaded(batch))
        assert merge_lora_updates(loaded) == 6 * 6 and merge_lora_updates(loaded) == 0  # all, once
        assert torch.allclose(model(batch), loaded(batch), atol=1e-4)  # what retrieval runs
    meta["backbone"]["base_weights_sha256"] = "0" * 64  # updates trained on other pretrained weights
    (out / "retriever.json").write_text(json.dumps(meta))
    with pytest.raises(RetrieverLoadError, match="trained on other 'minilm' weights"):
        load_retriever_model(out)


def test_lora_is_validated(encoder):
    with pytest.raises(ValueError, match="BERT backbones"):
        BackboneConfig(lora=GLMLoRAConfig())
    with pytest.raises(ValueError, match="choose one"):
        BackboneConfig(model="minilm", lora=GLMLoRAConfig(), frozen_local_layers=1)
    with pytest.raises(ValueError, match="matched no module"):
        build_graph_encoder(BackboneConfig(model="minilm", lora=GLMLoRAConfig(target_modules=["q_proj"])))
