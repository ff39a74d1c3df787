"""The speed estimate from an episode's history (:class:`clustergym.core.estimates.SpeedEstimate`)."""

from __future__ import annotations

import numpy as np
import pytest

from clustergym import make_env
from clustergym.core.estimates import SpeedEstimate
from clustergym.core.jobs import JobStatus

LOTES = {"omega": 0.5, "machines_per_config": 1, "load": 0.95}


def _env(horizon: float = 8.0):
    return make_env("lotes-omega", **LOTES, horizon=horizon, action_mode="slot", queue_window=8)


def _step_random(env, obs, rng):
    valid = np.flatnonzero(obs["action_mask"])
    return env.step(int(rng.choice(valid)))


def _brute_force(sim) -> tuple[np.ndarray, np.ndarray]:
    """Completions and exposure of each (server, type), recomputed job by job from the whole table."""
    j = sim.jobs
    n, busy = np.zeros((sim.num_servers, sim.num_types)), np.zeros((sim.num_servers, sim.num_types))
    for i in range(j.size):
        if j.dummy[i]:
            continue
        s, t = int(j.server[i]), int(j.type[i])
        if j.status[i] == JobStatus.COMPLETED:
            n[s, t] += 1
            busy[s, t] += j.end[i] - j.start[i]
        elif j.status[i] == JobStatus.RUNNING:
            busy[s, t] += sim.now - j.start[i]
    return n, busy


def test_counts_equal_a_job_by_job_recount_along_episodes_and_restart_with_each_episode():
    """The folded sums (finished jobs below the oldest unfinished one, read once) and the live rows give
    exactly the counts recomputed from every row, at many points of two episodes of one estimator."""
    env = _env(horizon=3.0)
    sim = env.unwrapped.sim
    est = SpeedEstimate(sim)
    rng = np.random.default_rng(1)
    checked = 0
    for seed in (0, 1):
        obs, _ = env.reset(seed=seed)
        np.testing.assert_array_equal(est.relative(), 1.0)  # a new episode: nothing known
        for step in range(4000):
            obs, _, term, trunc, _ = _step_random(env, obs, rng)
            if step % 97 == 0:
                n, busy = est.counts()
                bn, bb = _brute_force(sim)
                np.testing.assert_array_equal(n, bn)
                np.testing.assert_allclose(busy, bb, rtol=1e-12, atol=1e-12)
                checked += 1
            if term or trunc:
                break
        assert est._lo > 0, "finished jobs were never folded: the cursor is not exercised"
    assert checked >= 20 and est.counts()[0].sum() > 100


def test_relative_speed_is_one_without_data_and_follows_the_formula():
    env = _env()
    obs, _ = env.reset(seed=0)
    sim = env.unwrapped.sim
    est = SpeedEstimate(sim, prior=2.0)
    np.testing.assert_array_equal(est.relative(), np.ones((sim.num_servers, sim.num_types)))
    rng = np.random.default_rng(0)
    for _ in range(1500):
        obs, _, term, trunc, _ = _step_random(env, obs, rng)
    n, busy = est.counts()
    rel = est.relative()
    t = int(np.argmax(n.sum(axis=0)))  # the type with the most completions
    p = n[:, t].sum() / busy[:, t].sum()
    np.testing.assert_allclose(rel[:, t], (n[:, t] + 2.0) / (busy[:, t] + 2.0 / p) / p)
    np.testing.assert_array_equal(rel[:, n.sum(axis=0) == 0], 1.0)  # a type never completed stays at 1


def test_estimate_recovers_the_order_of_the_machines_true_speeds():
    """LoTES's machine-dependent speeds (Sec. 5.4.3): within each type, the estimates of the
    (server, type) pairs seen 20 times or more correlate with the true speeds (log scale, centred)."""
    env = _env()
    obs, _ = env.reset(seed=0)
    sim = env.unwrapped.sim
    est = SpeedEstimate(sim)
    rng = np.random.default_rng(0)
    while True:
        obs, _, term, trunc, _ = _step_random(env, obs, rng)
        if term or trunc:
            break
    n, _ = est.counts()
    rel = est.relative()
    got, true = [], []
    for t in range(sim.num_types):
        s = np.flatnonzero(n[:, t] >= 20)
        if s.size >= 2:
            got += list(np.log(rel[s, t]) - np.log(rel[s, t]).mean())
            true += list(np.log(sim.speed[s, t]) - np.log(sim.speed[s, t]).mean())
    assert len(got) >= 30
    assert np.corrcoef(got, true)[0, 1] > 0.7


@pytest.mark.parametrize("prior", [0.0, -1.0, float("nan")])
def test_prior_must_be_positive(prior):
    with pytest.raises(ValueError, match="prior"):
        SpeedEstimate(_env().unwrapped.sim, prior=prior)
