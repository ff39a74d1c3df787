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
from rich.console import Console
from rich.table import Table

from clustergym._json import jsonable as _jsonable
from clustergym.cli.values import parse_pairs, parse_value, split_prefix
from clustergym.errors import ClusterGymError, ConfigError
from clustergym.validation import number

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Multi-resource cluster scheduling: environments, baselines, comparisons.")
err = Console(stderr=True)
out = Console()


@app.callback()
def _global_options(
    no_trace_cache: bool = typer.Option(False, "--no-trace-cache",
                                        help="parse trace files instead of reading parsed tables from the on-disk "
                                             "trace cache (sets CLUSTERGYM_TRACE_CACHE=off for this command and "
                                             "its worker processes)"),
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


def _fail(e: Exception) -> None:
    err.print(f"[bold red]error:[/] {e}", highlight=False)
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
        sc = resolve_scenario(scenario, **sparams)
        ag = make_agent(agent, **aparams)
        if not json_out:
            err.print(f"running {agent} on {sc.name} (seed {seed}, horizon {horizon or sc.horizon:g})")
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
    scenario: str = typer.Argument(..., help="preset name or scenario file"),
    agents: str = typer.Option(..., "--agents", help="comma-separated agent names or model paths; "
                                                     "'all' (alone or in the list): every registered agent that can run on the scenario"),
    seeds: int = typer.Option(5, "--seeds", help="number of seeds (0..N-1), the same for every agent"),
    set_: list[str] = typer.Option([], "--set", help="scenario parameter key=value"),
    horizon: float | None = typer.Option(None, "--horizon"),
    sweep_: str | None = typer.Option(None, "--sweep", help="preset parameter and values, e.g. zeta=0.8,0.9,0.95"),
    reference: str | None = typer.Option(None, "--reference", help="agent the paired differences are taken "
                                                                      "against (default: the first agent)"),
    workers: int | None = typer.Option(None, "--workers", help="local worker processes (default: the "
                                                                  "available cores; 1 runs in this process)"),
    ray_address: str | None = typer.Option(None, "--ray", help="run the episodes on a Ray cluster: "
                                                                  "'auto', HOST:PORT or ray://HOST:PORT"),
    out_dir: Path | None = typer.Option(None, "--out", help="write results.csv, results.parquet, "
                                                               "summary.csv and a plot here"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
    warmup: float | None = typer.Option(None, "--warmup", help=_WARMUP_HELP),
) -> None:
    """Compare agents on the same seeds (common random numbers), with 95% confidence intervals."""
    from clustergym.runner import (
        add_lp_bound,
        compatible_agents,
        headline_metric,
        plan,
        run_cells,
        summarize,
        worker_count,
        write_results,
    )
    from clustergym.runner.stats import SUMMARY_METRICS
    from clustergym.scenarios import resolve_scenario

    param, values, skipped = None, [None], {}
    try:
        sparams, aparams = split_prefix(parse_pairs(set_), "agent.")
        _with_warmup(sparams, warmup)
        if aparams:
            raise ConfigError("--set", "compare takes scenario parameters only (agent.* is for `run`)")
        number(seeds, "--seeds", lo=1, error=ConfigError)
        workers = worker_count(workers, "--workers")
        if sweep_ is not None:
            if "=" not in sweep_:
                raise ClusterGymError(f"--sweep {sweep_!r}: expected key=v1,v2,...")
            param, raw = sweep_.split("=", 1)
            values = [parse_value(v) for v in raw.split(",") if v.strip()]
            if not param or not values:
                raise ClusterGymError(f"--sweep {sweep_!r}: expected key=v1,v2,...")
        sc = resolve_scenario(scenario, **sparams, **({param: values[0]} if param else {}))
        requested = [a.strip() for a in agents.split(",") if a.strip()]
        if not requested:
            raise ClusterGymError(f"--agents {agents!r}: expected agent names, model paths or 'all'")
        named = [a for a in requested if a != "all"]
        names, bad = compatible_agents(sc, named)
        if bad:
            raise ClusterGymError("; ".join(f"{a}: {why}" for a, why in bad.items()))
        if "all" in requested:  # every other registered agent that runs here, after the named ones
            others, skipped = compatible_agents(sc)
            names += [a for a in others if a not in names]
            if not others:
                raise ClusterGymError(f"--agents all: no registered agent can run on {sc.name!r}")
        reference = reference or names[0]
        if reference not in names:
            raise ClusterGymError(f"--reference {reference!r} is not among the compared agents {names}")
        if not json_out:
            for a, why in skipped.items():
                err.print(f"skipped {a}: {why}", highlight=False)
        cells = plan(scenario, names, seeds=range(seeds), horizon=horizon, params=sparams,
                     sweep=(param, values) if param else None)
        from rich.progress import Progress

        with Progress(console=err, transient=True) as prog:
            task = prog.add_task("runs", total=len(cells))

            def tick(agent: str, seed: int) -> None:
                prog.update(task, advance=1, description=f"{agent} seed {seed}")

            runs = run_cells(cells, workers=workers, ray=ray_address, progress=tick)
        metric = headline_metric(sc.objective)
        summary = summarize(runs, tuple(dict.fromkeys((*SUMMARY_METRICS, metric))), reference=reference, by=param)
    except ClusterGymError as e:
        _fail(e)
        return
    if param is None:
        add_lp_bound(summary, sc)
    if out_dir is not None:
        write_results(out_dir, runs, summary, metric=metric, param=param,
                      title=f"{sc.name}: {metric} (mean ± 95% CI, {seeds} seeds)")
    if json_out:
        _print_json({"scenario": sc.name, "seeds": list(range(seeds)), "agents": names, "reference": reference,
                     "skipped": skipped, "sweep": param, "values": values if param else None,
                     "metric": metric, "summary": summary.to_dict("records"), "runs": runs.to_dict("records")})
        return
    t = Table(title=f"{sc.name}: {len(names)} agents x {seeds} seeds (mean ± 95% CI)")
    if param is not None:
        t.add_column(param)
    t.add_column("agent")
    cols = ["mean_queue_length", "mean_wait", "p99_wait", "reward_rate"]
    for c in cols:
        t.add_column(c, justify="right")
    t.add_column(f"paired Δ {metric} vs {reference}", justify="right")
    t.add_column("unstable runs", justify="right")
    for _, r in summary.iterrows():
        lead = [str(r[param])] if param is not None else []
        diff = "" if r["agent"] == reference else f"{r[metric + '_diff']:+.4g} ± {r[metric + '_diff_ci95']:.2g}"
        t.add_row(*lead, r["agent"], *[f"{r[c]:.4g} ± {r[c + '_ci95']:.2g}" for c in cols], diff,
                  str(r["unstable_runs"]))
    out.print(t)
    if "lp_bound_per_server" in summary:
        t = Table(title=f"reward per server against the LP upper bound U* = {summary['lp_bound_per_server'].iloc[0]:.6g}")
        for c in ("agent", "reward per server", "ratio to U*"):
            t.add_column(c, justify="left" if c == "agent" else "right")
        for _, r in summary.iterrows():
            t.add_row(r["agent"], f"{r['reward_per_server']:.5g} ± {r['reward_per_server_ci95']:.2g}",
                      f"{r['ratio_to_lp_bound']:.4f}")
        out.print(t)
    if out_dir is not None:
        err.print(f"wrote results.csv, results.parquet, summary.csv and a plot to {out_dir}")


@app.command("train")
def train_cmd(
    scenario: str = typer.Argument(..., help="preset name or scenario file"),
    algo: str = typer.Option(..., "--algo", help="ppo, maskable-ppo, dqn or a2c"),
    timesteps: int = typer.Option(100_000, "--timesteps", help="total env steps (including a resumed run's)"),
    out_dir: Path = typer.Option(Path("runs/train"), "--out", help="model.zip, model.json, checkpoints/, tb/, eval.csv"),
    policy: str = typer.Option("equivariant", "--policy", help="mlp (flattened observation) or equivariant"),
    envs: int | None = typer.Option(None, "--envs", help="parallel envs (default: the available cores)"),
    seed: int = typer.Option(0, "--seed"),
    eval_agents: str = typer.Option("", "--eval-agents", help="comma-separated baselines evaluated beside the policy"),
    eval_every: int = typer.Option(0, "--eval-every", help="steps between evaluations (0: only at the end)"),
    eval_seeds: int = typer.Option(3, "--eval-seeds", help="evaluation seeds 0..N-1"),
    eval_horizon: float | None = typer.Option(None, "--eval-horizon", help="evaluation episode length "
                                                                              "(default: the training horizon)"),
    resume: Path | None = typer.Option(None, "--resume", help="checkpoint .zip to continue from"),
    set_: list[str] = typer.Option([], "--set", help="scenario parameter k=v; env: action_mode, queue_window, "
                                                     "horizon, reward_scale; algo.<name>=v for the algorithm; "
                                                     "policy.work_conserving=true"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="progress bar"),
    warm_start: str | None = typer.Option(None, "--warm-start", help="baseline to imitate before RL "
                                                                         "(behaviour cloning), e.g. best-fit"),
    warm_start_steps: int = typer.Option(20_000, "--warm-start-steps", help="teacher decisions recorded"),
    warm_start_epochs: int = typer.Option(10, "--warm-start-epochs", help="passes over the teacher's decisions"),
) -> None:
    """Train an RL agent; the saved OUT/model.zip runs anywhere an agent name does."""
    try:
        from clustergym.training.train import train

        params = parse_pairs(set_)
        agents = [a.strip() for a in eval_agents.split(",") if a.strip()]
        train(scenario, algo, timesteps=timesteps, n_envs=envs, policy=policy, seed=seed, out=out_dir,
              eval_agents=agents, eval_every=eval_every, eval_seeds=range(eval_seeds), eval_horizon=eval_horizon,
              resume=resume, progress_bar=progress, warm_start=warm_start, warm_start_steps=warm_start_steps,
              warm_start_epochs=warm_start_epochs, **params)
    except ClusterGymError as e:
        _fail(e)


@app.command("reproduce")
def reproduce_cmd(
    claims: list[str] = typer.Argument(None, help="claim ids (default: all)"),
    all_: bool = typer.Option(False, "--all", help="run every registered claim"),
    workers: int | None = typer.Option(None, "--workers", help="local worker processes for the claims' episodes "
                                                                  "(default: min(2, available cores); 1 runs in "
                                                                  "this process); the figures do not depend on it"),
    ray_address: str | None = typer.Option(None, "--ray", help="run the episodes on a Ray cluster: "
                                                                  "'auto', HOST:PORT or ray://HOST:PORT"),
    scale: float = typer.Option(1.0, "--scale", help="multiply the simulated horizons of the simulation claims "
                                                     "(RMS, BF-J/S, auto-scaling, LoTES generated data); below 1 "
                                                     "for a quick look, the verdicts then mean little"),
    set_: list[str] = typer.Option([], "--set", help="claim setting key=value (repeatable): rms.google_n, "
                                                     "rms.google_scalings, lotes.machines, lotes.horizon, "
                                                     "lotes.instances, lotes.google_n, "
                                                     "autoscale.google_servers, autoscale.google_n; see the README"),
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
        config = ReproduceConfig(workers=workers if workers is not None else min(2, available_workers()),
                                 ray=ray_address, scale=scale, progress=not quiet,
                                 settings=ReproduceConfig.parse_sets(set_))
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
            t.add_row(r["id"], r["paper"], r["claim"], str(_jsonable(r["measured"])), str(r["expected"]),
                      "[green]yes[/]" if r["passed"] else "[red]no[/]")
        out.print(t)
    if not all(r["passed"] for r in results):
        raise typer.Exit(1)


@app.command("bench")
def bench_cmd(
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
    quick: bool = typer.Option(False, "--quick", help="shorter runs (a smoke test of the benchmark)"),
    replay: bool = typer.Option(True, "--replay/--no-replay",
                                help="the Google Best-Fit replay, clustergym vs the SimPy reference"),
    full_replay: bool = typer.Option(False, "--full-replay",
                                     help="replay all 310,705 tasks (SimPy needs minutes) instead of 50,000"),
    ppo: bool = typer.Option(True, "--ppo/--no-ppo", help="share of MaskablePPO training time spent in the env"),
    memory_events: int = typer.Option(0, "--memory-events",
                                      help="also sample RSS over a run of this many events (e.g. 10000000)"),
    scale: bool = typer.Option(False, "--scale",
                               help="only the scale benchmark: rates against L = 20, 200, 2,000, 20,000 servers"),
    plot: Path | None = typer.Option(None, "--plot", help="with --scale: write a log-log plot of the rates here"),
) -> None:
    """Measure events/s, env steps/s, the replay vs SimPy, PPO's env share and memory, side by side."""
    from clustergym.bench import run_benchmarks

    if scale:
        _bench_scale(json_out, quick, plot)
        return

    results = run_benchmarks(quick=quick, log=None if json_out else err.print, replay=replay,
                             full_replay=full_replay, ppo=ppo, memory_events=memory_events)
    if json_out:
        _print_json(results)
        return
    t = Table(title="clustergym bench")
    for c in ("benchmark", "scenario", "servers", "events", "steps", "wall_seconds", "events_per_second",
              "steps_per_second", "events_per_cpu_second", "steps_per_cpu_second"):
        t.add_column(c, justify="right" if c not in ("benchmark", "scenario") else "left")
    for r in results["benchmarks"]:
        t.add_row(r["benchmark"], r["scenario"], str(r["servers"]), str(r["events"]), str(r["steps"]),
                  f"{r['wall_seconds']:.3f}", f"{r['events_per_second']:,.0f}", f"{r['steps_per_second']:,.0f}",
                  f"{r['events_per_cpu_second']:,.0f}", f"{r['steps_per_cpu_second']:,.0f}")
    out.print(t)
    rp = results.get("replay")
    if rp is not None and rp.get("status") != "ok":
        out.print(f"replay: skipped ({rp.get('reason')})")
    elif rp is not None:
        t = Table(title=f"Google Best-Fit replay ({rp['clustergym']['jobs']:,} tasks, "
                        f"{rp['clustergym']['servers']} servers, scan 64)")
        for c in ("implementation", "wall_seconds", "cpu_seconds", "peak_rss_mb", "mean_wait", "mean_queue_length"):
            t.add_column(c, justify="left" if c == "implementation" else "right")
        for key in ("clustergym", "simpy"):
            r = rp.get(key, {})
            if "wall_seconds" in r:
                t.add_row(r["implementation"], f"{r['wall_seconds']:.2f}", f"{r['cpu_seconds']:.2f}",
                          f"{r['peak_rss_mb']:.0f}", repr(r["mean_wait"]), repr(r["mean_queue_length"]))
        out.print(t)
        if "speedup_wall" in rp:
            out.print(f"clustergym vs SimPy: {rp['speedup_wall']:.1f}x wall, {rp['speedup_cpu']:.1f}x CPU; "
                      f"identical metrics: {rp['identical_metrics']}")
        elif "simpy" in rp:
            out.print(f"SimPy reference: skipped ({rp['simpy'].get('reason')})")
        wp = rp.get("whole_process")
        if wp is not None:
            for ph in ("cold", "warm", "simpy"):
                if ph in wp:
                    r = wp[ph]
                    name = "SimPy reference" if ph == "simpy" else f"clustergym run, {ph} trace cache"
                    out.print(f"whole process, {name}: {r['wall_seconds']:.2f} s wall, {r['cpu_seconds']:.2f} s CPU, "
                              f"peak RSS {r['peak_rss_mb']:.0f} MB")
            if "speedup" in wp:
                q = wp["speedup"]
                out.print(f"whole process, SimPy / clustergym: cold {q['cold_wall']:.1f}x wall ({q['cold_cpu']:.1f}x "
                          f"CPU), warm {q['warm_wall']:.1f}x wall ({q['warm_cpu']:.1f}x CPU)")
    pp = results.get("ppo")
    if pp is not None:
        out.print(f"MaskablePPO on ec2, {pp['timesteps']} steps: learn {pp['learn_wall_seconds']:.1f} s wall, "
                  f"env {pp['env_wall_seconds']:.1f} s = {100 * pp['env_share']:.1f}% of it")
    for key in ("memory", "memory_bounded"):
        mm = results.get(key)
        if mm is not None:
            slope = "n/a" if mm["bytes_per_job"] is None else f"{mm['bytes_per_job']:.1f}"
            out.print(f"memory, job_memory={mm['job_memory']}, over {mm['events']:,} events ({mm['arrivals']:,} jobs): "
                      f"RSS {mm['rss_start_mb']:.0f} MB after 10% of the run, {mm['rss_peak_mb']:.0f} MB peak, "
                      f"{mm['rss_end_mb']:.0f} MB at the end; "
                      f"growth {slope} bytes/job")


def _bench_scale(json_out: bool, quick: bool, plot: Path | None) -> None:
    from clustergym.bench import bench_scale, plot_scale

    kw = {"events": 2_000, "steps": 1_000, "warmup": 0.05} if quick else {}
    res = bench_scale(log=None if json_out else err.print, **kw)
    if plot is not None:
        res["plot"] = str(plot_scale(res, plot))
    if json_out:
        _print_json(res)
        return
    t = Table(title=f"clustergym bench --scale (ec2; warm-up {res['warmup']:g} time units, then "
                    f"{res['events']:,} events or {res['steps']:,} env steps)")
    for c in ("bench", "L", "events/s", "events/CPU-s", "steps/s", "steps/CPU-s", "env.step steps/CPU-s",
              "bytes/server"):
        t.add_column(c, justify="left" if c == "bench" else "right")
    for r in res["rows"]:
        env = r.get("env_steps_per_cpu_second")
        t.add_row(r["benchmark"], f"{r['servers']:,}", f"{r['events_per_second']:,.0f}",
                  f"{r['events_per_cpu_second']:,.0f}", f"{r['steps_per_second']:,.0f}",
                  f"{r['steps_per_cpu_second']:,.0f}", "" if env is None else f"{env:,.0f}",
                  f"{r['bytes_per_server']:,.0f}")
    out.print(t)
    for label, q in res["ratios_to_200"].items():
        extra = (f"; env.step alone {q['env_only']:.2f} (wall), {q['env_only_cpu']:.2f} (CPU)"
                 if "env_only" in q else "")
        out.print(f"{label}: rate at L={q['servers']:,} / rate at L=200 = {q['wall']:.2f} (wall), {q['cpu']:.2f} (CPU){extra}")
    if "plot" in res:
        out.print(f"plot: {res['plot']}")


from clustergym.cli.trace import trace_cmd

app.command("trace")(trace_cmd)
from clustergym.cli.benchmark import benchmark_cmd  # noqa: E402

app.command("benchmark")(benchmark_cmd)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
