"""``clustergym benchmark``: score an agent or saved models on the suite, or regenerate its reference.

Registered in :mod:`clustergym.cli` as ``app.command("benchmark")(benchmark_cmd)``.  With ``--json``
exactly one JSON document goes to stdout (an error's too); progress and messages go to stderr.  Bad
input (an unknown agent, model path or task, a seed count out of range, an ``--out`` that is not
new or empty, a ``--plot`` of an unknown format) exits with status 2 and a message before any
episode runs.  ``--out`` keeps every finished episode (:mod:`clustergym.cli.benchmark_out`), with
``--reference`` too, and ``--resume`` continues an interrupted run of either kind.
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
from clustergym.cli._common import SCORE_COLUMNS, format_option, print_table, score_cells
from clustergym.errors import ConfigError

__all__ = ["benchmark_cmd", "plot_normalized", "report_figure_path"]

_err = Console(stderr=True, markup=False)  # messages may name extras: [plot] is text


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


def plot_normalized(rows: list[dict[str, Any]], path: Path, title: str, best: dict[str, str] | None = None) -> Path:
    """A bar chart of normalized scores per task (``rows``: task, agent, normalized, ci_low, ci_high,
    oracle); ``best`` names each task's best non-oracle baseline under the task (the 1 of its scale)."""
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
    labels = [f"{t}\n(best: {best[t]})" if best and best.get(t) else t for t in tasks]
    ax.set_xticks(range(len(tasks)), labels, fontsize=8)
    ax.set_ylabel("normalized score\n(random 0, best non-oracle baseline 1)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")  # nothing clipped: the two-line label and tick labels
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


def _best_names(doc: dict[str, Any]) -> dict[str, str]:
    """Each task's best non-oracle baseline in a reference document."""
    return {name: e["best"] for name, e in doc["tasks"].items() if e.get("best")}


def _print_reference(doc: dict[str, Any], table_format: str = "table") -> None:
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
    print_table(t, table_format)


# the options whose help takes several lines
_SPECS = typer.Argument(
    None,
    help="a registered agent or a model saved by `clustergym "
    "train` (OUT/model.zip); several models are training "
    "seeds of one method",
)

_TASKS = typer.Option(None, "--tasks", help="comma-separated task names (default: every task that can run here)")

_SEEDS = typer.Option(None, "--seeds", help="evaluation seeds (the suite's first N, at most 100) [default: 30]")

_SPLIT = typer.Option(
    None,
    "--split",
    help="the evaluation seeds: validation (develop and select models there; the default) or test "
    "(held out: final claims)",
)

_WORKERS = typer.Option(
    None, "--workers", help="worker processes (default: the available cores; 1 runs in this process)"
)

_RAY = typer.Option(
    None,
    "--ray",
    help="run the episodes on a Ray cluster ('auto', HOST:PORT or ray://HOST:PORT; see docs/distributed.md): "
    "the same rows as the local run, kept in --out as they arrive",
)

_REFERENCE = typer.Option(
    False,
    "--reference",
    help="regenerate the reference scores (random and every compatible baseline) of --tasks (default all) "
    "into --out DIR/reference.json",
)

_PLOT = typer.Option(
    None, "--plot", help="draw the normalized scores to this file (.png, .svg); without an agent, the reference's"
)

_OUT_DIR = typer.Option(
    None,
    "--out",
    help="a new or empty folder: every finished episode is kept there (cells.jsonl), then results.csv "
    "and summary.json (with --reference: reference.json)",
)

_OVERWRITE = typer.Option(False, "--overwrite", help="write into a non-empty --out (replacing an earlier run)")

_RESUME = typer.Option(
    None,
    "--resume",
    help="continue the interrupted run in this folder, a scoring or a --reference run (its own specs, tasks, "
    "seeds and split)",
)

_UPDATE_PACKAGED = typer.Option(
    None,
    "--update-packaged",
    help="maintainers: put a reference.json written by --reference --out into the package's table "
    "(refused if it would lose tasks or seeds)",
)

