"""Slotted-time arrivals (the BF-J/S paper's model, §II; docs/papers/bfjs.md#timeline).

Time is cut into slots of length ``slot``.  At the start of each slot
``t = k * slot`` (``k = 0, 1, 2, ...``) a Poisson(``rate_per_slot``) number of
jobs arrive, all at exactly time ``t``, i.i.d. over slots.  Each job needs a
whole number ``S >= 1`` of slots of service (geometric with mean ``1/mu``, or a
fixed number such as 100); its work is ``S * slot``.  Empty slots produce no
rows.  Within a slot, jobs keep their generation order (increasing ids).

Vectorisation: the counts of a Poisson process of rate ``rate_per_slot`` (per
unit of slot index) in the disjoint intervals ``[k, k+1)`` are exactly i.i.d.
Poisson(``rate_per_slot``).  So each chunk draws ``chunk_size`` exponential gaps
of such a process and floors the points to their slot index.  This handles any
rate (a chunk may span a few slots or millions of them) with a fixed number of
draws per chunk, and a slot's jobs may straddle two chunks (times stay
non-decreasing across chunks).
"""

from __future__ import annotations

import numpy as np

from clustergym.core.source import TypeInfo
from clustergym.errors import ScenarioError
from clustergym.validation import number
from clustergym.workloads.distributions import DemandDist, ServiceDist
from clustergym.workloads.poisson import PoissonSource, demand_type_info

__all__ = ["SlottedSource"]


class SlottedSource(PoissonSource):
    """Poisson batches at slot starts with whole-slot service.

    Args:
        rate_per_slot: mean number of arrivals per slot (>= 0).
        demand: the demand law; discrete laws give typed jobs (type = value index).
        service: number of slots per job; must be integer-valued
            (:class:`~clustergym.workloads.distributions.Geometric`, or
            :class:`~clustergym.workloads.distributions.Deterministic` /
            :class:`~clustergym.workloads.distributions.Empirical` with whole numbers).
        slot: slot length in time units (> 0).
        weight, reward_rate: the same for every job (>= 0).
        chunk_size: jobs per chunk (>= 1).

    Attributes:
        types: mean_work is ``service.mean * slot`` (time units).

    Raises:
        ScenarioError: naming the argument.
    """

    def __init__(
        self,
        rate_per_slot: float,
        demand: DemandDist,
        service: ServiceDist,
        *,
        slot: float = 1.0,
        weight: float = 1.0,
        reward_rate: float = 1.0,
        chunk_size: int = 4096,
    ):
        # the Poisson process runs in units of slots; its points are floored to slot starts
        try:
            super().__init__(rate_per_slot, demand, service, weight=weight, reward_rate=reward_rate,
                             chunk_size=chunk_size)
        except ScenarioError as e:
            raise ScenarioError("rate_per_slot" if e.field == "rate" else e.field, e.problem) from None
        self.rate_per_slot = self.rate
        if not service.integer_valued:
            raise ScenarioError(
                "service",
                f"a slotted workload needs a whole number of slots per job (geometric, or deterministic/"
                f"empirical with whole numbers), got {service!r}",
            )
        self.slot = number(slot, "slot", lo=0.0, lo_open=True)
        self._work_unit = self.slot
        self.types: TypeInfo = demand_type_info(demand, service.mean * self.slot)

    def _times(self, points: np.ndarray) -> np.ndarray:
        """Slot starts: a point in ``[k, k+1)`` arrives at ``k * slot``."""
        return np.floor(points) * self.slot

    def sample_work(self, job_type: int, rng: np.random.Generator) -> float:
        """One job's work ``S * slot`` (time units), ``S`` from the service law."""
        return super().sample_work(job_type, rng) * self.slot

    def arrival_rates(self) -> np.ndarray:
        """``(J,)`` long-run arrivals per time unit: ``rate_per_slot / slot * P(type j)``."""
        return super().arrival_rates() / self.slot
