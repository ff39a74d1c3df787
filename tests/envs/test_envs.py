"""Tests of the Gymnasium environments (clustergym.envs): API conformance, masks,
determinism, rewards as paper metrics, invalid actions, observations, rendering.

Horizons are short so that the whole file runs in a few tens of seconds.
"""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from gymnasium.wrappers import FlattenObservation
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import clustergym
from clustergym import (
    AdmissionEnv,
    ClusterEnv,
    Command,
    ConfigError,
    EpochConfig,
    InvalidCommandError,
    ScenarioError,
    make_preset,
)
from clustergym.runner import run_episode

# A "small" horizon per preset: short, but long enough that arrivals (hence
# decision epochs) occur before it for any seed with overwhelming probability
# (two-sizes e1 has 0.014 arrivals per slot, uniform-sizes 0.09).
SMALL_HORIZON = {
    "ec2": 2.0,
    "bf-trap": 5.0,
    "two-sizes": 2000.0,
    "uniform-sizes": 300.0,
    "autoscale-4vm": 2.0,
}
DEFAULT_SCENARIO = {"clustergym/Queueing-v0": "ec2", "clustergym/Admission-v0": "autoscale-4vm"}


def _preset_of(env_id: str) -> str:
    if env_id in DEFAULT_SCENARIO:
        return DEFAULT_SCENARIO[env_id]
    return env_id.removeprefix("clustergym/").removesuffix("-v0")


def _small(env_id: str) -> float:
    """A short horizon with a few dozen arrivals (presets added later get one from their rates)."""
    from clustergym.traces import TraceNotFoundError

    name = _preset_of(env_id)
    if name in SMALL_HORIZON:
        return SMALL_HORIZON[name]
    if clustergym.PRESETS[name].needs_traces:
        pytest.skip(f"{name}: a trace-driven preset (covered by tests/traces/test_traces.py)")
    try:
        sc = make_preset(name)
    except TraceNotFoundError as e:
        pytest.skip(f"{name}: needs the real traces, set CLUSTERGYM_TRACES ({e})")
    rates = sc.source.arrival_rates()
    if rates is not None and float(np.sum(rates)) > 0:
        return min(sc.horizon, 30.0 / float(np.sum(rates)))
    if np.isfinite(sc.horizon) or getattr(sc.source, "num_jobs", math.inf) <= 5000:
        return sc.horizon  # finite, or a small fixed instance replayed until it drains
    pytest.skip(f"{name}: a large replayed instance without a finite default horizon (covered by its own tests)")


def _random_masked_action(mask: np.ndarray, rng: np.random.Generator) -> int:
    valid = np.flatnonzero(mask)
    assert valid.size >= 1, "the action mask flags no valid action"
    return int(valid[rng.integers(valid.size)])


pytestmark = pytest.mark.usefixtures("quiet_warnings")


# =============================================================================== registration / checkers
def test_env_ids_cover_every_preset_and_the_generic_envs():
    ids = set(clustergym.ENV_IDS)
    assert {"clustergym/Queueing-v0", "clustergym/Admission-v0"} <= ids
    for name in clustergym.PRESETS:
        assert f"clustergym/{name}-v0" in ids
    for env_id in ids:
        assert env_id in gym.registry


@pytest.mark.parametrize("env_id", clustergym.ENV_IDS)
def test_gymnasium_and_sb3_checkers_pass_on_every_registered_id(env_id):
    env = gym.make(env_id, horizon=_small(env_id))
    assert env.unwrapped.scenario.name == _preset_of(env_id)
    gym_check_env(env.unwrapped, skip_render_check=True)
    # SB3's checker accepts a Dict of Boxes: try the raw env first, then the flat one
    sb3_check_env(env.unwrapped, warn=True)
    sb3_check_env(FlattenObservation(gym.make(env_id, horizon=_small(env_id))), warn=True)


