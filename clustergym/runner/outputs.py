"""What a comparison writes: flat result tables, the summary and its plot.

``results.csv`` and ``results.parquet`` hold one row per episode (list-valued metrics spread over
columns, :func:`flat_results`), ``summary.csv`` the :func:`~clustergym.runner.stats.summarize`
table, and one figure: the headline metric per agent with 95% intervals, or against the swept
parameter.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from clustergym.runner.figures import plot_agents, plot_sweep

__all__ = ["flat_results", "missing_outputs", "plot_agents", "plot_sweep", "write_results"]


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


def missing_outputs() -> dict[str, str]:
    """The files :func:`write_results` cannot write on this install, with the extra that brings each
    (``{"results.parquet": "..."}``): the tables in CSV need nothing beyond the core install."""
    import importlib.util

    out = {}
    if importlib.util.find_spec("pyarrow") is None:
        out["results.parquet"] = "needs pyarrow: pip install 'clustergym[parquet]'"
    if importlib.util.find_spec("matplotlib") is None:
        out["the plot"] = "needs matplotlib: pip install 'clustergym[plot]'"
    return out


def write_results(
    out_dir: str | Path,
    results: pd.DataFrame,
    summary: pd.DataFrame,
    *,
    metric: str,
    param: str | None = None,
    title: str = "",
) -> list[Path]:
    """Write ``results.csv``, ``results.parquet``, ``summary.csv`` and the plot, each atomically
    (a temporary file renamed over the target).

    ``results.*`` hold :func:`flat_results` (one row per episode).  The plot is ``metric``
    per agent with 95% intervals, or against ``param`` for a sweep.  ``results.parquet`` needs
    the ``parquet`` extra and the plot the ``plot`` extra: without them those files are not
    written (:func:`missing_outputs` says so, and the returned list leaves them out).

    Returns:
        The paths written.
    """
    from clustergym.runner.journal import atomic_write

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    missing = missing_outputs()
    flat = flat_results(results)
    paths = [out / "results.csv", out / "summary.csv"]
    atomic_write(paths[0], lambda tmp: flat.to_csv(tmp, index=False))
    atomic_write(paths[1], lambda tmp: summary.to_csv(tmp, index=False))
    if "results.parquet" not in missing:
        paths.insert(1, out / "results.parquet")
        atomic_write(paths[1], lambda tmp: flat.to_parquet(tmp, index=False))
    if "the plot" in missing:
        return paths
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
    atomic_write(paths[-1], lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    plt.close(fig)
    return paths
