"""The scaled observation a suite task's environment builds in place is :func:`scaled_observation` of the
environment's own observation, bit for bit, and every observation handed out stays as it was."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from clustergym.envs.observation import scaled_observation
from clustergym.suite.tasks import task, task_names
from clustergym.traces.paths import TraceNotFoundError


@pytest.mark.parametrize("name", task_names())
def test_the_builders_scaling_is_scaled_observation(name):
    try:
        env = gym.make(f"clustergym/{name}-v1")
    except TraceNotFoundError as e:  # a trace task: found the way a user's would be (CLUSTERGYM_TRACES)
        pytest.skip(f"{name} needs the real traces: {e}")
    inner, t = env.unwrapped, task(name)
    sim = inner.sim
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=3)
    kept = []
    for _ in range(150):
        want = scaled_observation(inner._obs(), sim.num_resources, sim.num_types, t.time_unit)
        assert list(obs) == list(want) == list(env.observation_space.spaces)
        for k in want:
            assert obs[k].dtype == want[k].dtype and np.array_equal(obs[k], want[k]), k
        kept.append(({k: v.copy() for k, v in obs.items()}, obs))
        obs, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if term or trunc:
            obs, _ = env.reset()
    assert all(all(np.array_equal(c[k], o[k]) for k in c) for c, o in kept)
