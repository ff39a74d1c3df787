"""``clustergym benchmark`` and the suite's scoring of agents and saved models: normalized scores,
aggregates, errors (exit 2, no traceback), and a model trained by ``clustergym train`` on a task."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import clustergym  # noqa: F401
from clustergym.cli import app
from clustergym.errors import ConfigError
from clustergym.suite.reference import load_reference, normalized
from clustergym.suite.scoring import evaluate

pytestmark = pytest.mark.usefixtures("quiet_warnings")

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _cli(*args: str):
    result = runner.invoke(app, ["benchmark", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    "args,message",
    [
        (["best-fit", "--tasks", "rms-trap,no-such-task"], "unknown suite task 'no-such-task'"),
        (["best-fit", "--tasks", ","], "expected comma-separated task names"),
        (["best-fit", "--seeds", "0"], "--seeds"),
        (["best-fit", "--seeds", "101"], "--seeds"),
        (["no-such-agent", "--tasks", "rms-trap", "--seeds", "1"], "unknown agent 'no-such-agent'"),
        (["runs/none/model.zip", "--tasks", "rms-trap", "--seeds", "1"], "no such model file"),
        (["best-fit-admit", "--tasks", "rms-trap", "--seeds", "1"], "no task the agents can run"),
        (["best-fit", "--reference"], "give no agent with it"),
        ([], "give an agent or model"),
        (["best-fit", "--workers", "0"], "--workers"),
    ],
)
def test_bad_input_exits_2_with_a_message_and_no_traceback(args, message):
    code, out, err = _cli(*args)
    assert code == 2
    assert message in " ".join(err.split())
    assert "Traceback" not in err and out == ""


def test_bad_task_exits_2_from_a_real_process():
    proc = subprocess.run(
        [sys.executable, "-m", "clustergym", "benchmark", "random", "--tasks", "rms-trp"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 2 and "unknown suite task 'rms-trp'" in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr


def test_benchmark_json_scores_and_normalizes_against_the_reference():
    code, out, err = _cli(
        "best-fit", "random", "--tasks", "rms-trap,mris-poisson", "--seeds", "3", "--workers", "1", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    ref = load_reference()
    for name in ("rms-trap", "mris-poisson"):
        runs = doc["tasks"][name]["runs"]
        entry = ref["tasks"][name]
        # the first three reference seeds: the benchmark's scores are the reference's, seed by seed
        for spec in ("best-fit", "random"):
            assert runs[spec]["scores"] == entry["agents"][spec]["scores"][:3]
            assert runs[spec]["normalized"] == pytest.approx(normalized(runs[spec]["mean"], entry))
        # the paired difference with the best baseline, seed by seed on the same seeds
        best = entry["agents"][entry["best"]]["scores"][:3]
        for spec in ("best-fit", "random"):
            diffs = [a - b for a, b in zip(runs[spec]["scores"], best)]
            assert runs[spec]["paired_seeds"] == 3
            assert runs[spec]["paired_vs_best"] == pytest.approx(sum(diffs) / 3)
            assert runs[spec]["paired_vs_best_ci95"] > 0
    agg = doc["aggregate"]
    assert set(agg["per_spec"]) == {"best-fit", "random"} and "over_specs" in agg
    assert agg["per_spec"]["best-fit"]["tasks"] == 2 and agg["per_spec"]["best-fit"]["runs"] == 3


def test_the_best_baseline_paired_with_itself_differs_by_nothing():
    res = evaluate(["mwr"], ["rms-trap"], seeds=2, workers=1)
    r = res["tasks"]["rms-trap"]["runs"]["mwr"]
    assert res["tasks"]["rms-trap"]["best"] == "mwr"
    assert r["paired_vs_best"] == 0.0 and r["paired_vs_best_ci95"] == 0.0 and r["paired_seeds"] == 2


def test_evaluate_reports_tasks_an_agent_cannot_run():
    res = evaluate(["random", "rms"], ["rms-trap", "autoscale-syn4"], seeds=1, workers=1)
    assert "autoscale-syn4/rms" in res["skipped"]
    assert set(res["tasks"]["autoscale-syn4"]["runs"]) == {"random"}
    with pytest.raises(ConfigError, match="seeds"):
        evaluate(["random"], ["rms-trap"], seeds=0)


def test_reference_regeneration_writes_a_document_with_random_and_baselines(tmp_path):
    code, out, err = _cli(
        "--reference", "--tasks", "autoscale-syn4", "--seeds", "2", "--workers", "1", "--out", str(tmp_path), "--json"
    )
    assert code == 0, err
    doc = json.loads((tmp_path / "reference.json").read_text())
    e = doc["tasks"]["autoscale-syn4"]
    assert doc["seeds"] == [1_000_000, 1_000_001]
    assert (
        e["agents"]["random"]["scores"] == load_reference()["tasks"]["autoscale-syn4"]["agents"]["random"]["scores"][:2]
    )
    assert e["best"] is not None and not e["agents"][e["best"]]["oracle"]
    assert normalized(e["random"], e) == 0.0 and normalized(e["best_score"], e) == 1.0
    assert json.loads(out)["path"] == str(tmp_path / "reference.json")


def test_plot_of_the_reference(tmp_path):
    code, _, err = _cli("--plot", str(tmp_path / "ref.png"))
    assert code == 0, err
    assert (tmp_path / "ref.png").stat().st_size > 10_000


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_a_model_trained_unmasked_on_a_task_is_benchmarked_by_path(tmp_path, algo):
    """clustergym train on a suite id: the task's settings apply (invalid actions wait), the model is
    evaluated without masks, and `clustergym benchmark MODEL` scores it."""
    from clustergym.training.train import train

    sets = (
        {"algo.n_steps": 64, "algo.batch_size": 32}
        if algo == "ppo"
        else {"algo.learning_starts": 32, "algo.buffer_size": 1000}
    )
    path = train(
        "clustergym/rms-trap-v1", algo, timesteps=128, n_envs=1, policy="mlp", out=tmp_path / "m", verbose=False, **sets
    )
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    assert meta["task"] == "clustergym/rms-trap-v1" and meta["masked"] is False
    assert meta["train_env_kwargs"]["invalid_action"] == "wait" and meta["env_kwargs"]["action_mode"] == "slot"
    code, out, err = _cli(str(path), "--tasks", "rms-trap", "--seeds", "2", "--workers", "1", "--json")
    assert code == 0, err
    run = json.loads(out)["tasks"]["rms-trap"]["runs"][str(path)]
    assert run["complete"] == 2 and all(math.isfinite(s) for s in run["scores"])


def test_train_refuses_scenario_parameters_on_a_task(tmp_path):
    from clustergym.training.train import train

    with pytest.raises(ConfigError, match="fixes its scenario and horizon"):
        train("rms-trap", "ppo", timesteps=10, n_envs=1, policy="mlp", out=tmp_path, num_servers=3)
    with pytest.raises(ConfigError, match="fixes its scenario and horizon"):
        train("rms-trap", "ppo", timesteps=10, n_envs=1, policy="mlp", out=tmp_path, horizon=3)
    # the hint names a curriculum stage (the task's own environment on another value) ...
    with pytest.raises(ConfigError, match="--stage STEPS:num_servers=VALUE trains on another value"):
        train("rms-trap", "ppo", timesteps=10, n_envs=1, policy="mlp", out=tmp_path, num_servers=3)
    # ... and the way to the preset: by name, or (when the task has its preset's name) by a file
    with pytest.raises(ConfigError, match="train on the preset 'bf-trap'"):
        train("rms-trap", "ppo", timesteps=10, n_envs=1, policy="mlp", out=tmp_path, num_servers=3)
    with pytest.raises(ConfigError, match="scenario file with 'preset: mris-poisson'"):
        train("mris-poisson", "ppo", timesteps=10, n_envs=1, policy="mlp", out=tmp_path, load=0.95)
    f = tmp_path / "mris.yaml"
    f.write_text("preset: mris-poisson\nparams:\n  load: 0.95\n")
    train(
        str(f), "ppo", timesteps=64, n_envs=1, policy="mlp", out=tmp_path / "r", verbose=False, **{"algo.n_steps": 64}
    )
    meta = json.loads((tmp_path / "r" / "model.json").read_text())
    assert meta["task"] is None and meta["scenario"] == str(f.resolve())


def test_a_new_agent_registered_in_python_is_benchmarked_on_worker_processes():
    """The documented way to score a new agent: register it, then evaluate it by name.  The cells
    carry its factory to the worker processes, which have never heard of it."""
    from clustergym.agent_api import AGENTS, register_agent
    from clustergym.baselines.greedy import FirstFit

    class MyFirstFit(FirstFit):
        """First-Fit under another name (a user's agent, defined outside clustergym)."""

    register_agent("test-my-first-fit", MyFirstFit)
    try:
        res = evaluate(["test-my-first-fit"], ["rms-trap"], seeds=2, workers=2)
    finally:
        AGENTS.pop("test-my-first-fit")
    run = res["tasks"]["rms-trap"]["runs"]["test-my-first-fit"]
    assert run["scores"] == load_reference()["tasks"]["rms-trap"]["agents"]["first-fit"]["scores"][:2]
