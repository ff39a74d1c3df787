"""Reward functions: the integral of a cost (or reward) rate over the time that advances.

The sum of rewards over an episode equals the paper metric times the elapsed
time, so RL returns and paper metrics are the same number (DESIGN §4):

====================== =============================== ==============================
objective              reward over [t0, t1)            paper metric (time average)
====================== =============================== ==============================
``queue``              -∫ jobs waiting dt              mean queue length (RMS, BF-J/S;
                                                       LoTES mean wait by Little's law)
``system``             -∫ jobs in system dt            mean jobs in system
``weighted-system``    -∫ Σ weights in system dt       weighted flow time (MRIS)
``reward``             +∫ Σ reward rates in service dt reward rate (auto-scaling)
====================== =============================== ==============================
"""

from __future__ import annotations

from clustergym.core.metrics import TimeIntegrals
from clustergym.errors import ScenarioError

__all__ = ["OBJECTIVES", "objective_area", "objective_metric"]

#: objective -> (sign, integral attribute, summary metric name)
OBJECTIVES: dict[str, tuple[float, str, str]] = {
    "queue": (-1.0, "queue", "mean_queue_length"),
    "system": (-1.0, "system", "mean_jobs_in_system"),
    "weighted-system": (-1.0, "weighted_system", "mean_weighted_jobs_in_system"),
    "reward": (1.0, "reward", "reward_rate"),
}


def _check(objective: str) -> None:
    if objective not in OBJECTIVES:
        raise ScenarioError("objective", f"unknown objective {objective!r}; expected one of {sorted(OBJECTIVES)}")


def objective_area(objective: str, integrals: TimeIntegrals) -> float:
    """Signed integral of the objective's rate from time 0 (the return so far)."""
    _check(objective)
    sign, attr, _ = OBJECTIVES[objective]
    return sign * getattr(integrals, attr)


def objective_metric(objective: str) -> str:
    """Name of the ``summary()`` metric that the objective's return measures."""
    _check(objective)
    return OBJECTIVES[objective][2]
