"""GLM-RAG's retrieval loss: 0.44·BCE + 0.56·ListCE over the entities of each question's subgraph.

Only entities that were scored (inside the question's subgraph) take part. ListCE normalizes
sigmoid scores into a distribution over entities; an unscored entity padded with logit 0 would
still add sigmoid(0) = 0.5 to that normalizer (GLM-RAG App. B.2), so padded positions are
masked out of both terms rather than given a neutral-looking logit.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

BCE_WEIGHT = 0.44
LISTCE_WEIGHT = 0.56
_EPS = 1e-5


def masked_bce(logits: torch.Tensor, targets: torch.Tensor, scored: torch.Tensor) -> torch.Tensor:
    """Mean binary cross-entropy over scored entities of the batch (``[B, N]`` inputs)."""
    per_entity = F.binary_cross_entropy_with_logits(logits, targets.to(logits.dtype), reduction="none")
    mask = scored.to(logits.dtype)
    return (per_entity * mask).sum() / mask.sum().clamp_min(1.0)


def masked_list_ce(logits: torch.Tensor, targets: torch.Tensor, scored: torch.Tensor) -> torch.Tensor:
    """GFM-RAG's ListCE with the normalizer restricted to scored entities.

    Per question: ``-Σ_t log(σ(z_t) / Σ_{scored} σ(z)) / |targets|``; questions without a target
    among their scored entities are skipped (they carry no ranking signal).
    """
    mask = scored.to(logits.dtype)
    t = targets.to(logits.dtype) * mask
    probs = torch.sigmoid(logits) * mask
    normalizer = probs.sum(dim=-1, keepdim=True)
    per_entity = -torch.log(probs / (normalizer + _EPS) + _EPS) * t
    n_targets = t.sum(dim=-1)
    has_target = n_targets > 0
    if not bool(has_target.any()):
        return logits.sum() * 0.0
    per_question = per_entity.sum(dim=-1)[has_target] / n_targets[has_target]
    return per_question.mean()


def retrieval_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    scored: torch.Tensor,
    bce_weight: float = BCE_WEIGHT,
    list_ce_weight: float = LISTCE_WEIGHT,
) -> torch.Tensor:
    """The combined training loss (paper weights by default)."""
    return bce_weight * masked_bce(logits, targets, scored) + list_ce_weight * masked_list_ce(
        logits, targets, scored
    )
