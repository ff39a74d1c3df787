"""VQS and VQS-BF (Psychas & Ghaderi, "High-Throughput Bin Packing", ToN 2021, §V–VI).

Paper: §V-A (partition), §V-B (VQS), §V-C (Theorem 3, Proposition 1), §VI (VQS-BF); the
choices the paper leaves open are in ``docs/papers/bfjs.md``.  The slotted machinery (DEP(t), NEW(t), fit checks, BF-S) is shared
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

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.optimize import linprog
from sortedcontainers import SortedList

from clustergym.baselines.bfjs.bfjs import SlottedAgent, first_by_id
from clustergym.errors import ConfigError
from clustergym.validation import boolean, number

__all__ = [
    "VQS",
    "VQSBF",
    "VQSAgent",
    "auto_J",
    "best_config",
    "interval",
    "k_red",
    "k_red_matrix",
    "kred_capacity",
    "optimal_capacity",
    "partition_probs",
    "upper_round",
    "vq_type",
]

Config = tuple[int, int, int]  #: (k1, j, kj): k1 type-1 jobs plus kj type-j jobs


# ====================================================================== partition (§V-A)
def vq_type(r: float, J: int) -> int:
    """The VQ index ``j`` of a job of normalised size ``r`` (right-closed intervals; tiny -> 2J-1)."""
    for m in range(J):
        if r > 2.0 ** -(m + 1):
            return 2 * m if r > (2.0 / 3.0) * 2.0**-m else 2 * m + 1
    return 2 * J - 1


def interval(j: int, J: int, exact: bool = False) -> tuple[Any, Any]:
    """``I_j = (lo, hi]`` as floats (or Fractions with ``exact``); the tiny range of VQ_{2J-1}
    is not included (its lower end is ``2^-J``)."""
    one = Fraction(1) if exact else 1.0
    m, odd = divmod(j, 2)
    top = one / 2**m
    two_thirds = (Fraction(2, 3) if exact else 2.0 / 3.0) * top
    return (top / 2, two_thirds) if odd else (two_thirds, top)


def upper_round(j: int, J: int, exact: bool = False) -> Any:
    """``sup I_j``: the size of a type-``j`` job in the upper-rounded system (Definition 4)."""
    return interval(j, J, exact)[1]


def k_red(J: int) -> list[Config]:
    """K_RED^(J) (Definition 6) in the canonical order A, B, C, D, as ``(k1, j, kj)`` triples."""
    if J < 2:
        raise ValueError(f"J must be > 1, got {J}")
    out: list[Config] = [(0, 2 * m, 2**m) for m in range(J)]  # A
    out += [(0, 2 * m + 1, 3 * 2 ** (m - 1)) for m in range(1, J)]  # B
    out += [(1, 2 * m, 2**m // 3) for m in range(2, J)]  # C
    out += [(1, 2 * m + 1, 2 ** (m - 1)) for m in range(1, J)]  # D
    return out


def k_red_matrix(J: int) -> np.ndarray:
    """``(4J-4, 2J)`` int: the configurations of :func:`k_red` as vectors."""
    rows = np.zeros((4 * J - 4, 2 * J), dtype=np.int64)
    for n, (k1, j, kj) in enumerate(k_red(J)):
        rows[n, 1] += k1
        rows[n, j] += kj
    return rows


def best_config(Q: Sequence[int], configs: Sequence[Config]) -> int:
    """Index of the first maximum-weight configuration (eq. (20); ties: canonical order, docs/papers/bfjs.md#ties)."""
    best, best_w = 0, -1
    q1 = Q[1]
    for n, (k1, j, kj) in enumerate(configs):
        w = k1 * q1 + kj * Q[j]
        if w > best_w:
            best, best_w = n, w
    return best


def auto_J(min_size: float | None) -> int:
    """The default J (docs/papers/bfjs.md#choice-of-j): smallest J with 2^-J < u, at least 4; 10 if u is unknown."""
    if min_size is None or not min_size > 0:
        return 10
    J = 1
    while 2.0**-J >= min_size and J < 30:
        J += 1
    return max(4, J)


# ====================================================================== LP oracles (eq. (4), Lemma 3)
def partition_probs(cdf: Callable[[float], float], J: int) -> np.ndarray:
    """``P^(I)``: the probability of each VQ for a size law with cdf ``F`` (tiny mass -> VQ_{2J-1})."""
    P = np.zeros(2 * J)
    for j in range(2 * J):
        lo, hi = interval(j, J)
        P[j] = cdf(hi) - (cdf(lo) if j < 2 * J - 1 else 0.0)
    return P


def _max_rho(P: np.ndarray, configs: np.ndarray, L: int) -> float:
    """``max rho`` s.t. ``rho P <= L sum_k p_k k``, ``sum_k p_k <= 1``, ``p >= 0`` (eq. (4))."""
    n, J = configs.shape
    c = np.zeros(n + 1)
    c[0] = -1.0
    A = np.zeros((J + 1, n + 1))
    A[:J, 0] = P
    A[:J, 1:] = -L * configs.T
    A[J, 1:] = 1.0
    b = np.zeros(J + 1)
    b[J] = 1.0
    res = linprog(c, A_ub=A, b_ub=b, bounds=[(0, None)] * (n + 1), method="highs")
    if res.status != 0:
        raise RuntimeError(f"LP failed: {res.message}")
    return float(res.x[0])


def kred_capacity(P: Sequence[float], J: int, L: int = 1) -> float:
    """``rho_KRED``: the largest workload whose VQ vector ``rho P^(I)`` lies in ``L Conv(K_RED)``.

    This is the region of Theorem 3's proof (upper-rounded counts).  VQS can do better when actual
    sizes pack more jobs than ``k_j``: in E2, 4e_4 packs five jobs of 0.2, so VQS supports
    ``rho* = 10/3`` while this LP gives 3.0 (docs/papers/bfjs.md#lp-oracles).
    """
    return _max_rho(np.asarray(P, dtype=float), k_red_matrix(J).astype(float), L)


def optimal_capacity(sizes: Sequence[float], probs: Sequence[float], L: int = 1) -> float:
    """``rho*`` of a discrete size law on unit servers (eq. (4)), over all feasible configurations."""
    from clustergym.theory.capacity import enumerate_configurations, maximal_configurations

    demand = np.asarray(sizes, dtype=float)[:, None]
    K = maximal_configurations(enumerate_configurations(demand, np.ones(1)), demand, np.ones(1))
    return _max_rho(np.asarray(probs, dtype=float), np.asarray(K, dtype=float), L)


# ====================================================================== the agents
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
        J = number(J, "agent.J", lo=2, hi=30, integer=True, allow_none=True, error=ConfigError)
        round_tiny = boolean(round_tiny, "agent.round_tiny", allow_none=True, error=ConfigError)
        argmax_snapshot = boolean(argmax_snapshot, "agent.argmax_snapshot", error=ConfigError)
        hol_blocking = boolean(hol_blocking, "agent.hol_blocking", error=ConfigError)
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
