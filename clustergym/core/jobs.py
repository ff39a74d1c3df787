"""The job table: every job of an episode (real and dummy) as columns of arrays.

A job's id is its row.  Real jobs get ids in arrival order; dummy jobs (RMS)
get ids as they are created, from the same counter.  Columns grow by doubling,
so adding a job is amortised O(1) and no per-job Python object exists.
"""

from __future__ import annotations

import enum

import numpy as np

__all__ = ["JobStatus", "JobTable"]


class JobStatus(enum.IntEnum):
    """Life cycle of a job.  Every arrived job is in exactly one of these."""

    QUEUED = 1      #: waiting (central or local queue, or awaiting admission in loss mode)
    RUNNING = 2     #: in service on ``server``
    COMPLETED = 3   #: finished its service
    REJECTED = 4    #: dropped at arrival (loss mode), by an agent, or as impossible
    PREEMPTED = 5   #: ended early by a PREEMPT command (lost)
    CANCELLED = 6   #: a dummy job removed by REPLACE before its expiry


class JobTable:
    """Columns of all jobs of an episode.

    Attributes (each indexed by job id, valid for ids ``< size``):
        arrival: arrival time (dummy: creation time).
        demand: ``(n, R)`` resource demand.
        type: job type (class) index.
        work: service requirement on a speed-1 server.
        weight, reward_rate: objective coefficients.
        start, end: service start and (scheduled) end time; NaN until started.
        server: the server running it (or whose local queue holds it); -1 if none.
        status: :class:`JobStatus` value.
        dummy: True for dummy jobs.
        in_slot: True while the job fills a reservation slot.
    """

    def __init__(self, num_resources: int, capacity: int = 1024):
        self.num_resources = num_resources
        self.size = 0
        self._alloc(capacity)

    def _alloc(self, cap: int) -> None:
        r = self.num_resources
        self.arrival = np.empty(cap)
        self.demand = np.empty((cap, r))
        self.type = np.empty(cap, dtype=np.int64)
        self.work = np.empty(cap)
        self.weight = np.empty(cap)
        self.reward_rate = np.empty(cap)
        self.start = np.empty(cap)
        self.end = np.empty(cap)
        self.server = np.empty(cap, dtype=np.int64)
        self.status = np.empty(cap, dtype=np.int8)
        self.dummy = np.empty(cap, dtype=bool)
        self.in_slot = np.empty(cap, dtype=bool)

    def _grow(self) -> None:
        old = {name: getattr(self, name) for name in self._COLUMNS}
        self._alloc(2 * len(self.arrival))
        for name, arr in old.items():
            getattr(self, name)[: self.size] = arr[: self.size]

    _COLUMNS = (
        "arrival", "demand", "type", "work", "weight", "reward_rate",
        "start", "end", "server", "status", "dummy", "in_slot",
    )

    def add(
        self,
        arrival: float,
        demand: np.ndarray,
        job_type: int,
        work: float,
        weight: float,
        reward_rate: float,
        dummy: bool = False,
    ) -> int:
        """Append a job in status QUEUED and return its id."""
        if self.size == len(self.arrival):
            self._grow()
        i = self.size
        self.size += 1
        self.arrival[i] = arrival
        self.demand[i] = demand
        self.type[i] = job_type
        self.work[i] = work
        self.weight[i] = weight
        self.reward_rate[i] = reward_rate
        self.start[i] = np.nan
        self.end[i] = np.nan
        self.server[i] = -1
        self.status[i] = JobStatus.QUEUED
        self.dummy[i] = dummy
        self.in_slot[i] = False
        return i

    def real(self) -> np.ndarray:
        """Boolean mask of real (non-dummy) jobs among ids ``< size``."""
        return ~self.dummy[: self.size]
