"""Server configurations and the supportable workload region (pure functions).

Everything here is about *additive* multi-resource packing (RMS paper §II): a
server with capacity vector ``C`` (R,) can hold ``k_j`` jobs of each type ``j``
at once iff ``sum_j k_j * s_j <= C`` componentwise, where ``s_j`` (R,) is the
demand of a type-``j`` job.  A vector ``k`` in ``Z_+^J`` that satisfies this is
a *configuration*; the set of them is ``K`` (``K_l`` for server ``l``).

Conventions used by every function:

* ``type_demand`` is ``(J, R)``: row ``j`` is the demand of one type-``j`` job,
  in the same units as the capacities (a 1-D ``(J,)`` array means ``R = 1``).
* ``capacity`` is one server's ``(R,)`` capacity; ``capacities`` is ``(L, R)``,
  one row per server (a 1-D ``(R,)`` array means one server).  Identical rows
  are grouped, so 1000 identical servers cost as much as one.
* Feasibility uses a relative tolerance of ``1e-9`` (:data:`RTOL`):
  ``sum_j k_j s_j <= C * (1 + 1e-9)``, so that e.g. five jobs of 0.2 fit in 1.0
  despite binary rounding.
* Configurations are ``int64`` arrays ``(C, J)``; workloads ``rho`` are
  ``(J,)`` float64 in jobs (``rho_j = lambda_j / mu_j``, RMS paper §II).
* Every type must fit an empty server (the RMS paper's assumption that "all servers
  can fit any single job type", §II); otherwise :class:`~clustergym.errors.ScenarioError` names the
  offending ``type_demand[j]``.

Contents:

* :func:`enumerate_configurations`, :func:`maximal_configurations` — ``K`` and
  its Pareto-maximal elements (RMS paper §II, §VII-A).
* :func:`max_jobs_per_server` — ``M`` (RMS paper §II), by a small
  integer program, so it also works when ``K`` is far too large to enumerate
  (Google power-of-1/2 sizes: ``M = 512``).
* :func:`capacity_scale`, :func:`interior_margin` — the LP oracles of the
  supportable region ``C`` and its interior ``C^o`` (RMS paper §II, eqs. 2–3).
* :func:`boundary_point` — the paper's ``V`` = sum over servers of the average
  of the maximal configurations (RMS paper §VII-A; docs/papers/rms.md#capacity-region).
* :func:`product_form_law` — the exact per-server stationary law of the
  fixed-weight RMS chain (Definition 2 and Lemma 1, RMS paper §V).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.special import gammaln, logsumexp

from clustergym.errors import ScenarioError

__all__ = [
    "RTOL",
    "enumerate_configurations",
    "maximal_configurations",
    "max_jobs_per_server",
    "capacity_scale",
    "interior_margin",
    "boundary_point",
    "product_form_law",
]

RTOL: float = 1e-9
"""Relative tolerance of the additive feasibility test ``sum_j k_j s_j <= C (1 + RTOL)``."""

_DEFAULT_LP_LIMIT = 200_000
_MAX_COLGEN_ROUNDS = 10_000


class _TooManyConfigurations(ScenarioError):
    """Raised by the enumerator when ``|K|`` exceeds the caller's limit (internal subclass)."""


# --------------------------------------------------------------------------------------------
# validation helpers


def _as_demand(type_demand: ArrayLike) -> NDArray[np.float64]:
    """Validate ``type_demand`` into a ``(J, R)`` float64 array (1-D input means ``R = 1``)."""
    d = np.asarray(type_demand, dtype=np.float64)
    if d.ndim == 1:
        d = d.reshape(-1, 1)
    if d.ndim != 2 or d.shape[0] == 0 or d.shape[1] == 0:
        raise ScenarioError(
            "type_demand", f"expected a (J, R) array with J >= 1 types and R >= 1 resources, got shape {d.shape}"
        )
    for j in range(d.shape[0]):
        if not np.all(np.isfinite(d[j])) or np.any(d[j] < 0):
            raise ScenarioError(f"type_demand[{j}]", f"demands must be finite and >= 0, got {d[j].tolist()}")
        if not np.any(d[j] > 0):
            raise ScenarioError(
                f"type_demand[{j}]", "all demands are zero: infinitely many jobs of this type would fit a server"
            )
    return d