@pytest.mark.parametrize(
    "scenario,mode",
    [
        ("ec2", "head"),
        ("ec2", "slot"),
        ("ec2", "command"),
        ("bf-trap", "head"),
        ("bf-trap", "slot"),
        ("bf-trap", "command"),
        ("two-sizes", "slot"),
        ("uniform-sizes", "command"),
        ("autoscale-4vm", "admit"),
        ("autoscale-4vm", "command"),
    ],
)
def test_checkers_pass_on_each_action_mode(scenario, mode):
    cls = AdmissionEnv if scenario == "autoscale-4vm" else ClusterEnv
    env = cls(scenario, action_mode=mode, horizon=SMALL_HORIZON[scenario])
    assert env.action_mode == mode
    gym_check_env(env, skip_render_check=True)
    sb3_check_env(env, warn=True)
    sb3_check_env(FlattenObservation(cls(scenario, action_mode=mode, horizon=SMALL_HORIZON[scenario])), warn=True)


def test_gymnasium_checker_with_ansi_rendering():
    env = ClusterEnv("bf-trap", horizon=5.0, render_mode="ansi")
    gym_check_env(env, skip_render_check=False)


@pytest.mark.parametrize(
    "scenario,mode", [("ec2", "admit"), ("autoscale-4vm", "head"), ("autoscale-4vm", "slot"), ("ec2", "nope")]
)
def test_inapplicable_action_modes_are_rejected(scenario, mode):
    with pytest.raises(ConfigError, match="action_mode"):
        ClusterEnv(scenario, action_mode=mode, horizon=2.0)


def test_admission_env_needs_a_loss_scenario():
    with pytest.raises(ScenarioError, match="queueing"):
        AdmissionEnv("ec2", horizon=2.0)


def test_episode_without_any_decision_epoch_can_still_be_stepped():
    """two-sizes (e1) has ~0.07 arrivals in 5 slots: with seed 0 there are none, so reset()
    skips every (trivial) epoch up to the horizon.  The Gymnasium contract is that reset()
    returns a state from which step() works; the step should end the episode (truncated)
    and pay out the skipped time's reward, not raise."""
    env = ClusterEnv("two-sizes", horizon=5.0)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    wait = env.action_space.n - 1
    obs, reward, terminated, truncated, info = env.step(wait)  # currently raises RuntimeError
    assert truncated and not terminated
    assert reward == pytest.approx(-env.metrics()["mean_queue_length"] * env.metrics()["sim_time"])


def test_run_episode_survives_a_horizon_with_no_decision():
    r = run_episode("two-sizes", "random", seed=0, horizon=5.0)  # currently RuntimeError from step()
    assert r["sim_time"] == pytest.approx(5.0)
    assert r["return"] == pytest.approx(-r["mean_queue_length"] * r["sim_time"])


# =============================================================================== learning
def test_maskable_ppo_learns_and_predicts_only_valid_actions():
    import torch
    from sb3_contrib import MaskablePPO

    torch.set_num_threads(1)
    env = FlattenObservation(gym.make("clustergym/ec2-v0", horizon=5.0))
    model = MaskablePPO("MlpPolicy", env, n_steps=256, batch_size=64, seed=0, verbose=0)
    model.learn(total_timesteps=3000)
    assert model.num_timesteps >= 3000
    obs, _ = env.reset(seed=11)
    steps = 0
    while True:
        mask = env.get_wrapper_attr("action_masks")()
        assert obs.shape == env.observation_space.shape and obs.dtype == np.float32
        action, _ = model.predict(obs, action_masks=mask, deterministic=True)
        a = int(action)
        assert mask[a], f"step {steps}: predicted action {a} is masked out"
        obs, reward, terminated, truncated, info = env.step(a)
        assert not info["invalid_action"]
        steps += 1
        if terminated or truncated:
            break
    assert steps > 50


