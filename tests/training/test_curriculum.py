"""Curricula (``clustergym train --stage``): stages on other loads and cluster sizes, then the task.

Budgets are tiny: these tests check that each stage trains on what it says (the task's observation
on a changed scenario, another number of servers), that the run records and resumes its stages,
and that bad stages are refused before anything runs; not that a curriculum helps
(experiments/log.md, round 7).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from gymnasium.wrappers import TimeLimit
from typer.testing import CliRunner

from clustergym.cli import app
from clustergym.cli.values import parse_stage
from clustergym.errors import ConfigError
from clustergym.learned import load_model_agent
from clustergym.suite import find_task, make_task_env
from clustergym.training.curriculum import Stage, check_stages, phases
from clustergym.training.train import make_train_env

pytestmark = pytest.mark.usefixtures("quiet_warnings")
runner = CliRunner()

#: tiny PPO settings: rollouts of 128 steps (2 envs x 64), one epoch
TINY = ["--envs", "2", "--set", "algo.n_steps=64", "--set", "algo.batch_size=64", "--set", "algo.n_epochs=1"]


def test_stages_parse_check_and_split_the_run():
    assert parse_stage("100_000:load=1.5,num_servers=10") == (100_000, {"load": 1.5, "num_servers": 10})
    for bad in ("load=1.5", "0:load=1.5", "x:load=1.5", "100:", "100:load"):
        with pytest.raises(ConfigError, match="--stage"):
            parse_stage(bad)
    stages = check_stages([(100, {"load": 1.5}), {"steps": 50, "params": {"num_servers": 4}}], 200)
    assert stages == [Stage(100, {"load": 1.5}), Stage(50, {"num_servers": 4})]
    assert phases(stages, 200) == [(100, {"load": 1.5}), (150, {"num_servers": 4}), (200, {})]
    assert phases(stages, 150) == [(100, {"load": 1.5}), (150, {"num_servers": 4})]  # no step on the task itself
    with pytest.raises(ConfigError, match="more than --timesteps"):
        check_stages(stages, 149)
    with pytest.raises(ConfigError, match="at least one scenario parameter"):
        check_stages([(10, {})], 100)


def test_a_stage_on_a_task_keeps_the_task_environment_on_the_changed_scenario():
    """The stage's env is the task's (its observation keys, scaled features, action mode) on the
    preset with the stage's parameters: 1.5 times the arrivals; another size changes only the
    server axis.  Training on the preset itself would show the raw environment's features."""
    task = find_task("autoscale-syn4")
    kwargs = task.env_kwargs()
    plain = make_task_env("autoscale-syn4")
    loaded = make_train_env("autoscale-syn4", {}, kwargs, "equivariant", stage_params={"load": 1.5})
    bigger = make_train_env("autoscale-syn4", {}, kwargs, "equivariant", stage_params={"num_servers": 14})
    assert loaded.observation_space == plain.observation_space and loaded.action_space == plain.action_space
    assert list(bigger.observation_space.spaces) == list(plain.observation_space.spaces)
    assert bigger.observation_space["free"].shape == (14, plain.observation_space["free"].shape[1])
    base = plain.unwrapped.scenario.source.arrival_rates()
    np.testing.assert_allclose(loaded.unwrapped.scenario.source.arrival_rates(), 1.5 * base)
    assert loaded.unwrapped.scenario.horizon == task.horizon
    # the task's feature scaling: counts through log1p (the raw env shows them as they are)
    obs, _ = loaded.reset(seed=0)
    for _ in range(300):
        obs, *_ = loaded.step(int(np.flatnonzero(obs["action_mask"])[0]))
    counts = np.expm1(obs["running"])
    assert counts.max() >= 2 and np.allclose(counts, np.round(counts), atol=1e-4)
    assert not np.allclose(obs["running"], np.round(obs["running"]))
    # a TimeLimit bounds its steps, the task's bound scaled by the arrival rate
    env, bounds = loaded, []
    while hasattr(env, "env"):
        if isinstance(env, TimeLimit):
            bounds.append(env._max_episode_steps)
        env = env.env
    assert bounds == [int(np.ceil(task.max_episode_steps * 1.5))]


