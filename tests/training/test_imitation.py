"""Behaviour-cloning warm start (``clustergym train --warm-start``) and what it stands on:
``ActionMode.encode`` inverts ``decode``; the recorded demonstrations replay the teacher
exactly; cloning makes the policy act like the teacher; bad teachers are clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch as th
from typer.testing import CliRunner

from clustergym.cli import app
from clustergym.core.commands import Command
from clustergym.envs import make_env
from clustergym.errors import ConfigError
from clustergym.learned import load_model_agent
from clustergym.learned.policies import EquivariantMaskablePolicy
from clustergym.runner import run_episode
from clustergym.scenarios import make_preset
from clustergym.training.imitation import clone, collect_demonstrations, return_scale
from clustergym.training.train import make_train_env

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("quiet_warnings")


def _busy(env, steps: int = 30, seed: int = 0):
    """A state with jobs waiting and servers partly full (WAIT at every third step)."""
    obs, _ = env.reset(seed=seed)
    for i in range(steps):
        valid = np.flatnonzero(obs["action_mask"])
        obs, *_ = env.step(int(valid[-1] if i % 3 == 0 else valid[0]))
    return obs


# ============================================================== encode inverts decode
@pytest.mark.parametrize(
    "mode, scenario, params",
    [
        ("head", "bf-trap", {"num_servers": 4}),
        ("slot", "bf-trap", {"num_servers": 4}),
        ("admit", "autoscale-4vm", {"num_servers": 4}),
    ],
)
def test_encode_inverts_decode_on_every_valid_action(mode, scenario, params):
    env = make_env(scenario, action_mode=mode, queue_window=4, horizon=5.0, **params)
    obs = _busy(env)
    m = env.unwrapped.mode
    valid = np.flatnonzero(obs["action_mask"])
    assert valid.size > 1  # a state with real choices
    for a in valid:
        assert m.encode(m.decode(int(a))) == int(a)


def test_encode_returns_none_for_commands_the_mode_cannot_express():
    env = make_env("bf-trap", action_mode="slot", queue_window=2, horizon=5.0, num_servers=2, rate1=40.0, rate2=20.0)
    _busy(env, steps=40)
    m = env.unwrapped.mode
    outside = [j for j in env.unwrapped.sim.queue][2:]
    assert outside, "the queue should be longer than the window"
    assert m.encode(Command.place(outside[0], 0)) is None  # beyond the queue window
    assert m.encode(Command.dummy(0, 0)) is None
    adm = make_env("autoscale-4vm", action_mode="admit", horizon=5.0, num_servers=3)
    _busy(adm, steps=3)
    assert adm.unwrapped.mode.encode(Command.place(0, 0)) is None


# ============================================================== demonstrations and cloning
def _admit_env():
    """The environment ``train`` records demonstrations in (its epochs, trivial epochs skipped)."""
    return make_train_env("autoscale-4vm", {"num_servers": 5}, {"action_mode": "admit", "horizon": 4.0}, "equivariant")


def test_demonstrations_replay_the_teacher_exactly():
    """The first recorded episode earns, reward for reward, what the teacher earns when run alone."""
    env = _admit_env()
    demos = collect_demonstrations(env, "best-fit-admit", steps=400, seed=7)
    first_end = int(np.flatnonzero(demos.episode_end)[0])
    alone = run_episode(make_preset("autoscale-4vm", num_servers=5), "best-fit-admit", seed=7, horizon=4.0)
    assert demos.rewards[: first_end + 1].sum() == pytest.approx(alone["return"], rel=1e-9)
    assert len(demos) == 400 and demos.episode_end[-1]
    assert set(demos.obs) == set(env.observation_space.spaces)
    assert all(v.shape[0] == 400 for v in demos.obs.values())


def _policy(env, seed=0):
    th.manual_seed(seed)
    return EquivariantMaskablePolicy(
        env.observation_space, env.action_space, lambda _: 3e-4, action_mode="admit", hidden=32, use_time=False
    )


def test_cloning_makes_the_policy_act_like_the_teacher():
    env = _admit_env()
    demos = collect_demonstrations(env, "first-fit-admit", steps=1500, seed=0)
    _, scale = return_scale(demos, 0.9)  # gamma 0.9: returns-to-go are accurate 30 decisions before an end
    policy = _policy(env)
    before = clone(policy, demos, gamma=0.9, scale=scale, epochs=0)
    after = clone(policy, demos, gamma=0.9, scale=scale, epochs=15)
    assert after["accuracy"] > 0.9 > before["accuracy"] + 0.2
    assert after["actor_loss"] < before["actor_loss"] / 3
    assert after["critic_samples"] > 500 and after["critic_loss"] < before["critic_loss"] / 2
    assert after["dropped"] == 0


def test_train_with_warm_start_records_it_and_starts_at_the_teachers_level(tmp_path):
    out = tmp_path / "ws"
    res = runner.invoke(
        app,
        [
            "train",
            "autoscale-4vm",
            "--algo",
            "maskable-ppo",
            "--timesteps",
            "64",
            "--envs",
            "1",
            "--out",
            str(out),
            "--no-progress",
            "--warm-start",
            "first-fit-admit",
            "--warm-start-steps",
            "2000",
            "--warm-start-epochs",
            "15",
            "--set",
            "num_servers=5",
            "--set",
            "horizon=4",
            "--set",
            "algo.n_steps=64",
            "--set",
            "algo.learning_rate=0.0",
        ],
    )
    assert res.exit_code == 0, res.output
    meta = json.loads((out / "model.json").read_text())
    ws = meta["warm_start"]
    assert ws["teacher"] == "first-fit-admit" and ws["samples"] == 2000 and ws["accuracy"] > 0.9
    # the run's CPU is the whole process's, the cloning included, and model.json says which parts
    parts = meta["seconds_last_run_parts"]
    assert list(parts) == ["setup", "warm_start", "learn", "save"]
    assert parts["warm_start"]["cpu_seconds"] == ws["cpu_seconds"] > 0
    assert meta["cpu_seconds_last_run"] == pytest.approx(sum(p["cpu_seconds"] for p in parts.values()))
    assert meta["cpu_seconds_last_run"] > parts["learn"]["cpu_seconds"] + ws["cpu_seconds"] * 0.99
    assert meta["wall_seconds_last_run"] >= ws["wall_seconds"]
    sc = make_preset("autoscale-4vm", num_servers=5)
    learned = np.mean(
        [
            run_episode(sc, load_model_agent(str(out / "model.zip")), seed=s, horizon=8.0)["reward_rate"]
            for s in range(3)
        ]
    )
    teacher = np.mean([run_episode(sc, "first-fit-admit", seed=s, horizon=8.0)["reward_rate"] for s in range(3)])
    untrained = tmp_path / "none"
    res = runner.invoke(
        app,
        [
            "train",
            "autoscale-4vm",
            "--algo",
            "maskable-ppo",
            "--timesteps",
            "64",
            "--envs",
            "1",
            "--out",
            str(untrained),
            "--no-progress",
            "--set",
            "num_servers=5",
            "--set",
            "horizon=4",
            "--set",
            "algo.n_steps=64",
            "--set",
            "algo.learning_rate=0.0",
        ],
    )
    assert res.exit_code == 0, res.output
    random_start = np.mean(
        [
            run_episode(sc, load_model_agent(str(untrained / "model.zip")), seed=s, horizon=8.0)["reward_rate"]
            for s in range(3)
        ]
    )
    assert abs(learned - teacher) < 0.05 * teacher
    assert abs(learned - teacher) < abs(random_start - teacher)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--warm-start", "first-fit-admit", "--policy", "mlp"], "behaviour-cloning warm start trains"),
        (["--warm-start", "best-fit"], "works with queueing"),
        (["--warm-start", "gpa-static"], "cannot express"),
        (["--warm-start", "first-fit-admit", "--warm-start-steps", "0"], "warm_start_steps"),
    ],
)
def test_bad_warm_start_exits_2_naming_the_problem(tmp_path, args, message):
    res = runner.invoke(
        app,
        [
            "train",
            "autoscale-4vm",
            "--algo",
            "maskable-ppo",
            "--timesteps",
            "64",
            "--envs",
            "1",
            "--out",
            str(tmp_path),
            "--no-progress",
            "--set",
            "num_servers=5",
            "--set",
            "horizon=2",
            *args,
        ],
    )
    assert res.exit_code == 2, res.output
    assert message in res.stderr


def test_collect_demonstrations_refuses_a_teacher_for_another_queueing_mode():
    with pytest.raises(ConfigError, match="works with queueing"):
        collect_demonstrations(_admit_env(), "best-fit", steps=10, seed=0)


# ============================================================== teachers beyond the queue window
def test_mwr_teaches_in_slot_mode_through_equivalent_jobs():
    """MaxWeight picks a job *type* and takes the oldest job of it anywhere in the queue: the
    demonstrations imitate an indistinguishable job of the window instead, and run (without
    imitating) the teacher's command when the window holds no such job."""
    from clustergym.suite import find_task
    from clustergym.training.imitation import equivalent_command

    t = find_task("rms-trap")
    env = make_train_env("rms-trap", {}, t.env_kwargs(), "equivariant")
    demos = collect_demonstrations(env, "mwr", 1500, seed=3)
    assert len(demos) == 1500
    a = demos.actions
    assert (a >= -1).all() and (a >= 0).any()
    mask = demos.obs["action_mask"]
    ok = a >= 0
    assert mask[np.flatnonzero(ok), a[ok]].all()  # every imitated action is valid where it was taken
    # the substitution keeps what the policy sees: same type, same demand; a WAIT is unchanged
    base = env.unwrapped
    obs, _ = env.reset(seed=11)
    sim = base.sim
    for _ in range(200):  # run until the queue is longer than the window
        obs, *_ = env.step(int(np.flatnonzero(obs["action_mask"])[-1]))  # WAIT: the queue grows
        if len(sim.queue) > base.mode.queue_window:
            break
    queue = list(sim.queue)
    assert len(queue) > base.mode.queue_window
    deep = queue[-1]
    cmd = equivalent_command(base, Command.place(deep, 0))
    if cmd.job != deep:
        assert cmd.job in base.mode.window()
        assert sim.jobs.type[cmd.job] == sim.jobs.type[deep]
        assert np.array_equal(sim.jobs.demand[cmd.job], sim.jobs.demand[deep])
    assert equivalent_command(base, Command.wait()).kind == Command.wait().kind


