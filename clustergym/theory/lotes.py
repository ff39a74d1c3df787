"""LoTES stages 1 and 2: the offline plan (Tran, Padmanabhan, Zhang, Li, Down & Beck, "Multi-stage
resource-aware scheduling for data centers with heterogeneous servers", J. Scheduling 2018, Sec. 4.1-4.2).

* **Stage 1, allocation LP** (Sec. 4.1, LP (1)-(5)): a fluid model over one pooled "super-machine" per machine
  configuration, in its equivalent y-form (``y_jk`` = fluid number of class-``k`` jobs in service on
  configuration ``j``), solved with SciPy/HiGHS *dual simplex* (``highs-ds``) so that the optimum is a
  sparse vertex; ``K_j = {k : y_jk > tol}`` (docs/papers/lotes.md#stage1).  :func:`allocation_lp`.
* **Stage 2** (Sec. 4.2): the non-dominated bins of each configuration over ``K_j`` (an exhaustive
  recursion plus maximality; the printed Algorithm 1 is kept in :func:`algorithm1_bins`, with its
  ``nextBin`` reset and a non-dominance post-filter, see docs/papers/lotes.md#algorithm1; a configuration
  with no feasible bin gets the empty bin), then the *machine assignment LP* (LP (6)-(10) in reduced form;
  HiGHS dual simplex) and its rounding (largest fractional parts first, ties by bin index).
  :func:`nondominated_bins`, :func:`assignment_lp`, :func:`round_assignment`, :func:`solve_lotes`.

Stage 3, the online dispatcher, is the agent :class:`clustergym.baselines.lotes.lotes.LoTES`; the
scenario presets use Stage 1 to set arrival rates at a fraction of the LP's maximal throughput.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.optimize
import scipy.sparse as sp

from clustergym._cache import Cache
from clustergym.core.scores import score_ranks
from clustergym.errors import ConfigError

__all__ = [
    "LotesInputs",
    "LotesPlan",
    "Stage1Result",
    "Stage2Result",
    "TooManyBins",
    "algorithm1_bins",
    "allocation_lp",
    "assignment_lp",
    "cached_plan",
    "knapsack_bin",
    "lotes_inputs",
    "group_machines",
    "nondominated_bins",
    "nondominated_filter",
    "plan_for",
    "round_assignment",
    "solve_lotes",
    "swap_rounding",
]

#: absolute fit tolerance of the offline stages (capacities such as 0.06 hold a 0.06 job exactly)
BIN_TOL = 1e-9


# ====================================================================================== Stage 1
@dataclass
class Stage1Result:
    """Allocation LP optimum (Sec. 4.1)."""

    lam: float  #: lambda*_1
    y: np.ndarray  #: (M, K) fluid jobs of class k in service on configuration j
    delta: np.ndarray  #: (M, K, R) delta_jkl = r_kl y_jk / (n_j c_jl)
    support: np.ndarray  #: (M, K) bool, K_j
    seconds: float = 0.0


def _check_inputs(n: Any, cap: Any, alpha: Any, r: Any, mu: Any) -> tuple[np.ndarray, ...]:
    n = np.asarray(n, dtype=float).reshape(-1)
    cap = np.asarray(cap, dtype=float)
    if cap.ndim == 1:
        cap = cap[:, None]
    alpha = np.asarray(alpha, dtype=float).reshape(-1)
    r = np.asarray(r, dtype=float)
    if r.ndim == 1:
        r = r[:, None]
    M, R = cap.shape
    K = alpha.shape[0]
    mu = np.asarray(mu, dtype=float)
    if mu.ndim == 1:
        mu = np.tile(mu, (M, 1))
    if n.shape != (M,) or r.shape != (K, R) or mu.shape != (M, K):
        raise ValueError(
            f"inconsistent shapes: n {n.shape}, cap {cap.shape}, alpha {alpha.shape}, r {r.shape}, mu {mu.shape}"
        )
    if np.any(n < 0) or np.any(cap < 0) or np.any(alpha < 0) or np.any(r < 0) or np.any(mu < 0):
        raise ValueError("LoTES inputs must be non-negative")
    return n, cap, alpha, r, mu


def allocation_lp(n: Any, cap: Any, alpha: Any, r: Any, mu: Any, *, method: str = "highs-ds") -> Stage1Result:
    """Stage 1 (LP (1)-(5)) in the y-form (docs/papers/lotes.md#stage1)::

        max lambda  s.t.  sum_j mu_jk y_jk >= lambda alpha_k   (k)
                          sum_k r_kl y_jk <= n_j c_jl          (j, l)
                          y >= 0

    Args:
        n: ``(M,)`` machines per configuration; cap: ``(M, R)`` capacity of one machine;
        alpha: ``(K,)`` class probabilities; r: ``(K, R)`` class profiles; mu: ``(M, K)`` rates
        (or ``(K,)`` for configuration-independent rates).
    """
    n, cap, alpha, r, mu = _check_inputs(n, cap, alpha, r, mu)
    M, R = cap.shape
    K = alpha.shape[0]
    if np.any(np.all(r[alpha > 0] == 0, axis=1)):
        raise ValueError("a class with positive probability has a zero resource profile: lambda* is unbounded")
    t0 = time.perf_counter()
    nv = M * K + 1
    A = np.zeros((K + M * R, nv))
    b = np.zeros(K + M * R)
    for k in range(K):
        for j in range(M):
            A[k, j * K + k] = -mu[j, k]
        A[k, -1] = alpha[k]
    for j in range(M):
        for l in range(R):
            row = K + j * R + l
            A[row, j * K : (j + 1) * K] = r[:, l]
            b[row] = n[j] * cap[j, l]
    c = np.zeros(nv)
    c[-1] = -1.0
    res = scipy.optimize.linprog(c, A_ub=A, b_ub=b, bounds=(0, None), method=method)
    if res.status != 0:
        raise RuntimeError(f"allocation LP failed: {res.message}")
    y = res.x[:-1].reshape(M, K)
    y[y < 0] = 0.0
    tol = 1e-9 * max(1.0, float(y.max()) if y.size else 1.0)
    support = y > tol
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.where(cap[:, None, :] > 0, r[None, :, :] * y[:, :, None] / (n[:, None, None] * cap[:, None, :]), 0.0)
    delta = np.nan_to_num(delta)
    return Stage1Result(float(res.x[-1]), y, delta, support, time.perf_counter() - t0)


# ====================================================================================== Stage 2: bins
class TooManyBins(Exception):
    """The enumeration of one configuration's bins exceeded its work limit."""


def nondominated_bins(
    cap: Sequence[float],
    classes: Sequence[int],
    r: np.ndarray,
    *,
    tol: float = BIN_TOL,
    empty_fallback: bool = True,
    max_states: int | None = None,
) -> np.ndarray:
    """All non-dominated bins of one machine over ``classes`` (Sec. 4.2; docs/papers/lotes.md#algorithm1).

    A bin is a multiset of classes whose *expected* profiles fit the machine
    (``sum_k N_k r_kl <= c_l + tol`` for every ``l``); it is non-dominated when
    no class of ``classes`` can be added.  Returns ``(B, K)`` int counts (columns
    of classes outside ``classes`` are 0), in lexicographic order of decreasing
    counts of ``classes`` in the given order.  If no class fits an empty machine,
    the single empty bin (docs/papers/lotes.md#empty-bin; ``empty_fallback=False`` returns ``(0, K)``).

    An exhaustive recursion, run breadth-first over numpy arrays: level
    ``p`` expands every partial bin by ``m = room, ..., 0`` jobs of the ``p``-th class;
    the last class gets only its maximum (anything less is dominated); a bin is kept
    when no class fits in what is left.  ``max_states`` bounds the partial bins generated
    (:class:`TooManyBins` beyond it).
    """
    r = np.asarray(r, dtype=float)
    K, R = r.shape
    cls = [int(k) for k in classes]
    for k in cls:
        if np.all(r[k] <= 0):
            raise ValueError(f"class {k} has a zero profile: infinitely many fit")
    capv = np.asarray(cap, dtype=float).reshape(R) + tol
    rows = r[cls] if cls else np.zeros((0, R))
    nc = len(cls)
    out: list[np.ndarray] = []
    generated = [0]

    def room(used: np.ndarray, p: int) -> np.ndarray:
        row = rows[p]
        pos = row > 0
        q = np.floor(np.min((capv[pos][None, :] - used[:, pos]) / row[pos][None, :], axis=1) + 1e-12)
        return np.maximum(q, 0).astype(np.int64)

    def expand(counts: np.ndarray, used: np.ndarray, p: int) -> None:
        S = counts.shape[0]
        if p < nc - 1 and S > 1_000_000:  # bound memory: split depth-first
            h = S // 2
            expand(counts[:h], used[:h], p)
            expand(counts[h:], used[h:], p)
            return
        m = room(used, p)
        if p == nc - 1:
            used = used + m[:, None] * rows[p][None, :]
            counts = np.hstack([counts, m[:, None].astype(np.int32)])
            addable = np.any(np.all(used[:, None, :] + rows[None, :, :] <= capv[None, None, :], axis=2), axis=1)
            keep = ~addable & counts.any(axis=1)
            out.append(counts[keep])
            return
        reps = m + 1
        generated[0] += int(reps.sum())
        if max_states is not None and generated[0] > max_states:
            raise TooManyBins(f"more than {max_states} partial bins")
        idx = np.repeat(np.arange(S), reps)
        starts = np.cumsum(reps) - reps
        mm = m[idx] - (np.arange(idx.size) - starts[idx])
        expand(
            np.hstack([counts[idx], mm[:, None].astype(np.int32)]), used[idx] + mm[:, None] * rows[p][None, :], p + 1
        )

    if nc:
        expand(np.zeros((1, 0), dtype=np.int32), np.zeros((1, R)), 0)
    found = np.concatenate(out) if out else np.zeros((0, nc), dtype=np.int32)
    res = np.zeros((found.shape[0], K), dtype=np.int64)
    if nc:
        res[:, cls] = found
    if res.shape[0] == 0 and empty_fallback:
        return np.zeros((1, K), dtype=np.int64)
    return res


def algorithm1_bins(
    cap: Sequence[float],
    classes: Sequence[int],
    r: np.ndarray,
    *,
    reset_next_bin: bool = True,
    tol: float = BIN_TOL,
    max_iter: int = 10_000_000,
) -> np.ndarray:
    """The paper's Algorithm 1 as printed (Sec. 4.2), raw output (dominated bins included).

    ``reset_next_bin=True`` resets ``nextBin`` at the top of each iteration (the printed
    listing never resets it); ``False`` is the literal text.  Where the fill leaves the bin
    empty, ``mostRecentAdd({})`` is undefined (docs/papers/lotes.md#algorithm1): the start class advances; if no class fits an empty machine no
    bin is emitted at all.  Filter with
    :func:`nondominated_filter`.
    """
    r = np.asarray(r, dtype=float)
    K, R = r.shape
    cls = [int(k) for k in classes]
    capa = np.asarray(cap, dtype=float) + tol
    nK = len(cls)
    b: list[int] = []  # positions (0-based) of the classes added, in order
    used = np.zeros(R)
    bins: list[list[int]] = []

    def sufficient(p: int) -> bool:
        return bool(np.all(used + r[cls[p]] <= capa))

    x = 1
    xs = x
    next_bin = False
    it = 0
    while x <= nK:
        it += 1
        if it > max_iter:
            raise RuntimeError("Algorithm 1 did not terminate")
        if reset_next_bin:
            next_bin = False
        for i in range(xs, nK + 1):
            while sufficient(i - 1):
                b.append(i - 1)
                used += r[cls[i - 1]]
                next_bin = True
        if not b:
            # mostRecentAdd({}) is undefined (docs/papers/lotes.md#algorithm1): no class from x* on fits an empty machine;
            # move to the next starting class (if none ever fits, no bin is emitted at all)
            x += 1
            xs = x
            continue
        xs = b[-1] + 1  # mostRecentAdd
        if next_bin:
            bins.append(list(b))
        last = b.pop()
        used -= r[cls[last]]
        if not b:
            used[:] = 0.0
            x += 1
            xs = x
        else:
            xs = xs + 1
    out = np.zeros((len(bins), K), dtype=np.int64)
    for i, bb in enumerate(bins):
        for p in bb:
            out[i, cls[p]] += 1
    return out


def nondominated_filter(
    bins: np.ndarray, cap: Sequence[float], classes: Sequence[int], r: np.ndarray, *, tol: float = BIN_TOL
) -> np.ndarray:
    """Keep the distinct bins of ``bins`` to which no class of ``classes`` can be added (first-seen order)."""
    r = np.asarray(r, dtype=float)
    capa = np.asarray(cap, dtype=float) + tol
    seen: set[tuple[int, ...]] = set()
    keep = []
    for b in np.asarray(bins, dtype=np.int64):
        key = tuple(int(v) for v in b)
        if key in seen:
            continue
        seen.add(key)
        used = b @ r
        if not any(np.all(used + r[k] <= capa) for k in classes):
            keep.append(b)
    return np.array(keep, dtype=np.int64).reshape(-1, r.shape[0])


# ====================================================================================== Stage 2: assignment LP
@dataclass
class Stage2Result:
    """Machine assignment LP optimum (Sec. 4.2)."""

    lam: float  #: lambda*_2 (before rounding)
    x: list[np.ndarray]  #: per configuration, (B_j,) machines emulating each bin
    seconds: float = 0.0
    bins: list[np.ndarray] | None = None  #: the LP's columns per configuration (as given, plus priced ones)


def _assignment_master(
    n: np.ndarray, alpha: np.ndarray, mu: np.ndarray, bins: Sequence[np.ndarray], method: str
) -> Any:
    M, K = len(bins), alpha.shape[0]
    sizes = [int(np.asarray(b).shape[0]) for b in bins]
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    nb = int(offs[-1])
    nv = nb + 1
    # K rows: -sum_j mu_jk sum_i N_ijk x_ij + alpha_k lam <= 0 ;  M rows: sum_i x_ij = n_j
    blocks = [sp.csr_matrix(-(np.asarray(bins[j], dtype=float) * mu[j][None, :]).T) for j in range(M)]
    A_ub = sp.hstack(blocks + [sp.csr_matrix(alpha.reshape(K, 1))], format="csr")
    rows = np.repeat(np.arange(M), sizes)
    A_eq = sp.csr_matrix((np.ones(nb), (rows, np.arange(nb))), shape=(M, nv))
    c = np.zeros(nv)
    c[-1] = -1.0
    res = scipy.optimize.linprog(c, A_ub=A_ub, b_ub=np.zeros(K), A_eq=A_eq, b_eq=n, bounds=(0, None), method=method)
    if res.status != 0:
        raise RuntimeError(f"machine assignment LP failed: {res.message}")
    x = np.maximum(res.x[:-1], 0.0)
    return res, [x[offs[j] : offs[j + 1]] for j in range(M)]


@contextlib.contextmanager
def _quiet_stdout() -> Any:
    """Silence file descriptor 1 (HiGHS' MIP solver can print debug lines on stdout, which would
    corrupt ``--json`` output)."""
    try:
        sys.stdout.flush()
        fd = os.dup(1)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(fd, 1)
        os.close(fd)


def knapsack_bin(
    cap: np.ndarray, classes: Sequence[int], r: np.ndarray, weight: np.ndarray, *, tol: float = BIN_TOL
) -> tuple[np.ndarray, float]:
    """The bin of one machine over ``classes`` with the largest ``sum_k weight_k N_k`` (an integer
    knapsack in ``R`` dimensions, HiGHS MILP), extended greedily to a non-dominated bin.
    Returns ``(N (K,), value)``."""
    r = np.asarray(r, dtype=float)
    K, R = r.shape
    cls = [int(k) for k in classes]
    capa = np.asarray(cap, dtype=float) + tol
    N = np.zeros(K, dtype=np.int64)
    if cls:
        A = r[cls].T
        ub = [float(np.floor(min(capa[l] / A[l, p] for l in range(R) if A[l, p] > 0) + 1e-12)) for p in range(len(cls))]
        with _quiet_stdout():
            res = scipy.optimize.milp(
                -np.asarray(weight, dtype=float)[cls],
                constraints=scipy.optimize.LinearConstraint(A, -np.inf, capa),
                integrality=np.ones(len(cls)),
                bounds=scipy.optimize.Bounds(0, ub),
            )
        if res.status != 0 or res.x is None:
            raise RuntimeError(f"knapsack pricing failed: {res.message}")
        N[cls] = np.round(res.x).astype(np.int64)
        used = N @ r
        while np.any(used > capa):  # rounding of the MILP solution: give back a job
            k = max(cls, key=lambda c: N[c])
            N[k] -= 1
            used = N @ r
        grown = True
        while grown:  # extend to a non-dominated bin (weights are >= 0)
            grown = False
            for k in sorted(cls, key=lambda c: -weight[c]):
                if np.all(used + r[k] <= capa):
                    N[k] += 1
                    used = used + r[k]
                    grown = True
    return N, float(np.asarray(weight, dtype=float) @ N)


def assignment_lp(
    n: Any,
    alpha: Any,
    mu: Any,
    bins: Sequence[np.ndarray],
    *,
    method: str = "highs-ds",
    column_generation: bool | None = None,
    priced: dict[int, tuple[np.ndarray, list[int], np.ndarray]] | None = None,
    max_rounds: int = 2000,
) -> Stage2Result:
    """Stage 2 LP (6)-(10) in reduced form (Sec. 4.2)::

        max lambda  s.t.  sum_j mu_jk sum_i N_ijk x_ij >= lambda alpha_k   (k)
                          sum_i x_ij = n_j                                 (j)
                          x >= 0

    ``bins[j]`` is the ``(B_j, K)`` count matrix of configuration ``j``.

    With many bins (``column_generation=None``: more than 20,000 in total), or when some
    configurations' bins are too many to enumerate (``priced``: ``j -> (cap_j, K_j, r)``), the
    LP is solved by column generation: a restricted master starts from, per configuration,
    the bin with most jobs of each class (for ``priced`` configurations, the given initial
    bins); its duals price the bins -- the enumerated ones by their reduced cost
    ``-sum_k pi_k mu_jk N_ijk - z_j`` (vectorised), the others by an integer knapsack
    (:func:`knapsack_bin`, i.e. the best bin of all non-dominated bins) -- and the most
    negative ones enter, until none is negative.  The optimum is the full LP's lambda*_2
    (over every non-dominated bin of K_j); the vertex may differ (any optimal vertex is
    acceptable, docs/papers/lotes.md#stage1).  For ``priced`` configurations ``Stage2Result.bins`` holds
    the bins generated (the LP's columns).
    """
    n = np.asarray(n, dtype=float).reshape(-1)
    alpha = np.asarray(alpha, dtype=float).reshape(-1)
    M, K = len(bins), alpha.shape[0]
    mu = np.asarray(mu, dtype=float)
    if mu.ndim == 1:
        mu = np.tile(mu, (M, 1))
    bins = [np.asarray(b, dtype=np.int64).reshape(-1, K) for b in bins]
    priced = dict(priced or {})
    t0 = time.perf_counter()
    total = sum(b.shape[0] for b in bins)
    if column_generation is None:
        column_generation = total > 20_000 or bool(priced)
    if priced and not column_generation:
        raise ValueError("configurations without enumerated bins need column generation")
    if not column_generation:
        res, xs = _assignment_master(n, alpha, mu, bins, method)
        return Stage2Result(float(-res.fun), [x.copy() for x in xs], time.perf_counter() - t0, bins)
    active = _first_columns(bins, priced, K)
    weights = {j: bins[j].astype(float) * mu[j][None, :] for j in range(M) if j not in priced}
    for _ in range(max_rounds):
        res, xs = _assignment_master(n, alpha, mu, [bins[j][active[j]] for j in range(M)], method)
        if not _price_bins(res, mu, bins, active, weights, priced):
            break
    else:
        raise RuntimeError("machine assignment LP: column generation did not converge")
    full = []
    for j in range(M):
        x = np.zeros(bins[j].shape[0])
        x[active[j]] = xs[j]
        full.append(x)
    return Stage2Result(float(-res.fun), full, time.perf_counter() - t0, bins)


def _first_columns(bins: list[np.ndarray], priced: dict, K: int) -> list[np.ndarray]:
    """The restricted master's first bins (row indices) per configuration: every given bin of a ``priced``
    one, else the bin with most jobs of each class and the one with most jobs."""
    active = []
    for j, b in enumerate(bins):
        if j in priced:
            active.append(np.arange(b.shape[0], dtype=np.int64))
        else:
            start = {int(np.argmax(b[:, k])) for k in range(K)} | {int(np.argmax(b.sum(axis=1)))}
            active.append(np.array(sorted(start), dtype=np.int64))
    return active


def _price_bins(
    res: Any,
    mu: np.ndarray,
    bins: list[np.ndarray],
    active: list[np.ndarray],
    weights: dict[int, np.ndarray],
    priced: dict[int, tuple[np.ndarray, list[int], np.ndarray]],
) -> bool:
    """One pricing round on the master's duals (``pi`` per class, ``z`` per configuration): the enumerated
    bins with negative reduced cost ``-sum_k pi_k mu_jk N_ijk - z_j`` enter (the 25 most negative), and for
    ``priced`` configurations the best knapsack bin (:func:`knapsack_bin`) when it beats ``-z_j``; ``bins``
    and ``active`` grow in place.  Whether any bin entered."""
    pi = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=float), 0.0)
    z = np.asarray(res.eqlin.marginals, dtype=float)
    added = False
    for j in range(len(bins)):
        tol = 1e-9 * max(1.0, abs(float(z[j])))
        if j in priced:
            cap_j, cls_j, r = priced[j]
            N, value = knapsack_bin(cap_j, cls_j, r, pi * mu[j])
            if value > -z[j] + tol and not np.any(np.all(bins[j] == N[None, :], axis=1)):
                bins[j] = np.vstack([bins[j], N[None, :]])
                active[j] = np.append(active[j], bins[j].shape[0] - 1)
                added = True
            continue
        red = -(weights[j] @ pi) - z[j]
        cand = np.flatnonzero(red < -tol)
        if cand.size:
            cand = cand[~np.isin(cand, active[j])]
        if cand.size:
            best = cand[np.argsort(red[cand], kind="stable")[:25]]
            active[j] = np.union1d(active[j], best)
            added = True
    return added


