"""Learning curves of training runs: the evaluation score against environment steps and wall time.

A run of ``clustergym train`` (or :func:`clustergym.training.train.train`) with ``--eval-every``
appends its periodic evaluations to ``OUT/eval.csv``: one row per evaluated policy, agent and
evaluation seed, at the step of a policy update, with the training time so far.  :func:`load_curves`
reads several runs (training seeds of one method) into one table; :func:`plot_learning_curves` draws
the learned policy's mean over evaluation seeds for each run, the mean over runs, and the baselines
evaluated beside it as horizontal reference lines, against steps and against wall time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clustergym.errors import ConfigError

__all__ = ["curve_data", "load_curves", "plot_learning_curves"]

LEARNED = "learned"


def _run_folder(path: str | Path) -> Path:
    p = Path(path)
    folder = p.parent if p.suffix == ".zip" else p
    if not (folder / "eval.csv").is_file():
        raise ConfigError(
            "RUN",
            f"{path}: no eval.csv (a folder written by `clustergym train` with --eval-every or --eval-agents)",
        )
    return folder


def load_curves(runs: Sequence[str | Path]) -> tuple[pd.DataFrame, str]:
    """The evaluations of ``runs`` (run folders or their ``model.zip``) as one table, and the metric.

    Columns: ``run`` (the folder), ``train_seed``, ``step``, ``wall_seconds``, ``agent``, ``seed``
    (evaluation seed) and the metric.  The runs must share their scenario (or suite task) and metric:
    curves of different problems are not comparable.
    """
    if not runs:
        raise ConfigError("RUN", "give at least one training run")
    frames, metric, problem = [], None, None
    for r in runs:
        folder = _run_folder(r)
        meta = json.loads((folder / "model.json").read_text()) if (folder / "model.json").is_file() else {}
        ev = pd.read_csv(folder / "eval.csv")
        m = [c for c in ev.columns if c not in ("step", "wall_seconds", "agent", "seed", "unstable")]
        if len(m) != 1 or "step" not in ev:
            raise ConfigError("RUN", f"{folder / 'eval.csv'}: expected step, agent, seed and one metric column")
        key = (meta.get("task") or meta.get("scenario"), json.dumps(meta.get("scenario_params", {}), sort_keys=True))
        if metric is None:
            metric, problem = m[0], key
        elif m[0] != metric or key != problem:
            raise ConfigError("RUN", f"{folder}: evaluates {m[0]} on {key[0]}, the first run {metric} on {problem[0]}")
        if "wall_seconds" not in ev:  # runs written before the column existed
            ev["wall_seconds"] = np.nan
        ev.insert(0, "train_seed", meta.get("seed"))
        ev.insert(0, "run", str(folder))
        frames.append(ev)
    assert metric is not None
    return pd.concat(frames, ignore_index=True), metric


def _ci_bounds(values: pd.Series, metric: str) -> pd.Series:
    """The mean's 95% Student-t interval within the values ``metric`` can take (a queue length is
    never below 0), as in the comparison figures (``ci_low``, ``ci_high``; NaN with fewer than two
    values)."""
    from clustergym.runner import bounded_ci
    from clustergym.runner.metric_info import metric_info

    info = metric_info(metric)
    _, low, high = bounded_ci(values.to_numpy(), info.lower, info.upper)
    return pd.Series({"ci_low": low, "ci_high": high})


def curve_data(curves: pd.DataFrame, metric: str) -> dict[str, pd.DataFrame]:
    """What :func:`plot_learning_curves` draws: ``per_run`` (run, step, wall_seconds, mean over
    evaluation seeds), ``mean`` (step, mean over runs, min and max over runs, and ``ci_low`` /
    ``ci_high``: the 95% Student-t interval of the mean within the metric's range -- over the runs'
    means with several runs (training seeds), over the evaluation seeds with one -- named by
    ``interval_over``) and
    ``baselines`` (agent, mean over every evaluation)."""
    learned = curves[curves["agent"] == LEARNED]
    per_run = learned.groupby(["run", "step"], sort=True).agg(
        wall_seconds=("wall_seconds", "first"), value=(metric, "mean")
    )
    per_run = per_run.reset_index()
    mean = (
        per_run.groupby("step")
        .agg(value=("value", "mean"), low=("value", "min"), high=("value", "max"), runs=("run", "nunique"))
        .reset_index()
    )
    several = per_run["run"].nunique() > 1
    source = per_run.groupby("step")["value"] if several else learned.groupby("step")[metric]
    ci = source.apply(_ci_bounds, metric=metric).unstack().reset_index()
    mean = mean.merge(ci, on="step", how="left")
    mean["interval_over"] = "training seeds" if several else "evaluation seeds"
    baselines = curves[curves["agent"] != LEARNED].groupby("agent", sort=False)[metric].mean().reset_index()
    return {"per_run": per_run, "mean": mean, "baselines": baselines.rename(columns={metric: "value"})}


def plot_learning_curves(curves: pd.DataFrame, metric: str, axes: Any = None) -> Any:
    """Two panels: the learned policy's evaluation ``metric`` against environment steps and against
    training wall time (each run thin, the mean over runs thick with its 95% interval shaded on the
    steps panel: over training seeds, or over evaluation seeds for one run), the baselines as dashed
    horizontal lines.  Returns the axes."""
    import matplotlib.pyplot as plt

    from clustergym.runner.metric_info import metric_info

    d = curve_data(curves, metric)
    if axes is None:
        axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)[1]
    info = metric_info(metric)
    n_runs = d["per_run"]["run"].nunique()
    for ax, x in zip(axes, ("step", "wall_seconds")):
        for i, (_, run) in enumerate(d["per_run"].groupby("run", sort=False)):
            ax.plot(
                run[x],
                run["value"],
                color="C0",
                alpha=0.35,
                linewidth=0.9,
                label=f"learned, each of {n_runs} training seeds" if i == 0 else None,
            )
        if x == "step":
            m = d["mean"]
            ax.plot(m["step"], m["value"], color="C0", linewidth=2, label="learned, mean over training seeds")
            over = m["interval_over"].iloc[0] if len(m) else "training seeds"
            ax.fill_between(
                m["step"], m["ci_low"], m["ci_high"], color="C0", alpha=0.18, linewidth=0, label=f"95% CI over {over}"
            )
        for j, row in enumerate(d["baselines"].itertuples()):
            ax.axhline(row.value, color=f"C{j + 1}", linestyle="--", linewidth=1, label=row.agent)
        ax.set_xlabel("environment steps" if x == "step" else "training wall time (s)")
    axes[0].set_ylabel(info.axis_label, fontsize=8)
    axes[0].legend(fontsize=7)
    return axes
