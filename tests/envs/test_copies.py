"""Copies of environments continue exactly like the original (planning agents: rollouts, tree search)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from clustergym import make_env


def _advance(env, rng, steps):
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if term or trunc:
            return True
    return False


@pytest.mark.parametrize("scenario", ["ec2", "bf-trap", "autoscale-4vm", "two-sizes", "lotes-table"])
@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
@pytest.mark.parametrize("warm", [0, 150])
def test_a_copy_continues_identically(scenario, how, warm):
    env = make_env(scenario, horizon=30_000.0 if scenario == "two-sizes" else 30.0)  # two-sizes: time in slots
    env.reset(seed=4)
    assert not _advance(env, np.random.default_rng(0), warm)
    clone = copy.deepcopy(env) if how == "deepcopy" else pickle.loads(pickle.dumps(env))
    r1, r2 = np.random.default_rng(7), np.random.default_rng(7)
    for _ in range(2_000):
        m1, m2 = env.action_masks(), clone.action_masks()
        assert np.array_equal(m1, m2)
        a = int(r1.choice(np.flatnonzero(m1)))
        assert a == int(r2.choice(np.flatnonzero(m2)))
        o1, x1, t1, u1, i1 = env.step(a)
        o2, x2, t2, u2, i2 = clone.step(a)
        assert x1 == x2 and (t1, u1) == (t2, u2) and list(o1) == list(o2)
        assert all(np.array_equal(o1[k], o2[k]) for k in o1)
        if t1 or u1:
            break
    m1, m2 = env.metrics(), clone.metrics()
    assert m1.keys() == m2.keys()
    for k in m1:  # NaN (no job finished) equals NaN here
        assert np.array_equal(np.asarray(m1[k]), np.asarray(m2[k]), equal_nan=np.asarray(m1[k]).dtype.kind == "f"), k


def test_the_copy_is_independent_of_the_original():
    env = make_env("ec2", horizon=30.0)
    env.reset(seed=0)
    clone = copy.deepcopy(env)
    _advance(env, np.random.default_rng(0), 300)
    assert clone.sim.now < env.sim.now and clone.sim.n_arrivals < env.sim.n_arrivals
