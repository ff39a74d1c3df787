"""Paper claims checked by ``clustergym reproduce`` (DESIGN §6).

Each claim is a function that measures something and compares it with what
the paper states; it reports ``id, paper, claim, measured, expected, passed``.
Modules register claims with :func:`claim`; the baseline modules of each paper
add theirs (the short seeded versions run in the test suite, the full-length
ones here).
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from clustergym.errors import ClusterGymError

__all__ = ["Claim", "CLAIMS", "claim", "load_claims", "run_claims"]


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    text: str
    check: Callable[[], tuple[Any, Any, bool]]  #: returns (measured, expected, passed)


CLAIMS: dict[str, Claim] = {}
#: the claim modules, one per paper (importing one registers its claims)
_MODULES = tuple(f"clustergym.reproduce.{paper}" for paper in ("rms", "bfjs", "autoscale", "lotes", "mris"))


def claim(id: str, paper: str, text: str) -> Callable[[Callable[[], tuple[Any, Any, bool]]], Callable]:
    """Decorator registering a claim check."""

    def deco(fn: Callable[[], tuple[Any, Any, bool]]) -> Callable:
        CLAIMS[id] = Claim(id, paper, text, fn)
        return fn

    return deco


def load_claims() -> None:
    """Import the modules that register claims."""
    for mod in _MODULES:
        importlib.import_module(mod)


def run_claims(ids: list[str]) -> list[dict[str, Any]]:
    load_claims()
    unknown = [i for i in ids if i not in CLAIMS]
    if unknown:
        raise ClusterGymError(f"unknown claim(s) {unknown}; known: {sorted(CLAIMS)}")
    results = []
    for i in ids:
        c = CLAIMS[i]
        t0 = time.perf_counter()
        measured, expected, passed = c.check()
        results.append({"id": c.id, "paper": c.paper, "claim": c.text, "measured": measured,
                        "expected": expected, "passed": bool(passed),
                        "wall_seconds": round(time.perf_counter() - t0, 3)})
    return results


# ---------------------------------------------------------------- foundation claims (capacity region)
@claim("rms-ec2-boundary", "rms",
       "EC2 setup: V (average of maximal configurations, L=20) lies on the boundary of C (rms.md §4.1)")
def _ec2_boundary() -> tuple[Any, Any, bool]:
    from clustergym.theory.capacity import boundary_point, capacity_scale
    from clustergym.scenarios.presets.rms import EC2_SERVER, EC2_TYPES

    cap = np.tile(EC2_SERVER, (20, 1))
    v = boundary_point(EC2_TYPES, cap)
    t = capacity_scale(v, EC2_TYPES, cap)
    measured = {"V": np.round(v, 4).tolist(), "t_star": round(t, 6)}
    return measured, {"V": [13.3333, 73.3333, 13.3333], "t_star": 1.0}, bool(
        abs(t - 1.0) < 1e-6 and np.allclose(v, [40 / 3, 220 / 3, 40 / 3]))


@claim("rms-fig1b-interior", "rms",
       "Fig. 1b: rho = (20.8, 10.4) lies inside C (rho < (22.22, 11.11) in C) for 10 servers of capacity 10")
def _fig1b_interior() -> tuple[Any, Any, bool]:
    from clustergym.theory.capacity import capacity_scale

    rho = np.array([20.8, 10.4])
    t = capacity_scale(rho, np.array([[2.0], [5.0]]), np.full((10, 1), 10.0))
    boundary = (t * rho).round(2).tolist()
    return ({"t_star": round(t, 6), "boundary_point": boundary},
            {"t_star": "> 1 (1.068376)", "boundary_point": [22.22, 11.11]},
            bool(t > 1 and np.allclose(boundary, [22.22, 11.11], atol=0.01)))
