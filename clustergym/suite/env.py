"""The environment of a suite task: a :class:`~clustergym.envs.ClusterEnv` in :class:`TaskEnv`.

``gymnasium.make("clustergym/<task>-v1")`` calls :func:`make_task_env`, which builds the task's
scenario with the task's environment arguments (action mode, queue window, reward scale and timing,
``invalid_action="wait"``, the invalid-action penalty) and wraps it in :class:`TaskEnv`; Gymnasium
adds ``TimeLimit(max_episode_steps)``.

:class:`TaskEnv` changes three things and nothing else (rewards and dynamics are the env's):

* **the start**: with a warm start, the task's setup agent places the jobs that arrive at time 0
  before the first decision (its commands are not steps of the episode);
* **the observation**: no clock, and bounded features (:data:`OBSERVATION_TABLE`);
* **info**: ``info["score"]``, the episode's score so far, at every step, and at the last step
  ``info["task"]``, the window's metrics (:func:`window_metrics`).

Observation (``L`` servers, ``R`` resources, ``J`` types, ``K`` window rows,
``F = R + J + 3`` job features: demand / largest capacity (``R``), one-hot type (``J``),
``log1p(weight)``, ``log1p(waited / time_unit)``, ``log1p(work / time_unit)`` if the task is
clairvoyant else 0), keys in this order (the order of the ``Dict`` space, so
``np.concatenate(list(obs.values()))`` and ``gymnasium.spaces.flatten`` agree):

================== =========== =====================================================================
key                shape       content
================== =========== =====================================================================
``free``           (L, R)      free capacity / capacity, in [0, 1]
``running``        (L, J)      ``log1p`` of the real jobs of each type running on each server
``dummies``        (L, J)      ``log1p`` of the dummy jobs and reservation slots of each type
``queue_counts``   (J,)        ``log1p`` of the waiting jobs of each type
``queue_jobs``     (K, F)      the first K waiting jobs (arrival order), job features as above
``queue_mask``     (K,)        1 where a queue-window row holds a job
``event``          (5 + F,)    one-hot event kind (completion, arrival, tick, wake-up, start), then
                               the features of the event's job
``event_server``   (L,)        one-hot server of the event (zeros if none)
``arrival_rates``  (J,)        ``log1p`` of the arrival-rate estimate per type x time_unit / L
``action_mask``    (M,)        1 for the valid actions of the action mode (int8)
================== =========== =====================================================================

Every float feature is clipped to ``[0, 10]`` (``log1p`` reaches 10 at 22,025).  There is no
``time`` key: the elapsed time would be a clock (a policy could learn the horizon).  With the env
argument ``pair_features=True`` (not a task default: a training choice a model records) the
environment's ``pair_scores`` key follows, unchanged (:mod:`clustergym.envs.observation`).
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym

from clustergym.core.objectives import objective
from clustergym.envs import ClusterEnv, make_env
from clustergym.envs.observation import SCALED_CAP, SCALED_KEYS
from clustergym.suite.tasks import Task
from clustergym.suite.tasks import task as get_task

__all__ = ["FEATURE_CAP", "OBSERVATION_KEYS", "TaskEnv", "make_task_env", "window_metrics"]

#: the observation's keys, in order, and the cap of every float feature (the scaled observation's)
OBSERVATION_KEYS = SCALED_KEYS
FEATURE_CAP = SCALED_CAP


def window_metrics(env: Any) -> dict[str, Any]:
    """The score and metrics of a task episode so far, from its environment (``env.unwrapped``).

    The window is ``[0, now]``; once the episode has ended by its horizon or by draining (a trace
    window whose jobs have all left), ``[0, horizon]``: nothing happens after a drain, so the time
    integrals are final.  ``complete`` is False for an episode cut short (by the step bound).

    Returns ``score`` (``sign x integral / window``), ``metric`` (its name), ``value`` (the metric),
    ``window``, ``complete``, and ``arrivals``, ``started``, ``completed``, ``rejected``,
    ``queued_at_end``.
    """
    inner = env.unwrapped
    sim = inner.sim
    obj = objective(inner.objective)
    value, window, complete = _window_value(sim, obj.integral)
    return {
        "score": obj.sign * value,
        "metric": obj.metric,
        "value": value,
        "window": window,
        "complete": complete,
        "arrivals": int(sim.n_arrivals),
        "started": int(sim.n_started),
        "completed": int(sim.n_completed),
        "rejected": int(sim.n_rejected),
        "queued_at_end": int(sim.n_queued),
    }


def _window_value(sim: Any, integral_name: str) -> tuple[float, float, bool]:
    """``(value, window, complete)`` of :func:`window_metrics`: the integral ``integral_name`` over the window."""
    integral = float(getattr(sim.integrals, integral_name))
    horizon = float(sim.horizon)
    complete = bool(sim.truncated or sim.terminated)
    window = horizon if complete and math.isfinite(horizon) else float(sim.now)
    return (integral / window if window > 0 else 0.0), window, complete


class TaskEnv(gym.Wrapper):
    """A suite task's environment: the start, the observation and ``info`` of the task (module docstring).

    Args:
        env: the task's :class:`~clustergym.envs.ClusterEnv`.
        task: the :class:`~clustergym.suite.tasks.Task`.
    """

    def __init__(self, env: gym.Env, task: Task):
        super().__init__(env)
        self.task = task
        inner, space = env.unwrapped, env.observation_space
        if not isinstance(inner, ClusterEnv) or not isinstance(space, gym.spaces.Dict):
            raise TypeError(f"a task's environment is a ClusterEnv with its Dict observation, got {env!r}")
        self._inner = inner
        self._objective = objective(inner.objective)
        #: the time unit of the scaled observation this wrapper shows (a trained model looks for it)
        self.observation_time_unit = float(task.time_unit)
        # the env builds the scaled observation itself, in its builder's buffers (no second pass here);
        # its own observation space, and ``env.unwrapped._obs()``, stay the environment's own
        self.observation_space = inner.obs_builder.use_scaling(self.observation_time_unit)
        self._carry = 0.0

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._carry = 0.0
        if self.task.warm_start is not None:
            obs, info = self._warm_start(obs, info, seed)
        info["score"] = 0.0
        return obs, info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._carry:
            reward, self._carry = float(reward) + self._carry, 0.0
        if terminated or truncated:
            m = window_metrics(self.env)
            info["score"] = m["score"]
            info["task"] = {"id": self.task.id, **m}
        else:  # the score alone, as window_metrics computes it
            obj = self._objective
            info["score"] = obj.sign * _window_value(self._inner.sim, obj.integral)[0]
        return obs, reward, terminated, truncated, info

    def task_metrics(self) -> dict[str, Any]:
        """The window's score and metrics so far (:func:`window_metrics`)."""
        return {"id": self.task.id, **window_metrics(self.env)}

    # ------------------------------------------------------------------ the start
    def _warm_start(self, obs: Any, info: dict, seed: int | None) -> tuple[Any, dict]:
        """The setup agent acts at every epoch at time 0 (the env shows it every epoch); the rewards
        earned meanwhile are paid with the first step.  Its decisions depend on the state only, so
        every agent's episode starts from the same state."""
        from clustergym.agent_api import make_agent
        from clustergym.learned.rule_select import RuleDriver

        assert self.task.warm_start is not None
        setup = RuleDriver([make_agent(self.task.warm_start)], [self.task.warm_start])
        steps, last_obs, reward, last_info = self._inner.drive_rule(setup, until=0.0, seed=seed)
        self._carry += reward
        if steps:
            obs, info = last_obs, last_info
        info.pop("invalid_action", None)
        info.pop("dt", None)  # reset's info, as the env's: no step-only keys
        return obs, info


def make_task_env(task: str | Task, **kwargs: Any) -> TaskEnv:
    """The environment of a suite task (the entry point of ``clustergym/<task>-v1``).

    ``kwargs`` are :class:`~clustergym.envs.ClusterEnv` arguments; the task's own
    (:meth:`Task.env_kwargs`: action mode, queue window, reward scale and timing, invalid-action
    policy and penalty) are the defaults.  The scenario and its horizon are the task's: preset
    parameters and ``horizon`` are refused.  Agents that read the state through ``env.view`` pass
    ``observe=False`` (the runner does) and rule-based agents add their decision epochs.
    """
    from clustergym.envs.factory import ENV_KWARGS
    from clustergym.errors import ConfigError

    t = task if isinstance(task, Task) else get_task(task)
    bad = sorted(k for k in kwargs if k not in ENV_KWARGS or k == "horizon")
    if bad:
        raise ConfigError(
            bad[0],
            f"suite task {t.name!r} fixes its scenario and horizon; {bad[0]!r} is not an "
            "environment argument it takes (train on the preset "
            f"{t.preset!r} to change them)",
        )
    env_kwargs = {**t.env_kwargs(), **kwargs}
    return TaskEnv(make_env(t.scenario(), **env_kwargs), t)
