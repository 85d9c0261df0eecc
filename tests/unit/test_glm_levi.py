"""Levi-graph positions, kinds, buckets and masks on the hand-worked example of docs/glm.md §2–6.

Graph: (a, r1, b), (b, r2, c) with token lengths a=2, r1=1, b=1, r2=2, c=1; question = 2 tokens + EOS.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hoprag.glm.levi import (
    GRAPH_FAR,
    GRAPH_TO_TEXT,
    PAD,
    POSITION,
    TEXT_TO_GRAPH,
    bucket_ids,
    encode_levi_graph,
    num_extra_buckets,
    pad_batch,
)
from tests.support.word_tokenizer import WordTokenizer

TRIPLES = [("a0 a1", "r1", "b0"), ("b0", "r2x r2y", "c0")]
# token order produced by encode_levi_graph: concepts (first seen), relation occurrences, question
NAMES = ["a0", "a1", "b0", "c0", "r1", "r2x", "r2y", "q0", "q1", "eos"]
F = None
# query row -> key column, graph block (from docs/glm.md §3, re-indexed to NAMES); F = no common triple
EXPECTED = {
    "r1": {"r1": 0, "a0": -2, "a1": -1, "b0": 1},
    "r2x": {"r2x": 0, "r2y": 1, "b0": -1, "c0": 2},
    "r2y": {"r2x": -1, "r2y": 0, "b0": -2, "c0": 1},
    "a0": {"r1": 2, "a0": 0, "a1": 1, "b0": 3},
    "a1": {"r1": 1, "a0": -1, "a1": 0, "b0": 2},
    "b0": {"r1": -1, "r2x": 1, "r2y": 2, "a0": -3, "a1": -2, "b0": 0, "c0": 3},
    "c0": {"r2x": -2, "r2y": -1, "b0": -3, "c0": 0},
}


def _example():
    return encode_levi_graph(TRIPLES, "q0 q1", WordTokenizer())


def test_token_layout_and_concept_spans():
    enc = _example()
    assert enc.length == 10 and enc.num_graph_tokens == 7
    assert enc.concepts == ["a0 a1", "b0", "c0"]
    assert enc.concept_spans == [(0, 2), (2, 3), (3, 4)]
    assert enc.input_ids[-1] == 1  # the question keeps its EOS


def test_node_positions_restart_in_every_node_and_run_through_the_question():
    enc = _example()
    # a0 a1 | b0 | c0 | r1 | r2x r2y | q0 q1 eos
    assert enc.node_positions.tolist() == [0, 1, 0, 0, 0, 0, 1, 0, 1, 2]
    batch = pad_batch([enc, encode_levi_graph([("u", "r", "v")], "q", WordTokenizer())], pad_token_id=0)
    assert batch["node_positions"][1].tolist() == [0, 0, 0, 0, 1] + [0] * 5


def test_graph_positions_and_kinds_match_the_hand_worked_matrix():
    enc = _example()
    graph = NAMES[:7]
    for qi, q in enumerate(graph):
        for ki, k in enumerate(graph):
            want = EXPECTED[q].get(k, F)
            if want is None:
                assert enc.kinds[qi, ki] == GRAPH_FAR, (q, k)
            else:
                assert enc.kinds[qi, ki] == POSITION, (q, k)
                assert enc.positions[qi, ki] == want, (q, k)


def test_question_is_fully_connected_with_text_positions():
    enc = _example()
    q0, q1, eos = 7, 8, 9
    assert enc.positions[q0, q1] == 1 and enc.positions[eos, q0] == -2 and enc.positions[q0, eos] == 2
    assert (enc.kinds[7:, :7] == TEXT_TO_GRAPH).all()
    assert (enc.kinds[:7, 7:] == GRAPH_TO_TEXT).all()
    assert (enc.kinds[7:, 7:] == POSITION).all()


def test_bucket_ids_global_glm_with_text():
    enc = _example()
    buckets, mask = bucket_ids(enc.positions[None], enc.kinds[None], num_buckets=32, max_distance=128)
    b = buckets[0]
    idx = {n: i for i, n in enumerate(NAMES)}
    assert b[idx["a0"], idx["b0"]] == 19  # P = 3
    assert b[idx["b0"], idx["a0"]] == 3  # P = -3
    assert b[idx["a0"], idx["c0"]] == 32  # graph-graph far
    assert b[idx["q1"], idx["a0"]] == 33  # text -> graph
    assert b[idx["a0"], idx["q1"]] == 34  # graph -> text
    assert b[idx["q0"], idx["eos"]] == 18  # P = 2
    assert bool(mask.all())
    assert num_extra_buckets(True, True) == 3 and int(b.max()) == 34


def test_local_glm_masks_pairs_without_a_common_triple():
    enc = _example()
    buckets, mask = bucket_ids(enc.positions[None], enc.kinds[None], 32, 128, global_graph=False)
    idx = {n: i for i, n in enumerate(NAMES)}
    assert not mask[0, idx["r1"], idx["c0"]] and not mask[0, idx["a0"], idx["r2x"]]
    visible_from_r1 = {NAMES[j] for j in range(7) if mask[0, idx["r1"], j]}
    assert visible_from_r1 == {"r1", "a0", "a1", "b0"}
    assert buckets[0, idx["q1"], idx["a0"]] == 32 and buckets[0, idx["a0"], idx["q1"]] == 33
    assert num_extra_buckets(False, True) == 2


def test_single_triple_matches_linear_text_positions():
    enc = encode_levi_graph([("x0 x1", "rel", "y0 y1 y2")], None, WordTokenizer())
    # linearized "x0 x1 rel y0 y1 y2" -> token order in the encoding: x0 x1 y0 y1 y2 rel
    linear = {"x0": 0, "x1": 1, "rel": 2, "y0": 3, "y1": 4, "y2": 5}
    order = ["x0", "x1", "y0", "y1", "y2", "rel"]
    expected = np.array([[linear[k] - linear[q] for k in order] for q in order])
    assert (enc.positions == expected).all() and (enc.kinds == POSITION).all()


def test_padding_in_a_batch_is_masked_both_ways():
    small = encode_levi_graph([("u", "r", "v")], "q", WordTokenizer())
    batch = pad_batch([_example(), small], pad_token_id=0)
    assert batch["input_ids"].shape == (2, 10)
    assert (batch["kinds"][1, small.length :, :] == PAD).all() and (
        batch["kinds"][1, :, small.length :] == PAD
    ).all()
    _, mask = bucket_ids(batch["positions"], batch["kinds"], 32, 128)
    assert mask[1, : small.length, : small.length].all()
    assert not mask[1, small.length :].any() and not mask[1, :, small.length :].any()
    assert isinstance(mask, torch.Tensor)


def test_isolated_concepts_and_empty_labels_still_get_tokens():
    enc = encode_levi_graph([], "q", WordTokenizer(), concepts=["lonely seed", ""])
    assert enc.concepts == ["lonely seed", ""]
    assert enc.concept_spans == [(0, 2), (2, 3)]
    assert enc.input_ids[2] == WordTokenizer.unk_token_id


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_bucket_lookup_equals_t5_bucketing_of_every_pair(dtype):
    from transformers.models.t5.modeling_t5 import T5Attention

    rng = np.random.default_rng(3)
    positions = rng.integers(-300, 300, size=(2, 40, 40)).astype(dtype)
    kinds = np.full((2, 40, 40), POSITION, dtype=np.int8)
    buckets, mask = bucket_ids(positions, kinds, 32, 128)
    expected = T5Attention._relative_position_bucket(
        torch.as_tensor(positions, dtype=torch.long), bidirectional=True, num_buckets=32, max_distance=128
    )
    assert torch.equal(buckets, expected) and bool(mask.all())
    empty, empty_mask = bucket_ids(np.zeros((0, 0, 0), dtype), np.zeros((0, 0, 0), np.int8), 32, 128)
    assert empty.shape == empty_mask.shape == (0, 0, 0)
