"""The BF-J/S paper's mathematics (Psychas & Ghaderi, "High-Throughput Bin Packing", ToN 2021, §II, §V).

Pure functions used by the VQS agents (:mod:`clustergym.baselines.bfjs.vqs`) and the paper's claims
(:mod:`clustergym.reproduce.bfjs`); the choices the paper leaves open are in ``docs/papers/bfjs.md``.

* The universal partition (§V-A, eq. (18)): :func:`vq_type`, :func:`interval`, :func:`upper_round`
  -- ``(1/2^J, 1]`` cut into ``2J`` right-closed intervals ``I_2m = ((2/3) 2^-m, 2^-m]``,
  ``I_2m+1 = ((1/2) 2^-m, (2/3) 2^-m]``; sizes ``<= 2^-J`` join ``VQ_{2J-1}``.
* The reduced configuration set K_RED^(J) (§V-B, Definition 6, eq. (19)): :func:`k_red`,
  :func:`k_red_matrix`, and the max-weight choice of eq. (20), :func:`best_config`.
* The default number of levels (docs/papers/bfjs.md#choice-of-j): :func:`auto_J`.
* The LP oracles (eq. (4), Lemma 3): :func:`partition_probs`, :func:`kred_capacity` (the region
  of Theorem 3's proof) and :func:`optimal_capacity` (``rho*`` over every feasible configuration).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.optimize import linprog

from clustergym.theory.configurations import enumerate_configurations, maximal_configurations

__all__ = [
    "Config",
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
    demand = np.asarray(sizes, dtype=float)[:, None]
    K = maximal_configurations(enumerate_configurations(demand, np.ones(1)), demand, np.ones(1))
    return _max_rho(np.asarray(probs, dtype=float), np.asarray(K, dtype=float), L)
