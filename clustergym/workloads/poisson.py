"""Continuous-time Poisson arrival sources.

* :class:`PoissonTypedSource` -- ``J`` job types with exact demand vectors, each
  arriving as an independent Poisson process of rate ``lambda_j`` (RMS, LoTES
  with fixed class demands, auto-scaling).  Generated as one merged Poisson
  process of rate ``sum(lambda)`` whose jobs pick type ``j`` with probability
  ``lambda_j / sum(lambda)`` -- the same law.
* :class:`PoissonSource` -- one Poisson process whose demands come from a
  :class:`~clustergym.workloads.distributions.DemandDist` (continuous or
  discrete).

Both are infinite: ``chunks(rng)`` never ends (unless the total rate is 0, in
which case it yields nothing).  Each chunk holds ``chunk_size`` jobs drawn in
one vectorised pass, always in the same order from ``rng`` (inter-arrival
gaps, then types/demands, then work), so a seed fixes the whole stream.

Units: rates in jobs per time unit; times and work in the scenario's time unit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from clustergym.core.source import ArrivalChunk, TypeInfo
from clustergym.errors import ScenarioError
from clustergym.validation import matrix, number, vector
from clustergym.workloads.distributions import (
    DemandDist,
    ServiceDist,
    cdf_for,
    check_services,
    sample_index,
)

__all__ = ["PoissonTypedSource", "PoissonSource"]


def _check_names(names: Sequence[str] | None, count: int, field: str = "names") -> tuple[str, ...]:
    if names is None:
        return tuple(f"type{j}" for j in range(count))
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ScenarioError(field, f"expected a list of {count} names, got {names!r}")
    if len(names) != count:
        raise ScenarioError(field, f"expected {count} names (one per type), got {len(names)}")
    for j, name in enumerate(names):
        if not isinstance(name, str):
            raise ScenarioError(f"{field}[{j}]", f"expected a string, got {name!r}")
    return tuple(names)


def check_job_type(job_type: int, num_types: int) -> int:
    j = int(job_type)
    if not 0 <= j < num_types:
        raise ValueError(f"job_type {job_type} out of range [0, {num_types})")
    return j


def demand_type_info(demand: DemandDist, mean_work: float) -> TypeInfo:
    """TypeInfo of a single stream whose demands follow ``demand`` and whose work has mean ``mean_work``.

    Discrete laws give one exact type per value (``demand = values``); continuous laws give
    one inexact type whose nominal demand is the mean.
    """
    J = demand.num_types
    return TypeInfo(
        demand=demand.type_values,
        mean_work=np.full(J, float(mean_work)),
        names=tuple(f"type{j}" for j in range(J)),
        exact=bool(demand.discrete),
    )


class PoissonTypedSource:
    """``J`` typed Poisson streams with exact per-type demands.

    Args:
        rates: ``(J,)`` arrival rate ``lambda_j`` of each type (>= 0, jobs per time unit).
        type_demand: ``(J, R)`` demand of each type (>= 0); every type-``j`` job demands exactly row ``j``.
        service: one :class:`ServiceDist` for all types, or a sequence of ``J`` (one per type).
        weights: ``(J,)`` job weight per type (>= 0), default 1.
        reward_rates: ``(J,)`` reward per unit time in service per type (>= 0), default 1.
        names: ``J`` display names, default ``type0, type1, ...``.
        chunk_size: jobs per chunk (>= 1).

    Raises:
        ScenarioError: naming the argument (``rates[2]``, ``type_demand[1][0]``, ``service``, ...).
    """

    def __init__(
        self,
        rates: Sequence[float] | np.ndarray,
        type_demand: Sequence[Sequence[float]] | np.ndarray,
        service: ServiceDist | Sequence[ServiceDist],
        *,
        weights: Sequence[float] | np.ndarray | None = None,
        reward_rates: Sequence[float] | np.ndarray | None = None,
        names: Sequence[str] | None = None,
        chunk_size: int = 4096,
    ):
        self.rates = vector(rates, "rates", lo=0.0, what="(one per type)")
        J = int(self.rates.shape[0])
        self.type_demand = matrix(type_demand, "type_demand", lo=0.0)
        if self.type_demand.shape[0] != J:
            raise ScenarioError("type_demand", f"expected {J} rows (one per type, as rates), got {self.type_demand.shape[0]}")
        self.num_resources = int(self.type_demand.shape[1])
        self.services, self._shared = check_services(service, J, "type")
        self.weights = np.ones(J) if weights is None else vector(weights, "weights", J, lo=0.0, what="(one per type)")
        self.reward_rates = (
            np.ones(J) if reward_rates is None else vector(reward_rates, "reward_rates", J, lo=0.0, what="(one per type)")
        )
        self.chunk_size = number(chunk_size, "chunk_size", lo=1, integer=True)
        self.total_rate = float(self.rates.sum())
        self.types = TypeInfo(
            demand=self.type_demand.copy(),
            mean_work=np.array([s.mean for s in self.services], dtype=np.float64),
            names=_check_names(names, J),
            exact=True,
        )
        self._cdf = cdf_for(self.rates / self.total_rate) if self.total_rate > 0 else None

    @property
    def num_types(self) -> int:
        return self.types.num_types

    def chunks(self, rng: np.random.Generator) -> Iterator[ArrivalChunk]:
        """Infinite stream of ``chunk_size``-job chunks (nothing if every rate is 0).

        Per chunk, from ``rng``: ``n`` exponential gaps of mean ``1/sum(rates)``, ``n`` uniforms for
        the types, then the work (one ``sample(n)`` if the service law is shared, else one per type
        in type order).
        """
        if self._cdf is None:
            return
        n, J, t = self.chunk_size, self.num_types, 0.0
        while True:
            time = t + np.cumsum(rng.exponential(1.0 / self.total_rate, n))
            typ = sample_index(self._cdf, rng, n)
            if self._shared is not None:
                work = self._shared.sample(rng, n)
            else:
                work = np.empty(n, dtype=np.float64)
                for j in range(J):
                    mask = typ == j
                    k = int(mask.sum())
                    if k:
                        work[mask] = self.services[j].sample(rng, k)
            t = float(time[-1])
            yield ArrivalChunk(
                time=time,
                demand=self.type_demand[typ],
                type=typ,
                work=work,
                weight=self.weights[typ],
                reward_rate=self.reward_rates[typ],
            )

    def sample_work(self, job_type: int, rng: np.random.Generator) -> float:
        """One draw from type ``job_type``'s service law (time units)."""
        return float(self.services[check_job_type(job_type, self.num_types)].sample(rng, 1)[0])

    def arrival_rates(self) -> np.ndarray:
        """``(J,)`` the rates ``lambda_j`` (jobs per time unit)."""
        return self.rates.copy()


