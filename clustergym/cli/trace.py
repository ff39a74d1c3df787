"""``clustergym trace``: summarise a trace (by format) or a trace preset's job stream.

Registered in :mod:`clustergym.cli` as ``app.command("trace")(trace_cmd)``.  With ``--json``
exactly one JSON document goes to stdout; messages go to stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from clustergym._json import jsonable as _jsonable
from clustergym.cli._common import print_table
from clustergym.errors import ClusterGymError, ConfigError
from clustergym.keyvalue import parse_pairs

__all__ = ["trace_cmd"]

_err = Console(stderr=True, markup=False)  # messages may name extras: [plot] is text


def _window(text: str) -> tuple[float | None, float | None]:
    if ":" not in text:
        raise ClusterGymError(f"--window {text!r}: expected START:END in seconds (either may be empty)")
    lo, hi = text.split(":", 1)
    try:
        start, end = (float(lo) if lo.strip() else None, float(hi) if hi.strip() else None)
    except ValueError:
        raise ConfigError("--window", f"{text!r}: START and END must be numbers of seconds") from None
    if start is not None and end is not None and not start < end:
        raise ConfigError("--window", f"{text!r}: START must be before END (the window [START, END) would keep no job)")
    return start, end


def _priorities(text: str) -> str | list[int]:
    """``--priorities``: a band name, or comma-separated priority numbers (0..11)."""
    if not text[:1].isdigit():
        return text  # a band: the loader names the bands it knows
    parts = [p.strip() for p in text.split(",")]
    bad = [p for p in parts if not p.isdigit()]
    if bad:
        raise ConfigError(
            "--priorities", f"{text!r}: expected a band name or comma-separated integers (e.g. 9,10,11), got {bad[0]!r}"
        )
    return [int(p) for p in parts]


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def trace_cmd(
    trace: str = typer.Argument(
        ...,
        help="a trace format (google, alibaba-v2017, cloudsimpy, alibaba-gpu-v2023, "
        "alibaba-gpu-v2025, azure) or a trace preset (rms-google, bfjs-google, "
        "lotes-google, autoscale-google, alibaba-gpu)",
    ),
    path: Path | None = typer.Option(
        None,
        "--path",
        help="a trace file (or the task_events directory for google) instead of the trace directory's default",
    ),
    trace_dir: Path | None = typer.Option(
        None,
        "--trace-dir",
        help="the trace directory (default $CLUSTERGYM_TRACES, then ~/.local/share/clustergym/traces)",
    ),
    first_n: int | None = typer.Option(None, "--first-n", help="keep the first N jobs by arrival"),
    window: str | None = typer.Option(
        None, "--window", help="START:END trace seconds on the arrival time (formats only)"
    ),
    priorities: str | None = typer.Option(
        None, "--priorities", help="google: a band (non-production, production, free, middle, all) or 0,1,2"
    ),
    lifecycle: str | None = typer.Option(None, "--lifecycle", help="google: strict, finished or attempts"),
    filter_: list[str] = typer.Option([], "--filter", help="another loader option key=value (formats)"),
    set_: list[str] = typer.Option([], "--set", help="a preset parameter key=value (presets)"),
    bin_width: float | None = typer.Option(None, "--bin", help="seconds per arrival-rate bin (default 1200)"),
    plot: Path | None = typer.Option(
        None, "--plot", help="save a figure (arrivals over time, durations, demands) to this file"
    ),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
) -> None:
    """Summarise a trace: jobs, span, demand quantiles per resource, arrival rate over time, filters."""
    from clustergym.runner.figures import check_image_target
    from clustergym.scenarios import PRESETS
    from clustergym.traces.formats import FORMATS
    from clustergym.traces.summary import plot_summary, summarize_trace

    trace_presets = sorted(name for name, p in PRESETS.items() if p.needs_traces)
    if plot is not None:
        check_image_target(plot, "trace --plot")
    try:
        if trace in trace_presets:
            if window is not None or priorities is not None or lifecycle is not None or filter_ or path is not None:
                raise ClusterGymError(
                    f"{trace} is a preset: use --set key=value for its parameters "
                    "(--window/--priorities/--lifecycle/--filter/--path apply to formats)"
                )
            data = _preset_data(trace, parse_pairs(set_, "--set"), first_n, trace_dir, json_out)
        elif trace in FORMATS:
            if set_:
                raise ClusterGymError(f"{trace} is a format: use --filter key=value for loader options")
            opts = parse_pairs(filter_, "--filter")
            if window is not None:
                opts["window"] = _window(window)
            if priorities is not None:
                opts["priorities"] = _priorities(priorities)
            if lifecycle is not None:
                opts["lifecycle"] = lifecycle
            data = _format_data(trace, path, trace_dir, first_n, opts, json_out)
        else:
            raise ClusterGymError(
                f"unknown trace {trace!r}: formats are {', '.join(sorted(FORMATS))}; "
                f"presets are {', '.join(trace_presets)}"
            )
        summary = summarize_trace(data, bin_width=bin_width)
        if plot is not None:
            plot_summary(data, plot, bin_width=bin_width)
            summary["plot"] = str(plot)
    except ClusterGymError:
        raise  # the command line's error path: exit 2, and one JSON error document with --json
    except ValueError as e:  # a loader's own check of an option
        raise ConfigError(str(e)) from None
    if json_out:
        sys.stdout.write(json.dumps(_jsonable(summary), indent=2) + "\n")
        return
    _print(summary)
    if plot is not None:
        _err.print(f"wrote {plot}")


def _preset_data(trace: str, params: dict[str, Any], first_n: int | None, trace_dir: Path | None, quiet: bool) -> Any:
    """The trace of the preset ``trace`` built with ``params`` (each one a parameter of the preset)."""
    import inspect

    from clustergym.scenarios import PRESETS
    from clustergym.traces.summary import trace_data

    if first_n is not None:
        params["first_n"] = first_n
    if trace_dir is not None:
        params["trace_dir"] = str(trace_dir)
    builder = PRESETS[trace].build
    allowed = inspect.signature(builder).parameters
    for k in params:
        if k not in allowed:
            raise ClusterGymError(f"--set {k}: preset {trace!r} has no parameter {k!r}; it takes {sorted(allowed)}")
    if not quiet:
        _err.print(f"building {trace} ...")
    return trace_data(builder(**params))


def _format_data(
    trace: str, path: Path | None, trace_dir: Path | None, first_n: int | None, opts: dict[str, Any], quiet: bool
) -> Any:
    """The trace of the format ``trace`` loaded with the loader options ``opts``."""
    from clustergym.traces.formats import load_trace
    from clustergym.traces.summary import trace_data

    if first_n is not None:
        opts = {**opts, "first_n": first_n}
    if not quiet:
        _err.print(f"loading {trace} ...")
    return trace_data(load_trace(trace, path, trace_dir=trace_dir, **opts), name=trace)


def _print(s: dict[str, Any]) -> None:
    t = Table(title=f"trace {s['name']}")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    t.add_row("jobs", f"{s['jobs']:,}")
    if s["jobs"]:
        sp, ar = s["span"], s["arrival_rate"]
        t.add_row("first arrival (s)", _fmt(sp["first_s"]))
        t.add_row("last arrival (s)", _fmt(sp["last_s"]))
        t.add_row("span", f"{sp['length_s']:.6g} s = {sp['length_h']:.4g} h")
        t.add_row("mean arrival rate (1/s)", _fmt(ar["mean_per_s"]))
        t.add_row(
            f"peak / min rate per {ar['bin_width_s']:g} s bin (1/s)",
            f"{_fmt(ar['peak_per_s'])} / {_fmt(ar['min_per_s'])}",
        )
        d = s["duration"]
        t.add_row("duration mean / median / p99 (s)", f"{_fmt(d['mean'])} / {_fmt(d['p50'])} / {_fmt(d['p99'])}")
    print_table(t)
    if not s["jobs"]:
        return
    t = Table(title="demand quantiles per resource")
    t.add_column("resource (unit)")
    for q in ("mean", "min", "p25", "p50", "p75", "p90", "p99", "max"):
        t.add_column(q, justify="right")
    for r, v in s["demand"].items():
        t.add_row(
            f"{r} ({v['unit']})" if v["unit"] else r,
            *[_fmt(v[q]) for q in ("mean", "min", "p25", "p50", "p75", "p90", "p99", "max")],
        )
    print_table(t)
    ar = s["arrival_rate"]
    counts = np.asarray(ar["counts"])
    rows = min(12, counts.size)
    edges = np.linspace(0, counts.size, rows + 1).astype(int)
    w = ar["bin_width_s"]
    t = Table(title=f"arrival rate over time ({rows} slices of {counts.size} bins of {w:g} s)")
    for c in ("from (h)", "to (h)", "jobs", "rate (1/s)"):
        t.add_column(c, justify="right")
    first = s["span"]["first_s"]
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        n = int(counts[a:b].sum())
        t.add_row(f"{(first + a * w) / 3600:.3g}", f"{(first + b * w) / 3600:.3g}", f"{n:,}", _fmt(n / ((b - a) * w)))
    print_table(t)
    if s.get("types"):
        t = Table(title="jobs per type")
        t.add_column("type")
        t.add_column("jobs", justify="right")
        for k, v in s["types"].items():
            t.add_row(k, f"{v:,}")
        print_table(t)
    rep = s.get("filter_report")
    if rep:
        t = Table(title=f"filters ({rep.get('rows', 0):,} rows read, {rep.get('records', 0):,} candidate jobs)")
        t.add_column("step")
        t.add_column("jobs", justify="right")
        for reason, n in rep.get("dropped", {}).items():
            t.add_row(f"dropped: {reason}", f"{n:,}")
        for reason, n in rep.get("modified", {}).items():
            t.add_row(f"kept, modified: {reason}", f"{n:,}")
        t.add_row("kept", f"{rep.get('kept', 0):,}")
        print_table(t)
