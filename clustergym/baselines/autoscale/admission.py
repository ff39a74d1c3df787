"""Admission baselines for loss systems (auto-scaling paper Sec. 1.1 and Sec. 7.2).

* ``power-of-d`` -- the paper's Sec. 7.2 baseline (Xie et al. 2015): at an arrival,
  sample ``d`` distinct servers uniformly at random (without replacement) and
  admit the job to the least loaded of them *if it fits there*, else reject
  (the paper's wording; ``fallback=true`` tries the other sampled servers in
  load order).  Load of a server = its largest normalised utilisation, ties by
  the sum of normalised utilisations, then server id (utilisations within
  ``SCORE_RTOL`` are ties, :mod:`clustergym.core.scores`; docs/papers/autoscale.md#power-of-d).  ``d = 5`` by default.
* ``trunk-reservation`` -- the classical threshold policy that DRA generalises
  (Sec. 1.1: with one job per server DRA "reduces to classical trunk reservation";
  not a paper baseline, docs/papers/autoscale.md#extra-baselines): with types ranked by reward rate
  (``m = 1`` + the number of types with a strictly larger ``u_j``), admit a
  type of rank ``m`` only if at least ``tau_m = (m - 1) g`` servers are empty
  (``tau_1 = 0``: the top type is admitted whenever it fits), placing it by
  Best-Fit; reject otherwise.  ``g`` defaults to DRA's ``g(L)``.

Neither uses reservation slots, migration or the arrival rates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clustergym.agent_api import Agent, AgentContext, AgentRequirements
from clustergym.core.commands import Cmd, Command
from clustergym.core.scores import score_ranks
from clustergym.core.simulator import EpochConfig
from clustergym.theory.autoscale import default_g, type_rewards
from clustergym.validation import settings

__all__ = ["PowerOfD", "TrunkReservation", "least_loaded_order"]

_ADMIT_REQ = AgentRequirements(
    epochs=EpochConfig(arrivals=True, completions=False, dummy_completions=False),
    commands=frozenset({Cmd.WAIT, Cmd.ADMIT, Cmd.REJECT}),
    queueing=("loss",),
)


class PowerOfD(Agent):
    """Power-of-d choices (Sec. 7.2): least loaded of d random servers if the job fits there, else reject."""

    description = "power-of-d choices (d=5): least loaded of d random servers if it fits, else reject"
    requirements = _ADMIT_REQ

    def __init__(self, d: int = 5, fallback: bool = False, **params: Any):
        super().__init__(**params)
        self.d = settings.number(d, "agent.d", lo=1, integer=True)
        self.fallback = settings.boolean(fallback, "agent.fallback")
        self._epoch = -1

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
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
        for idx in order if self.fallback else order[:1]:
            s = int(cand[idx])
            if v.fits_at(job, s):
                return Command.admit(s)
        return Command.reject()


def least_loaded_order(util: np.ndarray, servers: np.ndarray) -> np.ndarray:
    """Positions of ``servers`` (rows of ``util``, their normalised utilisations) from the least
    loaded: the largest utilisation, then the sum of utilisations, then the server index.  Both
    are sums of loads over capacities, so values within ``SCORE_RTOL`` of a unit capacity tie."""
    return np.lexsort((servers, score_ranks(util.sum(axis=1), scale=1.0), score_ranks(util.max(axis=1), scale=1.0)))


class TrunkReservation(Agent):
    """Trunk reservation (Sec. 1.1; not a paper baseline): a type of reward rank m needs (m-1) g empty servers; Best-Fit placement."""

    description = "trunk reservation: reward-rank-m type admitted only if >= (m-1) g servers are empty; Best-Fit"
    epoch_local = True  # each decision reads the state at its epoch (the guard below is within the epoch)
    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=False, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.ADMIT, Cmd.REJECT}),
        queueing=("loss",),
        needs_types=True,
    )

    def __init__(self, g: int | None = None, b: float = 0.5, **params: Any):
        super().__init__(**params)
        self.g_param = settings.number(g, "agent.g", lo=0, integer=True, allow_none=True)
        self.b = settings.number(b, "agent.b", lo=-1.0, lo_open=True)
        self._epoch = -1

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        self._epoch = -1
        v = self.view
        self.g = self.g_param if self.g_param is not None else default_g(v.num_servers, self.b)
        u = type_rewards(self.context.scenario.source)
        rank = np.array([1 + int(np.sum(u > uj * (1 + 1e-12))) for uj in u])
        self.tau = (rank - 1) * self.g

    def act(self, observation: Any) -> Command:
        v = self.view
        job = v.pending
        if job < 0 or v.epoch == self._epoch:
            return Command.wait()
        self._epoch = v.epoch
        tau = int(self.tau[v.job_type(job)])
        if tau > 0 and v.servers_without_real_jobs < tau:  # = count_nonzero(count_real.sum(axis=1) == 0)
            return Command.reject()
        s = v.select_server("best-fit", job, self.rng)  # = select_server("best-fit", v.fits(job), ...)
        return Command.admit(s) if s >= 0 else Command.reject()
