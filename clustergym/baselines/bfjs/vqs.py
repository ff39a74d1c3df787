"""VQS and VQS-BF (Psychas & Ghaderi, "High-Throughput Bin Packing", ToN 2021, §V–VI).

Paper: §V-A (partition), §V-B (VQS), §V-C (Theorem 3, Proposition 1), §VI (VQS-BF); the
choices the paper leaves open are in ``docs/papers/bfjs.md``; the partition, K_RED and the LP oracles
are the paper's mathematics, in :mod:`clustergym.theory.bfjs`.  The slotted machinery (DEP(t), NEW(t), fit checks, BF-S) is shared
with the Best-Fit family in :mod:`clustergym.baselines.bfjs.bfjs`.

The universal partition and the virtual queues (§V-A, eq. (18))
---------------------------------------------------------------
``(1/2^J, 1]`` is cut into ``2J`` right-closed intervals, for ``m = 0..J-1``::

    I_2m   = ((2/3) 2^-m, 2^-m]
    I_2m+1 = ((1/2) 2^-m, (2/3) 2^-m]

A job of size ``r`` in ``I_j`` is of type ``j`` and waits in ``VQ_j``, a logical
subset of the one central queue (its size is *not* rounded).  Jobs of size
``<= 2^-J`` ("tiny") join ``VQ_{2J-1}``; VQS rounds their occupancy up to
``2^-J`` (``round_tiny``, docs/papers/bfjs.md#tiny-jobs).  :func:`vq_type` is a loop over
``m``, with no logarithms.

The reduced configuration set K_RED^(J) (§V-B, Definition 6, eq. (19))
----------------------------------------------------------------------
``4J - 4`` configurations, in the canonical order used for ties (docs/papers/bfjs.md#ties)::

    A: 2^m e_2m,                  m = 0..J-1
    B: 3 2^(m-1) e_2m+1,          m = 1..J-1
    C: e_1 + floor(2^m / 3) e_2m, m = 2..J-1
    D: e_1 + 2^(m-1) e_2m+1,      m = 1..J-1

Each is a triple ``(k1, j, kj)``; its weight is ``<k, Q> = k1 Q_1 + kj Q_j``
with ``Q`` the VQ cardinalities (job counts, not resource: docs/papers/bfjs.md#counts).

VQS (§V-B, Theorem 3) -- agent ``vqs``
--------------------------------------
Every slot, every server in index order (docs/papers/bfjs.md#renewal).  A server that is empty at
decision time renews its active configuration to the first maximum-weight
configuration of K_RED, with live counts: they include NEW(t) and
exclude jobs placed earlier in the slot (docs/papers/bfjs.md#renewal; ``argmax_snapshot=True`` uses the
counts taken before scheduling).  Then (i) if ``k1 = 1`` it reserves 2/3 for
``VQ_1`` and, if it holds no type-1 job, takes the head of ``VQ_1``; (ii) it
scans ``VQ_j`` in id order and places every job that fits the type-``j``
budget (1/3 if ``k1 = 1``, else 1; docs/papers/bfjs.md#vqs-scan).  ``hol_blocking=True`` stops the
scan at the first job that does not fit.  The reserved 2/3 stays idle while
``VQ_1`` is empty.

VQS-BF (§VI, Theorem 4) -- agent ``vqs-bf``
-------------------------------------------
Same renewal; then (i) if ``k1 = 1`` the largest job of ``VQ_1`` that fits;
(ii) the largest jobs of ``VQ_j`` that fit while the server holds fewer than
``kj`` type-``j`` jobs (all type-``j`` jobs on the server count, docs/papers/bfjs.md#vqs-bf-count); (iii)
BF-S over the whole queue.  Occupancy is the actual size (``round_tiny=False``).

Parameters
----------
``J``             number of partition levels (2J virtual queues), ``J >= 2``.  Default
                  ``None`` = our rule (docs/papers/bfjs.md#choice-of-j): the smallest ``J`` with
                  ``2^-J < u``, at least 4, where ``u`` is the smallest normalised
                  job size the scenario's demand law allows (its lower bound: the
                  paper's ``u``, a configuration constant, not F_R); 10 when the
                  law has no known lower bound (traces).  E3a gives 7,
                  E3b 4, E1 and E2 4.
``round_tiny``    VQS True, VQS-BF False (docs/papers/bfjs.md#tiny-jobs).
``argmax_snapshot``  False: live counts (docs/papers/bfjs.md#renewal).
``hol_blocking``  VQS only; False: the scan variant (docs/papers/bfjs.md#vqs-scan).
``mode``          ``faithful`` or ``vector`` (docs/papers/bfjs.md#multi-resource, see :mod:`.bfjs`).  VQ typing and
                  VQS budgets are always in scalar max-demand units; ``vector`` changes
                  only VQS-BF's fit checks and BF-S order.

Servers must be identical (§IX suggests one VQ set per capacity class; that is not
implemented, docs/papers/bfjs.md#heterogeneous); a scenario with heterogeneous servers is an error.

The renewal of an empty server when the queue is empty is not observable (it
will renew again before it takes a job), so it is skipped; every other server
that cannot gain a job this slot (no departure, no room for a new job) is
skipped too, since both policies are idempotent there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sortedcontainers import SortedList

from clustergym.baselines.bfjs.bfjs import SlottedAgent, first_by_id
from clustergym.errors import ConfigError
from clustergym.theory.bfjs import Config, auto_J, best_config, k_red, vq_type
from clustergym.validation import settings

__all__ = ["VQS", "VQSBF", "VQSAgent"]


class VQSAgent(SlottedAgent):
    """VQS (``best_fit=False``, §V-B) and VQS-BF (``best_fit=True``, §VI)."""

    best_fit = False

    def __init__(
        self,
        J: int | None = None,
        round_tiny: bool | None = None,
        argmax_snapshot: bool = False,
        hol_blocking: bool = False,
        mode: str = "faithful",
        **params: Any,
    ):
        super().__init__(mode=mode, **params)
        J = settings.number(J, "agent.J", lo=2, hi=30, integer=True, allow_none=True)
        round_tiny = settings.boolean(round_tiny, "agent.round_tiny", allow_none=True)
        argmax_snapshot = settings.boolean(argmax_snapshot, "agent.argmax_snapshot")
        hol_blocking = settings.boolean(hol_blocking, "agent.hol_blocking")
        if hol_blocking and self.best_fit:
            raise ConfigError("agent.hol_blocking", "applies to VQS only (VQS-BF picks the largest job)")
        self.J_param = J
        self.round_tiny = (not self.best_fit) if round_tiny is None else round_tiny
        self.argmax_snapshot = argmax_snapshot
        self.hol_blocking = hol_blocking

    # ------------------------------------------------------------------ episode state
    def setup(self) -> None:
        if not self.homogeneous:
            raise ConfigError(
                "agent", f"{self.name} needs identical servers (one set of virtual queues; docs/papers/bfjs.md)"
            )
        self.J = self.J_param if self.J_param is not None else auto_J(self._min_size())
        self.tiny = 2.0**-self.J
        self.configs = k_red(self.J)
        n = 2 * self.J
        self.vq_fifo: list[dict[int, None]] = [{} for _ in range(n)]
        self.vq_pool: list[SortedList] = [SortedList() for _ in range(n)]
        self.vt: dict[int, int] = {}  # job -> VQ index
        self.cfg: list[Config | None] = [None] * self.L  # active configurations
        self.tcount = [[0] * n for _ in range(self.L)]  # type-j jobs on server l
        self.tused = [[0.0] * n for _ in range(self.L)]  # their occupancy
        self.renewals = 0

    def _min_size(self) -> float | None:
        """The smallest normalised size the scenario's demand law allows (None if unknown)."""
        src = self.context.scenario.source
        dem = getattr(src, "demand", None)
        if dem is not None and hasattr(dem, "low") and not getattr(dem, "discrete", False):
            return float(np.max(np.asarray(dem.low, dtype=float) / self.ref))
        if dem is not None and getattr(dem, "discrete", False):
            return float(np.min(np.max(np.asarray(dem.type_values, dtype=float) / self.ref, axis=1)))
        if src.types.exact:
            return float(np.min(np.max(np.asarray(src.types.demand, dtype=float) / self.ref, axis=1)))
        return None

    def occupancy(self, size: float) -> float:
        return max(size, self.tiny) if self.round_tiny else size

    def enqueued(self, i: int) -> None:
        j = vq_type(self.occ[i], self.J)
        self.vt[i] = j
        self.vq_fifo[j][i] = None
        self.vq_pool[j].add(self.key[i])

    def dequeued(self, i: int) -> None:
        j = self.vt[i]
        del self.vq_fifo[j][i]
        self.vq_pool[j].remove(self.key[i])

    def placed(self, i: int, l: int) -> None:
        j = self.vt[i]
        self.tcount[l][j] += 1
        self.tused[l][j] += self.occ[i]

    def departed(self, i: int, l: int) -> None:
        del self.vt[i]

    def server_synced(self, l: int) -> None:
        n = 2 * self.J
        count, used = [0] * n, [0.0] * n
        for i in self.on[l]:
            j = self.vt[i]
            count[j] += 1
            used[j] += self.occ[i]
        self.tcount[l], self.tused[l] = count, used

    def counts(self) -> list[int]:
        """The live VQ cardinalities Q_j."""
        return [len(f) for f in self.vq_fifo]

    # ------------------------------------------------------------------ one slot
    def schedule(self, dep: list[int], new: list[int]) -> None:
        snapshot = self.counts() if self.argmax_snapshot else None
        servers = dep
        if new:  # a server without departures can only take a new job
            servers = sorted(set(dep).union(self.servers_with_room(min(self.occ[i] for i in new))))
        if self.dirty:  # snapshot argmax may leave an empty server behind a non-empty queue
            servers = sorted(set(servers).union(l for l in range(self.L) if not self.on[l]))
        for l in servers:
            if not self.on[l]:
                if not self.fifo:
                    continue
                self.renew(l, snapshot if snapshot is not None else self.counts())
            if self.best_fit:
                self._fill_vqs_bf(l)
            else:
                self._fill_vqs(l)
        self.dirty = bool(self.argmax_snapshot and self.fifo and any(not on for on in self.on))

    def renew(self, l: int, Q: Sequence[int]) -> None:
        """Step 1 (eq. (20)): server ``l`` is empty; its active configuration becomes the argmax."""
        self.cfg[l] = self.configs[best_config(Q, self.configs)]
        self.renewals += 1

    def _fill_vqs(self, l: int) -> None:
        k1, j, _ = self.cfg[l]  # type: ignore[misc]  # VQS fills by budget, not by count
        if k1 and self.tcount[l][1] == 0 and self.vq_fifo[1]:  # (i) 2/3 reserved for VQ_1
            self.place(next(iter(self.vq_fifo[1])), l)
        budget = (1.0 / 3.0 if k1 else 1.0) * self.cap[l]  # (ii) the other type
        tol = self.tol[l]
        if self.hol_blocking:
            fifo = self.vq_fifo[j]
            while fifo:
                i = next(iter(fifo))
                if self.tused[l][j] + self.occ[i] > budget + tol:
                    break
                self.place(i, l)
            return
        pool, fifo = self.vq_pool[j], self.vq_fifo[j]
        while pool:
            i = first_by_id(pool, fifo, self.occ, budget - self.tused[l][j] + tol)
            if i < 0:
                break
            self.place(i, l)

    def _fill_vqs_bf(self, l: int) -> None:
        k1, j, kj = self.cfg[l]  # type: ignore[misc]
        if k1:  # (i) largest of VQ_1 that fits
            i = self.largest_fitting(self.vq_pool[1], l)
            if i >= 0:
                self.place(i, l)
        while self.tcount[l][j] < kj:  # (ii) up to kj of type j
            i = self.largest_fitting(self.vq_pool[j], l)
            if i < 0:
                break
            self.place(i, l)
        self.bf_s_fill(l)  # (iii) BF-S, whole queue


class VQS(VQSAgent):
    """VQS (§V-B, Theorem 3): max-weight K_RED configuration renewed when a server empties."""

    description = "VQS (BF-J/S §V-B, Thm 3): virtual queues + reduced configurations (J=auto); slotted"
    best_fit = False


class VQSBF(VQSAgent):
    """VQS-BF (§VI, Theorem 4): VQS's configuration, largest-fit placement, then BF-S."""

    description = "VQS-BF (BF-J/S §VI, Thm 4): VQS configuration + largest-fit + BF-S fill (J=auto); slotted"
    best_fit = True
