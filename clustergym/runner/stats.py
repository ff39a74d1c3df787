"""Statistics of comparisons: confidence intervals, paired differences, summary tables.

Every interval in clustergym comes from :func:`mean_ci` (Student t over independent replications).
Rows are episodes (one per agent, seed and swept value); agents on the same seed saw the same jobs
(common random numbers), so their differences are paired and :func:`summarize` reports the paired
difference against a reference agent with its own, usually much tighter, interval.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from clustergym.core.objectives import headline_metric
from clustergym.errors import ConfigError, ScenarioError
from clustergym.scenarios import Scenario

__all__ = [
    "SUMMARY_METRICS",
    "add_lp_bound",
    "check_lp_bound",
    "headline_metric",
    "mean_ci",
    "reward_per_server_table",
    "summarize",
    "t_lower_limit",
]

#: the metrics :func:`summarize` reports by default
SUMMARY_METRICS = ("mean_queue_length", "mean_wait", "p99_wait", "reward_rate", "mean_weighted_completion")


def mean_ci(values: Sequence[float] | np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The mean of the finite values and the half-width of its two-sided Student-t interval.

    Returns ``(nan, nan)`` without finite values and ``(mean, nan)`` with a single one.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan
    mean = float(v.mean())
    if v.size < 2:
        return mean, math.nan
    from scipy import (
        stats,  # here: scipy.stats costs ~1 s of import time, which `run` does not need
    )

    return mean, float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))


def t_lower_limit(values: Sequence[float] | np.ndarray, level: float) -> float:
    """The one-sided Student-t lower confidence limit of the mean at ``level`` (the mean itself
    for a single value or no spread)."""
    a = np.atleast_1d(np.asarray(values, dtype=np.float64))
    mean = float(a.mean())
    if a.size < 2 or a.std(ddof=1) == 0:
        return mean
    from scipy import stats

    return mean - float(stats.t.ppf(level, a.size - 1)) * float(a.std(ddof=1)) / math.sqrt(a.size)


def summarize(results: pd.DataFrame, metrics: Iterable[str] = SUMMARY_METRICS,
              reference: str | None = None, by: str | None = None) -> pd.DataFrame:
    """Mean and 95% CI half-width per agent (and per value of the column ``by``, for sweeps) and
    metric; with ``reference``, also the paired difference (agent - reference on the same seeds)
    and its CI.

    Columns: ``[by,] agent, runs, unstable_runs, <metric>, <metric>_ci95[, <metric>_diff,
    <metric>_diff_ci95]``.
    """
    if reference is not None and reference not in set(results["agent"]):
        raise ConfigError("reference", f"agent {reference!r} is not among the compared agents "
                          f"{list(dict.fromkeys(results['agent']))}")
    out = []
    keys = ["agent"] if by is None else [by, "agent"]
    for key, grp in results.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        agent = key[-1]
        row: dict[str, Any] = dict(zip(keys, key))
        row.update({"runs": len(grp), "unstable_runs": int(grp["unstable"].sum())})
        for m in metrics:
            mean, half = mean_ci(grp[m].to_numpy(dtype=float))
            row[m] = mean
            row[f"{m}_ci95"] = half
            if reference is not None and agent != reference:
                same = results["agent"] == reference
                if by is not None:
                    same &= results[by] == key[0]
                ref = results[same].set_index("seed")[m]
                diff = grp.set_index("seed")[m] - ref
                dmean, dhalf = mean_ci(diff.dropna().to_numpy(dtype=float))
                row[f"{m}_diff"] = dmean
                row[f"{m}_diff_ci95"] = dhalf
        out.append(row)
    return pd.DataFrame(out)


# ======================================================================= loss systems: the LP bound
def add_lp_bound(summary: pd.DataFrame, scenario: Scenario) -> bool:
    """Loss systems with known rates: add reward per server and its ratio to the LP upper bound
    ``U*`` (the auto-scaling paper's optimization (3.2)) to a :func:`summarize` table, in place.

    Returns whether the columns were added (not for traces without rates, heterogeneous servers or
    objectives other than ``reward``).
    """
    from clustergym.theory.autoscale import lp_bound_per_server

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
    return True


def check_lp_bound(reward_rate: float | Sequence[float], scenario: Scenario, *, level: float = 0.999) -> dict[str, Any]:
    """Is a policy shown to exceed the LP upper bound?  (It must not: ``U*`` bounds every policy.)

    ``reward_rate`` holds measured cluster totals, one per replication.  Returns
    ``reward_per_server`` (mean), its one-sided lower confidence limit at ``level``
    (:func:`t_lower_limit`), ``U_star``, ``ratio`` and ``passed``: the lower limit is at most
    ``U* (1 + 1e-9)``.
    """
    from clustergym.theory.autoscale import lp_bound_per_server

    a = np.atleast_1d(np.asarray(reward_rate, dtype=np.float64)) / scenario.num_servers
    ustar = lp_bound_per_server(scenario)
    mean = float(a.mean())
    lower = t_lower_limit(a, level)
    return {"reward_per_server": mean, "lower_confidence": lower, "U_star": ustar, "ratio": mean / ustar,
            "passed": bool(lower <= ustar * (1 + 1e-9))}


def reward_per_server_table(results: pd.DataFrame, scenario: Scenario, *, level: float = 0.95) -> pd.DataFrame:
    """Per agent: ``reward_rate / L`` (mean, CI half-width over seeds), ``U^(g)``, ``U*`` and the
    ratios with their CIs, from the rows of a comparison on ``scenario``."""
    from clustergym.theory.autoscale import greedy_value_per_server, lp_bound_per_server

    L = scenario.num_servers
    ustar, ug = lp_bound_per_server(scenario), float(greedy_value_per_server(scenario))
    rows = []
    for agent, grp in results.groupby("agent", sort=False):
        a = grp["reward_rate"].to_numpy(dtype=float) / L
        mean, half = mean_ci(a, level)
        rows.append({"agent": agent, "runs": int(a.size), "reward_per_server": mean, "ci95": half,
                     "U_g": ug, "U_star": ustar, "ratio_U_star": mean / ustar, "ratio_U_star_ci95": half / ustar,
                     "ratio_U_g": mean / ug, "ratio_U_g_ci95": half / ug,
                     "uses_oracle": bool(grp["uses_oracle"].any()) if "uses_oracle" in grp else False})
    return pd.DataFrame(rows)