def test_a_teacher_that_mirrors_the_queue_keeps_its_own_trajectory():
    """BF-S keeps a mirror of the queue by job id and expects every slot's epoch.  Shown every epoch
    (``skip_trivial=False``, as ``train`` builds the teacher's env), with its own command run whenever
    its job lies beyond the window (the label is then a job like it inside, or none): the recorded
    decisions are those with a choice, and their rewards add up to BF-S's own episode's return."""
    from clustergym.suite import find_task

    t = find_task("bfjs-uniform")
    env = make_train_env(
        "bfjs-uniform", {}, {**t.env_kwargs(), "queue_window": 4, "skip_trivial": False}, "equivariant"
    )
    demos = collect_demonstrations(env, "bf-s", 1200, seed=5)
    assert (np.count_nonzero(demos.obs["action_mask"], axis=1) > 1).all()  # only decisions with a choice
    placed = (demos.actions >= 0) & (demos.actions < env.action_space.n - 1)
    assert placed.sum() > 100 and (demos.actions == -1).any()
    first = int(np.flatnonzero(demos.episode_end)[0]) + 1
    assert first < len(demos)  # the first episode ended within the demonstrations
    own = run_episode(t.scenario(), "bf-s", seed=5, env_id=t.id)
    assert demos.rewards[:first].sum() == pytest.approx(own["return"], rel=1e-9)


def test_clone_ignores_inexpressible_decisions():
    from clustergym.suite import find_task

    t = find_task("rms-trap")
    env = make_train_env("rms-trap", {}, t.env_kwargs(), "equivariant")
    demos = collect_demonstrations(env, "mwr", 600, seed=4)
    demos.actions[::3] = -1  # as if every third decision had been beyond the window
    policy = EquivariantMaskablePolicy(
        env.observation_space, env.action_space, lambda _: 1e-3, action_mode="slot", hidden=16, use_time=False
    )
    stats = clone(policy, demos, gamma=0.99, scale=1.0, epochs=1, seed=0)
    n = int((demos.actions < 0).sum())
    assert n >= 200 and stats["inexpressible"] == n and stats["dropped"] >= n
