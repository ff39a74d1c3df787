"""Aggregates over tasks: the interquartile mean with stratified bootstrap confidence intervals.

As rliable computes them (Agarwal et al., "Deep reinforcement learning at the edge of the
statistical precipice", NeurIPS 2021): the scores form a ``runs x tasks`` table of normalized
scores; the interquartile mean (IQM) is the mean of the middle 50% of all its entries
(``scipy.stats.trim_mean(x, 0.25)``), and its interval comes from a *stratified* bootstrap, which
resamples the runs of each task independently.  SciPy's :func:`scipy.stats.bootstrap` does exactly
that when each task's runs are a separate sample (it resamples the samples independently); the
interval is the percentile interval, as rliable's default.  (The ``rliable`` package itself does
not import with this project's pandas: its ``arch`` dependency fails, so SciPy computes the same
thing.)

What a *run* is: with one agent or model, the evaluation episodes of each task (per-episode
normalized scores; the interval says how well the episodes pin the scores down); with several
models (training seeds of one method), the models (each one's mean normalized score per task; the
interval then covers the spread between training runs, as in rliable).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

__all__ = ["BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "aggregate", "iqm"]

#: bootstrap resamples (rliable's default is 2,000 for plots and 50,000 for tables)
BOOTSTRAP_RESAMPLES = 2000
#: the bootstrap's generator seed: the same scores give the same interval
BOOTSTRAP_SEED = 20_240_919


def iqm(values: Sequence[float] | np.ndarray, axis: int = -1) -> float | np.ndarray:
    """The interquartile mean: the mean of the middle 50% (25% trimmed from each end)."""
    return stats.trim_mean(np.asarray(values, dtype=np.float64), 0.25, axis=axis)


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def aggregate(per_task: Sequence[Sequence[float]], *, level: float = 0.95,
              resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> dict[str, float]:
    """IQM and mean of the normalized scores of all runs of all tasks, each with its stratified
    bootstrap interval.

    Args:
        per_task: one sequence of runs' normalized scores per task (non-finite values are dropped).
        level: the confidence level.
        resamples, seed: the bootstrap's resamples and generator seed.

    Returns:
        ``iqm``, ``iqm_low``, ``iqm_high``, ``mean``, ``mean_low``, ``mean_high``, ``tasks`` and
        ``runs`` (the smallest number of runs of a task); the interval is NaN when no task has two runs.
    """
    samples = [np.asarray(s, dtype=np.float64) for s in per_task]
    samples = [s[np.isfinite(s)] for s in samples]
    samples = [s for s in samples if s.size]
    out: dict[str, float] = {"tasks": float(len(samples)), "runs": float(min((s.size for s in samples), default=0))}
    if not samples:
        return {**out, **{k: math.nan for k in ("iqm", "iqm_low", "iqm_high", "mean", "mean_low", "mean_high")}}
    pooled = np.concatenate(samples)
    rng = np.random.default_rng(seed)
    # a task with one run resamples to itself: a constant of the statistic (SciPy needs two per sample)
    varying = tuple(s for s in samples if s.size > 1)
    fixed = np.concatenate([s for s in samples if s.size == 1] or [np.empty(0)])
    for name, fn in (("iqm", iqm), ("mean", _mean)):
        out[name] = float(fn(pooled))
        if not varying:
            out[f"{name}_low"] = out[f"{name}_high"] = math.nan
            continue

        def statistic(*xs: np.ndarray, axis: int = -1, fn=fn) -> np.ndarray:
            const = np.broadcast_to(fixed, xs[0].shape[:-1] + fixed.shape)
            return fn(np.concatenate((*xs, const), axis=-1), axis=-1)

        res = stats.bootstrap(varying, statistic, n_resamples=resamples, confidence_level=level,
                              method="percentile", vectorized=True, paired=False, rng=rng)
        out[f"{name}_low"] = float(res.confidence_interval.low)
        out[f"{name}_high"] = float(res.confidence_interval.high)
    return out
