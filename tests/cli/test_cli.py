"""Tests of the ``clustergym`` command line (a stable interface: scripts depend on it).

Most commands run in-process through typer's CliRunner (stdout and stderr kept
apart); a few run the installed console script in a real subprocess.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import clustergym
from clustergym.cli import app

RUN_FIELDS = (
    "scenario",
    "agent",
    "seed",
    "servers",
    "sim_time",
    "arrivals",
    "started",
    "completed",
    "rejected",
    "mean_queue_length",
    "mean_wait",
    "p99_wait",
    "mean_weighted_completion",
    "reward_rate",
    "utilization",
    "events",
    "wall_seconds",
    "unstable",
)

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("quiet_warnings")


def _cli(*args: str):
    """Run in-process; return (exit_code, stdout, stderr)."""
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _console_script() -> list[str]:
    """``python -m clustergym`` of this tree (the installed console script may be another checkout's)."""
    return [sys.executable, "-m", "clustergym"]


def _subprocess(*args: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [*_console_script(), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200", "PYTHONPATH": path},
    )


def _only_error(stdout: str) -> dict:
    """With --json, a failed command prints one JSON document: {"error": {type, field, message}}."""
    doc = json.loads(stdout)
    assert set(doc) == {"error"} and set(doc["error"]) == {"type", "field", "message"}, doc
    return doc["error"]


def _one_json(stdout: str):
    """stdout must be exactly one JSON document (json.loads rejects any extra text)."""
    assert stdout.strip(), "nothing on stdout"
    return json.loads(stdout)


# =============================================================================== list
def test_list_json_subprocess_names_every_preset_and_agent():
    proc = _subprocess("list", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = _one_json(proc.stdout)
    assert set(doc["scenarios"]) == set(clustergym.PRESETS)
    for name, s in doc["scenarios"].items():
        assert isinstance(s["description"], str) and s["description"].strip(), name
        assert "\n" not in s["description"]
    agents = doc["agents"]
    assert set(clustergym.list_agents()) == set(agents)
    for name in ("first-fit", "best-fit", "random-fit", "best-fit-admit", "first-fit-admit", "random"):
        assert name in agents
    for name, desc in agents.items():
        assert isinstance(desc, str) and desc.strip() and "\n" not in desc, name


def test_list_table():
    code, out, _ = _cli("list")
    assert code == 0
    for name in (*clustergym.PRESETS, "best-fit", "first-fit"):
        assert name in out


# =============================================================================== run
def test_run_json_subprocess_prints_exactly_one_document():
    proc = _subprocess("run", "ec2", "--agent", "best-fit", "--json", "--horizon", "50")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.lstrip().startswith("{") and proc.stdout.rstrip().endswith("}")
    doc = _one_json(proc.stdout)
    for k in RUN_FIELDS:
        assert k in doc, f"missing field {k}"
    assert doc["scenario"] == "ec2" and doc["agent"] == "best-fit" and doc["seed"] == 0
    assert doc["servers"] == 20 and doc["sim_time"] == pytest.approx(50.0)
    assert doc["arrivals"] > 1000 and doc["started"] >= doc["completed"] > 0 and doc["rejected"] == 0
    assert doc["started"] <= doc["arrivals"]
    assert isinstance(doc["utilization"], list) and len(doc["utilization"]) == 3
    assert all(0.0 < u <= 1.0 for u in doc["utilization"])
    assert doc["mean_queue_length"] >= 0 and doc["mean_wait"] >= 0 and doc["p99_wait"] >= doc["mean_wait"]
    assert doc["reward_rate"] > 0 and doc["events"] > 0 and doc["wall_seconds"] > 0
    assert isinstance(doc["unstable"], bool)


def test_run_json_in_process_matches_the_library():
    from clustergym.runner import run_episode

    code, out, _ = _cli("run", "bf-trap", "--agent", "first-fit", "--json", "--horizon", "20", "--seed", "3")
    assert code == 0
    doc = _one_json(out)
    ref = run_episode("bf-trap", "first-fit", seed=3, horizon=20.0)
    assert doc["seed"] == 3
    for k in ("arrivals", "started", "completed", "events"):
        assert doc[k] == ref[k]
    assert doc["mean_queue_length"] == pytest.approx(ref["mean_queue_length"], rel=1e-12)


def test_run_table_form():
    code, out, _ = _cli("run", "bf-trap", "--agent", "best-fit", "--horizon", "10")
    assert code == 0
    for k in ("mean_queue_length", "utilization", "arrivals"):
        assert k in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def _run_json(*args: str) -> dict:
    code, out, err = _cli("run", *args, "--json")
    assert code == 0, err
    return _one_json(out)


def test_set_scenario_parameter_changes_the_arrivals():
    base = _run_json("ec2", "--agent", "first-fit", "--horizon", "5")
    half = _run_json("ec2", "--agent", "first-fit", "--horizon", "5", "--set", "zeta=0.5")
    assert half["arrivals"] != base["arrivals"]
    # lambda scales with zeta: 0.5 / 0.9 of the arrivals, up to Poisson noise (~5 sigma)
    assert half["arrivals"] == pytest.approx(base["arrivals"] * 0.5 / 0.9, rel=0.2)
    small = _run_json("ec2", "--agent", "first-fit", "--horizon", "5", "--set", "num_servers=2")
    assert small["servers"] == 2


def test_set_agent_parameter_reaches_the_agent():
    largest = _run_json("bf-trap", "--agent", "best-fit", "--horizon", "50")
    fifo = _run_json("bf-trap", "--agent", "best-fit", "--horizon", "50", "--set", "agent.select_job=fifo")
    explicit = _run_json("bf-trap", "--agent", "best-fit", "--horizon", "50", "--set", "agent.select_job=largest")
    assert fifo["arrivals"] == largest["arrivals"]  # same seed, same arrivals
    assert fifo["mean_queue_length"] != largest["mean_queue_length"]  # different refill decisions
    assert explicit["mean_queue_length"] == largest["mean_queue_length"]
    code, _, err = _cli("run", "bf-trap", "--agent", "best-fit", "--set", "agent.select_job=bogus", "--json")
    assert code == 2 and "agent.select_job" in err


def test_set_unknown_parameter_exits_2_naming_it():
    proc = _subprocess("run", "ec2", "--agent", "best-fit", "--set", "nope=1", "--json")
    assert proc.returncode == 2
    assert "params.nope" in proc.stderr
    assert _only_error(proc.stdout)


def test_set_without_equals_exits_2():
    code, out, err = _cli("run", "ec2", "--agent", "best-fit", "--set", "zeta", "--json")
    assert code == 2 and "key=value" in err and _only_error(out)


def test_malformed_scenario_file_exits_2_naming_the_field(tmp_path):
    bad = {
        "resources": ["cpu", "mem"],
        "servers": [{"count": 2, "capacity": [4, 4]}, {"capacity": [1, 2, 3]}],
        "horizon": 5,
        "workload": {
            "kind": "poisson-typed",
            "types": [{"rate": 1.0, "demand": [1, 1], "service": {"dist": "exponential", "mean": 1.0}}],
        },
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    code, out, err = _cli("run", str(path), "--agent", "first-fit", "--json")
    assert code == 2
    assert "servers[1].capacity" in err
    assert _only_error(out)
    code, _, err = _cli("compare", str(path), "--agents", "first-fit", "--seeds", "1", "--json")
    assert code == 2 and "servers[1].capacity" in err


def test_scenario_file_runs(tmp_path):
    path = tmp_path / "trap.json"
    path.write_text(json.dumps({"preset": "bf-trap", "params": {"num_servers": 3}, "horizon": 10}))
    doc = _run_json(str(path), "--agent", "first-fit")
    assert doc["servers"] == 3 and doc["sim_time"] == pytest.approx(10.0)


def test_unknown_agent_exits_2():
    proc = _subprocess("run", "ec2", "--agent", "no-such-agent", "--json")
    assert proc.returncode == 2
    assert "no-such-agent" in proc.stderr
    assert _only_error(proc.stdout)


def test_agent_incompatible_with_scenario_exits_2():
    code, out, err = _cli("run", "autoscale-4vm", "--agent", "best-fit", "--horizon", "1", "--json")
    assert code == 2 and "agent" in err and _only_error(out)


def test_unknown_scenario_exits_2():
    code, _, err = _cli("run", "no-such-scenario", "--agent", "best-fit", "--json")
    assert code == 2 and "no-such-scenario" in err


# =============================================================================== compare
def test_compare_json_writes_files(tmp_path):
    out_dir = tmp_path / "results"
    code, out, err = _cli(
        "compare",
        "bf-trap",
        "--agents",
        "first-fit,best-fit",
        "--seeds",
        "2",
        "--horizon",
        "50",
        "--json",
        "--out",
        str(out_dir),
    )
    assert code == 0, err
    doc = _one_json(out)
    summary = doc["summary"]
    assert [row["agent"] for row in summary] == ["first-fit", "best-fit"]
    for row in summary:
        assert row["runs"] == 2
        for m in ("mean_queue_length", "mean_wait", "reward_rate"):
            assert isinstance(row[m], float) and math.isfinite(row[m])
            assert f"{m}_ci95" in row
        assert row["mean_queue_length_ci95"] is not None and row["mean_queue_length_ci95"] >= 0
    assert len(doc["runs"]) == 4
    assert {(r["agent"], r["seed"]) for r in doc["runs"]} == {(a, s) for a in ("first-fit", "best-fit") for s in (0, 1)}
    # common random numbers: same seed, same arrivals for both agents
    by = {(r["agent"], r["seed"]): r for r in doc["runs"]}
    for s in (0, 1):
        assert by[("first-fit", s)]["arrivals"] == by[("best-fit", s)]["arrivals"]
    runs = pd.read_csv(out_dir / "results.csv")
    assert len(runs) == 4 and set(RUN_FIELDS) - {"utilization"} <= set(runs.columns)
    summ = pd.read_csv(out_dir / "summary.csv")
    assert list(summ["agent"]) == ["first-fit", "best-fit"]
    assert "mean_queue_length_ci95" in summ.columns
    pngs = sorted(p.name for p in out_dir.glob("*.png"))
    assert pngs == ["mean_queue_length.png", "mean_queue_length_paired.png"]  # agents, and paired differences
    assert (out_dir / "mean_queue_length.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out_dir / "mean_queue_length.pdf").read_bytes()[:5] == b"%PDF-"
    assert b"<svg" in (out_dir / "mean_queue_length.svg").read_bytes()[:500]
    assert doc["p_adjust"] == "holm" and "mean_queue_length_diff_p_adj" in summ.columns
    assert summ.set_index("agent")["uses_oracle"].to_dict() == {"first-fit": False, "best-fit": False}
    long = pd.read_csv(out_dir / "summary_long.csv")
    assert len(long) == 2 * long["metric"].nunique() and {"mean", "lo", "hi", "diff_p_adj"} <= set(long.columns)


def test_compare_table_form():
    code, out, _ = _cli("compare", "bf-trap", "--agents", "first-fit,best-fit", "--seeds", "2", "--horizon", "20")
    assert code == 0
    assert "first-fit" in out and "best-fit" in out and "±" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def test_compare_on_a_suite_task_runs_the_tasks_episodes():
    """`compare rms-trap`: the task's episodes (its window), so each agent's mean queue length is minus
    its task score on the same seed; a task refuses what it fixes (exit 2)."""
    from clustergym.runner import Probe, run_episode
    from clustergym.suite import task
    from clustergym.suite.env import window_metrics

    code, out, _ = _cli("compare", "rms-trap", "--agents", "first-fit,mwr", "--seeds", "2", "--workers", "1", "--json")
    assert code == 0
    doc = _one_json(out)
    assert doc["task"] == "clustergym/rms-trap-v1" and doc["agents"] == ["first-fit", "mwr"]
    t = task("rms-trap")
    for row in doc["runs"]:
        ref = run_episode(
            t.scenario(), row["agent"], seed=row["seed"], env_id=t.id, probes={"task": Probe(window_metrics)}
        )
        assert row["mean_queue_length"] == pytest.approx(-ref["task"]["score"], rel=1e-12)
    assert len(doc["runs"]) == 4
    for extra in (["--horizon", "5"], ["--set", "zeta=0.5"], ["--warmup", "0"]):
        code, _, err = _cli("compare", "rms-trap", "--agents", "mwr", "--seeds", "1", *extra)
        assert code == 2 and "suite task 'rms-trap' fixes" in err


def test_compare_on_a_suite_task_ranks_by_the_tasks_metric():
    """`compare mris-poisson`'s scenario alone is compared on the mean weighted flow time (its episodes
    run to their last job); on the task's window the agents are compared on the task's metric, as
    `clustergym benchmark` scores them: the paired difference is that of the task scores."""
    from clustergym.runner import Probe, run_episode
    from clustergym.suite import task
    from clustergym.suite.env import window_metrics

    code, out, err = _cli(
        "compare", "clustergym/mris-poisson-v1", "--agents", "pq,first-fit", "--seeds", "2", "--workers", "1", "--json"
    )
    assert code == 0, err
    doc = _one_json(out)
    assert doc["metric"] == "mean_weighted_jobs_in_system"
    t = task("mris-poisson")
    score = {
        (a, s): run_episode(t.scenario(), a, seed=s, env_id=t.id, probes={"task": Probe(window_metrics)})["task"][
            "score"
        ]
        for a in ("pq", "first-fit")
        for s in (0, 1)
    }
    row = next(r for r in doc["summary"] if r["agent"] == "first-fit")
    want = sum(score["pq", s] - score["first-fit", s] for s in (0, 1)) / 2  # first-fit - pq, in the metric's sign
    assert row["mean_weighted_jobs_in_system_diff"] == pytest.approx(want, rel=1e-9)


def test_compare_unknown_agent_exits_2():
    code, out, err = _cli(
        "compare", "bf-trap", "--agents", "first-fit,nope-agent", "--seeds", "1", "--horizon", "5", "--json"
    )
    assert code == 2 and "nope-agent" in err and _only_error(out)


# =============================================================================== reproduce / bench
FOUNDATION_CLAIMS = ("rms-ec2-boundary", "rms-fig1b-interior")


def test_reproduce_json_reports_each_claim():
    code, out, err = _cli("reproduce", *FOUNDATION_CLAIMS, "--json")
    assert code == 0, err
    doc = _one_json(out)
    assert isinstance(doc, list) and [r["id"] for r in doc] == list(FOUNDATION_CLAIMS)
    for r in doc:
        for k in ("id", "paper", "claim", "measured", "expected", "passed"):
            assert k in r, (r.get("id"), k)
        assert r["passed"] is True, r


def test_reproduce_without_ids_lists_every_claim():
    code, out, err = _cli("reproduce", "--json")
    assert code == 0, err
    doc = _one_json(out)
    from clustergym.reproduce import CLAIMS, load_claims

    load_claims()
    assert {r["id"] for r in doc} == set(CLAIMS)
    assert set(FOUNDATION_CLAIMS) <= set(CLAIMS)
    assert all(set(r) == {"id", "paper", "claim"} for r in doc)


def test_reproduce_unknown_claim_exits_2():
    code, out, err = _cli("reproduce", "no-such-claim", "--json")
    assert code == 2 and "no-such-claim" in err and _only_error(out)


def test_bench_json_quick():
    # the replay vs SimPy is covered by tests/test_fastpath.py (the reference agrees on the fixture trace)
    code, out, err = _cli("bench", "--json", "--quick", "--no-replay")
    assert code == 0, err
    doc = _one_json(out)
    assert "replay" not in doc
    env = doc["env_steps"]  # suite tasks against CartPole-v1 in the same run
    assert env["cartpole_steps_per_s"] > 0 and [r["task"] for r in env["tasks"]] == ["rms-trap", "mris-poisson"]
    for r in env["tasks"]:
        assert r["ratio_to_cartpole"] == pytest.approx(r["steps_per_s"] / r["cartpole_steps_per_s"])  # one round
        assert r["ratio_min"] == pytest.approx(r["ratio_to_cartpole"])
        assert r["batched_steps_per_s"] > 0 and r["n_envs"] == 4
    ppo = doc["ppo"]
    assert ppo["env_steps"] >= ppo["timesteps"] and 0 < ppo["env_share"] < 1
    rows = doc["benchmarks"]
    for servers in (20, 1000):
        mine = [r for r in rows if r["scenario"] == "ec2" and r["servers"] == servers]
        assert mine, f"no ec2 benchmark with {servers} servers"
        for r in mine:
            assert r["events_per_second"] > 0 and r["steps_per_second"] > 0
            assert r["events"] > 0 and r["steps"] > 0


def test_no_arguments_shows_help():
    result = runner.invoke(app, [])
    assert "run" in result.output and "compare" in result.output
