"""Theory of the auto-scaling paper as pure functions (Sec. 3: LPs (3.1)-(3.2), Definitions 1-7, Algorithm 1).

This module is the one home of the paper's offline objects; the agents in
:mod:`clustergym.baselines.autoscale` and the claims in
:mod:`clustergym.reproduce.autoscale` build on it.  Nothing here touches a
simulator.

* :class:`ConfigSpace` -- the feasible configurations ``K`` of one server, the
  configuration reward ``U(k)``, and ``MaxReward(K^S)`` with the exact
  tie-breaking of Definition 2 (descending lexicographic order of
  ``(U(k), k_1, ..., k_J)``), memoised per type subset.  ``K`` is enumerated
  (additive resources), given directly as a down-closed list of generators
  (the oracle instances: docs/papers/autoscale.md#worst-case), or, for one resource whose sizes divide
  the capacity by powers of two (the Google-trace instance), handled in closed
  form without enumeration.
* :func:`gpa` -- Algorithm 1 (integer GPA) with a clamp at 0
  (``X = max(0, min(ceil(r/k), N))``, exact integer/rational ceilings;
  docs/papers/autoscale.md#gpa-clamp) and the smallest-type-index argmin tie rule.
* :func:`global_greedy` -- the fluid GPA (Definition 5 + Proposition 1) in
  exact rational arithmetic: the greedy value ``U^(g)[rho]`` as a
  :class:`fractions.Fraction`.
* :func:`lp_upper_bound` -- the LP (3.2) ``U*[rho]`` (HiGHS), and
  :func:`lp_upper_bound_total` the per-cluster form (3.1)
  ``F*(L, Yhat) = L * U*[Yhat / L]``; :func:`dual_bound` the certified dual
  bound (LP duality, docs/papers/autoscale.md#lp-bound) for any ``beta`` in ``[0, u]^J``.
* :func:`critical_loads` -- the two critical load factors of Figure 2 (Sec. 7.1).
* Scenario helpers: :func:`instance_of`, :func:`lp_bound_per_server`,
  :func:`greedy_value_per_server`, :func:`type_rewards`, and
  :func:`trace_upper_bound` (the time-varying Upper Bound of Sec. 7.2).
  Measured rewards against these bounds (confidence limits, tables) are in
  :mod:`clustergym.runner.stats`.

Conventions: types are ``0..J-1`` (the paper's ``1..J``); a configuration is a
tuple of ``J`` ints; workloads ``rho`` are per server (``rho_j = lambda_j /
(L mu_j)``); exact quantities are :class:`~fractions.Fraction`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.optimize import linprog

from clustergym._cache import Cache
from clustergym.errors import ScenarioError
from clustergym.theory.configurations import enumerate_configurations

__all__ = [
    "score_bound",
    "erlang_b",
    "finite_bound_per_server",
    "loss_system_mean",
    "max_per_server",
    "ConfigSpace",
    "GPAStep",
    "GreedyStep",
    "GreedyResult",
    "LPResult",
    "as_fraction",
    "gpa",
    "gpa_objective",
    "global_greedy",
    "lp_upper_bound",
    "lp_upper_bound_total",
    "dual_bound",
    "critical_loads",
    "default_g",
    "Instance",
    "instance_of",
    "space_of",
    "lp_bound_per_server",
    "add_lp_bound",
    "greedy_value_per_server",
    "type_rewards",
    "trace_upper_bound",
    "worst_case_family",
]

Config = tuple[int, ...]


def as_fraction(x: Any) -> Fraction:
    """An exact rational for ``x``: ints and Fractions as they are; a float by the closest rational
    with denominator <= 10^7 if it is within 4 ulps of the float (so ``3.1`` means ``31/10`` and
    ``4/3 * L / L`` computed in floating point means ``4/3``), else the float's exact value;
    strings as ``Fraction`` parses them (``"4/3"``)."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    if isinstance(x, str):
        return Fraction(x)
    xf = float(x)
    if not math.isfinite(xf):
        raise ValueError(f"not a finite number: {x!r}")
    exact = Fraction(xf)
    if exact.denominator == 1:
        return exact
    simple = exact.limit_denominator(10**7)
    if abs(float(simple) - xf) <= 4 * math.ulp(xf):
        return simple
    return exact


def default_g(num_servers: int, b: float = 0.5) -> int:
    """The reservation factor ``g(L) = max(1, ceil((ln L)^(1+b)))`` (Sec. 4; docs/papers/autoscale.md#g-factor)."""
    L = int(num_servers)
    return max(1, math.ceil(math.log(L) ** (1.0 + b))) if L > 1 else 1