def _as_capacity(capacity: ArrayLike, num_resources: int, field: str = "capacity") -> NDArray[np.float64]:
    """Validate one server's capacity into an ``(R,)`` float64 array."""
    c = np.asarray(capacity, dtype=np.float64)
    if c.ndim == 0:
        c = c.reshape(1)
    if c.ndim != 1 or c.shape[0] != num_resources:
        raise ScenarioError(field, f"expected {num_resources} numbers (one per resource), got shape {c.shape}")
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ScenarioError(field, f"capacities must be finite and >= 0, got {c.tolist()}")
    return c


def _group_capacities(capacities: ArrayLike, num_resources: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Validate ``(L, R)`` capacities and group identical rows: ``(G, R)`` distinct rows and ``(G,)`` counts."""
    c = np.asarray(capacities, dtype=np.float64)
    if c.ndim == 1:
        c = c.reshape(1, -1)
    if c.ndim != 2 or c.shape[0] == 0 or c.shape[1] != num_resources:
        raise ScenarioError(
            "capacities", f"expected an (L, {num_resources}) array with L >= 1 servers, got shape {c.shape}"
        )
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ScenarioError("capacities", "capacities must be finite and >= 0")
    rows, counts = np.unique(c, axis=0, return_counts=True)
    return rows, counts.astype(np.int64)


def _as_workload(rho: ArrayLike, num_types: int) -> NDArray[np.float64]:
    """Validate a workload vector into a ``(J,)`` float64 array of finite non-negative numbers."""
    r = np.asarray(rho, dtype=np.float64)
    if r.ndim == 0:
        r = r.reshape(1)
    if r.ndim != 1 or r.shape[0] != num_types:
        raise ScenarioError("rho", f"expected {num_types} numbers (one per job type), got shape {r.shape}")
    if not np.all(np.isfinite(r)) or np.any(r < 0):
        raise ScenarioError("rho", f"workloads must be finite and >= 0, got {r.tolist()}")
    return r


def _limit_of(capacity: NDArray[np.float64]) -> NDArray[np.float64]:
    """The feasibility bound ``C (1 + RTOL)`` of a capacity vector."""
    return capacity * (1.0 + RTOL)


# --------------------------------------------------------------------------------------------
# counting how many more jobs of one type fit


def _fit_count(
    used: NDArray[np.float64], demand: NDArray[np.float64], lim: NDArray[np.float64], cap_at: int
) -> NDArray[np.int64]:
    """Largest ``m >= 0`` with ``used + m * demand <= lim``, per row.

    Args:
        used: ``(N, R)`` resources already used by each partial configuration.
        demand: ``(R,)`` demand of one job (at least one entry > 0).
        lim: ``(R,)`` feasibility bound ``C (1 + RTOL)``.
        cap_at: values are clipped to this (keeps huge counts representable).

    Returns:
        ``(N,)`` int64 counts, exact for the floating-point test ``used + m*demand <= lim``.
    """
    best = np.full(used.shape[0], cap_at, dtype=np.int64)
    for r in np.flatnonzero(demand > 0):
        d = demand[r]
        slack = lim[r] - used[:, r]
        m = np.floor(np.clip(slack / d, 0.0, float(cap_at)))
        # one-step repairs of the division's rounding, against the exact additive test
        m = np.where(used[:, r] + (m + 1.0) * d <= lim[r], m + 1.0, m)
        m = np.where(used[:, r] + m * d > lim[r], m - 1.0, m)
        best = np.minimum(best, np.clip(m, 0.0, float(cap_at)).astype(np.int64))
    return best


def _single_type_counts(demand: NDArray[np.float64], capacity: NDArray[np.float64]) -> NDArray[np.int64]:
    """``(J,)`` int64: how many type-``j`` jobs fit an empty server alone; raises if one does not fit.

    The ``e_j in K_l`` assumption of the RMS paper (§II) is checked here.
    """
    lim = _limit_of(capacity)
    j_count, r_count = demand.shape
    counts = np.empty(j_count, dtype=np.int64)
    zero = np.zeros((1, r_count))
    for j in range(j_count):
        counts[j] = _fit_count(zero, demand[j], lim, cap_at=2**62)[0]
        if counts[j] == 0:
            over = [int(r) for r in np.flatnonzero(demand[j] > lim)]
            raise ScenarioError(
                f"type_demand[{j}]",
                f"a job of this type (demand {demand[j].tolist()}) does not fit an empty server of capacity "
                f"{capacity.tolist()} (exceeds resource(s) {over}); every type must fit every server (docs/papers/rms.md)",
            )
    return counts


def _is_feasible(k: NDArray[np.int64], demand: NDArray[np.float64], lim: NDArray[np.float64]) -> bool:
    """Whether one configuration ``k`` (J,) satisfies ``k @ demand <= lim``."""
    return bool(np.all(k >= 0) and np.all(k.astype(np.float64) @ demand <= lim))


# --------------------------------------------------------------------------------------------
# configurations


def enumerate_configurations(
    type_demand: ArrayLike, capacity: ArrayLike, *, limit: int = 2_000_000
) -> NDArray[np.int64]:
    """All feasible configurations ``K`` of one server (RMS paper §II, additive case).

    ``k in Z_+^J`` is feasible iff ``sum_j k_j * type_demand[j] <= capacity * (1 + 1e-9)``
    componentwise.  The set is built type by type, each partial configuration being
    expanded by every count of the next type that still fits (vectorised over all
    partial configurations of a level).

    Args:
        type_demand: ``(J, R)`` demand of one job of each type (resource units).
        capacity: ``(R,)`` capacity of the server (same units).
        limit: maximum number of configurations to produce.

    Returns:
        ``(C, J)`` int64 array, rows sorted lexicographically; the first row is all zeros.

    Raises:
        ScenarioError: ``type_demand[j]`` when type ``j`` does not fit an empty server
            (or has an all-zero demand); ``type_demand`` when there are more than
            ``limit`` configurations (too many to enumerate).
    """
    demand = _as_demand(type_demand)
    cap = _as_capacity(capacity, demand.shape[1])
    if not isinstance(limit, (int, np.integer)) or limit < 1:
        raise ScenarioError("limit", f"expected a positive integer, got {limit!r}")
    _single_type_counts(demand, cap)
    lim = _limit_of(cap)
    j_count, r_count = demand.shape

    configs = np.zeros((1, 0), dtype=np.int64)
    used = np.zeros((1, r_count), dtype=np.float64)
    for j in range(j_count):
        reps = _fit_count(used, demand[j], lim, cap_at=int(limit)) + 1
        total = int(reps.sum())
        # every partial configuration extends to >= 1 full one, so |K| >= total
        if total > limit:
            raise _TooManyConfigurations(
                "type_demand",
                f"more than {limit} feasible configurations of a server with capacity {cap.tolist()}: "
                "too many to enumerate (raise `limit`, or use a method that does not enumerate)",
            )
        parent = np.repeat(np.arange(configs.shape[0]), reps)
        starts = np.cumsum(reps) - reps
        count = np.arange(total, dtype=np.int64) - np.repeat(starts, reps)
        configs = np.column_stack([configs[parent], count])
        used = used[parent] + count[:, None].astype(np.float64) * demand[j]
    return configs


def maximal_configurations(configs: ArrayLike, type_demand: ArrayLike, capacity: ArrayLike) -> NDArray[np.int64]:
    """The Pareto-maximal rows of ``configs``: feasible, and no single job of any type can be added.

    For a downward-closed ``K`` this is the same as "no other feasible configuration
    dominates it" (the "maximal configurations" of RMS §VII-A).  Rows that are not feasible themselves are dropped.

    Args:
        configs: ``(C, J)`` non-negative integer configurations (typically
            :func:`enumerate_configurations`' output).
        type_demand: ``(J, R)`` demand of one job of each type.
        capacity: ``(R,)`` capacity of the server.

    Returns:
        ``(C', J)`` int64, the maximal rows in their original order.
    """
    demand = _as_demand(type_demand)
    cap = _as_capacity(capacity, demand.shape[1])
    k = np.asarray(configs)
    if k.ndim != 2 or k.shape[1] != demand.shape[0]:
        raise ScenarioError("configs", f"expected a (C, {demand.shape[0]}) array, got shape {k.shape}")
    if k.size and (not np.all(np.equal(np.mod(k, 1), 0)) or np.any(k < 0)):
        raise ScenarioError("configs", "configurations must be non-negative integers")
    k = k.astype(np.int64)
    lim = _limit_of(cap)
    used = k.astype(np.float64) @ demand
    keep = np.all(used <= lim, axis=1)
    for j in range(demand.shape[0]):
        keep &= ~np.all(used + demand[j] <= lim, axis=1)
    return k[keep]


# --------------------------------------------------------------------------------------------
# M, the maximum number of jobs in a server


def _knapsack_ilp(
    objective: NDArray[np.float64], demand: NDArray[np.float64], capacity: NDArray[np.float64]
) -> tuple[NDArray[np.int64], float] | None:
    """``max objective @ k`` over ``k in Z_+^J`` with ``k @ demand <= C (1 + RTOL)``, by HiGHS (``milp``).

    Returns the rounded maximiser and the solver's optimal value, or ``None`` if the
    solver did not report an optimum.  HiGHS's own feasibility tolerance (~1e-6) is
    looser than ``RTOL``, so callers verify the returned vector.
    """
    upper = _single_type_counts(demand, capacity).astype(np.float64)
    lim = _limit_of(capacity)
    rows = [r for r in range(demand.shape[1]) if np.any(demand[:, r] > 0)]
    a = (demand[:, rows] / lim[rows]).T  # scaled: each row <= 1
    res = milp(
        c=-np.asarray(objective, dtype=np.float64),
        constraints=LinearConstraint(a, -np.inf, np.ones(len(rows))),
        integrality=np.ones(demand.shape[0]),
        bounds=Bounds(np.zeros(demand.shape[0]), upper),
        options={"mip_rel_gap": 0.0},
    )
    if res.status != 0 or res.x is None:
        return None
    return np.rint(res.x).astype(np.int64), float(-res.fun)


def _max_jobs_one(demand: NDArray[np.float64], capacity: NDArray[np.float64]) -> int:
    """``max_{k in K} sum_j k_j`` for one server (see :func:`max_jobs_per_server`)."""
    single = _single_type_counts(demand, capacity)
    # Exact shortcut: if one type is componentwise no larger than every other, swapping
    # any job for it keeps feasibility, so a server full of that type is optimal
    # (always the case for one resource).
    for j in range(demand.shape[0]):
        if np.all(demand[j] <= demand):
            return int(single[j])
    lim = _limit_of(capacity)
    solved = _knapsack_ilp(np.ones(demand.shape[0]), demand, capacity)
    if solved is not None:
        k, value = solved
        if _is_feasible(k, demand, lim) and int(k.sum()) == round(value):
            return int(k.sum())
    # HiGHS's tolerance let a (barely) infeasible vector through: settle it exactly if we can.
    try:
        return int(enumerate_configurations(demand, capacity).sum(axis=1).max())
    except _TooManyConfigurations:
        if solved is None:
            raise
        # An ILP optimum over a slightly relaxed region is an upper bound on M, which the
        # algorithm accepts (RMS §II only needs M to bound the jobs per server).
        return int(round(solved[1]))


def max_jobs_per_server(type_demand: ArrayLike, capacities: ArrayLike) -> int:
    """``M = max_l max_{k in K_l} sum_j k_j``, the most jobs any server can hold (RMS paper §II).

    Does not enumerate ``K``: per distinct server it uses the exact "smallest type
    dominates" argument when one type's demand is componentwise <= every other's (always
    true with one resource; the Google power-of-1/2 sizes give ``M = 512``), and otherwise
    solves the integer program ``max sum_j k_j s.t. sum_j k_j s_j <= C`` with HiGHS
    (``scipy.optimize.milp``), verifying the solution against the ``1e-9`` feasibility test.

    Args:
        type_demand: ``(J, R)`` demand of one job of each type.
        capacities: ``(L, R)`` server capacities (or ``(R,)`` for one server).

    Returns:
        ``M`` as a Python int (EC2 setting: 5; Fig. 1b setting: 5).

    Raises:
        ScenarioError: a type does not fit some server (``type_demand[j]``), or bad shapes.
    """
    demand = _as_demand(type_demand)
    groups, _ = _group_capacities(capacities, demand.shape[1])
    return max(_max_jobs_one(demand, cap) for cap in groups)


# --------------------------------------------------------------------------------------------
# the supportable region C (eq. 2) and its interior C^o (eq. 3)


def _supportable_lp(
    rho: NDArray[np.float64],
    demand: NDArray[np.float64],
    capacities: ArrayLike,
    mode: Literal["scale", "margin"],
    limit: int,
) -> float:
    """Solve the capacity-region LP (RMS paper eqs. 2–3) over ``sum_g n_g * Conv(K_g)``.

    Variables: ``s`` (``t`` in mode "scale", ``delta`` in mode "margin") and one weight
    ``alpha_{g,k} >= 0`` per column ``k`` of server group ``g`` with ``sum_k alpha_{g,k} = 1``.
    The ``n_g`` identical servers of a group share one probability vector: by convexity,
    a sum of ``n_g`` points of ``Conv(K_g)`` is ``n_g`` times one such point.

    Columns are the Pareto-maximal configurations when ``|K_g| <= limit`` (enough, as
    ``K_g`` is downward closed).  Larger groups start from the single-type columns and
    are completed by column generation, the pricing problem being the knapsack
    ``max_k y @ k`` over ``K_g`` (HiGHS ``milp``); the answer is then exact up to HiGHS's
    tolerances (about 1e-7 relative).
    """
    j_count = demand.shape[0]
    groups, counts = _group_capacities(capacities, demand.shape[1])
    columns: list[list[NDArray[np.int64]]] = []
    complete: list[bool] = []
    for cap in groups:
        try:
            configs = enumerate_configurations(demand, cap, limit=limit)
        except _TooManyConfigurations:
            single = _single_type_counts(demand, cap)
            columns.append([single[j] * np.eye(j_count, dtype=np.int64)[j] for j in range(j_count)])
            complete.append(False)
        else:
            columns.append(list(maximal_configurations(configs, demand, cap)))
            complete.append(True)

    for _ in range(_MAX_COLGEN_ROUNDS):
        # assemble: x = [s, alpha_(g0,c0), alpha_(g0,c1), ..., alpha_(g1,c0), ...]
        blocks = [np.asarray(cols, dtype=np.float64).T * n for cols, n in zip(columns, counts)]
        n_cols = sum(b.shape[1] for b in blocks)
        a_ub = np.zeros((j_count, 1 + n_cols))
        a_eq = np.zeros((len(columns), 1 + n_cols))
        col = 1
        for g, b in enumerate(blocks):
            a_ub[:, col : col + b.shape[1]] = -b
            a_eq[g, col : col + b.shape[1]] = 1.0
            col += b.shape[1]
        if mode == "scale":
            a_ub[:, 0] = rho
            b_ub = np.zeros(j_count)
            s_bounds: tuple[float | None, float | None] = (0.0, None)
        else:
            a_ub[:, 0] = 1.0
            b_ub = -rho
            s_bounds = (None, None)
        c = np.zeros(1 + n_cols)
        c[0] = -1.0
        res = linprog(
            c,
            A_ub=a_ub,
            b_ub=b_ub,
            A_eq=a_eq,
            b_eq=np.ones(len(columns)),
            bounds=[s_bounds] + [(0.0, None)] * n_cols,
            method="highs",
        )
        if res.status != 0:
            raise RuntimeError(f"HiGHS failed on the capacity-region LP (Psychas & Ghaderi 2018, §II): {res.message}")
        value = float(-res.fun)
        if all(complete):
            return value
        # pricing: column k of group g improves iff n_g * y @ k > pi_g
        y = np.clip(-np.asarray(res.ineqlin.marginals), 0.0, None)
        pi = -np.asarray(res.eqlin.marginals)
        added = False
        for g, cap in enumerate(groups):
            if complete[g] or not np.any(y > 0):
                continue
            solved = _knapsack_ilp(y, demand, cap)
            if solved is None:
                continue
            k, _ = solved
            lim = _limit_of(cap)
            while not _is_feasible(k, demand, lim):  # repair HiGHS's tolerance, job by job
                over = (k.astype(np.float64) @ demand - lim) / np.where(lim > 0, lim, 1.0)
                r = int(np.argmax(over))
                k[int(np.argmax(np.where(k > 0, demand[:, r], -1.0)))] -= 1
            gain = counts[g] * float(y @ k) - pi[g]
            if gain > 1e-9 * max(1.0, abs(pi[g])) and not any(np.array_equal(k, c0) for c0 in columns[g]):
                columns[g].append(k)
                added = True
        if not added:
            return value
    raise RuntimeError("column generation for the capacity-region LP did not converge")


def capacity_scale(
    rho: ArrayLike, type_demand: ArrayLike, capacities: ArrayLike, *, limit: int = _DEFAULT_LP_LIMIT
) -> float:
    """``t* = max t`` such that ``t * rho`` is in the supportable region ``C`` (RMS paper eq. 2).

    ``t * rho <= sum_l sum_k alpha_{l,k} k`` with ``alpha_{l,.}`` a probability vector over
    server ``l``'s configurations, solved with ``scipy.optimize.linprog(method="highs")``.
    For ``rho > 0``: ``rho in C^o`` iff ``t* > 1``, and the traffic intensity is ``1 / t*``.

    Args:
        rho: ``(J,)`` workload per type, ``rho_j = lambda_j / mu_j`` (jobs), >= 0.
        type_demand: ``(J, R)`` demand of one job of each type.
        capacities: ``(L, R)`` server capacities (identical rows are grouped).
        limit: servers with more configurations than this are handled by column
            generation instead of enumeration.

    Returns:
        ``t*`` (dimensionless); ``math.inf`` when ``rho`` is all zeros.
        Fig. 1b (capacity 10, sizes 2 and 5, L = 10, rho = (20.8, 10.4)): 1.068376.
    """
    demand = _as_demand(type_demand)
    r = _as_workload(rho, demand.shape[0])
    if not np.any(r > 0):
        return math.inf
    return _supportable_lp(r, demand, capacities, "scale", limit)


def interior_margin(
    rho: ArrayLike, type_demand: ArrayLike, capacities: ArrayLike, *, limit: int = _DEFAULT_LP_LIMIT
) -> float:
    """``delta* = max delta`` such that ``rho + delta * 1`` is in ``C`` (RMS paper eq. 3).

    ``rho in C^o`` (supportable, strictly inside) iff ``delta* > 0``; valid also when
    some ``rho_j = 0``.  ``delta*`` is negative outside ``C`` and 0 on its upper boundary.

    Args:
        rho: ``(J,)`` workload per type (jobs), >= 0.
        type_demand: ``(J, R)`` demand of one job of each type.
        capacities: ``(L, R)`` server capacities (identical rows are grouped).
        limit: as in :func:`capacity_scale`.

    Returns:
        ``delta*`` in jobs (same unit as ``rho``).
    """
    demand = _as_demand(type_demand)
    r = _as_workload(rho, demand.shape[0])
    return _supportable_lp(r, demand, capacities, "margin", limit)


def boundary_point(type_demand: ArrayLike, capacities: ArrayLike) -> NDArray[np.float64]:
    """The paper's ``V = sum_l V^l``, ``V^l`` = average of server ``l``'s Pareto-maximal configurations.

    RMS paper §VII-A (arrival rates ``lambda = zeta * V``), "maximal" read as Pareto-maximal
    (docs/papers/rms.md#capacity-region).  ``V`` is on the boundary of ``C`` only in special cases: EC2 gives
    ``V^l = (2/3, 11/3, 2/3)`` and ``capacity_scale(V) = 1``; the Fig. 1b server gives
    ``(7/3, 1)`` with ``capacity_scale = 30/29``.  Callers should check
    :func:`capacity_scale` and warn (or rescale) when it is not 1.

    Args:
        type_demand: ``(J, R)`` demand of one job of each type.
        capacities: ``(L, R)`` server capacities (identical rows are grouped).

    Returns:
        ``(J,)`` float64, in jobs.

    Raises:
        ScenarioError: a server has too many configurations to enumerate (see
            :func:`enumerate_configurations`), or a type does not fit a server.
    """
    demand = _as_demand(type_demand)
    groups, counts = _group_capacities(capacities, demand.shape[1])
    v = np.zeros(demand.shape[0])
    for cap, n in zip(groups, counts):
        maximal = maximal_configurations(enumerate_configurations(demand, cap), demand, cap)
        v += n * maximal.mean(axis=0)
    return v


# --------------------------------------------------------------------------------------------
# Lemma 1: product-form law of the fixed-weight chain


def product_form_law(
    type_demand: ArrayLike,
    capacity: ArrayLike,
    tick_rates: ArrayLike,
    mu: ArrayLike,
    weights: ArrayLike,
    num_servers: int,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Exact per-server stationary law of the fixed-weight RMS chain (RMS paper §V, Lemma 1, eq. 9).

    With weights frozen at ``w``, clock ``j`` ticking at rate ``r_j`` and sampling one of
    ``L`` servers uniformly, and type-``j`` jobs leaving at rate ``mu_j`` and being replaced
    w.p. ``1 - exp(-w_j)``, the servers are independent and each is in configuration ``k``
    with probability ``prod_j a_j^{k_j} / k_j!`` normalised over ``K``, where
    ``a_j = r_j exp(w_j) / (L mu_j)`` (a multi-class Erlang loss system).  Computed in
    log space.

    Args:
        type_demand: ``(J, R)`` demand of one job of each type.
        capacity: ``(R,)`` capacity of the (each) server.
        tick_rates: ``(J,)`` clock rates ``r_j >= 0`` (ticks per time unit, whole cluster).
        mu: ``(J,)`` service rates ``mu_j > 0`` (per time unit).
        weights: ``(J,)`` fixed weights ``w_j`` (dimensionless, finite).
        num_servers: ``L >= 1``.

    Returns:
        ``(configs, probs)``: ``(C, J)`` int64 configurations as in
        :func:`enumerate_configurations`, and ``(C,)`` float64 probabilities summing to 1.
        The joint law of the ``L`` servers is the product of ``L`` copies.
    """
    demand = _as_demand(type_demand)
    j_count = demand.shape[0]

    def vector(x: ArrayLike, field: str) -> NDArray[np.float64]:
        v = np.asarray(x, dtype=np.float64)
        if v.ndim == 0:
            v = v.reshape(1)
        if v.shape != (j_count,) or not np.all(np.isfinite(v)):
            raise ScenarioError(field, f"expected {j_count} finite numbers (one per job type), got {v.tolist()}")
        return v

    r = vector(tick_rates, "tick_rates")
    m = vector(mu, "mu")
    w = vector(weights, "weights")
    if np.any(r < 0):
        raise ScenarioError("tick_rates", f"clock rates must be >= 0, got {r.tolist()}")
    if np.any(m <= 0):
        raise ScenarioError("mu", f"service rates must be > 0, got {m.tolist()}")
    if isinstance(num_servers, bool) or not isinstance(num_servers, (int, np.integer)) or num_servers < 1:
        raise ScenarioError("num_servers", f"expected an integer >= 1, got {num_servers!r}")

    configs = enumerate_configurations(demand, capacity)
    with np.errstate(divide="ignore"):
        log_a = np.log(r) + w - math.log(num_servers) - np.log(m)  # -inf where r_j = 0
    k = configs.astype(np.float64)
    finite = np.isfinite(log_a)
    log_weight = k @ np.where(finite, log_a, 0.0) - gammaln(k + 1.0).sum(axis=1)
    log_weight[np.any(configs[:, ~finite] > 0, axis=1)] = -np.inf  # a_j = 0: no type-j job ever
    probs = np.exp(log_weight - logsumexp(log_weight))
    return configs, probs
