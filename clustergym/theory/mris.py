"""Knapsack subroutines of MRIS: problem P1 of the MRIS paper (Fan & Liang 2024, Sec. 5.1, Sec. 6.1).

P1: given items with profit ``w_j`` (job weight) and size ``v_j`` (job volume), choose
``B`` maximising ``Σ_B w`` subject to ``Σ_B v <= ζ``.  Every function returns the chosen
item indices as a sorted ``int64`` array.

* :func:`knapsack_exact` -- an optimal P1 solution (what the authors' code ran for the
  experiments, with the GLPK_MI solver; docs/papers/mris.md#exact-knapsack).  Methods: ``prefix`` (the exact class-prefix method
  for at most two distinct weights: some optimum takes the cheapest items of each weight
  class), ``dp`` (a DP over total integer weight: minimum volume of each reachable weight),
  ``milp`` (SciPy's HiGHS MILP).  ``auto`` picks ``prefix``, then ``dp`` when the weights are
  integers and the table is small, else ``milp``.  Tie-break (``prefix`` and ``dp``): maximum
  weight, then minimum volume (the paper has no tie rule).
* :func:`knapsack_cadp` -- CONSTRAINT-APPROXIMATE DYNAMIC PROGRAMMING (Sec. 5.1, Lemma 6.1)
  with the scale factor corrected to ``K = ε ζ / n`` (docs/papers/mris.md#cadp):
  weight >= OPT(ζ), volume <= (1 + ε) ζ.
* :func:`knapsack_greedy` -- the greedy of Remark 1 (Sec. 6.1) with capacity ``2 ζ``:
  weight >= OPT(ζ) when every ``v_j <= ζ`` (which holds for MRIS's eligible jobs), volume <= 2 ζ.
* :func:`no_wait_bound` and :func:`score_bound` -- the no-wait lower bound on the weighted flow time
  over a window (docs/papers/mris.md#no-wait-bound), the bound the suite's ``mris-poisson`` reports.

Capacities are compared with a relative tolerance :data:`KNAP_RTOL` (the Lemma 4.1
instance fills the knapsack exactly; docs/papers/mris.md#tolerance).
Orders by a computed quantity (volumes ``v_j = p_j Σ_l d_jl``, ratios ``w_j / v_j``, total weights
and volumes of candidate sets) treat values within ``SCORE_RTOL`` as ties
(:func:`clustergym.core.scores.score_ranks`), so the documented tie rule (then index) decides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clustergym.core.scores import score_ranks
from clustergym.errors import ScenarioError

__all__ = [
    "MRISInstance",
    "KNAP_RTOL",
    "knapsack_exact",
    "knapsack_cadp",
    "knapsack_greedy",
    "knapsack_brute_force",
    "solve_knapsack",
    "select_batch",
    "KNAPSACKS",
    "no_wait_bound",
    "released_jobs",
    "score_bound",
]

#: relative tolerance on the knapsack capacity (the agents' capacity tolerance)
KNAP_RTOL = 1e-9

#: the knapsack options of MRIS
KNAPSACKS = ("exact", "cadp", "greedy")

_DP_MAX_CELLS = 20_000_000


@dataclass(frozen=True)
class MRISInstance:
    """A fixed MRIS instance (the model of Sec. 3): ``n`` jobs on ``machines`` identical unit machines.

    Attributes:
        release, proc, weight: ``(n,)`` r_j, p_j (> 0), w_j (>= 0); sorted by release (stable), so
            the index of a job is its id in the environment.
        demand: ``(n, R)`` demands as fractions of a machine, in [0, 1].
        machines: M.
    """

    release: np.ndarray
    proc: np.ndarray
    weight: np.ndarray
    demand: np.ndarray
    machines: int = 1
    name: str = "mris-instance"
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        r = np.asarray(self.release, dtype=np.float64).ravel()
        p = np.asarray(self.proc, dtype=np.float64).ravel()
        w = np.asarray(self.weight, dtype=np.float64).ravel()
        d = np.asarray(self.demand, dtype=np.float64)
        if d.ndim == 1:
            d = d[:, None]
        n = r.size
        if not (p.size == w.size == d.shape[0] == n) or n == 0:
            raise ScenarioError(
                "instance",
                f"release/proc/weight/demand lengths differ or are 0: {r.size}, {p.size}, {w.size}, {d.shape[0]}",
            )
        if np.any(~np.isfinite(r)) or np.any(r < 0):
            raise ScenarioError("instance.release", "release times must be finite and >= 0")
        if np.any(~np.isfinite(p)) or np.any(p <= 0):
            raise ScenarioError("instance.proc", "processing times must be finite and > 0 (Fan & Liang 2024, Sec. 3)")
        if np.any(~np.isfinite(w)) or np.any(w < 0):
            raise ScenarioError("instance.weight", "weights must be finite and >= 0")
        if np.any(~np.isfinite(d)) or np.any(d < 0) or np.any(d > 1 + 1e-9):
            raise ScenarioError(
                "instance.demand", "demands must lie in [0, 1] (fractions of a machine; Fan & Liang 2024, Sec. 3)"
            )
        if int(self.machines) < 1:
            raise ScenarioError("instance.machines", f"must be >= 1, got {self.machines}")
        order = np.argsort(r, kind="stable")
        for name, a in (("release", r[order]), ("proc", p[order]), ("weight", w[order]), ("demand", d[order])):
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        object.__setattr__(self, "machines", int(self.machines))

    @property
    def n(self) -> int:
        return int(self.release.size)

    @property
    def num_resources(self) -> int:
        return int(self.demand.shape[1])

    @property
    def volume(self) -> np.ndarray:
        """``v_j = p_j Σ_l d_jl``, the job's volume (Sec. 5.1)."""
        return self.proc * self.demand.sum(axis=1)

    def total_weighted_completion(self, completion: np.ndarray) -> float:
        """``Σ w_j C_j``."""
        return float(np.dot(self.weight, completion))