# =============================================================================== configurations
class ConfigSpace:
    """The configurations ``K`` of one server and ``MaxReward`` (Definitions 1–3).

    Build with :meth:`additive` (resource vectors), :meth:`from_generators` (a
    down-closed set given by its maximal elements), or :meth:`for_scenario`.

    Attributes:
        num_types: ``J``.
        rewards: ``(u_0, ..., u_{J-1})`` as Fractions.
        configs: ``(C, J)`` int64 array of every configuration (row 0 is ``0``), or
            ``None`` in the closed-form (divisible one-resource) mode.
        fitting: the types whose single job fits an empty server.
    """

    def __init__(
        self,
        rewards: Sequence[Any],
        configs: np.ndarray | None,
        *,
        unit_counts: Sequence[int] | None = None,
        feasible: Any = None,
        description: str = "",
    ):
        self.rewards: tuple[Fraction, ...] = tuple(as_fraction(u) for u in rewards)
        if any(u < 0 for u in self.rewards):
            raise ScenarioError("rewards", "reward rates must be >= 0")
        self.num_types = len(self.rewards)
        self.description = description
        self._feasible = feasible
        self._unit_counts = None if unit_counts is None else tuple(int(c) for c in unit_counts)
        self._memo: dict[int, Config] = {}
        self.zero: Config = (0,) * self.num_types
        if configs is not None:
            c = np.asarray(configs, dtype=np.int64)
            if c.ndim != 2 or c.shape[1] != self.num_types:
                raise ScenarioError("configs", f"expected a (C, {self.num_types}) array, got shape {c.shape}")
            self.configs: np.ndarray | None = c
            bits = 1 << np.arange(self.num_types, dtype=np.int64)
            self._supp = ((c > 0).astype(np.int64) * bits).sum(axis=1)
            self._u_float = c.astype(np.float64) @ np.array([float(u) for u in self.rewards])
            singles = c[(c > 0).sum(axis=1) == 1]
            self.fitting = frozenset(int(np.flatnonzero(r)[0]) for r in singles)
        else:
            assert self._unit_counts is not None
            self.configs = None
            self.fitting = frozenset(j for j, n in enumerate(self._unit_counts) if n >= 1)
        self._all_mask = sum(1 << j for j in self.fitting)

    # ---------------------------------------------------------------- construction
    @classmethod
    def additive(cls, type_demand: Any, capacity: Any, rewards: Sequence[Any], *, limit: int = 300_000) -> ConfigSpace:
        """Additive resources: ``k`` is feasible iff ``sum_j k_j R_j <= capacity`` (Sec. 2.2).

        Enumerates ``K`` when it has at most ``limit`` elements.  Otherwise, with one
        resource whose sizes are the capacity divided by powers of two (the Google-trace
        instance, Sec. 7.2), MaxReward and the LP have closed forms and nothing is enumerated.
        """
        demand = np.asarray(type_demand, dtype=np.float64)
        if demand.ndim == 1:
            demand = demand[:, None]
        cap = np.asarray(capacity, dtype=np.float64).reshape(-1)
        if demand.shape[0] != len(rewards):
            raise ScenarioError(
                "rewards", f"expected {demand.shape[0]} reward rates (one per type), got {len(rewards)}"
            )
        counts = _divisible_counts(demand, cap)
        if counts is not None and _too_many(counts, limit):
            sp = cls(rewards, None, unit_counts=counts, description="one resource, sizes capacity/2^p (closed form)")
            sp.type_demand, sp.capacity = demand, cap
            return sp
        configs = enumerate_configurations(demand, cap, limit=limit)
        sp = cls(rewards, configs, description=f"additive, |K| = {len(configs)}")
        sp.type_demand, sp.capacity = demand, cap
        return sp

    @classmethod
    def from_generators(cls, generators: Iterable[Sequence[int]], rewards: Sequence[Any]) -> ConfigSpace:
        """``K`` = the down-closure of the given configurations (monotone feasibility, Sec. 2.2)."""
        gens = [tuple(int(v) for v in g) for g in generators]
        J = len(rewards)
        seen: set[Config] = set()
        for g in gens:
            if len(g) != J or min(g) < 0:
                raise ScenarioError("generators", f"configuration {g} is not a vector of {J} non-negative ints")
            for k in np.ndindex(*(v + 1 for v in g)):
                seen.add(tuple(int(v) for v in k))
        configs = np.array(sorted(seen), dtype=np.int64).reshape(-1, J)
        return cls(rewards, configs, description=f"down-closure of {len(gens)} generators, |K| = {len(configs)}")

    @classmethod
    def for_scenario(cls, scenario: Any, rewards: Sequence[Any] | None = None) -> ConfigSpace:
        """The configuration space of a scenario's (identical) servers."""
        return space_of(scenario, rewards)

    # ---------------------------------------------------------------- queries
    @property
    def size(self) -> int | None:
        """``C = |K|`` (``None`` in closed-form mode)."""
        return None if self.configs is None else int(self.configs.shape[0])

    @property
    def max_jobs(self) -> int:
        """``K``: the largest number of jobs in one configuration."""
        if self.configs is None:
            return max(self._unit_counts or (0,))
        return int(self.configs.sum(axis=1).max())

    def U(self, k: Sequence[int]) -> Fraction:
        """Configuration reward ``U(k) = sum_j u_j k_j`` (Definition 1)."""
        return sum((u * int(c) for u, c in zip(self.rewards, k) if c), Fraction(0))

    def order_key(self, k: Sequence[int]) -> tuple:
        """Definition 2 as a sort key: larger key = higher in the configuration order."""
        return (self.U(k), *(int(c) for c in k))

    def mask(self, types: Iterable[int] | int) -> int:
        if isinstance(types, (int, np.integer)):
            return int(types)
        m = 0
        for j in types:
            m |= 1 << int(j)
        return m

    def max_reward(self, types: Iterable[int] | int) -> Config:
        """``MaxReward(K^S)`` (Definition 3): the Definition-2 maximum of the configurations
        using only types in ``S`` (a set of types or a bit mask).  ``0`` when ``S`` is empty."""
        m = self.mask(types) & self._all_mask
        hit = self._memo.get(m)
        if hit is not None:
            return hit
        if m == 0:
            best = self.zero
        elif self.configs is None:
            best = self._max_reward_divisible(m)
        else:
            sel = np.flatnonzero((self._supp & ~m) == 0)
            uf = self._u_float[sel]
            top = uf.max()
            near = sel[uf >= top - 1e-9 * max(1.0, abs(top))]
            best = max((tuple(int(v) for v in self.configs[i]) for i in near), key=self.order_key)
        self._memo[m] = best
        return best

    def _max_reward_divisible(self, m: int) -> Config:
        # One resource, sizes capacity/2^p: every type set can fill the server exactly, so the
        # maximum U is capacity x the best density, reached only by filling with best-density
        # types; Definition 2 then takes as many as possible of the smallest such index.
        counts = self._unit_counts
        assert counts is not None
        best_j, best_d = -1, Fraction(-1)
        for j in range(self.num_types):
            if m >> j & 1:
                d = self.rewards[j] * counts[j]  # U of the homogeneous full server = density x capacity
                if d > best_d:
                    best_j, best_d = j, d
        k = [0] * self.num_types
        k[best_j] = counts[best_j]
        return tuple(k)

    def is_feasible(self, k: Sequence[int]) -> bool:
        k = tuple(int(v) for v in k)
        if len(k) != self.num_types or min(k) < 0:
            return False
        if self.configs is None:
            return sum(Fraction(c, n) for c, n in zip(k, self._unit_counts or ()) if c) <= 1
        if not hasattr(self, "_set"):
            self._set = {tuple(int(v) for v in r) for r in self.configs}
        return k in self._set

    def greedy_configurations(self) -> list[Config]:
        """``K^(g) = {MaxReward(K^S) : S subset of J}`` in Definition-2 descending order (Def. 6).

        Enumerates the ``2^J`` subsets: ``J <= 20`` only."""
        if self.num_types > 20:
            raise ScenarioError("types", f"K^(g) enumerates 2^J subsets; J = {self.num_types} is too many")
        out = {self.max_reward(m) for m in range(1 << self.num_types)}
        return sorted(out, key=self.order_key, reverse=True)