_TRACK = typer.Option(
    None,
    "--track",
    help="generalization: score zero-shot at the track's test points (other loads and cluster sizes, a second "
    "real trace), each against its own reference; with --reference, regenerate that reference "
    "(docs/generalization.md)",
)

_MARKDOWN = typer.Option(False, "--markdown", help="print the reference scores as Markdown (docs/benchmark.md)")

_DECODING = typer.Option(
    None,
    "--decoding",
    help="how every model acts: argmax (SB3's deterministic predict), sample (a seeded draw from its "
    "policy) or two-level (WAIT against all placements together, then the best placement); default: "
    "each model's own (argmax for a plain SB3 save); see docs/benchmark.md",
)

_QUEUE_WINDOW = typer.Option(
    None,
    "--queue-window",
    help="the queue window K every model with the equivariant policy runs with (its weights do not depend on "
    "K; default: each model's own): a wider window reaches jobs further back in a long queue",
)


def benchmark_cmd(
    specs: list[str] | None = _SPECS,
    tasks: str | None = _TASKS,
    seeds: int | None = _SEEDS,
    split: str | None = _SPLIT,
    workers: int | None = _WORKERS,
    ray_address: str | None = _RAY,
    reference: bool = _REFERENCE,
    plot: Path | None = _PLOT,
    out_dir: Path | None = _OUT_DIR,
    overwrite: bool = _OVERWRITE,
    resume: Path | None = _RESUME,
    update_packaged: Path | None = _UPDATE_PACKAGED,
    markdown: bool = _MARKDOWN,
    decoding: str | None = _DECODING,
    queue_window: int | None = _QUEUE_WINDOW,
    track: str | None = _TRACK,
    table_format: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
) -> None:
    """Score agents, saved models or your own policy on the suite's tasks, normalized against the reference baselines.

    AGENT is a registered agent, a model (OUT/model.zip of `clustergym train`, any Stable-Baselines3 or
    sb3-contrib model.save() zip, a run folder or an rl-baselines3-zoo folder) or a class or factory by
    import path (mypkg.policies:make_agent).
    """
    from clustergym.cli.benchmark_out import check_plot
    from clustergym.runner import connect_ray, worker_count

    check_plot(plot)
    if update_packaged is not None and track is None:
        _update_packaged(update_packaged, specs, reference, json_out)
        return
    resumed = None
    if resume is not None:
        given = {"specs": specs or None, "tasks": tasks, "seeds": seeds, "split": split, "decoding": decoding}
        given.update(track=track, queue_window=queue_window)
        resumed, rec = _resumed(resume, out_dir, overwrite or reference, given)
        track = rec.get("track")
        specs, tasks, seeds = rec.get("specs") or [], rec["tasks"], rec["seeds"]
        split, decoding, queue_window = rec.get("split") or "validation", rec.get("decoding"), rec.get("queue_window")
        reference = bool(rec.get("reference"))
    _check_queue_window(queue_window, specs, reference)
    if track is not None:
        _track(track, locals(), resumed)
        return
    seeds = 30 if seeds is None else seeds
    split = split or "validation"
    task_names = _check_inputs(tasks, seeds, specs, reference, plot, markdown, decoding, split)
    workers = worker_count(workers, "--workers")
    if ray_address is not None:
        if markdown or not (reference or specs):
            raise ConfigError("--ray", "runs episodes: give it with an agent or --reference")
        connect_ray(ray_address)  # a bad or unreachable address fails before anything is written
    if markdown:  # prints the shipped reference; never regenerates it
        _print_markdown(task_names, split)
        return
    if reference:
        settings = {"reference": True, "specs": [], "tasks": tasks, "seeds": seeds, "split": split, "decoding": None}
        _regenerate(settings, task_names, workers, out_dir, overwrite, resumed, plot, json_out, ray_address)
    elif not specs:
        from clustergym.suite.reference import load_reference

        assert plot is not None
        doc = load_reference(split=split)
        path = plot_normalized(
            _reference_plot_rows(doc), plot, f"clustergym suite, {split} split: reference baselines", _best_names(doc)
        )
        _err.print(f"wrote {path}")
    else:
        settings = {"specs": list(specs), "tasks": tasks, "seeds": seeds, "split": split, "decoding": decoding}
        settings["queue_window"] = queue_window
        _benchmark(
            settings, task_names, workers, out_dir, overwrite, resumed, plot, json_out, table_format, ray_address
        )


