"""``clustergym compare``: agents on the same seeds, with 95% confidence intervals."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from clustergym.cli._common import WARMUP_HELP, err, format_option, print_json, print_table
from clustergym.comparison import Comparison, Reporter, run_comparison

# the options whose help takes several lines
_SCENARIO = typer.Argument(
    None,
    help="preset name, scenario file, or suite task (e.g. rms-trap, clustergym/mris-poisson-v1: the "
    "task's episodes; a preset of the same name wins) (not with --resume)",
)
_AGENTS = typer.Option(
    None,
    "--agents",
    help="comma-separated agent names or model paths; "
    "'all' (alone or in the list): every registered agent that can run on the scenario",
)
_OUT = typer.Option(
    None,
    "--out",
    help="a new or empty folder: run.json and cells.jsonl "
    "(every episode as it finishes), then results.csv, "
    "results.parquet, summary.csv, summary_long.csv and figures (PNG, SVG, PDF)",
)
_RESUME = typer.Option(
    None,
    "--resume",
    help="continue the interrupted or failed run in this folder (its run.json): only the missing episodes run",
)
_P_ADJUST = typer.Option(
    None,
    "--p-adjust",
    help="correction of the paired tests' p-values for comparing many agents with the reference: "
    "holm (default; family-wise error), bh (Benjamini-Hochberg; false discovery rate) or none",
)


def compare_cmd(
    scenario: str | None = _SCENARIO,
    agents: str | None = _AGENTS,
    seeds: int | None = typer.Option(
        None, "--seeds", help="number of seeds (0..N-1), the same for every agent (default 5)"
    ),
    set_: list[str] = typer.Option([], "--set", help="scenario parameter key=value"),
    horizon: float | None = typer.Option(None, "--horizon"),
    sweep_: str | None = typer.Option(None, "--sweep", help="preset parameter and values, e.g. zeta=0.8,0.9,0.95"),
    reference: str | None = typer.Option(
        None, "--reference", help="agent the paired differences are taken against (default: the first agent)"
    ),
    workers: int | None = typer.Option(
        None, "--workers", help="local worker processes (default: the available cores; 1 runs in this process)"
    ),
    ray_address: str | None = typer.Option(
        None, "--ray", help="run the episodes on a Ray cluster: 'auto', HOST:PORT or ray://HOST:PORT"
    ),
    out_dir: Path | None = _OUT,
    overwrite: bool = typer.Option(False, "--overwrite", help="--out may hold files: an earlier run's are replaced"),
    resume: Path | None = _RESUME,
    table_format: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
    warmup: float | None = typer.Option(None, "--warmup", help=WARMUP_HELP),
    p_adjust: str | None = _P_ADJUST,
) -> None:
    """Compare agents on the same seeds (common random numbers), with 95% confidence intervals.

    Every input and the --out folder are checked before anything runs.  With --out, each episode is
    kept as it finishes; after Ctrl-C or a failure, `clustergym compare --resume DIR` runs only the
    missing ones and writes the same tables as an uninterrupted run.
    """
    bar = _Bar(json_out)
    try:
        res = run_comparison(
            scenario,
            agents,
            seeds=seeds,
            params=list(set_),
            horizon=horizon,
            sweep=sweep_,
            reference=reference,
            warmup=warmup,
            p_adjust=p_adjust,
            workers=workers,
            ray=ray_address,
            out=out_dir,
            overwrite=overwrite,
            resume=resume,
            report=bar,
        )
    finally:
        bar.stop()
    if json_out:
        print_json(res.to_dict())
        return
    _print_summary(res)
    if "lp_bound_per_server" in res.summary:
        _print_lp_bound(res)
    if res.out is not None:
        err.print(f"wrote {', '.join(p.name for p in res.written)} to {res.out}", highlight=False)


class _Bar(Reporter):
    """The notes and a transient progress bar on stderr (the notes not with --json)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet, self.prog, self.task = quiet, None, None

    def note(self, message: str) -> None:
        if not self.quiet:
            err.print(message, highlight=False)

    def start(self, total: int, kept: int) -> None:
        from rich.progress import Progress

        self.prog = Progress(console=err, transient=True, disable=self.quiet)
        self.prog.start()
        self.task = self.prog.add_task("runs", total=total, completed=kept)

    def episode(self, agent: str, seed: int) -> None:
        self.prog.update(self.task, advance=1, description=f"{agent} seed {seed}")

    def failed(self, message: str) -> None:
        self.stop()
        err.print(message, highlight=False)

    def stop(self) -> None:
        if self.prog is not None:
            self.prog.stop()
            self.prog = None