def _divisible_counts(demand: np.ndarray, cap: np.ndarray) -> list[int] | None:
    """For one resource whose sizes are ``capacity / 2^p``: how many of each type fill a server."""
    if demand.shape[1] != 1 or cap.shape[0] != 1 or cap[0] <= 0:
        return None
    out = []
    for s in demand[:, 0]:
        if s <= 0:
            return None
        n = cap[0] / s
        p = round(math.log2(n)) if n >= 1 else -1
        if p < 0 or abs(n - 2.0**p) > 1e-9 * n:
            return None
        out.append(2**p)
    return out


def _too_many(counts: list[int], limit: int) -> bool:
    # a cheap lower bound on |K|: the product over types of (1 + count) exceeds the limit quickly
    total = 1
    for c in counts:
        total *= 1 + c
        if total > limit:
            return True
    return False


# =============================================================================== GPA
@dataclass(frozen=True)
class GPAStep:
    """One iteration of Algorithm 1: configuration ``k[i]``, its server count ``X̂``, removed type ``j*``."""

    config: Config
    count: int
    removed: int


def gpa(yhat: Sequence[Any], num_servers: int, space: ConfigSpace) -> list[GPAStep]:
    """Algorithm 1 (GPA) with the clamp fix and pinned tie-breaks (docs/papers/autoscale.md#gpa-clamp).

    Args:
        yhat: ``(J,)`` workload reference ``Ŷ`` (jobs; ints or rationals -- never floats
            rounded, the ceilings are exact).
        num_servers: ``L``.
        space: the configuration space.

    Returns:
        The ordered steps ``i = 1..m`` (``m <= J``), entries with ``X̂ = 0`` included
        (DRA's ranks refer to the iteration index).
    """
    r = [y if isinstance(y, (int, Fraction)) else as_fraction(y) for y in yhat]
    N = int(num_servers)
    S = space._all_mask
    out: list[GPAStep] = []
    while S:
        k = space.max_reward(S)
        best_c = None
        jstar = -1
        for j, kj in enumerate(k):
            if kj and S >> j & 1:
                c = -(-r[j] // kj)  # exact ceiling (int or Fraction)
                if best_c is None or c < best_c:
                    best_c, jstar = c, j
        if jstar < 0:  # nothing in S fits (cannot happen: S holds only fitting types)
            break
        X = max(0, min(int(best_c), N))
        if X:
            for j, kj in enumerate(k):
                if kj:
                    r[j] -= X * kj
            N -= X
        out.append(GPAStep(k, X, jstar))
        S &= ~(1 << jstar)
    return out


def gpa_objective(steps: Sequence[GPAStep], yhat: Sequence[Any], rewards: Sequence[Any]) -> Fraction:
    """``F^GPA(L, Ŷ) = sum_j u_j min(Ŷ_j, sum_i X̂_i k_j[i])`` (the value (3.1) gives the GPA assignment)."""
    J = len(rewards)
    slots = [0] * J
    for s in steps:
        for j in range(J):
            slots[j] += s.count * s.config[j]
    return sum((as_fraction(rewards[j]) * min(as_fraction(yhat[j]), slots[j]) for j in range(J)), Fraction(0))


# =============================================================================== global greedy
@dataclass(frozen=True)
class GreedyStep:
    """One step of the global greedy (Prop. 1): ``k^(i)``, ``z^(i)``, the capped share ``x``, the type removed."""

    config: Config
    z: Fraction
    x: Fraction
    removed: int


@dataclass(frozen=True)
class GreedyResult:
    steps: tuple[GreedyStep, ...]
    value: Fraction  #: U^(g)[rho]
    x: dict[Config, Fraction] = field(default_factory=dict)  #: x^(g): share of servers per configuration (> 0 only)
    y: tuple[Fraction, ...] = ()  #: jobs per server served by the assignment

    @property
    def total_z(self) -> Fraction:
        """``sum_i z^(i)``: servers the greedy would need to hold all of ``rho`` (not capped at 1)."""
        return sum((s.z for s in self.steps), Fraction(0))


def global_greedy(rho: Sequence[Any], space: ConfigSpace) -> GreedyResult:
    """The global greedy assignment ``x^(g)[rho]`` and value ``U^(g)[rho]`` exactly (Def. 5, Prop. 1, eq. 3.7).

    The steps follow Prop. 1 on the whole workload: ``z^(i)[rho]`` solves eq. (3.3)
    (``rho_{sigma_j} = sum_{l <= j} k^(l)_{sigma_j} z^(l)``), so the residual workload loses
    ``z^(i) k^(i)`` at every step, also after ``sum z`` has passed 1; the share
    ``x^(g)`` of Def. 5 is ``z^(i)`` capped at the servers left (0 after ``I_rho``).
    Among types exhausted at the same step the smallest index is removed first (Prop. 1's
    tie rule).  ``rho`` is converted with :func:`as_fraction`.
    """
    r = [as_fraction(v) for v in rho]
    if len(r) != space.num_types:
        raise ScenarioError("rho", f"expected {space.num_types} workloads, got {len(r)}")
    N = Fraction(1)
    S = space._all_mask
    steps = []
    while S:
        k = space.max_reward(S)
        cands = [(r[j] / k[j], j) for j in range(space.num_types) if k[j] and S >> j & 1]
        if not cands:
            break
        z, jstar = min(cands)  # ties: the smallest type index
        z = max(z, Fraction(0))
        # eq. (3.3) defines z^(i) on the *uncapped* workload: the residual loses z^(i) k^(i)
        # whatever the cap; only the share x^(g) (Def. 5) is capped at the servers left.
        if z:
            for j in range(space.num_types):
                if k[j]:
                    r[j] -= z * k[j]
        x = min(z, N)
        N -= x
        steps.append(GreedyStep(k, z, x, jstar))
        S &= ~(1 << jstar)
    xg: dict[Config, Fraction] = {}
    for s in steps:
        if s.x:
            xg[s.config] = xg.get(s.config, Fraction(0)) + s.x
    value = sum((x * space.U(k) for k, x in xg.items()), Fraction(0))
    y = tuple(sum((x * k[j] for k, x in xg.items()), Fraction(0)) for j in range(space.num_types))
    return GreedyResult(tuple(steps), value, xg, y)


# =============================================================================== LP bound
@dataclass(frozen=True)
class LPResult:
    value: float  #: U*[rho]
    x: dict[Config, float]  #: an optimal x* (configurations with x > 1e-12)
    y: np.ndarray  #: the optimal y*


def lp_upper_bound(rho: Sequence[Any], space: ConfigSpace) -> LPResult:
    """The LP (3.2): ``U*[rho] = max sum_j u_j y_j`` s.t. ``y <= rho``, ``y <= sum_k x_k k``,
    ``sum_k x_k = 1``, ``x >= 0`` (HiGHS).  In the closed-form mode (one resource, sizes
    capacity/2^p) the LP is a fractional knapsack by density (docs/papers/autoscale.md#upper-bound)."""
    rho_f = np.array([float(v) for v in rho], dtype=np.float64)
    J = space.num_types
    if rho_f.shape != (J,) or np.any(rho_f < 0) or not np.all(np.isfinite(rho_f)):
        raise ScenarioError("rho", f"expected {J} finite workloads >= 0, got {list(rho)}")
    u = np.array([float(v) for v in space.rewards])
    if space.configs is None:
        return _lp_fractional_knapsack(rho_f, space)
    K = space.configs.astype(np.float64)
    C = K.shape[0]
    # variables: x (C), y (J);  minimise -u.y
    c = np.concatenate([np.zeros(C), -u])
    A_ub = np.hstack([-K.T, np.eye(J)])  # y_j - sum_k k_j x_k <= 0
    b_ub = np.zeros(J)
    A_eq = np.concatenate([np.ones(C), np.zeros(J)])[None, :]
    bounds = [(0, None)] * C + [(0, float(r)) for r in rho_f]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0], bounds=bounds, method="highs")
    if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
        raise RuntimeError(f"LP (3.2) failed: {res.message}")
    x = {tuple(int(v) for v in space.configs[i]): float(res.x[i]) for i in np.flatnonzero(res.x[:C] > 1e-12)}
    return LPResult(float(-res.fun), x, res.x[C:].copy())


