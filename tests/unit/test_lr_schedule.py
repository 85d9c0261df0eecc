"""Learning-rate schedules: the shared warm-up/linear-decay factor and how ``hoprag train``'s
workers apply it to every parameter group (a function of the step: resume continues the curve)."""

from __future__ import annotations

import itertools

import pytest
import torch

from hoprag.lr_schedule import warmup_linear_factor
from training.config import TrainConfig
from training.loop import WorkerSession


def test_warm_up_then_linear_decay_to_the_final_fraction() -> None:
    factors = [warmup_linear_factor(s, 4, 12, 0.0) for s in range(14)]
    assert factors[:4] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert factors[4] == 1.0  # the decay starts from the peak
    assert factors[8] == pytest.approx(0.5)
    assert factors[12] == 0.0
    assert factors[13] == 0.0  # past the budget (a run extended after it ended) stays at the floor
    assert all(a >= b for a, b in itertools.pairwise(factors[4:]))
    assert warmup_linear_factor(12, 4, 12, 0.1) == pytest.approx(0.1)


def test_no_warm_up_starts_at_the_peak() -> None:
    assert warmup_linear_factor(0, 0, 10, 0.0) == 1.0
    assert warmup_linear_factor(5, 0, 10, 0.0) == pytest.approx(0.5)


def test_a_final_fraction_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="final_fraction"):
        warmup_linear_factor(0, 0, 10, 1.5)


def _session(optim: dict, step: int, total_steps: int) -> WorkerSession:
    config = TrainConfig.model_validate({"optim": optim})
    session = WorkerSession({}, config, rank=0, world=1)
    head, backbone = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    session.optimizer = torch.optim.AdamW(
        [{"params": head.parameters(), "lr": 5e-4}, {"params": backbone.parameters(), "lr": 1e-4}]
    )
    session.base_lrs = [5e-4, 1e-4]
    session.total_steps = total_steps
    session.state["step"] = step
    return session


def test_the_worker_scales_every_group_and_keeps_their_ratio() -> None:
    optim = {"lr_schedule": "warmup_linear", "warmup_steps": 10, "final_lr_fraction": 0.0}
    session = _session(optim, step=55, total_steps=100)  # halfway through the decay
    assert session.set_learning_rates() == pytest.approx(0.5)
    assert [g["lr"] for g in session.optimizer.param_groups] == pytest.approx([2.5e-4, 0.5e-4])
    session.state["step"] = 2  # a resumed or earlier step gets its own factor, not the last one set
    assert session.set_learning_rates() == pytest.approx(0.3)
    assert [g["lr"] for g in session.optimizer.param_groups] == pytest.approx([1.5e-4, 0.3e-4])


def test_the_constant_schedule_keeps_the_papers_rates() -> None:
    session = _session({}, step=99, total_steps=100)
    assert session.set_learning_rates() == 1.0
    assert [g["lr"] for g in session.optimizer.param_groups] == [5e-4, 1e-4]
