"""A read-only view of the full simulation state, for rule-based agents.

Learned agents see the fixed-shape observation; baselines that need more (the
whole queue, the jobs running on a server, the scenario's rates) read it
through this view, which exposes no way to change the state: arrays are
returned as non-writeable views and queues as tuples or iterators.  Anything a
learned agent does not get (``rates``, ``speed`` of a scenario; job durations
in non-clairvoyant scenarios) is marked *oracle* here, and an agent using it
declares ``uses_oracle = True``.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from clustergym.core.estimates import SpeedEstimate
from clustergym.core.jobs import JobStatus

if TYPE_CHECKING:  # pragma: no cover
    from clustergym.core.simulator import Event, Simulator
    from clustergym.core.source import TypeInfo

__all__ = ["ClusterView"]


def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


class ClusterView:
    """Read-only access to a :class:`~clustergym.core.simulator.Simulator`."""

    def __init__(self, sim: Simulator, clairvoyant: bool = False):
        self._sim = sim
        self._speed_estimate: SpeedEstimate | None = None  # made at the first speed_estimate()
        self.clairvoyant = clairvoyant

    # --- sizes and static data
    @property
    def num_servers(self) -> int:
        return self._sim.num_servers

    @property
    def num_resources(self) -> int:
        return self._sim.num_resources

    @property
    def num_types(self) -> int:
        return self._sim.num_types

    @property
    def types(self) -> TypeInfo:
        """Job types: nominal demand ``(J, R)``, mean work ``(J,)``, names."""
        return self._sim.types

    @property
    def capacity(self) -> np.ndarray:
        """``(L, R)`` server capacities."""
        return _ro(self._sim.cluster.capacity)

    @property
    def queueing(self) -> str:
        return self._sim.queueing

    @property
    def horizon(self) -> float:
        return self._sim.horizon

    @property
    def any_slots(self) -> bool:
        """Whether a reservation slot has been created on some server since the episode began."""
        return bool(self._sim.cluster.any_slots)

    # --- oracle data (what a learned agent does not see)
    @property
    def rates(self) -> np.ndarray | None:
        """Oracle: ``(J,)`` the scenario's arrival rates (``None`` for traces)."""
        r = self._sim.source.arrival_rates()
        return None if r is None else _ro(np.asarray(r, dtype=float))

    @property
    def speed(self) -> np.ndarray:
        """Oracle: ``(L, J)`` service speed of each server for each type."""
        return _ro(self._sim.speed)

    def speed_estimate(self) -> np.ndarray:
        """Not an oracle: ``(L, J)`` each server's speed for each type relative to the type's pooled
        rate, estimated from the episode's completions so far (1 where nothing is known;
        :class:`~clustergym.core.estimates.SpeedEstimate`, what ``pair_features="speed"`` shows a policy)."""
        if self._speed_estimate is None:
            self._speed_estimate = SpeedEstimate(self._sim)
        return _ro(self._speed_estimate.relative())

    # --- dynamic state
    @property
    def now(self) -> float:
        return self._sim.now

    @property
    def event(self) -> Event:
        """The event that opened the current epoch."""
        return self._sim.event

    @property
    def epoch(self) -> int:
        """Counter of decision epochs; changes exactly when a new epoch starts."""
        return self._sim.n_epochs

    def pending_now(self) -> bool:
        """Whether another epoch opens at the current instant (simultaneous events not yet seen)."""
        return self._sim.epoch_pending_now()

    @property
    def load(self) -> np.ndarray:
        """``(L, R)`` committed capacity (real jobs outside slots + dummies + slots)."""
        return _ro(self._sim.cluster.load)

    def free(self) -> np.ndarray:
        """``(L, R)`` free capacity (a new array)."""
        return self._sim.cluster.free()

    @property
    def count_real(self) -> np.ndarray:
        """``(L, J)`` real jobs per type on each server."""
        return _ro(self._sim.cluster.count_real)

    @property
    def count_dummy(self) -> np.ndarray:
        """``(L, J)`` dummy jobs per type on each server."""
        return _ro(self._sim.cluster.count_dummy)

    @property
    def slots(self) -> np.ndarray:
        """``(L, J)`` reservation slots (empty + filled)."""
        return _ro(self._sim.cluster.slots)

    @property
    def slots_filled(self) -> np.ndarray:
        return _ro(self._sim.cluster.slots_filled)

    @property
    def queued_by_type(self) -> np.ndarray:
        """``(J,)`` waiting jobs per type (all queues)."""
        return _ro(self._sim.queued_by_type)

    @property
    def local_count(self) -> np.ndarray:
        """``(L, J)`` jobs in each server's local queue per type."""
        return _ro(self._sim.local_count)

    @property
    def num_queued(self) -> int:
        return self._sim.n_queued

    @property
    def pending(self) -> int:
        """Loss mode: id of the arriving job awaiting admission, or -1."""
        return self._sim.pending

    def queue(self, limit: int | None = None) -> tuple[int, ...]:
        """Ids of jobs in the central queue, in arrival order (first ``limit``)."""
        q = self._sim.queue
        return tuple(q) if limit is None else tuple(islice(q, limit))

    def iter_queue(self) -> Iterator[int]:
        """Iterate the central queue in arrival order (do not change the state while iterating)."""
        return iter(self._sim.queue)

    def queue_of_type(self, job_type: int, limit: int | None = None) -> tuple[int, ...]:
        """Ids of central-queue jobs of one type, in arrival order."""
        q = self._sim.type_queue[job_type]
        return tuple(q) if limit is None else tuple(islice(q, limit))

    def head_of_type(self, job_type: int) -> int:
        """The oldest central-queue job of a type, or -1."""
        q = self._sim.type_queue[job_type]
        return next(iter(q)) if q else -1

    def local_queue(self, server: int, job_type: int) -> tuple[int, ...]:
        """Ids in one server's local queue of one type, in arrival order."""
        return tuple(self._sim.local_queue_of(server, job_type))

    def running_on(self, server: int) -> tuple[int, ...]:
        """Ids of jobs (real and dummy) running on a server, in start order."""
        return tuple(self._sim.running[server])

    def dummies_of_type(self, job_type: int) -> tuple[int, ...]:
        return tuple(self._sim.dummies_by_type[job_type])

    # --- per-job data
    def _rows(self, job: int):
        """The job table, after checking that ``job``'s row was not released (``job_memory="bounded"``)."""
        jobs = self._sim.jobs
        if job < jobs.base:
            jobs.check(job)  # raises ReleasedJobError naming the job
        return jobs

    def demand(self, job: int) -> np.ndarray:
        return _ro(self._rows(job).demand[job])

    def job_type(self, job: int) -> int:
        return int(self._rows(job).type[job])

    def arrival(self, job: int) -> float:
        return float(self._rows(job).arrival[job])

    def weight(self, job: int) -> float:
        return float(self._rows(job).weight[job])

    def reward_rate(self, job: int) -> float:
        return float(self._rows(job).reward_rate[job])

    def status(self, job: int) -> JobStatus:
        return JobStatus(int(self._rows(job).status[job]))

    def server_of(self, job: int) -> int:
        return int(self._rows(job).server[job])

    def is_dummy(self, job: int) -> bool:
        return bool(self._rows(job).dummy[job])

    def work(self, job: int) -> float:
        """The job's service requirement: visible in clairvoyant scenarios, else an oracle read."""
        return float(self._rows(job).work[job])

    def remaining(self, job: int) -> float:
        """Remaining service time of a running job (oracle unless clairvoyant)."""
        return float(self._rows(job).end[job] - self._sim.now)

    # --- fit checks (vectorised over servers)
    def fits(self, job: int) -> np.ndarray:
        """``(L,)`` bool: servers where ``job`` can start now."""
        jobs = self._sim.jobs
        return self._sim.cluster.fits(int(jobs.type[job]), jobs.demand[job])

    def fits_type(self, job_type: int) -> np.ndarray:
        """``(L,)`` bool: servers whose free capacity holds a type-``job_type`` job (dummy or slot)."""
        return self._sim.cluster.fits_free(self._sim.types.demand[job_type])

    def type_fits_at(self, job_type: int, server: int) -> bool:
        """Whether ``server``'s free capacity holds a type-``job_type`` job (the kernel's tolerance)."""
        return self._sim.cluster.fits_free_at(server, self._sim.types.demand[job_type])

    # --- server selection (from the kernel's placement index on large clusters; same answers as a scan)
    def select_server(self, rule: str, job: int, rng: np.random.Generator | None = None) -> int:
        """The server ``rule`` chooses among :meth:`fits` for ``job``, or -1.

        Rules (:data:`clustergym.core.placement.RULES`): ``first-fit`` (lowest index),
        ``best-fit`` (largest ``sum_r (d_r / C_r) (load_r / C_r)``, ties to the lowest index),
        ``worst-fit`` (smallest, ties to the lowest index), ``random-fit`` (one ``rng.integers``
        draw over the fitting servers in index order).  Equal to
        ``clustergym.core.placement.scan_select(rule, self.fits(job), ...)``.
        """
        jobs = self._sim.jobs
        return self._sim.cluster.select(rule, int(jobs.type[job]), jobs.demand[job], rng)

    def select_server_for_type(self, rule: str, job_type: int, rng: np.random.Generator | None = None) -> int:
        """As :meth:`select_server` for a type-``job_type`` demand among :meth:`fits_type` (free capacity)."""
        return self._sim.cluster.select(rule, job_type, self._sim.types.demand[job_type], rng, free_only=True)

    def fits_anywhere(self, job: int) -> bool:
        """Whether ``job`` can start on some server now (``fits(job).any()``)."""
        jobs = self._sim.jobs
        return self._sim.cluster.any_fit(int(jobs.type[job]), jobs.demand[job])

    @property
    def servers_without_real_jobs(self) -> int:
        """Servers on which no real job runs (dummies and slots do not count)."""
        return self._sim.cluster.servers_without_real

    def demands(self, jobs: np.ndarray | list[int]) -> np.ndarray:
        """``(n, R)`` demands of the given jobs (a new array)."""
        return self._sim.jobs.demand[np.asarray(jobs, dtype=np.int64)]

    def fits_on(self, jobs: np.ndarray | list[int], server: int) -> np.ndarray:
        """``(n,)`` bool: which of the given jobs can start on ``server`` now."""
        sim = self._sim
        ids = np.asarray(jobs, dtype=np.int64)
        c = sim.cluster
        ok = np.all(c.load[server] + sim.jobs.demand[ids] <= c._limit[server], axis=1)
        if c.any_slots:
            for i, j in enumerate(ids):
                ok[i] |= c.slot_usable_at(server, int(sim.jobs.type[j]), sim.jobs.demand[j])
        return ok

    def fits_at(self, job: int, server: int) -> bool:
        jobs = self._sim.jobs
        return self._sim.cluster.fits_at(server, int(jobs.type[job]), jobs.demand[job])