class PoissonSource:
    """One Poisson stream of rate ``rate`` with demands from ``demand`` and work from ``service``.

    If ``demand`` is discrete (:class:`~clustergym.workloads.distributions.DiscreteDemand`,
    :class:`~clustergym.workloads.distributions.FixedDemand`) a job's type is the index of its
    value and ``types`` has one exact row per value; otherwise every job has type 0 and
    ``types`` is one inexact row holding the mean demand.

    Args:
        rate: arrivals per time unit (>= 0).
        demand: the demand law (``R = demand.num_resources``).
        service: the work law (time units).
        weight, reward_rate: the same for every job (>= 0).
        chunk_size: jobs per chunk (>= 1).
    """

    def __init__(
        self,
        rate: float,
        demand: DemandDist,
        service: ServiceDist,
        *,
        weight: float = 1.0,
        reward_rate: float = 1.0,
        chunk_size: int = 4096,
    ):
        self.rate = number(rate, "rate", lo=0.0)
        if not isinstance(demand, DemandDist):
            raise ScenarioError("demand", f"expected a DemandDist, got {demand!r}")
        if not isinstance(service, ServiceDist):
            raise ScenarioError("service", f"expected a ServiceDist, got {service!r}")
        self.demand = demand
        self.service = service
        self.num_resources = demand.num_resources
        self.weight = number(weight, "weight", lo=0.0)
        self.reward_rate = number(reward_rate, "reward_rate", lo=0.0)
        self.chunk_size = number(chunk_size, "chunk_size", lo=1, integer=True)
        self.types = demand_type_info(demand, service.mean)

    def chunks(self, rng: np.random.Generator) -> Iterator[ArrivalChunk]:
        """Infinite stream of ``chunk_size``-job chunks (nothing if ``rate == 0``).

        Per chunk, from ``rng``: ``n`` exponential gaps, then ``demand.sample_typed(n)``, then
        ``service.sample(n)``.
        """
        if self.rate <= 0:
            return
        n, pos = self.chunk_size, 0.0
        while True:
            points = pos + np.cumsum(rng.exponential(1.0 / self.rate, n))
            dem, typ = self.demand.sample_typed(rng, n)
            work = self.service.sample(rng, n)
            pos = float(points[-1])
            yield ArrivalChunk(
                time=self._times(points),
                demand=dem,
                type=typ,
                work=work * self._work_unit,
                weight=np.full(n, self.weight),
                reward_rate=np.full(n, self.reward_rate),
            )

    #: time units per unit of the service law (1 here; the slot length for slotted sources)
    _work_unit = 1.0

    def _times(self, points: np.ndarray) -> np.ndarray:
        """Arrival times of the Poisson points (the points themselves in continuous time)."""
        return points

    def sample_work(self, job_type: int, rng: np.random.Generator) -> float:
        """One draw from the service law (the same for every type)."""
        check_job_type(job_type, self.types.num_types)
        return float(self.service.sample(rng, 1)[0])

    def arrival_rates(self) -> np.ndarray:
        """``(J,)``: ``rate * P(type j)`` (``[rate]`` for continuous demands)."""
        return self.rate * self.demand.type_probs
