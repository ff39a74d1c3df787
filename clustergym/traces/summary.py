"""Summaries of a trace or of a trace scenario's job stream: counts, span, quantiles, arrival rate over time.

:func:`trace_data` takes a :class:`~clustergym.traces.table.TraceTable` or a
:class:`~clustergym.scenarios.spec.Scenario` whose source replays a table;
:func:`summarize_trace` turns it into a JSON-ready dict (times in seconds);
:func:`plot_summary` draws arrivals per time bin (RMS paper Fig. 7 uses 20-minute bins),
the duration distribution and one demand histogram per resource.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clustergym.errors import ScenarioError
from clustergym.traces.table import TraceTable
from clustergym.validation import positive

__all__ = ["TraceData", "trace_data", "summarize_trace", "plot_summary", "QUANTILES"]

#: quantile name -> level
QUANTILES: dict[str, float] = {"min": 0.0, "p25": 0.25, "p50": 0.5, "p75": 0.75, "p90": 0.9, "p99": 0.99, "max": 1.0}


@dataclass
class TraceData:
    """Arrays of a job stream, in seconds.

    Attributes:
        name: the trace or scenario name.
        arrival, duration: ``(n,)`` seconds (duration may be NaN where the trace has none).
        demand: resource -> ``(n,)`` demands.
        units: resource -> unit.
        report: the loader's filter report (a dict), if known.
        types: ``(n,)`` job types and their names, if the stream is typed.
        seconds_per_unit: seconds per time unit of the source (e.g. 0.1 for 100 ms slots).
    """

    name: str
    arrival: np.ndarray
    duration: np.ndarray
    demand: dict[str, np.ndarray]
    units: dict[str, str] = field(default_factory=dict)
    report: dict[str, Any] | None = None
    types: np.ndarray | None = None
    type_names: tuple[str, ...] = ()
    seconds_per_unit: float = 1.0


def trace_data(obj: Any, name: str | None = None) -> TraceData:
    """A :class:`TraceData` from a TraceTable or a trace scenario (its ReplaySource, unwrapping TimeScaled)."""
    if isinstance(obj, TraceTable):
        j = obj.jobs
        return TraceData(
            name or obj.format,
            j["arrival"].to_numpy(np.float64),
            j["duration"].to_numpy(np.float64),
            {r: j[r].to_numpy(np.float64) for r in obj.resources},
            {r: obj.units.get(r, "") for r in obj.resources},
            obj.report.to_dict(),
        )
    from clustergym.workloads.replay import ReplaySource, TimeScaled

    if not hasattr(obj, "source") or not hasattr(obj, "epochs"):  # a Scenario (the layer above, duck-typed)
        raise ScenarioError("trace", f"expected a trace table or a trace scenario, got {type(obj).__name__}")
    src, factor = obj.source, 1.0
    while isinstance(src, TimeScaled):
        factor *= src.factor
        src = src.source
    if not isinstance(src, ReplaySource):
        raise ScenarioError(
            "trace", f"scenario {obj.name!r} does not replay a trace (its source is {type(src).__name__})"
        )
    spu = float(obj.params.get("slot", 1.0)) if obj.epochs.tick_period == 1.0 and "slot" in obj.params else 1.0
    typed = src.types.num_types > 1
    return TraceData(
        name or obj.name,
        src.time * factor * spu,
        src.work * spu,
        {r: src.demand[:, i] for i, r in enumerate(obj.resources)},
        {},
        obj.params.get("trace_report"),
        src.type if typed else None,
        src.types.names if typed else (),
        spu,
    )


def _quantiles(v: np.ndarray) -> dict[str, float | None]:
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {k: None for k in QUANTILES}
    q = np.quantile(v, list(QUANTILES.values()))
    return {k: float(x) for k, x in zip(QUANTILES, q)}


def _nice_width(length: float, max_bins: int) -> float:
    """1200 s (RMS paper Fig. 7) unless that gives more than ``max_bins``; then a round multiple of an hour or a day."""
    w = 1200.0
    if length / w <= max_bins:
        return w
    for unit in (3600.0, 86400.0):
        for mult in (1, 2, 3, 4, 6, 8, 12):
            if length / (unit * mult) <= max_bins:
                return unit * mult
    return 86400.0 * math.ceil(length / 86400.0 / max_bins)


def summarize_trace(data: TraceData, *, bin_width: float | None = None, max_bins: int = 500) -> dict[str, Any]:
    """A JSON-ready summary: jobs, span, arrival rate over time (per bin), duration and demand quantiles.

    Args:
        bin_width: seconds per arrival-rate bin (default 1200 s, coarser for long traces so there are
            at most ``max_bins`` bins).
    """
    a = data.arrival
    n = int(a.size)
    out: dict[str, Any] = {"name": data.name, "jobs": n}
    if n == 0:
        out.update(span=None, arrival_rate=None, duration=None, demand={}, filter_report=data.report)
        return out
    first, last = float(a.min()), float(a.max())
    length = last - first
    w = positive(bin_width, "bin_width") if bin_width is not None else _nice_width(max(length, 1.0), max_bins)
    nb = max(1, int(math.floor(length / w)) + 1)
    counts = np.bincount(np.minimum(((a - first) // w).astype(np.int64), nb - 1), minlength=nb)
    out["span"] = {"first_s": first, "last_s": last, "length_s": length, "length_h": length / 3600.0}
    out["arrival_rate"] = {
        "mean_per_s": n / length if length > 0 else None,
        "bin_width_s": w,
        "bins": int(nb),
        "counts": counts.tolist(),
        "peak_per_s": float(counts.max() / w),
        "min_per_s": float(counts.min() / w),
        "cv_of_bin_counts": float(counts.std() / counts.mean()) if counts.mean() > 0 else None,
    }
    d = data.duration
    out["duration"] = {
        "unit": "s",
        "mean": float(np.nanmean(d)) if np.isfinite(d).any() else None,
        "missing": int((~np.isfinite(d)).sum()),
        **_quantiles(d),
    }
    out["demand"] = {
        r: {"unit": data.units.get(r, ""), "mean": float(np.mean(v)), "zero": int((v == 0).sum()), **_quantiles(v)}
        for r, v in data.demand.items()
    }
    if data.types is not None:
        cnt = np.bincount(data.types, minlength=len(data.type_names))
        out["types"] = {str(nm): int(c) for nm, c in zip(data.type_names, cnt)}
    out["filter_report"] = data.report
    return out


def plot_summary(
    data: TraceData,
    path: str | os.PathLike[str],
    *,
    bin_width: float | None = None,
    max_bins: int = 500,
    title: str | None = None,
) -> Path:
    """Save a figure: arrivals per bin over time, the duration distribution, a histogram per resource."""
    from clustergym.errors import require_extra

    require_extra("matplotlib", "plot", "a trace plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = summarize_trace(data, bin_width=bin_width, max_bins=max_bins)
    R = len(data.demand)
    ncols = max(2, R)
    fig = plt.figure(figsize=(3.2 * ncols, 6.4))
    gs = fig.add_gridspec(2, ncols)
    ax = fig.add_subplot(gs[0, : ncols - 1])
    if s["jobs"]:
        ar = s["arrival_rate"]
        w = ar["bin_width_s"]
        x = (s["span"]["first_s"] + w * np.arange(ar["bins"])) / 3600.0
        ax.step(x, ar["counts"], where="post", lw=0.9)
        ax.set_xlabel("time (h)")
        ax.set_ylabel(f"arrivals per {w / 60:g} min" if w < 3600 else f"arrivals per {w / 3600:g} h")
    ax.set_title("arrivals over time", fontsize=9)
    ax = fig.add_subplot(gs[0, ncols - 1])
    d = data.duration[np.isfinite(data.duration) & (data.duration > 0)]
    if d.size:
        ds = np.sort(d)
        ax.plot(ds, np.arange(1, ds.size + 1) / ds.size, lw=1)
        ax.set_xscale("log")
    ax.set_xlabel("duration (s)")
    ax.set_ylabel("CDF")
    ax.set_title("durations", fontsize=9)
    for i, (r, v) in enumerate(data.demand.items()):
        ax = fig.add_subplot(gs[1, i])
        v = v[np.isfinite(v)]
        if v.size:
            ax.hist(v, bins=50, log=True)
        unit = data.units.get(r, "")
        ax.set_xlabel(f"{r}" + (f" ({unit})" if unit else ""))
        ax.set_ylabel("jobs")
        ax.set_title(f"demand: {r}", fontsize=9)
    fig.suptitle(title or f"{data.name}: {s['jobs']:,} jobs", fontsize=10)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
