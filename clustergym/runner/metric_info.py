"""What each run metric is, for tables and figures: its label, unit, direction and bounds.

One entry per field of ``Simulator.summary()`` that a comparison reports (``docs/metrics.md`` defines
them).  The bounds are those of the quantity, not of an estimate: a queue length is never negative,
a utilization lies in [0, 1].  Figures label their axes from here, draw intervals inside the bounds
(:func:`clustergym.runner.stats.bounded_ci`) and say which direction is better.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["MetricInfo", "METRICS", "metric_info"]


@dataclass(frozen=True)
class MetricInfo:
    """One metric.

    Attributes:
        name: the column name (``mean_queue_length``).
        label: words for an axis (``Mean queue length``).
        unit: the unit (``jobs``, ``time units``, ...; ``""`` for a pure number).
        lower_is_better: the direction of improvement.
        lower: the smallest value the quantity can take (``-inf`` if unbounded).
        upper: the largest (``inf`` if unbounded).
    """

    name: str
    label: str
    unit: str
    lower_is_better: bool
    lower: float = 0.0
    upper: float = math.inf

    @property
    def axis_label(self) -> str:
        """``label (unit)``, with the better direction: ``Mean queue length (jobs) — lower is better``."""
        unit = f" ({self.unit})" if self.unit else ""
        return f"{self.label}{unit}, {'lower' if self.lower_is_better else 'higher'} is better"


_T = "time units"
METRICS: dict[str, MetricInfo] = {
    m.name: m
    for m in (
        MetricInfo("mean_queue_length", "Mean queue length", "jobs", True),
        MetricInfo("mean_jobs_in_system", "Mean jobs in system", "jobs", True),
        MetricInfo("mean_weighted_jobs_in_system", "Mean weighted jobs in system", "weight", True),
        MetricInfo("mean_wait", "Mean wait", _T, True),
        MetricInfo("p99_wait", "99th percentile of the wait", _T, True),
        MetricInfo("mean_weighted_completion", "Mean weighted flow time", f"weight x {_T}", True),
        MetricInfo("reward_rate", "Reward rate", f"reward / {_T}", False),
        MetricInfo("reward_per_server", "Reward rate per server", f"reward / {_T}", False),
        MetricInfo("ratio_to_lp_bound", "Reward rate / LP bound U*", "", False, 0.0, 1.0),
        MetricInfo("ratio_to_finite_bound", "Reward rate / finite-size bound U*_L", "", False, 0.0, 1.0),
        MetricInfo("queued_at_end", "Jobs waiting at the end", "jobs", True),
        MetricInfo("completed", "Completed jobs", "jobs", False),
        MetricInfo("rejected", "Rejected jobs", "jobs", True),
        MetricInfo("return", "Episode return", "objective units", False, -math.inf, math.inf),
        MetricInfo("score", "Suite score", "", False, -math.inf, math.inf),
    )
}


def metric_info(name: str) -> MetricInfo:
    """The entry of ``name``; a metric not in :data:`METRICS` (a per-resource column such as
    ``utilization_0``, a user's probe) gets its name as label, no unit and no bounds, lower better
    unless it names a utilization or a reward."""
    if name in METRICS:
        return METRICS[name]
    if name.startswith(("utilization", "dummy_utilization", "reserved_utilization")):
        return MetricInfo(name, name.replace("_", " ").capitalize(), "fraction of capacity", False, 0.0, 1.0)
    higher = "reward" in name or "score" in name
    return MetricInfo(name, name.replace("_", " ").capitalize(), "", not higher, -math.inf, math.inf)