# =============================================================================== determinism
# The same code runs in-process and in fresh interpreters (where set/dict hashing differs).
TRAJ_SRC = r"""
import hashlib
import warnings
warnings.simplefilter("ignore")
import numpy as np
import gymnasium as gym
import clustergym  # noqa: F401


def rollout(env_id, seed, horizon, max_steps=None):
    env = gym.make(env_id, horizon=horizon)
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed + 12345)
    steps = [(obs, None, info)]
    while max_steps is None or len(steps) <= max_steps:
        valid = np.flatnonzero(obs["action_mask"])
        obs, r, term, trunc, info = env.step(int(valid[rng.integers(valid.size)]))
        steps.append((obs, r, info))
        if term or trunc:
            break
    return steps


def trajectory_hash(steps):
    h = hashlib.sha256()
    for obs, r, info in steps:
        for k in sorted(obs):
            a = np.ascontiguousarray(obs[k])
            h.update(k.encode()); h.update(str(a.dtype).encode()); h.update(a.tobytes())
        h.update(repr(None if r is None else float(r)).encode())
        h.update(repr(sorted((k, repr(v)) for k, v in info.items())).encode())
    return h.hexdigest()
"""
_ns: dict = {}
exec(TRAJ_SRC, _ns)
rollout, trajectory_hash = _ns["rollout"], _ns["trajectory_hash"]


def _assert_same_steps(a, b):
    assert len(a) == len(b)
    for i, ((oa, ra, ia), (ob, rb, ib)) in enumerate(zip(a, b)):
        assert oa.keys() == ob.keys()
        for k in oa:
            np.testing.assert_array_equal(oa[k], ob[k], err_msg=f"step {i}, obs[{k!r}]")
        assert ra == rb, f"step {i}: reward"
        assert repr(sorted(ia.items())) == repr(sorted(ib.items())), f"step {i}: info"


@pytest.mark.parametrize("env_id,horizon", [("clustergym/bf-trap-v0", 3.0), ("clustergym/autoscale-4vm-v0", 1.0)])
def test_same_seed_same_trajectory_in_process(env_id, horizon):
    a = rollout(env_id, 7, horizon)
    b = rollout(env_id, 7, horizon)
    c = rollout(env_id, 8, horizon)
    assert len(a) > 20
    _assert_same_steps(a, b)
    assert trajectory_hash(a) == trajectory_hash(b) != trajectory_hash(c)


def test_same_seed_same_trajectory_across_processes():
    env_id, seed, horizon = "clustergym/bf-trap-v0", 3, 3.0
    expected = trajectory_hash(rollout(env_id, seed, horizon))
    script = TRAJ_SRC + f"\nprint(trajectory_hash(rollout({env_id!r}, {seed}, {horizon})))\n"
    hashes = []
    for hashseed in ("1", "2"):  # different str-hash seeds: iteration order must not matter
        proc = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONHASHSEED": hashseed},
        )
        assert proc.returncode == 0, proc.stderr
        hashes.append(proc.stdout.strip().splitlines()[-1])
    assert hashes == [expected, expected]


def test_reset_without_seed_continues_the_seeded_generator():
    env = ClusterEnv("bf-trap", horizon=3.0)
    env.reset(seed=5)
    first = env.sim.jobs.arrival[: env.sim.jobs.size].copy()
    env.reset()
    second_a = env.sim.seed
    env.reset(seed=5)
    env.reset()
    assert env.sim.seed == second_a  # unseeded resets follow from the last seed
    env.reset(seed=5)
    np.testing.assert_array_equal(env.sim.jobs.arrival[: env.sim.jobs.size], first)


def _vector_vs_single(vec_cls):
    env_id, horizon, seeds, n_steps = "clustergym/bf-trap-v0", 50.0, [3, 4], 120
    venv = vec_cls([lambda: gym.make(env_id, horizon=horizon) for _ in seeds])
    try:
        rng = np.random.default_rng(0)
        obs, infos = venv.reset(seed=seeds)
        v_obs, v_rew, v_time = [obs], [], [infos["time"].copy()]
        actions = []
        for _ in range(n_steps):
            a = np.array([_random_masked_action(obs["action_mask"][i], rng) for i in range(len(seeds))])
            actions.append(a)
            obs, rew, term, trunc, infos = venv.step(a)
            assert not (term.any() or trunc.any()), "horizon too short for the comparison"
            v_obs.append(obs)
            v_rew.append(rew.copy())
            v_time.append(infos["time"].copy())
    finally:
        venv.close()
    for i, seed in enumerate(seeds):
        env = gym.make(env_id, horizon=horizon)
        o, info = env.reset(seed=seed)
        for k in o:
            np.testing.assert_array_equal(v_obs[0][k][i], o[k], err_msg=f"env {i} reset obs[{k!r}]")
        assert v_time[0][i] == info["time"]
        for t in range(n_steps):
            o, r, _, _, info = env.step(int(actions[t][i]))
            for k in o:
                np.testing.assert_array_equal(v_obs[t + 1][k][i], o[k], err_msg=f"env {i} step {t} obs[{k!r}]")
            assert v_rew[t][i] == pytest.approx(r, rel=1e-12, abs=1e-12)
            assert v_time[t + 1][i] == info["time"]
    # the two sub-envs got different seeds, so their trajectories differ
    assert not np.array_equal(v_time[-1][0], v_time[-1][1])