def _track(track: str, opts: dict[str, Any], resumed: Any) -> None:
    """``--track``: the track's own branch (:mod:`clustergym.cli.benchmark_track`), every input checked first."""
    from clustergym.cli.benchmark_track import check_track, track_cmd
    from clustergym.learned.model_agent import DECODINGS
    from clustergym.runner import connect_ray, worker_count
    from clustergym.validation import settings

    check_track(track)
    if opts["plot"] is not None or (opts["split"] is not None and resumed is None):  # a resumed run: its own
        bad = "--plot" if opts["plot"] is not None else "--split"
        raise ConfigError(bad, f"does not apply to --track {track} (its points have their own seeds and table)")
    if opts["decoding"] is not None:
        settings.choice(opts["decoding"], "--decoding", DECODINGS)
    names = _tasks(opts["tasks"])
    opts = {**opts, "tasks_text": opts["tasks"], "tasks": names, "workers": worker_count(opts["workers"], "--workers")}
    opts["ray"] = opts["ray_address"]
    if opts["ray"] is not None:
        connect_ray(opts["ray"])
    track_cmd(opts, resumed, _err)


def _resumed(resume: Path, out_dir: Path | None, starts_anew: bool, given: dict[str, Any]) -> tuple[Any, dict]:
    """``--resume``: the earlier run's folder and settings (a setting given again must be the recorded one)."""
    from clustergym.cli.benchmark_out import recorded_settings

    if out_dir is not None and out_dir.resolve() != resume.resolve():
        raise ConfigError("--out", f"--resume {resume} continues that folder; --out {out_dir} is another one")
    if starts_anew:
        raise ConfigError(
            "--resume",
            "--resume continues the run as it was started (an agent's or --reference); drop --overwrite and --reference",
        )
    return recorded_settings(resume, given)


def _check_queue_window(queue_window: int | None, specs: list[str] | None, reference: bool) -> None:
    """``--queue-window``: at least 1, and only with a model to apply it to (never silently unused)."""
    if queue_window is None:
        return
    from clustergym.suite.scoring import is_model
    from clustergym.validation import settings

    settings.number(queue_window, "--queue-window", lo=1, integer=True, error=ConfigError)
    if reference or not any(is_model(s) for s in specs or []):
        raise ConfigError("--queue-window", "sets the queue window of the models being scored: give a model with it")


def _check_inputs(
    tasks: str | None,
    seeds: int,
    specs: list[str] | None,
    reference: bool,
    plot: Path | None,
    markdown: bool,
    decoding: str | None = None,
    split: str = "validation",
) -> list[str] | None:
    """The task names; every input checked before anything runs."""
    from clustergym.suite import SPLITS, check_split
    from clustergym.suite import task as get_task
    from clustergym.validation import settings

    task_names = _tasks(tasks)
    for n in task_names or []:
        get_task(n)
    check_split(split)
    settings.number(seeds, "--seeds", lo=1, hi=len(SPLITS[split]), integer=True)
    if decoding is not None:
        from clustergym.learned.model_agent import DECODINGS

        settings.choice(decoding, "--decoding", DECODINGS)
    if markdown and specs:
        raise ConfigError("--markdown", "prints the reference scores; give no agent with it (use --format markdown)")
    if reference and specs:
        raise ConfigError("--reference", "regenerates the baselines' scores; give no agent with it")
    if not reference and not specs and plot is None and not markdown:
        raise ConfigError("agent", "give an agent or model to benchmark, --reference, --plot FILE or --markdown")
    return task_names


