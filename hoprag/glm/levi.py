"""Levi-graph encoding of a subgraph plus question for the graph-T5 (see ``docs/glm.md`` §2–6).

Every distinct concept (entity string) is one node shared by all its triples; every relation
*occurrence* is its own node; each node is tokenized separately (no special tokens). The question
follows the graph tokens, with the tokenizer's special tokens. For each token pair we record an
integer relative position (T5 convention: key − query) and a *kind*:

* ``POSITION``: an ordinary position — inside a node, inside the linearized text "head relation
  tail" of a triple both tokens share, or between two question tokens;
* ``GRAPH_FAR``: graph tokens in no common triple (global GLM: an extra bucket; local GLM: masked);
* ``TEXT_TO_GRAPH`` / ``GRAPH_TO_TEXT``: between the question and the graph (two more buckets).

Building these matrices is per-example data preparation (done in data loader workers);
:func:`bucket_ids` then turns a padded batch into bucket indices with tensor ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

POSITION, GRAPH_FAR, TEXT_TO_GRAPH, GRAPH_TO_TEXT = 0, 1, 2, 3
PAD = -1  # kind of padded token pairs in a batch


@dataclass
class LeviEncoding:
    """One example: token ids, pairwise positions and kinds, and where each concept's tokens are."""

    input_ids: np.ndarray  # int64 [n]
    positions: np.ndarray  # int32 [n, n]
    kinds: np.ndarray  # int8 [n, n]
    concept_spans: list[tuple[int, int]]  # [start, end) per concept, in ``concepts`` order
    concepts: list[str]
    num_graph_tokens: int
    # int32 [n]: absolute position of each token for backbones with position embeddings (BERT):
    # the offset inside its node for graph tokens (every node reads as its own phrase), the
    # ordinary sequence position inside the question for text tokens. T5 ignores it.
    node_positions: np.ndarray

    @property
    def length(self) -> int:
        return len(self.input_ids)


def _tokenize(tokenizer: Any, labels: Sequence[str]) -> list[list[int]]:
    if not labels:
        return []
    ids = tokenizer(list(labels), add_special_tokens=False)["input_ids"]
    # An empty label would be a node without tokens: give it the unknown token so it still exists.
    unk = tokenizer.unk_token_id if tokenizer.unk_token_id is not None else 0
    return [row if row else [unk] for row in ids]


def encode_levi_graph(
    triples: Sequence[tuple[str, str, str]],
    question: str | None,
    tokenizer: Any,
    concepts: Sequence[str] | None = None,
) -> LeviEncoding:
    """Tokens, positions and kinds for ``triples`` (+ the question, fully connected to the graph).

    ``concepts`` fixes the concept order (and may add isolated concepts, e.g. a seed entity with no
    triple); by default the concepts are the triples' heads and tails in first-seen order.
    Concepts come first in the sequence, then relation occurrences, then the question; the order
    does not change the model output (T5 has no absolute positions).
    """
    concept_list = list(dict.fromkeys([*(concepts or []), *(x for t in triples for x in (t[0], t[2]))]))
    concept_tokens = _tokenize(tokenizer, concept_list)
    relation_tokens = _tokenize(tokenizer, [t[1] for t in triples])
    ids: list[int] = []
    concept_spans: list[tuple[int, int]] = []
    for toks in concept_tokens:
        concept_spans.append((len(ids), len(ids) + len(toks)))
        ids.extend(toks)
    relation_spans: list[tuple[int, int]] = []
    for toks in relation_tokens:
        relation_spans.append((len(ids), len(ids) + len(toks)))
        ids.extend(toks)
    n_graph = len(ids)
    text_ids: list[int] = tokenizer(question)["input_ids"] if question else []
    ids.extend(text_ids)
    n = len(ids)

    positions = np.zeros((n, n), dtype=np.int32)
    kinds = np.full((n, n), GRAPH_FAR, dtype=np.int8)

    def relate(token_index: np.ndarray) -> None:
        offsets = np.arange(len(token_index), dtype=np.int32)
        positions[np.ix_(token_index, token_index)] = offsets[None, :] - offsets[:, None]
        kinds[np.ix_(token_index, token_index)] = POSITION

    for start, end in concept_spans + relation_spans:
        relate(np.arange(start, end))
    concept_index = {c: i for i, c in enumerate(concept_list)}
    for (head, _, tail), (r_start, r_end) in zip(triples, relation_spans, strict=True):
        h = concept_spans[concept_index[head]]
        t = concept_spans[concept_index[tail]]
        # "head relation tail" as contiguous text; with several triples between the same two
        # concepts the last one decides their mutual positions (as in the reference).
        relate(np.concatenate([np.arange(*h), np.arange(r_start, r_end), np.arange(*t)]))
    node_positions = np.zeros(n, dtype=np.int32)
    for start, end in concept_spans + relation_spans:
        node_positions[start:end] = np.arange(end - start)
    node_positions[n_graph:] = np.arange(n - n_graph)
    if text_ids:
        text = np.arange(n_graph, n)
        relate(text)
        kinds[n_graph:, :n_graph] = TEXT_TO_GRAPH
        kinds[:n_graph, n_graph:] = GRAPH_TO_TEXT
        positions[n_graph:, :n_graph] = 0
        positions[:n_graph, n_graph:] = 0
    return LeviEncoding(
        input_ids=np.asarray(ids, dtype=np.int64),
        positions=positions,
        kinds=kinds,
        concept_spans=concept_spans,
        concepts=concept_list,
        num_graph_tokens=n_graph,
        node_positions=node_positions,
    )


