"""Exact time-integral metrics and per-job statistics.

Every state quantity that the objectives use is piecewise constant between
events, so its time integral is accumulated exactly at each event:
``area += value * (t_event - t_previous)``.  Dividing by the elapsed time gives
the time averages reported by ``clustergym run``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["TimeIntegrals", "QueueTrace", "summarize_jobs", "stability_test", "trend_unstable"]


@dataclass
class TimeIntegrals:
    """Running integrals ``∫ x(t) dt`` of the state quantities, from time 0.

    Shapes: ``queue_by_type`` (J,); ``real_usage``, ``dummy_usage``,
    ``empty_slot_usage`` (R,) in resource units (divide by total capacity for
    utilisation).
    """

    num_types: int
    num_resources: int
    elapsed: float = 0.0
    queue: float = 0.0              #: ∫ jobs waiting (central + local queues)
    system: float = 0.0             #: ∫ real jobs in system (waiting + in service)
    weighted_system: float = 0.0    #: ∫ sum of weights of real jobs in system
    weighted_queue: float = 0.0     #: ∫ sum of weights of waiting jobs
    reward: float = 0.0             #: ∫ sum of reward rates of running real jobs
    queue_by_type: np.ndarray = field(default=None)  # type: ignore[assignment, arg-type]
    real_usage: np.ndarray = field(default=None)  # type: ignore[assignment, arg-type]
    dummy_usage: np.ndarray = field(default=None)  # type: ignore[assignment, arg-type]
    empty_slot_usage: np.ndarray = field(default=None)  # type: ignore[assignment, arg-type]

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.elapsed = self.queue = self.system = 0.0
        self.weighted_system = self.weighted_queue = self.reward = 0.0
        self.queue_by_type = np.zeros(self.num_types)
        self.real_usage = np.zeros(self.num_resources)
        self.dummy_usage = np.zeros(self.num_resources)
        self.empty_slot_usage = np.zeros(self.num_resources)


class QueueTrace:
    """Samples of the total queue length on a regular time grid (for trends and plots).

    With a finite horizon the grid has ``points`` points.  With an infinite one
    (a trace replayed until it drains) the grid starts at one sample per time
    unit and is thinned by half whenever it exceeds ``2 * points`` samples, so
    memory stays bounded however long the run.
    """

    def __init__(self, horizon: float, points: int = 1000):
        self.points = points
        self.step = horizon / points if np.isfinite(horizon) and horizon > 0 else 1.0
        self.times: list[float] = []
        self.values: list[int] = []
        self._next = 0.0

    def record(self, t_from: float, t_to: float, value: int) -> None:
        """The queue held ``value`` on ``[t_from, t_to)``; sample the grid points in it."""
        while self._next < t_to:
            if self._next >= t_from:
                self.times.append(self._next)
                self.values.append(value)
                if len(self.times) > 2 * self.points:
                    self.times = self.times[::2]
                    self.values = self.values[::2]
                    self.step *= 2.0
                    self._next = self.times[-1]
            self._next += self.step

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.times), np.asarray(self.values, dtype=float)


#: the instability test (see :func:`stability_test` and docs/metrics.md)
STABILITY_BATCHES = 10        #: batch means over the tested window
STABILITY_ALPHA = 0.01        #: one-sided significance level of the drift test
STABILITY_MIN_DRIFT = 0.005   #: practical threshold: drift of at least this fraction of the arrival rate
STABILITY_MIN_SAMPLES = 10    #: queue samples per batch, at least
STABILITY_MIN_ARRIVALS = 1000  #: expected arrivals in the tested window, at least
STABILITY_MIN_CYCLES = 10      #: regeneration cycles (visits of the queue to 0) to call a run stable


def _ols_slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of ``y`` on ``x`` and its standard error, with the expressions of
    ``scipy.stats.linregress`` (same values), without importing ``scipy.stats`` (about 1 s) in every run."""
    ssxm, ssxym, _, ssym = np.cov(x, y, bias=True).flat
    r = 0.0 if ssxm == 0.0 or ssym == 0.0 else min(max(ssxym / math.sqrt(ssxm * ssym), -1.0), 1.0)
    slope = ssxym / ssxm
    return float(slope), float(math.sqrt((1 - r**2) * ssym / ssxm / (x.size - 2)))


def _t_sf(t: float, df: int) -> float:
    """Student-t survival function ``P(T > t)`` (``scipy.stats.t.sf``, through the same special function)."""
    from scipy.special import stdtr

    return float(stdtr(df, -t))