def _inputs(w, v, cap) -> tuple[np.ndarray, np.ndarray, float]:
    w = np.asarray(w, dtype=np.float64).ravel()
    v = np.asarray(v, dtype=np.float64).ravel()
    if w.shape != v.shape:
        raise ValueError(f"weights {w.shape} and volumes {v.shape} differ in length")
    if np.any(~np.isfinite(w)) or np.any(w < 0) or np.any(~np.isfinite(v)) or np.any(v < 0):
        raise ValueError("weights and volumes must be finite and >= 0")
    cap = float(cap)
    if not cap >= 0:
        raise ValueError(f"capacity must be >= 0, got {cap}")
    return w, v, cap


def _limit(cap: float) -> float:
    return cap * (1.0 + KNAP_RTOL)


# ---------------------------------------------------------------------------------------------- exact


def knapsack_exact(w, v, cap, method: str = "auto") -> np.ndarray:
    """An optimal solution of P1 (weight maximal, volume <= cap up to :data:`KNAP_RTOL`)."""
    w, v, cap = _inputs(w, v, cap)
    n = w.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if method == "auto":
        classes = np.unique(w)
        if classes.size <= 2:
            method = "prefix"
        elif np.all(w == np.round(w)) and n * (float(w.sum()) + 1) <= _DP_MAX_CELLS:
            method = "dp"
        else:
            method = "milp"
    if method == "prefix":
        return _exact_prefix(w, v, cap)
    if method == "dp":
        return _exact_weight_dp(w, v, cap)
    if method == "milp":
        return _exact_milp(w, v, cap)
    raise ValueError(f"unknown exact knapsack method {method!r}; expected auto, prefix, dp or milp")


def _exact_prefix(w: np.ndarray, v: np.ndarray, cap: float) -> np.ndarray:
    """Class-prefix method for at most two distinct weights (docs/papers/mris.md#exact-knapsack).

    Exchange argument: within one weight class an optimal set may take the cheapest-volume
    items, so an optimum is (a1 cheapest of class 1, a2 cheapest of class 2); enumerate a1 and
    take the largest feasible a2.  Items of weight 0 are never taken.
    """
    classes = np.unique(w)
    if classes.size > 2:
        raise ValueError("the prefix method needs at most two distinct weights")
    lim = _limit(cap)
    idx = np.arange(w.size)
    parts = []
    for c in classes:
        members = idx[w == c]
        members = members[np.lexsort((members, score_ranks(v[members])))]  # cheapest first, ties by index
        parts.append((float(c), members, np.concatenate([[0.0], np.cumsum(v[members])])))
    if len(parts) == 1:
        c, members, pre = parts[0]
        if c <= 0:
            return np.zeros(0, dtype=np.int64)
        a = int(np.searchsorted(pre, lim, side="right")) - 1
        return np.sort(members[:a])
    (c1, m1, p1), (c2, m2, p2) = parts  # 0 <= c1 < c2
    if c1 <= 0:  # weight-0 items are never worth taking
        a2 = int(np.searchsorted(p2, lim, side="right")) - 1
        return np.sort(m2[:a2]).astype(np.int64)
    a1 = np.arange(m1.size + 1)
    rest = lim - p1
    a1 = a1[rest >= 0]
    a2 = np.searchsorted(p2, rest[rest >= 0], side="right") - 1
    weight = c1 * a1 + c2 * a2
    vol = p1[a1] + p2[a2]
    best = int(
        np.lexsort((score_ranks(vol), score_ranks(-weight)))[0]
    )  # max weight, then min volume, then fewest class-1 items
    a1, a2 = int(a1[best]), int(a2[best])
    return np.sort(np.concatenate([m1[:a1], m2[:a2]])).astype(np.int64)


