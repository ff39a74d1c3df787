"""Figures of comparisons, drawn from :func:`~clustergym.runner.stats.summarize` tables.

Each figure reads the metric's label, unit, direction and bounds from
:mod:`clustergym.runner.metric_info`, draws the interval within the bounds (``<metric>_lo`` and
``<metric>_hi``), and marks the agents that use an oracle (information a learned agent does not get)
with hatching and a legend entry.  Agents are laid out horizontally, sorted best first, so that 40
and more stay readable.  :func:`figure_data` returns the numbers each figure draws, for tests and
for readers who want the values behind a plot.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from clustergym.runner.metric_info import metric_info

if TYPE_CHECKING:  # imported where a frame is built: `clustergym run` does not need pandas
    import pandas as pd

__all__ = [
    "FIGURE_FORMATS",
    "SLOTTED_MARK",
    "check_image_target",
    "figure_data",
    "plot_agents",
    "plot_paired",
    "plot_sweep",
    "save_figure",
]

#: the formats :func:`save_figure` writes by default (PNG for screens, SVG and PDF for papers)
FIGURE_FORMATS = ("png", "svg", "pdf")

_ORACLE_HATCH = "///"
#: appended to the name of a slotted-time agent run on continuous-time arrivals
SLOTTED_MARK = "(slotted)"


def _interval(summary: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper ends of each row's interval, within the metric's bounds."""
    info = metric_info(metric)
    mean = summary[metric].to_numpy(dtype=float)
    if f"{metric}_lo" in summary:
        lo, hi = summary[f"{metric}_lo"].to_numpy(dtype=float), summary[f"{metric}_hi"].to_numpy(dtype=float)
    else:
        half = summary[f"{metric}_ci95"].to_numpy(dtype=float)
        lo, hi = np.maximum(mean - half, info.lower), np.minimum(mean + half, info.upper)
    # no interval (a single seed): the point alone
    return np.where(np.isfinite(lo), lo, mean), np.where(np.isfinite(hi), hi, mean)


def _flag(summary: pd.DataFrame, column: str) -> pd.Series:
    """The summary's boolean ``column``, all False where it has none."""
    import pandas as pd

    return summary[column].astype(bool) if column in summary else pd.Series(False, summary.index)


def figure_data(summary: pd.DataFrame, metric: str, *, kind: str = "agents", param: str | None = None) -> pd.DataFrame:
    """The values a figure draws, one row per bar or point, in drawing order.

    ``kind="agents"``: ``agent, mean, lo, hi, uses_oracle, slotted, label``, best first (the metric's
    direction).
    ``kind="paired"``: ``agent, diff, lo, hi, p_adj, uses_oracle, slotted, label`` for every agent but
    the reference, best first; the interval is the paired difference's Student-t interval.
    ``kind="sweep"``: ``agent, <param>, x, mean, lo, hi, uses_oracle, slotted, label``, where ``x`` is
    the position after the dodge (each agent shifted by a small fraction of the spacing between swept
    values).  ``slotted``: a slotted-time agent on a scenario with continuous-time arrivals (it acts
    once per period); ``label`` is the agent's name, marked with :data:`SLOTTED_MARK` when slotted.
    """
    import pandas as pd

    info = metric_info(metric)
    oracle, slotted = _flag(summary, "uses_oracle"), _flag(summary, "slotted_on_continuous")
    label = summary["agent"].astype(str) + np.where(slotted, f" {SLOTTED_MARK}", "")
    if kind == "agents":
        lo, hi = _interval(summary, metric)
        d = pd.DataFrame(
            {
                "agent": summary["agent"].to_numpy(),
                "mean": summary[metric].to_numpy(dtype=float),
                "lo": lo,
                "hi": hi,
                "uses_oracle": oracle.to_numpy(),
                "slotted": slotted.to_numpy(),
                "label": label.to_numpy(),
            }
        )
        return d.sort_values("mean", ascending=info.lower_is_better, kind="stable", na_position="last").reset_index(
            drop=True
        )
    if kind == "paired":
        if f"{metric}_diff" not in summary:
            raise ValueError(f"the summary has no paired differences of {metric}: summarize(..., reference=...)")
        keep = summary[f"{metric}_diff"].notna()
        s = summary[keep]
        diff, half = s[f"{metric}_diff"].to_numpy(dtype=float), s[f"{metric}_diff_ci95"].to_numpy(dtype=float)
        half = np.where(np.isfinite(half), half, 0.0)
        d = pd.DataFrame(
            {
                "agent": s["agent"].to_numpy(),
                "diff": diff,
                "lo": diff - half,
                "hi": diff + half,
                "p_adj": s.get(f"{metric}_diff_p_adj", pd.Series(math.nan, s.index)).to_numpy(dtype=float),
                "uses_oracle": oracle[keep].to_numpy(),
                "slotted": slotted[keep].to_numpy(),
                "label": label[keep].to_numpy(),
            }
        )
        return d.sort_values("diff", ascending=info.lower_is_better, kind="stable").reset_index(drop=True)
    if kind == "sweep":
        if param is None:
            raise ValueError("a sweep figure needs the swept parameter")
        lo, hi = _interval(summary, metric)
        agents = list(dict.fromkeys(summary["agent"]))
        values = np.sort(summary[param].astype(float).unique())
        spacing = float(np.min(np.diff(values))) if values.size > 1 else 1.0
        width = 0.5 * spacing / max(len(agents), 1)
        offset = {a: (i - (len(agents) - 1) / 2) * width for i, a in enumerate(agents)}
        return pd.DataFrame(
            {
                "agent": summary["agent"].to_numpy(),
                param: summary[param].to_numpy(),
                "x": summary[param].astype(float).to_numpy() + summary["agent"].map(offset).to_numpy(),
                "mean": summary[metric].to_numpy(dtype=float),
                "lo": lo,
                "hi": hi,
                "uses_oracle": oracle.to_numpy(),
                "slotted": slotted.to_numpy(),
                "label": label.to_numpy(),
            }
        )
    raise ValueError(f"kind must be 'agents', 'paired' or 'sweep', not {kind!r}")


