"""Admission baselines for loss systems (autoscale.md §2.5.4, §2.6, §5 item 21).

* ``power-of-d`` -- the paper's §7.2 baseline (Xie et al. 2015): at an arrival,
  sample ``d`` distinct servers uniformly at random (without replacement) and
  admit the job to the least loaded of them *if it fits there*, else reject
  (the paper's wording; ``fallback=true`` tries the other sampled servers in
  load order).  Load of a server = its largest normalised utilisation, ties by
  the sum of normalised utilisations, then server id (utilisations within
  ``SCORE_RTOL`` are ties, :mod:`clustergym.core.cluster`).  ``d = 5`` by default.
* ``trunk-reservation`` -- the classical threshold policy that DRA generalises
  (§2.3.8, §2.6; not a paper baseline): with types ranked by reward rate
  (``m = 1`` + the number of types with a strictly larger ``u_j``), admit a
  type of rank ``m`` only if at least ``tau_m = (m - 1) g`` servers are empty
  (``tau_1 = 0``: the top type is admitted whenever it fits), placing it by
  Best-Fit; reject otherwise.  ``g`` defaults to DRA's ``g(L)``.

Neither uses reservation slots, migration or the arrival rates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clustergym.agent_api import Agent, AgentRequirements, register_agent
from clustergym.autoscale_lp import default_g, type_rewards
from clustergym.baselines.greedy import select_server
from clustergym.core.cluster import score_ranks
from clustergym.core.commands import Cmd, Command
from clustergym.core.simulator import EpochConfig
from clustergym.errors import ScenarioError

__all__ = ["PowerOfD", "TrunkReservation", "least_loaded_order"]

_ADMIT_REQ = AgentRequirements(
    epochs=EpochConfig(arrivals=True, completions=False, dummy_completions=False),
    commands=frozenset({Cmd.WAIT, Cmd.ADMIT, Cmd.REJECT}), queueing=("loss",))


def _int_param(name: str, value: Any, lo: int) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ScenarioError(f"agent.{name}", f"expected an integer, got {value!r}") from None
    if float(value) != v or v < lo:
        raise ScenarioError(f"agent.{name}", f"expected an integer >= {lo}, got {value!r}")
    return v


@register_agent("power-of-d")
class PowerOfD(Agent):
    """Power-of-d choices (§7.2): least loaded of d random servers if the job fits there, else reject."""

    description = "power-of-d choices (d=5): least loaded of d random servers if it fits, else reject"
    requirements = _ADMIT_REQ

    def __init__(self, d: int = 5, fallback: bool = False, **params: Any):
        super().__init__(**params)
        self.d = _int_param("d", d, 1)
        if isinstance(fallback, str):
            fallback = fallback.lower() in ("1", "true", "yes", "on")
        self.fallback = bool(fallback)
        self._epoch = -1

    def reset(self, env: Any, seed: int | None = None) -> None:
        super().reset(env, seed)
        self._epoch = -1
        cap = np.asarray(self.view.capacity, dtype=float)
        self._inv = np.where(cap > 0, 1.0 / np.where(cap > 0, cap, 1.0), 0.0)

    def act(self, observation: Any) -> Command:
        v = self.view
        job = v.pending
        if job < 0 or v.epoch == self._epoch:
            return Command.wait()
        self._epoch = v.epoch
        L = v.num_servers
        cand = self.rng.choice(L, size=min(self.d, L), replace=False)
        order = least_loaded_order(v.load[cand] * self._inv[cand], cand)
        for idx in (order if self.fallback else order[:1]):
            s = int(cand[idx])
            if v.fits_at(job, s):
                return Command.admit(s)
        return Command.reject()


def least_loaded_order(util: np.ndarray, servers: np.ndarray) -> np.ndarray:
    """Positions of ``servers`` (rows of ``util``, their normalised utilisations) from the least
    loaded: the largest utilisation, then the sum of utilisations, then the server index.  Both
    are sums of loads over capacities, so values within ``SCORE_RTOL`` of a unit capacity tie."""
    return np.lexsort((servers, score_ranks(util.sum(axis=1), scale=1.0), score_ranks(util.max(axis=1), scale=1.0)))


@register_agent("trunk-reservation")
class TrunkReservation(Agent):
    """Trunk reservation (§2.6): a type of reward rank m needs (m-1) g empty servers; Best-Fit placement."""

    description = "trunk reservation: reward-rank-m type admitted only if >= (m-1) g servers are empty; Best-Fit"
    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=False, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.ADMIT, Cmd.REJECT}), queueing=("loss",), needs_types=True)

    def __init__(self, g: int | None = None, b: float = 0.5, **params: Any):
        super().__init__(**params)
        self.g_param = None if g is None or g == "" else _int_param("g", g, 0)
        self.b = float(b)
        self._epoch = -1

    def reset(self, env: Any, seed: int | None = None) -> None:
        super().reset(env, seed)
        self._epoch = -1
        v = self.view
        self.g = self.g_param if self.g_param is not None else default_g(v.num_servers, self.b)
        u = type_rewards(self.env.scenario.source)
        rank = np.array([1 + int(np.sum(u > uj * (1 + 1e-12))) for uj in u])
        self.tau = (rank - 1) * self.g

    def act(self, observation: Any) -> Command:
        v = self.view
        job = v.pending
        if job < 0 or v.epoch == self._epoch:
            return Command.wait()
        self._epoch = v.epoch
        tau = int(self.tau[v.job_type(job)])
        if tau > 0:
            empty = int(np.count_nonzero(v.count_real.sum(axis=1) == 0))
            if empty < tau:
                return Command.reject()
        s = select_server("best-fit", v.fits(job), v.demand(job), v.load, v.capacity, self.rng)
        return Command.admit(s) if s >= 0 else Command.reject()