def test_sync_vector_env_equals_single_envs():
    _vector_vs_single(gym.vector.SyncVectorEnv)


def test_async_vector_env_equals_single_envs():
    _vector_vs_single(gym.vector.AsyncVectorEnv)


def _arrivals_seen(agent: str, seed: int, horizon: float):
    sim = run_episode("ec2", agent, seed=seed, horizon=horizon, probes={"sim": lambda env: env.sim})["sim"]
    n = sim.jobs.size
    real = ~sim.jobs.dummy[:n]
    order = np.argsort(sim.jobs.arrival[:n][real], kind="stable")
    return (
        sim.jobs.arrival[:n][real][order],
        sim.jobs.demand[:n][real][order],
        sim.jobs.type[:n][real][order],
        sim.jobs.work[:n][real][order],
    )


def test_different_agents_see_the_same_arrivals_on_one_seed():
    ff = _arrivals_seen("first-fit", 4, 3.0)
    bf = _arrivals_seen("best-fit", 4, 3.0)
    assert ff[0].size > 100
    for a, b in zip(ff, bf):
        np.testing.assert_array_equal(a, b)
    other = _arrivals_seen("first-fit", 5, 3.0)
    assert other[0].size != ff[0].size or not np.array_equal(other[0], ff[0])


# =============================================================================== return = metric x time
def test_return_equals_minus_mean_queue_length_times_time_best_fit_ec2():
    r = run_episode("ec2", "best-fit", seed=2, horizon=10.0)
    assert r["sim_time"] == pytest.approx(10.0)
    assert r["mean_queue_length"] > 0  # the identity is not trivially 0 = 0
    assert r["return"] == pytest.approx(-r["mean_queue_length"] * r["sim_time"], rel=1e-9)


def test_return_equals_reward_rate_times_time_best_fit_admit_autoscale():
    r = run_episode("autoscale-4vm", "best-fit-admit", seed=2, horizon=3.0)
    assert r["reward_rate"] > 0
    assert r["return"] == pytest.approx(r["reward_rate"] * r["sim_time"], rel=1e-9)


def _masked_random_return(env: ClusterEnv, seed: int) -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        obs, r, term, trunc, _ = env.step(_random_masked_action(env.action_masks(), rng))
        total += r
        steps += 1
        if term or trunc:
            return total, steps


@pytest.mark.parametrize(
    "scenario,horizon,metric,sign",
    [
        ("ec2", 5.0, "mean_queue_length", -1.0),
        ("bf-trap", 20.0, "mean_queue_length", -1.0),
        ("uniform-sizes", 1000.0, "mean_queue_length", -1.0),
        ("autoscale-4vm", 2.0, "reward_rate", 1.0),
    ],
)
def test_return_equals_metric_times_time_masked_random(scenario, horizon, metric, sign):
    env = ClusterEnv(scenario, horizon=horizon)  # head / admit mode, trivial epochs skipped
    assert env.skip_trivial
    total, steps = _masked_random_return(env, 1)
    m = env.metrics()
    assert m["sim_time"] == pytest.approx(horizon)
    assert m[metric] > 0
    assert total == pytest.approx(sign * m[metric] * m["sim_time"], rel=1e-9)


