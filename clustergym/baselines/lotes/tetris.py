"""Tetris as the LoTES paper defines it (Tran et al. 2018, Sec. 5.1; choices: docs/papers/lotes.md#tetris).

Not the original Tetris of Grandl et al. (SIGCOMM 2014: normalised alignment,
an epsilon-weighted remaining-work term, a fairness knob); another agent may
implement an MRIS-adapted Tetris as ``tetris-mris``.  This is the paper's
simplified score, implemented literally:

* packing score ``omega = r . C``: the job's demand vector dotted with the
  machine's *remaining* (free) capacity, unnormalised (as printed: it
  favours machines with more free capacity, biased towards the resource the
  job needs most; it is not a tight best fit and is not "fixed" into one);
* work score ``gamma = p (r . 1)`` with ``p`` the job's processing time *on
  that machine* (``work / speed``; machine-dependent in the Omega experiment);
* score ``S(z, m) = w_align omega - w_work gamma``, equal weights by default,
  larger is better; ``p`` in **hours** (equal weights are meant for hours,
  docs/papers/lotes.md#tetris): the generated presets run in hours; trace scenarios run in
  seconds (the workloads' convention), so there ``p`` is divided by 3600
  (``hours_per_unit`` overrides).

Operational rules (the paper gives the scores only; these are clustergym's):

* **arrival** of ``z``: over every machine where ``z`` fits now, start ``z`` on
  the best score (ties: lowest index; scores within ``SCORE_RTOL`` of the
  larger of their two terms are ties, :mod:`clustergym.core.cluster`); if none fits, ``z`` joins the single
  global queue (the kernel's central queue);
* **completion** on ``m``: repeatedly start the queued job with the best
  ``S(z, m)`` among those that fit ``m`` (ties: earliest arrival), until none fits.

Tetris is clairvoyant: it reads each job's processing time (its work, and the
machine's speed for its class) at arrival, so it declares ``uses_oracle=True``
(the work is an oracle read unless the scenario is clairvoyant).  It always
examines every machine (``stats["examined"]``; Sec. 5.2 and check T6 of docs/papers/lotes.md#test-labels).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clustergym.agent_api import AgentContext, AgentRequirements
from clustergym.baselines.lotes.lotes import ArrivalExitDispatcher, QueueMirror
from clustergym.core.cluster import fit_limit
from clustergym.core.commands import Cmd
from clustergym.core.scores import argbest
from clustergym.core.simulator import EpochConfig
from clustergym.validation import settings

__all__ = ["TetrisTran"]


class TetrisTran(ArrivalExitDispatcher):
    """The LoTES paper's Tetris: score r.C - p (r.1), best machine at arrival, best job at completion."""

    description = "Tetris as in the LoTES paper: r.C - p*sum(r), clairvoyant p (oracle), global queue"
    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=True, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.PLACE}),
        queueing=("central",),
        uses_oracle=True,
    )

    def __init__(self, w_align: float = 1.0, w_work: float = 1.0, hours_per_unit: float | None = None, **params: Any):
        super().__init__(**params)
        self.w_align = settings.number(w_align, "agent.w_align")
        self.w_work = settings.number(w_work, "agent.w_work")
        self.hours_per_unit = settings.positive(hours_per_unit, "agent.hours_per_unit", allow_none=True)

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        v = self.view
        self._cap = np.array(v.capacity, dtype=float)
        self._lim = fit_limit(self._cap)
        hpu = self.hours_per_unit
        if hpu is None:
            sc = self.context.scenario
            is_trace = bool((sc.params or {}).get("trace_report")) or type(sc.source).__name__ == "ReplaySource"
            hpu = 1.0 / 3600.0 if is_trace else 1.0
        self._hpu = hpu
        self._speed = np.array(v.speed, dtype=float) / hpu  # oracle (L, J); p = work / speed in hours
        # per type: its speed column, and the speed when every machine has the same (no Omega), so
        # that an arrival computes p once; per resource: the fit limit column (exactly the same
        # floating-point operations as the (L, R) expressions, without their temporaries)
        self._speed_col = [np.ascontiguousarray(self._speed[:, k]) for k in range(self._speed.shape[1])]
        self._speed_one = [float(c[0]) if c.size and np.all(c == c[0]) else None for c in self._speed_col]
        self._lim_col = [np.ascontiguousarray(self._lim[:, r]) for r in range(self._lim.shape[1])]
        self._work = np.zeros(1024)  # per job id, learnt at arrival (clairvoyance)
        self._type = np.zeros(1024, dtype=np.int64)
        # agent-side mirror of the central queue (arrival order), so that a completion scores the
        # whole queue with a few vector operations; rebuilt from the view if it ever disagrees
        self._queue = QueueMirror(v.num_resources)
        self.stats = {"arrivals": 0, "examined": 0, "queued": 0}

    def _learn(self, job: int) -> None:
        if job >= self._work.shape[0]:
            size = max(2 * self._work.shape[0], job + 1)
            self._work = np.resize(self._work, size)
            self._type = np.resize(self._type, size)
        v = self.view
        self._work[job] = v.work(job)
        self._type[job] = v.job_type(job)

    def _on_arrival(self, job: int) -> int:
        """The best-scoring machine where the arriving job fits, or -1 (it joins the queue)."""
        v = self.view
        self._learn(job)
        self.stats["arrivals"] += 1
        self.stats["examined"] += v.num_servers
        d = v.demand(job)
        load = v.load
        fits = load[:, 0] + d[0] <= self._lim_col[0]  # = np.all(load + d <= lim, axis=1), column by column
        for r in range(1, d.shape[0]):
            fits &= load[:, r] + d[r] <= self._lim_col[r]
        idx = np.flatnonzero(fits)
        if idx.size == 0:
            self.stats["queued"] += 1
            self._queue.push(job, d)
            return -1
        # the score over the fitting machines, as one (n, R) @ (R,) product on exactly those rows
        # (BLAS's rounding of a row may depend on the rows around it: the same rows, the same sums)
        k = self._type[job]
        free = self._cap - load
        if idx.size < free.shape[0]:
            free = free[idx]
        align = self.w_align * (free @ d)
        one = self._speed_one[k]
        if one is not None:  # the same p on every machine: computed once, the same value
            work = self.w_work * (self._work[job] / one) * float(d.sum())
        else:
            sp = self._speed_col[k] if idx.size == fits.shape[0] else self._speed_col[k][idx]
            work = self.w_work * (self._work[job] / sp) * float(d.sum())
        return int(idx[argbest(align - work, scale=_magnitude(align, work))])

    def _on_exit(self, m: int) -> int:
        """The best-scoring queued job that fits machine ``m``, which freed resources, or -1."""
        v = self.view
        q = self._queue
        if q.live != v.num_queued:
            ids = np.fromiter(v.iter_queue(), dtype=np.int64, count=v.num_queued)
            q.reset_to(ids, v.demands(ids))
        load = v.load[m]
        idx = q.fitting(load, self._lim[m])
        if idx.size == 0:
            return -1
        ids, D = q.ids[idx], q.dem[idx]
        free = self._cap[m] - load
        p = self._work[ids] / self._speed[m, self._type[ids]]
        align, work = self.w_align * (D @ free), self.w_work * p * D.sum(axis=1)
        # ties: earliest arrival (the mirror keeps arrival order)
        return q.pop_at(int(idx[argbest(align - work, scale=_magnitude(align, work))]))


def _magnitude(align: np.ndarray, work: np.ndarray | float) -> float:
    """The scale of a Tetris score ``align - work``: its terms' size (the difference can cancel)."""
    return float(max(np.max(np.abs(align)), np.max(np.abs(work))))
