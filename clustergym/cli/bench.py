"""``clustergym bench``: the speed of the simulator, the environment and training."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from clustergym.cli._common import err, format_option, print_json, print_note, print_table
from clustergym.errors import ConfigError


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
    env_steps: bool = typer.Option(
        True, "--env-steps/--no-env-steps", help="each suite task's env steps/s against CartPole-v1's, in one run"
    ),
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
    table_format: str = format_option(),
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
        env_steps=env_steps,
    )
    if json_out:
        print_json(results)
        return
    _print_rows(results["benchmarks"])
    _print_env_steps(results.get("env_steps"))
    rp = results.get("replay")
    if rp is not None:
        _print_replay(rp)
    _print_ppo_and_memory(results)


def _print_rows(rows: list[dict[str, Any]]) -> None:
    """The ``benchmarks`` rows: events/s and steps/s, wall and CPU."""
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
    for r in rows:
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
    print_table(t)


def _print_env_steps(es: dict[str, Any] | None) -> None:
    """The suite tasks' env steps/s against CartPole-v1's, as a table."""
    if not es:
        return
    t = Table(title=f"env steps/s, random valid actions (CartPole-v1: {es['cartpole_steps_per_s']:,.0f}/s, same run)")
    for c in ("task", "steps_per_s", "ratio_to_cartpole", "ratio_min", "batched_steps_per_s", "batched_ratio"):
        t.add_column(c, justify="left" if c == "task" else "right")
    for r in es["tasks"]:
        if r.get("status") == "skipped":
            t.add_row(r["task"], "skipped: " + r["reason"], "", "", "", "")
            continue
        t.add_row(
            r["task"],
            f"{r['steps_per_s']:,.0f}",
            f"{r['ratio_to_cartpole']:.3f}",
            f"{r['ratio_min']:.3f}",
            f"{r.get('batched_steps_per_s', 0):,.0f}",
            f"{r.get('batched_ratio_to_cartpole', 0):.3f}",
        )
    print_table(t)


def _print_replay(rp: dict[str, Any]) -> None:
    """The Google Best-Fit replay: clustergym against SimPy, then the whole processes."""
    if rp.get("status") != "ok":
        print_note(f"replay: skipped ({rp.get('reason')})")
        return
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
    print_table(t)
    if "speedup_wall" in rp:
        print_note(
            f"clustergym vs SimPy: {rp['speedup_wall']:.1f}x wall, {rp['speedup_cpu']:.1f}x CPU; "
            f"identical metrics: {rp['identical_metrics']}"
        )
    elif "simpy" in rp:
        print_note(f"SimPy reference: skipped ({rp['simpy'].get('reason')})")
    if rp.get("whole_process") is not None:
        _print_whole_process(rp["whole_process"])


def _print_whole_process(wp: dict[str, Any]) -> None:
    """The whole `clustergym run` processes (cold and warm trace cache) and SimPy's."""
    for ph in ("cold", "warm", "simpy"):
        if ph in wp:
            r = wp[ph]
            name = "SimPy reference" if ph == "simpy" else f"clustergym run, {ph} trace cache"
            print_note(
                f"whole process, {name}: {r['wall_seconds']:.2f} s wall, {r['cpu_seconds']:.2f} s CPU, "
                f"peak RSS {r['peak_rss_mb']:.0f} MB"
            )
    if "speedup" in wp:
        q = wp["speedup"]
        print_note(
            f"whole process, SimPy / clustergym: cold {q['cold_wall']:.1f}x wall ({q['cold_cpu']:.1f}x "
            f"CPU), warm {q['warm_wall']:.1f}x wall ({q['warm_cpu']:.1f}x CPU); the figure of record: warm CPU"
        )


def _print_ppo_and_memory(results: dict[str, Any]) -> None:
    """PPO's share of time in the env, and the memory runs."""
    pp = results.get("ppo")
    if pp is not None:
        print_note(
            f"MaskablePPO on ec2, {pp['timesteps']} steps: learn {pp['learn_wall_seconds']:.1f} s wall, "
            f"env {pp['env_wall_seconds']:.1f} s = {100 * pp['env_share']:.1f}% of it"
        )
    for key in ("memory", "memory_bounded"):
        mm = results.get(key)
        if mm is not None:
            slope = "n/a" if mm["bytes_per_job"] is None else f"{mm['bytes_per_job']:.1f}"
            print_note(
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
        print_json({"training": rows})
        return
    t = Table(title=f"clustergym bench --training ({rows[0]['task']}; steps/s of one learn run per row)")
    for c in ("setting", "algo/policy", "envs", "threads", "rollout steps/s", "update steps/s", "steps/s", "CPU s"):
        t.add_column(c, justify="left" if c in ("setting", "algo/policy") else "right")
    for r in rows:
        t.add_row(
            r["name"],
            f"{r['algo']}/{r['policy']}",
            f"{r['n_envs']} {r['vec_env']}",
            str(r["torch_threads_used"]),
            f"{r['rollout_steps_per_s']:,.0f}",
            f"{r['update_steps_per_s']:,.0f}",
            f"{r['steps_per_s']:,.0f}",
            f"{r['cpu_seconds']:.1f}",
        )
    print_table(t)


def _bench_scale(json_out: bool, quick: bool, plot: Path | None) -> None:
    from clustergym.perf import bench_scale

    res = bench_scale(log=None if json_out else err.print, quick=quick, plot=plot)
    if json_out:
        print_json(res)
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
    print_table(t)
    for label, q in res["ratios_to_200"].items():
        extra = f"; env.step alone {q['env_only']:.2f} (wall), {q['env_only_cpu']:.2f} (CPU)" if "env_only" in q else ""
        print_note(
            f"{label}: rate at L={q['servers']:,} / rate at L=200 = {q['wall']:.2f} (wall), {q['cpu']:.2f} (CPU){extra}"
        )
    if "plot" in res:
        print_note(f"plot: {res['plot']}")
