"""Learning-rate schedules shared by the training jobs (``hoprag train``, ``hoprag distill``).

A schedule is a multiplier of each parameter group's base rate and a function of the optimizer
step alone, so a run resumed from a checkpoint continues the same curve without saving any state.
"""

from __future__ import annotations


def warmup_linear_factor(step: int, warmup_steps: int, total_steps: int, final_fraction: float) -> float:
    """The multiplier for optimizer step ``step`` (0-based): linear warm-up from ``1/warmup_steps``
    to 1 over the first ``warmup_steps`` steps, then linear decay to ``final_fraction`` at
    ``total_steps``. Steps past ``total_steps`` (a run extended with a larger step budget after it
    ended) keep ``final_fraction``.

    >>> [round(warmup_linear_factor(s, 2, 6, 0.0), 2) for s in range(7)]
    [0.5, 1.0, 1.0, 0.75, 0.5, 0.25, 0.0]
    """
    if not 0.0 <= final_fraction <= 1.0:
        raise ValueError(f"final_fraction must be in [0, 1], got {final_fraction}")
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    span = max(1, total_steps - warmup_steps)
    progress = min(1.0, (step - warmup_steps) / span)
    return 1.0 - (1.0 - final_fraction) * progress
