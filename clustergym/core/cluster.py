"""Servers: capacities, committed load, per-type counts, reservation slots, fit checks.

Capacity accounting (all ``(L, R)`` arrays, in the scenario's resource units):

* ``load`` is what fit checks use: the demand of real jobs that do not sit in a
  reservation slot, plus dummy jobs, plus every reservation slot (empty or
  filled).  The invariant is ``load <= capacity`` in every resource.
* A real job of type ``j`` placed on a server that has an empty type-``j`` slot
  fills the slot and adds nothing to ``load``; when it leaves, the slot is empty
  again (DRA semantics, autoscale.md §1.3).

Fit checks are vectorised over servers.  A relative tolerance of ``FIT_RTOL``
absorbs floating-point rounding, so that five jobs of 0.2 fit a unit server.

Score ties (:data:`SCORE_RTOL`, :func:`best_mask`, :func:`argbest`,
:func:`score_ranks`): the agents choose servers and jobs by computed scores
(Best-Fit tightness, Tetris alignment, priority keys, norms of free capacity)
and break ties by a documented rule (lowest server index, earliest release,
smallest id).  Scores that are equal in exact arithmetic may differ in the last
bits once demands are divided by capacities and summed, which would let the
rounding, not the rule, decide.  Every score-based choice therefore treats two
scores as tied when they differ by at most ``SCORE_RTOL`` relative to their
magnitude (or to a ``scale`` the caller gives when a score is a difference of
larger terms, such as a free capacity ``C - load``), and applies its tie rule
among the tied ones.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["Cluster", "FIT_RTOL", "SCORE_RTOL", "score_tol", "best_mask", "argbest", "score_ranks"]

FIT_RTOL = 1e-9

#: two computed scores within this relative distance are a tie (the documented tie rule decides)
SCORE_RTOL = 1e-9


def score_tol(value: float, scale: float = 0.0) -> float:
    """The tie tolerance around a score ``value``: ``SCORE_RTOL * max(|value|, scale)``."""
    return SCORE_RTOL * max(abs(float(value)), float(scale))


def best_mask(scores: Any, *, largest: bool = True, scale: float = 0.0) -> np.ndarray:
    """``(n,)`` bool: the scores tied with the best one (the maximum, or the minimum if not
    ``largest``) up to :func:`score_tol` of the best.  NaN scores are never best."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0 or np.all(np.isnan(s)):
        return np.zeros(s.shape, dtype=bool)
    b = float(np.nanmax(s) if largest else np.nanmin(s))
    if not math.isfinite(b):
        return s == b
    tol = score_tol(b, scale)
    return s >= b - tol if largest else s <= b + tol


def argbest(scores: Any, *, largest: bool = True, scale: float = 0.0) -> int:
    """Index of the first score tied with the best (see :func:`best_mask`): the caller orders the
    candidates by its tie rule (server index, release, id), so the first tied one wins.
    -1 if there is no candidate."""
    m = best_mask(scores, largest=largest, scale=scale)
    return int(np.argmax(m)) if m.any() else -1


