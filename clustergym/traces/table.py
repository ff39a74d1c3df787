"""The result of every trace loader: a job table plus an account of every row that was dropped.

A loader returns a :class:`TraceTable`: ``jobs`` (one row per job, with at least
``arrival`` and ``duration`` in seconds and one column per resource), the
resource columns in order, their units, and a :class:`FilterReport`.

Nothing is dropped silently: every filter is applied in order and counts the
records it removes under its reason (a record is counted once, under the first
filter that drops it), so ``records == kept + sum(dropped.values())`` always
holds (:meth:`FilterReport.check`).  Changes that keep a job but alter it
(demand clamped, duration truncated at a censoring time) are counted in
``modified``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from clustergym.errors import ScenarioError, TraceFormatError
from clustergym.validation import number, positive
from clustergym.workloads.replay import ReplaySource

__all__ = ["FilterReport", "TraceTable", "check_window"]


def check_window(window: Any) -> tuple[float | None, float | None]:
    """A ``(start, end)`` window of trace seconds: numbers or ``None``, ``start < end`` (an empty
    window keeps no job: an error, not an empty table)."""
    if not isinstance(window, (tuple, list)) or len(window) != 2:
        raise ScenarioError("window", f"expected (start, end) in seconds, got {window!r}")
    lo, hi = (None if w is None else number(w, f"window.{k}", allow_inf=True) for w, k in zip(window, ("start", "end")))
    if lo is not None and hi is not None and not lo < hi:
        raise ScenarioError(
            "window", f"start {lo:g} s must be before end {hi:g} s (the window [start, end) would keep no job)"
        )
    return lo, hi


@dataclass
class FilterReport:
    """Counts of what a loader read, dropped (per reason, in order) and kept.

    Attributes:
        source: the file(s) read.
        rows: data lines (records) read from the files.
        records: candidate jobs built from them (tasks, pods, VMs, ...) before filtering.
        dropped: reason -> number of candidate jobs removed, in the order the filters ran.
        kept: jobs in the table.
        modified: reason -> number of kept jobs that were altered (clamped, truncated, ...).
        steps: the preprocessing steps, in order, as readable sentences.
        counts: other counts of interest (event types, censoring classes, ...).
    """

    source: str
    rows: int = 0
    records: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    kept: int = 0
    modified: dict[str, int] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)

    def drop(self, reason: str, n: int) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + int(n)

    def modify(self, reason: str, n: int) -> None:
        if n:
            self.modified[reason] = self.modified.get(reason, 0) + int(n)

    def check(self) -> None:
        """Assert that every record is either kept or counted under a drop reason."""
        total = self.kept + sum(self.dropped.values())
        if total != self.records:
            raise AssertionError(
                f"{self.source}: filter accounting is off: {self.records} records, "
                f"{self.kept} kept + {sum(self.dropped.values())} dropped = {total}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "rows": self.rows,
            "records": self.records,
            "dropped": dict(self.dropped),
            "kept": self.kept,
            "modified": dict(self.modified),
            "steps": list(self.steps),
            "counts": _plain(self.counts),
        }

    def copy(self) -> FilterReport:
        return FilterReport(
            self.source,
            self.rows,
            self.records,
            dict(self.dropped),
            self.kept,
            dict(self.modified),
            list(self.steps),
            dict(self.counts),
        )


def _plain(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


class Filtering:
    """Apply boolean masks to a DataFrame in order, counting what each one drops."""

    def __init__(self, df: pd.DataFrame, report: FilterReport):
        self.df = df
        self.report = report
        report.records = len(df)

    def keep(self, mask: Any, reason: str) -> None:
        """Keep the rows where ``mask`` is true; count the others under ``reason`` (also when zero)."""
        m = np.asarray(mask, dtype=bool)
        n = int(m.size - np.count_nonzero(m))
        self.report.drop(reason, n)
        if n:
            self.df = self.df.loc[m]

    def window_first(
        self, column: str, window: tuple[float | None, float | None] | None, first_n: int | None, unit: str = "s"
    ) -> None:
        """Keep arrivals in ``[lo, hi)`` of ``column``, then the first ``first_n`` by ``column``."""
        if window is not None:
            lo, hi = check_window(window)
            a = self.df[column].to_numpy(dtype=np.float64)
            m = np.ones(a.size, bool)
            if lo is not None:
                m &= a >= lo
            if hi is not None:
                m &= a < hi
            self.keep(m, f"outside the window [{window[0]}, {window[1]}) {unit}")
        if first_n is not None:
            n = number(first_n, "first_n", lo=1, integer=True)
            a = self.df[column].to_numpy(dtype=np.float64)
            m = np.zeros(a.size, bool)
            m[np.argsort(a, kind="stable")[:n]] = True
            self.keep(m, f"after the first {n} arrivals")

    def min_duration(self, min_duration: float | None) -> None:
        """Zero durations: dropped; with ``min_duration``, every shorter duration raised to it (counted)."""
        d = self.df["duration"].to_numpy(dtype=np.float64)
        if min_duration is None:
            self.keep(d > 0, "zero duration")
        else:
            md = positive(min_duration, "min_duration")
            self.report.modify(f"duration raised to min_duration={md:g} s", int((d < md).sum()))
            self.df = self.df.assign(duration=np.maximum(d, md))

    def done(self) -> pd.DataFrame:
        self.df = self.df.reset_index(drop=True)
        self.report.kept = len(self.df)
        self.report.check()
        return self.df


@dataclass
class TraceTable:
    """A preprocessed trace: one row per job.

    Attributes:
        jobs: columns ``arrival`` (seconds from the origin, non-decreasing), ``duration``
            (seconds, > 0; ``NaN`` only where the trace has none), the resource columns and
            extra per-job columns (priority, ids, ...).
        resources: the demand columns, in resource order.
        units: column -> unit, e.g. ``{"cpu": "vCPU"}``.
        report: what was read, dropped and kept.
        format: the trace format (``google``, ``alibaba-v2017``, ...).
        origin: the trace time (seconds) that ``arrival == 0`` corresponds to.
    """

    jobs: pd.DataFrame
    resources: tuple[str, ...]
    units: dict[str, str]
    report: FilterReport
    format: str
    origin: float = 0.0

    def __len__(self) -> int:
        return len(self.jobs)

    @property
    def source(self) -> str:
        return self.report.source

    def replace(
        self,
        jobs: pd.DataFrame,
        *,
        step: str | None = None,
        dropped: Mapping[str, int] | None = None,
        modified: Mapping[str, int] | None = None,
        resources: Sequence[str] | None = None,
        units: Mapping[str, str] | None = None,
        origin: float | None = None,
    ) -> TraceTable:
        """A new table with ``jobs`` (a transform of this one); the report is copied and extended."""
        rep = self.report.copy()
        for k, v in (dropped or {}).items():
            rep.drop(k, v)
        for k, v in (modified or {}).items():
            rep.modify(k, v)
        if step:
            rep.steps.append(step)
        jobs = jobs.reset_index(drop=True)
        rep.kept = len(jobs)
        rep.check()
        u = dict(self.units)
        u.update(units or {})
        return dataclasses.replace(
            self,
            jobs=jobs,
            report=rep,
            units=u,
            resources=tuple(resources) if resources is not None else self.resources,
            origin=self.origin if origin is None else float(origin),
        )

    def to_source(
        self,
        demand: Sequence[str] | str | None = None,
        *,
        type: str | None = None,
        type_demand: Any = None,
        names: Sequence[str] | None = None,
        weight: str | None = None,
        reward_rate: str | None = None,
        chunk_size: int = 4096,
    ) -> ReplaySource:
        """A :class:`~clustergym.workloads.replay.ReplaySource` over ``demand`` columns (default: all resources).

        Raises:
            TraceFormatError: no jobs, a job without a duration (e.g. Azure's training split),
                or any check of :class:`ReplaySource`.
        """
        cols = list(self.resources) if demand is None else ([demand] if isinstance(demand, str) else list(demand))
        if len(self.jobs) == 0:
            raise TraceFormatError(f"{self.source}: no jobs left after filtering ({self.report.dropped})")
        if self.jobs["duration"].isna().any():
            n = int(self.jobs["duration"].isna().sum())
            raise TraceFormatError(
                f"{self.source}: {n} jobs have no duration (this file or split has none); "
                "choose a trace with durations to replay it"
            )
        return ReplaySource.from_frame(
            self.jobs,
            cols,
            time="arrival",
            work="duration",
            type=type,
            weight=weight,
            reward_rate=reward_rate,
            type_demand=type_demand,
            names=names,
            source=self.source,
            chunk_size=chunk_size,
        )
