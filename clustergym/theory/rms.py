"""The RMS paper's mathematics (Psychas & Ghaderi, IEEE/ACM ToN 2018): ``M``, the capacity region, ``V``,
the product-form law, and the MaxWeight Knapsack step of its MWR/MWS comparisons (pure functions).

Configurations and their conventions (``type_demand`` ``(J, R)``, ``capacities`` ``(L, R)``, the
``1e-9`` feasibility tolerance) are those of :mod:`clustergym.theory.configurations`; workloads
``rho`` are ``(J,)`` float64 in jobs (``rho_j = lambda_j / mu_j``, RMS paper §II).  Every type must
fit an empty server (the paper's assumption that "all servers can fit any single job type", §II).

Contents:

* :func:`max_jobs_per_server` — ``M`` (RMS paper §II), by a small
  integer program, so it also works when ``K`` is far too large to enumerate
  (Google power-of-1/2 sizes: ``M = 512``).
* :func:`capacity_scale`, :func:`interior_margin` — the LP oracles of the
  supportable region ``C`` and its interior ``C^o`` (RMS paper §II, eqs. 2–3).
* :func:`boundary_point` — the paper's ``V`` = sum over servers of the average
  of the maximal configurations (RMS paper §VII-A; docs/papers/rms.md#capacity-region).
* :func:`product_form_law` — the exact per-server stationary law of the
  fixed-weight RMS chain (Definition 2 and Lemma 1, RMS paper §V).
* :class:`Knapsack`, :func:`knapsack_for` — ``argmax_{k in K_l} sum_j Q_j k_j``, the max-weight
  configuration of MWR and MWS (RMS paper §I-A, §VII-A; the agents are
  :mod:`clustergym.baselines.rms.maxweight`): ``exact`` (enumerated, or the divisible shortcut) or
  ``greedy``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linprog
from scipy.special import gammaln, logsumexp

from clustergym._cache import Cache
from clustergym.core.cluster import fit_limit
from clustergym.core.scores import best_mask, score_ranks
from clustergym.errors import ScenarioError
from clustergym.theory.configurations import (
    _as_demand,
    _as_workload,
    _group_capacities,
    _is_feasible,
    _knapsack_ilp,
    _limit_of,
    _single_type_counts,
    _TooManyConfigurations,
    enumerate_configurations,
    maximal_configurations,
)

__all__ = [
    "BLACKBOXES",
    "ENUMERATION_LIMIT",
    "Knapsack",
    "knapsack_for",
    "max_jobs_per_server",
    "capacity_scale",
    "interior_margin",
    "boundary_point",
    "product_form_law",
]

_DEFAULT_LP_LIMIT = 200_000
_MAX_COLGEN_ROUNDS = 10_000
#: the Knapsack blackboxes of MWR/MWS
BLACKBOXES = ("exact", "greedy")
#: most configurations a :class:`Knapsack` enumerates before trying the divisible shortcut
ENUMERATION_LIMIT = 200_000


# --------------------------------------------------------------------------------------------
# M, the maximum number of jobs in a server


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
    groups, counts = _group_capacities(capacities, demand.shape[1])
    columns, complete = _initial_columns(demand, groups, limit)
    for _ in range(_MAX_COLGEN_ROUNDS):
        res = _capacity_master(columns, counts, rho, mode)
        value = float(-res.fun)
        if all(complete) or not _price_columns(res, demand, groups, counts, columns, complete):
            return value
    raise RuntimeError("column generation for the capacity-region LP did not converge")


def _initial_columns(
    demand: NDArray[np.float64], groups: NDArray[np.float64], limit: int
) -> tuple[list[list[NDArray[np.int64]]], list[bool]]:
    """Per server group, the LP's first columns and whether they are all it needs: the Pareto-maximal
    configurations when at most ``limit``, else the single-type ones (completed by pricing)."""
    j_count = demand.shape[0]
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
    return columns, complete


def _capacity_master(
    columns: list[list[NDArray[np.int64]]], counts: NDArray[np.int64], rho: NDArray[np.float64], mode: str
) -> Any:
    """The LP over the current columns (RMS eqs. 2–3): variables ``x = [s, alpha_(g0,c0), alpha_(g0,c1), ...,
    alpha_(g1,c0), ...]``; ``sum_g n_g sum_c alpha_(g,c) c >= s rho`` ("scale") or ``>= rho + s`` ("margin")
    per type, ``sum_c alpha_(g,c) = 1`` per group; maximise ``s``.  HiGHS's result."""
    j_count = rho.shape[0]
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
    return res


def _price_columns(
    res: Any,
    demand: NDArray[np.float64],
    groups: NDArray[np.float64],
    counts: NDArray[np.int64],
    columns: list[list[NDArray[np.int64]]],
    complete: list[bool],
) -> bool:
    """Add to each incomplete group the configuration of the knapsack ``max_k y @ k`` (``y``: the LP's
    type duals) when it improves the LP (``n_g * y @ k > pi_g``); whether any column was added."""
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
    return added


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


