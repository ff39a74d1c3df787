"""BF-EXEC (NoroozOliaei et al., INFOCOM Workshops 2014) as run by the MRIS paper (Sec. 7.2).

At every event time ``t`` (after all completions and arrivals at ``t``):

* Phase 1, departures (first, as the authors' code does at equal times): for each machine that had
  a completion at ``t`` (in index order), scan the queue of jobs released *before* ``t`` in SJF
  order ``(p_j, id)`` and start every job that fits that machine (one pass is "recursively the
  shortest job that fits": usage only grows).
* Phase 0, arrivals: each job released at ``t`` (in id order) goes to the machine with the smallest
  L2 norm of remaining resources (normalised; ties: lowest index, norms within ``SCORE_RTOL`` of a
  unit capacity being ties, :func:`clustergym.core.cluster.argbest`) among those where it fits, or
  joins the queue.  Queued jobs are only ever started on a machine at the moment one of its jobs
  departs.

Weights are not used; durations are (SJF), so the agent reads them (clairvoyant scenarios; an oracle
otherwise).  Simultaneous departures (docs/papers/mris.md#bf-exec): ``departures="all"`` (default) runs phase 1
for every departing machine; ``departures="random"`` is the authors' code's behaviour (one machine
chosen at random among them, seeded by the agent's generator).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from clustergym.baselines.mris.mris import EventTimeAgent
from clustergym.core.commands import Command
from clustergym.core.scores import argbest
from clustergym.validation import settings

__all__ = ["BFExec", "tightest_by_norm"]


class BFExec(EventTimeAgent):
    """BF-EXEC (Sec. 7.2)."""

    description = (
        "BF-EXEC: arrivals best-fit by L2 norm of remaining capacity; on a departure, SJF backfill of that machine"
    )

    def __init__(self, departures: str = "all", **params: Any):
        super().__init__(**params)
        self.departures = settings.choice(departures, "agent.departures", ("all", "random"))

    def decide(self) -> Iterator[Command]:
        v = self.view
        c = self.jobs
        q = self.queued()
        if q.size == 0:
            return
        is_new = np.isin(q, np.asarray(self.arrived_now, dtype=np.int64))
        old, arrivals = q[~is_new], q[is_new]
        # phase 1: departures
        departed = sorted(set(self.departed_now))
        if departed and self.departures == "random":
            departed = [departed[int(self.rng.integers(len(departed)))]]
        if departed and old.size:
            order = old[np.lexsort((old, c.work[old]))]
            dem = c.dem_abs[order]
            waiting = np.ones(order.size, dtype=bool)
            for i in departed:
                first = 0
                while first < order.size:  # SJF order: the next waiting job that fits machine i
                    ok = waiting[first:] & np.all(v.load[i] + dem[first:] <= self.limit[i], axis=1)
                    hit = np.flatnonzero(ok)
                    if hit.size == 0:
                        break
                    a = first + int(hit[0])
                    waiting[a] = False
                    first = a + 1
                    yield Command.place(int(order[a]), i)
        # phase 0: arrivals at t
        for j in np.sort(arrivals):
            best = tightest_by_norm(v.load, c.dem_abs[j], self.limit, self.capacity)
            if best >= 0:
                yield Command.place(int(j), best)


def tightest_by_norm(load: np.ndarray, demand: np.ndarray, limit: np.ndarray, capacity: np.ndarray) -> int:
    """BF-EXEC's machine for an arriving job: among the machines where ``demand`` fits (``load + demand
    <= limit``), the smallest L2 norm of the normalised remaining capacity ``1 - load / capacity``;
    norms within ``SCORE_RTOL`` of a unit capacity are ties, which go to the lowest index.  -1 if
    it fits nowhere."""
    ok = np.all(load + demand <= limit, axis=1)
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return -1
    cap = np.where(capacity[idx] > 0, capacity[idx], 1.0)
    norm = np.linalg.norm(1.0 - load[idx] / cap, axis=1)
    return int(idx[argbest(norm, largest=False, scale=1.0)])