def pad_batch(
    encodings: Sequence[LeviEncoding], pad_token_id: int, multiple: int = 1
) -> dict[str, np.ndarray]:
    """Stack examples into ``(B, N)`` ids and node positions and ``(B, N, N)`` positions/kinds
    (kind ``PAD`` outside); ``N`` is the longest example rounded up to a multiple of ``multiple``."""
    longest = max((e.length for e in encodings), default=0)
    n_max = -(-longest // multiple) * multiple
    batch = len(encodings)
    input_ids = np.full((batch, n_max), pad_token_id, dtype=np.int64)
    positions = np.zeros((batch, n_max, n_max), dtype=np.int32)
    kinds = np.full((batch, n_max, n_max), PAD, dtype=np.int8)
    node_positions = np.zeros((batch, n_max), dtype=np.int32)
    for b, e in enumerate(encodings):
        input_ids[b, : e.length] = e.input_ids
        node_positions[b, : e.length] = e.node_positions
        positions[b, : e.length, : e.length] = e.positions
        kinds[b, : e.length, : e.length] = e.kinds
    return {"input_ids": input_ids, "positions": positions, "kinds": kinds, "node_positions": node_positions}


def bucket_ids(
    positions: Any, kinds: Any, num_buckets: int, max_distance: int, global_graph: bool = True
) -> tuple[Any, Any]:
    """Bucket index per token pair and the attention mask (True = may attend), batched in torch.

    Ordinary positions use T5's bidirectional bucketing; the extra buckets follow them:
    global GLM: ``num_buckets`` = graph–graph far, ``+1`` text→graph, ``+2`` graph→text; local GLM:
    far pairs are masked and the text buckets are ``num_buckets`` and ``+1``.
    """
    import torch
    from transformers.models.t5.modeling_t5 import T5Attention

    positions = torch.as_tensor(positions)
    kinds = torch.as_tensor(kinds)
    # Relative positions span a few hundred values at most: bucket each value once and look the
    # B·N² pairs up in that table (T5's log bucketing over every pair was most of collate's time).
    low = int(positions.min()) if positions.numel() else 0
    high = int(positions.max()) if positions.numel() else 0
    table = T5Attention._relative_position_bucket(
        torch.arange(low, high + 1), bidirectional=True, num_buckets=num_buckets, max_distance=max_distance
    )
    offsets = (positions - low).reshape(-1)
    if offsets.dtype not in (torch.int32, torch.int64):
        offsets = offsets.long()
    buckets = table.index_select(0, offsets).view(positions.shape)
    first_text = num_buckets + (1 if global_graph else 0)
    buckets = buckets.masked_fill(kinds == GRAPH_FAR, num_buckets)
    buckets = buckets.masked_fill(kinds == TEXT_TO_GRAPH, first_text)
    buckets = buckets.masked_fill(kinds == GRAPH_TO_TEXT, first_text + 1)
    mask = kinds != PAD
    if not global_graph:
        mask &= kinds != GRAPH_FAR
    buckets = buckets.masked_fill(~mask, 0)
    return buckets, mask


def num_extra_buckets(global_graph: bool, with_text: bool) -> int:
    """How many bias rows the GLM adds to T5's table (GLM-RAG default: global + text = 3)."""
    return int(global_graph) + 2 * int(with_text)
