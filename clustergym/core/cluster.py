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

Every method that changes a server's state appends the server's index to a
journal (:meth:`Cluster.changes_since`), from which incremental consumers (the
placement index of :mod:`clustergym.core.placement`, the env's observation
builder) learn what changed without looking at every server.  With
``L >= INDEX_MIN_SERVERS`` servers, :meth:`Cluster.select`, :meth:`Cluster.any_fit`
and :meth:`Cluster.fit_mask` answer from the placement index; below, a vectorised
scan is as fast.  Both give the same answers.

Score ties between computed scores (Best-Fit tightness and the agents' scores) follow
:mod:`clustergym.core.scores`.
"""

from __future__ import annotations

import numpy as np

from clustergym.core.placement import PlacementIndex, scan_select
from clustergym.core.scores import SCORE_RTOL, argbest, best_mask, score_ranks, score_tol

__all__ = [
    "Cluster",
    "FIT_RTOL",
    "INDEX_MIN_SERVERS",
    "fit_limit",
    "SCORE_RTOL",
    "score_tol",
    "best_mask",
    "argbest",
    "score_ranks",
]

FIT_RTOL = 1e-9
#: from this many servers on, server selection and fit sets come from the placement index (below, the
#: vectorised scan is faster: measured crossover about 550 servers for Best-Fit, 1,000 for First-Fit)
INDEX_MIN_SERVERS = 768


def _all_last(ok: np.ndarray) -> np.ndarray:
    """``ok.all(axis=-1)`` without ``ndarray.all``'s Python-level wrapper (a few µs on the tiny arrays
    of a step)."""
    return np.logical_and.reduce(ok, axis=-1)


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
        exact_types: every real job demands exactly its type's row (the placement index then
            keeps per-type fit sets; other demands use its continuous engine).
        index_min_servers: use the placement index from this many servers on (default
            ``INDEX_MIN_SERVERS``; 0: always; a large number: never).
    """

    def __init__(
        self,
        capacity: np.ndarray,
        type_demand: np.ndarray,
        exact_types: bool = True,
        index_min_servers: int | None = None,
    ):
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
        self.slots = np.zeros((L, J), dtype=np.int64)  #: reservation slots (empty + filled)
        self.slots_filled = np.zeros((L, J), dtype=np.int64)  #: slots holding a real job
        self.items = np.zeros(L, dtype=np.int64)  #: jobs + dummies + slots on the server
        self.any_slots = False
        self.had_dummies = False  #: a dummy job has been placed since reset (dummy_usage may be nonzero)
        # cluster-wide totals, kept incrementally for the metrics (R,)
        self.real_usage = np.zeros(R)
        self.dummy_usage = np.zeros(R)
        self.empty_slot_usage = np.zeros(R)
        # journal of changed servers: entry i is the (self._jbase + i)-th change since creation
        self._journal: list[int] = []
        self._jbase = 0
        self._jmax = max(4096, 4 * L)
        self._nr_cursor = -1  # servers_without_real, kept from the journal
        self._no_real: np.ndarray = np.ones(L, dtype=bool)
        self._n_no_real = L
        threshold = INDEX_MIN_SERVERS if index_min_servers is None else int(index_min_servers)
        self.indexed = L >= threshold  #: whether select/any_fit/fit_mask use the placement index
        self.placement = PlacementIndex(self, typed=exact_types)

    def reset(self) -> None:
        for arr in (
            self.load,
            self.count_real,
            self.count_dummy,
            self.slots,
            self.slots_filled,
            self.items,
            self.real_usage,
            self.dummy_usage,
            self.empty_slot_usage,
        ):
            arr[...] = 0
        self.any_slots = False
        self.had_dummies = False
        self.invalidate()

    # ------------------------------------------------------------------ journal of changes
    def _touch(self, server: int) -> None:
        j = self._journal
        j.append(server)
        if len(j) > self._jmax:
            self._trim()

    def _trim(self) -> None:
        """Nobody read the journal for long: drop it; consumers that lag rebuild from scratch."""
        self._jbase += len(self._journal)
        self._journal.clear()

    def changes_since(self, cursor: int) -> tuple[list[int] | None, int]:
        """Servers changed since ``cursor`` (with repeats), and the new cursor.

        ``None`` instead of the list means "more than the journal kept, or a reset": recompute
        every server.  A consumer starts with cursor -1.
        """
        base = self._jbase
        j = self._journal
        end = base + len(j)
        if cursor < base:
            return None, end
        return j[cursor - base :], end

    @property
    def servers_without_real(self) -> int:
        """Servers on which no real job runs (dummies and slots do not count), kept from the journal."""
        servers, self._nr_cursor = self.changes_since(self._nr_cursor)
        if servers is None:
            self._no_real = ~self.count_real.any(axis=1)  # type: ignore[assignment]  # numpy stubs: a bool array
            self._n_no_real = int(np.count_nonzero(self._no_real))
        elif servers:
            no_real, cr = self._no_real, self.count_real
            for s in set(servers):
                now = not cr[s].any()
                if now != no_real[s]:
                    no_real[s] = now
                    self._n_no_real += 1 if now else -1
        return self._n_no_real

    def invalidate(self) -> None:
        """Every consumer of the journal recomputes every server (after state was written directly)."""
        self._jbase += len(self._journal) + 1
        self._journal.clear()

    # ------------------------------------------------------------------ placement (indexed)
    def index_active(self, free_only: bool = False) -> bool:
        """Whether :meth:`select`, :meth:`any_fit` and :meth:`fit_mask` answer from the index now
        (``L >= INDEX_MIN_SERVERS``, and no reservation slots unless ``free_only``)."""
        return self.indexed and (free_only or not self.any_slots)

    def select(
        self,
        rule: str,
        job_type: int,
        demand: np.ndarray,
        rng: np.random.Generator | None = None,
        *,
        free_only: bool = False,
    ) -> int:
        """The server ``rule`` (:data:`clustergym.core.placement.RULES`) chooses for a job, or -1.

        The candidates are :meth:`fits` (free capacity or an empty slot of the type), or
        :meth:`fits_free` with ``free_only``; the choice is
        :func:`~clustergym.core.placement.scan_select`'s, bit for bit.
        """
        if self.index_active(free_only):
            return self.placement.select(rule, job_type, demand, rng)
        fits = self.fits_free(demand) if free_only else self.fits(job_type, demand)
        return scan_select(rule, fits, demand, self.load, self.capacity, rng)

    def any_fit(self, job_type: int, demand: np.ndarray, *, free_only: bool = False) -> bool:
        """Whether the job can start on some server (``free_only``: in free capacity)."""
        if self.index_active(free_only):
            return self.placement.any_fit(job_type, demand)
        fits = self.fits_free(demand) if free_only else self.fits(job_type, demand)
        return bool(fits.any())

    def fit_mask(self, job_type: int, demand: np.ndarray, *, free_only: bool = False) -> np.ndarray:
        """``(L,)`` bool, a new array: :meth:`fits` (or :meth:`fits_free`), from the index when active."""
        if self.index_active(free_only):
            return self.placement.fit_mask(job_type, demand)
        return self.fits_free(demand) if free_only else self.fits(job_type, demand)

    # ------------------------------------------------------------------ fit checks
    def free(self) -> np.ndarray:
        """``(L, R)`` free capacity (new array)."""
        return self.capacity - self.load

    def fits_free(self, demand: np.ndarray) -> np.ndarray:
        """``(L,)`` bool: servers whose free capacity holds ``demand`` (R,)."""
        return _all_last(self.load + demand <= self._limit)

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

    def fit_rows(self, job_types: np.ndarray, demands: np.ndarray) -> np.ndarray:
        """``(n, L)`` bool: :meth:`fits` of ``n`` jobs at once (``job_types`` ``(n,)``, ``demands`` ``(n, R)``)."""
        ok = _all_last(self.load[None] + demands[:, None] <= self._limit[None])
        if self.any_slots:
            for i, (t, d) in enumerate(zip(job_types.tolist(), demands)):
                ok[i] |= self.slot_usable(t, d)
        return ok

    def fits_at(self, server: int, job_type: int, demand: np.ndarray) -> bool:
        return self.fits_free_at(server, demand) or self.slot_usable_at(server, job_type, demand)

    # ------------------------------------------------------------------ updates
    def add_real(self, server: int, job_type: int, demand: np.ndarray) -> bool:
        """Start a real job; returns True if it fills a slot."""
        j = self._journal
        j.append(server)
        if len(j) > self._jmax:
            self._trim()
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
        j = self._journal
        j.append(server)
        if len(j) > self._jmax:
            self._trim()
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
        self._touch(server)
        d = self.type_demand[job_type]
        self.count_dummy[server, job_type] += 1
        self.items[server] += 1
        self.load[server] += d
        self.dummy_usage += d
        self.had_dummies = True

    def remove_dummy(self, server: int, job_type: int) -> None:
        self._touch(server)
        d = self.type_demand[job_type]
        self.count_dummy[server, job_type] -= 1
        self.items[server] -= 1
        self.load[server] -= d
        self.dummy_usage -= d
        self._settle(server)

    def add_slot(self, server: int, job_type: int) -> None:
        self._touch(server)
        d = self.type_demand[job_type]
        self.slots[server, job_type] += 1
        self.items[server] += 1
        self.load[server] += d
        self.empty_slot_usage += d
        self.any_slots = True

    def remove_slot(self, server: int, job_type: int) -> None:
        self._touch(server)
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
