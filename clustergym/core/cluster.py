"""Servers: capacities, committed load, per-type counts, reservation slots, fit checks.

Capacity accounting (all ``(L, R)`` arrays, in the scenario's resource units):

* ``load`` is what fit checks use: the demand of real jobs that do not sit in a
  reservation slot, plus dummy jobs, plus every reservation slot (empty or
  filled).  The invariant is ``load <= capacity`` in every resource.
* A real job of type ``j`` placed on a server that has an empty type-``j`` slot
  fills the slot and adds nothing to ``load``; when it leaves, the slot is empty
  again (DRA's slots, auto-scaling paper Sec. 2.3 and Sec. 4).

Fit checks are vectorised over servers.  A relative tolerance of ``FIT_RTOL``
absorbs floating-point rounding, so that five jobs of 0.2 fit a unit server.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Cluster", "FIT_RTOL", "fit_limit"]

FIT_RTOL = 1e-9


def fit_limit(capacity: np.ndarray) -> np.ndarray:
    """What a fit is checked against: ``load + demand <= fit_limit(capacity)`` in every resource, with
    ``fit_limit(c) = c * (1 + FIT_RTOL) + 1e-12`` (float64).  Agents that check fits themselves use
    this function, so that they agree with the kernel to the last bit."""
    return np.asarray(capacity, dtype=np.float64) * (1.0 + FIT_RTOL) + 1e-12


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
        self._limit = fit_limit(self.capacity)
        self._type_limit = fit_limit(self.type_demand)  #: what a job must stay within to fill a type's slot
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
        if not self.any_slots or not np.all(demand <= self._type_limit[job_type]):
            return np.zeros(self.num_servers, dtype=bool)
        return self.slots[:, job_type] > self.slots_filled[:, job_type]

    def slot_usable_at(self, server: int, job_type: int, demand: np.ndarray) -> bool:
        return bool(
            self.any_slots
            and self.slots[server, job_type] > self.slots_filled[server, job_type]
            and np.all(demand <= self._type_limit[job_type])
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