def round_assignment(x: np.ndarray, n_j: int) -> np.ndarray:
    """Round one configuration's LP ``x`` to integers summing to ``n_j`` (Sec. 4.2; docs/papers/lotes.md#rounding).

    ``q_j = sum_i (x_ij - floor(x_ij))`` machines left by flooring go, one each, to the bins
    with the largest fractional parts (ties by bin index; fractional parts within ``SCORE_RTOL`` of
    the machine count are ties, :func:`clustergym.core.cluster.score_ranks`).
    """
    x = np.asarray(x, dtype=float)
    base = np.floor(x + 1e-9)
    frac = np.maximum(x - base, 0.0)
    q = int(round(n_j - base.sum()))
    if q < 0:  # numerical overshoot: take machines back from the largest counts
        out = base.astype(np.int64)
        for i in np.argsort(-out, kind="stable")[:(-q)]:
            out[i] -= 1
        return out
    order = np.lexsort(
        (np.arange(frac.size), score_ranks(-frac, scale=max(1.0, float(np.max(np.abs(x), initial=0.0)))))
    )
    out = base.astype(np.int64)
    for i in order[:q]:
        out[i] += 1
    return out


# ====================================================================================== full plan
@dataclass
class LotesInputs:
    """Stage 1-2 inputs derived from a scenario (the model of Sec. 2)."""

    cap: np.ndarray  #: (M, R) capacity of one machine of each configuration
    n: np.ndarray  #: (M,) machines per configuration
    conf_of: np.ndarray  #: (L,) configuration of each machine
    alpha: np.ndarray  #: (K,)
    r: np.ndarray  #: (K, R)
    mu: np.ndarray  #: (M, K)

    def key(self) -> tuple:
        def canon(a: np.ndarray) -> bytes:
            a = np.asarray(a, dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                mag = np.where(a != 0, 10.0 ** np.floor(np.log10(np.abs(np.where(a != 0, a, 1.0)))), 1.0)
            return np.ascontiguousarray(np.round(a / mag, 11) * mag).tobytes()

        return tuple(canon(a) for a in (self.cap, self.n, self.conf_of, self.alpha, self.r, self.mu))


@dataclass
class LotesPlan:
    """Everything Stage 3 needs, and the offline figures (the output of Sec. 4.2)."""

    inputs: LotesInputs
    stage1: Stage1Result
    stage2: Stage2Result
    bins: list[np.ndarray]  #: per configuration (B_j, K)
    x_int: list[np.ndarray]  #: per configuration (B_j,) integer machine counts
    lam_round: float  #: lambda after rounding
    machine_bin: np.ndarray  #: (L, K) N_{bin(m), k}
    Delta: np.ndarray  #: (M, K) concurrent class-k slots of configuration j (Delta_jkl / r_kl)
    seconds: dict[str, float] = field(default_factory=dict)
    enumerated: list[bool] = field(default_factory=list)  #: bins of configuration j fully enumerated
    rounding: str = "paper"

    @property
    def lam1(self) -> float:
        return self.stage1.lam

    @property
    def lam2(self) -> float:
        return self.stage2.lam

    @property
    def support_sizes(self) -> list[int]:
        """|K_j| per configuration (Table 1's last column)."""
        return [int(s) for s in self.stage1.support.sum(axis=1)]

    def rho(self, mode: str = "resource") -> np.ndarray:
        """``(M, K)`` roulette weights: ``Delta_jk / sum_j Delta_jk`` (``throughput``: times ``mu_jk``)."""
        D = self.Delta.astype(float)
        if mode == "throughput":
            D = D * self.inputs.mu
        elif mode != "resource":
            raise ValueError(f"rho_mode must be 'resource' or 'throughput', got {mode!r}")
        tot = D.sum(axis=0, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(tot > 0, D / np.where(tot > 0, tot, 1.0), 0.0)

    def summary(self) -> dict[str, Any]:
        return {
            "lambda_stage1": self.lam1,
            "lambda_stage2": self.lam2,
            "lambda_round": self.lam_round,
            "rounding_loss": 1.0 - self.lam_round / self.lam2 if self.lam2 > 0 else 0.0,
            "K_j": self.support_sizes,
            "bins": [int(b.shape[0]) if e else f"priced:{b.shape[0]}" for b, e in zip(self.bins, self.enumerated)],
            "rounding": self.rounding,
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
        }


def swap_rounding(
    x_int: Sequence[np.ndarray],
    bins: Sequence[np.ndarray],
    x: Sequence[np.ndarray],
    alpha: np.ndarray,
    mu: np.ndarray,
    *,
    max_moves: int = 100_000,
) -> list[np.ndarray]:
    """Improve an integer assignment by moving single machines between the bins the LP uses.

    Not in the paper (``rounding="swap"``): at the paper's scale (1000 machines per
    configuration) its rounding loses < 0.05 %, but with a few machines per configuration it
    can leave a class with (almost) no slot.  Starting from the paper's rounding, repeatedly
    apply the best move "one machine of configuration j from bin a to bin b" (a, b in the LP's
    support) that increases the sorted vector of per-class capacity ratios
    ``sum_j mu_jk Delta_jk / alpha_k`` lexicographically (so lambda_round first); stop when none
    does.  The result is never worse than the paper's rounding.
    """
    M = len(bins)
    xi = [np.array(v, dtype=np.int64).copy() for v in x_int]
    pos = alpha > 0
    cols = [np.union1d(np.flatnonzero(np.asarray(x[j]) > 1e-9), np.flatnonzero(xi[j] > 0)) for j in range(M)]
    rate = [bins[j].astype(float) * mu[j][None, :] for j in range(M)]  # (B_j, K) throughput per machine
    served = sum(xi[j] @ rate[j] for j in range(M))

    def key(sv: np.ndarray) -> np.ndarray:
        return np.sort(sv[pos] / alpha[pos])

    cur = key(served)
    for _ in range(max_moves):
        best = None
        for j in range(M):
            c = cols[j]
            if c.size < 2:
                continue
            for a in c[xi[j][c] > 0]:
                for b in c:
                    if a == b:
                        continue
                    cand = key(served + rate[j][b] - rate[j][a])
                    diff = cand - (best[0] if best is not None else cur)
                    nz = np.flatnonzero(np.abs(diff) > 1e-12 * max(1.0, float(cur[-1])))
                    if nz.size and diff[nz[0]] > 0:
                        best = (cand, j, a, b)
        if best is None:
            break
        cur, j, a, b = best
        xi[j][a] -= 1
        xi[j][b] += 1
        served = served + rate[j][b] - rate[j][a]
    return xi


#: partial bins the exhaustive enumeration may generate per configuration before the
#: configuration's bins are priced by a knapsack instead (column generation)
MAX_ENUMERATION = 3_000_000


def solve_lotes(
    inputs: LotesInputs,
    *,
    bins: str = "exhaustive",
    method: str = "highs-ds",
    rounding: str = "paper",
    max_enumeration: int | None = MAX_ENUMERATION,
) -> LotesPlan:
    """Stages 1 and 2 with rounding: the offline part of LoTES.

    ``bins``: ``exhaustive`` (the corrected enumeration) or ``algorithm1`` (the printed algorithm,
    post-filtered).  A configuration whose enumeration would exceed ``max_enumeration`` partial
    bins (possible when a vertex gives one large configuration 6-8 classes of similar sizes)
    gets its columns from knapsack pricing instead (same lambda*_2, see :func:`assignment_lp`);
    ``plan.enumerated[j]`` says which.  ``rounding``: ``paper`` (Sec. 4.2) or ``swap``
    (:func:`swap_rounding` on top of it, not in the paper).
    """
    if rounding not in ("paper", "swap"):
        raise ValueError(f"rounding must be 'paper' or 'swap', got {rounding!r}")
    t0 = time.perf_counter()
    s1 = allocation_lp(inputs.n, inputs.cap, inputs.alpha, inputs.r, inputs.mu, method=method)
    t1 = time.perf_counter()
    M = inputs.cap.shape[0]
    K = inputs.alpha.shape[0]
    B: list[np.ndarray] = []
    priced: dict[int, tuple[np.ndarray, list[int], np.ndarray]] = {}
    for j in range(M):
        cls = [int(k) for k in np.flatnonzero(s1.support[j])]
        if bins == "exhaustive":
            try:
                bj = nondominated_bins(inputs.cap[j], cls, inputs.r, max_states=max_enumeration)
            except TooManyBins:
                priced[j] = (inputs.cap[j], cls, inputs.r)
                bj = np.stack([knapsack_bin(inputs.cap[j], cls, inputs.r, np.eye(K)[k])[0] for k in cls])
        elif bins == "algorithm1":
            raw = algorithm1_bins(inputs.cap[j], cls, inputs.r)
            bj = nondominated_filter(raw, inputs.cap[j], cls, inputs.r)
            if bj.shape[0] == 0:
                bj = np.zeros((1, K), dtype=np.int64)
        else:
            raise ValueError(f"bins must be 'exhaustive' or 'algorithm1', got {bins!r}")
        B.append(bj)
    t2 = time.perf_counter()
    s2 = assignment_lp(inputs.n, inputs.alpha, inputs.mu, B, method=method, priced=priced)
    B = list(s2.bins) if s2.bins is not None else B
    t3 = time.perf_counter()
    x_int = [round_assignment(s2.x[j], int(round(inputs.n[j]))) for j in range(M)]
    if rounding == "swap":
        x_int = swap_rounding(x_int, B, s2.x, inputs.alpha, inputs.mu)
    Delta = np.stack([x_int[j] @ B[j] for j in range(M)]).astype(np.int64)  # (M, K)
    served = (inputs.mu * Delta).sum(axis=0)
    pos = inputs.alpha > 0
    lam_round = float(np.min(served[pos] / inputs.alpha[pos])) if pos.any() else 0.0
    # machine -> bin: consecutive machines of a configuration, bin by bin (the paper leaves it open)
    L = inputs.conf_of.shape[0]
    machine_bin = np.zeros((L, K), dtype=np.int64)
    for j in range(M):
        ms = np.flatnonzero(inputs.conf_of == j)
        rows = np.repeat(np.arange(B[j].shape[0]), x_int[j])
        machine_bin[ms] = B[j][rows[: len(ms)]]
    return LotesPlan(
        inputs,
        s1,
        s2,
        B,
        x_int,
        lam_round,
        machine_bin,
        Delta,
        seconds={"stage1": t1 - t0, "bins": t2 - t1, "stage2": t3 - t2, "total": time.perf_counter() - t0},
        enumerated=[j not in priced for j in range(M)],
        rounding=rounding,
    )


# ====================================================================================== scenario -> inputs
def group_machines(capacity: np.ndarray, speed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group machines into configurations: identical capacity rows (and speed rows).

    Returns ``(conf_cap (M, R), counts (M,), conf_of (L,))`` with configurations numbered in
    order of first appearance (the presets lay machines out in Table-1 order).
    """
    cap = np.asarray(capacity, dtype=float)
    key = cap if speed is None else np.hstack([cap, np.asarray(speed, dtype=float)])
    index: dict[bytes, int] = {}
    conf_of = np.empty(cap.shape[0], dtype=np.int64)
    firsts = []
    for m in range(cap.shape[0]):
        kb = key[m].tobytes()
        j = index.get(kb)
        if j is None:
            j = index[kb] = len(firsts)
            firsts.append(m)
        conf_of[m] = j
    return cap[firsts].copy(), np.bincount(conf_of, minlength=len(firsts)).astype(float), conf_of


def lotes_inputs(scenario: Any) -> LotesInputs:
    """Stage 1-2 inputs of a scenario (the oracle read of LoTES: Stages 1-2 run on the instance's parameters).

    * configurations: identical (capacity, speed) rows of the cluster;
    * ``alpha``: the source's arrival rates normalised, or, when the scenario's ``params`` has a
      ``classes`` table (trace presets, docs/papers/lotes.md#classes), its ``proportion`` column;
    * ``r``: the ``classes`` table's ``mean_<resource>`` columns if present, else ``types.demand``
      (the class profiles of :class:`~clustergym.workloads.PoissonClassSource`);
    * ``mu_jk = speed[j, k] / types.mean_work[k]`` (per unit of the scenario's time).
    """
    types = scenario.source.types
    K = types.num_types
    L = scenario.capacity.shape[0]
    speed = np.ones((L, K)) if scenario.speed is None else np.asarray(scenario.speed, dtype=float)
    cap, n, conf_of = group_machines(scenario.capacity, speed)
    first = np.array([int(np.flatnonzero(conf_of == j)[0]) for j in range(cap.shape[0])])
    classes = (scenario.params or {}).get("classes")
    r = np.asarray(types.demand, dtype=float)
    alpha = None
    if classes:
        recs = list(classes)
        if len(recs) == K and all("proportion" in c for c in recs):
            alpha = np.array([float(c["proportion"]) for c in recs])
        names = [f"mean_{res}" for res in scenario.resources]
        if len(recs) == K and all(all(nm in c for nm in names) for c in recs):
            r = np.array([[float(c[nm]) for nm in names] for c in recs])
    if alpha is None:
        rates = scenario.source.arrival_rates()
        if rates is None:
            raise ConfigError(
                "agent",
                "LoTES needs class probabilities: the scenario's source has no arrival "
                "rates and its params have no 'classes' table",
            )
        rates = np.asarray(rates, dtype=float)
        alpha = rates / rates.sum()
    mean_work = np.asarray(types.mean_work, dtype=float)
    mu = speed[first] / np.where(mean_work > 0, mean_work, 1.0)[None, :]
    return LotesInputs(cap, n, conf_of, alpha, r, mu)


#: (the inputs rounded to 12 significant digits, bins, method, rounding) -> plan; 8: the instances of a sweep
_PLANS: Cache[LotesPlan] = Cache(8)


def cached_plan(
    inputs: LotesInputs, *, bins: str = "exhaustive", method: str = "highs-ds", rounding: str = "paper"
) -> LotesPlan:
    """:func:`solve_lotes`, cached per process on the inputs (rounded to 12 significant digits)."""
    key = (inputs.key(), bins, method, rounding)
    return _PLANS.get(key, lambda: solve_lotes(inputs, bins=bins, method=method, rounding=rounding))


def plan_for(
    scenario: Any, *, bins: str = "exhaustive", method: str = "highs-ds", rounding: str = "paper"
) -> LotesPlan:
    """The (cached) Stage 1-2 plan of a scenario."""
    return cached_plan(lotes_inputs(scenario), bins=bins, method=method, rounding=rounding)
