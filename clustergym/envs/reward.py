"""Reward functions: the environment pays the increments of a cumulative score.

A reward function maps the kernel's state to *the return so far* (a float); each ``step`` pays
the difference between its value after the step and before it.  Because the kernel keeps exact
time integrals of everything an objective uses, this works in continuous time: the reward of a
step that advances time from ``t0`` to ``t1`` is the integral of the objective's rate over
``[t0, t1)``, and the reward of a command that changes no integral is 0.  Any function of the
episode so far can be a reward (a count of rejections, a weighted sum of integrals, ...): pass an
instance to ``ClusterEnv(reward_fn=...)``, as Jumanji environments take a ``RewardFn``.

The default, :class:`ObjectiveReward`, integrates the scenario's objective
(:mod:`clustergym.core.objectives`), so the episode return equals the paper metric times the
horizon (times ``scale``); :class:`StartReward` pays an admitted job's whole reward when it starts (or, ``expected=True``,
its expected reward: the reward rate times the type's mean service time).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from clustergym.core.objectives import objective
from clustergym.core.simulator import Simulator
from clustergym.errors import ConfigError
from clustergym.validation import settings

__all__ = ["RewardFn", "ObjectiveReward", "StartReward", "make_reward_fn"]


class RewardFn(ABC):
    """The return so far of an episode, as a function of the kernel's state."""

    @abstractmethod
    def __call__(self, sim: Simulator) -> float:
        """The cumulative score at the simulator's current time (the env pays its increments)."""


class ObjectiveReward(RewardFn):
    """``sign x ∫ rate dt x scale`` for a scenario objective: ``-∫ queue length dt`` (``queue``),
    ``-∫ jobs in system dt``, ``-∫ Σ weights in system dt``, or ``+∫ Σ reward rates in service dt``.

    Args:
        objective: ``queue``, ``system``, ``weighted-system`` or ``reward``.
        scale: multiplies every reward.
    """

    def __init__(self, objective_name: str, scale: float = 1.0):
        obj = objective(objective_name)
        self.objective = objective_name
        self.sign = obj.sign
        self.integral = obj.integral
        self.scale = float(scale)

    def __call__(self, sim: Simulator) -> float:
        return (self.sign * getattr(sim.integrals, self.integral)) * self.scale


class StartReward(RewardFn):
    """For the ``reward`` objective: each job's reward rate times its service time, paid in the step
    that starts it (``reward_timing="start"``).  The expected return in steady state is the same as
    :class:`ObjectiveReward`'s, but an admission is credited to the decision that made it instead of
    being spread over the next hundreds of decisions together with every other job's reward.

    ``expected=True`` (``reward_timing="expected"``) pays the reward rate times the job type's *mean*
    service time on its server (``mean_work / speed``) instead of the drawn one.  When service times
    are drawn independently of the decisions (every non-clairvoyant scenario), the expected return is
    unchanged, and the step's reward no longer carries the noise of a service time that the decision
    did not influence: with exponential service its standard deviation equals its mean.
    """

    def __init__(self, scale: float = 1.0, expected: bool = False):
        self.scale = float(scale)
        self.expected = bool(expected)

    def __call__(self, sim: Simulator) -> float:
        return (sim.reward_started_mean if self.expected else sim.reward_started) * self.scale


def make_reward_fn(objective_name: str, *, timing: Any = "integral", scale: float = 1.0) -> RewardFn:
    """The reward of an objective under a ``reward_timing`` (``"integral"``, ``"start"`` or ``"expected"``)."""
    objective(objective_name)
    timing = settings.choice(timing, "reward_timing", ("integral", "start", "expected"))
    if timing == "integral":
        return ObjectiveReward(objective_name, scale)
    if objective_name != "reward":
        raise ConfigError(
            "reward_timing",
            f"{timing!r} pays the rewards of the 'reward' objective; the scenario has objective {objective_name!r}",
        )
    return StartReward(scale, expected=timing == "expected")