def _print_markdown(task_names: list[str] | None, split: str = "validation") -> None:
    """``--markdown``: the shipped reference (of ``task_names``) as Markdown; nothing is written."""
    from clustergym.suite.reference import load_reference
    from clustergym.suite.reference import markdown as to_markdown

    doc = load_reference(split=split)
    if task_names:
        doc = {**doc, "tasks": {k: v for k, v in doc["tasks"].items() if k in task_names}}
    sys.stdout.write(to_markdown(doc))


def _update_packaged(source: Path, specs: list[str] | None, reference: bool, json_out: bool) -> None:
    from clustergym.suite.reference import update_packaged

    if specs or reference:
        raise ConfigError("--update-packaged", "is a step of its own: give no agent and no --reference with it")
    path = update_packaged(source)
    if json_out:
        sys.stdout.write(json.dumps({"updated": str(path), "from": str(source)}) + "\n")
    else:
        _err.print(f"updated {path} from {source}", highlight=False)


def _progress():
    from rich.progress import Progress

    return Progress(console=_err, transient=True)


def _regenerate(
    settings: dict[str, Any],
    task_names: list[str] | None,
    workers: int,
    out_dir: Path | None,
    overwrite: bool,
    resumed: Any,
    plot: Path | None,
    json_out: bool,
    ray: str | None = None,
) -> None:
    """``--reference``: every episode planned, each kept in ``--out DIR/cells.jsonl`` as it finishes
    (``--resume DIR`` continues), each task written to ``DIR/reference.json`` as soon as its episodes
    are done; never into the package's table (``--update-packaged`` does that)."""
    from clustergym.cli.benchmark_out import open_folder, run_journaled
    from clustergym.suite.reference import load_reference, plan_reference, summarize_reference, write_reference

    if out_dir is None and resumed is None:
        raise ConfigError(
            "--out",
            "--reference writes its table to --out DIR/reference.json (the package's table changes only "
            "with --update-packaged DIR/reference.json)",
        )
    split = settings["split"]
    ref = plan_reference(task_names, seeds=settings["seeds"], split=split)  # every input checked: nothing has run
    folder = open_folder(out_dir, resumed, overwrite, settings, ref.cells)
    assert folder is not None
    folder.add_files(["reference.json"])
    path = folder.path / "reference.json"
    _resuming(folder, len(ref.cells), json_out)
    written: set[str] = set()

    def write_done() -> None:  # each task as soon as its episodes are kept
        done = [n for n, (a, b) in ref.spans.items() if n not in written and all(i in folder.rows for i in range(a, b))]
        if done:
            rows = [folder.rows.get(i) for i in range(len(ref.cells))]
            write_reference(summarize_reference(ref, rows, tasks=done), path)
            written.update(done)
            for n in done if not json_out else ():
                _err.print(f"{n}: {len(ref.agents[n][0])} agents x {len(ref.seeds)} seeds -> {path}", highlight=False)

    t0 = time.perf_counter()
    write_done()
    with _progress() as prog:
        bar = prog.add_task("reference", total=len(ref.cells), completed=len(folder.rows))

        def tick(agent: str, seed: int) -> None:
            prog.update(bar, advance=1, description=f"{agent} seed {seed}")
            write_done()

        rows = run_journaled(ref.cells, folder, workers, tick, ray)
    write_reference(summarize_reference(ref, rows), path, merge=False)  # the plan's tasks, from the kept episodes
    wall = time.perf_counter() - t0
    folder.set_status("complete", wall_seconds=wall)
    doc = load_reference(path)  # as written
    if plot is not None:
        title = f"clustergym suite, {split} split: reference baselines"
        plot_normalized(_reference_plot_rows(doc), plot, title, _best_names(doc))
    if json_out:
        sys.stdout.write(json.dumps(_jsonable({**doc, "wall_seconds": wall, "path": str(path)}), indent=1) + "\n")
        return
    _print_reference(doc)
    where = f"on Ray ({ray})" if ray is not None else f"on {workers} workers"
    _err.print(f"reference of {len(doc['tasks'])} tasks in {wall:.0f} s {where} -> {path}")