def _lp_fractional_knapsack(rho: np.ndarray, space: ConfigSpace) -> LPResult:
    counts = space._unit_counts
    assert counts is not None
    # job j uses 1/counts[j] of a server; reward density per unit of server = u_j * counts[j]
    dens = [float(space.rewards[j]) * counts[j] for j in range(space.num_types)]
    order = sorted(range(space.num_types), key=lambda j: (-dens[j], j))
    left = 1.0
    y = np.zeros(space.num_types)
    for j in order:
        if left <= 0:
            break
        take = min(rho[j], left * counts[j])
        y[j] = take
        left -= take / counts[j]
    value = float(sum(float(space.rewards[j]) * y[j] for j in range(space.num_types)))
    return LPResult(value, {}, y)


def lp_upper_bound_total(yhat: Sequence[Any], num_servers: int, space: ConfigSpace) -> float:
    """The LP (3.1): ``F*(L, Ŷ) = L * U*[Ŷ / L]`` (the substitution ``X = L x``, ``Y = L y``)."""
    L = int(num_servers)
    return L * lp_upper_bound([float(v) / L for v in yhat], space).value


def dual_bound(rho: Sequence[Any], space: ConfigSpace, beta: Sequence[Any] | None = None) -> Fraction:
    """A certified upper bound on ``U*[rho]`` for any ``beta`` in ``[0, u]^J`` (LP duality):
    ``sum_j rho_j (u_j - beta_j) + max_k sum_j beta_j k_j`` (exact rationals).

    ``beta = None`` gives ``beta = 0``: ``sum_j u_j rho_j`` (admit everything).
    """
    J = space.num_types
    r = [as_fraction(v) for v in rho]
    b = [Fraction(0)] * J if beta is None else [as_fraction(v) for v in beta]
    for j in range(J):
        if not 0 <= b[j] <= space.rewards[j]:
            raise ScenarioError(f"beta[{j}]", f"must lie in [0, u_j] = [0, {space.rewards[j]}], got {b[j]}")
    head = sum((r[j] * (space.rewards[j] - b[j]) for j in range(J)), Fraction(0))
    if all(v == 0 for v in b):
        return head
    inner = ConfigSpace(b, space.configs, unit_counts=space._unit_counts).max_reward(space._all_mask)
    return head + sum((b[j] * inner[j] for j in range(J)), Fraction(0))


