"""The GLM retriever network: graph encoder (T5 or BERT) → mean-pooled concept states → entity logits.

Scoring follows the GLM-RAG paper (``docs/glm.md`` §8): the question's sentence embedding is
projected to ``d_model`` (``question_proj``), multiplied element-wise with each entity's pooled
state, and a 2-layer MLP (``entity_scorer``) gives one logit per entity. (ARCHITECTURE.md sketches a
GFM-RAG-style concatenation; the paper's product is what GLM-RAG evaluated, so we follow it.)
Pooling is a batched matrix product with per-example pooling weights built by the collator, so
the forward has no per-example Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from hoprag.glm.encoder import GraphEncoder
from hoprag.glm.lora import is_lora_parameter

# Parameters that start untrained train at the head's rate: the scorer, and the graph bias a BERT
# backbone gains (zero at step 0; at the backbone's 1e-4 it would barely move in a short run).
HEAD_PARAMETER_PREFIXES = ("question_proj.", "entity_scorer.", "encoder.graph_bias.")


@dataclass
class GLMBatch:
    """Padded tensors for one forward (see :func:`hoprag.glm.data.collate`)."""

    input_ids: torch.Tensor  # long [B, N]
    node_positions: torch.Tensor  # long [B, N]; absolute positions for BERT-style backbones
    buckets: torch.Tensor  # long [B, N, N]
    attention: torch.Tensor  # bool [B, N, N]
    pooling: torch.Tensor  # float [B, E, N]; row e averages entity e's concept tokens
    entity_mask: torch.Tensor  # bool [B, E]; True where entity slot e is a scored entity
    question_vectors: torch.Tensor  # float [B, Q]
    labels: torch.Tensor  # float [B, E]; 1 for supporting entities

    def to(self, device: torch.device | str) -> GLMBatch:
        return GLMBatch(**{k: v.to(device) for k, v in self.__dict__.items()})


class GLMRetrieverModel(nn.Module):
    """Entity logits ``[B, E]`` for a batch of question subgraphs."""

    def __init__(self, encoder: GraphEncoder, question_dim: int, scorer_hidden: int | None = None) -> None:
        super().__init__()
        d = encoder.d_model
        hidden = scorer_hidden or d
        self.encoder = encoder
        self.question_proj = nn.Linear(question_dim, d)
        self.entity_scorer = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, batch: GLMBatch) -> torch.Tensor:
        states = self.encoder(
            batch.input_ids, batch.buckets, batch.attention, node_positions=batch.node_positions
        )
        entities = torch.bmm(batch.pooling.to(states.dtype), states)  # [B, E, D]
        question = self.question_proj(batch.question_vectors.to(states.dtype)).unsqueeze(1)
        return self.entity_scorer(entities * question).squeeze(-1)

    def parameter_groups(self, head_lr: float, backbone_lr: float) -> list[dict[str, object]]:
        """Differential learning rates (paper: 5e-4 head, 1e-4 backbone; a BERT backbone's new graph
        bias table and LoRA update matrices, both new and starting at zero, train with the head)."""
        head, backbone = [], []
        for name, param in self.named_parameters():
            if not param.requires_grad:
                continue
            (head if _trains_at_head_rate(name) else backbone).append(param)
        return [{"params": head, "lr": head_lr}, {"params": backbone, "lr": backbone_lr}]


def _trains_at_head_rate(name: str) -> bool:
    """New parameters (head, graph bias, LoRA updates: LoRA's usual rates are several times full
    fine-tuning's) train at the head's rate; the pretrained ones at the backbone's."""
    return name.startswith(HEAD_PARAMETER_PREFIXES) or is_lora_parameter(name)
