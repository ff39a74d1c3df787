"""Random windows of a fixed job table: one trace, many episodes.

A replayed trace is one instance: every seed gives the same jobs.  :class:`TraceWindowSource`
makes a trace a distribution over instances: each episode replays a window of the table chosen by
the episode's generator, so seeds give different (but real) workloads, and two agents on one seed
see the same window (common random numbers).

Per episode, from ``rng`` (in this order):

1. the window start ``s ~ U[start_low, start_high]`` (table time units);
2. with ``thin = k > 1``, a phase ``phi ~ U{0, ..., k - 1}``: only the jobs whose position in the
   table (arrival order) is ``phi`` modulo ``k`` are kept.  Every ``k``-th job keeps the shape of the
   arrival process (its bursts) at ``1/k`` of its rate, so ``L / k`` servers see the load that ``L``
   servers saw.

The episode then holds, with times shifted by ``-s``:

* the *carried-over* jobs: kept jobs that arrived before ``s`` and were still running at ``s``
  (``arrival + work > s``), all arriving at time 0 with their remaining work
  ``arrival + work - s``, in table order;
* the kept jobs arriving in ``(s, s + length]``, at ``arrival - s``.

So the window starts with the jobs the trace had in flight, which a setup policy can place at
time 0 (a warm start), and the first new arrival comes strictly after 0.

Jobs are at most ``length`` after the window start: the source is finite (an episode whose
horizon is ``length`` sees every job of its window).  ``types``, weights and reward rates are the
table's; ``sample_work`` (dummy lifetimes) is exponential with the table's mean work per type.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from clustergym.core.source import ArrivalChunk, TypeInfo
from clustergym.errors import ScenarioError
from clustergym.validation import number
from clustergym.workloads.poisson import check_job_type
from clustergym.workloads.replay import ReplaySource

__all__ = ["TraceWindowSource"]


class TraceWindowSource:
    """Each episode: a random window of ``table``, thinned to every ``thin``-th job, shifted to 0.

    Args:
        table: the trace (a validated, sorted job table).
        length: the window's length (time units): arrivals in ``(s, s + length]``.
        start_low, start_high: the range of the window start ``s`` (default: the table's first
            arrival, and its last arrival minus ``length``).
        thin: keep every ``thin``-th job (>= 1), from a random phase.
        chunk_size: jobs per chunk (>= 1).

    Raises:
        ScenarioError: naming the argument.
    """

    def __init__(self, table: ReplaySource, length: float, *, start_low: float | None = None,
                 start_high: float | None = None, thin: int = 1, chunk_size: int = 4096):
        if not isinstance(table, ReplaySource):
            raise ScenarioError("table", f"expected a ReplaySource (a job table), got {type(table).__name__}")
        self.table = table
        self.length = number(length, "length", lo=0.0, lo_open=True)
        first, last = float(table.time[0]), float(table.time[-1])
        self.start_low = first if start_low is None else number(start_low, "start_low")
        self.start_high = last - self.length if start_high is None else number(start_high, "start_high")
        if not self.start_low <= self.start_high:
            raise ScenarioError("start_high", f"the window starts must satisfy start_low <= start_high, got "
                                              f"[{self.start_low:g}, {self.start_high:g}] (table from {first:g} "
                                              f"to {last:g}, windows of {self.length:g})")
        self.thin = number(thin, "thin", lo=1, integer=True)
        self.chunk_size = number(chunk_size, "chunk_size", lo=1, integer=True)
        self.num_resources = table.num_resources
        self.types: TypeInfo = table.types
        self._end = table.time + table.work  # when each job left the trace's cluster

    def window(self, rng: np.random.Generator) -> tuple[float, int]:
        """Draw ``(s, phi)``: the window start and the thinning phase (the first draws of an episode)."""
        s = float(rng.uniform(self.start_low, self.start_high))
        phi = int(rng.integers(self.thin)) if self.thin > 1 else 0
        return s, phi

    def episode_rows(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """The episode's ``(carried rows, window rows, remaining work of the carried rows, s)``."""
        s, phi = self.window(rng)
        t = self.table.time
        lo = int(np.searchsorted(t, s, side="right"))            # first job arriving after s
        hi = int(np.searchsorted(t, s + self.length, side="right"))
        before = np.arange(phi, lo, self.thin)
        carried = before[self._end[before] > s]
        first = phi + ((lo - phi + self.thin - 1) // self.thin) * self.thin  # first kept position >= lo
        inside = np.arange(first, hi, self.thin)
        return carried, inside, self._end[carried] - s, s

    def chunks(self, rng: np.random.Generator) -> Iterator[ArrivalChunk]:
        """The carried-over jobs at time 0, then the window's arrivals, ``chunk_size`` per chunk."""
        carried, inside, remaining, s = self.episode_rows(rng)
        tb = self.table
        rows = np.concatenate([carried, inside])
        time = np.concatenate([np.zeros(carried.size), tb.time[inside] - s])
        work = np.concatenate([remaining, tb.work[inside]])
        for a in range(0, rows.size, self.chunk_size):
            r = rows[a:a + self.chunk_size]
            yield ArrivalChunk(time=time[a:a + self.chunk_size].copy(), demand=tb.demand[r], type=tb.type[r],
                               work=work[a:a + self.chunk_size].copy(), weight=tb.weight[r],
                               reward_rate=tb.reward_rate[r])

    def sample_work(self, job_type: int, rng: np.random.Generator) -> float:
        """Exponential with the table's mean work of ``job_type`` (dummy jobs, as for replays)."""
        return float(rng.exponential(self.types.mean_work[check_job_type(job_type, self.types.num_types)]))

    def arrival_rates(self) -> None:
        """Not defined for traces."""
        return None