def _exact_weight_dp(w: np.ndarray, v: np.ndarray, cap: float) -> np.ndarray:
    """DP over total integer weight: ``minvol[W]`` = least volume reaching weight exactly ``W``."""
    if not np.all(w == np.round(w)):
        raise ValueError("the weight DP needs integer weights")
    wi = w.astype(np.int64)
    total = int(wi.sum())
    n = w.size
    if n * (total + 1) > 4 * _DP_MAX_CELLS:
        raise ValueError(f"weight DP table too large ({n} x {total + 1})")
    INF = math.inf
    minvol = np.full(total + 1, INF)
    minvol[0] = 0.0
    took = np.zeros((n, total + 1), dtype=bool)
    for j in range(n):
        wj = wi[j]
        if wj == 0:
            continue
        cand = np.full(total + 1, INF)
        cand[wj:] = minvol[:-wj] + v[j]
        better = cand < minvol
        took[j] = better
        minvol = np.where(better, cand, minvol)
    lim = _limit(cap)
    feasible = np.flatnonzero(minvol <= lim)
    W = int(feasible.max())
    chosen = []
    for j in range(n - 1, -1, -1):
        if W > 0 and took[j, W]:
            chosen.append(j)
            W -= int(wi[j])
    return np.array(sorted(chosen), dtype=np.int64)


def _exact_milp(w: np.ndarray, v: np.ndarray, cap: float) -> np.ndarray:
    """P1 as a 0/1 MILP solved by HiGHS (``scipy.optimize.milp``)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = w.size
    res = milp(
        c=-w,
        constraints=[LinearConstraint(v[None, :], -np.inf, _limit(cap))],
        integrality=np.ones(n),
        bounds=Bounds(np.zeros(n), np.ones(n)),
        options={"mip_rel_gap": 0.0},
    )
    if res.x is None:
        raise RuntimeError(f"HiGHS failed on the knapsack: {res.message}")
    x = np.round(res.x).astype(bool)
    sel = np.flatnonzero(x)
    if v[sel].sum() > _limit(cap) * (1 + 1e-9):  # rounding of a near-integral solution
        raise RuntimeError("HiGHS returned an infeasible knapsack solution")
    return sel.astype(np.int64)


# ---------------------------------------------------------------------------------------------- CADP


def knapsack_cadp(w, v, cap, eps: float = 0.1) -> np.ndarray:
    """CADP (Sec. 5.1, Lemma 6.1) with ``K = ε ζ / n`` (the paper prints ``ζ n / ε``).

    Sizes are scaled down and rounded, ``v̂_j = floor(v_j / K)``, and an exact 0/1 DP over the
    integer capacity ``Ẑ = floor(ζ / K)`` (about ``n / ε``) maximises the weight; ties go to
    the smaller scaled volume.  Guarantees: weight >= OPT(ζ), volume <= ζ + nK = (1 + ε) ζ.
    Cost O(n² / ε) time and memory: for small batches and theory tests.
    """
    w, v, cap = _inputs(w, v, cap)
    if not 0 < eps < 1:
        raise ValueError(f"eps must lie in (0, 1), got {eps}")
    n = w.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if cap == 0:
        return np.flatnonzero((v == 0) & (w > 0)).astype(np.int64)
    K = eps * cap / n
    vhat = np.floor(v / K).astype(np.int64)
    Z = int(math.floor(cap / K * (1 + 1e-12)))  # = floor(n / eps); guard against ζ/K = n/ε - ulp
    if n * (Z + 1) > 4 * _DP_MAX_CELLS:
        raise ValueError(f"CADP table too large ({n} x {Z + 1}); use the exact knapsack")
    best = np.zeros(Z + 1)
    keep = np.zeros((n, Z + 1), dtype=bool)
    for j in range(n):
        s = int(vhat[j])
        if s > Z or w[j] <= 0:
            continue
        cand = np.full(Z + 1, -np.inf)
        cand[s:] = best[: Z + 1 - s] + w[j]
        better = cand > best
        keep[j] = better
        best = np.where(better, cand, best)
    c = int(np.argmax(best))  # the first maximum: least scaled volume
    chosen = []
    for j in range(n - 1, -1, -1):
        if keep[j, c]:
            chosen.append(j)
            c -= int(vhat[j])
    return np.array(sorted(chosen), dtype=np.int64)


# ---------------------------------------------------------------------------------------------- greedy


def knapsack_greedy(w, v, cap) -> np.ndarray:
    """Greedy by ``w/v`` with capacity ``2 ζ`` (Remark 1, Sec. 6.1).

    Items in non-increasing ``w_j / v_j`` (``v_j = 0`` first; ties: smaller ``v``, then index);
    take the longest prefix that fits ``2 ζ``; if an item ``k`` stops it, return ``{k}`` when
    ``w_k`` exceeds the prefix's weight, else the prefix.  (The authors' code's
    ``MRISGreedy`` has indexing bugs, docs/papers/mris.md#greedy-knapsack; this is the paper's algorithm.)
    """
    w, v, cap = _inputs(w, v, cap)
    n = w.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(v > 0, w / np.where(v > 0, v, 1.0), np.inf)
    order = np.lexsort((np.arange(n), score_ranks(v), score_ranks(-ratio)))
    csum = np.cumsum(v[order])
    lim = _limit(2.0 * cap)
    k = int(np.searchsorted(csum, lim, side="right"))  # items order[:k] fit
    if k == n:
        return np.sort(order).astype(np.int64)
    prefix = order[:k]
    jk = int(order[k])
    if w[jk] > w[prefix].sum():
        return np.array([jk], dtype=np.int64)
    return np.sort(prefix).astype(np.int64)


# ---------------------------------------------------------------------------------------------- dispatch, oracle


def solve_knapsack(kind: str, w, v, cap, *, eps: float = 0.1, method: str = "auto") -> np.ndarray:
    """MRIS's step 5 with the option ``kind`` (``exact``, ``cadp`` or ``greedy``)."""
    if kind == "exact":
        return knapsack_exact(w, v, cap, method=method)
    if kind == "cadp":
        return knapsack_cadp(w, v, cap, eps=eps)
    if kind == "greedy":
        return knapsack_greedy(w, v, cap)
    raise ValueError(f"unknown knapsack {kind!r}; expected one of {list(KNAPSACKS)}")