def _new_axes(n_rows: int, ax: Any) -> Any:
    import matplotlib.pyplot as plt

    if ax is not None:
        return ax
    return plt.subplots(figsize=(6.4, max(2.2, 0.28 * n_rows + 1.0)))[1]


def _slotted_note() -> Any:
    """A legend entry without a mark that explains :data:`SLOTTED_MARK`."""
    from matplotlib.patches import Patch

    return Patch(facecolor="none", edgecolor="none", label=f"{SLOTTED_MARK}: slotted-time agent, acts once per period")


def _oracle_legend(ax: Any, any_oracle: bool, any_slotted: bool = False) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(facecolor="C0", label="no oracle")]
    if any_oracle:
        handles.append(Patch(facecolor="C1", hatch=_ORACLE_HATCH, label="uses an oracle"))
    if any_slotted:
        handles.append(_slotted_note())
    ax.legend(handles=handles, fontsize=7, loc="best")


def plot_agents(summary: pd.DataFrame, metric: str, ax: Any = None) -> Any:
    """``metric`` per agent, one horizontal bar each, best on top, with its 95% interval within
    the metric's bounds; oracle agents hatched.  Returns the axes."""
    d = figure_data(summary, metric, kind="agents")
    ax = _new_axes(len(d), ax)
    y = np.arange(len(d))[::-1]
    colors = np.where(d["uses_oracle"], "C1", "C0")
    bars = ax.barh(
        y,
        d["mean"],
        color=colors,
        xerr=[d["mean"] - d["lo"], d["hi"] - d["mean"]],
        capsize=3,
        error_kw={"elinewidth": 0.8},
    )
    for bar, oracle in zip(bars, d["uses_oracle"]):
        if oracle:
            bar.set_hatch(_ORACLE_HATCH)
    ax.set_yticks(y, d["label"], fontsize=7 if len(d) > 15 else 8)
    log = _spans_decades(d["mean"])
    if log:  # a few unstable agents would squash every other bar (and its hatching) to a sliver
        ax.set_xscale("log")
    ax.set_xlabel(metric_info(metric).axis_label + " (95% CI" + (", log scale)" if log else ")"), fontsize=8)
    _oracle_legend(ax, bool(d["uses_oracle"].any()), bool(d["slotted"].any()))
    return ax


#: the largest over the smallest mean above which :func:`plot_agents` draws a log axis
LOG_SPAN = 30.0


def _spans_decades(means: Any) -> bool:
    """Whether positive means span more than :data:`LOG_SPAN` times (all must be positive)."""
    v = np.asarray(means, dtype=float)
    v = v[np.isfinite(v)]
    return bool(v.size > 1 and (v > 0).all() and v.max() / v.min() > LOG_SPAN)


