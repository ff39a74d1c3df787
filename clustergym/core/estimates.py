"""Service speeds estimated from an episode's own history: what a non-clairvoyant policy can learn.

On heterogeneous clusters (LoTES's machine-dependent rates ``mu_jk = omega_jk / u_k``, Sec. 3 and
Sec. 5.4.3 of the LoTES paper; the simulator's ``speed``) where a job runs sets how long it runs.
The true speeds are oracle information (:attr:`clustergym.core.view.ClusterView.speed`), but every
start and completion of the episode so far is observable, so a policy can estimate them:
:class:`SpeedEstimate` gives, for each server ``s`` and job type ``t``, the estimated service rate of
``t`` on ``s`` relative to the rate of ``t`` over all servers,

    rel[s, t] = ((n[s, t] + a) / (E[s, t] + a / p[t])) / p[t],   p[t] = n[t] / E[t],

with ``n[s, t]`` the completions of real jobs of type ``t`` on ``s``, ``E[s, t]`` their exposure (the
service time of those completed plus the time in service so far of those still running: the
maximum-likelihood rate of exponential service with censored observations), ``p[t]`` the pooled rate
of the type and ``a`` (``prior``) pseudo-observations at the pooled rate, which keep a server seen
once or never at 1.  ``rel`` is dimensionless (no time unit), 1 where nothing is known, and above 1
on a server that serves the type faster than the cluster does on average; it is exact in the limit
for exponential service (the rate is ``speed / mean work``, the mean work cancels in the ratio) and
an estimate of the same ratio for any other service law.

Cost: the finished jobs below the oldest unfinished one are folded into per-(server, type) sums
once; each call reads only the rows from that job on (the span of the jobs in the system).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from clustergym.core.jobs import JobStatus, JobTable
from clustergym.errors import ReleasedJobError

if TYPE_CHECKING:  # pragma: no cover
    from clustergym.core.simulator import Simulator

__all__ = ["SpeedEstimate"]

_RUNNING = int(JobStatus.RUNNING)
_QUEUED = int(JobStatus.QUEUED)
_COMPLETED = int(JobStatus.COMPLETED)


class SpeedEstimate:
    """Per-(server, type) service speeds relative to the type's pooled rate, from the episode so far.

    Args:
        sim: the :class:`~clustergym.core.simulator.Simulator` observed (read only); a new episode
            (:meth:`Simulator.reset`, a new job table) starts the estimate afresh.
        prior: ``a`` > 0, pseudo-observations at the type's pooled rate per (server, type)
            (module docstring); the larger, the more completions an estimate needs to move from 1.
    """

    def __init__(self, sim: Simulator, prior: float = 1.0):
        if not (np.isfinite(prior) and prior > 0):
            raise ValueError(f"prior must be a positive number of pseudo-observations, got {prior!r}")
        self.sim = sim
        self.prior = float(prior)
        self._table: JobTable | None = None  # the episode's job table the sums are of
        self._lo = 0  # rows below are folded into _n and _busy
        self._n = self._busy = np.zeros((sim.num_servers, sim.num_types))

    def _restart(self) -> JobTable:
        L, J = self.sim.num_servers, self.sim.num_types
        self._table = self.sim.jobs
        self._lo = self._table.base
        self._n = np.zeros((L, J))
        self._busy = np.zeros((L, J))
        return self._table

    def _fold(self, jobs: JobTable, lo: int, hi: int) -> None:
        """Add the completed real jobs of rows ``lo..hi`` (all finished) to the folded sums."""
        done = (jobs.status[lo:hi] == _COMPLETED) & ~jobs.dummy[lo:hi]
        if done.any():
            at = (jobs.server[lo:hi][done], jobs.type[lo:hi][done])
            np.add.at(self._n, at, 1.0)
            np.add.at(self._busy, at, (jobs.end[lo:hi] - jobs.start[lo:hi])[done])

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """``(n, E)``, each ``(L, J)``: completions and exposure (time units) of each type on each server."""
        jobs = self._table if self._table is self.sim.jobs else self._restart()
        now = self.sim.now
        if self._lo < jobs.base:
            raise ReleasedJobError(
                f"the speed estimate had read jobs up to {self._lo}, but job_memory='bounded' released rows "
                f"up to {jobs.base}: read it at least once every {jobs.base - self._lo} jobs, or use job_memory='full'"
            )
        hi = jobs.size
        st = jobs.status[self._lo : hi]
        live = np.flatnonzero((st == _QUEUED) | (st == _RUNNING))
        first = self._lo + int(live[0]) if live.size else hi
        if first > self._lo:
            self._fold(jobs, self._lo, first)
            self._lo = first
        n, busy = self._n.copy(), self._busy.copy()
        st = jobs.status[first:hi]
        real = ~jobs.dummy[first:hi]
        done = (st == _COMPLETED) & real
        run = (st == _RUNNING) & real
        srv, typ, start = jobs.server[first:hi], jobs.type[first:hi], jobs.start[first:hi]
        np.add.at(n, (srv[done], typ[done]), 1.0)
        np.add.at(busy, (srv[done], typ[done]), (jobs.end[first:hi] - start)[done])
        np.add.at(busy, (srv[run], typ[run]), now - start[run])
        return n, busy

    def relative(self) -> np.ndarray:
        """``(L, J)`` estimated speed of each server for each type over the type's pooled rate (module
        docstring): 1 where nothing is known yet, dimensionless."""
        n, busy = self.counts()
        nt, et = n.sum(axis=0), busy.sum(axis=0)  # (J,) pooled over the servers
        known = (nt > 0) & (et > 0)
        pooled = np.where(known, nt / np.where(known, et, 1.0), 1.0)
        a = self.prior
        rel = (n + a) / (busy + a / pooled) / pooled
        return np.where(known, rel, 1.0)