def critical_loads(rho: Sequence[Any], space: ConfigSpace) -> tuple[Fraction, Fraction]:
    """The two critical load factors of Figure 2 (Sec. 7.1) for the workload ``alpha * rho``.

    ``alpha_1``: the largest load at which the global greedy holds the whole workload
    (``sum_i z^(i)[alpha rho] <= 1``, with the uncapped ``z^(i)`` of eq. (3.3); the greedy
    order does not depend on ``alpha`` and the ``z^(i)`` scale with it, so
    ``alpha_1 = 1 / sum_i z^(i)[rho]``).  ``alpha_2``: the smallest load at which the
    maximum-reward configuration ``k^(1)`` can be put on every server with no empty slot
    (``alpha rho_j >= k^(1)_j`` for all ``j``).  Below ``alpha_1`` and above ``alpha_2``,
    ``U^(g) = U*``.
    """
    g = global_greedy(rho, space)
    r = [as_fraction(v) for v in rho]
    a1 = 1 / g.total_z if g.total_z > 0 else Fraction(0)
    k1 = space.max_reward(space._all_mask)
    a2 = max(Fraction(k1[j]) / r[j] for j in range(space.num_types) if k1[j])
    return a1, a2


# =============================================================================== oracle instances
def worst_case_family(n: int, eps: Any = 0) -> tuple[np.ndarray, np.ndarray, tuple[Fraction, ...], list[Config]]:
    """The worst-case family ``W_n`` (docs/papers/autoscale.md#worst-case), as an additive instance.

    ``K = down-closure{n e_1, ..., n e_{n-1}, e_n, (1, ..., 1)}`` plus mixtures of types
    ``< n`` of at most ``n`` jobs (which never beat ``n e_i``), realised with ``n + 1``
    resources: ``P_1..P_{n-1}`` (capacity ``n``; type ``i < n`` uses 1 of ``P_i``, type ``n``
    uses ``n - 1`` of every ``P_i``), a shared resource of capacity ``n`` (every type uses 1)
    and a resource of capacity 1 used only by type ``n``.  Rewards
    ``u_i = (n-1)^(i-1) n^(n-i)`` (``i < n``), ``u_n = n (n-1)^(n-1)``; with ``rho = 1`` the
    greedy value is ``U* (1 - (1 - 1/n)^n)``, ``U* = n^n``.  ``eps`` multiplies ``u_1`` by
    ``1 + eps`` (a strict first greedy choice; ``n = 2, eps = 1/10`` is W2-epsilon scaled by 2).

    Returns:
        ``(type_demand (n, n+1), capacity (n+1,), rewards, generators)``.
    """
    n = int(n)
    if n < 2:
        raise ScenarioError("params.n", f"the family needs n >= 2, got {n}")
    R = n + 1
    demand = np.zeros((n, R))
    for i in range(n - 1):
        demand[i, i] = 1.0
        demand[i, n - 1] = 1.0
    demand[n - 1, : n - 1] = n - 1
    demand[n - 1, n - 1] = 1.0
    demand[n - 1, n] = 1.0
    cap = np.full(R, float(n))
    cap[n] = 1.0
    u = [Fraction((n - 1) ** i * n ** (n - 1 - i)) for i in range(n - 1)] + [Fraction(n * (n - 1) ** (n - 1))]
    u[0] *= 1 + as_fraction(eps)
    gens = [tuple(n if j == i else 0 for j in range(n)) for i in range(n - 1)]
    gens += [tuple(1 if j == n - 1 else 0 for j in range(n)), (1,) * n]
    return demand, cap, tuple(u), gens


# =============================================================================== scenarios
@dataclass(frozen=True)
class Instance:
    """The paper's instance behind a scenario: one server's configurations, ``rho`` per server, ``u``."""

    space: ConfigSpace
    rho: tuple[Fraction, ...]
    rewards: tuple[Fraction, ...]
    num_servers: int