# --------------------------------------------------------------------------------------------
# the MaxWeight Knapsack step (MWR, MWS)


class Knapsack:
    """``argmax_{k in K} q . k`` for one server capacity (the Knapsack step of MWR/MWS).

    Args:
        type_demand: ``(J, R)`` demand per type.
        capacity: ``(R,)`` the server's capacity.
        blackbox: ``exact`` or ``greedy`` (see :mod:`clustergym.baselines.rms.maxweight`).
        limit: most configurations to enumerate before using the divisible shortcut.

    Attributes:
        method: ``enumerate``, ``divisible`` or ``greedy``.
        exact: whether :meth:`best` returns a true maximiser.
        configs: ``(C, J)`` the enumerated configurations (``enumerate`` only).
    """

    def __init__(
        self, type_demand: np.ndarray, capacity: np.ndarray, blackbox: str = "exact", limit: int = ENUMERATION_LIMIT
    ):
        self.demand = np.asarray(type_demand, dtype=np.float64)
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.limit_vec = fit_limit(self.capacity)
        cap = np.where(self.capacity > 0, self.capacity, 1.0)
        self.size = (self.demand / cap).sum(axis=1)  # normalised size (greedy density)
        self.configs: np.ndarray | None = None
        if blackbox == "greedy":
            self.method, self.exact = "greedy", False
            return
        try:
            self.configs = enumerate_configurations(self.demand, self.capacity, limit=limit)
            self.method, self.exact = "enumerate", True
            self._njobs = self.configs.sum(axis=1)
            self._configs_f = self.configs.astype(np.float64)
            return
        except ScenarioError as e:
            if "too many" not in str(e):
                raise
        ratio = self._divisible_ratio()
        if ratio is not None:
            self.method, self.exact = "divisible", True
            self._ratio = ratio  # s_j / C (one number per type)
            self._count = np.rint(1.0 / ratio).astype(np.int64)
        else:
            self.method, self.exact = "greedy", False

    def _divisible_ratio(self) -> np.ndarray | None:
        """``a_j = s_j / C`` if every demand is proportional to the capacity and ``1 / a_j`` is integral."""
        pos = self.capacity > 0
        if np.any(self.demand[:, ~pos] > 0):
            return None
        a = self.demand[:, pos] / self.capacity[pos]
        if not np.allclose(a, a[:, :1], rtol=1e-9, atol=0.0) or np.any(a[:, 0] <= 0):
            return None
        inv = 1.0 / a[:, 0]
        if not np.allclose(inv, np.rint(inv), rtol=0.0, atol=1e-9):
            return None
        return a[:, 0]

    def best(self, q: np.ndarray) -> np.ndarray:
        """A configuration maximising ``q . k`` (``(J,)`` int64); zeros if ``q`` is zero."""
        q = np.asarray(q, dtype=np.float64)
        J = self.demand.shape[0]
        if not np.any(q > 0):
            return np.zeros(J, dtype=np.int64)
        if self.method == "enumerate":
            assert self.configs is not None  # enumerated in __init__
            score = self._configs_f @ q
            top = np.flatnonzero(best_mask(score))
            return self.configs[top[int(np.argmax(self._njobs[top]))]].copy()
        if self.method == "divisible":
            density = q / self._ratio
            top = np.flatnonzero(best_mask(density))
            j = int(top[int(np.argmax(self._count[top]))])
            k = np.zeros(J, dtype=np.int64)
            k[j] = self._count[j]
            return k
        return self.greedy(q)

    def greedy(self, q: np.ndarray) -> np.ndarray:
        """Greedy Knapsack: types by decreasing ``q_j / size_j``, each filled as far as it fits."""
        J = self.demand.shape[0]
        k = np.zeros(J, dtype=np.int64)
        used = np.zeros_like(self.capacity)
        pos = np.flatnonzero(q > 0)
        order = pos[np.lexsort((pos, score_ranks(-q[pos] / self.size[pos])))].tolist()
        for j in order:
            d = self.demand[j]
            pos = d > 0
            n = int(np.floor(np.min((self.limit_vec[pos] - used[pos]) / d[pos])))
            while n > 0 and np.any(used + n * d > self.limit_vec):
                n -= 1
            if n > 0:
                k[j] = n
                used = used + n * d
        return k


#: (type demands, one server's capacity, blackbox) -> Knapsack; 16: the server kinds of a few scenarios
_KNAPSACKS: Cache[Knapsack] = Cache(16)


def knapsack_for(type_demand: np.ndarray, capacity: np.ndarray, blackbox: str = "exact") -> Knapsack:
    """A cached :class:`Knapsack` for one server capacity (configurations are enumerated once)."""
    key = (
        np.ascontiguousarray(type_demand, dtype=np.float64).tobytes(),
        np.ascontiguousarray(capacity, dtype=np.float64).tobytes(),
        blackbox,
    )
    return _KNAPSACKS.get(key, lambda: Knapsack(type_demand, capacity, blackbox))
