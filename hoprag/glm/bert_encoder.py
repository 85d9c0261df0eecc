"""A pretrained BERT encoder (the packaged MiniLM) run as a GLM graph encoder.

The BERT weights are used unchanged. The GLM's graph structure enters in two places
(``docs/glm.md`` §2–6 and "Backbones"):

* **Relative positions.** BERT has no relative-position bias, so the encoder owns one: a learned
  table of ``num_buckets + extra`` rows (extra = 3 for the global GLM with the question) by
  attention heads, looked up with the same bucket ids the T5 GLM uses. The ``(B, H, N, N)`` bias
  is built once per forward with the attention mask folded in (``finfo.min`` on blocked pairs) and
  handed to every layer as HF BERT's additive float attention mask, which both its eager and its
  SDPA attention add to the scaled scores ``q·kᵀ/√d`` before the softmax. The table starts at
  zero, so before training (and with nothing masked) the encoder computes exactly what MiniLM
  computes on the same tokens and absolute positions.
* **Absolute positions.** BERT adds a learned embedding per sequence position. ``per_node`` (the
  default) restarts positions at 0 in every node, so each entity or relation label is embedded as
  the phrase it is, and keeps the question's ordinary positions; node order does not matter.
  ``sequence`` numbers the whole input 0, 1, 2, ... (stock BERT on the concatenated tokens; it
  depends on node order and saturates at the model's 512 positions); ``none`` adds no position
  embedding at all, leaving word order to the relative bias.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import nn

from hoprag.glm.encoder import GraphEncoder
from hoprag.glm.levi import num_extra_buckets

AbsolutePositions = Literal["per_node", "sequence", "none"]
ABSOLUTE_POSITIONS: tuple[AbsolutePositions, ...] = ("per_node", "sequence", "none")


class GraphBertEncoder(GraphEncoder):
    """Wraps a HF ``BertModel``; ``forward(input_ids, buckets, mask, node_positions)`` → final token states."""

    kind = "bert"

    def __init__(
        self,
        backbone: Any,
        global_graph: bool = True,
        with_text: bool = True,
        num_buckets: int = 32,
        max_distance: int = 128,
        absolute_positions: AbsolutePositions = "per_node",
        name: str = "",
    ) -> None:
        super().__init__()
        if absolute_positions not in ABSOLUTE_POSITIONS:
            raise ValueError(
                f"absolute_positions must be one of {ABSOLUTE_POSITIONS}, not {absolute_positions!r}"
            )
        self.backbone = backbone
        self.name = name
        self.global_graph = global_graph
        self.with_text = with_text
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.absolute_positions = absolute_positions
        cfg = backbone.config
        rows = num_buckets + num_extra_buckets(global_graph, with_text)
        self.graph_bias = nn.Embedding(rows, cfg.num_attention_heads)
        nn.init.zeros_(self.graph_bias.weight)  # step 0 = the pretrained encoder
        self.graph_bias.to(next(backbone.parameters()).device)
        if absolute_positions == "none":  # unused: keep it out of the optimizer (no gradient ever)
            backbone.embeddings.position_embeddings.weight.requires_grad_(False)

    @property
    def d_model(self) -> int:
        return int(self.backbone.config.hidden_size)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "config": self.backbone.config.to_dict(),
            "num_buckets": self.num_buckets,
            "max_distance": self.max_distance,
            "absolute_positions": self.absolute_positions,
        }

    def set_attention_dropout(self, probability: float) -> None:
        """Dropout on every layer's attention probabilities (recorded in the backbone config, which
        an export keeps). Any dropout there draws a ``(B, H, N, N)`` random mask per layer in training,
        a large share of a CPU step at a few hundred tokens."""
        self.backbone.config.attention_probs_dropout_prob = probability
        for layer in self.backbone.encoder.layer:
            layer.attention.self.dropout.p = probability

    def position_ids(
        self, input_ids: torch.Tensor, node_positions: torch.Tensor | None
    ) -> torch.Tensor | None:
        """The absolute position of every token under ``absolute_positions`` (``None``: no embedding)."""
        if self.absolute_positions == "none":
            return None
        limit = self.backbone.config.max_position_embeddings - 1
        if self.absolute_positions == "sequence" or node_positions is None:
            n = input_ids.shape[1]
            return torch.arange(n, device=input_ids.device).clamp_max(limit).expand_as(input_ids)
        return node_positions.to(input_ids.device, torch.long).clamp_max(limit)

    def embed(self, input_ids: torch.Tensor, node_positions: torch.Tensor | None = None) -> torch.Tensor:
        """BERT's input embeddings (word + token type 0 [+ position], LayerNorm, dropout)."""
        emb = self.backbone.embeddings
        hidden = emb.word_embeddings(input_ids) + emb.token_type_embeddings(torch.zeros_like(input_ids))
        positions = self.position_ids(input_ids, node_positions)
        if positions is not None:
            hidden = hidden + emb.position_embeddings(positions)
        return emb.dropout(emb.LayerNorm(hidden))

    def attention_bias(self, buckets: torch.Tensor, mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """``(B, H, N, N)`` graph bias with the mask folded in (built once, added in every layer).

        One gather does both: blocked pairs are pointed at an extra, constant table row of
        ``finfo.min`` (no mask pass over the ``B·H·N²`` result), and the table is read transposed
        ``(H, rows)`` so every head's ``N²`` values come out contiguous in ``(B, H, N, N)`` (a no-op
        ``transpose`` for one question): an ``(B, N, N, H)`` lookup permuted into place would be
        copied by the attention kernel in every layer.
        """
        weight = self.graph_bias.weight.to(dtype)
        blocked = weight.new_full((1, weight.shape[1]), torch.finfo(dtype).min)
        table = torch.cat([weight, blocked]).t().contiguous()  # (H, rows + 1)
        index = torch.where(mask, buckets, weight.shape[0])  # the blocked row where not allowed
        b, n, m = buckets.shape
        bias = table.index_select(1, index.reshape(-1)).view(-1, b, n, m)  # (H, B, N, N)
        return bias.transpose(0, 1).contiguous()

    def forward(
        self,
        input_ids: torch.Tensor,
        buckets: torch.Tensor,
        mask: torch.Tensor,
        node_positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        hidden = self.embed(input_ids, node_positions)
        bias = self.attention_bias(buckets, mask, hidden.dtype)
        # BertEncoder hands ``attention_mask`` to every layer's attention unchanged, which adds it
        # to the scaled scores: a 4-D float mask carries the bias and the masking together.
        return self.backbone.encoder(hidden, attention_mask=bias).last_hidden_state
