"""Google clusterdata-2011-2 (trace format v2.1): task_events, job_events, machine_events.

Format (no header lines; ``.csv.gz`` parts; see the traces README and the trace's
``schema.csv``).  task_events has 13 fields: time (µs; 0 = before the window, which
starts at 600 s; 2^63-1 = after it), missing info, job ID, task index, machine ID,
event type (0 SUBMIT, 1 SCHEDULE, 2 EVICT, 3 FAIL, 4 FINISH, 5 KILL, 6 LOST,
7 UPDATE_PENDING, 8 UPDATE_RUNNING), user, scheduling class, priority (0-11),
CPU request, memory request, disk request (normalised to the largest machine, 0-1),
different-machines restriction.

A *job* of clustergym is a trace **task** (job ID, task index).  Reading is one
pandas C-engine pass per part over the 8 needed fields with explicit dtypes
(:func:`read_task_events`); turning events into jobs is vectorised over tasks
(:func:`google_tasks`) with one of three lifecycles:

``strict`` (RMS paper §VII-B, BF-J/S paper §VII-B: "completed successfully without stopping")
    keep a task iff its first SUBMIT is inside the window (time > 0), it has no
    EVICT/FAIL/KILL/LOST, exactly one SCHEDULE, and its last non-UPDATE event is its
    only FINISH.  arrival = SUBMIT; duration = FINISH - SCHEDULE.
``finished`` (auto-scaling paper Sec. 7.2: "completed within the time window")
    first SUBMIT > 0 and the last non-UPDATE event is a FINISH (interruptions and
    resubmissions allowed).  arrival = first SUBMIT; duration = FINISH - last SCHEDULE.
``attempts`` (LoTES Sec. 5.3: failed, resubmitted jobs "are considered to be new, unrelated jobs")
    one job per SUBMIT event that is followed by a SCHEDULE (before the next SUBMIT
    of the task); arrival = that SUBMIT (0 for tasks present at the trace start: the
    initial batch); duration = the next FINISH/EVICT/FAIL/KILL/LOST - SCHEDULE, or
    truncated at the end of the slice when the run is still going (right-censored;
    counted in ``modified`` and flagged in the ``censored`` column).

Requests and priority come from the SCHEDULE record (the values in force when the
task started), else from the SUBMIT record.  Then, in order, each counted in the
report: the priority band, missing requests, zero durations, the time window, the
first N arrivals.  A FINISH stamped before its SCHEDULE is a malformed trace
(negative duration) and raises :class:`~clustergym.errors.TraceFormatError` naming
the file and line.

Units of the table: ``arrival``/``duration``/``submit_time`` in seconds (``arrival``
from the first kept arrival, ``submit_time`` in trace time); ``cpu``, ``memory``,
``disk`` normalised to the largest machine (1.0).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from clustergym.errors import TraceFormatError
from clustergym.traces import transforms as T
from clustergym.traces._csv import Col, read_table
from clustergym.traces.paths import TraceNotFoundError, trace_path
from clustergym.traces.table import Filtering, FilterReport, TraceTable
from clustergym.validation import choice

__all__ = [
    "EVENT_TYPES",
    "GoogleTaskEvents",
    "task_event_files",
    "read_task_events",
    "google_tasks",
    "load_google",
    "load_google_job_events",
    "load_google_machines",
    "machine_shape_counts",
    "LIFECYCLES",
]

EVENT_TYPES = {
    0: "SUBMIT",
    1: "SCHEDULE",
    2: "EVICT",
    3: "FAIL",
    4: "FINISH",
    5: "KILL",
    6: "LOST",
    7: "UPDATE_PENDING",
    8: "UPDATE_RUNNING",
}
SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST = 0, 1, 2, 3, 4, 5, 6
AFTER_WINDOW = np.iinfo(np.int64).max
LIFECYCLES = ("strict", "finished", "attempts")
Lifecycle = Literal["strict", "finished", "attempts"]

_TASK_COLS = [
    Col("time", 0, "int", label="time"),
    Col("job", 2, "int", label="job ID"),
    Col("task", 3, "int", label="task index"),
    Col("event", 5, "int", label="event type", dtype=np.int8),
    Col("sched_class", 7, "int", required=False, label="scheduling class"),
    Col("priority", 8, "int", label="priority", dtype=np.int8),
    Col("cpu", 9, "float", required=False, label="CPU request"),
    Col("memory", 10, "float", required=False, label="memory request"),
    Col("disk", 11, "float", required=False, label="disk space request"),
]


@dataclass
class GoogleTaskEvents:
    """The raw task events of one or more parts, concatenated in file order.

    Attributes:
        events: columns ``time`` (µs, int64), ``job``, ``task``, ``event`` (int), ``sched_class``,
            ``priority`` (int8; sched_class -1 when empty), ``cpu``, ``memory``, ``disk`` (float64, NaN = empty).
        files: the parts read, in order.
        rows: data lines per file (row ``r`` of ``events`` is line ``r - sum(rows[:f]) + 1`` of file ``f``).
    """

    events: pd.DataFrame
    files: tuple[Path, ...]
    rows: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.events)

    def where(self, row: int) -> tuple[Path, int]:
        """The file and 1-based line of global row ``row``."""
        cum = np.cumsum((0, *self.rows))
        f = int(np.searchsorted(cum, row, side="right") - 1)
        return self.files[f], int(row - cum[f] + 1)

    @property
    def source(self) -> str:
        if len(self.files) == 1:
            return str(self.files[0])
        return f"{self.files[0].parent}/{{{self.files[0].name} .. {self.files[-1].name}}} ({len(self.files)} parts)"


def task_event_files(trace_dir: str | os.PathLike[str] | None = None, parts: int | None = None) -> list[Path]:
    """The ``task_events/part-*.csv.gz`` files under the trace directory, in part order (first ``parts``)."""
    d = trace_path("google", "task_events", trace_dir=trace_dir)
    files = sorted(d.glob("part-*.csv.gz")) or sorted(d.glob("part-*.csv"))
    if not files:
        raise TraceNotFoundError(
            f"{d} holds no part-*.csv.gz files; download the Google clusterdata-2011-2 task_events parts into it"
        )
    return files[:parts] if parts is not None else files


def _as_files(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        p = Path(paths)
        if p.is_dir():
            files = sorted(p.glob("part-*.csv.gz")) or sorted(p.glob("part-*.csv"))
            if not files:
                raise TraceNotFoundError(f"{p} holds no part-*.csv(.gz) files")
            return files
        return [p]
    return [Path(p) for p in paths]


def read_task_events(
    files: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    *,
    trace_dir: str | os.PathLike[str] | None = None,
    parts: int | None = None,
    threads: int | None = None,
) -> GoogleTaskEvents:
    """Read task_events parts (8 of the 13 fields, explicit dtypes), in file order.

    Args:
        files: a part file, a list of them, or a directory of parts; default the trace directory's
            ``google-clusterdata-2011-2/task_events`` (first ``parts`` parts).
        threads: parts read concurrently (default: up to 4, at most the CPU count).

    Raises:
        TraceFormatError: naming the file, line and field of the first malformed value, or a
            truncated gzip stream.
    """
    paths = task_event_files(trace_dir, parts) if files is None else _as_files(files)
    if parts is not None and files is not None:
        paths = paths[:parts]
    n_threads = threads or max(1, min(4, os.cpu_count() or 1, len(paths)))

    def one(p: Path) -> pd.DataFrame:
        df = read_table(p, _TASK_COLS, header=False, nfields=13, what="Google task_events part")
        return _compact(df)

    if n_threads > 1 and len(paths) > 1:
        with ThreadPoolExecutor(n_threads) as ex:
            frames = list(ex.map(one, paths))
    else:
        frames = [one(p) for p in paths]
    rows = tuple(len(f) for f in frames)
    # concatenate column by column, freeing each part's column as we go (peak: one copy + one column)
    cols: dict[str, np.ndarray] = {}
    for name in frames[0].columns:
        cols[name] = (
            np.concatenate([f[name].to_numpy() for f in frames]) if len(frames) > 1 else frames[0][name].to_numpy()
        )
        for f in frames:
            del f[name]
    del frames
    return GoogleTaskEvents(pd.DataFrame(cols, copy=False), tuple(paths), rows)


def _compact(df: pd.DataFrame) -> pd.DataFrame:
    sc = df["sched_class"].to_numpy()
    df["sched_class"] = np.where(np.isfinite(sc), sc, -1).astype(np.int8)
    return df


def _validate_events(ev: GoogleTaskEvents) -> None:
    e = ev.events
    checks = [
        ("time", "time", (e["time"].to_numpy() < 0), "negative timestamp"),
        ("event", "event type", ~e["event"].between(0, 8).to_numpy(), "event type outside 0..8"),
        ("priority", "priority", ~e["priority"].between(0, 11).to_numpy(), "priority outside 0..11"),
    ]
    for r in ("cpu", "memory", "disk"):
        v = e[r].to_numpy()
        checks.append((r, f"{r} request", (v < 0) | np.isinf(v), "negative or infinite request"))
    for col, label, bad, problem in checks:
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            f, line = ev.where(i)
            raise TraceFormatError(f"{f}: line {line}, field '{label}': {problem}: {e[col].iloc[i]!r}")


def google_tasks(
    events: GoogleTaskEvents,
    *,
    lifecycle: Lifecycle = "strict",
    priorities: str | Sequence[int] | None = None,
    window: tuple[float | None, float | None] | None = None,
    first_n: int | None = None,
    include_pre_window: bool | None = None,
    missing_requests: Literal["drop", "zero"] = "drop",
    min_duration: float | None = None,
    end_time: float | None = None,
) -> TraceTable:
    """Turn task events into one job per task (or per attempt); see the module docstring.

    Steps: group the events by task (:func:`_group_tasks`), pick each job's SUBMIT and SCHEDULE records
    by lifecycle (:func:`_whole_tasks` or :func:`_attempts`), read the job columns from them
    (:func:`_job_columns`), then filter and report (:func:`_filter_jobs`).

    Args:
        lifecycle: ``strict``, ``finished`` or ``attempts``.
        priorities: a band (``non-production`` = 0-8, ``production`` = 9-11, ``free`` = 0-1,
            ``middle`` = 2-8, ``all``) or a list of priorities; ``None`` keeps all.
        window: ``(start, end)`` in trace seconds on the arrival (SUBMIT) time, ``start <= t < end``;
            either may be ``None``.
        first_n: keep the first N jobs by arrival (after every other filter).
        include_pre_window: let tasks submitted before the window (time 0) arrive at time 0;
            default true for ``attempts`` (LoTES's initial batch), false otherwise.
        missing_requests: ``drop`` jobs with an empty CPU or memory request (counted), or read
            them as ``zero``.
        min_duration: raise shorter durations to this (counted in ``modified``); by default
            zero durations are dropped (counted).
        end_time: the end of the slice in trace seconds, for truncating running attempts
            (default: the last timestamp in the events).

    Returns:
        a :class:`TraceTable` with columns ``arrival, duration, cpu, memory, disk, priority,
        scheduling_class, job_id, task_index, submit_time`` (+ ``censored`` for attempts).
    """
    choice(lifecycle, "lifecycle", LIFECYCLES)
    choice(missing_requests, "missing_requests", ("drop", "zero"))
    band = T.priority_band(priorities)
    pre = (lifecycle == "attempts") if include_pre_window is None else bool(include_pre_window)
    _validate_events(events)
    rep = FilterReport(events.source, rows=len(events.events))
    g = _group_tasks(events, rep)
    end_us = float(g.t.max()) if end_time is None else float(end_time) * 1e6
    if lifecycle in ("strict", "finished"):
        picked = _whole_tasks(g, events, rep, lifecycle == "strict", pre)
    else:
        picked = _attempts(g, events, rep, pre, end_us)
    filt, sub_i, sch_i, arrival_us, dur_us, censored = picked
    filt.df = _job_columns(events.events, g.order[sch_i], g.order[sub_i], arrival_us, dur_us, censored)
    jobs = _filter_jobs(filt, rep, band, missing_requests, min_duration, window, first_n)
    origin = float(jobs["arrival"].iloc[0]) if len(jobs) else 0.0
    jobs["arrival"] = jobs["arrival"] - origin
    rep.steps.append(
        f"Google task_events, lifecycle '{lifecycle}'"
        + (f", priorities {list(band)}" if band else "")
        + f"; arrival = SUBMIT - {origin:g} s (the first kept arrival); requests from the SCHEDULE record"
    )
    return TraceTable(
        jobs=jobs,
        resources=("cpu", "memory", "disk"),
        units={
            "arrival": "s",
            "duration": "s",
            "cpu": "normalized (largest machine = 1)",
            "memory": "normalized (largest machine = 1)",
            "disk": "normalized (largest machine = 1)",
        },
        report=rep,
        format="google",
        origin=origin,
    )


@dataclass
class _Groups:
    """The events sorted by task (file order within a task), after-window events left out.

    Attributes:
        order: ``(n,)`` row of each sorted event in the file-order table.
        t, ev: ``(n,)`` time (µs) and event type of each sorted event.
        starts: ``(tasks,)`` first sorted position of each task.
        idx: ``arange(n)``, the sorted positions.
    """

    order: np.ndarray
    t: np.ndarray
    ev: np.ndarray
    starts: np.ndarray
    idx: np.ndarray

    @property
    def n(self) -> int:
        return int(self.order.size)

    def first(self, mask: np.ndarray) -> np.ndarray:
        """Per task, the first sorted position where ``mask`` holds (``n`` if none)."""
        return np.minimum.reduceat(np.where(mask, self.idx, self.n), self.starts)

    def last(self, mask: np.ndarray) -> np.ndarray:
        """Per task, the last sorted position where ``mask`` holds (-1 if none)."""
        return np.maximum.reduceat(np.where(mask, self.idx, -1), self.starts)

    def count(self, mask: np.ndarray) -> np.ndarray:
        """Per task, how many events ``mask`` holds for."""
        return np.add.reduceat(mask.astype(np.int32), self.starts)

    def is_bad(self) -> np.ndarray:
        """Per event, whether it interrupts the task (EVICT, FAIL, KILL or LOST)."""
        ev = self.ev
        return (ev == EVICT) | (ev == FAIL) | (ev == KILL) | (ev == LOST)


def _group_tasks(events: GoogleTaskEvents, rep: FilterReport) -> _Groups:
    """Sort the events by task key (job ID, task index), stably; counts of event types and tasks in ``rep``."""
    e = events.events
    ev_counts = np.bincount(e["event"].to_numpy(), minlength=9)
    rep.counts["events"] = {EVENT_TYPES[i]: int(ev_counts[i]) for i in range(9)}
    t_all = e["time"].to_numpy()
    after = t_all == AFTER_WINDOW
    rep.counts["events_after_window_ignored"] = int(after.sum())
    # group rows by task, file order within a task (parts are in time order)
    jc = pd.factorize(e["job"].to_numpy())[0].astype(np.int64)
    task = e["task"].to_numpy()
    jc *= int(task.max()) + 1
    jc += task  # jc is now the task key
    order = np.argsort(jc, kind="stable")
    if after.any():
        order = order[~after[order]]
    n = order.size
    itype = np.int32 if n < 2**31 - 1 else np.int64  # row positions: half the memory on slices < 2^31 rows
    order = order.astype(itype)
    key_s = jc[order]
    del jc
    starts = np.flatnonzero(key_s[1:] != key_s[:-1]) + 1 if n else np.zeros(0, np.int64)
    starts = np.r_[0, starts] if n else starts
    del key_s
    rep.counts["tasks"] = int(starts.size)
    return _Groups(order, t_all[order], e["event"].to_numpy()[order], starts, np.arange(n, dtype=itype))


#: what :func:`_whole_tasks` and :func:`_attempts` return: the filter over the candidate jobs, each kept
#: job's SUBMIT and SCHEDULE sorted positions, arrival and duration (µs), and right-censoring (or None)
_Picked = tuple[Filtering, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]
_UNFINISHED = "not finished in the slice (pending or running at its end: right-censored)"


def _whole_tasks(g: _Groups, events: GoogleTaskEvents, rep: FilterReport, strict: bool, pre: bool) -> _Picked:
    """One job per task for the ``strict`` and ``finished`` lifecycles (module docstring)."""
    n, t_s, ev_s = g.n, g.t, g.ev
    is_sch, is_fin, is_bad = ev_s == SCHEDULE, ev_s == FINISH, g.is_bad()
    f_sub = g.first(ev_s == SUBMIT)
    l_sch, l_fin = g.last(is_sch), g.last(is_fin)
    l_core = g.last(ev_s <= LOST)  # last non-UPDATE event
    has_sub = f_sub < n
    sub_t = np.where(has_sub, t_s[np.minimum(f_sub, n - 1)], -1)
    in_window = has_sub & ((sub_t > 0) | pre)
    ends_fin = (l_fin >= 0) & (l_core == l_fin) & (l_sch >= 0) & (l_sch < l_fin)
    cand = pd.DataFrame({"sub": f_sub, "sch": l_sch, "fin": l_fin})
    filt = Filtering(cand, rep)
    filt.keep(in_window, "submitted before the window (first SUBMIT at t=0 or none in the slice)")
    m = in_window
    if strict:
        nbad, nsch, nfin = g.count(is_bad), g.count(is_sch), g.count(is_fin)
        filt.keep((nbad == 0)[m], "interrupted (EVICT/FAIL/KILL/LOST)")
        m = m & (nbad == 0)
        filt.keep((nsch <= 1)[m], "scheduled more than once")
        m = m & (nsch <= 1)
        filt.keep((ends_fin & (nfin == 1))[m], _UNFINISHED)
    else:
        ended_bad = (l_core >= 0) & is_bad[np.maximum(l_core, 0)]
        filt.keep((~ended_bad)[m], "ended with EVICT/FAIL/KILL/LOST")
        m = m & ~ended_bad
        filt.keep(ends_fin[m], _UNFINISHED)
    c = filt.df
    sub_i, sch_i, fin_i = c["sub"].to_numpy(), c["sch"].to_numpy(), c["fin"].to_numpy()
    dur_us = (t_s[fin_i] - t_s[sch_i]).astype(np.float64)
    neg = dur_us < 0
    if neg.any():
        k = int(np.flatnonzero(neg)[0])
        f, line = events.where(int(g.order[fin_i[k]]))
        more = int(neg.sum()) - 1
        raise TraceFormatError(
            f"{f}: line {line}, field 'time': negative duration: FINISH at "
            f"{t_s[fin_i[k]]} µs precedes its SCHEDULE at {t_s[sch_i[k]]} µs"
            + (f" (and {more} more tasks)" if more else "")
        )
    return filt, sub_i, sch_i, t_s[sub_i], dur_us, None


def _attempt_records(g: _Groups) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """The candidate attempts of the ``attempts`` lifecycle, by SUBMIT position: each SUBMIT with the next
    SCHEDULE, plus SCHEDULEs with no SUBMIT before them in the slice (``is_orphan``); and per event the end
    of its task's group, the next SUBMIT and the next terminal event (all strictly after it; ``n``: none)."""
    n, ev_s, idx, starts = g.n, g.ev, g.idx, g.starts
    is_sub, is_sch = ev_s == SUBMIT, ev_s == SCHEDULE
    grp_end = np.repeat(np.r_[starts[1:], n], np.diff(np.r_[starts, n]))  # exclusive end of own group

    def next_at_or_after(mask: np.ndarray) -> np.ndarray:
        nx = np.where(mask, idx, n)
        return np.minimum.accumulate(nx[::-1])[::-1]

    nxt_sch = np.r_[next_at_or_after(is_sch)[1:], n]  # strictly after
    nxt_sub = np.r_[next_at_or_after(is_sub)[1:], n]
    nxt_term = np.r_[next_at_or_after((ev_s == FINISH) | g.is_bad())[1:], n]
    prev_sub = np.maximum.accumulate(np.where(is_sub, idx, -1))
    grp_start = np.repeat(starts, np.diff(np.r_[starts, n]))
    # records: SUBMIT events, plus SCHEDULEs with no SUBMIT before them in the slice
    sub_rows = np.flatnonzero(is_sub)
    orphan_rows = np.flatnonzero(is_sch & (prev_sub < grp_start))
    rec_sub = np.r_[sub_rows, orphan_rows]
    cand = pd.DataFrame(
        {
            "sub": rec_sub,
            "sch": np.r_[nxt_sch[sub_rows], orphan_rows],
            "is_orphan": np.r_[np.zeros(sub_rows.size, bool), np.ones(orphan_rows.size, bool)],
        }
    )
    cand = cand.iloc[np.argsort(rec_sub, kind="stable")].reset_index(drop=True)
    return cand, grp_end, nxt_sub, nxt_term


def _attempts(g: _Groups, events: GoogleTaskEvents, rep: FilterReport, pre: bool, end_us: float) -> _Picked:
    """One job per scheduled SUBMIT for the ``attempts`` lifecycle (module docstring); runs still going at
    ``end_us`` (µs) are truncated there (right-censored)."""
    n, t_s = g.n, g.t
    cand, grp_end, nxt_sub, nxt_term = _attempt_records(g)
    filt = Filtering(cand, rep)
    cs, cc, co = cand["sub"].to_numpy(), cand["sch"].to_numpy(), cand["is_orphan"].to_numpy()
    filt.keep(~co, "SCHEDULE without a SUBMIT in the slice")
    scheduled = (cc < grp_end[cs]) & (cc < nxt_sub[cs])
    filt.keep(scheduled[~co], "never scheduled (killed while pending, or pending at the end of the slice)")
    ok = ~co & scheduled
    filt.keep(((t_s[cs] > 0) | pre)[ok], "submitted before the window (t=0)")
    c = filt.df
    sub_i, sch_i = c["sub"].to_numpy(), c["sch"].to_numpy()
    term = nxt_term[sch_i]
    has_term = term < grp_end[sch_i]
    end_t = np.where(has_term, t_s[np.minimum(term, n - 1)], end_us).astype(np.float64)
    dur_us = end_t - t_s[sch_i]
    neg = dur_us < 0
    if neg.any():
        k = int(np.flatnonzero(neg)[0])
        f, line = events.where(int(g.order[term[k]]))
        raise TraceFormatError(
            f"{f}: line {line}, field 'time': negative duration: the run ends at "
            f"{int(end_t[k])} µs, before its SCHEDULE at {t_s[sch_i[k]]} µs"
        )
    censored = ~has_term
    rep.modify("running at the end of the slice: duration truncated there (right-censored)", int(censored.sum()))
    return filt, sub_i, sch_i, t_s[sub_i], dur_us, censored


def _job_columns(
    e: pd.DataFrame,
    rs: np.ndarray,
    rb: np.ndarray,
    arrival_us: np.ndarray,
    dur_us: np.ndarray,
    censored: np.ndarray | None,
) -> pd.DataFrame:
    """The job table: values from the SCHEDULE record (rows ``rs`` of ``e``, in file order), requests
    falling back to the SUBMIT record (rows ``rb``); times in seconds."""

    def pick(col: str) -> np.ndarray:
        v = e[col].to_numpy()
        a, b = v[rs], v[rb]
        return np.where(np.isnan(a), b, a) if a.dtype.kind == "f" else a

    jobs = pd.DataFrame(
        {
            "arrival": arrival_us / 1e6,
            "duration": dur_us / 1e6,
            "cpu": pick("cpu"),
            "memory": pick("memory"),
            "disk": pick("disk"),
            "priority": e["priority"].to_numpy()[rs].astype(np.int64),
            "scheduling_class": e["sched_class"].to_numpy()[rs].astype(np.int64),
            "job_id": e["job"].to_numpy()[rs],
            "task_index": e["task"].to_numpy()[rs],
            "submit_time": arrival_us / 1e6,
        }
    )
    if censored is not None:
        jobs["censored"] = censored
    return jobs


def _filter_jobs(
    filt: Filtering,
    rep: FilterReport,
    band: Sequence[int] | None,
    missing_requests: str,
    min_duration: float | None,
    window: tuple[float | None, float | None] | None,
    first_n: int | None,
) -> pd.DataFrame:
    """Priority band, missing requests, minimum duration, window and first N, in that order; sorted by arrival."""
    if band is not None:
        filt.keep(filt.df["priority"].isin(band).to_numpy(), f"priority not in {list(band)}")
    jobs = filt.df
    miss = jobs["cpu"].isna().to_numpy() | jobs["memory"].isna().to_numpy()
    if missing_requests == "drop":
        filt.keep(~miss, "missing CPU or memory request")
    else:
        rep.modify("missing CPU/memory/disk request read as 0", int(miss.sum()))
        filt.df = filt.df.fillna({"cpu": 0.0, "memory": 0.0, "disk": 0.0})
    filt.min_duration(min_duration)
    filt.window_first("arrival", window, first_n)
    filt.df = filt.df.sort_values("arrival", kind="stable")
    return filt.done()


def load_google(
    trace_dir: str | os.PathLike[str] | None = None,
    *,
    task_events: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    parts: int | None = None,
    **options: Any,
) -> TraceTable:
    """Read Google task_events and build the job table: :func:`read_task_events` + :func:`google_tasks`.

    ``options`` are :func:`google_tasks`'s (lifecycle, priorities, window, first_n, ...).
    """
    return google_tasks(read_task_events(task_events, trace_dir=trace_dir, parts=parts), **options)


# ---------------------------------------------------------------------------------------------- job events

_JOB_COLS = [
    Col("time", 0, "int", label="time"),
    Col("job", 2, "int", label="job ID"),
    Col("event", 3, "int", label="event type"),
    Col("sched_class", 5, "int", required=False, label="scheduling class"),
]


def load_google_job_events(
    trace_dir: str | os.PathLike[str] | None = None,
    *,
    files: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    parts: int | None = None,
) -> tuple[pd.DataFrame, FilterReport]:
    """Read job_events parts (8 fields, no header): time (µs), job ID, event type, scheduling class.

    Returns:
        the events (columns ``time`` µs, ``job``, ``event``, ``sched_class``) in file order, and a
        report whose ``counts`` holds the events per type and the number of jobs.
    """
    if files is None:
        d = trace_path("google", "job_events", trace_dir=trace_dir)
        paths = sorted(d.glob("part-*.csv.gz")) or sorted(d.glob("part-*.csv"))
        if not paths:
            raise TraceNotFoundError(f"{d} holds no part-*.csv.gz files")
    else:
        paths = _as_files(files)
    paths = paths[:parts] if parts is not None else paths
    frames = [read_table(p, _JOB_COLS, header=False, nfields=8, what="Google job_events part") for p in paths]
    ev = pd.concat(frames, ignore_index=True)
    ev["event"] = ev["event"].astype(np.int8)
    bad = ~ev["event"].between(0, 8).to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        cum = np.cumsum([0] + [len(f) for f in frames])
        fi = int(np.searchsorted(cum, i, side="right") - 1)
        raise TraceFormatError(
            f"{paths[fi]}: line {i - cum[fi] + 1}, field 'event type': outside 0..8: {ev['event'].iloc[i]}"
        )
    rep = FilterReport(
        str(paths[0].parent) if len(paths) > 1 else str(paths[0]), rows=len(ev), records=len(ev), kept=len(ev)
    )
    cnt = np.bincount(ev["event"].to_numpy(), minlength=9)
    rep.counts["events"] = {EVENT_TYPES[i]: int(cnt[i]) for i in range(9)}
    rep.counts["jobs"] = int(ev["job"].nunique())
    rep.steps.append("Google job_events read (no filtering)")
    return ev, rep


# ---------------------------------------------------------------------------------------------- machines

_MACHINE_COLS = [
    Col("time", 0, "int", label="time"),
    Col("machine", 1, "int", label="machine ID"),
    Col("event", 2, "int", label="event type"),
    Col("platform", 3, "str", required=False, label="platform ID"),
    Col("cpu", 4, "float", required=False, label="CPUs"),
    Col("memory", 5, "float", required=False, label="Memory"),
]


def _check_machine_events(p: Path, m: pd.DataFrame) -> None:
    """Event types 0-2 and non-negative capacities, or an error naming the line."""
    bad = ~m["event"].between(0, 2).to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TraceFormatError(
            f"{p}: line {i + 1}, field 'event type': expected 0 (ADD), 1 (REMOVE) or 2 (UPDATE), "
            f"got {m['event'].iloc[i]}"
        )
    for col in ("cpu", "memory"):
        neg = m[col].to_numpy() < 0
        if neg.any():
            i = int(np.flatnonzero(neg)[0])
            raise TraceFormatError(
                f"{p}: line {i + 1}, field '{'CPUs' if col == 'cpu' else 'Memory'}': "
                f"negative capacity {m[col].iloc[i]!r}"
            )


def load_google_machines(
    trace_dir: str | os.PathLike[str] | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    at: float | None = 0.0,
    capacity: Literal["last", "first"] = "last",
) -> tuple[pd.DataFrame, FilterReport]:
    """Machines and their (CPU, memory) capacities from machine_events.

    Args:
        path: the machine_events file (default ``google-clusterdata-2011-2/machine_events/part-00000-of-00001.csv.gz``).
        at: trace seconds; the machines present at that time (ADD/UPDATE at or before it, not REMOVEd
            since), with their latest capacity.  ``None``: every machine that ever appears in the
            file (the whole month), with its ``capacity`` = ``last`` (or ``first``) known capacity.
            ``at=None, capacity="last"`` rounded to 2 decimals reproduces LoTES Table 1 exactly
            (12,583 machines: 6732, 3863, 1001, 795, 126, 52, 5, 5, 3, 1).

    Returns:
        ``(machines, report)``: columns ``machine_id``, ``cpu``, ``memory`` (normalised, largest = 1),
        ``platform``; machines without a known capacity are dropped and counted.
    """
    p = (
        Path(path)
        if path is not None
        else trace_path("google", "machine_events", "part-00000-of-00001.csv.gz", trace_dir=trace_dir)
    )
    m = read_table(p, _MACHINE_COLS, header=False, nfields=6, what="Google machine_events file")
    _check_machine_events(p, m)
    rep = FilterReport(str(p), rows=len(m))
    cnt = np.bincount(m["event"].to_numpy(), minlength=3)
    rep.counts["events"] = {"ADD": int(cnt[0]), "REMOVE": int(cnt[1]), "UPDATE": int(cnt[2])}
    rep.counts["machines_ever"] = int(m["machine"].nunique())
    choice(capacity, "capacity", ("last", "first"))
    m = m.assign(row=np.arange(len(m)))
    if at is None:
        known = m[m["event"] != 1].dropna(subset=["cpu", "memory"])
        pick = (
            known.groupby("machine", sort=False).tail(1)
            if capacity == "last"
            else known.groupby("machine", sort=False).head(1)
        )
        cand = pd.DataFrame({"machine": m["machine"].unique()})
        cand = cand.merge(pick[["machine", "cpu", "memory", "platform"]], on="machine", how="left")
        filt = Filtering(cand, rep)
        filt.keep(cand["cpu"].notna().to_numpy() & cand["memory"].notna().to_numpy(), "no known capacity")
        rep.steps.append(f"every machine ever seen, with its {capacity} known capacity (ADD or UPDATE)")
    else:
        t_us = float(at) * 1e6
        upto = m[m["time"] <= t_us]
        lastev = upto.sort_values(["machine", "row"], kind="stable").groupby("machine", sort=False).tail(1)
        cand = lastev[["machine", "event"]].reset_index(drop=True)
        caps = (
            upto[upto["event"] != 1]
            .dropna(subset=["cpu", "memory"])
            .sort_values(["machine", "row"], kind="stable")
            .groupby("machine", sort=False)
            .tail(1)
        )
        cand = cand.merge(caps[["machine", "cpu", "memory", "platform"]], on="machine", how="left")
        rep.counts["machines_seen_by_then"] = int(len(cand))
        filt = Filtering(cand, rep)
        filt.keep((cand["event"] != 1).to_numpy(), f"removed at or before t={at:g} s")
        filt.keep(filt.df["cpu"].notna().to_numpy() & filt.df["memory"].notna().to_numpy(), "no known capacity")
        rep.steps.append(f"machines present at trace time {at:g} s with their latest capacity")
    out = filt.done()
    out = out.rename(columns={"machine": "machine_id"})[["machine_id", "cpu", "memory", "platform"]]
    return out, rep


def machine_shape_counts(machines: pd.DataFrame, decimals: int | None = None) -> pd.DataFrame:
    """Distinct (cpu, memory) capacities with their machine counts, most common first (LoTES Table 1).

    ``decimals`` rounds the capacities first (Table 1 prints 2 decimals: 0.4995 -> 0.50).
    """
    df = machines[["cpu", "memory"]]
    if decimals is not None:
        df = df.round(int(decimals))
    out = df.groupby(["cpu", "memory"], sort=False).size().rename("count").reset_index()
    return out.sort_values(["count", "cpu", "memory"], ascending=[False, False, False], kind="stable").reset_index(
        drop=True
    )
