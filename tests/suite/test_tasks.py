"""The suite's tasks as Gymnasium environments: ids, observation, unmasked use,
determinism (in-process, across processes, in vector envs), check_env, and the start."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import clustergym  # noqa: F401  (registers the ids)
from clustergym.errors import ConfigError
from clustergym.suite import (
    EVAL_SEEDS,
    SUITE_IDS,
    TASKS,
    find_task,
    make_task_env,
    task,
)
from clustergym.suite.env import FEATURE_CAP, OBSERVATION_KEYS, window_metrics
from clustergym.suite.reference import traces_available

pytestmark = pytest.mark.usefixtures("quiet_warnings")

ROOT = Path(__file__).resolve().parents[2]
HAVE_TRACES = traces_available()
needs_traces = pytest.mark.skipif(
    not HAVE_TRACES,
    reason="the real traces are absent: set CLUSTERGYM_TRACES to the trace directory to run the azure-vms task",
)


def _params(names=None):
    """One pytest param per task; the trace task skips without the traces."""
    out = []
    for name in names or TASKS:
        marks = [needs_traces] if TASKS[name].needs_traces else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


def test_every_task_has_a_registered_versioned_id():
    assert SUITE_IDS == [f"clustergym/{n}-v1" for n in TASKS]
    for i in SUITE_IDS:
        spec = gym.spec(i)
        assert spec.max_episode_steps == TASKS[spec.kwargs["task"]].max_episode_steps
    papers = {t.paper for t in TASKS.values()}
    assert {"rms", "bfjs", "autoscale", "lotes", "mris", "trace"} <= papers


@pytest.mark.parametrize("name", ["rms-trap", "clustergym/rms-trap-v1", "rms-trap-v1", " rms-trap "])
def test_find_task_accepts_names_and_ids(name):
    assert find_task(name) is TASKS["rms-trap"]


@pytest.mark.parametrize("name", ["rms-trp", "clustergym/rms-trap-v0", "rms-trap-v2", ""])
def test_a_bad_task_name_is_a_config_error_listing_the_tasks(name):
    assert find_task(name) is None
    with pytest.raises(ConfigError, match="unknown suite task.*rms-trap, bfjs-uniform"):
        task(name)


def test_a_task_refuses_scenario_parameters_and_horizon():
    with pytest.raises(ConfigError, match="fixes its scenario and horizon"):
        make_task_env("rms-trap", horizon=100)
    with pytest.raises(ConfigError, match="num_servers"):
        make_task_env("rms-trap", num_servers=20)


def test_eval_seeds_are_disjoint_from_the_training_seeds_of_clustergym_train():
    # clustergym train seeds its envs with 10_000 + 100 * seed + i (then 63-bit draws)
    assert min(EVAL_SEEDS) >= 1_000_000 and len(EVAL_SEEDS) >= 30


@pytest.mark.parametrize("name", _params())
def test_observation_keys_in_the_space_order_no_clock_bounded(name):
    env = gym.make(f"clustergym/{name}-v1")
    space = env.observation_space
    assert list(space.spaces) == list(OBSERVATION_KEYS) and "time" not in space.spaces
    obs, info = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(300):
        assert list(obs) == list(space.spaces)
        assert space.contains(obs)
        # flattening the dict in its own order is Gymnasium's flatten
        flat = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in obs.values()])
        assert np.array_equal(flat, gym.spaces.flatten(space, obs))
        for k, v in obs.items():
            if k != "action_mask":
                assert v.min() >= 0.0 and v.max() <= FEATURE_CAP
        obs, _, term, trunc, info = env.step(int(rng.integers(env.action_space.n)))
        assert np.isfinite(info["score"])
        if term or trunc:
            break


@pytest.mark.parametrize("name", _params())
def test_an_unmasked_agent_completes_episodes(name):
    """Uniformly random actions without a mask: invalid ones act as WAIT, time moves on, and the
    episode reaches its horizon well within the step bound."""
    t = TASKS[name]
    env = gym.make(t.id)
    env.reset(seed=11)
    rng = np.random.default_rng(1)
    steps, invalid, done = 0, 0, False
    while not done:
        _, _, term, trunc, info = env.step(int(rng.integers(env.action_space.n)))
        steps += 1
        invalid += bool(info["invalid_action"])
        done = term or trunc
    assert invalid > 0
    assert steps < t.max_episode_steps
    assert info["task"]["complete"] and info["task"]["window"] == pytest.approx(t.horizon)
    assert info["task"]["score"] == info["score"]


def test_the_step_bound_is_reported_as_truncation():
    env = gym.make("clustergym/rms-trap-v1", max_episode_steps=50)
    env.reset(seed=0)
    for _ in range(50):
        _, _, term, trunc, _ = env.step(env.unwrapped.action_space.n - 1)  # WAIT
    assert trunc and not term
    m = window_metrics(env)
    assert not m["complete"] and m["window"] < TASKS["rms-trap"].horizon


def _trajectory(env_id: str, seed: int, steps: int) -> str:
    env = gym.make(env_id)
    obs, _ = env.reset(seed=seed)
    h = hashlib.sha256()
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        mask = np.flatnonzero(obs["action_mask"])
        obs, r, term, trunc, _ = env.step(int(rng.choice(mask)))
        h.update(np.float64(r).tobytes())
        for v in obs.values():
            h.update(np.ascontiguousarray(v).tobytes())
        if term or trunc:
            break
    return h.hexdigest()


@pytest.mark.parametrize("env_id", ["clustergym/mris-poisson-v1", "clustergym/bfjs-uniform-v1"])
def test_same_seed_same_trajectory_in_process_and_across_processes(env_id):
    a = _trajectory(env_id, 1_000_003, 400)
    assert a == _trajectory(env_id, 1_000_003, 400)
    assert a != _trajectory(env_id, 1_000_004, 400)
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        f"from test_tasks import _trajectory; print(_trajectory({env_id!r}, 1_000_003, 400))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip().splitlines()[-1] == a


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_envs_reproduce_single_envs(mode):
    env_id, seed, n, steps = "clustergym/autoscale-syn4-v1", 1_000_010, 2, 150
    venv = gym.make_vec(env_id, num_envs=n, vectorization_mode=mode)
    singles = [gym.make(env_id) for _ in range(n)]
    vobs, _ = venv.reset(seed=seed)
    sobs = [e.reset(seed=seed + i)[0] for i, e in enumerate(singles)]
    try:
        for _ in range(steps):
            for i in range(n):
                for k in sobs[i]:
                    assert np.array_equal(vobs[k][i], sobs[i][k]), k
            acts = np.array([int(np.flatnonzero(o["action_mask"])[0]) for o in sobs])
            vobs, vr, vterm, vtrunc, _ = venv.step(acts)
            for i, e in enumerate(singles):
                sobs[i], r, term, trunc, _ = e.step(int(acts[i]))
                assert vr[i] == r and vterm[i] == term and vtrunc[i] == trunc
                assert not (term or trunc)
    finally:
        venv.close()


@pytest.mark.parametrize("name", _params())
def test_suite_ids_pass_gymnasium_and_sb3_check_env(name):
    from gymnasium.utils.env_checker import check_env as gym_check
    from stable_baselines3.common.env_checker import check_env as sb3_check

    gym_check(gym.make(f"clustergym/{name}-v1"), skip_render_check=True)
    sb3_check(gym.make(f"clustergym/{name}-v1"), warn=False)


def test_rewards_pay_the_objective_and_the_score_is_the_window_metric():
    """rms-trap: reward scale 1, so the return is minus the queue's time integral (the invalid
    penalties aside), and the score is minus the mean queue length over the window."""
    t = TASKS["rms-trap"]
    env = gym.make(t.id)
    obs, _ = env.reset(seed=5)
    total, done = 0.0, False
    while not done:
        obs, r, term, trunc, info = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        total += r
        done = term or trunc
    m = info["task"]
    assert m["metric"] == "mean_queue_length" and m["window"] == t.horizon
    assert total == pytest.approx(m["score"] * t.horizon, rel=1e-9)
    assert m["score"] == pytest.approx(-env.unwrapped.metrics()["mean_queue_length"], rel=1e-12)


@needs_traces
def test_azure_warm_start_places_the_jobs_in_flight_before_the_first_decision():
    """The VMs running at the window's start arrive at 0 and first-fit places them (in arrival order)
    before the first decision; the start is the same whatever the agent's env settings."""
    from clustergym.core.simulator import EpochConfig

    def start(env):
        """(server, start) of every job that arrived at time 0: the setup's placements."""
        jobs = env.unwrapped.sim.jobs
        at0 = np.flatnonzero(jobs.arrival[: jobs.size] == 0.0)
        return at0.size, jobs.server[at0].copy(), jobs.start[at0].copy()

    env = gym.make("clustergym/azure-vms-v1")
    obs, _ = env.reset(seed=1_000_001)
    sim = env.unwrapped.sim
    n, servers, starts = start(env)
    assert sim.now > 0 and n > 0 and (starts == 0.0).sum() > 0.9 * n  # nearly all fit at once
    np.testing.assert_allclose(obs["running"], np.log1p(sim.cluster.count_real), rtol=1e-6)
    # first-fit in arrival order: the first job sits on server 0
    assert servers[0] == 0
    # a rule-based agent's env (every epoch, a clock of its own, no observation) starts from the same placements
    other = make_task_env("azure-vms", skip_trivial=False, observe=False, epochs=EpochConfig(tick_rate=5.0))
    other.reset(seed=1_000_001)
    n2, servers2, starts2 = start(other)
    assert n2 == n and np.array_equal(servers2, servers) and np.array_equal(starts2, starts, equal_nan=True)


def test_make_task_env_defaults_are_the_tasks_settings():
    t = task("mris-poisson")
    env = make_task_env(t)
    inner = env.unwrapped
    assert inner.action_mode == t.action_mode and inner.invalid_action == "wait"
    assert inner.reward_scale == t.reward_scale and inner.queue_window == t.queue_window
    assert inner.scenario.horizon == t.horizon and inner.scenario.clairvoyant
    assert json.dumps(t.env_kwargs())  # plain values (model.json, docs)