def test_skipped_time_before_the_first_decision_is_rewarded():
    """Decision epochs only at ticks t = 2, 4, ...: jobs arriving in [0, 2) wait until the first
    epoch, and the queue-length integral over [0, 2) must still be part of the return."""
    sc = dataclasses.replace(
        make_preset("ec2", horizon=10.0),
        epochs=EpochConfig(
            arrivals=False, completions=False, dummy_completions=False, tick_period=2.0, tick_offset=2.0
        ),
    )
    env = ClusterEnv(sc, action_mode="head")
    obs, info = env.reset(seed=3)
    assert info["time"] == pytest.approx(2.0) and env.sim.n_queued > 0
    skipped = -env.sim.integrals.queue
    assert skipped < 0
    rng = np.random.default_rng(3)
    obs, r0, term, trunc, _ = env.step(_random_masked_action(env.action_masks(), rng))
    assert r0 <= skipped + 1e-9  # the first reward includes the time before the first decision
    total = r0
    while not (term or trunc):
        obs, r, term, trunc, _ = env.step(_random_masked_action(env.action_masks(), rng))
        total += r
    m = env.metrics()
    assert total == pytest.approx(-m["mean_queue_length"] * m["sim_time"], rel=1e-9)


def test_reward_scale_multiplies_the_return():
    a, _ = _masked_random_return(ClusterEnv("bf-trap", horizon=10.0), 4)
    b, _ = _masked_random_return(ClusterEnv("bf-trap", horizon=10.0, reward_scale=0.5), 4)
    assert a < 0
    assert b == pytest.approx(0.5 * a, rel=1e-9)


def test_reward_timing_start_pays_each_admitted_jobs_whole_reward_at_its_admission():
    """Same seed, same masked-random admissions: the 'start' return is the integral return plus the
    reward the jobs still running at the horizon earn after it; each admission step pays rate x service."""
    a_env = ClusterEnv("autoscale-worst-case", horizon=3.0)
    s_env = ClusterEnv("autoscale-worst-case", horizon=3.0, reward_timing="start")
    integral, _ = _masked_random_return(a_env, 5)
    rng = np.random.default_rng(5)
    obs, _ = s_env.reset(seed=5)
    sim = s_env.sim
    total, admitted, done = 0.0, 0, False
    while not done:
        action = _random_masked_action(s_env.action_masks(), rng)
        job = sim.pending
        obs, r, term, trunc, _ = s_env.step(action)
        if action < s_env.sim.num_servers:
            admitted += 1
            assert r == pytest.approx(sim.jobs.reward_rate[job] * (sim.jobs.end[job] - sim.jobs.start[job]))
        else:
            assert r == 0.0
        total += r
        done = term or trunc
    assert admitted > 10
    jobs, T = sim.jobs, sim.now
    running = [j for srv in sim.running for j in srv]
    after = sum(jobs.reward_rate[j] * (jobs.end[j] - T) for j in running)
    assert after > 0
    assert total == pytest.approx(integral + after, rel=1e-9)
    with pytest.raises(ConfigError, match="reward_timing"):
        ClusterEnv("bf-trap", reward_timing="start")
    with pytest.raises(ConfigError, match="reward_timing"):
        ClusterEnv("autoscale-4vm", reward_timing="later")


def test_reward_timing_expected_pays_the_types_mean_reward_and_keeps_the_trajectory():
    """Same seed, same actions: 'expected' pays rate x the type's mean service time at each admission
    (0 otherwise), and the trajectory is the 'start' env's; over many admissions its mean is the mean
    of the drawn rewards (exponential service: the two returns agree within a few standard errors)."""
    envs = {t: ClusterEnv("autoscale-4vm", num_servers=5, horizon=20.0, reward_timing=t) for t in ("start", "expected")}
    rewards: dict[str, list[float]] = {"start": [], "expected": []}
    for timing, env in envs.items():
        rng = np.random.default_rng(3)
        env.reset(seed=3)
        sim, done = env.sim, False
        while not done:
            action = _random_masked_action(env.action_masks(), rng)
            job = sim.pending
            _, r, term, trunc, _ = env.step(action)
            if action < sim.num_servers:
                jtype, server = int(sim.jobs.type[job]), int(sim.jobs.server[job])
                expected = sim.jobs.reward_rate[job] * sim.types.mean_work[jtype] / sim.speed[server, jtype]
                paid = (
                    expected
                    if timing == "expected"
                    else sim.jobs.reward_rate[job] * sim.jobs.work[job] / sim.speed[server, jtype]
                )
                assert r == pytest.approx(paid)
                rewards[timing].append(r)
            else:
                assert r == 0.0
            done = term or trunc
    start, expected = np.array(rewards["start"]), np.array(rewards["expected"])
    assert start.size == expected.size > 200  # the same admissions
    assert expected.std() < start.std()
    assert abs(start.sum() - expected.sum()) < 4 * start.std() * np.sqrt(start.size)
    with pytest.raises(ConfigError, match="reward_timing"):
        ClusterEnv("bf-trap", reward_timing="expected")


