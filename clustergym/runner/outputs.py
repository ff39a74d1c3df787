"""What a comparison writes: flat result tables, the summary (wide and long) and its figures.

``results.csv`` and ``results.parquet`` hold one row per episode (list-valued metrics spread over
columns, :func:`flat_results`), ``summary.csv`` the :func:`~clustergym.runner.stats.summarize`
table and ``summary_long.csv`` the same in long format; the figures (:mod:`clustergym.runner.figures`)
show the headline metric per agent, its paired difference against the reference, or the metric
against the swept parameter, in PNG, SVG and PDF.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from clustergym.runner.figures import FIGURE_FORMATS, plot_agents, plot_paired, plot_sweep

if TYPE_CHECKING:  # imported where a frame is built: `clustergym run` does not need pandas
    import pandas as pd

__all__ = ["flat_results", "missing_outputs", "plot_agents", "plot_paired", "plot_sweep", "write_results"]


def flat_results(results: pd.DataFrame) -> pd.DataFrame:
    """The results with list-valued columns (``utilization`` per resource, queue length per
    type, ...) spread over columns ``name_0, name_1, ...``: a flat table for CSV and Parquet."""
    import pandas as pd

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
    formats: tuple[str, ...] = FIGURE_FORMATS,
) -> list[Path]:
    """Write the tables and figures of a comparison, each atomically (a temporary file renamed over
    the target).

    - ``results.csv`` and ``results.parquet``: :func:`flat_results`, one row per episode;
    - ``summary.csv``: the :func:`~clustergym.runner.stats.summarize` table (wide: one row per agent);
    - ``summary_long.csv``: the same in long format (one row per agent and metric,
      :func:`~clustergym.runner.stats.summary_long`);
    - ``<metric>.<fmt>``: ``metric`` per agent with 95% intervals within the metric's bounds, oracle
      agents marked; with paired differences in the summary, ``<metric>_paired.<fmt>`` as well; for a
      sweep, ``<metric>_vs_<param>.<fmt>`` (:mod:`clustergym.runner.figures`), in each of ``formats``.

    ``results.parquet`` needs the ``parquet`` extra and the figures the ``plot`` extra: without them
    those files are not written (:func:`missing_outputs` says so, and the returned list leaves them out).

    Returns:
        The paths written.
    """
    from clustergym.runner.journal import atomic_write
    from clustergym.runner.stats import summary_long

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    missing = missing_outputs()
    flat = flat_results(results)
    metrics = [c for c in summary.columns if f"{c}_ci95" in summary.columns]
    long = summary_long(summary, metrics, by=param)
    paths = [out / "results.csv", out / "summary.csv", out / "summary_long.csv"]
    atomic_write(paths[0], lambda tmp: flat.to_csv(tmp, index=False))
    atomic_write(paths[1], lambda tmp: summary.to_csv(tmp, index=False))
    atomic_write(paths[2], lambda tmp: long.to_csv(tmp, index=False))
    if "results.parquet" not in missing:
        paths.insert(1, out / "results.parquet")
        atomic_write(paths[1], lambda tmp: flat.to_parquet(tmp, index=False))
    if "the plot" in missing:
        return paths
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def save(fig: Any, stem: str) -> None:
        fig.tight_layout()
        for fmt in formats:
            path = out / f"{stem}.{fmt}"

            def draw(tmp: Path, fmt: str = fmt) -> None:
                fig.savefig(tmp, dpi=200, format=fmt, bbox_inches="tight")

            atomic_write(path, draw)
            paths.append(path)
        plt.close(fig)

    if param is None:
        ax = plot_agents(summary, metric)
        ax.set_title(title, fontsize=9)
        save(ax.figure, metric)
        reference = summary.attrs.get("reference")
        if reference is not None and f"{metric}_diff" in summary:
            ax = plot_paired(summary, metric, reference)
            ax.set_title(f"{title.split(' (')[0]}: difference from {reference} on the same seeds", fontsize=9)
            save(ax.figure, f"{metric}_paired")
    else:
        ax = plot_sweep(summary, param, metric)
        ax.set_title(title, fontsize=9)
        save(ax.figure, f"{metric}_vs_{param}")
    return paths
