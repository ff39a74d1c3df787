"""The ``clustergym`` command line (stable: scripts depend on it).

``--json`` prints exactly one JSON document on stdout and nothing else there;
progress and messages go to stderr.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import typer
import typer.core
from rich.console import Console
from rich.table import Table

from clustergym._json import jsonable as _jsonable
from clustergym.cli.values import parse_pairs, parse_stage, parse_value, split_prefix
from clustergym.errors import ClusterGymError, ConfigError
from clustergym.validation import choice, number

#: click's UsageError as typer raises it (typer >= 0.24 vendors click)
_USAGE_ERRORS = tuple(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


class _Commands(typer.core.TyperGroup):
    """The one error path of every command.

    A :class:`ClusterGymError` (a bad scenario, setting, file or model), an :class:`OSError` (a file
    that cannot be read or written) and a malformed option (click's usage errors) exit with code 2
    and a message on stderr, never a traceback; with ``--json`` stdout also gets one JSON document
    ``{"error": {"type", "field", "message"}}``.  Ctrl-C exits with 130 (the message says what was
    kept); anything else is a bug in clustergym, reported as such with code 1
    (``CLUSTERGYM_DEBUG=1`` shows its traceback).
    """

    json_requested = False

    def main(self, args: Any = None, *a: Any, **kw: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        _Commands.json_requested = "--json" in argv[: argv.index("--")] if "--" in argv else "--json" in argv
        return super().main(args, *a, **kw)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except _USAGE_ERRORS as e:  # typer prints it (with the usage line) and exits with 2
            param = getattr(e, "param", None)
            _json_error(
                "UsageError",
                (param.opts[0] if getattr(param, "opts", None) else getattr(param, "name", None)),
                e.format_message(),
            )
            raise
        except ClusterGymError as e:
            _fail(e)
        except OSError as e:
            _fail(e, field=getattr(e, "filename", None))
        except KeyboardInterrupt as e:
            msg = str(e) or "interrupted"
            err.print("[bold red]interrupted:[/] ", end="")
            err.print(msg, markup=False, highlight=False)
            _json_error("Interrupted", None, msg)
            raise typer.Exit(130) from None
        except Exception as e:  # a bug: say so, without a traceback unless asked for
            if os.environ.get("CLUSTERGYM_DEBUG"):
                raise
            msg = f"{type(e).__name__}: {e}"
            err.print(
                "[bold red]internal error[/] (a bug in clustergym; please report it with the command; "
                "CLUSTERGYM_DEBUG=1 shows the traceback): ",
                end="",
            )
            err.print(msg, markup=False, highlight=False)
            _json_error("InternalError", None, msg)
            raise typer.Exit(1) from None


app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    cls=_Commands,
    help="Multi-resource cluster scheduling: environments, baselines, comparisons.",
)
err = Console(stderr=True)
out = Console()


@app.callback()
def _global_options(
    no_trace_cache: bool = typer.Option(
        False,
        "--no-trace-cache",
        help="parse trace files instead of reading parsed tables from the on-disk "
        "trace cache (sets CLUSTERGYM_TRACE_CACHE=off for this command and "
        "its worker processes)",
    ),
) -> None:
    """Multi-resource cluster scheduling: environments, baselines, comparisons."""
    if no_trace_cache:
        from clustergym.traces.diskcache import ENV_VAR

        os.environ[ENV_VAR] = "off"


def _print_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(_jsonable(doc), indent=2) + "\n")


# --warmup T (run, compare): the scenario parameter `warmup`, passed like --set warmup=T
_WARMUP_HELP = "warm-up deletion: time averages over [T, horizon], per-job statistics of jobs arriving from T on"


def _with_warmup(sparams: dict[str, Any], warmup: float | None) -> None:
    if warmup is not None:
        if "warmup" in sparams and sparams["warmup"] != warmup:
            raise ConfigError("warmup", f"--warmup {warmup:g} and --set warmup={sparams['warmup']} disagree")
        sparams["warmup"] = warmup


def _json_error(kind: str, field: str | None, message: str) -> None:
    if _Commands.json_requested:
        sys.stdout.write(
            json.dumps({"error": {"type": kind, "field": field or None, "message": message}}, indent=2) + "\n"
        )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("clustergym")
    except PackageNotFoundError:
        return "0+unknown"


def pd_frame(rows: list[dict[str, Any]]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows)


def _fail(e: Exception, field: str | None = None) -> None:
    """Report a user-facing error (stderr; with --json also stdout) and exit with code 2."""
    msg = str(e)
    err.print("[bold red]error:[/] ", end="")
    err.print(msg, markup=False, highlight=False)
    _json_error(type(e).__name__, getattr(e, "field", None) or field, msg)
    raise typer.Exit(2)


@app.command("list")
def list_cmd(json_out: bool = typer.Option(False, "--json", help="print one JSON document")) -> None:
    """List the scenarios and agents with a one-line description each."""
    from clustergym.agent_api import list_agents
    from clustergym.scenarios import PRESETS

    scenarios = {name: {"description": p.description, "params": p.defaults()} for name, p in PRESETS.items()}
    agents = list_agents()
    if json_out:
        _print_json({"scenarios": scenarios, "agents": agents})
        return
    t = Table(title="scenarios")
    t.add_column("name")
    t.add_column("description")
    t.add_column("parameters (defaults)")
    for name, s in scenarios.items():
        t.add_row(name, s["description"], ", ".join(f"{k}={v}" for k, v in s["params"].items()))
    out.print(t)
    t = Table(title="agents")
    t.add_column("name")
    t.add_column("description")
    for name, d in agents.items():
        t.add_row(name, d)
    out.print(t)


@app.command("run")
def run_cmd(
    scenario: str = typer.Argument(..., help="preset name or scenario file (.yaml/.json)"),
    agent: str = typer.Option(..., "--agent", help="registered agent name (see `clustergym list`)"),
    set_: list[str] = typer.Option([], "--set", help="scenario parameter key=value; agent.key=value for the agent"),
    seed: int = typer.Option(0, "--seed"),
    horizon: float | None = typer.Option(None, "--horizon", help="override the simulated horizon"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
    warmup: float | None = typer.Option(None, "--warmup", help=_WARMUP_HELP),
) -> None:
    """Run one agent on one scenario and report its metrics."""
    from clustergym.agent_api import make_agent
    from clustergym.runner import RUN_FIELDS, run_episode
    from clustergym.scenarios import resolve_scenario

    try:
        sparams, aparams = split_prefix(parse_pairs(set_), "agent.")
        _with_warmup(sparams, warmup)
        sc = resolve_scenario(scenario, **sparams).with_horizon(horizon)
        number(seed, "--seed", lo=0, integer=True, error=ConfigError)
        ag = make_agent(agent, **aparams)
        if not json_out:
            err.print(f"running {agent} on {sc.name} (seed {seed}, horizon {sc.horizon:g})")
        result = run_episode(sc, ag, seed=seed, horizon=horizon, agent_name=agent)
    except ClusterGymError as e:
        _fail(e)
        return
    if json_out:
        _print_json(result)
        return
    t = Table(title=f"{agent} on {sc.name}, seed {seed}")
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k in RUN_FIELDS:
        v = result[k]
        t.add_row(k, f"{v:.6g}" if isinstance(v, float) else str(_jsonable(v)))
        if k == "p99_wait" and "p99_wait_method" in result:  # job_memory=bounded: p99 is estimated
            t.add_row("p99_wait_method", str(result["p99_wait_method"]))
    out.print(t)


@app.command("compare")
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
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
    warmup: float | None = typer.Option(None, "--warmup", help=_WARMUP_HELP),
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
    _with_warmup(sparams, warmup)
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
        names, bad = compatible_agents(sc_v, named)
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
                "clustergym": _version(),
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
        _print_json(
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
    out.print(t)
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
        out.print(t)
    if folder is not None:
        err.print(f"wrote {', '.join(p.name for p in written)} to {folder.path}", highlight=False)


@app.command("train")
def train_cmd(
    scenario: str | None = typer.Argument(
        None, help="preset name, scenario file or suite task (not needed with --resume)"
    ),
    algo: str | None = typer.Option(None, "--algo", help="ppo, maskable-ppo (default), dqn or a2c"),
    timesteps: int = typer.Option(100_000, "--timesteps", help="total env steps (including a resumed run's)"),
    out_dir: Path | None = typer.Option(
        None,
        "--out",
        help="a new or empty folder (default runs/train): model.zip, model.json, checkpoints/, tb/, eval.csv",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="--out may hold an earlier run: its files are replaced"),
    policy: str | None = typer.Option(None, "--policy", help="mlp (flattened observation) or equivariant (default)"),
    envs: int | None = typer.Option(
        None, "--envs", help="envs per rollout (default: 16 in-process, the available cores with --vec-env subproc)"
    ),
    vec_env: str = typer.Option(
        "dummy",
        "--vec-env",
        help="dummy (in-process, one batched forward pass; default) or subproc (a process per env)",
    ),
    seed: int | None = typer.Option(None, "--seed", help="default 0 (a resumed run: its own)"),
    eval_agents: str = typer.Option("", "--eval-agents", help="comma-separated baselines evaluated beside the policy"),
    eval_every: int = typer.Option(0, "--eval-every", help="steps between evaluations (0: only at the end)"),
    eval_seeds: int = typer.Option(3, "--eval-seeds", help="evaluation seeds 0..N-1"),
    eval_horizon: float | None = typer.Option(
        None, "--eval-horizon", help="evaluation episode length (default: the training horizon)"
    ),
    resume: Path | None = typer.Option(
        None,
        "--resume",
        help="continue a run: a checkpoint .zip or the run "
        "folder; its scenario, --set settings, algorithm "
        "and policy are restored from its model.json",
    ),
    set_: list[str] = typer.Option(
        [],
        "--set",
        help="scenario parameter k=v; env: action_mode (head, slot, admit, rule), rules (rule mode: "
        "comma-separated agents), queue_window, horizon, reward_scale; algo.<name>=v for the algorithm; "
        "policy.work_conserving=true, policy.server_ids=true; semi_markov=true|T (gamma per T of simulated time)",
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="progress bar"),
    warm_start: str | None = typer.Option(
        None, "--warm-start", help="baseline to imitate before RL (behaviour cloning), e.g. best-fit"
    ),
    decoding: str = typer.Option(
        "two-level",
        "--decoding",
        help="how the model acts when evaluated: two-level (WAIT against all placements, then the best "
        "placement), argmax, or sample (a seeded draw: a stochastic policy)",
    ),
    warm_start_steps: int = typer.Option(20_000, "--warm-start-steps", help="teacher decisions recorded"),
    warm_start_epochs: int = typer.Option(10, "--warm-start-epochs", help="passes over the teacher's decisions"),
    stage: list[str] = typer.Option(
        [],
        "--stage",
        help="curriculum stage STEPS:key=value[,key=value] (repeatable, in order): STEPS steps with those scenario "
        "parameters changed (e.g. 100000:load=1.5, 50000:num_servers=10), then the rest of --timesteps on the "
        "scenario or task itself",
    ),
) -> None:
    """Train an RL agent; the saved OUT/model.zip (or OUT itself) runs anywhere an agent name does."""
    from clustergym.errors import require_extra

    require_extra(("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "tqdm"), "train", "clustergym train")
    from clustergym.training.train import train

    params = parse_pairs(set_)
    agents = [a.strip() for a in eval_agents.split(",") if a.strip()]
    stages = [parse_stage(text) for text in stage]
    train(
        scenario,
        algo,
        timesteps=timesteps,
        n_envs=envs,
        vec_env=vec_env,
        policy=policy,
        seed=seed,
        out=out_dir,
        overwrite=overwrite,
        eval_agents=agents,
        eval_every=eval_every,
        eval_seeds=range(eval_seeds),
        eval_horizon=eval_horizon,
        resume=resume,
        progress_bar=progress,
        warm_start=warm_start,
        decoding=decoding,
        warm_start_steps=warm_start_steps,
        warm_start_epochs=warm_start_epochs,
        curriculum=stages,
        **params,
    )


@app.command("curves")
def curves_cmd(
    runs: list[Path] = typer.Argument(..., help="training runs (folders or their model.zip): seeds of one method"),
    out_stem: Path = typer.Option(
        ..., "--out", help="the figure's path without suffix (or with .png/.svg/.pdf): PNG, SVG and PDF are written"
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace existing figure files"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document (the curves' data)"),
) -> None:
    """Learning curves of training runs: evaluation score against steps and wall time, with the baselines."""
    from clustergym.errors import require_extra
    from clustergym.runner.figures import FIGURE_FORMATS
    from clustergym.training.curves import curve_data, load_curves, plot_learning_curves

    stem = out_stem.with_suffix("") if out_stem.suffix in {f".{f}" for f in FIGURE_FORMATS} else out_stem
    targets = [stem.with_name(f"{stem.name}.{fmt}") for fmt in FIGURE_FORMATS]
    if not stem.parent.is_dir():
        raise ConfigError("--out", f"{stem.parent} is not a folder")
    existing = [str(t) for t in targets if t.exists()]
    if existing and not overwrite:
        raise ConfigError("--out", f"{', '.join(existing)} exist; give --overwrite to replace them")
    require_extra("matplotlib", "plot", "clustergym curves")
    curves, metric = load_curves(runs)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from clustergym.runner.journal import atomic_write

    axes = plot_learning_curves(curves, metric)
    fig = axes[0].figure
    fig.tight_layout()
    for path, fmt in zip(targets, FIGURE_FORMATS):

        def draw(tmp: Path, fmt: str = fmt) -> None:
            fig.savefig(tmp, dpi=200, format=fmt, bbox_inches="tight")

        atomic_write(path, draw)
    plt.close(fig)
    data = curve_data(curves, metric)
    if json_out:
        _print_json(
            {"metric": metric, "files": [str(t) for t in targets], **{k: v.to_dict("records") for k, v in data.items()}}
        )
        return
    last = data["per_run"].sort_values("step").groupby("run").last().reset_index()
    t = Table(title=f"last evaluation of each run ({metric}, mean over evaluation seeds)")
    for c in ("run", "step", "value"):
        t.add_column(c, justify="left" if c == "run" else "right")
    for r in last.itertuples():
        t.add_row(str(r.run), str(int(r.step)), f"{r.value:.4g}")
    for r in data["baselines"].itertuples():
        t.add_row(f"{r.agent} (baseline)", "", f"{r.value:.4g}")
    out.print(t)
    err.print(f"wrote {', '.join(str(p) for p in targets)}", highlight=False)


@app.command("reproduce")
def reproduce_cmd(
    claims: list[str] = typer.Argument(None, help="claim ids (default: all)"),
    all_: bool = typer.Option(False, "--all", help="run every registered claim"),
    workers: int | None = typer.Option(
        None,
        "--workers",
        help="local worker processes for the claims' episodes "
        "(default: min(2, available cores); 1 runs in "
        "this process); the figures do not depend on it",
    ),
    ray_address: str | None = typer.Option(
        None, "--ray", help="run the episodes on a Ray cluster: 'auto', HOST:PORT or ray://HOST:PORT"
    ),
    scale: float = typer.Option(
        1.0,
        "--scale",
        help="multiply the simulated horizons of the simulation claims "
        "(RMS, BF-J/S, auto-scaling, LoTES generated data); below 1 "
        "for a quick look, the verdicts then mean little",
    ),
    set_: list[str] = typer.Option(
        [],
        "--set",
        help="claim setting key=value (repeatable): rms.google_n, "
        "rms.google_scalings, lotes.machines, lotes.horizon, "
        "lotes.instances, lotes.google_n, "
        "autoscale.google_servers, autoscale.google_n; see the README",
    ),
    quiet: bool = typer.Option(False, "--quiet", help="no progress lines on stderr"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
) -> None:
    """Check the papers' claims: id, paper, claim, measured, expected, passed.

    Without CLAIM ids or --all, list the registered claims (running them all takes a while).

    Settings (--set key=value; defaults give the documented figures): rms.google_n (10000; 0 = the whole slice)
    and rms.google_scalings (0.5,1,1.5) for rms-fig8; lotes.machines (50 per configuration), lotes.horizon
    (6 h), lotes.instances (2 per Phi) for the LoTES generated-data claims; lotes.google_n (0 = all) for
    lotes-google-*; autoscale.google_servers (300) and autoscale.google_n (60000; 0 = all) for
    autoscale-google-trace-ordering.
    """
    from clustergym.reproduce import CLAIMS, ReproduceConfig, load_claims, run_claims
    from clustergym.runner import available_workers

    try:
        config = ReproduceConfig(
            workers=workers if workers is not None else min(2, available_workers()),
            ray=ray_address,
            scale=scale,
            progress=not quiet,
            settings=ReproduceConfig.parse_sets(set_),
        )
        if not claims and not all_:
            load_claims()
            listing = [{"id": c.id, "paper": c.paper, "claim": c.text} for c in CLAIMS.values()]
            if json_out:
                _print_json(listing)
            else:
                t = Table(title="paper claims (run some with `clustergym reproduce ID ...`, or --all)")
                for col in ("id", "paper", "claim"):
                    t.add_column(col)
                for c in listing:
                    t.add_row(c["id"], c["paper"], c["claim"])
                out.print(t)
            return
        load_claims()
        ids = list(CLAIMS) if all_ else claims
        results = run_claims(ids, config)
    except ClusterGymError as e:
        _fail(e)
        return
    if json_out:
        _print_json(results)
    else:
        t = Table(title="paper claims")
        for c in ("id", "paper", "claim", "measured", "expected", "passed"):
            t.add_column(c)
        for r in results:
            t.add_row(
                r["id"],
                r["paper"],
                r["claim"],
                str(_jsonable(r["measured"])),
                str(r["expected"]),
                "[green]yes[/]" if r["passed"] else "[red]no[/]",
            )
        out.print(t)
    if not all(r["passed"] for r in results):
        raise typer.Exit(1)


@app.command("bench")
def bench_cmd(
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
    quick: bool = typer.Option(False, "--quick", help="shorter runs (a smoke test of the benchmark)"),
    replay: bool = typer.Option(
        True, "--replay/--no-replay", help="the Google Best-Fit replay, clustergym vs the SimPy reference"
    ),
    full_replay: bool = typer.Option(
        False, "--full-replay", help="replay all 310,705 tasks (SimPy needs minutes) instead of 50,000"
    ),
    ppo: bool = typer.Option(True, "--ppo/--no-ppo", help="share of MaskablePPO training time spent in the env"),
    memory_events: int = typer.Option(
        0, "--memory-events", help="also sample RSS over a run of this many events (e.g. 10000000)"
    ),
    scale: bool = typer.Option(
        False, "--scale", help="only the scale benchmark: rates against L = 20, 200, 2,000, 20,000 servers"
    ),
    plot: Path | None = typer.Option(None, "--plot", help="with --scale: write a log-log plot of the rates here"),
    training: bool = typer.Option(
        False, "--training", help="only training throughput: rollout and update steps/s per learner setting"
    ),
    task: str = typer.Option(
        "ec2", "--task", help="with --training: the suite task or scenario preset the learners train on"
    ),
) -> None:
    """Measure events/s, env steps/s, the replay vs SimPy, PPO's env share and memory, side by side."""
    from clustergym.perf import run_benchmarks

    if training:
        _bench_training(json_out, quick, task)
        return
    if task != "ec2":
        raise ConfigError("--task", "is the task of the training benchmark: give it with --training")
    if scale:
        _bench_scale(json_out, quick, plot)
        return
    if plot is not None:
        raise ConfigError("--plot", "is a plot of the scale benchmark: give it with --scale")

    results = run_benchmarks(
        quick=quick,
        log=None if json_out else err.print,
        replay=replay,
        full_replay=full_replay,
        ppo=ppo,
        memory_events=memory_events,
    )
    if json_out:
        _print_json(results)
        return
    t = Table(title="clustergym bench")
    for c in (
        "benchmark",
        "scenario",
        "servers",
        "events",
        "steps",
        "wall_seconds",
        "events_per_second",
        "steps_per_second",
        "events_per_cpu_second",
        "steps_per_cpu_second",
    ):
        t.add_column(c, justify="right" if c not in ("benchmark", "scenario") else "left")
    for r in results["benchmarks"]:
        t.add_row(
            r["benchmark"],
            r["scenario"],
            str(r["servers"]),
            str(r["events"]),
            str(r["steps"]),
            f"{r['wall_seconds']:.3f}",
            f"{r['events_per_second']:,.0f}",
            f"{r['steps_per_second']:,.0f}",
            f"{r['events_per_cpu_second']:,.0f}",
            f"{r['steps_per_cpu_second']:,.0f}",
        )
    out.print(t)
    rp = results.get("replay")
    if rp is not None and rp.get("status") != "ok":
        out.print(f"replay: skipped ({rp.get('reason')})")
    elif rp is not None:
        t = Table(
            title=f"Google Best-Fit replay ({rp['clustergym']['jobs']:,} tasks, "
            f"{rp['clustergym']['servers']} servers, scan 64)"
        )
        for c in ("implementation", "wall_seconds", "cpu_seconds", "peak_rss_mb", "mean_wait", "mean_queue_length"):
            t.add_column(c, justify="left" if c == "implementation" else "right")
        for key in ("clustergym", "simpy"):
            r = rp.get(key, {})
            if "wall_seconds" in r:
                t.add_row(
                    r["implementation"],
                    f"{r['wall_seconds']:.2f}",
                    f"{r['cpu_seconds']:.2f}",
                    f"{r['peak_rss_mb']:.0f}",
                    repr(r["mean_wait"]),
                    repr(r["mean_queue_length"]),
                )
        out.print(t)
        if "speedup_wall" in rp:
            out.print(
                f"clustergym vs SimPy: {rp['speedup_wall']:.1f}x wall, {rp['speedup_cpu']:.1f}x CPU; "
                f"identical metrics: {rp['identical_metrics']}"
            )
        elif "simpy" in rp:
            out.print(f"SimPy reference: skipped ({rp['simpy'].get('reason')})")
        wp = rp.get("whole_process")
        if wp is not None:
            for ph in ("cold", "warm", "simpy"):
                if ph in wp:
                    r = wp[ph]
                    name = "SimPy reference" if ph == "simpy" else f"clustergym run, {ph} trace cache"
                    out.print(
                        f"whole process, {name}: {r['wall_seconds']:.2f} s wall, {r['cpu_seconds']:.2f} s CPU, "
                        f"peak RSS {r['peak_rss_mb']:.0f} MB"
                    )
            if "speedup" in wp:
                q = wp["speedup"]
                out.print(
                    f"whole process, SimPy / clustergym: cold {q['cold_wall']:.1f}x wall ({q['cold_cpu']:.1f}x "
                    f"CPU), warm {q['warm_wall']:.1f}x wall ({q['warm_cpu']:.1f}x CPU)"
                )
    pp = results.get("ppo")
    if pp is not None:
        out.print(
            f"MaskablePPO on ec2, {pp['timesteps']} steps: learn {pp['learn_wall_seconds']:.1f} s wall, "
            f"env {pp['env_wall_seconds']:.1f} s = {100 * pp['env_share']:.1f}% of it"
        )
    for key in ("memory", "memory_bounded"):
        mm = results.get(key)
        if mm is not None:
            slope = "n/a" if mm["bytes_per_job"] is None else f"{mm['bytes_per_job']:.1f}"
            out.print(
                f"memory, job_memory={mm['job_memory']}, over {mm['events']:,} events ({mm['arrivals']:,} jobs): "
                f"RSS {mm['rss_start_mb']:.0f} MB after 10% of the run, {mm['rss_peak_mb']:.0f} MB peak, "
                f"{mm['rss_end_mb']:.0f} MB at the end; "
                f"growth {slope} bytes/job"
            )


def _bench_training(json_out: bool, quick: bool, task: str) -> None:
    from clustergym.errors import require_extra

    require_extra(("torch", "stable_baselines3", "sb3_contrib"), "train", "clustergym bench --training")
    from clustergym.scenarios import resolve_scenario
    from clustergym.suite import find_task
    from clustergym.training.throughput import bench_training_configs

    if find_task(task) is None:
        resolve_scenario(task)  # a ConfigError names an unknown task or preset
    rows = bench_training_configs(task=task, rollouts=1 if quick else 3, log=None if json_out else err.print)
    if json_out:
        _print_json({"training": rows})
        return
    t = Table(title=f"clustergym bench --training ({rows[0]['task']}; steps/s of one learn run per row)")
    for c in ("setting", "algo/policy", "envs", "rollout steps/s", "update steps/s", "steps/s", "CPU s"):
        t.add_column(c, justify="left" if c in ("setting", "algo/policy") else "right")
    for r in rows:
        t.add_row(
            r["name"],
            f"{r['algo']}/{r['policy']}",
            f"{r['n_envs']} {r['vec_env']}",
            f"{r['rollout_steps_per_s']:,.0f}",
            f"{r['update_steps_per_s']:,.0f}",
            f"{r['steps_per_s']:,.0f}",
            f"{r['cpu_seconds']:.1f}",
        )
    out.print(t)


def _bench_scale(json_out: bool, quick: bool, plot: Path | None) -> None:
    from clustergym.cli.trace import _check_plot_target
    from clustergym.perf import bench_scale, plot_scale

    if plot is not None:
        _check_plot_target(plot, "bench --scale --plot")
    kw = {"events": 2_000, "steps": 1_000, "warmup": 0.05} if quick else {}
    res = bench_scale(log=None if json_out else err.print, **kw)
    if plot is not None:
        res["plot"] = str(plot_scale(res, plot))
    if json_out:
        _print_json(res)
        return
    t = Table(
        title=f"clustergym bench --scale (ec2; warm-up {res['warmup']:g} time units, then "
        f"{res['events']:,} events or {res['steps']:,} env steps)"
    )
    for c in (
        "bench",
        "L",
        "events/s",
        "events/CPU-s",
        "steps/s",
        "steps/CPU-s",
        "env.step steps/CPU-s",
        "bytes/server",
    ):
        t.add_column(c, justify="left" if c == "bench" else "right")
    for r in res["rows"]:
        env = r.get("env_steps_per_cpu_second")
        t.add_row(
            r["benchmark"],
            f"{r['servers']:,}",
            f"{r['events_per_second']:,.0f}",
            f"{r['events_per_cpu_second']:,.0f}",
            f"{r['steps_per_second']:,.0f}",
            f"{r['steps_per_cpu_second']:,.0f}",
            "" if env is None else f"{env:,.0f}",
            f"{r['bytes_per_server']:,.0f}",
        )
    out.print(t)
    for label, q in res["ratios_to_200"].items():
        extra = f"; env.step alone {q['env_only']:.2f} (wall), {q['env_only_cpu']:.2f} (CPU)" if "env_only" in q else ""
        out.print(
            f"{label}: rate at L={q['servers']:,} / rate at L=200 = {q['wall']:.2f} (wall), {q['cpu']:.2f} (CPU){extra}"
        )
    if "plot" in res:
        out.print(f"plot: {res['plot']}")


from clustergym.cli.trace import trace_cmd  # noqa: E402  (after `app`, which it is registered on)

app.command("trace")(trace_cmd)
from clustergym.cli.benchmark import benchmark_cmd  # noqa: E402

app.command("benchmark")(benchmark_cmd)
from clustergym.cli.convert import convert_model_cmd  # noqa: E402

app.command("convert-model")(convert_model_cmd)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
