"""Uncertainty and significance for paired per-question scores (GLM-RAG appendix H).

Two systems evaluated on the same questions give paired scores; the question is the unit of
resampling. Everything is deterministic under ``seed``. What the report (``evaluation/report.py``)
uses: :func:`bootstrap_ci` and :func:`paired_bootstrap` for confidence intervals only, and
:func:`paired_t_test` as the significance test, its p-values corrected by :func:`holm_bonferroni`
over all comparisons. :func:`paired_bootstrap`'s own p-value is not used there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def bootstrap_ci(
    values: Sequence[float], n_resamples: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """(mean, low, high): percentile bootstrap interval of the mean over questions."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(n_resamples, len(x)))].mean(axis=1)
    alpha = (1 - level) / 2
    return float(x.mean()), float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], n_resamples: int = 1000, seed: int = 0, level: float = 0.95
) -> dict[str, float]:
    """Mean difference ``a - b`` with its bootstrap interval and a two-sided bootstrap p-value.

    The p-value is twice the share of resampled differences on the far side of zero (the
    percentile-bootstrap test of H0: no difference), floored at ``1 / n_resamples``.
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired scores need equal lengths ({len(x)} vs {len(y)})")
    if len(x) == 0:
        return {"diff": float("nan"), "low": float("nan"), "high": float("nan"), "p": float("nan")}
    d = x - y
    rng = np.random.default_rng(seed)
    diffs = d[rng.integers(0, len(d), size=(n_resamples, len(d)))].mean(axis=1)
    alpha = (1 - level) / 2
    if d.mean() == 0 and not d.any():
        p = 1.0
    else:
        tail = np.mean(diffs <= 0) if d.mean() > 0 else np.mean(diffs >= 0)
        p = float(min(1.0, max(2 * tail, 1.0 / n_resamples)))
    return {
        "diff": float(d.mean()),
        "low": float(np.quantile(diffs, alpha)),
        "high": float(np.quantile(diffs, 1 - alpha)),
        "p": p,
    }


def holm_bonferroni(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order (monotone, capped at 1)."""
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the paired t-test on per-question differences ``a - b``.

    Constant differences: p = 1 when they are all zero, 0 otherwise (a t statistic is undefined).
    """
    from scipy import stats

    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if len(d) < 2:
        return float("nan")
    if np.allclose(d, d[0]):
        return 1.0 if d[0] == 0 else 0.0
    return float(stats.ttest_rel(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)).pvalue)
