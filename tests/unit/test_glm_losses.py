"""GLM-RAG loss: hand-computed values and the masking of unscored entities (App. B.2)."""

from __future__ import annotations

import math

import pytest
import torch

from hoprag.glm.losses import masked_bce, masked_list_ce, retrieval_loss


def test_values_worked_by_hand():
    logits = torch.tensor([[0.0, math.log(3.0)]])  # sigmoid: 0.5 and 0.75
    targets = torch.tensor([[0.0, 1.0]])
    scored = torch.tensor([[True, True]])
    # ListCE: -log(0.75 / 1.25) = -log(0.6)
    assert masked_list_ce(logits, targets, scored).item() == pytest.approx(-math.log(0.6), abs=1e-4)
    # BCE: mean of -log(1 - 0.5) and -log(0.75)
    assert masked_bce(logits, targets, scored).item() == pytest.approx(
        (math.log(2) - math.log(0.75)) / 2, abs=1e-6
    )
    combined = 0.44 * masked_bce(logits, targets, scored) + 0.56 * masked_list_ce(logits, targets, scored)
    assert retrieval_loss(logits, targets, scored).item() == pytest.approx(combined.item())


def test_unscored_entities_do_not_change_the_loss():
    logits = torch.tensor([[2.0, -1.0, 0.5]])
    targets = torch.tensor([[1.0, 0.0, 1.0]])
    scored = torch.ones(1, 3, dtype=torch.bool)
    base = retrieval_loss(logits, targets, scored)
    # pad with entities outside the subgraph: arbitrary logits (even 0, as an unscored default) and targets
    padded_logits = torch.cat([logits, torch.tensor([[0.0, 5.0, -3.0]])], dim=1)
    padded_targets = torch.cat([targets, torch.tensor([[1.0, 0.0, 1.0]])], dim=1)
    padded_scored = torch.cat([scored, torch.zeros(1, 3, dtype=torch.bool)], dim=1)
    assert retrieval_loss(padded_logits, padded_targets, padded_scored).item() == pytest.approx(
        base.item(), abs=1e-6
    )
    # without the mask the normalizer grows by sigmoid(0) = 0.5 per padded zero: a different loss
    unmasked = torch.ones_like(padded_scored)
    assert masked_list_ce(padded_logits, padded_targets, unmasked).item() != pytest.approx(
        masked_list_ce(logits, targets, scored).item(), abs=1e-3
    )


def test_questions_without_targets_are_skipped_and_gradients_flow():
    logits = torch.tensor([[1.0, 2.0], [0.3, -0.3]], requires_grad=True)
    targets = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    scored = torch.ones(2, 2, dtype=torch.bool)
    only_second = masked_list_ce(logits[1:], targets[1:], scored[1:])
    assert masked_list_ce(logits, targets, scored).item() == pytest.approx(only_second.item())
    retrieval_loss(logits, targets, scored).backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()
    none = masked_list_ce(logits, torch.zeros(2, 2), scored)
    assert none.item() == 0.0
