"""What an agent may read: :class:`AgentContext`, built from an environment by :func:`agent_context`.

An agent is handed a context at the start of each episode (``agent.reset(context, seed)``), never
the environment: it reads the state through the context's read-only
:class:`~clustergym.core.view.ClusterView`, and the few environment facts a baseline genuinely needs
(the scenario, the objective, the spaces and action mask a masked policy samples from, the
environment's own observation a saved model may have been trained on) through the fields below.
It cannot step, reset or reconfigure the environment, nor reach the kernel's mutable state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from clustergym.core.view import ClusterView
from clustergym.scenarios.spec import Scenario

__all__ = ["AgentContext", "agent_context", "AGENT_STREAM"]

#: the stream of :meth:`AgentContext.generator` that rule-based agents draw from (their seeding since
#: the first release: ``SeedSequence([seed, AGENT_STREAM])``)
AGENT_STREAM = 0xA9E17


@dataclass(frozen=True)
class AgentContext:
    """The read-only world of an agent during one episode.

    Attributes:
        view: the kernel's state, read-only (:class:`~clustergym.core.view.ClusterView`: servers'
            ``(L, R)`` capacity and load, ``(L, J)`` job counts, the queues, the epoch's event, the
            clock in the scenario's time unit; oracle data -- rates, speeds -- marked as such).
        scenario: the :class:`~clustergym.scenarios.spec.Scenario` being run (its workload, routing,
            objective; an agent that reads its rates is an oracle and says so, ``uses_oracle``).
        objective: the objective's name (``queue``, ``system``, ``weighted-system`` or ``reward``;
            :mod:`clustergym.core.objectives`), the metric the episode is scored on.
        observation_space: the observation space as the agent is shown it (after every wrapper,
            e.g. a suite task's scaled ``Dict``).
        action_space: the action space of the environment's action mode (``Discrete(L + 1)``,
            ``Discrete(K * L + 1)`` or ``MultiDiscrete([12, A, L])``; :mod:`clustergym.envs.actions`).
        action_mask: returns the current ``(mask_size,)`` bool mask of valid actions (the array
            ``action_masks()`` returns; read it, do not write it).
        seed: the episode's seed (``None``: unseeded); :meth:`generator` derives the agent's own
            generator from it, independent of the environment's streams.
        base_observation: returns the environment's own observation at the current epoch, beneath
            any wrapper that rescales it (``None`` for an environment without one): what a model
            trained on the plain environment reads on a suite task.
        base_observation_space: the space of :attr:`base_observation` (``None`` with it).
        observation_time_unit: the time unit of the scaled observation the agent is shown (a suite
            task's, :mod:`clustergym.envs.observation`), or ``None`` when the observation is the
            environment's own.
    """

    view: ClusterView
    scenario: Scenario
    objective: str
    observation_space: spaces.Space
    action_space: spaces.Space
    action_mask: Callable[[], np.ndarray]
    seed: int | None = None
    base_observation: Callable[[], Any] | None = None
    base_observation_space: spaces.Space | None = None
    observation_time_unit: float | None = None

    def generator(self, stream: int = AGENT_STREAM) -> np.random.Generator:
        """A new generator seeded by ``(seed, stream)`` (seed ``None`` counts as 0): every call gives
        the same sequence, so several agents sharing one context each get their own generator."""
        return np.random.default_rng(np.random.SeedSequence([0 if self.seed is None else self.seed, stream]))

    def with_seed(self, seed: int | None) -> AgentContext:
        """This context for an episode with another seed."""
        return self if seed == self.seed else dataclasses.replace(self, seed=seed)


def agent_context(env: Any, seed: int | None = None) -> AgentContext:
    """The context of an agent acting on ``env`` (a :class:`~clustergym.envs.ClusterEnv` or any
    wrapper chain over one, such as a suite task's), for an episode seeded by ``seed``.

    Raises:
        TypeError: ``env`` is not a clustergym environment (nothing in its chain has a cluster view).
    """
    inner = getattr(env, "unwrapped", env)
    if not isinstance(getattr(inner, "view", None), ClusterView):
        raise TypeError(f"{env!r} is not a clustergym environment: an agent's context needs its ClusterView")
    time_unit: float | None = None
    layer = env
    while layer is not None and layer is not inner:  # the outermost wrapper showing a scaled observation
        unit = getattr(layer, "observation_time_unit", None)
        if unit is not None:
            time_unit = float(unit)
            break
        layer = getattr(layer, "env", None)
    scaled = time_unit is not None
    return AgentContext(
        view=inner.view,
        scenario=inner.scenario,
        objective=inner.objective,
        seed=seed,
        observation_space=env.observation_space,
        action_space=env.action_space,
        action_mask=inner.action_masks,
        base_observation=inner._obs if scaled else None,
        base_observation_space=inner.observation_space if scaled else None,
        observation_time_unit=time_unit,
    )