def select_batch(kind: str, w, v, cap, *, eps: float = 0.1, method: str = "auto") -> np.ndarray:
    """MRIS's batch B_k: :func:`solve_knapsack`, then zero-weight items (smallest volume first) while the
    option's volume bound (ζ, (1+ε)ζ or 2ζ) allows.

    A job of weight 0 adds nothing to P1's objective, so an optimal knapsack may leave it out at every
    boundary and it would never be scheduled (the paper assumes w_j > 0; docs/papers/mris.md#weights).  Filling
    the spare volume with such jobs keeps every guarantee (the weight and the volume bound hold) and
    schedules each one once a boundary has room for it (an eligible job has v_j <= ζ_k).
    """
    w = np.asarray(w, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    sel = solve_knapsack(kind, w, v, cap, eps=eps, method=method)
    zero = np.flatnonzero(w <= 0)
    if zero.size == 0:
        return sel
    chosen = np.zeros(w.size, dtype=bool)
    chosen[sel] = True
    room = {"exact": 1.0, "cadp": 1.0 + eps, "greedy": 2.0}[kind] * _limit(float(cap)) - float(v[chosen].sum())
    for j in zero[np.lexsort((zero, score_ranks(v[zero])))]:
        if not chosen[j] and v[j] <= room:
            chosen[j] = True
            room -= v[j]
    return np.flatnonzero(chosen).astype(np.int64)


def knapsack_brute_force(w, v, cap) -> tuple[float, np.ndarray]:
    """``(OPT(ζ), one optimal set)`` by enumerating all ``2^n`` subsets (n <= 20; a test oracle)."""
    w, v, cap = _inputs(w, v, cap)
    n = w.size
    if n > 20:
        raise ValueError("brute force is for n <= 20")
    masks = np.arange(1 << n, dtype=np.int64)
    bits = ((masks[:, None] >> np.arange(n)) & 1).astype(np.float64)
    W = bits @ w
    V = bits @ v
    W = np.where(V <= _limit(cap), W, -1.0)
    m = int(np.argmax(W))
    return float(W[m]), np.flatnonzero(bits[m]).astype(np.int64)


# ---------------------------------------------------------------------------------------------- bound
def no_wait_bound(release, work, weight, t0: float, t1: float, speed: float = 1.0) -> float:
    """A lower bound on ``∫_{t0}^{t1} Σ_j w_j 1[j in the system at t] dt`` for ANY schedule (units:
    weight x time): ``Σ_j w_j |[r_j, r_j + p_j / speed] ∩ [t0, t1]|``.

    Proof: job ``j`` is in the system from its release ``r_j`` until it completes (Sec. 3: jobs are
    known at release and leave at completion), and it cannot complete before ``r_j + p_j / speed``
    (it runs at most at the fastest machine's ``speed``, and at most once at a time), so it is in
    the system throughout ``[r_j, r_j + p_j / speed)``; summing the parts in the window over the
    jobs gives the bound.  It is the weighted flow time of a cluster where no job waits.

    Args:
        release, work, weight: ``(n,)`` release times, processing times (on a speed-1 machine) and
            weights of the jobs.
        t0, t1: the window.
        speed: the fastest machine's speed.
    """
    r = np.asarray(release, dtype=np.float64)
    end = r + np.asarray(work, dtype=np.float64) / float(speed)
    overlap = np.clip(np.minimum(end, t1) - np.maximum(r, t0), 0.0, None)
    return float(np.sum(np.asarray(weight, dtype=np.float64) * overlap))


def released_jobs(scenario: Any, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(release, work, weight)`` of the jobs an episode of ``scenario`` seeded with ``seed`` releases
    before its horizon: the kernel's arrival stream drawn again
    (:meth:`clustergym.core.simulator.Simulator.reset` seeds it with the first of four children of
    ``SeedSequence(seed)``)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(4)[0])
    horizon = float(scenario.horizon)
    if not math.isfinite(horizon):
        raise ScenarioError("horizon", "the released jobs of an episode need a finite horizon")
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for ch in scenario.source.chunks(rng):
        keep = ch.time < horizon
        parts.append((ch.time[keep], ch.work[keep], ch.weight[keep]))
        if not keep.all():
            break
    if not parts:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    return tuple(np.concatenate(x) for x in zip(*parts))  # type: ignore[return-value]


def score_bound(scenario: Any, seeds: Sequence[int] | None = None) -> dict[str, Any]:
    """The no-wait bound on a weighted-flow scenario's score (minus the mean weighted number of jobs in
    the system over the window ``[warmup, horizon]``): ``{"name", "score", "source"}``, and with
    ``seeds`` the bound of each seed's episode as ``"scores"`` (``"score"`` is then their mean).

    Without seeds, ``"score"`` is the bound's expectation over the workload (Poisson arrivals at the
    source's rate, independent processing times and weights): ``rate E[w] ∫ E[min(p, t1 - r)] dr``
    over releases ``r`` in the window, less the part of each job before ``t0``, over ``t1 - t0``
    (:func:`_expected_no_wait`).  Every policy's score is at most the bound, seed by seed.
    """
    t0 = float(getattr(scenario, "warmup", 0.0) or 0.0)
    t1 = float(scenario.horizon)
    speed = 1.0 if scenario.speed is None else float(np.max(scenario.speed))
    out: dict[str, Any] = {
        "name": "no-wait",
        "source": "weighted flow time with no job waiting: Σ w_j min(p_j, T - r_j) / T, seed by seed "
        "(clustergym.theory.mris.no_wait_bound)",
    }
    if seeds is None:
        out["score"] = float(-_expected_no_wait(scenario, t0, t1, speed) / (t1 - t0))
        return out
    scores = [-no_wait_bound(*released_jobs(scenario, s), t0, t1, speed) / (t1 - t0) for s in seeds]
    return {**out, "score": float(np.mean(scores)), "scores": scores}


def _expected_no_wait(scenario: Any, t0: float, t1: float, speed: float) -> float:
    """``E[no_wait_bound]`` for Poisson classes with independent processing times and a weight per class:
    ``Σ_k rate_k w_k ∫_0^{t1} E[|[r, r + p] ∩ [t0, t1]|] dr`` (trapezoid rule over 201 releases), the
    inner expectation over 20,000 seeded draws of the class's processing time law."""
    src = scenario.source
    rates = src.arrival_rates()
    services = getattr(src, "services", None)
    if rates is None or services is None:
        raise ScenarioError("workload", "the expected no-wait bound needs Poisson classes with service laws")
    rng = np.random.default_rng(0)
    r = np.linspace(0.0, t1, 201)
    total = 0.0
    for k, rate in enumerate(np.asarray(rates, dtype=np.float64)):
        if rate > 0:
            p = services[k].sample(rng, 20_000) / speed
            cover = [float(np.mean(np.clip(np.minimum(x + p, t1) - max(x, t0), 0.0, None))) for x in r]
            total += rate * float(src.weights[k]) * float(np.trapezoid(cover, r))
    return total
