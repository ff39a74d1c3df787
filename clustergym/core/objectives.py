"""The objectives: what an episode optimises, as the time integral of a rate the kernel tracks.

One table serves the environment's reward, the compiled whole-episode path and the runner's
headline metric.  The sum of rewards over an episode equals the paper metric times the elapsed
time, so RL returns and paper metrics are the same number:

====================== =============================== ==============================
objective              reward over [t0, t1)            headline metric (time average)
====================== =============================== ==============================
``queue``              -∫ jobs waiting dt              mean queue length (RMS, BF-J/S;
                                                       LoTES mean wait by Little's law)
``system``             -∫ jobs in system dt            mean jobs in system
``weighted-system``    -∫ Σ weights in system dt       mean weighted jobs in system
                                                       (= weighted flow time / horizon, MRIS)
``reward``             +∫ Σ reward rates in service dt reward rate (auto-scaling)
====================== =============================== ==============================
"""

from __future__ import annotations

from typing import NamedTuple

from clustergym.validation import choice

__all__ = ["Objective", "OBJECTIVES", "objective", "objective_metric", "headline_metric"]


class Objective(NamedTuple):
    """One objective.

    Attributes:
        sign: ``-1`` for a cost (queue, jobs in system), ``+1`` for a reward.
        integral: the attribute of :class:`~clustergym.core.metrics.TimeIntegrals` it integrates.
        metric: the ``summary()`` metric that the return measures (its time average: the return is
            ``sign x metric x sim_time``).
        headline: the metric agents are compared on (``clustergym compare``, plots): ``metric``,
            except for ``weighted-system``, whose episodes run until the last job completes, so
            the time average divides by each agent's own makespan; the mean weighted flow time per
            job (``mean_weighted_completion``, ``Σ w_j (C_j - r_j) / N``) has a common denominator.
    """

    sign: float
    integral: str
    metric: str
    headline: str


#: objective name -> (sign, integral attribute, metric of the return, headline metric)
OBJECTIVES: dict[str, Objective] = {
    "queue": Objective(-1.0, "queue", "mean_queue_length", "mean_queue_length"),
    "system": Objective(-1.0, "system", "mean_jobs_in_system", "mean_jobs_in_system"),
    "weighted-system": Objective(-1.0, "weighted_system", "mean_weighted_jobs_in_system", "mean_weighted_completion"),
    "reward": Objective(1.0, "reward", "reward_rate", "reward_rate"),
}


def objective(name: str) -> Objective:
    """The objective called ``name``; a :class:`ScenarioError` (field ``objective``) names the options."""
    return OBJECTIVES[choice(name, "objective", OBJECTIVES)]


def objective_metric(name: str) -> str:
    """Name of the ``summary()`` metric that the objective's return measures."""
    return objective(name).metric


def headline_metric(name: str) -> str:
    """The metric agents are compared on under the objective ``name`` (see :class:`Objective`)."""
    return objective(name).headline