def plot_paired(summary: pd.DataFrame, metric: str, reference: str, ax: Any = None, alpha: float = 0.05) -> Any:
    """The paired difference ``agent - reference`` (same seeds) per agent with its 95% interval and a
    line at 0; markers are filled where the adjusted p-value is below ``alpha`` (the method is in the
    label) and hollow elsewhere.  Returns the axes."""
    d = figure_data(summary, metric, kind="paired")
    ax = _new_axes(len(d), ax)
    y = np.arange(len(d))[::-1]
    for yi, row in zip(y, d.itertuples()):
        color = "C1" if row.uses_oracle else "C0"
        significant = bool(row.p_adj < alpha)  # NaN (no test): hollow
        ax.errorbar(
            row.diff,
            yi,
            xerr=[[row.diff - row.lo], [row.hi - row.diff]],
            fmt="s" if row.uses_oracle else "o",
            color=color,
            mfc=color if significant else "white",
            capsize=3,
            markersize=4,
        )
    ax.axvline(0.0, color="0.4", linewidth=0.8)
    ax.set_yticks(y, d["label"], fontsize=7 if len(d) > 15 else 8)
    info = metric_info(metric)
    unit = f" ({info.unit})" if info.unit else ""
    method = summary.attrs.get("p_adjust", "holm")
    ax.set_xlabel(f"{info.label}{unit}: agent - {reference}, paired by seed (95% CI; p adjusted: {method})", fontsize=8)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", color="C0", linestyle="", label="no oracle")]
    if d["uses_oracle"].any():
        handles.append(Line2D([], [], marker="s", color="C1", linestyle="", label="uses an oracle"))
    handles.append(
        Line2D([], [], marker="o", color="0.3", mfc="white", linestyle="", label=f"hollow: adjusted p >= {alpha:g}")
    )
    if d["slotted"].any():
        handles.append(_slotted_note())
    ax.legend(handles=handles, fontsize=7, loc="best")
    return ax


def plot_sweep(summary: pd.DataFrame, param: str, metric: str, ax: Any = None) -> Any:
    """``metric`` against the swept ``param``, one series per agent dodged sideways, intervals
    within the metric's bounds; a log axis only when every interval is positive.  Oracle agents
    are drawn dashed with square markers.  Returns the axes."""
    import matplotlib.pyplot as plt

    d = figure_data(summary, metric, kind="sweep", param=param)
    ax = ax if ax is not None else plt.subplots(figsize=(6.4, 4))[1]
    for _, grp in d.groupby("agent", sort=False):
        oracle = bool(grp["uses_oracle"].any())
        ax.errorbar(
            grp["x"],
            grp["mean"],
            yerr=[grp["mean"] - grp["lo"], grp["hi"] - grp["mean"]],
            marker="s" if oracle else "o",
            linestyle="--" if oracle else "-",
            capsize=3,
            markersize=4,
            label=f"{grp['label'].iloc[0]} (oracle)" if oracle else grp["label"].iloc[0],
        )
    ax.set_xlabel(param.replace("_", " "))
    ax.set_ylabel(metric_info(metric).axis_label, fontsize=8)
    if (d["lo"] > 0).all() and d["hi"].max() / d["lo"].min() > 50:
        ax.set_yscale("log")
    handles, _ = ax.get_legend_handles_labels()
    if d["slotted"].any():
        handles.append(_slotted_note())
    ax.legend(handles=handles, fontsize=7, ncol=2 if d["agent"].nunique() > 8 else 1)
    return ax


def save_figure(
    fig: Any, path_stem: str | Path, formats: tuple[str, ...] = FIGURE_FORMATS, dpi: int = 200
) -> list[Path]:
    """Write ``fig`` as ``<stem>.<format>`` for each format; returns the paths."""
    stem = Path(path_stem)
    paths = []
    for fmt in formats:
        p = stem.with_name(f"{stem.name}.{fmt}")
        fig.savefig(p, dpi=dpi, format=fmt, bbox_inches="tight")
        paths.append(p)
    return paths


def check_image_target(plot: Path, command: str) -> None:
    """An image file ``plot`` (the option ``--plot`` of ``clustergym COMMAND``) can be written: its type is one
    matplotlib writes, its folder exists and it can be opened for writing.  Checked before a trace is read or a
    benchmark runs (which can take minutes); nothing is left behind."""
    from clustergym.errors import ConfigError, require_extra

    require_extra("matplotlib", "plot", command)
    from matplotlib.figure import Figure

    formats = Figure().canvas.get_supported_filetypes()
    suffix = plot.suffix.lower().lstrip(".")
    if suffix not in formats:
        raise ConfigError(
            "--plot",
            f"{plot}: unknown image type {plot.suffix or '(none)'!r}; use one of "
            f"{', '.join('.' + f for f in sorted(formats))}",
        )
    parent = plot.parent if str(plot.parent) else Path(".")
    if plot.is_dir():
        raise ConfigError("--plot", f"{plot} is a folder; give a file name such as {plot / 'trace.png'}")
    if not parent.is_dir():
        raise ConfigError("--plot", f"{plot}: the folder {parent} does not exist")
    existed = plot.exists()
    try:  # the one sure test: open it for writing (an existing file is left as it is)
        with open(plot, "ab"):
            pass
    except OSError as e:
        raise ConfigError("--plot", f"{plot}: cannot write there ({e.strerror or e})") from None
    if not existed:
        plot.unlink(missing_ok=True)
