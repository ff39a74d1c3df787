"""The workload contract: what an arrival source gives the simulation kernel.

A *source* generates the job stream of one episode from its own random
generator.  The kernel pulls arrivals in time order, in chunks of arrays, and
never feeds anything back: the stream depends on the seed only, not on the
agent, so two agents on the same seed see the same jobs (common random
numbers).  Each job carries its *work*: its service time on a server of speed
1 (the kernel divides by the server's speed for the job's class, which is 1
unless the scenario says otherwise).

Units: time in the scenario's time unit (seconds for traces, mean service
times for the synthetic papers); demands in the same units as the servers'
capacities.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["ArrivalChunk", "ArrivalSource", "TypeInfo"]


@dataclass(frozen=True)
class ArrivalChunk:
    """A block of ``n`` consecutive arrivals, sorted by ``time``.

    Attributes:
        time: ``(n,)`` float64 arrival times, non-decreasing, also across chunks.
        demand: ``(n, R)`` float64 resource demand of each job.
        type: ``(n,)`` int64 job type (class) in ``[0, J)``; ``0`` for untyped workloads.
        work: ``(n,)`` float64 service requirement (duration on a speed-1 server), > 0.
        weight: ``(n,)`` float64 job weight (weighted completion time objectives).
        reward_rate: ``(n,)`` float64 reward per unit time in service (loss systems).
    """

    time: np.ndarray
    demand: np.ndarray
    type: np.ndarray
    work: np.ndarray
    weight: np.ndarray
    reward_rate: np.ndarray

    def __len__(self) -> int:
        return int(self.time.shape[0])

    @staticmethod
    def build(
        time: np.ndarray,
        demand: np.ndarray,
        type: np.ndarray | None = None,
        work: np.ndarray | None = None,
        weight: np.ndarray | None = None,
        reward_rate: np.ndarray | None = None,
    ) -> ArrivalChunk:
        """Make a chunk, filling absent columns with their defaults (type 0, weight 1, reward 1)."""
        time = np.asarray(time, dtype=np.float64)
        n = time.shape[0]
        demand = np.asarray(demand, dtype=np.float64).reshape(n, -1)
        ones = np.ones(n)
        return ArrivalChunk(
            time=time,
            demand=demand,
            type=np.zeros(n, dtype=np.int64) if type is None else np.asarray(type, dtype=np.int64),
            work=ones if work is None else np.asarray(work, dtype=np.float64),
            weight=ones.copy() if weight is None else np.asarray(weight, dtype=np.float64),
            reward_rate=ones.copy() if reward_rate is None else np.asarray(reward_rate, dtype=np.float64),
        )


@dataclass(frozen=True)
class TypeInfo:
    """What the kernel and agents know about job types (classes) of a workload.

    Attributes:
        demand: ``(J, R)`` nominal demand of each type: the size of a dummy job or
            a reservation slot of that type.  For workloads without discrete types
            (``J == 1`` with varying demands) it is the mean demand.
        mean_work: ``(J,)`` mean service requirement of each type (``1/mu_j``).
        names: display names.
        exact: ``True`` when every job of type ``j`` has demand exactly ``demand[j]``.
    """

    demand: np.ndarray
    mean_work: np.ndarray
    names: tuple[str, ...] = field(default=())
    exact: bool = True

    @property
    def num_types(self) -> int:
        return int(self.demand.shape[0])


@runtime_checkable
class ArrivalSource(Protocol):
    """A job stream.  Implementations live in :mod:`clustergym.workloads`."""

    num_resources: int
    types: TypeInfo

    def chunks(self, rng: np.random.Generator) -> Iterator[ArrivalChunk]:
        """Yield the episode's arrivals in time order, drawing only from ``rng``.

        A finite source (a trace) stops; a stochastic source is infinite and the
        kernel stops pulling at the horizon.
        """
        ...

    def sample_work(self, job_type: int, rng: np.random.Generator) -> float:
        """Draw the service requirement of a *dummy* job of ``job_type``.

        Dummy jobs (RMS) live like a real job of their type: their lifetime is
        drawn from the type's service distribution (or, for traces, an
        exponential with the type's empirical mean).
        """
        ...

    def arrival_rates(self) -> np.ndarray | None:
        """``(J,)`` long-run arrival rate per type, or ``None`` when not defined (traces)."""
        ...


def is_finite(source: Any) -> bool:
    """Whether ``source`` ends by itself (a trace or a job table that drains).

    A source says so with a true ``finite`` attribute (:class:`~clustergym.workloads.ReplaySource`,
    and wrappers of a finite source); a source without one is taken to be endless, so an
    infinite horizon is refused for it (the episode would never end).
    """
    return bool(getattr(source, "finite", False))
