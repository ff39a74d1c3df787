"""Workloads: the arrival sources that feed the simulation kernel.

A source (see :class:`ArrivalSource`) yields the episode's jobs in time order as
:class:`ArrivalChunk` arrays, drawing only from the generator it is given, and
describes its job types with :class:`TypeInfo`.

* :mod:`.distributions` -- service-time and demand laws and their scenario-file parsers;
* :mod:`.poisson` -- continuous-time Poisson sources (typed, or with a demand law);
* :mod:`.slotted` -- slotted time with Poisson batches and whole-slot service (BF-J/S, VQS);
* :mod:`.replay` -- replaying a job table (traces) and time-scaling any source.
"""

from clustergym.core.source import ArrivalChunk, ArrivalSource, TypeInfo
from clustergym.workloads.classes import PoissonClassSource
from clustergym.workloads.compose import PrefixedSource
from clustergym.workloads.distributions import (
    DEMAND_DISTS,
    SERVICE_DISTS,
    DemandDist,
    Deterministic,
    DiscreteDemand,
    Empirical,
    Exponential,
    FixedDemand,
    Geometric,
    IndependentDemand,
    LogNormal,
    ServiceDist,
    TruncatedNormalDemand,
    UniformDemand,
    demand_from_spec,
    service_from_spec,
)
from clustergym.workloads.poisson import PoissonSource, PoissonTypedSource
from clustergym.workloads.replay import ReplaySource, TimeScaled
from clustergym.workloads.slotted import SlottedSource

__all__ = [
    "ArrivalChunk",
    "ArrivalSource",
    "TypeInfo",
    "ServiceDist",
    "Exponential",
    "Deterministic",
    "LogNormal",
    "Empirical",
    "Geometric",
    "DemandDist",
    "FixedDemand",
    "UniformDemand",
    "DiscreteDemand",
    "TruncatedNormalDemand",
    "IndependentDemand",
    "service_from_spec",
    "demand_from_spec",
    "SERVICE_DISTS",
    "DEMAND_DISTS",
    "PoissonTypedSource",
    "PoissonSource",
    "PoissonClassSource",
    "SlottedSource",
    "ReplaySource",
    "TimeScaled",
    "PrefixedSource",
]
