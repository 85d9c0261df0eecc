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

``lora`` (:mod:`hoprag.glm.lora`; default none) trains low-rank updates of the linear layers and
the LayerNorms instead of the pretrained weights, so an export stores a few MB.

``frozen_local_layers`` (default 0) splits the stack: the lowest K layers read every node label,
and the question, on its own (attention only between tokens of the same node, no graph bias),
with their pretrained weights frozen and without dropout, so they run without autograd and with
the fused attention kernel; the graph bias and training start at layer K. It trades the lower
layers' graph view for a cheaper training step (``docs/glm.md`` "Backbones").
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import nn

from hoprag.glm.encoder import GraphEncoder
from hoprag.glm.levi import num_extra_buckets
from hoprag.glm.lora import GLMLoRAConfig, add_lora

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
        frozen_local_layers: int = 0,
        lora: GLMLoRAConfig | None = None,
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
        if not 0 <= frozen_local_layers < cfg.num_hidden_layers:
            raise ValueError(
                f"frozen_local_layers must be in [0, {cfg.num_hidden_layers - 1}] (at least one layer "
                f"must see the graph), not {frozen_local_layers}"
            )
        if lora is not None and frozen_local_layers:
            raise ValueError("lora and frozen_local_layers are two ways to freeze the backbone: choose one")
        self.frozen_local_layers = frozen_local_layers
        self.lora = lora
        rows = num_buckets + num_extra_buckets(global_graph, with_text)
        self.graph_bias = nn.Embedding(rows, cfg.num_attention_heads)
        nn.init.zeros_(self.graph_bias.weight)  # step 0 = the pretrained encoder
        self.graph_bias.to(next(backbone.parameters()).device)
        if absolute_positions == "none":  # unused: keep it out of the optimizer (no gradient ever)
            backbone.embeddings.position_embeddings.weight.requires_grad_(False)
        for module in self._frozen_modules():  # no gradient reaches them: keep them out of the optimizer
            module.requires_grad_(False)
        if lora is not None:
            add_lora(backbone, lora)
        self.train(self.training)

    def _frozen_modules(self) -> list[nn.Module]:
        if not self.frozen_local_layers:
            return []
        return [self.backbone.embeddings, *self.backbone.encoder.layer[: self.frozen_local_layers]]

    def train(self, mode: bool = True) -> GraphBertEncoder:
        """Frozen lower layers (and the embeddings below them) stay in eval mode: no dropout, as the
        fixed feature extractor they are."""
        super().train(mode)
        for module in self._frozen_modules():
            module.eval()
        return self

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
            "frozen_local_layers": self.frozen_local_layers,
            "lora": None if self.lora is None else self.lora.model_dump(mode="json"),
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
        if self.frozen_local_layers:
            return self._split_forward(input_ids, buckets, mask, node_positions)
        hidden = self.embed(input_ids, node_positions)
        bias = self.attention_bias(buckets, mask, hidden.dtype)
        # BertEncoder hands ``attention_mask`` to every layer's attention unchanged, which adds it
        # to the scaled scores: a 4-D float mask carries the bias and the masking together.
        return self.backbone.encoder(hidden, attention_mask=bias).last_hidden_state

    def local_attention_mask(
        self, mask: torch.Tensor, node_positions: torch.Tensor, dtype: torch.dtype
    ) -> torch.Tensor:
        """``(B, 1, N, N)`` additive mask of the frozen local layers: a token sees the tokens of its own
        node (a node starts where its per-node position is 0; the question is one node), where
        ``mask`` allows it."""
        node = (node_positions == 0).cumsum(dim=1)
        allowed = (node.unsqueeze(2) == node.unsqueeze(1)) & mask
        blocked = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
        return blocked.masked_fill_(~allowed, torch.finfo(dtype).min).unsqueeze(1)

    def _split_forward(
        self,
        input_ids: torch.Tensor,
        buckets: torch.Tensor,
        mask: torch.Tensor,
        node_positions: torch.Tensor | None,
    ) -> torch.Tensor:
        if node_positions is None:
            raise ValueError("frozen_local_layers needs node_positions to know where each node starts")
        layers = self.backbone.encoder.layer
        with torch.no_grad():
            hidden = self.embed(input_ids, node_positions)
            local = self.local_attention_mask(mask, node_positions.to(mask.device), hidden.dtype)
            for layer in layers[: self.frozen_local_layers]:
                hidden = layer(hidden, local)
        bias = self.attention_bias(buckets, mask, hidden.dtype)
        for layer in layers[self.frozen_local_layers :]:
            hidden = layer(hidden, bias)
        return hidden
