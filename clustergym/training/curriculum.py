"""Curricula: training stages on other loads and cluster sizes before the scenario itself.

A curriculum is a list of stages ``(steps, params)``.  Each stage trains for ``steps`` environment
steps on the training scenario with some of its parameters changed (``load=1.5``,
``num_servers=10``, ...); the stages run in order, then the rest of the run's steps train on the
scenario, or the suite task, itself.  ``clustergym train TASK --stage 100000:load=1.5 --stage
100000:load=1.25 --timesteps 300000`` trains 100k steps at 1.5 times the load, 100k at 1.25 times,
and 100k on the task.  A stage may also cover the whole run (no step on the task itself): training
on the task's episodes at another load, evaluated on the task.

On a suite task every stage keeps the task's environment: its observation (the features scaled as
the task scales them, :mod:`clustergym.suite.env`), its start, horizon and environment settings;
only the scenario's parameters change.  A model trained on the task's *preset* with other
parameters learns on the environment's own observation instead (and is fed that one when it runs
on the task, :class:`clustergym.learned.model_agent.ModelAgent`): the stage is the way to train on
another load with the task's observation.

Changing the number of servers changes the observation's shapes: the equivariant policy's weights
do not depend on them (:func:`clustergym.learned.policies.transfer_policy`), so at the boundary the
model is rebuilt on the new environments with the same weights, optimizer state, step count and
reward-normalisation statistics.  The ``mlp`` policy, and the equivariant one with
``policy.server_ids``, are tied to one size: their stages may change the load, not the size.

Evaluations during training (``--eval-every``) always run the scenario or task itself, so the
curve of a curriculum run is comparable with that of a plain run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clustergym.errors import ConfigError
from clustergym.validation import settings

__all__ = ["Stage", "check_stages", "phases", "make_stage_env"]


@dataclass(frozen=True)
class Stage:
    """One stage: ``steps`` environment steps with the scenario parameters ``params`` changed."""

    steps: int
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"steps": self.steps, "params": dict(self.params)}


def check_stages(stages: Sequence[Any], timesteps: int) -> list[Stage]:
    """The stages as :class:`Stage` (from ``Stage``, ``(steps, params)`` or the ``model.json`` form),
    checked: positive integer steps, parameters a dict, and at most ``timesteps`` steps in all."""
    out: list[Stage] = []
    for i, s in enumerate(stages):
        where = f"stage {i + 1}"
        if isinstance(s, dict):
            s = (s.get("steps"), s.get("params", {}))
        if isinstance(s, Stage):
            s = (s.steps, s.params)
        if not isinstance(s, (tuple, list)) or len(s) != 2:
            raise ConfigError(where, f"a stage is (steps, {{parameter: value}}), got {s!r}")
        steps = settings.number(s[0], f"{where}.steps", lo=1, integer=True)
        if not isinstance(s[1], dict) or not s[1]:
            raise ConfigError(f"{where}.params", f"a stage changes at least one scenario parameter, got {s[1]!r}")
        out.append(Stage(int(steps), dict(s[1])))
    total = sum(s.steps for s in out)
    if total > timesteps:
        raise ConfigError(
            "curriculum",
            f"the stages take {total:,} steps, more than --timesteps {timesteps:,} (the run's steps, stages included)",
        )
    return out


def phases(stages: Sequence[Stage], timesteps: int) -> list[tuple[int, dict[str, Any]]]:
    """``[(end_step, params)]``: each stage's last step, with its parameters, then ``(timesteps, {})``
    for the scenario itself if steps remain after the stages."""
    out, end = [], 0
    for s in stages:
        end += s.steps
        out.append((end, dict(s.params)))
    if end < timesteps:
        out.append((timesteps, {}))
    return out


def _total_rate(scenario: Any) -> float | None:
    rates = scenario.source.arrival_rates()
    return None if rates is None else float(sum(rates))


def make_stage_env(task: Any, stage_params: dict[str, Any], env_kwargs: dict[str, Any]) -> Any:
    """A suite task's environment on its preset with ``stage_params`` changed: the task's observation,
    start, horizon and settings (:class:`clustergym.suite.env.TaskEnv`), and its step bound scaled by
    the ratio of the arrival rates (more arrivals, more decisions before the horizon)."""
    from gymnasium.wrappers import TimeLimit

    from clustergym.envs import make_env
    from clustergym.scenarios import resolve_scenario
    from clustergym.suite.env import TaskEnv

    sc = resolve_scenario(task.preset, **{**dict(task.params), **stage_params}).with_horizon(task.horizon)
    base, rate = _total_rate(task.scenario()), _total_rate(sc)
    scale = rate / base if base and rate else 1.0
    env = TaskEnv(make_env(sc, **{**task.env_kwargs(), **env_kwargs}), task)
    bound = round(task.max_episode_steps * max(1.0, scale), 6)  # rounding first: 1.5 x 4000 is 6000, not 6001
    return TimeLimit(env, max_episode_steps=math.ceil(bound))
