"""Server configurations of additive multi-resource packing (pure functions, shared by the papers' theory).

A server with capacity vector ``C`` (R,) can hold ``k_j`` jobs of each type ``j`` at once iff
``sum_j k_j * s_j <= C`` componentwise, where ``s_j`` (R,) is the demand of a type-``j`` job.  A
vector ``k`` in ``Z_+^J`` that satisfies this is a *configuration*; the set of them is ``K``
(``K_l`` for server ``l``).  The RMS, BF-J/S and auto-scaling mathematics (:mod:`.rms`,
:mod:`.bfjs`, :mod:`.autoscale`) and the MaxWeight Knapsack step all start from this set.

Conventions used by every function:

* ``type_demand`` is ``(J, R)``: row ``j`` is the demand of one type-``j`` job,
  in the same units as the capacities (a 1-D ``(J,)`` array means ``R = 1``).
* ``capacity`` is one server's ``(R,)`` capacity; ``capacities`` is ``(L, R)``,
  one row per server (a 1-D ``(R,)`` array means one server).  Identical rows
  are grouped, so 1000 identical servers cost as much as one.
* Feasibility uses a relative tolerance of ``1e-9`` (:data:`RTOL`):
  ``sum_j k_j s_j <= C * (1 + 1e-9)``, so that e.g. five jobs of 0.2 fit in 1.0
  despite binary rounding.
* Configurations are ``int64`` arrays ``(C, J)``.
* Every type must fit an empty server; otherwise :class:`~clustergym.errors.ScenarioError` names the
  offending ``type_demand[j]``.

Contents: :func:`enumerate_configurations` and :func:`maximal_configurations` (``K`` and its
Pareto-maximal elements), and the validation, fit-count and integer-knapsack helpers the theory
modules share.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import Bounds, LinearConstraint, milp

from clustergym.errors import ScenarioError

__all__ = ["RTOL", "enumerate_configurations", "maximal_configurations"]

RTOL: float = 1e-9
"""Relative tolerance of the additive feasibility test ``sum_j k_j s_j <= C (1 + RTOL)``."""


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
# the integer knapsack over K


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
