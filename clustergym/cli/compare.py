"""``clustergym compare``: agents on the same seeds, with 95% confidence intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from clustergym.cli._common import (
    WARMUP_HELP,
    err,
    format_option,
    pd_frame,
    print_json,
    print_table,
    version,
    with_warmup,
)
from clustergym.cli.values import parse_pairs, parse_value, split_prefix
from clustergym.errors import ClusterGymError, ConfigError
from clustergym.validation import choice, number


def compare_cmd(
    scenario: str | None = typer.Argument(
        None,
        help="preset name, scenario file, or suite task (e.g. rms-trap, clustergym/mris-poisson-v1: the "
        "task's episodes; a preset of the same name wins) (not with --resume)",
    ),
    agents: str | None = typer.Option(
        None,
        "--agents",
        help="comma-separated agent names or model paths; "
        "'all' (alone or in the list): every registered agent that can run on the scenario",
    ),
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
    out_dir: Path | None = typer.Option(
        None,
        "--out",
        help="a new or empty folder: run.json and cells.jsonl "
        "(every episode as it finishes), then results.csv, "
        "results.parquet, summary.csv, summary_long.csv and figures (PNG, SVG, PDF)",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="--out may hold files: an earlier run's are replaced"),
    resume: Path | None = typer.Option(
        None,
        "--resume",
        help="continue the interrupted or failed run in this folder (its run.json): only the missing episodes run",
    ),
    table_format: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
    warmup: float | None = typer.Option(None, "--warmup", help=WARMUP_HELP),
    p_adjust: str | None = typer.Option(
        None,
        "--p-adjust",
        help="correction of the paired tests' p-values for comparing many agents with the reference: "
        "holm (default; family-wise error), bh (Benjamini-Hochberg; false discovery rate) or none",
    ),
) -> None:
    """Compare agents on the same seeds (common random numbers), with 95% confidence intervals.

    Every input and the --out folder are checked before anything runs.  With --out, each episode is
    kept as it finishes; after Ctrl-C or a failure, `clustergym compare --resume DIR` runs only the
    missing ones and writes the same tables as an uninterrupted run.
    """
    from clustergym.core.objectives import objective
    from clustergym.runner import (
        EvaluationError,
        RunFolder,
        add_lp_bound,
        compatible_agents,
        headline_metric,
        missing_outputs,
        plan,
        run_rows,
        summarize,
        worker_count,
        write_results,
    )
    from clustergym.runner.figures import SLOTTED_MARK
    from clustergym.runner.metric_info import metric_info
    from clustergym.runner.stats import P_ADJUST_METHODS, SUMMARY_METRICS
    from clustergym.scenarios import PRESETS, resolve_scenario
    from clustergym.suite import find_task
    from clustergym.suite.reference import task_cells

    workers = worker_count(workers, "--workers")
    given = {
        "SCENARIO": scenario,
        "--agents": agents,
        "--seeds": seeds,
        "--set": list(set_) or None,
        "--horizon": horizon,
        "--sweep": sweep_,
        "--reference": reference,
        "--warmup": warmup,
        "--p-adjust": p_adjust,
    }
    folder = None
    if resume is not None:
        if out_dir is not None and Path(out_dir).resolve() != Path(resume).resolve():
            raise ConfigError("--out", f"--resume {resume} continues that folder; --out {out_dir} is another one")
        if overwrite:
            raise ConfigError("--overwrite", "--resume continues a run; --overwrite starts a new one: choose one")
        folder = RunFolder.resume(resume)
        recorded = folder.config["compare"]["argv"]
        for opt, value in given.items():
            if value is not None and value != recorded.get(opt):
                raise ConfigError(
                    opt,
                    f"{resume} was run with {opt} {recorded.get(opt)!r}; --resume continues it "
                    f"with its own settings (drop {opt}, or start a new run with --out)",
                )
        given = dict(recorded)
        scenario, agents, seeds, set_, horizon = (
            given["SCENARIO"],
            given["--agents"],
            given["--seeds"],
            given["--set"] or [],
            given["--horizon"],
        )
        sweep_, reference, warmup = given["--sweep"], given["--reference"], given.get("--warmup")
        p_adjust = given.get("--p-adjust")
    if scenario is None or agents is None:
        raise ConfigError(
            "SCENARIO" if scenario is None else "--agents",
            "a scenario and --agents are required (or --resume DIR of an earlier run)",
        )
    seeds = 5 if seeds is None else seeds
    p_adjust = choice("holm" if p_adjust is None else p_adjust, "--p-adjust", P_ADJUST_METHODS, error=ConfigError)

    # ---- every input is checked before anything runs: parameters, each swept value, agents, the folder
    # a suite task (not a preset nor a file): its scenario, parameters and window are fixed
    suite_task = find_task(scenario) if scenario not in PRESETS and not Path(scenario).exists() else None
    if suite_task is not None:
        for opt, value in (("--set", set_), ("--sweep", sweep_), ("--horizon", horizon), ("--warmup", warmup)):
            if value is not None and value != []:
                raise ConfigError(
                    opt,
                    f"suite task {suite_task.name!r} fixes its scenario, parameters and window; {opt} cannot "
                    f"be given (compare on the preset {suite_task.preset!r} to change them)",
                )
    param, values, skipped = None, [None], {}
    sparams, aparams = split_prefix(parse_pairs(set_), "agent.")
    if suite_task is not None:
        sparams, horizon = dict(suite_task.params), suite_task.horizon
    with_warmup(sparams, warmup)
    if aparams:
        raise ConfigError("--set", "compare takes scenario parameters only (agent.* is for `run`)")
    number(seeds, "--seeds", lo=1, integer=True, error=ConfigError)
    if sweep_ is not None:
        param, _, raw = sweep_.partition("=")
        values = [parse_value(v) for v in raw.split(",") if v.strip()]
        if not param or not values:
            raise ConfigError("--sweep", f"{sweep_!r}: expected key=v1,v2,...")
        if len(set(map(repr, values))) < len(values):
            raise ConfigError("--sweep", f"{sweep_!r}: a value is listed twice")
        if param in sparams:
            raise ConfigError("--sweep", f"{param} is also given with --set: sweep it or set it, not both")
    scenarios = []
    for v in values:
        try:
            sc_v = resolve_scenario(
                suite_task.preset if suite_task is not None else scenario, **sparams, **({param: v} if param else {})
            )
            scenarios.append(sc_v.with_horizon(horizon).check_run_size())
        except ClusterGymError as e:
            if param is None:
                raise
            raise ConfigError("--sweep", f"{param}={v}: {e}") from None
    sc = scenarios[0]
    requested = [a.strip() for a in agents.split(",") if a.strip()]
    if not requested:
        raise ConfigError("--agents", f"{agents!r}: expected agent names, model paths or 'all'")
    twice = sorted({a for a in requested if requested.count(a) > 1})
    if twice:
        raise ConfigError(
            "--agents",
            f"{', '.join(twice)} listed twice: each agent is compared once (the runs "
            "of a name listed twice would be pooled into one row)",
        )
    named = [a for a in requested if a != "all"]
    for sc_v, v in zip(scenarios, values):
        names, bad = _runnable(named, sc_v, suite_task)
        if bad:
            where = f" at {param}={v}" if param else ""
            raise ClusterGymError("; ".join(f"{a}: {why}" for a, why in bad.items()) + where)
    if "all" in requested:  # every other registered agent that runs here, after the named ones
        others, skipped = compatible_agents(sc)
        names += [a for a in others if a not in names]
        if not others:
            raise ClusterGymError(f"--agents all: no registered agent can run on {sc.name!r}")
    reference = reference or names[0]
    if reference not in names:
        raise ClusterGymError(f"--reference {reference!r} is not among the compared agents {names}")
    if suite_task is not None:  # the task's episodes: its env id (start, window), scored by the task probe
        cells = task_cells(suite_task, names, range(seeds))
    else:
        cells = plan(
            scenario,
            names,
            seeds=range(seeds),
            horizon=horizon,
            params=sparams,
            sweep=(param, values) if param else None,
        )
    if folder is not None:
        folder.check_plan(cells)
    elif out_dir is not None:
        folder = RunFolder.create(
            out_dir,
            {
                "compare": {"argv": given, "scenario": sc.name, "agents": names, "seeds": seeds, "cells": len(cells)},
                "clustergym": version(),
            },
            overwrite=overwrite,
        )
    if folder is not None and not json_out:
        for name, why in missing_outputs().items():
            err.print(f"note: {name} will not be written ({why})", highlight=False)
    if not json_out:
        for a, why in skipped.items():
            err.print(f"skipped {a}: {why}", highlight=False)
        if folder is not None and folder.rows:
            err.print(
                f"resuming {folder.path}: {len(folder.rows)} of {len(cells)} episodes kept, "
                f"{len(cells) - len(folder.rows)} to run",
                highlight=False,
            )

    # ---- run, keeping each finished episode in the folder
    from rich.progress import Progress

    def keep(i: int, row: dict[str, Any]) -> None:
        if folder is not None:
            folder.append(i, cells[i], row)

    try:
        with Progress(console=err, transient=True, disable=json_out) as prog:
            task = prog.add_task("runs", total=len(cells), completed=len(folder.rows) if folder else 0)

            def tick(agent: str, seed: int) -> None:
                prog.update(task, advance=1, description=f"{agent} seed {seed}")

            rows = run_rows(
                cells,
                workers=workers,
                ray=ray_address,
                progress=tick,
                done=folder.rows if folder is not None else None,
                on_row=keep,
            )
    except KeyboardInterrupt:
        if folder is None:
            raise KeyboardInterrupt(
                "nothing kept (with --out DIR every finished episode is kept, and "
                "`clustergym compare --resume DIR` continues)"
            ) from None
        folder.set_status("interrupted")
        raise KeyboardInterrupt(
            f"{len(folder.rows)} of {len(cells)} episodes kept in {folder.path}; continue with "
            f"`clustergym compare --resume {folder.path}`"
        ) from None
    except Exception as e:
        if folder is None:
            raise
        folder.set_status("failed", error=f"{type(e).__name__}: {e}")
        if not isinstance(e, ClusterGymError):
            err.print(f"{len(folder.rows)} of {len(cells)} episodes kept in {folder.path}", highlight=False)
            raise
        raise EvaluationError(
            f"{e}\n{len(folder.rows)} of {len(cells)} episodes kept in {folder.path}; fix the problem "
            f"and continue with `clustergym compare --resume {folder.path}`"
        ) from None
    if folder is not None:
        rows = folder.ordered_rows(len(cells))  # the kept rows: a resumed run gives the same tables
    runs = pd_frame(rows)
    # a task's episodes share its window, so agents are compared on the task's own metric (its
    # score's, as `clustergym benchmark`); an episode run to the end of its jobs has the objective's headline
    metric = objective(sc.objective).metric if suite_task is not None else headline_metric(sc.objective)
    summary = summarize(
        runs, tuple(dict.fromkeys((*SUMMARY_METRICS, metric))), reference=reference, by=param, p_adjust=p_adjust
    )
    if param is None:
        add_lp_bound(summary, sc)
    written: list[Path] = []
    if folder is not None:
        written = write_results(
            folder.path,
            runs,
            summary,
            metric=metric,
            param=param,
            title=f"{sc.name}: {metric_info(metric).label.lower()} (mean ± 95% CI, {seeds} seeds)",
        )
        folder.add_files([p.name for p in written])
        folder.set_status("complete")
    if json_out:
        print_json(
            {
                "scenario": sc.name,
                "task": suite_task.id if suite_task is not None else None,
                "seeds": list(range(seeds)),
                "agents": names,
                "reference": reference,
                "out": str(folder.path) if folder is not None else None,
                "skipped": skipped,
                "sweep": param,
                "values": values if param else None,
                "metric": metric,
                "p_adjust": p_adjust,
                "summary": summary.to_dict("records"),
                "runs": runs.to_dict("records"),
            }
        )
        return
    n_tests = len(names) - 1
    slotted = [bool(summary.get("slotted_on_continuous", {}).get(i, False)) for i in summary.index]
    shown = {i: str(a) + (f" {SLOTTED_MARK}" if s else "") for i, a, s in zip(summary.index, summary["agent"], slotted)}
    t = Table(
        title=f"{suite_task.id if suite_task is not None else sc.name}: {len(names)} agents x {seeds} seeds "
        "(mean ± 95% CI)",
        caption=f"paired Δ: agent - {reference} on the same seeds, 95% CI; p: paired t-test adjusted for "
        f"{n_tests} comparison{'s' if n_tests != 1 else ''} ({P_ADJUST_METHODS[p_adjust]}); "
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
    if "lp_bound_per_server" in summary:
        t = Table(
            title=f"reward per server against the LP upper bound U* = {summary['lp_bound_per_server'].iloc[0]:.6g}"
        )
        for c in ("agent", "reward per server", "ratio to U*"):
            t.add_column(c, justify="left" if c == "agent" else "right")
        for _, r in summary.iterrows():
            t.add_row(
                r["agent"],
                f"{r['reward_per_server']:.5g} ± {r['reward_per_server_ci95']:.2g}",
                f"{r['ratio_to_lp_bound']:.4f}",
            )
        print_table(t)
    if folder is not None:
        err.print(f"wrote {', '.join(p.name for p in written)} to {folder.path}", highlight=False)


def _runnable(named: list[str], sc: Any, suite_task: Any) -> tuple[list[str], dict[str, str]]:
    """The named agents that run, and why the others do not: on a suite task, in the task's own
    environment (its action mode and observation: a model trained on the task is checked there)."""
    if suite_task is None:
        from clustergym.runner import compatible_agents

        return compatible_agents(sc, named)
    from clustergym.suite.scoring import check_agent

    bad = {a: why for a in named if (why := check_agent(a, suite_task)) is not None}
    return [a for a in named if a not in bad], bad
