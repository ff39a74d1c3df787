"""What a comparison writes: flat result tables, the summary and its plot.

``results.csv`` and ``results.parquet`` hold one row per episode (list-valued metrics spread over
columns, :func:`flat_results`), ``summary.csv`` the :func:`~clustergym.runner.stats.summarize`
table, and one figure: the headline metric per agent with 95% intervals, or against the swept
parameter.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clustergym.runner.figures import plot_agents, plot_sweep

__all__ = ["flat_results", "write_results", "plot_agents", "plot_sweep"]


def flat_results(results: pd.DataFrame) -> pd.DataFrame:
    """The results with list-valued columns (``utilization`` per resource, queue length per
    type, ...) spread over columns ``name_0, name_1, ...``: a flat table for CSV and Parquet."""
    out = {}
    for col in results.columns:
        values = results[col]
        if values.map(lambda v: isinstance(v, (list, tuple, np.ndarray))).any():
            width = int(values.map(len).max())
            for k in range(width):
                out[f"{col}_{k}"] = values.map(lambda v, k=k: float(v[k]) if k < len(v) else math.nan)
        else:
            out[col] = values
    return pd.DataFrame(out)


def write_results(out_dir: str | Path, results: pd.DataFrame, summary: pd.DataFrame, *, metric: str,
                  param: str | None = None, title: str = "") -> list[Path]:
    """Write ``results.csv``, ``results.parquet``, ``summary.csv`` and the plot.

    ``results.*`` hold :func:`flat_results` (one row per episode).  The plot is ``metric``
    per agent with 95% intervals, or against ``param`` for a sweep.

    Returns:
        The paths written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    flat = flat_results(results)
    paths = [out / "results.csv", out / "results.parquet", out / "summary.csv"]
    flat.to_csv(paths[0], index=False)
    flat.to_parquet(paths[1], index=False)
    summary.to_csv(paths[2], index=False)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if param is None:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        plot_agents(summary, metric, ax=ax)
        paths.append(out / f"{metric}.png")
    else:
        fig, ax = plt.subplots(figsize=(6, 4))
        plot_sweep(summary, param, metric, ax=ax)
        paths.append(out / f"{metric}_vs_{param}.png")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths
