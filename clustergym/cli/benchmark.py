"""``clustergym benchmark``: score an agent or saved models on the suite, or regenerate its reference.

Registered in :mod:`clustergym.cli` as ``app.command("benchmark")(benchmark_cmd)``.  With ``--json``
exactly one JSON document goes to stdout; progress and messages go to stderr.  Bad input (an
unknown agent, model path or task, a seed count out of range) exits with status 2 and a message.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from clustergym._json import jsonable as _jsonable
from clustergym.errors import ClusterGymError, ConfigError

__all__ = ["benchmark_cmd", "plot_normalized", "report_figure_path"]

_err = Console(stderr=True)
_out = Console()


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.{digits}g}" if isinstance(v, float) else str(v)


def _tasks(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise ConfigError("--tasks", f"{text!r}: expected comma-separated task names")
    return names


def plot_normalized(rows: list[dict[str, Any]], path: Path, title: str) -> Path:
    """A bar chart of normalized scores per task (``rows``: task, agent, normalized, ci_low, ci_high, oracle)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    tasks = list(dict.fromkeys(r["task"] for r in rows))
    agents = list(dict.fromkeys(r["agent"] for r in rows))
    width = 0.8 / max(len(agents), 1)
    fig, ax = plt.subplots(figsize=(max(7.0, 1.4 * len(tasks) + 2), 4.2))
    for i, agent in enumerate(agents):
        xs, ys, lo, hi = [], [], [], []
        for j, t in enumerate(tasks):
            r = next((r for r in rows if r["task"] == t and r["agent"] == agent), None)
            if r is None or not math.isfinite(r["normalized"]):
                continue
            xs.append(j - 0.4 + width * (i + 0.5))
            ys.append(r["normalized"])
            lo.append(r["normalized"] - r.get("ci_low", r["normalized"]))
            hi.append(r.get("ci_high", r["normalized"]) - r["normalized"])
        oracle = any(r["oracle"] for r in rows if r["agent"] == agent)
        ax.bar(
            xs,
            ys,
            width,
            yerr=np.array([lo, hi]) if any(lo) or any(hi) else None,
            capsize=2,
            label=agent + (" (oracle)" if oracle else ""),
            hatch="//" if oracle else None,
            alpha=0.85,
        )
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xticks(range(len(tasks)), tasks, rotation=15)
    ax.set_ylabel("normalized score (random 0, best non-oracle baseline 1)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _reference_plot_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    from clustergym.suite.reference import normalized

    rows = []
    for name, e in doc["tasks"].items():
        rnd = e["agents"]["random"]
        for agent in ("random", e["best"], e["best_oracle"]):
            if agent is None:
                continue
            a = e["agents"][agent]
            n = normalized(a["mean"], e)
            scale = abs(e["best_score"] - e["random"]) if e["best_score"] is not None else math.nan
            h = a["ci95"] / scale if scale and math.isfinite(a["ci95"]) else 0.0
            rows.append(
                {
                    "task": name,
                    "agent": "random" if agent == "random" else ("best oracle" if a["oracle"] else "best baseline"),
                    "normalized": n,
                    "ci_low": n - h,
                    "ci_high": n + h,
                    "oracle": a["oracle"],
                    "name": agent,
                }
            )
        del rnd
    return rows


def _print_reference(doc: dict[str, Any]) -> None:
    t = Table(
        title=f"suite reference, {doc.get('split', 'validation')} split ({len(doc['seeds'])} seeds): random, "
        "best non-oracle baseline, best oracle"
    )
    for c in ("task", "metric", "random", "best baseline", "score", "best oracle", "score", "agents", "wall s"):
        t.add_column(c, justify="left" if c in ("task", "metric", "best baseline", "best oracle") else "right")
    for name, e in doc["tasks"].items():
        a = e["agents"]
        t.add_row(
            name,
            e["metric"],
            f"{e['random']:.4g} ± {a['random']['ci95']:.2g}",
            str(e["best"]),
            f"{e['best_score']:.4g} ± {a[e['best']]['ci95']:.2g}" if e["best"] else "-",
            str(e["best_oracle"]),
            f"{e['best_oracle_score']:.4g} ± {a[e['best_oracle']]['ci95']:.2g}" if e["best_oracle"] else "-",
            str(len(a)),
            f"{e.get('wall_seconds', math.nan):.0f}",
        )
    _out.print(t)


def benchmark_cmd(
    specs: list[str] | None = typer.Argument(
        None,
        help="a registered agent or a model saved by `clustergym "
        "train` (OUT/model.zip); several models are training "
        "seeds of one method",
    ),
    tasks: str | None = typer.Option(
        None, "--tasks", help="comma-separated task names (default: every task that can run here)"
    ),
    seeds: int = typer.Option(30, "--seeds", help="evaluation seeds (the split's first N, at most 100)"),
    split: str = typer.Option(
        "validation",
        "--split",
        help="the evaluation seeds: validation (develop and select models there) or test (held out: final claims)",
    ),
    workers: int | None = typer.Option(
        None, "--workers", help="worker processes (default: the available cores; 1 runs in this process)"
    ),
    reference: bool = typer.Option(
        False,
        "--reference",
        help="regenerate the reference scores (random and every compatible baseline) of --tasks (default all)",
    ),
    plot: Path | None = typer.Option(
        None, "--plot", help="draw the normalized scores to this file (.png, .svg); without an agent, the reference's"
    ),
    out_dir: Path | None = typer.Option(
        None,
        "--out",
        help="write results.csv and summary.json here (with --reference: reference.json, instead of the package's)",
    ),
    markdown: bool = typer.Option(
        False, "--markdown", help="print the reference scores as Markdown (docs/benchmark.md)"
    ),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
) -> None:
    """Score an agent or saved models on the suite's tasks, normalized against the reference baselines."""
    from clustergym.runner import worker_count
    from clustergym.suite import SPLITS, check_split
    from clustergym.suite import task as get_task
    from clustergym.validation import number

    try:
        task_names = _tasks(tasks)
        for n in task_names or []:
            get_task(n)
        check_split(split)
        number(seeds, "--seeds", lo=1, hi=len(SPLITS[split]), integer=True, error=ConfigError)
        workers = worker_count(workers, "--workers")
        if reference and specs:
            raise ConfigError("--reference", "regenerates the baselines' scores; give no agent with it")
        if not reference and not specs and plot is None and not markdown:
            raise ConfigError("agent", "give an agent or model to benchmark, --reference, --plot FILE or --markdown")
        if markdown and not reference and not specs:
            from clustergym.suite.reference import load_reference
            from clustergym.suite.reference import markdown as to_markdown

            sys.stdout.write(to_markdown(load_reference(split=split)))
            if plot is None:
                return
        if reference:
            _regenerate(task_names, seeds, workers, out_dir, plot, json_out, split)
        elif not specs:
            from clustergym.suite.reference import load_reference

            doc = load_reference(split=split)
            path = plot_normalized(
                _reference_plot_rows(doc), plot, f"clustergym suite, {split} split: reference baselines"
            )
            _err.print(f"wrote {path}")
        else:
            _benchmark(specs, task_names, seeds, workers, out_dir, plot, json_out, split)
    except ClusterGymError as e:
        _err.print(f"[bold red]error:[/] {e}", highlight=False)
        raise typer.Exit(2) from None


def _progress():
    from rich.progress import Progress

    return Progress(console=_err, transient=True)


def _regenerate(
    task_names: list[str] | None,
    seeds: int,
    workers: int,
    out_dir: Path | None,
    plot: Path | None,
    json_out: bool,
    split: str = "validation",
) -> None:
    from clustergym.suite import TASKS
    from clustergym.suite.reference import build_reference, write_reference

    t0 = time.perf_counter()
    target = None if out_dir is None else out_dir / "reference.json"
    doc: dict[str, Any] = {}
    with _progress() as prog:
        bar = prog.add_task("reference", total=None)

        def tick(task: str, agent: str, seed: int) -> None:
            prog.update(bar, advance=1, description=f"{task}: {agent} seed {seed}")

        for name in task_names or list(TASKS):  # each task is written as soon as it is done
            one = build_reference(
                [name],
                seeds=seeds,
                workers=workers,
                progress=tick,
                split=split,
                log=None if json_out else lambda m: _err.print(m, highlight=False),
            )
            doc = {**one, "tasks": {**doc.get("tasks", {}), **one["tasks"]}}
            path = write_reference(one, target)
    wall = time.perf_counter() - t0
    if plot is not None:
        from clustergym.suite.reference import load_reference

        plot_normalized(
            _reference_plot_rows(load_reference(path)), plot, f"clustergym suite, {split} split: reference baselines"
        )
    if json_out:
        sys.stdout.write(json.dumps(_jsonable({**doc, "wall_seconds": wall, "path": str(path)}), indent=1) + "\n")
        return
    _print_reference(doc)
    _err.print(f"reference of {len(doc['tasks'])} tasks in {wall:.0f} s on {workers} workers -> {path}")


def _benchmark(
    specs: list[str],
    task_names: list[str] | None,
    seeds: int,
    workers: int,
    out_dir: Path | None,
    plot: Path | None,
    json_out: bool,
    split: str = "validation",
) -> None:
    from clustergym.suite.report import report
    from clustergym.suite.scoring import evaluate

    t0 = time.perf_counter()
    with _progress() as prog:
        bar = prog.add_task("episodes", total=None)

        def tick(task: str, agent: str, seed: int) -> None:
            prog.update(bar, advance=1, description=f"{agent} seed {seed}")

        res = evaluate(specs, task_names, seeds=seeds, workers=workers, progress=tick, split=split)
    res["wall_seconds"] = time.perf_counter() - t0
    res["report"] = report(res)
    if out_dir is not None:
        import pandas as pd

        out_dir.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(res["rows"]).to_csv(out_dir / "results.csv", index=False)
        (out_dir / "summary.json").write_text(
            json.dumps(_jsonable({k: v for k, v in res.items() if k != "rows"}), indent=1) + "\n"
        )
    if plot is not None:
        rows = [
            {
                "task": t,
                "agent": spec,
                "normalized": r["normalized"],
                "ci_low": r["normalized"] - r["normalized_ci95"],
                "ci_high": r["normalized"] + r["normalized_ci95"],
                "oracle": False,
            }
            for t, v in res["tasks"].items()
            for spec, r in v["runs"].items()
        ]
        plot_normalized(rows, plot, f"clustergym suite, {split} split: normalized scores")
        from clustergym.suite.figures import plot_report

        _err.print(f"wrote {plot} and {plot_report(res['report'], report_figure_path(plot))}")
    if json_out:
        sys.stdout.write(json.dumps(_jsonable(res), indent=1) + "\n")
        return
    for k, why in res["skipped"].items():
        _err.print(f"skipped {k}: {why}", highlight=False)
    t = Table(title=f"clustergym suite, {split} split, {len(res['seeds'])} evaluation seeds (mean ± 95% CI)")
    for c in (
        "task",
        "agent",
        "score",
        "random",
        "best baseline",
        "normalized",
        "paired Δ vs best",
        "vs best oracle",
        "complete",
    ):
        t.add_column(c, justify="left" if c in ("task", "agent", "best baseline") else "right")
    for name, v in res["tasks"].items():
        for spec, r in v["runs"].items():
            t.add_row(
                name,
                spec,
                f"{r['mean']:.4g} ± {_fmt(r['ci95'], 2)}",
                f"{v['random']:.4g}",
                f"{v['best']} {v['best_score']:.4g}",
                f"{_fmt(r['normalized'], 3)} ± {_fmt(r['normalized_ci95'], 2)}",
                f"{_fmt(r['paired_vs_best'], 3)} ± {_fmt(r['paired_vs_best_ci95'], 2)}" if r["paired_seeds"] else "n/a",
                _fmt(r["vs_oracle"], 3),
                f"{r['complete']}/{len(res['seeds'])}",
            )
    _out.print(t)
    t = Table(title="normalized score over tasks: IQM and mean [95% stratified bootstrap CI]")
    for c in ("runs", "tasks", "IQM", "mean"):
        t.add_column(c, justify="left" if c == "runs" else "right")
    aggs = list(res["aggregate"]["per_spec"].items())
    if "over_specs" in res["aggregate"]:
        aggs.append((f"{len(specs)} specs (training seeds)", res["aggregate"]["over_specs"]))
    for name, a in aggs:
        t.add_row(
            name,
            f"{a['tasks']:.0f}",
            f"{_fmt(a['iqm'], 3)} [{_fmt(a['iqm_low'], 3)}, {_fmt(a['iqm_high'], 3)}]",
            f"{_fmt(a['mean'], 3)} [{_fmt(a['mean_low'], 3)}, {_fmt(a['mean_high'], 3)}]",
        )
    _out.print(t)
    _print_report(res["report"])
    _err.print(f"{len(res['rows'])} episodes in {res['wall_seconds']:.0f} s")


def report_figure_path(plot: Path) -> Path:
    """Where ``--plot FILE`` draws the report's figure: ``FILE`` with ``-report`` before its suffix."""
    return plot.with_name(f"{plot.stem}-report{plot.suffix}")


def _iv(x: dict[str, float] | None, digits: int = 3) -> str:
    if not x:
        return "-"
    return f"{_fmt(x['value'], digits)} [{_fmt(x['low'], digits)}, {_fmt(x['high'], digits)}]"


def _print_report(rep: dict[str, Any]) -> None:
    """The report's verdicts per task and its aggregates over tasks (:func:`clustergym.suite.report.report`)."""
    runs = len(rep["runs"])
    t = Table(title=f"{rep['split']} split: the method's {runs} run(s) [95% two-level bootstrap CI: runs and seeds]")
    cols = ("task", "normalized", "paired Δ vs best", "verdict", "P(better than best)", "best oracle", "bound")
    for c in cols:
        t.add_column(c, justify="left" if c in ("task", "verdict") else "right")
    for name, v in rep["tasks"].items():
        h = v["headroom"]
        t.add_row(
            name,
            _iv(v["normalized"]),
            _iv(v["paired_vs_best"], 3),
            v["verdict"],
            _iv(v["probability_of_improvement"][v["best"]], 2),
            f"{h['best_oracle']} {_iv(h.get('oracle_normalized'))}" if h["best_oracle"] else "-",
            f"{h['bound']['name']} {_iv(h['bound']['normalized'])}" if h["bound"] else "-",
        )
    _out.print(t)
    if "aggregate" not in rep:
        return
    a = rep["aggregate"]
    t = Table(title=f"{rep['split']} split, over {a['tasks']} task(s): normalized score [95% stratified bootstrap CI]")
    for c in ("IQM", "mean", "median", "optimality gap", "P(better than best)", "P(better than best oracle)"):
        t.add_column(c, justify="right")
    p = a["probability_of_improvement"]
    t.add_row(
        _iv(a["iqm"]),
        _iv(a["mean"]),
        _iv(a["median"]),
        _iv(a["optimality_gap"]),
        _iv(p.get("best baseline"), 2),
        _iv(p.get("best oracle"), 2),
    )
    _out.print(t)
