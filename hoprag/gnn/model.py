"""GFM-RAG's query-dependent NBFNet (QueryNBFNet) over a batch of question subgraphs.

Following GFM-RAG (arXiv 2502.01113, §3.3; ``gfmrag/models/gfm_rag_v1/model.py`` and
``ultra/layers.py``), in our own code with plain torch scatter ops:

- the question's sentence vector ``q`` is projected to the node width (``question_proj``); every
  node starts at ``h⁰ = w_seed · q`` (``w_seed``: the seed weight, 0 for non-seeds);
- relations are represented by their label's sentence vector (inverse edges: its negation),
  projected once (``relation_proj``) and again by each layer's own 2-layer MLP;
- layer ``l``: messages ``h[src] ⊙ r_l[rel]`` (DistMult; TransE adds instead) are summed into each
  destination together with the boundary ``h⁰`` (NBFNet's self-loop for the initial condition),
  then ``h ← ReLU(LayerNorm(W [h; agg])) + h``;
- each node's logit is ``MLP([h^L; q])``.

The output is laid out like the GLM's, ``[B, E]`` logits with an entity mask, so training uses
the same losses and the same document ranker.
"""

from __future__ import annotations

import torch
from torch import nn

from hoprag.gnn.data import GNNBatch
from hoprag.gnn.settings import GNNSettings


class RelationalConv(nn.Module):
    """One NBFNet layer: relation-conditioned messages, aggregation with the boundary, update."""

    def __init__(self, dim: int, message: str, aggregate: str, layer_norm: bool) -> None:
        super().__init__()
        self.message, self.aggregate = message, aggregate
        self.relation_mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.update = nn.Linear(2 * dim, dim)
        self.norm = nn.LayerNorm(dim) if layer_norm else nn.Identity()

    def forward(
        self,
        hidden: torch.Tensor,  # [N, d]
        boundary: torch.Tensor,  # [N, d]
        relations: torch.Tensor,  # [R, d]
        src: torch.Tensor,
        dst: torch.Tensor,
        edge_relation: torch.Tensor,
    ) -> torch.Tensor:
        relation = self.relation_mlp(relations)[edge_relation]
        source = hidden[src]
        messages = source * relation if self.message == "distmult" else source + relation
        # The boundary joins the aggregation as one more message per node (NBFNet's self-loop).
        index = torch.cat([dst, torch.arange(len(hidden), device=hidden.device)])
        messages = torch.cat([messages, boundary])
        expanded = index.unsqueeze(-1).expand_as(messages)
        if self.aggregate == "sum":
            agg = torch.zeros_like(hidden).index_add_(0, index, messages)
        else:
            reduce = "mean" if self.aggregate == "mean" else "amax"
            agg = torch.zeros_like(hidden).scatter_reduce(0, expanded, messages, reduce, include_self=False)
        return torch.relu(self.norm(self.update(torch.cat([hidden, agg], dim=-1))))


class QueryNBFNet(nn.Module):
    """Entity logits ``[B, E]`` for a :class:`GNNBatch` (padded slots are masked by ``entity_mask``)."""

    def __init__(self, settings: GNNSettings) -> None:
        super().__init__()
        d = settings.hidden_dim
        self.short_cut = settings.short_cut
        self.question_proj = nn.Linear(settings.question_dim, d)
        self.relation_proj = nn.Linear(settings.question_dim, d)
        self.layers = nn.ModuleList(
            RelationalConv(d, settings.message, settings.aggregate, settings.layer_norm)
            for _ in range(settings.num_layers)
        )
        self.scorer = nn.Sequential(nn.Linear(2 * d, 2 * d), nn.ReLU(), nn.Linear(2 * d, 1))

    def forward(self, batch: GNNBatch) -> torch.Tensor:
        # Inputs arrive in fp32; under bf16/fp16 training (DeepSpeed casts the weights) they follow.
        dtype = self.question_proj.weight.dtype
        question = self.question_proj(batch.question_vectors.to(dtype))  # [B, d]
        node_question = question[batch.node_graph]  # [N, d]
        boundary = batch.seed_weights.to(dtype).unsqueeze(-1) * node_question
        relations = self.relation_proj(batch.relation_vectors.to(dtype))
        hidden = boundary
        for layer in self.layers:
            out = layer(hidden, boundary, relations, batch.edge_src, batch.edge_dst, batch.edge_relation)
            hidden = out + hidden if self.short_cut else out
        node_logits = self.scorer(torch.cat([hidden, node_question], dim=-1)).squeeze(-1)
        logits = node_logits.new_zeros(batch.entity_mask.shape)
        logits[batch.node_graph, batch.node_slot] = node_logits
        return logits

    def parameter_groups(self, head_lr: float, backbone_lr: float) -> list[dict[str, object]]:
        """One group at the head's rate: the whole network trains from scratch (GFM-RAG: AdamW 5e-4)."""
        del backbone_lr  # no pretrained part
        return [{"params": [p for p in self.parameters() if p.requires_grad], "lr": head_lr}]
