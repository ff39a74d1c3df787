"""Aggregates over tasks with stratified bootstrap confidence intervals, as rliable computes them.

Agarwal et al., "Deep reinforcement learning at the edge of the statistical precipice", NeurIPS
2021: the scores form a ``runs x tasks`` table of normalized scores; the interquartile mean (IQM) is
the mean of the middle 50% of all its entries (``scipy.stats.trim_mean(x, 0.25)``), the median is
over the tasks' means, the optimality gap ``1 - mean(min(x, 1))``, the probability of improvement
``P(X > Y)`` the Mann-Whitney statistic averaged over tasks, the performance profile the fraction of
runs above each threshold.  The intervals come from a *stratified* bootstrap, which resamples the
runs of each task independently: SciPy's :func:`scipy.stats.bootstrap` does exactly that when each
task's runs are a separate sample; the interval is the percentile interval, as rliable's default.
(The ``rliable`` package itself does not import with this project's pandas 3: its ``arch``
dependency fails.  tests/suite/test_rliable_agreement.py checks these functions against rliable's
numbers on fixed arrays, computed in a separate virtualenv: tests/fixtures/rliable/.)

These treat the runs' scores as exact.  A benchmark's runs are measured on a finite draw of
evaluation seeds, shared by every run: :mod:`clustergym.suite.intervals` resamples those too, and
:mod:`clustergym.suite.report` reports with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "STATISTICS",
    "aggregate",
    "iqm",
    "median_of_means",
    "optimality_gap",
    "performance_profile",
    "probability_of_improvement",
    "probability_of_improvement_interval",
]

#: bootstrap resamples (rliable's default is 2,000 for plots and 50,000 for tables)
BOOTSTRAP_RESAMPLES = 2000
#: the bootstrap's generator seed: the same scores give the same interval
BOOTSTRAP_SEED = 20_240_919


def iqm(values: Sequence[float] | np.ndarray, axis: int = -1) -> float | np.ndarray:
    """The interquartile mean: the mean of the middle 50% (25% trimmed from each end)."""
    return stats.trim_mean(np.asarray(values, dtype=np.float64), 0.25, axis=axis)


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def median_of_means(table: np.ndarray) -> np.ndarray:
    """rliable's median: the median over tasks of each task's mean over runs.

    Args:
        table: ``(..., runs, tasks)`` normalized scores.

    Returns:
        ``(...)``.
    """
    return np.median(np.mean(table, axis=-2), axis=-1)


def optimality_gap(table: np.ndarray, gamma: float = 1.0) -> np.ndarray:
    """rliable's optimality gap: ``gamma - mean(min(x, gamma))``, how far the runs fall short of
    ``gamma`` on average (here ``gamma = 1``: the best non-oracle baseline), ``(..., runs, tasks) -> (...)``."""
    return gamma - np.mean(np.minimum(table, gamma), axis=(-2, -1))


def probability_of_improvement(x: Sequence[np.ndarray], y: Sequence[np.ndarray]) -> float:
    """rliable's ``P(X > Y)``: per task, the Mann-Whitney statistic ``U / (m n)`` of the ``m`` runs of
    ``X`` against the ``n`` runs of ``Y`` (a tie counts a half), averaged over tasks.

    Args:
        x, y: one array of runs' scores per task, in the same task order.
    """
    per_task = []
    for a, b in zip(x, y, strict=True):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        diff = a[:, None] - b[None, :]
        per_task.append(float(np.mean((diff > 0) + 0.5 * (diff == 0))))
    return float(np.mean(per_task))


def performance_profile(per_task: Sequence[np.ndarray], taus: np.ndarray) -> np.ndarray:
    """rliable's score distribution: for each threshold ``tau``, the fraction of runs scoring above
    ``tau``, averaged over tasks (each task weighs the same), ``(len(taus),)``."""
    taus = np.asarray(taus, dtype=np.float64)
    return np.mean([np.mean(np.asarray(s)[:, None] > taus[None, :], axis=0) for s in per_task], axis=0)


def _pooled(fn):
    def statistic(xs: Sequence[np.ndarray]) -> np.ndarray:
        return fn(np.concatenate(xs, axis=-1), axis=-1)

    return statistic


def _median_of_task_means(xs: Sequence[np.ndarray]) -> np.ndarray:
    return np.median(np.stack([x.mean(axis=-1) for x in xs], axis=-1), axis=-1)


def _gap(xs: Sequence[np.ndarray]) -> np.ndarray:
    return 1.0 - np.mean(np.minimum(np.concatenate(xs, axis=-1), 1.0), axis=-1)


#: the aggregates over tasks, each of the tasks' samples of runs (rliable's definitions, for tasks
#: with equally many runs: IQM and mean of every run of every task, median of the tasks' means,
#: optimality gap ``1 - mean(min(x, 1))``)
STATISTICS = {
    "iqm": _pooled(iqm),
    "mean": _pooled(_mean),
    "median": _median_of_task_means,
    "optimality_gap": _gap,
}


def _interval(samples, statistic, level, resamples, rng) -> tuple[float, float]:
    """SciPy's percentile bootstrap, each sample (a task's runs) resampled on its own (stratified);
    a sample of one run resamples to itself (a constant: SciPy needs two per sample)."""
    varying = [i for i, s in enumerate(samples) if s.size > 1]
    if not varying:
        return math.nan, math.nan

    def stat(*xs: np.ndarray, axis: int = -1) -> np.ndarray:
        shape = xs[0].shape[:-1]
        full = [np.broadcast_to(s, (*shape, s.size)) for s in samples]
        for i, x in zip(varying, xs):
            full[i] = x
        return statistic(full)

    res = stats.bootstrap(
        tuple(samples[i] for i in varying),
        stat,
        n_resamples=resamples,
        confidence_level=level,
        method="percentile",
        vectorized=True,
        paired=False,
        rng=rng,
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def aggregate(
    per_task: Sequence[Sequence[float]],
    *,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, float]:
    """IQM, mean, median and optimality gap of the normalized scores of the runs of every task, each
    with its stratified bootstrap interval (the runs of each task resampled on their own).

    Args:
        per_task: one sequence of runs' normalized scores per task (non-finite values are dropped).
        level: the confidence level.
        resamples, seed: the bootstrap's resamples and generator seed.

    Returns:
        for each of :data:`STATISTICS` its value and ``_low``/``_high`` interval ends, ``tasks`` and
        ``runs`` (the smallest number of runs of a task); the interval is NaN when no task has two runs.
    """
    samples = [np.asarray(s, dtype=np.float64) for s in per_task]
    samples = [s[np.isfinite(s)] for s in samples]
    samples = [s for s in samples if s.size]
    out: dict[str, float] = {"tasks": float(len(samples)), "runs": float(min((s.size for s in samples), default=0))}
    if not samples:
        return {**out, **{f"{k}{e}": math.nan for k in STATISTICS for e in ("", "_low", "_high")}}
    rng = np.random.default_rng(seed)
    for name, statistic in STATISTICS.items():
        out[name] = float(statistic(samples))
        out[f"{name}_low"], out[f"{name}_high"] = _interval(samples, statistic, level, resamples, rng)
    return out


def probability_of_improvement_interval(
    x: Sequence[Sequence[float]],
    y: Sequence[Sequence[float]],
    *,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, float]:
    """:func:`probability_of_improvement` with its stratified bootstrap interval (the runs of ``X`` and
    of ``Y`` on each task resampled on their own), as rliable computes it: ``value``, ``low``, ``high``."""
    xs = [np.asarray(a, dtype=np.float64) for a in x]
    ys = [np.asarray(b, dtype=np.float64) for b in y]

    def statistic(samples: Sequence[np.ndarray]) -> np.ndarray:
        per_task = []
        for a, b in zip(samples[0::2], samples[1::2]):
            d = a[..., :, None] - b[..., None, :]
            per_task.append(np.mean((d > 0) + 0.5 * (d == 0), axis=(-2, -1)))
        return np.mean(per_task, axis=0)

    samples = [s for pair in zip(xs, ys, strict=True) for s in pair]
    low, high = _interval(samples, statistic, level, resamples, np.random.default_rng(seed))
    return {"value": probability_of_improvement(xs, ys), "low": low, "high": high}
