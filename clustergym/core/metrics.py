"""Exact time-integral metrics and per-job statistics.

Every state quantity that the objectives use is piecewise constant between
events, so its time integral is accumulated exactly at each event:
``area += value * (t_event - t_previous)``.  Dividing by the elapsed time gives
the time averages reported by ``clustergym run``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["TimeIntegrals", "QueueTrace", "summarize_jobs", "trend_unstable"]


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
    queue_by_type: np.ndarray = field(default=None)  # type: ignore[assignment]
    real_usage: np.ndarray = field(default=None)  # type: ignore[assignment]
    dummy_usage: np.ndarray = field(default=None)  # type: ignore[assignment]
    empty_slot_usage: np.ndarray = field(default=None)  # type: ignore[assignment]

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


def trend_unstable(times: np.ndarray, values: np.ndarray, total_rate: float | None) -> bool:
    """Instability test (docs/papers/rms.md#instability): unstable if the OLS slope of the queue over the second half
    of the run exceeds 1% of the total arrival rate (per unit time)."""
    if total_rate is None or total_rate <= 0 or len(times) < 20:
        return False
    half = len(times) // 2
    t, q = times[half:], values[half:]
    span = float(np.ptp(t))
    if not span > 0:
        return False
    # the fit on times rescaled to [0, 1] (the slope per unit time is its slope / span): a horizon of
    # 1e-300 gives times whose squares underflow, where polyfit's own scaling fails (LAPACK errors)
    slope = np.polyfit((t - t[0]) / span, q, 1)[0] / span
    return bool(slope > 0.01 * total_rate)


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
