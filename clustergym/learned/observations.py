"""The observation a saved model reads, chosen from its metadata.

A model learns on one observation: a suite task's scaled ``Dict`` (``model.json``: ``"observation":
"task"``), the environment's own (``"env"``), or, for a plain SB3 save without ``model.json``, the
observation of whatever environment it is run on (``"as-run"``, :mod:`clustergym.learned.outside`).
Wherever the model runs, :func:`observation_adapter` picks, from that metadata and the agent's
:class:`~clustergym.agent_api.AgentContext` (never the environment), the adapter that turns the
observation the agent is shown into the one the model learned on:

==========  =====================================  ===========================================
trained on  the agent is shown                     adapter
==========  =====================================  ===========================================
``task``    a task's scaled observation            :class:`AsShown`
``task``    the environment's own                  :class:`TaskScaled` (``observation_time_unit``
                                                   from ``model.json``)
``env``     the environment's own                  :class:`AsShown`
``env``     a task's scaled observation            :class:`EnvBeneath` (the context's
                                                   ``base_observation``)
``as-run``  anything                               :class:`AsShown`
==========  =====================================  ===========================================

:class:`~clustergym.learned.model_agent.ModelAgent` applies the adapter to every observation before
its policy reads it, so the policy never sees features scaled otherwise than in training.  A policy
that only maps observations to actions (an object with SB3's ``predict``) reads the observation it
is shown, unadapted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from gymnasium import spaces

from clustergym.agent_api import AgentContext
from clustergym.errors import ConfigError

__all__ = ["ObservationAdapter", "AsShown", "EnvBeneath", "TaskScaled", "trained_observation", "observation_adapter"]

Observation = dict[str, np.ndarray]


class ObservationAdapter(Protocol):
    """Turns the observation an agent is shown into the one its model learned on."""

    @property
    def space(self) -> spaces.Space:
        """The observation space of the adapted observations (the model's input space)."""
        ...

    def __call__(self, obs: Observation) -> Observation: ...


@dataclass(frozen=True)
class AsShown:
    """The observation as the agent is shown it: the model learned on that same observation."""

    space: spaces.Space

    def __call__(self, obs: Observation) -> Observation:
        return obs


@dataclass(frozen=True)
class EnvBeneath:
    """The environment's own observation beneath a task's scaled one (a model trained on a scenario,
    run on a suite task of it): ``read`` is the context's ``base_observation``, called at each epoch."""

    space: spaces.Space
    read: Callable[[], Observation]

    def __call__(self, obs: Observation) -> Observation:
        return self.read()


@dataclass(frozen=True)
class TaskScaled:
    """The environment's own observation scaled as the model's suite task scales it (a model trained on a
    task, run on a scenario): :func:`clustergym.envs.observation.scaled_observation` over ``R`` resources
    and ``J`` job types with times in ``time_unit`` (the task's, recorded in ``model.json``)."""

    space: spaces.Space
    num_resources: int
    num_types: int
    time_unit: float

    def __call__(self, obs: Observation) -> Observation:
        from clustergym.envs.observation import scaled_observation

        return scaled_observation(obs, self.num_resources, self.num_types, self.time_unit)


def trained_observation(meta: Mapping[str, Any]) -> str:
    """The observation a model learned on, from its metadata: ``model.json``'s ``observation`` (``task``,
    ``env``, or ``as-run`` for a plain SB3 save); models saved before it was recorded: ``task`` when they
    name a suite task, else ``env``."""
    return str(meta.get("observation") or ("task" if meta.get("task") else "env"))


def observation_adapter(meta: Mapping[str, Any], context: AgentContext, name: str = "model") -> ObservationAdapter:
    """The adapter from what ``context`` shows the agent to what the model of ``meta`` learned on (the
    module docstring's table).

    Raises:
        ConfigError: a model trained on a task's scaled observation, run on a plain environment, whose
            ``model.json`` does not record the task's time unit (``observation_time_unit``).
    """
    trained_on = trained_observation(meta)
    scaled = context.observation_time_unit is not None  # the agent is shown a scaled observation (a task's)
    if trained_on == "env" and scaled and context.base_observation is not None:
        assert context.base_observation_space is not None
        return EnvBeneath(context.base_observation_space, context.base_observation)
    if trained_on == "task" and not scaled:
        tau = meta.get("observation_time_unit")
        if tau is None:
            raise ConfigError(
                "agent",
                f"{name}: this model learned on the scaled observation of {meta.get('task')} and "
                "its model.json does not record the time unit (observation_time_unit): run it on that task",
            )
        from clustergym.envs.observation import scaled_observation_space

        space = scaled_observation_space(context.observation_space)  # type: ignore[arg-type]
        return TaskScaled(space, context.view.num_resources, context.view.num_types, float(tau))
    return AsShown(context.observation_space)