# =============================================================================== invalid actions
def _fill_server0(env: ClusterEnv, rng_seed: int = 0):
    """bf-trap, head mode: place head jobs on server 0 until the head job no longer fits there."""
    obs, _ = env.reset(seed=rng_seed)
    for _ in range(1000):
        mask = env.get_wrapper_attr("action_masks")()
        if env.sim.n_queued and not mask[0]:
            return obs
        a = 0 if mask[0] else env.action_space.n - 1
        obs, _, term, trunc, _ = env.step(a)
        assert not (term or trunc)
    raise AssertionError("server 0 never filled up")


def test_invalid_action_raise_says_why():
    env = ClusterEnv("bf-trap", horizon=50.0, invalid_action="raise")
    _fill_server0(env)
    with pytest.raises(InvalidCommandError, match="does not fit on server 0"):
        env.step(0)
    with pytest.raises(InvalidCommandError, match="server 99 does not exist"):
        env.step(Command.place(next(iter(env.sim.queue)), 99))
    with pytest.raises(InvalidCommandError, match="job 123456 does not exist"):
        env.step(Command.place(123456, 0))


def test_invalid_action_raise_slot_mode_empty_slot():
    env = ClusterEnv("ec2", action_mode="slot", horizon=5.0, invalid_action="raise")
    env.reset(seed=0)
    assert len(env.sim.queue) < env.queue_window
    empty_slot = len(env.sim.queue)  # window slot holding no job
    with pytest.raises(InvalidCommandError, match="does not exist"):
        env.step(empty_slot * env.sim.num_servers + 0)


def _snapshot(env: ClusterEnv):
    s = env.sim
    return (
        s.now,
        s.n_queued,
        s.n_running,
        s.n_started,
        s.n_events,
        s.cluster.load.copy(),
        list(s.queue),
        s.integrals.queue,
    )


def test_invalid_action_penalize_keeps_state_and_time():
    env = ClusterEnv("bf-trap", horizon=50.0, invalid_action="penalize", invalid_penalty=-2.5)
    obs = _fill_server0(env)
    before = _snapshot(env)
    obs2, reward, term, trunc, info = env.step(0)
    assert reward == -2.5
    assert info["invalid_action"] is True
    assert "does not fit" in info["invalid_reason"]
    assert not (term or trunc)
    after = _snapshot(env)
    assert after[0] == before[0] and info["time"] == before[0]  # time not advanced
    for x, y in zip(before, after):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y
    for k in obs:
        np.testing.assert_array_equal(obs[k], obs2[k], err_msg=k)
    # a valid action afterwards is accepted normally
    obs3, reward, *_, info = env.step(env.action_space.n - 1)
    assert info["invalid_action"] is False and reward <= 0


def test_invalid_action_penalize_admit_mode():
    env = AdmissionEnv("autoscale-4vm", horizon=2.0, invalid_penalty=-1.0)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(2000):  # fill up until some server cannot take the arriving job
        mask = env.get_wrapper_attr("action_masks")()
        if not mask[:-1].all():
            break
        env.step(_random_masked_action(mask[:-1], rng))
    mask = env.action_masks()
    bad = int(np.flatnonzero(~mask)[0])
    before = _snapshot(env)
    pending = env.sim.pending
    _, reward, _, _, info = env.step(bad)
    assert reward == -1.0 and info["invalid_action"] is True
    assert env.sim.pending == pending and _snapshot(env)[0] == before[0]
    np.testing.assert_array_equal(env.sim.cluster.load, before[5])


def test_invalid_action_option_is_validated():
    with pytest.raises(ConfigError, match="invalid_action"):
        ClusterEnv("ec2", invalid_action="ignore")