def score_ranks(scores: Any, *, scale: float = 0.0) -> np.ndarray:
    """``(n,)`` int64 dense ranks of ``scores`` in ascending order, tied scores sharing a rank.

    Scores are grouped from the smallest: a score within :func:`score_tol` of the smallest score of
    its group joins it, the next one starts a new group.  Use the ranks in place of a computed score
    in a sort (``np.lexsort((ids, release, score_ranks(key)))``) so that tied scores are ordered by
    the tie rule.  NaN sorts last, in a group of its own.
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    n = s.size
    out = np.zeros(n, dtype=np.int64)
    if n < 2:
        return out
    o = np.argsort(s, kind="stable")
    v = s[o]
    a, b = v[:-1], v[1:]
    with np.errstate(invalid="ignore"):
        tol = SCORE_RTOL * np.maximum(np.maximum(np.abs(a), np.abs(b)), float(scale))
        brk = ~(((b - a) <= tol) & np.isfinite(a) & np.isfinite(b)) & ~(a == b)
    # within a chain of consecutive close scores, a new group starts once the distance to the
    # group's smallest score exceeds the tolerance (grouping against the leader, not the neighbour)
    chain = np.flatnonzero(~brk)
    if chain.size:
        lead = None
        prev = -2
        for i in chain.tolist():  # pairs (i, i+1) that are close to each other
            if i != prev + 1:
                lead = v[i]
            x = v[i + 1]
            if not (x == lead or x - lead <= score_tol(x, scale) or x - lead <= score_tol(lead, scale)):
                brk[i] = True
                lead = x
            prev = i
    out[o] = np.concatenate([[0], np.cumsum(brk)])
    return out


class Cluster:
    """State of ``L`` servers with ``R`` resources and ``J`` job types.

    Args:
        capacity: ``(L, R)`` capacities; rows may differ (heterogeneous servers).
        type_demand: ``(J, R)`` nominal demand per type (dummy and slot size).
    """

    def __init__(self, capacity: np.ndarray, type_demand: np.ndarray):
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.num_servers, self.num_resources = self.capacity.shape
        self.type_demand = np.asarray(type_demand, dtype=np.float64)
        self.num_types = self.type_demand.shape[0]
        self._limit = self.capacity * (1.0 + FIT_RTOL) + 1e-12
        L, R, J = self.num_servers, self.num_resources, self.num_types
        self.load = np.zeros((L, R))
        self.count_real = np.zeros((L, J), dtype=np.int64)
        self.count_dummy = np.zeros((L, J), dtype=np.int64)
        self.slots = np.zeros((L, J), dtype=np.int64)         #: reservation slots (empty + filled)
        self.slots_filled = np.zeros((L, J), dtype=np.int64)  #: slots holding a real job
        self.items = np.zeros(L, dtype=np.int64)              #: jobs + dummies + slots on the server
        self.any_slots = False
        self.had_dummies = False  #: a dummy job has been placed since reset (dummy_usage may be nonzero)
        # cluster-wide totals, kept incrementally for the metrics (R,)
        self.real_usage = np.zeros(R)
        self.dummy_usage = np.zeros(R)
        self.empty_slot_usage = np.zeros(R)

    def reset(self) -> None:
        for arr in (self.load, self.count_real, self.count_dummy, self.slots,
                    self.slots_filled, self.items, self.real_usage, self.dummy_usage,
                    self.empty_slot_usage):
            arr[...] = 0
        self.any_slots = False
        self.had_dummies = False

    # ------------------------------------------------------------------ fit checks
    def free(self) -> np.ndarray:
        """``(L, R)`` free capacity (new array)."""
        return self.capacity - self.load

    def fits_free(self, demand: np.ndarray) -> np.ndarray:
        """``(L,)`` bool: servers whose free capacity holds ``demand`` (R,)."""
        return (self.load + demand <= self._limit).all(axis=1)

    def fits_free_at(self, server: int, demand: np.ndarray) -> bool:
        return bool((self.load[server] + demand <= self._limit[server]).all())

    def slot_usable(self, job_type: int, demand: np.ndarray) -> np.ndarray:
        """``(L,)`` bool: servers with an empty type-``job_type`` slot that holds ``demand``."""
        if not self.any_slots or not np.all(demand <= self.type_demand[job_type] * (1 + FIT_RTOL) + 1e-12):
            return np.zeros(self.num_servers, dtype=bool)
        return self.slots[:, job_type] > self.slots_filled[:, job_type]

    def slot_usable_at(self, server: int, job_type: int, demand: np.ndarray) -> bool:
        return bool(
            self.any_slots
            and self.slots[server, job_type] > self.slots_filled[server, job_type]
            and np.all(demand <= self.type_demand[job_type] * (1 + FIT_RTOL) + 1e-12)
        )

    def fits(self, job_type: int, demand: np.ndarray) -> np.ndarray:
        """``(L,)`` bool: servers where a real job can start (free capacity or an empty slot)."""
        ok = self.fits_free(demand)
        if self.any_slots:
            ok |= self.slot_usable(job_type, demand)
        return ok

    def fits_at(self, server: int, job_type: int, demand: np.ndarray) -> bool:
        return self.fits_free_at(server, demand) or self.slot_usable_at(server, job_type, demand)

    # ------------------------------------------------------------------ updates
    def add_real(self, server: int, job_type: int, demand: np.ndarray) -> bool:
        """Start a real job; returns True if it fills a slot."""
        self.count_real[server, job_type] += 1
        self.items[server] += 1
        self.real_usage += demand
        if self.slot_usable_at(server, job_type, demand):
            self.slots_filled[server, job_type] += 1
            self.empty_slot_usage -= self.type_demand[job_type]
            return True
        self.load[server] += demand
        return False

    def remove_real(self, server: int, job_type: int, demand: np.ndarray, in_slot: bool) -> None:
        self.count_real[server, job_type] -= 1
        self.items[server] -= 1
        self.real_usage -= demand
        if in_slot:
            self.slots_filled[server, job_type] -= 1
            self.empty_slot_usage += self.type_demand[job_type]
        else:
            self.load[server] -= demand
        self._settle(server)

    def add_dummy(self, server: int, job_type: int) -> None:
        d = self.type_demand[job_type]
        self.count_dummy[server, job_type] += 1
        self.items[server] += 1
        self.load[server] += d
        self.dummy_usage += d
        self.had_dummies = True

    def remove_dummy(self, server: int, job_type: int) -> None:
        d = self.type_demand[job_type]
        self.count_dummy[server, job_type] -= 1
        self.items[server] -= 1
        self.load[server] -= d
        self.dummy_usage -= d
        self._settle(server)

    def add_slot(self, server: int, job_type: int) -> None:
        d = self.type_demand[job_type]
        self.slots[server, job_type] += 1
        self.items[server] += 1
        self.load[server] += d
        self.empty_slot_usage += d
        self.any_slots = True

    def remove_slot(self, server: int, job_type: int) -> None:
        d = self.type_demand[job_type]
        self.slots[server, job_type] -= 1
        self.items[server] -= 1
        self.load[server] -= d
        self.empty_slot_usage -= d
        self._settle(server)

    def _settle(self, server: int) -> None:
        # An empty server has exactly zero load: no floating-point drift survives.
        if self.items[server] == 0:
            self.load[server] = 0.0
        if not self.any_slots:
            return
        if self.items[server] == 0 and not self.slots.any():
            self.any_slots = False
