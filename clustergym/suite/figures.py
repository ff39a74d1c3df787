"""Figures of a benchmark report (:func:`clustergym.suite.report.report`), as rliable draws them.

Three panels: the aggregates over tasks (IQM, mean, median, optimality gap) with their intervals;
the probability of improvement over each task's best baseline, best oracle and random; the
performance profile (the fraction of episodes above each normalized score) with its band.  The
title names the split.  Needs the ``plot`` extra (matplotlib).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["plot_report"]

_AGGREGATES = (("iqm", "IQM"), ("mean", "mean"), ("median", "median"), ("optimality_gap", "optimality gap"))


def plot_report(rep: dict[str, Any], path: str | Path, title: str | None = None) -> Path:
    """Draw the report's aggregates, probabilities of improvement and performance profile to ``path``."""
    from clustergym.errors import require_extra

    require_extra("matplotlib", "plot", "a report figure")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agg = rep.get("aggregate")
    if agg is None:
        raise ValueError("the report has no task with scores to draw")
    fig, axes = plt.subplots(1, 3, figsize=(13.0, 3.8))
    ax = axes[0]
    for i, key in enumerate(k for k, _ in _AGGREGATES):
        v = agg[key]
        ax.errorbar(
            [v["value"]], [i], xerr=[[v["value"] - v["low"]], [v["high"] - v["value"]]], fmt="o", capsize=4, color="C0"
        )
    ax.set_yticks(range(len(_AGGREGATES)), [label for _, label in _AGGREGATES])
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xlabel("normalized score (best non-oracle baseline 1)")
    ax.invert_yaxis()
    ax = axes[1]
    probs = list(agg["probability_of_improvement"].items())
    for i, v in enumerate(v for _, v in probs):
        ax.errorbar(
            [v["value"]], [i], xerr=[[v["value"] - v["low"]], [v["high"] - v["value"]]], fmt="s", capsize=4, color="C1"
        )
    ax.set_yticks(range(len(probs)), [f"P(better than {role})" for role, _ in probs])
    ax.axvline(0.5, color="black", lw=0.8, ls="--")
    ax.set_xlim(0, 1)
    ax.set_xlabel("probability of improvement (same seed)")
    ax.invert_yaxis()
    ax = axes[2]
    prof = rep["performance_profile"]
    ax.plot(prof["taus"], prof["fraction"], color="C2")
    ax.fill_between(prof["taus"], prof["low"], prof["high"], color="C2", alpha=0.25)
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xlabel("normalized score τ")
    ax.set_ylabel("fraction of episodes above τ")
    runs = len(rep["runs"])
    fig.suptitle(
        title or f"clustergym suite, {rep['split']} split: {runs} run(s), {agg['tasks']} task(s), 95% intervals"
    )
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out
