"""Statistics of comparisons: confidence intervals, paired differences, summary tables.

Every interval in clustergym comes from :func:`mean_ci` (Student t over independent replications).
Rows are episodes (one per agent, seed and swept value); agents on the same seed saw the same jobs
(common random numbers), so their differences are paired and :func:`summarize` reports the paired
difference against a reference agent with its own, usually much tighter, interval, its p-value and
the p-value adjusted for comparing many agents with one reference (Holm's step-down method by
default, or Benjamini-Hochberg; :func:`adjust_p_values`).

A metric's interval is the Student-t interval intersected with the values the metric can take
(:func:`bounded_ci`: a queue length is never negative).  The true mean lies in that range, so the
intersection is still a 95% confidence set; it only stops figures from drawing impossible values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from clustergym.core.objectives import headline_metric
from clustergym.errors import ConfigError
from clustergym.validation import settings

if TYPE_CHECKING:  # imported where a frame is built: `clustergym run` does not need pandas
    import pandas as pd

__all__ = [
    "P_ADJUST_METHODS",
    "SUMMARY_METRICS",
    "adjust_p_values",
    "bounded_ci",
    "headline_metric",
    "mean_ci",
    "summarize",
    "summary_long",
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
    from scipy import stats  # here: scipy.stats costs ~1 s of import time, which `run` does not need

    return mean, float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))


def bounded_ci(
    values: Sequence[float] | np.ndarray, lower: float = -math.inf, upper: float = math.inf, level: float = 0.95
) -> tuple[float, float, float]:
    """``(mean, low, high)``: :func:`mean_ci`'s interval intersected with ``[lower, upper]``, the
    values the metric can take (``(mean, nan, nan)`` when the interval is undefined)."""
    mean, half = mean_ci(values, level)
    if not math.isfinite(half):
        return mean, math.nan, math.nan
    return mean, max(mean - half, lower), min(mean + half, upper)


#: multiple-comparison corrections :func:`adjust_p_values` knows, by the name tables print
P_ADJUST_METHODS = {
    "holm": "Holm step-down (family-wise error rate)",
    "bh": "Benjamini-Hochberg (false discovery rate)",
    "none": "no correction",
}


def adjust_p_values(p_values: Sequence[float] | np.ndarray, method: str = "holm") -> np.ndarray:
    """P-values adjusted for testing several hypotheses at once (NaN entries are left out of the family
    and stay NaN).

    ``holm``: Holm's step-down method, which controls the family-wise error rate (the chance of any
    false "different"); ``bh``: Benjamini-Hochberg (SciPy's ``false_discovery_control``), which
    controls the false discovery rate; ``none``: unchanged.
    """
    settings.choice(method, "p_adjust", P_ADJUST_METHODS)
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full_like(p, math.nan)
    ok = np.isfinite(p)
    q = p[ok]
    if q.size == 0 or method == "none":
        out[ok] = q
        return out
    if method == "bh":
        from scipy import stats  # here, not at import (mean_ci)

        out[ok] = stats.false_discovery_control(q, method="bh")
        return out
    order = np.argsort(q, kind="stable")
    m = q.size
    stepped = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * q[order]))
    adj = np.empty(m)
    adj[order] = stepped
    out[ok] = adj
    return out


def _paired_p(diff: np.ndarray) -> float:
    """Two-sided p-value of the paired t-test (the differences' mean is 0); NaN below two pairs,
    1 when every difference is 0, 0 when they are equal and non-zero."""
    d = diff[np.isfinite(diff)]
    if d.size < 2:
        return math.nan
    if np.all(d == d[0]):
        return 1.0 if d[0] == 0 else 0.0
    from scipy import stats  # here, not at import (mean_ci)

    return float(stats.ttest_1samp(d, 0.0).pvalue)


def t_lower_limit(values: Sequence[float] | np.ndarray, level: float) -> float:
    """The one-sided Student-t lower confidence limit of the mean at ``level`` (the mean itself
    for a single value or no spread)."""
    a = np.atleast_1d(np.asarray(values, dtype=np.float64))
    mean = float(a.mean())
    if a.size < 2 or a.std(ddof=1) == 0:
        return mean
    from scipy import stats

    return mean - float(stats.t.ppf(level, a.size - 1)) * float(a.std(ddof=1)) / math.sqrt(a.size)


def summarize(
    results: pd.DataFrame,
    metrics: Iterable[str] = SUMMARY_METRICS,
    reference: str | None = None,
    by: str | None = None,
    p_adjust: str = "holm",
) -> pd.DataFrame:
    """Mean and 95% CI per agent (and per value of the column ``by``, for sweeps) and metric; with
    ``reference``, also the paired difference (agent - reference on the same seeds), its CI and
    p-value, adjusted for the number of agents compared with the reference (``p_adjust``:
    :data:`P_ADJUST_METHODS`; within each value of ``by``).

    Columns: ``[by,] agent, runs, unstable_runs[, uses_oracle, slotted_on_continuous], <metric>, <metric>_ci95, <metric>_lo,
    <metric>_hi[, <metric>_diff, <metric>_diff_ci95, <metric>_diff_p, <metric>_diff_p_adj]``.  The
    ``_lo``/``_hi`` bounds are the interval within the metric's range (:func:`bounded_ci`); the
    ``_ci95`` half-width is the symmetric Student-t one.  ``df.attrs["p_adjust"]`` names the method.
    """
    import pandas as pd

    from clustergym.runner.metric_info import metric_info

    if reference is not None and reference not in set(results["agent"]):
        raise ConfigError(
            "reference", f"agent {reference!r} is not among the compared agents {list(dict.fromkeys(results['agent']))}"
        )

    settings.choice(p_adjust, "p_adjust", P_ADJUST_METHODS)
    metrics = tuple(metrics)
    out = []
    keys = ["agent"] if by is None else [by, "agent"]
    for key, grp in results.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        agent = key[-1]
        row: dict[str, Any] = dict(zip(keys, key))
        row.update({"runs": len(grp), "unstable_runs": int(grp["unstable"].sum())})
        for flag in ("uses_oracle", "slotted_on_continuous"):
            if flag in grp:
                row[flag] = bool(grp[flag].astype(bool).any())
        for m in metrics:
            info = metric_info(m)
            values = grp[m].to_numpy(dtype=float)
            mean, half = mean_ci(values)
            row[m] = mean
            row[f"{m}_ci95"] = half
            row[f"{m}_lo"], row[f"{m}_hi"] = bounded_ci(values, info.lower, info.upper)[1:]
            if reference is not None and agent != reference:
                same = results["agent"] == reference
                if by is not None:
                    same &= results[by] == key[0]
                ref = results[same].set_index("seed")[m]
                diff = (grp.set_index("seed")[m] - ref).dropna().to_numpy(dtype=float)
                dmean, dhalf = mean_ci(diff)
                row[f"{m}_diff"] = dmean
                row[f"{m}_diff_ci95"] = dhalf
                row[f"{m}_diff_p"] = _paired_p(diff)
        out.append(row)
    table = pd.DataFrame(out)
    if reference is not None and len(table):
        groups = (
            [np.ones(len(table), dtype=bool)]
            if by is None
            else [(table[by] == v).to_numpy() for v in dict.fromkeys(table[by])]
        )
        for m in metrics:
            col = f"{m}_diff_p"
            if col not in table:
                continue
            adj = np.full(len(table), math.nan)
            for g in groups:
                adj[g] = adjust_p_values(table.loc[g, col].to_numpy(dtype=float), p_adjust)
            table[f"{m}_diff_p_adj"] = adj
    table.attrs["p_adjust"] = p_adjust
    table.attrs["reference"] = reference
    return table


def summary_long(summary: pd.DataFrame, metrics: Iterable[str], by: str | None = None) -> pd.DataFrame:
    """The :func:`summarize` table in long format: one row per (``by`` value,) agent and metric, with
    columns ``metric, mean, ci95, lo, hi[, diff, diff_ci95, diff_p, diff_p_adj]``."""
    import pandas as pd

    ident = ([by] if by is not None else []) + [
        c for c in ("agent", "runs", "unstable_runs", "uses_oracle", "slotted_on_continuous") if c in summary
    ]
    rows = []
    for _, r in summary.iterrows():
        for m in metrics:
            if m not in summary:
                continue
            row = {c: r[c] for c in ident}
            row.update(
                metric=m, mean=r[m], ci95=r[f"{m}_ci95"], lo=r.get(f"{m}_lo", math.nan), hi=r.get(f"{m}_hi", math.nan)
            )
            for suffix in ("diff", "diff_ci95", "diff_p", "diff_p_adj"):
                if f"{m}_{suffix}" in summary:
                    row[suffix] = r[f"{m}_{suffix}"]
            rows.append(row)
    return pd.DataFrame(rows)