def _print_summary(res: Comparison) -> None:
    """The table of means, 95% CIs and paired differences against the reference."""
    from clustergym.runner.figures import SLOTTED_MARK
    from clustergym.runner.stats import P_ADJUST_METHODS

    summary, param, metric, reference = res.summary, res.sweep, res.metric, res.reference
    n_tests = len(res.agents) - 1
    slotted = [bool(summary.get("slotted_on_continuous", {}).get(i, False)) for i in summary.index]
    shown = {i: str(a) + (f" {SLOTTED_MARK}" if s else "") for i, a, s in zip(summary.index, summary["agent"], slotted)}
    t = Table(
        title=f"{res.task if res.task is not None else res.scenario}: {len(res.agents)} agents x {res.seeds} seeds "
        "(mean ± 95% CI)",
        caption=f"paired Δ: agent - {reference} on the same seeds, 95% CI; p: paired t-test adjusted for "
        f"{n_tests} comparison{'s' if n_tests != 1 else ''} ({P_ADJUST_METHODS[res.p_adjust]}); "
        "oracle: reads information a learned agent does not get"
        + (
            f"; {SLOTTED_MARK}: a slotted-time agent, acting once per period on continuous arrivals"
            if any(slotted)
            else ""
        ),
    )
    if param is not None:
        t.add_column(param)
    t.add_column("agent", no_wrap=True, min_width=max(len(a) for a in shown.values()))
    t.add_column("oracle")
    cols = list(dict.fromkeys([metric, "mean_queue_length", "mean_wait"]))  # every metric: --json, summary.csv
    for c in cols:
        t.add_column(c, justify="right")
    t.add_column(f"paired Δ {metric} vs {reference}", justify="right")
    t.add_column("p (adj.)", justify="right")
    t.add_column("unstable runs", justify="right")
    for _, r in summary.iterrows():
        lead = [str(r[param])] if param is not None else []
        ref = r["agent"] == reference
        diff = "" if ref else f"{r[metric + '_diff']:+.4g} ± {r[metric + '_diff_ci95']:.2g}"
        p_adj = "" if ref else f"{r[metric + '_diff_p_adj']:.3g}"
        t.add_row(
            *lead,
            shown[r.name],
            "yes" if r.get("uses_oracle", False) else "",
            *[f"{r[c]:.4g} ± {r[c + '_ci95']:.2g}" for c in cols],
            diff,
            p_adj,
            str(r["unstable_runs"]),
        )
    print_table(t)


def _print_lp_bound(res: Comparison) -> None:
    """Each agent's reward per server against the LP upper bound U* and, where it is computed, the
    finite-size bound U*_L (the auto-scaling scenarios)."""
    summary = res.summary
    finite = "ratio_to_finite_bound" in summary.columns
    title = f"reward per server against the LP upper bound U* = {summary['lp_bound_per_server'].iloc[0]:.6g}"
    if finite:
        title += f" and the finite-size bound U*_L = {summary['finite_bound_per_server'].iloc[0]:.6g}"
    t = Table(title=title)
    for c in ("agent", "reward per server", "ratio to U*", *(("ratio to U*_L",) if finite else ())):
        t.add_column(c, justify="left" if c == "agent" else "right")
    for _, r in summary.iterrows():
        t.add_row(
            r["agent"],
            f"{r['reward_per_server']:.5g} ± {r['reward_per_server_ci95']:.2g}",
            f"{r['ratio_to_lp_bound']:.4f}",
            *((f"{r['ratio_to_finite_bound']:.4f}",) if finite else ()),
        )
    print_table(t)