def test_curriculum_run_trains_each_stage_records_it_and_resumes_inside_it(tmp_path):
    """Stages at load 1.5, then on 6 servers, then the task (10 servers): the model moves between
    sizes with its weights, evaluations score the task, model.json records the stages, and a run
    resumed from a checkpoint inside the 6-server stage continues there (its model only loads on
    the 6-server envs) and finishes on the task."""
    out = tmp_path / "run"
    args = ["train", "autoscale-syn4", "--timesteps", "640", "--out", str(out), "--no-progress", *TINY]
    stages = ["--stage", "128:load=1.5", "--stage", "256:num_servers=6"]
    res = runner.invoke(app, [*args, *stages, "--eval-agents", "best-fit-admit", "--eval-seeds", "1"])
    assert res.exit_code == 0, res.output
    assert "[stage @ 128] {'num_servers': 6}" in res.stdout and "[stage @ 384] the scenario itself" in res.stdout
    meta = json.loads((out / "model.json").read_text())
    assert meta["curriculum"] == [{"steps": 128, "params": {"load": 1.5}}, {"steps": 256, "params": {"num_servers": 6}}]
    assert meta["timesteps"] == 640 and meta["scenario"] == "autoscale-syn4"
    ev = pd.read_csv(out / "eval.csv")
    assert sorted(set(ev["step"])) == [128, 384, 640]  # the end of each stage, on the task
    assert ev["wall_seconds"].is_monotonic_increasing
    agent = load_model_agent(str(out / "model.zip"))
    assert agent.policy.observation_space["free"].shape[0] == 10
    ckpt = out / "checkpoints" / "rl_model_256_steps.zip"
    assert ckpt.is_file()
    res = runner.invoke(app, ["train", "--resume", str(ckpt), "--timesteps", "640", "--no-progress"])
    assert res.exit_code == 2 and "2 later checkpoints and its final model" in " ".join(res.stderr.split())
    # --overwrite goes back to the checkpoint: the run's later work is removed, not mixed in
    res = runner.invoke(app, ["train", "--resume", str(ckpt), "--timesteps", "640", "--no-progress", "--overwrite"])
    assert res.exit_code == 0, res.output
    assert sorted(set(pd.read_csv(out / "eval.csv")["step"])) == [128, 384, 640]
    assert "[stage @ 384] the scenario itself" in res.stdout
    assert json.loads((out / "model.json").read_text())["curriculum"] == meta["curriculum"]
    res = runner.invoke(
        app, ["train", "--resume", str(out), "--timesteps", "768", "--no-progress", "--stage", "64:load=2"]
    )
    assert res.exit_code == 2 and "drop --stage" in res.stderr


@pytest.mark.parametrize(
    ("scenario", "extra", "message"),
    [
        ("autoscale-syn4", ["--stage", "64:horizon=5"], "not 'horizon'"),
        ("autoscale-syn4", ["--stage", "64:queue_window=4"], "not 'queue_window'"),
        ("autoscale-syn4", ["--stage", "64:lod=1.5"], "lod"),
        ("autoscale-syn4", ["--stage", "64:load=1.5", "--stage", "128:load=1.2"], "more than --timesteps"),
        ("autoscale-syn4", ["--stage", "64:num_servers=6", "--policy", "mlp", "--algo", "ppo"], "mlp policy"),
        ("autoscale-syn4", ["--stage", "64:num_servers=6", "--set", "policy.server_ids=true"], "server_ids"),
        ("autoscale-syn4", ["--stage", "sixty:load=1.5"], "STEPS:key=value"),
    ],
)
def test_bad_stages_exit_2_before_training(tmp_path, scenario, extra, message):
    out = tmp_path / "run"
    res = runner.invoke(
        app, ["train", scenario, "--timesteps", "128", "--out", str(out), "--no-progress", *TINY, *extra]
    )
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.stderr.split()) and "Traceback" not in res.output
    assert not (out / "model.zip").exists()