def _resuming(folder: Any, cells: int, json_out: bool) -> None:
    """On ``--resume``: how many episodes are kept and how many run."""
    if folder is not None and folder.rows and not json_out:
        _err.print(
            f"resuming {folder.path}: {len(folder.rows)} of {cells} episodes kept, {cells - len(folder.rows)} to run",
            highlight=False,
        )


def _benchmark(
    settings: dict[str, Any],
    task_names: list[str] | None,
    workers: int,
    out_dir: Path | None,
    overwrite: bool,
    resumed: Any,
    plot: Path | None,
    json_out: bool,
    table_format: str = "table",
    ray: str | None = None,
) -> None:
    from clustergym.cli.benchmark_out import open_folder, run_journaled, write_outputs
    from clustergym.suite.report import report
    from clustergym.suite.scoring import plan_evaluation, summarize_evaluation

    specs = settings["specs"]
    split = settings.get("split") or "validation"
    # every input checked: nothing has run
    ev = plan_evaluation(
        specs,
        task_names,
        seeds=settings["seeds"],
        decoding=settings.get("decoding"),
        split=split,
        queue_window=settings.get("queue_window"),
    )
    folder = open_folder(out_dir, resumed, overwrite, settings, ev.cells)
    for w in ev.warnings:
        _err.print(f"warning: {w}", highlight=False)
    _resuming(folder, len(ev.cells), json_out)
    t0 = time.perf_counter()
    with _progress() as prog:
        bar = prog.add_task("episodes", total=len(ev.cells), completed=len(folder.rows) if folder else 0)

        def tick(agent: str, seed: int) -> None:
            prog.update(bar, advance=1, description=f"{agent} seed {seed}")

        rows = run_journaled(ev.cells, folder, workers, tick, ray)
    res = summarize_evaluation(ev, rows)
    res["report"] = report(res)
    res["wall_seconds"] = time.perf_counter() - t0
    if folder is not None:
        write_outputs(folder, res, res["wall_seconds"])
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
        best = {t: v["best"] for t, v in res["tasks"].items()}
        plot_normalized(rows, plot, f"clustergym suite, {split} split: normalized scores", best)
        from clustergym.suite.figures import plot_report

        _err.print(f"wrote {plot} and {plot_report(res['report'], report_figure_path(plot))}")
    if json_out:
        sys.stdout.write(json.dumps(_jsonable(res), indent=1) + "\n")
        return
    _print_results(res, specs, table_format)


def _print_results(res: dict[str, Any], specs: list[str], table_format: str) -> None:
    """The per-task table and the aggregate over tasks."""
    for k, why in res["skipped"].items():
        _err.print(f"skipped {k}: {why}", highlight=False)
    t = Table(title=f"clustergym suite, {res['split']} split, {len(res['seeds'])} evaluation seeds (mean ± 95% CI)")
    for c in ("task", "agent", *SCORE_COLUMNS, "complete"):
        t.add_column(c, justify="left" if c in ("task", "agent", "best baseline") else "right")
    for name, v in res["tasks"].items():
        for spec, r in v["runs"].items():
            t.add_row(name, spec, *score_cells(v, r, _fmt), f"{r['complete']}/{len(res['seeds'])}")
    print_table(t, table_format)
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
    print_table(t, table_format)
    _print_report(res["report"], table_format)
    _err.print(f"{len(res['rows'])} episodes in {res['wall_seconds']:.0f} s")


def report_figure_path(plot: Path) -> Path:
    """Where ``--plot FILE`` draws the report's figure: ``FILE`` with ``-report`` before its suffix."""
    return plot.with_name(f"{plot.stem}-report{plot.suffix}")


def _iv(x: dict[str, float] | None, digits: int = 3) -> str:
    if not x:
        return "-"
    return f"{_fmt(x['value'], digits)} [{_fmt(x['low'], digits)}, {_fmt(x['high'], digits)}]"


def _print_report(rep: dict[str, Any], table_format: str = "table") -> None:
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
    print_table(t, table_format)
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
    print_table(t, table_format)
