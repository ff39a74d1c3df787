"""Observations: keys in the space's order, flattening layouts agree, values inside the space."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.spaces import flatten

from clustergym import make_env


@pytest.mark.parametrize("scenario", ["ec2", "bf-trap", "autoscale-4vm", "mris-lemma41"])
def test_observation_keys_come_in_the_space_order_and_flatten_alike(scenario):
    env = make_env(scenario, horizon=5.0) if scenario != "mris-lemma41" else make_env(scenario)
    obs, _ = env.reset(seed=0)
    space = env.observation_space
    assert list(obs) == list(space.spaces)
    assert list(space.spaces)[0] == "free" and list(space.spaces)[-1] == "action_mask"  # the documented order
    by_values = np.concatenate([np.asarray(v, dtype=np.float32).ravel() for v in obs.values()])
    np.testing.assert_array_equal(flatten(space, obs), by_values)
    assert space.contains(obs)