def type_rewards(source: Any) -> np.ndarray:
    """``(J,)`` reward rate ``u_j`` of each job type of an arrival source.

    ``u_j`` is static instance data (the price list, like the type demands), not a
    workload statistic.  Sources with per-type rewards (Poisson) give them directly;
    replayed traces give the reward of each type's jobs (constant per type in the
    auto-scaling trace setup; the mean otherwise).
    """
    rr = getattr(source, "reward_rates", None)
    J = source.types.num_types
    if rr is not None:
        return np.asarray(rr, dtype=np.float64).reshape(J).copy()
    typ = getattr(source, "type", None)
    rew = getattr(source, "reward_rate", None)
    if isinstance(typ, np.ndarray) and isinstance(rew, np.ndarray) and typ.shape == rew.shape:
        tot = np.bincount(typ, weights=rew, minlength=J)[:J]
        cnt = np.bincount(typ, minlength=J)[:J]
        return np.where(cnt > 0, tot / np.maximum(cnt, 1), 0.0)
    if rew is not None and np.ndim(rew) == 0:
        return np.full(J, float(rew))
    raise ScenarioError("workload", "the source does not say the reward rate of its job types")


def _identical_capacity(capacity: np.ndarray) -> np.ndarray:
    cap = np.asarray(capacity, dtype=np.float64)
    if not np.all(cap == cap[0]):
        raise ScenarioError(
            "cluster.capacity", "the auto-scaling model needs identical servers (docs/papers/autoscale.md)"
        )
    return cap[0]


#: (type demands, server capacity, rewards) -> configuration space; 32: the instances of a sweep
_SPACES: Cache[ConfigSpace] = Cache(32)


def space_of(scenario: Any, rewards: Sequence[Any] | None = None) -> ConfigSpace:
    """The (cached) configuration space of a scenario's identical servers and job types."""
    src = scenario.source
    if not src.types.exact:
        raise ScenarioError("workload", "the auto-scaling model needs discrete job types")
    cap = _identical_capacity(scenario.capacity)
    demand = np.asarray(src.types.demand, dtype=np.float64)
    u = type_rewards(src) if rewards is None else np.asarray(rewards, dtype=np.float64)
    key = (demand.tobytes(), demand.shape, cap.tobytes(), tuple(as_fraction(v) for v in u))
    return _SPACES.get(key, lambda: ConfigSpace.additive(demand, cap, list(u)))


def instance_of(scenario: Any) -> Instance:
    """The instance of a Poisson scenario: ``rho_j = lambda_j * E[work_j] / L`` (jobs per server).

    Raises:
        ScenarioError: for sources without arrival rates (traces) or heterogeneous servers.
    """
    rates = scenario.source.arrival_rates()
    if rates is None:
        raise ScenarioError(
            "workload",
            f"scenario {scenario.name!r} has no arrival rates (a trace): "
            "use trace_upper_bound for its time-varying bound",
        )
    L = scenario.num_servers
    mean_work = np.asarray(scenario.source.types.mean_work, dtype=np.float64)
    rho = tuple(as_fraction(float(r) * float(w) / L) for r, w in zip(rates, mean_work))
    sp = space_of(scenario)
    return Instance(sp, rho, sp.rewards, L)


#: (configuration space, rho) -> (space, U*, U^(g)); the space in the value keeps its id from being reused;
#: 256: the loads of several sweeps
_BOUNDS: Cache[tuple[ConfigSpace, float, Fraction]] = Cache(256)


def _bounds(inst: Instance) -> tuple[float, Fraction]:
    hit = _BOUNDS.get(
        (id(inst.space), inst.rho),
        lambda: (inst.space, lp_upper_bound(inst.rho, inst.space).value, global_greedy(inst.rho, inst.space).value),
    )
    return hit[1], hit[2]


def lp_bound_per_server(scenario: Any) -> float:
    """``U*[rho]``: the LP (3.2) bound on the long-run reward rate per server of ANY policy
    on this scenario, at every L and, from an empty start, at every finite horizon (Sec. 3;
    docs/papers/autoscale.md#lp-bound).  Compare it with ``reward_rate / L`` of ``clustergym run``/``compare``."""
    return _bounds(instance_of(scenario))[0]


def greedy_value_per_server(scenario: Any) -> Fraction:
    """``U^(g)[rho]``: the global greedy value per server, the limit of DRA and static GPA (Thm. 4, Cor. 1)."""
    return _bounds(instance_of(scenario))[1]


def add_lp_bound(summary: Any, scenario: Any) -> bool:
    """Loss systems with known rates: add reward per server and its ratio to the LP upper bound
    ``U*`` (the auto-scaling paper's optimization (3.2)) to a summary table, in place.

    ``summary`` is a :func:`clustergym.runner.stats.summarize` table (a pandas DataFrame with the
    columns ``reward_rate`` and ``reward_rate_ci95``, cluster totals per time unit); the columns added are
    ``reward_per_server``, ``reward_per_server_ci95``, ``lp_bound_per_server`` and ``ratio_to_lp_bound``,
    and, when the scenario is Markovian (Poisson arrivals, exponential services), the finite-size bound
    ``U*_L`` over the run's window ``[warmup, horizon]`` as ``finite_bound_per_server`` and
    ``ratio_to_finite_bound`` (:func:`finite_bound_per_server`).

    Returns whether the columns were added (not for traces without rates, heterogeneous servers or
    objectives other than ``reward``).
    """
    if scenario.objective != "reward":
        return False
    try:
        bound = lp_bound_per_server(scenario)
    except ScenarioError:
        return False
    L = scenario.num_servers
    summary["reward_per_server"] = summary["reward_rate"] / L
    summary["reward_per_server_ci95"] = summary["reward_rate_ci95"] / L
    summary["lp_bound_per_server"] = bound
    summary["ratio_to_lp_bound"] = summary["reward_per_server"] / bound
    try:
        window = (float(getattr(scenario, "warmup", 0.0) or 0.0), float(scenario.horizon))
        finite = finite_bound_per_server(scenario, window if math.isfinite(window[1]) else None)
    except ScenarioError:
        return True
    summary["finite_bound_per_server"] = finite
    summary["ratio_to_finite_bound"] = summary["reward_per_server"] / finite
    return True


