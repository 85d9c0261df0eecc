"""The graph-T5 encoder reproduces stock T5 where the graph is plain text, and extends the bias table."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import T5Config, T5EncoderModel

from hoprag.glm.encoder import GraphT5Encoder
from hoprag.glm.levi import POSITION, bucket_ids, encode_levi_graph
from tests.support.word_tokenizer import WordTokenizer


@pytest.fixture
def tiny_t5():
    torch.manual_seed(0)
    cfg = T5Config(
        vocab_size=64,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=4,
        relative_attention_num_buckets=32,
        relative_attention_max_distance=128,
    )
    return T5EncoderModel(cfg).eval()


def _sequential(n: int):
    idx = np.arange(n)
    return (idx[None, :] - idx[:, None])[None].astype(np.int32), np.full((1, n, n), POSITION, np.int8)


def test_sequential_positions_reproduce_stock_t5(tiny_t5):
    ids = torch.randint(2, 64, (1, 9))
    stock = tiny_t5(input_ids=ids).last_hidden_state
    enc = GraphT5Encoder(tiny_t5).eval()
    positions, kinds = _sequential(9)
    buckets, mask = bucket_ids(positions, kinds, 32, 128)
    ours = enc(ids, buckets, mask)
    assert torch.allclose(ours, stock, atol=1e-5)


def test_extra_buckets_are_initialized_from_the_far_positive_bucket(tiny_t5):
    before = tiny_t5.encoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight.detach().clone()
    enc = GraphT5Encoder(tiny_t5)
    after = enc.backbone.encoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight
    assert after.shape == (35, 4)
    assert torch.equal(after[:32], before)
    assert torch.equal(after[32], before[31]) and torch.equal(after[34], before[31])
    again = GraphT5Encoder(enc.backbone)  # idempotent on an already extended model
    assert again.backbone.encoder.block[0].layer[0].SelfAttention.relative_attention_bias.num_embeddings == 35


def test_single_triple_equals_t5_on_the_linearized_text(tiny_t5):
    tok = WordTokenizer()
    tok.vocab.update({w: i for i, w in enumerate(["x0", "x1", "rel", "y0", "y1"], start=10)})
    enc_graph = encode_levi_graph([("x0 x1", "rel", "y0 y1")], None, tok)
    enc = GraphT5Encoder(tiny_t5, with_text=False).eval()
    buckets, mask = bucket_ids(enc_graph.positions[None], enc_graph.kinds[None], 32, 128)
    ours = enc(torch.as_tensor(enc_graph.input_ids)[None], buckets, mask)[0]
    linear_ids = torch.tensor([[10, 11, 12, 13, 14]])  # x0 x1 rel y0 y1
    stock = tiny_t5(input_ids=linear_ids).last_hidden_state[0]
    # encoding order is x0 x1 y0 y1 rel
    assert torch.allclose(ours, stock[[0, 1, 3, 4, 2]], atol=1e-5)


def test_padding_does_not_change_real_tokens(tiny_t5):
    enc = GraphT5Encoder(tiny_t5).eval()
    ids = torch.randint(2, 64, (1, 6))
    positions, kinds = _sequential(6)
    b1, m1 = bucket_ids(positions, kinds, 32, 128)
    alone = enc(ids, b1, m1)
    padded_ids = torch.cat([ids, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    pos = np.zeros((1, 9, 9), np.int32)
    kin = np.full((1, 9, 9), -1, np.int8)
    pos[0, :6, :6], kin[0, :6, :6] = positions[0], kinds[0]
    b2, m2 = bucket_ids(pos, kin, 32, 128)
    padded = enc(padded_ids, b2, m2)
    assert torch.allclose(padded[:, :6], alone, atol=1e-5)
