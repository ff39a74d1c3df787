"""The observation adapter of a saved model is chosen from its metadata and the agent's context
(:mod:`clustergym.learned.observations`), not by reaching into the environment."""

from __future__ import annotations

import numpy as np
import pytest

from clustergym.agent_api import agent_context
from clustergym.envs.observation import scaled_observation
from clustergym.errors import ConfigError
from clustergym.learned.observations import AsShown, EnvBeneath, TaskScaled, observation_adapter, trained_observation
from clustergym.suite import find_task, make_task_env

TASK = "autoscale-syn4"


@pytest.fixture(scope="module")
def contexts():
    """The agent's context on the suite task (scaled observation) and on its plain scenario, after a
    few steps so that the observations hold waiting times and counts."""
    from clustergym.envs import make_env

    task = find_task(TASK)
    out = {}
    for shown, env in (("task", make_task_env(TASK)), ("env", make_env(task.scenario()))):
        obs, _ = env.reset(seed=3)
        for _ in range(30):
            obs, *_ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        out[shown] = (agent_context(env, seed=3), obs, env)
    return out


@pytest.mark.parametrize(
    ("meta", "shown", "adapter"),
    [
        ({"observation": "task", "observation_time_unit": 1.0}, "task", AsShown),
        ({"observation": "task", "observation_time_unit": 1.0}, "env", TaskScaled),
        ({"observation": "env"}, "env", AsShown),
        ({"observation": "env"}, "task", EnvBeneath),
        ({"observation": "as-run"}, "task", AsShown),
        ({"observation": "as-run"}, "env", AsShown),
        ({"task": TASK, "observation_time_unit": 1.0}, "env", TaskScaled),  # saved before "observation"
        ({}, "task", EnvBeneath),  # an old model trained on a scenario
    ],
)
def test_the_adapter_is_chosen_from_the_metadata_and_the_context(contexts, meta, shown, adapter):
    context, obs, env = contexts[shown]
    a = observation_adapter(meta, context)
    assert type(a) is adapter
    seen = a(obs)
    assert a.space.contains(seen)
    inner = env.unwrapped._obs()  # the environment's own observation, to check the adapters against
    if adapter is AsShown:
        assert seen is obs
    elif adapter is EnvBeneath:
        assert list(seen) == list(inner) and all(np.array_equal(seen[k], inner[k]) for k in inner)
        assert "time" in seen and "time" not in obs  # the raw observation, not the task's
    else:
        view = context.view
        expected = scaled_observation(obs, view.num_resources, view.num_types, meta["observation_time_unit"])
        assert all(np.array_equal(seen[k], expected[k]) for k in expected)
        assert not np.array_equal(seen["running"], obs["running"])  # scaled, not as shown


def test_trained_observation_reads_model_json_and_the_older_forms():
    assert trained_observation({"observation": "env", "task": TASK}) == "env"
    assert trained_observation({"task": TASK}) == "task"
    assert trained_observation({"scenario": "autoscale-4vm"}) == "env"


def test_a_task_model_without_its_time_unit_is_refused_on_a_plain_environment(contexts):
    with pytest.raises(ConfigError, match="observation_time_unit") as e:
        observation_adapter({"observation": "task", "task": TASK}, contexts["env"][0], name="m.zip")
    assert "m.zip" in str(e.value) and TASK in str(e.value)
