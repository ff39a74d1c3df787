"""Action spaces: malformed actions are never executed, and the invalid-action policies."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.error import ResetNeeded

from clustergym import ClusterEnv, ConfigError, InvalidCommandError, make_env

MALFORMED = [
    -1,
    -5,
    10**9,
    None,
    float("nan"),
    2.7,
    3.0,
    "3",
    True,
    False,
    np.True_,
    [1, 2],
    (0,),
    np.array([1, 2, 3, 4]),
    np.array(-1),
    np.array([0, 0]),
    {"a": 1},
]


def _modes():
    return [
        ("bf-trap", "head"),
        ("bf-trap", "slot"),
        ("bf-trap", "command"),
        ("autoscale-4vm", "admit"),
        ("autoscale-4vm", "command"),
    ]


@pytest.mark.parametrize("scenario,mode", _modes())
def test_malformed_actions_are_refused_and_never_executed(scenario, mode):
    env = ClusterEnv(scenario, action_mode=mode, horizon=20.0)
    env.reset(seed=0)
    for action in MALFORMED:
        if env.action_space.contains(action) and not isinstance(action, (bool, np.bool_)):
            continue  # e.g. a valid MultiDiscrete triple: not malformed
        before = (env.sim.now, env.sim.n_started, env.sim.n_queued, env.sim.n_rejected)
        _, reward, _, _, info = env.step(action)
        assert info["invalid_action"], (mode, action)
        assert "not an action" in info["invalid_reason"] or "boolean" in info["invalid_reason"]
        assert reward == env.invalid_penalty
        assert (env.sim.now, env.sim.n_started, env.sim.n_queued, env.sim.n_rejected) == before, (mode, action)


def test_negative_slot_action_used_to_place_a_queued_job():
    """Regression: divmod(-1, L) indexed the queue window from the end and placed a job."""
    env = ClusterEnv("bf-trap", action_mode="slot", horizon=50.0)
    env.reset(seed=1)
    while not env.sim.queue:  # reach a state with a queued job
        env.step(env.action_space.n - 1)
    started = env.sim.n_started
    _, _, _, _, info = env.step(-1)
    assert info["invalid_action"] and env.sim.n_started == started


def test_raise_policy_names_the_action_and_the_reason():
    env = ClusterEnv("bf-trap", action_mode="slot", horizon=20.0, invalid_action="raise")
    env.reset(seed=0)
    with pytest.raises(InvalidCommandError, match=r"action 2\.7 .*not an action of Discrete"):
        env.step(2.7)


def test_wait_policy_moves_time_on_with_the_penalty():
    env = ClusterEnv("bf-trap", horizon=20.0, invalid_action="wait", invalid_penalty=-2.0)
    env.reset(seed=0)
    t0 = env.sim.now
    _, reward, _, _, info = env.step(-1)
    assert info["invalid_action"] and env.sim.now > t0
    assert reward <= -2.0  # the penalty plus the (non-positive) queue integral of the time skipped


def test_unmasked_random_agent_finishes_an_episode_under_wait():
    env = make_env("ec2", horizon=5.0, invalid_action="wait")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(1, 100_000):
        _, _, term, trunc, _ = env.step(int(rng.integers(env.action_space.n)))
        if term or trunc:
            break
    assert term or trunc


def test_unknown_invalid_action_policy_is_a_config_error():
    with pytest.raises(ConfigError, match="invalid_action"):
        ClusterEnv("bf-trap", invalid_action="ignore")


def test_step_before_reset_says_reset():
    with pytest.raises(ResetNeeded, match="reset"):
        ClusterEnv("bf-trap").step(0)


@pytest.mark.parametrize(
    "action",
    [
        np.array([99, 0, 0]),
        np.array([-1, 0, 0]),
        np.array([0, -1, 0]),
        np.array([0, 0, 0, 0]),
        np.array([0, 0]),
        [0.5, 0, 0],
    ],
)
def test_command_arrays_with_unknown_codes_or_the_wrong_length_are_never_executed(action):
    env = ClusterEnv("bf-trap", action_mode="command", horizon=20.0)
    env.reset(seed=0)
    assert not env.action_space.contains(action)
    before = (env.sim.now, env.sim.n_started, env.sim.n_queued, env.sim.n_rejected)
    _, reward, _, _, info = env.step(action)
    assert info["invalid_action"] and reward == env.invalid_penalty
    assert (env.sim.now, env.sim.n_started, env.sim.n_queued, env.sim.n_rejected) == before
    raising = ClusterEnv("bf-trap", action_mode="command", horizon=20.0, invalid_action="raise")
    raising.reset(seed=0)
    with pytest.raises(InvalidCommandError):
        raising.step(action)