@pytest.mark.parametrize(
    "scenario,mode,horizon",
    [
        ("ec2", "head", 3.0),
        ("bf-trap", "head", 10.0),
        ("ec2", "slot", 3.0),
        ("bf-trap", "slot", 10.0),
        ("uniform-sizes", "slot", 2000.0),
        ("autoscale-4vm", "admit", 3.0),
    ],
)
def test_every_masked_valid_action_is_accepted(scenario, mode, horizon):
    env = ClusterEnv(scenario, action_mode=mode, horizon=horizon, invalid_action="raise")
    rng = np.random.default_rng(1)
    obs, _ = env.reset(seed=1)
    steps, placements = 0, 0
    while steps < 400:
        mask = env.get_wrapper_attr("action_masks")()
        np.testing.assert_array_equal(obs["action_mask"], mask.astype(np.int8))
        assert mask[-1], "WAIT (or reject) must always be valid"
        a = _random_masked_action(mask, rng)
        placements += a != mask.size - 1
        obs, r, term, trunc, info = env.step(a)  # raises InvalidCommandError if the mask lied
        assert info["invalid_action"] is False
        steps += 1
        if term or trunc:
            obs, _ = env.reset(seed=1 + steps)
    assert placements > 20


# =============================================================================== observations
@pytest.mark.parametrize(
    "scenario,mode,horizon",
    [
        ("ec2", None, 3.0),
        ("ec2", "slot", 3.0),
        ("bf-trap", None, 20.0),
        ("two-sizes", None, 3000.0),
        ("two-sizes", "slot", 3000.0),
        ("uniform-sizes", None, 500.0),
        ("autoscale-4vm", None, 2.0),
        ("bf-trap", "command", 2.0),
        ("autoscale-4vm", "command", 0.5),
    ],
)
def test_observations_stay_inside_the_observation_space(scenario, mode, horizon):
    env = ClusterEnv(scenario, action_mode=mode, horizon=horizon)
    env.action_space.seed(0)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    steps = 0
    while True:
        assert env.observation_space.contains(obs), f"step {steps}: " + ", ".join(
            k for k in obs if not env.observation_space[k].contains(obs[k])
        )
        if env.action_mode == "command":
            a = env.action_space.sample()  # factorised mask: sample the whole space
        else:
            a = _random_masked_action(env.action_masks(), rng)
        obs, _, term, trunc, _ = env.step(a)
        steps += 1
        if term or trunc:
            break
    assert env.observation_space.contains(obs)
    assert steps > 10


def test_observation_contents_match_the_state():
    env = ClusterEnv("bf-trap", horizon=20.0)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    for _ in range(300):
        s = env.sim
        K = env.queue_window
        assert obs["queue_counts"].sum() == s.n_queued
        assert obs["queue_mask"].sum() == min(K, s.n_queued)
        assert obs["running"].sum() == s.n_running
        np.testing.assert_allclose(obs["free"], 1.0 - s.cluster.load / s.cluster.capacity, atol=1e-6)
        assert obs["time"][0] == pytest.approx(s.now / 20.0, rel=1e-6)
        obs, _, term, trunc, _ = env.step(_random_masked_action(env.action_masks(), rng))
        if term or trunc:
            break


def test_arrival_rate_feature_is_unbiased_early_and_late():
    """The observed rate estimate has the same mean at t in [2, 4] as at t in [40, 50] (the raw
    exponentially weighted sum, time constant 10, would read ~20% of the rate early on)."""
    env = gym.make("clustergym/bf-trap-v0", action_mode="head", horizon=50.0)
    true = make_preset("bf-trap").source.arrival_rates()
    early, late = [], []
    obs, _ = env.reset(seed=3)
    done = False
    while not done:
        t = env.unwrapped.sim.now
        if 2.0 <= t <= 4.0:
            early.append(obs["arrival_rates"].copy())
        elif t >= 40.0:
            late.append(obs["arrival_rates"].copy())
        valid = np.flatnonzero(obs["action_mask"])
        obs, _, term, trunc, _ = env.step(int(valid[0]))
        done = term or trunc
    early_mean, late_mean = np.mean(early, axis=0), np.mean(late, axis=0)
    np.testing.assert_allclose(late_mean, true, rtol=0.2)
    np.testing.assert_allclose(early_mean, true, rtol=0.3)


