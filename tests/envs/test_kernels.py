"""The compiled step (``clustergym.envs.kernels``: the ``slot`` mask, the observation's fill and the task's
scaling) gives the NumPy path's observations, masks and rewards bit for bit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import clustergym  # noqa: F401  (registers the ids)
from clustergym import make_env
from clustergym.core import accel
from clustergym.core.commands import Command
from clustergym.suite.tasks import task

pytestmark = pytest.mark.skipif(not accel.available(), reason="numba (the fast extra) is not installed")


def _make(what: str, compiled: bool) -> gym.Env:
    with accel.forced(compiled):  # the env decides once, when it is made
        if what.startswith("task:"):
            return gym.make(task(what[5:]).id)
        name, _, mode = what.partition(":")
        return make_env(name, horizon=200.0, **({"action_mode": mode} if mode else {}))


def _same(o1: dict, o2: dict) -> None:
    assert list(o1) == list(o2)
    for k in o1:
        assert o1[k].dtype == o2[k].dtype and o1[k].tobytes() == o2[k].tobytes(), k


@pytest.mark.parametrize(
    "what",
    [
        "task:rms-trap",
        "task:mris-poisson",
        "task:autoscale-syn4",
        "task:lotes-hetero",
        "lotes-table",
        "ec2",  # the head mode
        "ec2:slot",
    ],
)
def test_compiled_step_is_the_numpy_step(what: str) -> None:
    fast, slow = _make(what, True), _make(what, False)
    assert fast.unwrapped.obs_builder._compiled and not slow.unwrapped.obs_builder._compiled
    rng = np.random.default_rng(3)
    o1, _ = fast.reset(seed=5)
    o2, _ = slow.reset(seed=5)
    _same(o1, o2)
    dummies = 0
    for _ in range(600):
        m1, m2 = fast.unwrapped.action_masks(), slow.unwrapped.action_masks()
        assert m1.tobytes() == m2.tobytes()
        a: int | Command = int(rng.choice(np.flatnonzero(m1)))
        if rng.random() < 0.15:  # dummy jobs now and then (the dummies rows; invalid ones alike in both)
            a = Command.dummy(int(rng.integers(fast.unwrapped.sim.num_types)), int(rng.integers(len(m1) - 1)))
        o1, r1, t1, u1, _ = fast.step(a)
        o2, r2, t2, u2, _ = slow.step(a)
        _same(o1, o2)
        assert (r1, t1, u1) == (r2, t2, u2)
        dummies += bool(o1["dummies"].any())
        if t1 or u1:
            o1, _ = fast.reset()
            o2, _ = slow.reset()
            _same(o1, o2)
    assert dummies > 0 or what != "task:rms-trap"  # the dummies rows were compared (types exact there)


def test_a_kept_observation_is_not_changed_by_later_steps() -> None:
    with accel.forced(True):
        env = gym.make(task("rms-trap").id)
    first, _ = env.reset(seed=0)
    kept = {k: v.copy() for k, v in first.items()}
    obs = first
    for _ in range(50):
        obs, *_ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    _same(first, kept)  # the arrays handed out first are untouched by the compiled fills since
    assert any(not np.array_equal(kept[k], obs[k]) for k in kept)