# =============================================================================== trace upper bound
def trace_upper_bound(scenario: Any, *, t0: float = 0.0, t1: float | None = None) -> float:
    """The time-varying Upper Bound of Sec. 7.2 (total over the cluster, time average over ``[t0, t1]``).

    ``Ŷ(t)`` is the number of jobs of each type that would be present if every arrival were
    admitted (the infinite-server system driven by the same arrivals); the bound is the time
    average of ``F*(L, Ŷ(t)) = L U*[Ŷ(t)/L]``.  Implemented for one resource with sizes
    ``capacity/2^p`` (the Google-trace instance), where ``F*`` is a fractional knapsack by
    reward density: fill the ``L`` servers' capacity by decreasing ``u_j / s_j``.
    """
    src = scenario.source
    cap = _identical_capacity(scenario.capacity)
    demand = np.asarray(src.types.demand, dtype=np.float64)
    unit = _divisible_counts(demand, cap)
    if unit is None:
        raise ScenarioError("workload", "trace_upper_bound needs one resource with sizes capacity/2^p")
    u_all = type_rewards(src)
    rng = np.random.default_rng(0)
    times, types, works = [], [], []
    for ch in src.chunks(rng):
        times.append(ch.time)
        types.append(ch.type)
        works.append(ch.work)
    t = np.concatenate(times) if times else np.zeros(0)
    typ = np.concatenate(types).astype(np.int64) if types else np.zeros(0, np.int64)
    w = np.concatenate(works) if works else np.zeros(0)
    end = t + w
    horizon = float(scenario.horizon)
    t1 = float(min(horizon, end.max() if end.size else 0.0)) if t1 is None else float(t1)
    if t1 <= t0:
        return 0.0
    L = scenario.num_servers
    J = demand.shape[0]
    counts = np.asarray(unit, dtype=np.float64)
    u = np.asarray(u_all, dtype=np.float64)
    dens = u * counts
    order = np.lexsort((np.arange(J), -dens))
    # event sweep of the infinite-server occupancy per type
    ev_t = np.concatenate([t, end])
    ev_d = np.concatenate([np.ones_like(t), -np.ones_like(t)])
    ev_j = np.concatenate([typ, typ])
    srt = np.lexsort((-ev_d, ev_t))  # at equal times, departures (-1) after arrivals? order irrelevant for the integral
    ev_t, ev_d, ev_j = ev_t[srt], ev_d[srt], ev_j[srt]
    occ = np.zeros(J)
    area = 0.0
    prev = t0

    def F(o: np.ndarray) -> float:
        left = float(L)
        val = 0.0
        for j in order:
            if left <= 0:
                break
            take = min(o[j], left * counts[j])
            val += u[j] * take
            left -= take / counts[j]
        return val

    cur = F(occ)
    for tt, dd, jj in zip(ev_t.tolist(), ev_d.tolist(), ev_j.tolist()):
        if tt > prev:
            lo, hi = max(prev, t0), min(tt, t1)
            if hi > lo:
                area += cur * (hi - lo)
            prev = tt
            if prev >= t1:
                break
        occ[jj] += dd
        cur = F(occ)
    if prev < t1:
        area += cur * (t1 - max(prev, t0))
    return area / (t1 - t0)


# =============================================================================== finite-size bound
def erlang_b(servers: int, offered: float) -> float:
    """Erlang's loss probability ``B(c, a)`` of an M/M/c/c queue with ``c`` servers and offered load
    ``a = lambda / mu`` (the stable recursion ``B(0) = 1``, ``B(k) = a B(k-1) / (k + a B(k-1))``)."""
    c = int(servers)
    if c < 0 or not offered >= 0:
        raise ScenarioError("erlang_b", f"need c >= 0 and a >= 0, got c = {servers}, a = {offered}")
    b = 1.0
    for k in range(1, c + 1):
        b = offered * b / (k + offered * b)
    return b


#: the largest M/M/c/c solved exactly from an empty start (a (c+1)-state matrix exponential); larger
#: ``c`` use the pointwise minimum of the infinite-server mean and the stationary mean
_EXACT_TRANSIENT_MAX = 200


