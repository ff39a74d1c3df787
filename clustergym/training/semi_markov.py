"""Semi-Markov discounting for PPO, MaskablePPO and A2C: ``gamma`` per unit of simulated time.

clustergym's decisions come at irregular simulated times (arrivals, completions, clock ticks), and
several commands of one epoch take no time at all.  A per-decision ``gamma`` then discounts busy
periods (many decisions per time unit) more than quiet ones, and weighs a command by how many other
decisions follow it rather than by when its consequences happen.  With ``--set semi_markov=true``
the discount between step ``t`` and step ``t + 1`` is

    gamma_t = gamma ** (dt_t / time_unit),

where ``dt_t`` is the simulated time step ``t`` advanced (``info["dt"]``: the env's clock after the
step minus before it; 0 for a command that does not advance time) and ``time_unit`` is the suite
task's ``time_unit``, or 1 for a scenario, or the number given (``--set semi_markov=T``).  It
replaces ``gamma`` in both places of GAE (the per-step ``lambda`` stays per step)::

    delta_t = r_t + gamma_t * V(s_{t+1}) * (1 - done_t) - V(s_t)
    A_t     = delta_t + gamma_t * lambda * (1 - done_t) * A_{t+1}
    R_t     = A_t + V(s_t)                                 (the critic's targets)

and in SB3's bootstrap of a truncated episode (``r_t += gamma_t * V(terminal obs)`` instead of
``gamma * V``).  Past a terminal step the discount does not matter: ``done_t`` cuts the recursion.

Rewards within a step are *not* discounted: a step's reward is attributed to the step's start.
A clustergym reward is already the integral of the cost (or reward) rate over the step
(:mod:`clustergym.envs.reward`), ``r_t = ∫_{t_k}^{t_k + dt_t} c(s) ds``; the exact continuous-time
discounted reward would be ``∫_{t_k}^{t_k + dt_t} gamma ** ((s - t_k) / time_unit) c(s) ds``,
which lies between ``gamma_t * r_t`` and ``r_t`` when the rate does not change sign in the step
(the cost rates of clustergym do not).  We keep ``r_t`` because (1) the relative error is below
``1 - gamma_t``, about ``(1 - gamma) * dt_t / time_unit``: small whenever a step is short against
the discount horizon ``time_unit / (1 - gamma)``; (2) the exact value needs the rate's path
within the step, which the env does not report (its kernel keeps undiscounted integrals;
discounted ones would make the env depend on the learner's ``gamma``); (3) the lump sums
(``reward_timing="start"``, invalid-action penalties) are earned at the step's start anyway.
The discount *between* steps, which is what differs between busy and quiet periods, is exact.
The first step of an episode also pays the reward of the time before the first decision (the env's
reset skips epochs without a choice); no decision influences it.

Pieces: the env reports ``info["dt"]`` (:class:`clustergym.envs.ClusterEnv`); the rollout buffers
here store each step's duration and use it in :meth:`compute_returns_and_advantage`;
:class:`SemiMarkovCallback` fills the durations during ``collect_rollouts``.  SB3 calls
``callback.on_step()`` after ``env.step`` and before ``rollout_buffer.add``, so at that moment the
buffer's ``pos`` is the row the step is about to be written to.

VecNormalize's reward scaling keeps its own per-step ``gamma`` for its running-return estimate: it
only sets the scale of the rewards (one number for the whole run), not the objective.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from clustergym.errors import require_extra

# torch, SB3 and sb3-contrib throughout: without the train extra, importing this module names the extra
require_extra(
    ("torch", "stable_baselines3", "sb3_contrib"), "train", "the semi-Markov discount (clustergym.training.semi_markov)"
)

import torch as th
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer, MaskableRolloutBuffer
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback

from clustergym.errors import ConfigError

__all__ = [
    "SEMI_MARKOV_ALGOS",
    "SemiMarkovRolloutBuffer",
    "SemiMarkovDictRolloutBuffer",
    "SemiMarkovMaskableRolloutBuffer",
    "SemiMarkovMaskableDictRolloutBuffer",
    "SemiMarkovCallback",
    "semi_markov_time_unit",
    "semi_markov_buffer_kwargs",
]

#: the algorithms that take the semi-Markov discount (on-policy, with SB3's rollout buffers)
SEMI_MARKOV_ALGOS = ("ppo", "maskable-ppo", "a2c")


class _SemiMarkovMixin:
    """Per-step durations and the GAE recursion with per-step discounts (mixed into SB3's buffers).

    ``durations`` (``(buffer_size, n_envs)``, simulated time) is NaN until
    :meth:`record_durations` fills a row; :meth:`compute_returns_and_advantage` refuses a buffer
    with a missing duration (the callback was not attached).
    """

    # the attributes of SB3's RolloutBuffer this mixin uses (for type checkers)
    buffer_size: int
    n_envs: int
    pos: int
    gamma: float
    gae_lambda: float
    rewards: np.ndarray
    values: np.ndarray
    episode_starts: np.ndarray
    advantages: np.ndarray
    returns: np.ndarray

    def __init__(self, *args: Any, time_unit: float = 1.0, **kwargs: Any) -> None:
        if not (isinstance(time_unit, (int, float)) and math.isfinite(time_unit) and time_unit > 0):
            raise ConfigError("time_unit", f"expected a positive number of simulated time units, got {time_unit!r}")
        self.time_unit = float(time_unit)
        super().__init__(*args, **kwargs)  # calls reset()

    def reset(self) -> None:
        super().reset()  # type: ignore[misc]
        self.durations = np.full((self.buffer_size, self.n_envs), np.nan)
        self._bootstrap_fix = np.zeros(self.n_envs)

    def discounts(self) -> np.ndarray:
        """``gamma ** (durations / time_unit)``, ``(buffer_size, n_envs)``: the discount between each
        step and the next."""
        return self.gamma ** (self.durations / self.time_unit)

    def record_durations(self, dt: np.ndarray, bootstrap_values: np.ndarray | None = None) -> np.ndarray:
        """Record the durations (simulated time, ``(n_envs,)``) of the step about to be added (row
        ``pos``) and return its discounts.

        ``bootstrap_values`` (``(n_envs,)``, 0 where the episode was not truncated): the value of
        a truncated episode's terminal observation, which SB3 adds to the reward times ``gamma``;
        :meth:`add` turns that into ``gamma_t`` times the value.
        """
        dt = np.asarray(dt, dtype=np.float64).reshape(self.n_envs)
        if not np.all(np.isfinite(dt)) or np.any(dt < 0):
            raise ValueError(f"step durations must be finite and >= 0, got {dt}")
        self.durations[self.pos] = dt
        d = self.gamma ** (dt / self.time_unit)
        if bootstrap_values is not None:
            self._bootstrap_fix = (d - self.gamma) * np.asarray(bootstrap_values, dtype=np.float64).reshape(self.n_envs)
        return d

    def add(self, *args: Any, **kwargs: Any) -> None:
        row = self.pos
        super().add(*args, **kwargs)  # type: ignore[misc]
        self.rewards[row] += self._bootstrap_fix
        self._bootstrap_fix = np.zeros(self.n_envs)

    def compute_returns_and_advantage(self, last_values: th.Tensor, dones: np.ndarray) -> None:
        """GAE(lambda) advantages and TD(lambda) returns with the per-step discounts (module docstring).

        Args:
            last_values: ``V`` of the observation after the last step, one per env.
            dones: whether the last step ended its episode, one per env.
        """
        if np.isnan(self.durations).any():
            raise RuntimeError(
                "semi-Markov rollout buffer: a step's duration is missing; attach SemiMarkovCallback "
                "to learn() (it records info['dt'] of every step)"
            )
        last = last_values.clone().cpu().numpy().flatten().astype(np.float64)
        discounts = self.discounts()
        values = self.values.astype(np.float64)
        gae = np.zeros(self.n_envs)
        for step in reversed(range(self.buffer_size)):
            if step == self.buffer_size - 1:
                non_terminal = 1.0 - dones.astype(np.float64)
                next_values = last
            else:
                non_terminal = 1.0 - self.episode_starts[step + 1].astype(np.float64)
                next_values = values[step + 1]
            g = discounts[step]
            delta = self.rewards[step] + g * next_values * non_terminal - values[step]
            gae = delta + g * self.gae_lambda * non_terminal * gae
            self.advantages[step] = gae
        self.returns = self.advantages + self.values


class SemiMarkovRolloutBuffer(_SemiMarkovMixin, RolloutBuffer):
    """SB3's :class:`RolloutBuffer` (PPO, A2C; Box observations) with the semi-Markov discount."""


class SemiMarkovDictRolloutBuffer(_SemiMarkovMixin, DictRolloutBuffer):
    """SB3's :class:`DictRolloutBuffer` (PPO, A2C; Dict observations) with the semi-Markov discount."""


class SemiMarkovMaskableRolloutBuffer(_SemiMarkovMixin, MaskableRolloutBuffer):
    """sb3-contrib's :class:`MaskableRolloutBuffer` (MaskablePPO; Box observations) with the semi-Markov
    discount."""


class SemiMarkovMaskableDictRolloutBuffer(_SemiMarkovMixin, MaskableDictRolloutBuffer):
    """sb3-contrib's :class:`MaskableDictRolloutBuffer` (MaskablePPO; Dict observations) with the
    semi-Markov discount."""


class SemiMarkovCallback(BaseCallback):
    """Fills the semi-Markov buffer's durations during ``collect_rollouts``: at each ``on_step``
    (after ``env.step``, before ``rollout_buffer.add``) it reads ``info["dt"]`` of every env and,
    for a truncated episode, the value of its terminal observation (SB3's own bootstrap then
    becomes ``gamma_t * V`` in :meth:`_SemiMarkovMixin.add`)."""

    def _on_step(self) -> bool:
        buffer = self.locals["rollout_buffer"]
        if not isinstance(buffer, _SemiMarkovMixin):
            raise TypeError(
                f"SemiMarkovCallback needs a semi-Markov rollout buffer, the model has {type(buffer).__name__} "
                "(pass semi_markov_buffer_kwargs(...) to the algorithm)"
            )
        infos, dones = self.locals["infos"], self.locals["dones"]
        try:
            dt = np.array([float(info["dt"]) for info in infos])
        except KeyError:
            raise KeyError("semi-Markov discount: the env's info has no 'dt' (the step's simulated duration)") from None
        boot = np.zeros(len(infos))
        for i, (done, info) in enumerate(zip(dones, infos, strict=True)):
            # the condition of SB3's timeout bootstrap in collect_rollouts
            if done and info.get("terminal_observation") is not None and info.get("TimeLimit.truncated", False):
                policy: Any = self.model.policy  # an actor-critic policy (on-policy algorithms)
                obs = policy.obs_to_tensor(info["terminal_observation"])[0]
                with th.no_grad():
                    boot[i] = float(policy.predict_values(obs)[0].item())
        buffer.record_durations(dt, boot)
        return True


def semi_markov_time_unit(value: Any, algo: str, task_time_unit: float | None = None) -> float | None:
    """The ``semi_markov`` setting -> the time unit ``gamma`` is per (``None``: per-step discount).

    Args:
        value: ``False`` (off), ``True`` (``gamma`` per ``task_time_unit``, or per 1 simulated time
            unit for a scenario) or a positive number (``gamma`` per that much simulated time).
        algo: the algorithm (one of :data:`SEMI_MARKOV_ALGOS` when on).
        task_time_unit: the suite task's ``time_unit`` (``None`` for a scenario).
    """
    if value is False or value is None:
        return None
    if value is True:
        unit = 1.0 if task_time_unit is None else float(task_time_unit)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        unit = float(value)
    else:
        raise ConfigError(
            "semi_markov",
            f"expected true, false or a positive number of simulated time units (gamma's unit of time), got {value!r}",
        )
    if algo not in SEMI_MARKOV_ALGOS:
        raise ConfigError(
            "semi_markov",
            f"the semi-Markov discount is for the on-policy algorithms ({', '.join(SEMI_MARKOV_ALGOS)}); "
            f"{algo} discounts per step",
        )
    return unit


def semi_markov_buffer_kwargs(algo: str, observation_space: Any, time_unit: float) -> dict[str, Any]:
    """The algorithm's keyword arguments (``rollout_buffer_class``, ``rollout_buffer_kwargs``) for the
    semi-Markov buffer of ``algo`` and its observation space (``Dict`` or not)."""
    from gymnasium import spaces

    is_dict = isinstance(observation_space, spaces.Dict)
    if algo == "maskable-ppo":
        cls: type = SemiMarkovMaskableDictRolloutBuffer if is_dict else SemiMarkovMaskableRolloutBuffer
    else:
        cls = SemiMarkovDictRolloutBuffer if is_dict else SemiMarkovRolloutBuffer
    return {"rollout_buffer_class": cls, "rollout_buffer_kwargs": {"time_unit": time_unit}}
