"""Intervals that include every source of noise: a two-level bootstrap over runs and evaluation seeds.

A method's score on a task is estimated from ``R`` runs (training seeds) evaluated on the same ``n``
evaluation seeds as the reference baselines.  Two sources of noise move the estimate: which runs
were trained (the training seeds) and which evaluation seeds were drawn -- and the second is shared
by every run and by the baselines, since all of them play the same seeds (common random numbers:
the same arrivals, sizes and durations).  Bootstrapping only the runs' means, as an aggregate over
training seeds does, leaves the shared seed noise out: with three runs the interval shrinks to about
the range of three numbers, and another draw of seeds moves all three together.

:func:`bootstrap_task` resamples both levels, crossed (Owen's "pigeonhole" bootstrap for a
runs x seeds table, Ann. Appl. Stat. 2007): each resample draws ``R`` runs with replacement and
``n`` seeds with replacement, and the *same* seed draw serves every run and every baseline, so a
paired difference stays paired.  One run: only the seeds are resampled (the interval over episodes).
The normalized score's random and best-baseline means are recomputed on the resampled seeds too: a
score "above 1" is a claim against a baseline measured on the same draw.  The percentile interval,
as rliable's (Agarwal et al., "Deep reinforcement learning at the edge of the statistical
precipice", NeurIPS 2021).  Tasks are resampled independently (stratified), so aggregates over
tasks (:func:`aggregate_draws`) take each task's draws side by side.

tests/suite/test_intervals.py checks the coverage by simulation: a method equal to its baseline in
distribution is declared better in at most about 5% of repeated draws of evaluation seeds, and the
interval covers a known margin about 95% of the time, with one run and with several.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from clustergym.suite.aggregate import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, iqm

__all__ = ["TaskDraws", "aggregate_draws", "bootstrap_task", "interval"]


@dataclass
class TaskDraws:
    """One task's bootstrap draws (index 0 of the first axis is the point estimate, on the data as it is).

    Attributes:
        run_scores: ``(1 + B, R)`` each run's mean score over the (resampled) seeds, in score units.
        normalized: ``(1 + B, R)`` the same, normalized: ``(x - random) / (best - random)`` with the
            random and best-baseline means taken on the same resampled seeds.
        paired: ``(1 + B,)`` the mean over runs and seeds of (score - the best baseline's score on the
            same seed), in score units.
        baselines: ``{name: (1 + B,)}`` each baseline's mean on the resampled seeds.
        wins: ``{name: (1 + B,)}`` the paired probability of improvement over each baseline: the
            fraction of (run, seed) episodes in which the method scores above the baseline on the same
            seed (a tie counts a half).
        episodes_normalized: ``(1 + B, R, n)`` the resampled episodes' normalized scores.
    """

    run_scores: np.ndarray
    normalized: np.ndarray
    paired: np.ndarray
    baselines: dict[str, np.ndarray] = field(default_factory=dict)
    wins: dict[str, np.ndarray] = field(default_factory=dict)
    episodes_normalized: np.ndarray | None = None


def _indices(rng: np.random.Generator, runs: int, seeds: int, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """``(1 + B, R)`` run indices and ``(1 + B, n)`` seed indices; row 0 is the identity."""
    run_idx = np.empty((resamples + 1, runs), dtype=np.intp)
    seed_idx = np.empty((resamples + 1, seeds), dtype=np.intp)
    run_idx[0], seed_idx[0] = np.arange(runs), np.arange(seeds)
    run_idx[1:] = rng.integers(0, runs, (resamples, runs)) if runs > 1 else 0
    seed_idx[1:] = rng.integers(0, seeds, (resamples, seeds))
    return run_idx, seed_idx


def bootstrap_task(
    runs: np.ndarray | Sequence[Sequence[float]],
    baselines: Mapping[str, Sequence[float]],
    *,
    random: str = "random",
    best: str,
    resamples: int = BOOTSTRAP_RESAMPLES,
    rng: np.random.Generator | int = BOOTSTRAP_SEED,
    keep_episodes: bool = False,
) -> TaskDraws:
    """The two-level bootstrap of one task (see the module docstring).

    Args:
        runs: ``(R, n)`` the method's scores: one row per run, one column per evaluation seed.
        baselines: each baseline's ``n`` scores on the same seeds, in the same order; must hold
            ``random`` and ``best`` (the best non-oracle baseline, the normalization's 1).
        resamples: ``B``; rng: a generator or a seed.
        keep_episodes: keep the resampled episodes' normalized scores (performance profiles).
    """
    x = np.atleast_2d(np.asarray(runs, dtype=np.float64))
    R, n = x.shape
    ys = {k: np.asarray(v, dtype=np.float64) for k, v in baselines.items()}
    for k, v in ys.items():
        if v.shape != (n,):
            raise ValueError(f"baseline {k!r}: {v.shape[0] if v.ndim else 0} scores for {n} evaluation seeds")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    run_idx, seed_idx = _indices(gen, R, n, resamples)
    ep = x[run_idx[:, :, None], seed_idx[:, None, :]]  # (1 + B, R, n)
    base = {k: v[seed_idx] for k, v in ys.items()}  # (1 + B, n) each
    means = {k: v.mean(axis=1) for k, v in base.items()}
    run_scores = ep.mean(axis=2)
    lo, hi = means[random], means[best]
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = (hi - lo)[:, None]
        normalized = (run_scores - lo[:, None]) / scale
        episodes = (ep - lo[:, None, None]) / scale[:, :, None] if keep_episodes else None
    wins = {}
    for k, v in base.items():
        d = ep - v[:, None, :]
        wins[k] = np.mean((d > 0) + 0.5 * (d == 0), axis=(1, 2))
    return TaskDraws(
        run_scores=run_scores,
        normalized=normalized,
        paired=run_scores.mean(axis=1) - hi,
        baselines=means,
        wins=wins,
        episodes_normalized=episodes,
    )


def interval(draws: np.ndarray, level: float = 0.95) -> dict[str, float]:
    """``{"value", "low", "high"}``: the point estimate (row 0) and the percentile interval of the
    bootstrap draws (rows 1..B, non-finite draws left out; NaN when fewer than two are finite)."""
    d = np.asarray(draws, dtype=np.float64)
    value = float(d[0])
    rest = d[1:][np.isfinite(d[1:])]
    if rest.size < 2:
        return {"value": value, "low": math.nan, "high": math.nan}
    a = (1 - level) / 2
    low, high = np.percentile(rest, [100 * a, 100 * (1 - a)])
    return {"value": value, "low": float(low), "high": float(high)}


def aggregate_draws(tasks: Sequence[TaskDraws], gamma: float = 1.0) -> dict[str, np.ndarray]:
    """Over tasks, draw by draw (the tasks' draws are independent: a stratified bootstrap): ``iqm``
    (of every run's normalized score on every task), ``mean`` and ``median`` (over tasks of each
    task's mean over runs), ``optimality_gap`` (``gamma - mean(min(x, gamma))`` over runs and tasks,
    each task weighing the same), each ``(1 + B,)``."""
    pooled = np.concatenate([t.normalized for t in tasks], axis=1)
    per_task = np.stack([t.normalized.mean(axis=1) for t in tasks], axis=1)
    gaps = np.stack([np.mean(gamma - np.minimum(t.normalized, gamma), axis=1) for t in tasks], axis=1)
    return {
        "iqm": np.asarray(iqm(pooled, axis=1)),
        "mean": per_task.mean(axis=1),
        "median": np.median(per_task, axis=1),
        "optimality_gap": gaps.mean(axis=1),
    }