def stability_test(times: np.ndarray, values: np.ndarray, total_rate: float | None, *,
                   start: float = 0.0, end: float | None = None) -> dict:
    """Is the queue drifting upwards?  A one-sided test on batch means (docs/metrics.md).

    The tested window is the second half of ``[start, end]`` (``start``: the warm-up; the first
    half lets the queue leave the empty initial state).  The queue samples ``(times, values)`` of
    the window are cut into ``STABILITY_BATCHES`` batches of equal length; the OLS slope ``b`` of
    the batch means against the batch mid-times is tested against ``b <= 0`` with a one-sided
    Student t test at level ``STABILITY_ALPHA`` (``B - 2`` degrees of freedom).  Batch means are
    nearly independent when a batch is long against the queue's relaxation time, which is why the
    test needs a minimum run length.

    Verdicts:

    * ``"unstable"``: the test rejects and the drift is practically significant,
      ``b > STABILITY_MIN_DRIFT x total_rate`` (jobs per unit time);
    * ``"undetermined"``: the window is too short to test (fewer than ``STABILITY_MIN_SAMPLES``
      samples per batch or fewer than ``STABILITY_MIN_ARRIVALS`` expected arrivals), or the test
      does not reject but the queue visited 0 fewer than ``STABILITY_MIN_CYCLES`` times in the
      window and was empty in less than half of its samples (too few regeneration cycles to
      vouch for stability);
    * ``"stable"``: the test does not reject and the queue kept returning to 0 (or was empty in
      at least half of the window's samples).

    ``total_rate``: the arrival rate (jobs per unit time); ``None`` or 0 uses no practical
    threshold (then only the t test decides).  Returns ``verdict, slope, t, p_value, batches,
    cycles`` (``slope`` in jobs per unit time, NaN when not tested).
    """
    t = np.asarray(times, dtype=np.float64)
    q = np.asarray(values, dtype=np.float64)
    nan = float("nan")
    out: dict[str, Any] = {"verdict": "undetermined", "slope": nan, "t": nan, "p_value": nan, "batches": 0, "cycles": 0}
    if t.size == 0:
        return out
    stop = float(t[-1]) if end is None else float(end)
    mid = start + 0.5 * (stop - start)
    w = (t >= mid) & (t <= stop)
    tw, qw = t[w], q[w]
    B = STABILITY_BATCHES
    zero = qw == 0
    # regeneration cycles: visits of the sampled queue to 0 (maximal runs of empty samples)
    out["cycles"] = int(np.count_nonzero(zero[1:] & ~zero[:-1]) + (1 if zero.size and zero[0] else 0))
    mostly_empty = zero.size > 0 and 2 * int(zero.sum()) >= zero.size
    span = stop - mid
    if tw.size < B * STABILITY_MIN_SAMPLES or not span > 0 or (
            total_rate is not None and total_rate > 0 and total_rate * span < STABILITY_MIN_ARRIVALS):
        return out
    idx = np.minimum(((tw - mid) / span * B).astype(np.int64), B - 1)
    counts = np.bincount(idx, minlength=B)
    if np.any(counts == 0):
        return out
    means = np.bincount(idx, weights=qw, minlength=B) / counts
    x = mid + (np.arange(B) + 0.5) * span / B
    out["batches"] = B
    if np.ptp(means) == 0:
        out.update(slope=0.0, t=0.0, p_value=1.0)
    else:
        slope, se = _ols_slope(x, means)
        tstat = slope / se if se > 0 else (math.inf if slope > 0 else -math.inf)
        out.update(slope=slope, t=float(tstat), p_value=_t_sf(tstat, B - 2))
    drift = total_rate is None or total_rate <= 0 or out["slope"] > STABILITY_MIN_DRIFT * total_rate
    if out["p_value"] < STABILITY_ALPHA and drift:
        out["verdict"] = "unstable"
    elif out["cycles"] >= STABILITY_MIN_CYCLES or mostly_empty:
        out["verdict"] = "stable"
    return out


def trend_unstable(times: np.ndarray, values: np.ndarray, total_rate: float | None) -> bool:
    """Whether :func:`stability_test` calls the queue ``unstable`` (window: the second half of the run)."""
    return stability_test(times, values, total_rate)["verdict"] == "unstable"


def summarize_jobs(arrival: np.ndarray, start: np.ndarray, end: np.ndarray,
                   weight: np.ndarray, completed: np.ndarray) -> dict[str, float]:
    """Per-job statistics over real jobs.

    ``mean_wait`` and ``p99_wait`` are over jobs that started service (waiting =
    start - arrival); ``mean_weighted_completion`` is the mean of
    ``weight * (end - arrival)`` over completed jobs (weighted flow time).
    """
    started = ~np.isnan(start)
    waits = start[started] - arrival[started]
    out = {
        "mean_wait": float(waits.mean()) if waits.size else float("nan"),
        "p99_wait": float(np.percentile(waits, 99)) if waits.size else float("nan"),
    }
    if completed.any():
        out["mean_weighted_completion"] = float(
            np.mean(weight[completed] * (end[completed] - arrival[completed])))
    else:
        out["mean_weighted_completion"] = float("nan")
    return out