def loss_system_mean(servers: int, offered: float, t0: float | None = None, t1: float | None = None) -> float:
    """An upper bound on the time-average mean number in an M/M/c/c loss system over ``[t0, t1]``
    (time in mean service times) from an empty start, under ANY admission policy.

    Greedy admission (admit whenever fewer than ``c`` are in) maximises the count on every sample
    path (a coupling after uniformisation: an arrival or a potential departure keeps
    ``N_greedy >= N_policy``, and removing a job only lowers ``N_policy``), so its mean is a bound;
    from empty it rises towards the stationary mean ``a (1 - B(c, a))``.  ``t1 = None``: the
    stationary mean (a bound at every window).  With ``c <= 200`` the transient is exact (matrix
    exponential of the birth-death generator); otherwise the bound is the time average of
    ``min(a (1 - e^-t), a (1 - B(c, a)))`` (the infinite-server mean, and the stationary one).
    """
    c, a = int(servers), float(offered)
    stationary = a * (1.0 - erlang_b(c, a))
    if t1 is None:
        return stationary
    t0 = 0.0 if t0 is None else float(t0)
    if not 0 <= t0 < t1:
        raise ScenarioError("window", f"need 0 <= t0 < t1, got [{t0}, {t1}]")
    if c <= _EXACT_TRANSIENT_MAX:
        from scipy.linalg import expm

        n = np.arange(c + 1, dtype=np.float64)
        Q = np.diag(np.full(c, a), 1) + np.diag(n[1:], -1)
        Q -= np.diag(Q.sum(axis=1))
        # [[Q, I], [0, 0]] exponentiated holds int_0^t e^{Qs} ds in its upper right block
        big = np.zeros((2 * (c + 1), 2 * (c + 1)))
        big[: c + 1, : c + 1] = Q
        big[: c + 1, c + 1 :] = np.eye(c + 1)

        def area(t: float) -> float:
            return float(expm(big * t)[0, c + 1 :] @ n)

        return (area(t1) - area(t0)) / (t1 - t0)
    share = stationary / a if a > 0 else 0.0
    cross = -math.log(1.0 - share) if share < 1.0 else math.inf  # where 1 - e^-t reaches the stationary share

    def area_min(t: float) -> float:  # int_0^t min(1 - e^-s, share) ds
        s = min(t, cross)
        return s - (1.0 - math.exp(-s)) + share * max(0.0, t - cross)

    return a * (area_min(t1) - area_min(t0)) / (t1 - t0)


def max_per_server(space: ConfigSpace) -> tuple[int, ...]:
    """``(J,)``: the most jobs of each type one server holds (``max_k k_j`` over the configurations)."""
    if space.configs is None:
        return tuple(int(c) for c in space._unit_counts or ())
    return tuple(int(v) for v in space.configs.max(axis=0))


def _check_markovian(scenario: Any) -> None:
    services = getattr(scenario.source, "services", None)
    if scenario.queueing != "loss" or scenario.source.arrival_rates() is None:
        raise ScenarioError("workload", "the finite-size bound needs a loss system with Poisson arrivals")
    if services is None or not all(getattr(s, "name", None) == "exponential" for s in services):
        raise ScenarioError("workload.service", "the finite-size bound needs exponential service times")
    if getattr(scenario, "clairvoyant", False) or getattr(scenario, "speed", None) is not None:
        raise ScenarioError("scenario", "the finite-size bound needs non-clairvoyant agents and unit speeds")


def finite_bound_per_server(scenario: Any, window: tuple[float, float] | None = None) -> float:
    """``U*_L``: an upper bound on the reward rate per server of ANY policy at this finite ``L``,
    never above ``U*`` (docs/papers/autoscale.md#finite-size-bound).

    The LP (3.2) with each type's workload cap ``rho_j`` replaced by the mean number of type-``j``
    jobs an M/M/c_j/c_j loss system holds, per server, with ``c_j = L max_k k_j``: no configuration
    holds more than ``max_k k_j`` jobs of type ``j`` (Definition 1), so the type-``j`` jobs in service
    never exceed ``c_j``, and their time-average mean is at most the greedy loss system's
    (:func:`loss_system_mean`; Poisson arrivals and exponential services of Sec. 2.1).  The
    time-average configuration mix still lies in ``conv(K)`` (the argument of Sec. 3), so the LP
    with the smaller caps still bounds the reward, and its caps are ``rho_j`` at most.

    Args:
        window: ``(t0, t1)`` in the scenario's time unit: the bound on the time average over that
            window from an empty start; ``None``: the stationary bound (valid at every window).
    """
    _check_markovian(scenario)
    inst = instance_of(scenario)
    L = inst.num_servers
    cap = max_per_server(inst.space)
    means = np.asarray(scenario.source.types.mean_work, dtype=np.float64)
    caps = []
    for j, rho in enumerate(inst.rho):
        w = None if window is None else (window[0] / means[j], window[1] / means[j])
        m = loss_system_mean(L * cap[j], float(rho) * L, *(w or (None, None)))
        caps.append(min(float(rho), m / L))
    return lp_upper_bound(caps, inst.space).value


def score_bound(scenario: Any, seeds: Sequence[int] | None = None) -> dict[str, Any]:
    """The bound a suite task of this paper reports as its headroom: ``{"name", "score", "source"}``
    (one number for every seed: ``seeds`` is accepted and not used).

    ``U*_L`` (:func:`finite_bound_per_server`) over the scenario's scored window ``[warmup, horizon]``
    from an empty start, times the servers: a bound on the reward rate of any policy, at most the LP
    bound ``U*`` (optimization (3.2)) times the servers.
    """
    window = (float(getattr(scenario, "warmup", 0.0) or 0.0), float(scenario.horizon))
    per_server = float(finite_bound_per_server(scenario, window))
    return {
        "name": "U*_L",
        "score": per_server * scenario.num_servers,
        "source": "Auto-scaling paper, LP (3.2) with each type's cap the mean of its M/M/c/c loss system at this L "
        "over the window (clustergym.theory.autoscale.finite_bound_per_server); U* = "
        f"{lp_bound_per_server(scenario) * scenario.num_servers:.0f}",
    }
