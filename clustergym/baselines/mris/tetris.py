"""TETRIS as adapted by the MRIS paper (non-preemptive; Sec. 7.2).

Named ``tetris-mris`` so as not to clash with LoTES's Tetris (``tetris``).

Rule, as in the authors' code's ``TetrisScheduler()`` (label "Tetris-instantaneous", plotted as
TETRIS; docs/papers/mris.md#tetris): at every event time (after all completions and arrivals at
that time), for machine 0, 1, ..., M-1 in turn, repeatedly

* ``F`` = released, unstarted jobs that fit the machine now;
* ``rem`` = the machine's remaining capacity (normalised to 1 per resource);
* alignment ``a_j = d_j · rem`` and the smaller-volume term ``s_j = 1 / v_j`` (``v_j = p_j Σ_l d_jl``);
* ``ε_T = mean_F(a) / mean_F(s)``, recomputed before every pick;
* start ``argmax_F (a_j + ε_T s_j)`` (ties: earliest release, then id; scores within
  ``SCORE_RTOL`` of the maximum are ties, :func:`clustergym.core.cluster.argbest`) on the machine,

until nothing fits.  The paper's "a_j + ε v_j" is read as "+ ε x (smaller volume is better)", as
the authors' code does.  Weights are not used.  A job of zero volume gets ``s_j = 1e12``
(docs/papers/mris.md#zero-volume).  Job durations are read (clairvoyant scenarios; an oracle otherwise).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from clustergym.baselines.mris.mris import EventTimeAgent
from clustergym.core.commands import Command
from clustergym.core.scores import argbest

__all__ = ["TetrisMRIS", "ZERO_VOLUME_SCORE"]

#: ``1 / v`` for a job of zero volume
ZERO_VOLUME_SCORE = 1e12


class TetrisMRIS(EventTimeAgent):
    """TETRIS adapted to non-preemptive scheduling (Sec. 7.2)."""

    description = "TETRIS as adapted by the MRIS paper: per machine, pick argmax alignment + eps_T/volume until full"

    def decide(self) -> Iterator[Command]:
        q = self.queued()
        if q.size == 0:
            return
        c = self.jobs
        fit = self.fits(q)
        alive = fit.any(axis=1)  # jobs that fit nowhere now never will during this event
        q, fit = q[alive], fit[alive]
        if q.size == 0:
            return
        with np.errstate(divide="ignore"):
            s_all = np.where(c.vol[q] > 0, 1.0 / np.where(c.vol[q] > 0, c.vol[q], 1.0), ZERO_VOLUME_SCORE)
        dem_n = c.dem[q]
        placed = np.zeros(q.size, dtype=bool)
        cap = np.where(self.capacity > 0, self.capacity, 1.0)
        for i in range(self.capacity.shape[0]):
            cand = np.flatnonzero(fit[:, i] & ~placed)
            while cand.size:
                load = self.view.load[i]
                ok = np.all(load + c.dem_abs[q[cand]] <= self.limit[i], axis=1)
                cand = cand[ok]
                if cand.size == 0:
                    break
                rem = 1.0 - load / cap[i]
                a = dem_n[cand] @ rem
                s = s_all[cand]
                eps = a.mean() / s.mean()
                # the first of the tied maxima: ids follow release order, so earliest release, then id
                pick = cand[argbest(a + eps * s)]
                placed[pick] = True
                cand = cand[cand != pick]
                yield Command.place(int(q[pick]), i)