@pytest.mark.parametrize("env_id", ["clustergym/ec2-v0", "clustergym/autoscale-4vm-v0", "clustergym/two-sizes-v0"])
def test_flatten_observation_is_a_float32_vector_of_the_declared_size(env_id):
    env = FlattenObservation(gym.make(env_id, horizon=_small(env_id)))
    raw_space = env.env.observation_space
    size = sum(int(np.prod(raw_space[k].shape)) for k in raw_space.spaces)
    assert env.observation_space.shape == (size,) and env.observation_space.dtype == np.float32
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(30):
        assert isinstance(obs, np.ndarray) and obs.ndim == 1 and obs.dtype == np.float32
        assert obs.shape == (size,)
        assert env.observation_space.contains(obs)
        mask = env.get_wrapper_attr("action_masks")()
        assert mask.shape == (env.action_space.n,)
        # the flat vector holds the action mask at its key's offset
        off = 0
        for k in raw_space.spaces:
            n = int(np.prod(raw_space[k].shape))
            if k == "action_mask":
                np.testing.assert_array_equal(obs[off : off + n], mask.astype(np.float32))
            off += n
        obs, _, term, trunc, _ = env.step(_random_masked_action(mask, rng))
        if term or trunc:
            break


# =============================================================================== rendering
def test_render_ansi_mentions_time_and_queue():
    env = ClusterEnv("bf-trap", horizon=20.0, render_mode="ansi")
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    for _ in range(40):
        env.step(_random_masked_action(env.action_masks(), rng))
    text = env.render()
    assert isinstance(text, str) and text
    assert f"t={env.sim.now:.3f}" in text
    assert f"queued={env.sim.n_queued}" in text
    assert "server" in text


def test_render_mode_is_validated():
    with pytest.raises(ConfigError, match="render_mode"):
        ClusterEnv("ec2", render_mode="rgb")


def test_step_after_episode_end_raises():
    env = ClusterEnv("bf-trap", horizon=1.0)
    env.reset(seed=0)
    wait = env.action_space.n - 1
    done = False
    while not done:
        _, _, term, trunc, info = env.step(wait)
        done = term or trunc
    assert "metrics" in info and info["metrics"]["sim_time"] == pytest.approx(1.0)
    assert math.isclose(info["time"], 1.0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(wait)


# =============================================================================== episode end
def test_finite_trace_terminates_when_drained(tmp_path):
    (tmp_path / "jobs.csv").write_text("arrival,duration,cpu\n0.0,1.0,3\n0.5,2.0,2\n0.7,1.5,3\n2.0,0.5,1\n")
    scenario = {
        "resources": ["cpu"],
        "servers": [{"capacity": [4]}],
        "horizon": "inf",
        "workload": {"kind": "replay", "file": str(tmp_path / "jobs.csv"), "columns": {"demand": ["cpu"]}},
    }
    env = ClusterEnv(scenario)
    obs, _ = env.reset(seed=0)
    total = 0.0
    while True:
        obs, r, term, trunc, info = env.step(0 if env.action_masks()[0] else env.action_space.n - 1)
        total += r
        if term or trunc:
            break
    assert term and not trunc
    m = info["metrics"]
    assert m["arrivals"] == m["completed"] == 4 and m["queued_at_end"] == 0
    assert total == pytest.approx(-m["mean_queue_length"] * m["sim_time"], rel=1e-9)
    assert total < 0  # jobs 1 and 2 had to wait behind job 0
    assert env.observation_space.contains(obs)


def test_queue_cap_terminates_as_unstable():
    env = gym.make("clustergym/bf-trap-v0", queue_cap=5, horizon=100.0)
    env.reset(seed=0)
    wait = env.action_space.n - 1
    while True:  # never start anything: the queue must overflow
        _, _, term, trunc, info = env.step(wait)
        if term or trunc:
            break
    assert term and not trunc
    assert info["unstable"] is True and info["metrics"]["unstable"] is True
    assert info["metrics"]["queued_at_end"] > 5
    assert info["time"] < 100.0
