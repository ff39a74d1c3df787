"""Alibaba traces: cluster-trace-v2017 batch tasks (+ CloudSimPy's preprocessing), GPU v2023 pods, GPU v2025 instances.

Every loader returns a :class:`~clustergym.traces.table.TraceTable` in seconds, with
demands in the trace's natural units converted to whole units:

======================== ===================== ======================================================
loader                   resources             units
======================== ===================== ======================================================
load_alibaba_v2017       cpu, memory           cores (plan_cpu / 100); memory normalised to a machine
load_cloudsimpy_jobs     cpu, memory, disk     cores; normalised memory; disk (always 0 in the file)
load_alibaba_gpu_v2023   cpu, memory, gpu      vCPU (cpu_milli / 1000); GiB (memory_mib / 1024);
                                               GPUs (num_gpu x gpu_milli / 1000: 0.46 = a 46 % share)
load_alibaba_gpu_v2025   cpu, gpu, rdma,       vCPU; GPUs; % of one RNIC; GiB; GiB
                         memory, disk
======================== ===================== ======================================================

Censoring (documented per loader, counted in the report):

* v2017: tasks with status Running/Waiting have not ended (``task_end_time`` is the last
  state change, often 0); by default only ``Terminated`` tasks are kept.  Tasks created at or
  before 0 started before the window (dropped unless ``include_pre_window``).
  ``duration = task_end_time - task_create_time`` is the *task* makespan over all its
  instances, not one instance's run time (the per-instance table is not in the snapshot).
* GPU v2023: no explicit censoring marker; ``pod_phase`` is the phase at collection time.
  Pending pods never ran (dropped by the default phase filter).  1 % of pods were created long
  before the main window (10.01 M s onwards): ``clip_before=t`` makes pods created before ``t``
  arrive at ``t`` with their remaining lifetime (left-censoring), dropping those already gone.
* GPU v2025: ``creation_time`` is empty for instances that existed before the trace
  (left-censored: dropped, or arrive at 0 with ``left_censored="at_start"``); ``deletion_time``
  is empty for instances alive at its end (right-censored: duration truncated at the trace end
  by default, flagged in the ``censored`` column, or dropped).

A job's ``duration`` is ``deletion - scheduled`` (run time) for the GPU traces by default
(``duration_from="scheduled"``; ``"creation"`` gives the pod lifetime).  A negative duration in
a row that passes the filters is a malformed trace: :class:`~clustergym.errors.TraceFormatError`
naming the file and line (``invalid="drop"`` counts and drops such rows instead).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from clustergym.errors import ScenarioError, TraceFormatError
from clustergym.traces._csv import Col, check_exists, open_text, read_table
from clustergym.traces.paths import trace_path
from clustergym.traces.table import Filtering, FilterReport, TraceTable
from clustergym.validation import choice

__all__ = [
    "load_alibaba_v2017",
    "load_alibaba_v2017_machines",
    "load_cloudsimpy_jobs",
    "load_alibaba_gpu_v2023",
    "load_alibaba_gpu_v2023_nodes",
    "load_alibaba_gpu_v2025",
]

PathLike = str | os.PathLike[str]
Invalid = Literal["error", "drop"]


# ---------------------------------------------------------------------------------------------- shared steps


def _check_invalid(invalid: str) -> None:
    choice(invalid, "invalid", ("error", "drop"))


def _durations(
    filt: Filtering, path: Path, line: np.ndarray, field: str, invalid: str, min_duration: float | None
) -> None:
    """Negative durations: error (naming the line) or drop; zero: drop, or raise to ``min_duration``."""
    d = filt.df["duration"].to_numpy(dtype=np.float64)
    neg = d < 0
    if neg.any():
        if invalid == "error":
            k = int(np.flatnonzero(neg)[0])
            more = int(neg.sum()) - 1
            raise TraceFormatError(
                f"{path}: line {int(line[filt.df.index[k]])}, field '{field}': negative duration "
                f"{d[k]:g} s (the end precedes the start)"
                + (f" (and {more} more lines)" if more else "")
                + "; pass invalid='drop' to drop and count such rows"
            )
        filt.keep(~neg, "negative duration (end before start)")
    filt.min_duration(min_duration)


def _reject(path: Path, line: np.ndarray, field: str, bad: np.ndarray, problem: str, values: np.ndarray) -> None:
    """Raise ``"<path>: line <n>, field '<field>': <problem><value>"`` for the first row where ``bad`` holds
    (``line``: the file line of each row)."""
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TraceFormatError(f"{path}: line {int(line[i])}, field '{field}': {problem}{values[i]!r}")


def _window_first(
    filt: Filtering, window: tuple[float | None, float | None] | None, first_n: int | None, column: str, unit: str = "s"
) -> None:
    filt.window_first(column, window, first_n, unit)


def _finish(
    filt: Filtering,
    rep: FilterReport,
    time_col: str,
    fmt: str,
    resources: tuple[str, ...],
    units: dict[str, str],
    step: str,
) -> TraceTable:
    filt.df = filt.df.sort_values(time_col, kind="stable")
    jobs = filt.done()
    origin = float(jobs[time_col].iloc[0]) if len(jobs) else 0.0
    jobs.insert(0, "arrival", jobs[time_col].to_numpy(dtype=np.float64) - origin)
    rep.steps.append(step + f"; arrival = {time_col} - {origin:g} s (the first kept arrival)")
    return TraceTable(
        jobs=jobs,
        resources=resources,
        units={"arrival": "s", "duration": "s", **units},
        report=rep,
        format=fmt,
        origin=origin,
    )


def _has_header(path: Path) -> bool:
    with open_text(path) as fh:
        first = fh.readline()
    try:
        float(next(csv.reader([first]))[0])
    except (ValueError, IndexError, StopIteration):
        return True
    return False


# ---------------------------------------------------------------------------------------------- v2017

_V2017_FIELDS = [
    "task_create_time",
    "task_end_time",
    "job_id",
    "task_id",
    "number_of_instances",
    "status",
    "number_of_cpus_requested_per_instance_in_the_task",
    "normalized_memory_requested_per_instance_in_the_task",
]
_V2017_STATUSES = ("Terminated", "Failed", "Running", "Waiting")


def _read_v2017(p: Path) -> tuple[pd.DataFrame, np.ndarray, pd.Series]:
    """The batch_task rows (with or without a header line), the file line of each and its stripped status."""
    check_exists(p, "Alibaba v2017 batch_task")
    header = _has_header(p)
    kinds = ["int", "int", "int", "int", "int", "str", "float", "float"]
    required = [True, True, True, True, True, True, False, False]
    cols = [
        Col(n, n if header else i, k, r, label=n)
        for i, (n, k, r) in enumerate(zip(_V2017_FIELDS, kinds, required, strict=True))
    ]
    raw = read_table(p, cols, header=header, nfields=8, what="Alibaba v2017 batch_task")
    off = 2 if header else 1
    line = np.arange(len(raw)) + off
    st = raw["status"].astype(str).str.strip()
    unknown = ~st.isin(_V2017_STATUSES).to_numpy()
    if unknown.any():
        i = int(np.flatnonzero(unknown)[0])
        raise TraceFormatError(
            f"{p}: line {int(line[i])}, field 'status': unknown status {st.iloc[i]!r} "
            f"(expected one of {list(_V2017_STATUSES)})"
        )
    return raw, line, st


def load_alibaba_v2017(
    trace_dir: PathLike | None = None,
    *,
    path: PathLike | None = None,
    statuses: Sequence[str] = ("Terminated",),
    include_pre_window: bool = False,
    window: tuple[float | None, float | None] | None = None,
    first_n: int | None = None,
    min_duration: float | None = None,
    invalid: Invalid = "error",
) -> TraceTable:
    """Alibaba cluster-trace-v2017 ``batch_task`` (with or without the header line), one job per task.

    Columns: create time (s), end time (s), job id, task id, instances, status, plan_cpu
    (1/100 core per instance), plan_mem (normalised per instance).

    Filters, in order: status not in ``statuses`` (Running/Waiting tasks have not ended:
    right-censored); no CPU/memory plan; created at or before 0 (before the window; kept with
    ``include_pre_window``); negative duration (error unless ``invalid="drop"``); zero duration
    (dropped, or raised to ``min_duration``); ``window`` on the create time; the first ``first_n``.

    Returns:
        columns ``arrival, duration, cpu, memory, instances, job_id, task_id, status, create_time``.
    """
    _check_invalid(invalid)
    bad = [s for s in statuses if s not in _V2017_STATUSES]
    if bad or isinstance(statuses, str):
        raise ScenarioError("statuses", f"expected a list of {list(_V2017_STATUSES)}, got {statuses!r}")
    p = (
        Path(path)
        if path is not None
        else trace_path("alibaba-v2017", "batch_task.csv.gz", trace_dir=trace_dir, alternatives=("batch_task.csv",))
    )
    raw, line, st = _read_v2017(p)
    rep = FilterReport(str(p), rows=len(raw))
    rep.counts["status"] = {k: int(v) for k, v in st.value_counts().items()}
    rep.counts["jobs"] = int(raw["job_id"].nunique())
    rep.counts["instances"] = int(raw["number_of_instances"].sum())
    df = pd.DataFrame(
        {
            "duration": (raw["task_end_time"] - raw["task_create_time"]).to_numpy(np.float64),
            "cpu": raw[_V2017_FIELDS[6]].to_numpy(np.float64) / 100.0,
            "memory": raw[_V2017_FIELDS[7]].to_numpy(np.float64),
            "instances": raw["number_of_instances"].to_numpy(np.int64),
            "job_id": raw["job_id"].to_numpy(np.int64),
            "task_id": raw["task_id"].to_numpy(np.int64),
            "status": st.to_numpy(),
            "create_time": raw["task_create_time"].to_numpy(np.float64),
        }
    )
    for c, lab in (("cpu", _V2017_FIELDS[6]), ("memory", _V2017_FIELDS[7])):
        _reject(p, line, lab, df[c].to_numpy() < 0, "negative request ", df[c].to_numpy())
    filt = Filtering(df, rep)
    filt.keep(df["status"].isin(list(statuses)).to_numpy(), f"status not in {list(statuses)} (not ended: censored)")
    d = filt.df
    filt.keep((d["cpu"].notna() & d["memory"].notna()).to_numpy(), "no CPU/memory plan")
    if not include_pre_window:
        filt.keep((filt.df["create_time"] > 0).to_numpy(), "created at or before 0 (before the window)")
    _durations(filt, p, line, "task_end_time", invalid, min_duration)
    _window_first(filt, window, first_n, "create_time")
    return _finish(
        filt,
        rep,
        "create_time",
        "alibaba-v2017",
        ("cpu", "memory"),
        {"cpu": "cores", "memory": "normalized (machine = 1)", "create_time": "s (trace)"},
        f"Alibaba v2017 batch_task, statuses {list(statuses)}; cpu = plan_cpu/100 cores; "
        "duration = task_end_time - task_create_time (task makespan)",
    )


def load_alibaba_v2017_machines(
    trace_dir: PathLike | None = None, *, path: PathLike | None = None
) -> tuple[pd.DataFrame, FilterReport]:
    """v2017 ``server_event.csv`` (no header): time, machine, event (add/softerror/...), detail, cores, mem, disk.

    Returns the machines with an ``add`` event (first add per machine): columns ``machine_id``,
    ``cpu`` (cores), ``memory`` and ``disk`` (normalised); other events are counted.
    """
    p = (
        Path(path)
        if path is not None
        else trace_path("alibaba-v2017", "server_event.csv", trace_dir=trace_dir, alternatives=("server_event.csv.gz",))
    )
    cols = [
        Col("time", 0, "int", label="timestamp"),
        Col("machine", 1, "int", label="machine ID"),
        Col("event", 2, "str", label="event type"),
        Col("cpu", 4, "float", False, label="CPU capacity"),
        Col("memory", 5, "float", False, label="memory capacity"),
        Col("disk", 6, "float", False, label="disk capacity"),
    ]
    m = read_table(p, cols, header=False, nfields=7, what="Alibaba v2017 server_event")
    rep = FilterReport(str(p), rows=len(m))
    rep.counts["events"] = {str(k): int(v) for k, v in m["event"].value_counts().items()}
    cand = m[m["event"] == "add"].drop_duplicates("machine", keep="first")
    rep.counts["machines_ever"] = int(m["machine"].nunique())
    filt = Filtering(cand.reset_index(drop=True), rep)
    filt.keep(filt.df[["cpu", "memory"]].notna().all(axis=1).to_numpy(), "add event without capacity")
    out = filt.done().rename(columns={"machine": "machine_id"})[["machine_id", "cpu", "memory", "disk"]]
    rep.steps.append("machines with an 'add' event (first one), capacity from it")
    return out, rep


# ---------------------------------------------------------------------------------------------- CloudSimPy


def load_cloudsimpy_jobs(
    trace_dir: PathLike | None = None,
    *,
    path: PathLike | None = None,
    window: tuple[float | None, float | None] | None = None,
    first_n: int | None = None,
    min_duration: float | None = None,
    invalid: Invalid = "error",
) -> TraceTable:
    """CloudSimPy's preprocessed Alibaba v2017 jobs file (``jobs.csv``): one job per task row.

    Header ``,submit_time,duration,cpu,memory,job_id,task_id,instances_num,disk`` (the first
    column is a pandas index).  ``duration`` is the task's mean instance duration (s), ``cpu``
    cores per instance, ``memory`` normalised; ``instances`` instances share those values (the
    simulator sees one job per task).

    Returns:
        columns ``arrival, duration, cpu, memory, disk, instances, job_id, task_id, submit_time``.
    """
    _check_invalid(invalid)
    p = (
        Path(path)
        if path is not None
        else trace_path("cloudsimpy", "jobs.csv.gz", trace_dir=trace_dir, alternatives=("jobs.csv",))
    )
    cols = [
        Col("submit_time", "submit_time", "float"),
        Col("duration", "duration", "float"),
        Col("cpu", "cpu", "float"),
        Col("memory", "memory", "float"),
        Col("job_id", "job_id", "int"),
        Col("task_id", "task_id", "int"),
        Col("instances", "instances_num", "int"),
        Col("disk", "disk", "float", required=False),
    ]
    raw = read_table(p, cols, header=True, what="CloudSimPy jobs.csv")
    line = np.arange(len(raw)) + 2
    for c in ("submit_time", "cpu", "memory", "disk"):
        v = raw[c].to_numpy()
        _reject(p, line, c, (v < 0) | np.isinf(v), "negative or infinite value ", v)
    rep = FilterReport(str(p), rows=len(raw))
    rep.counts["jobs"] = int(raw["job_id"].nunique())
    rep.counts["instances"] = int(raw["instances"].sum())
    df = raw.assign(disk=raw["disk"].fillna(0.0))
    filt = Filtering(df, rep)
    _durations(filt, p, line, "duration", invalid, min_duration)
    _window_first(filt, window, first_n, "submit_time")
    t = _finish(
        filt,
        rep,
        "submit_time",
        "cloudsimpy",
        ("cpu", "memory", "disk"),
        {"cpu": "cores", "memory": "normalized (machine = 1)", "disk": "normalized", "submit_time": "s (trace)"},
        "CloudSimPy jobs.csv (Alibaba v2017, mean instance duration per task)",
    )
    cols_order = ["arrival", "duration", "cpu", "memory", "disk", "instances", "job_id", "task_id", "submit_time"]
    t.jobs = t.jobs[cols_order]
    return t


# ---------------------------------------------------------------------------------------------- GPU v2023

_V2023_PHASES = ("Running", "Succeeded", "Failed", "Pending")


_V2023_POD_COLS = [
    Col("cpu_milli", "cpu_milli", "float"),
    Col("memory_mib", "memory_mib", "float"),
    Col("num_gpu", "num_gpu", "int"),
    Col("gpu_milli", "gpu_milli", "float"),
    Col("qos", "qos", "str", required=False),
    Col("phase", "pod_phase", "str"),
    Col("creation_time", "creation_time", "float"),
    Col("deletion_time", "deletion_time", "float"),
    Col("scheduled_time", "scheduled_time", "float", required=False),
]


def _read_v2023_pods(p: Path) -> tuple[pd.DataFrame, np.ndarray, pd.Series]:
    """The pod rows with their ranges checked, the file line of each and the pod phase."""
    raw = read_table(p, _V2023_POD_COLS, header=True, what="Alibaba GPU v2023 pod list")
    line = np.arange(len(raw)) + 2
    for c in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time"):
        v = raw[c].to_numpy(dtype=np.float64)
        badv = (v < 0) | np.isinf(v)
        if c == "gpu_milli":
            badv |= v > 1000
        _reject(p, line, c, badv, "out of range: ", v)
    ph = raw["phase"].astype(str)
    unknown = ~ph.isin(_V2023_PHASES).to_numpy()
    if unknown.any():
        i = int(np.flatnonzero(unknown)[0])
        raise TraceFormatError(f"{p}: line {int(line[i])}, field 'pod_phase': unknown phase {ph.iloc[i]!r}")
    return raw, line, ph


def _clip_before(filt: Filtering, rep: FilterReport, cb: float) -> None:
    """Pods deleted by trace time ``cb`` (s) dropped; those created before it arrive at it with their
    remaining lifetime (left-censored, counted in ``modified``)."""
    d = filt.df
    filt.keep((d["deletion_time"] > cb).to_numpy(), f"deleted by clip_before={cb:g} s")
    d = filt.df
    early = (d["creation_time"] < cb).to_numpy()
    rep.modify(
        f"created before clip_before={cb:g} s: arrive then with the remaining lifetime (left-censored)",
        int(early.sum()),
    )
    newdur = np.where(early, d["deletion_time"].to_numpy() - cb, d["duration"].to_numpy())
    filt.df = d.assign(creation_time=np.where(early, cb, d["creation_time"].to_numpy()), duration=newdur)


def _v2023_frame(raw: pd.DataFrame, ph: pd.Series, duration_from: str) -> pd.DataFrame:
    """One row per pod: duration (s) from ``duration_from``, demands in vCPU, GiB and GPUs, and its times."""
    created = raw["creation_time"].to_numpy(np.float64)
    deleted = raw["deletion_time"].to_numpy(np.float64)
    sched = raw["scheduled_time"].to_numpy(np.float64)
    start = np.where(np.isfinite(sched), sched, created) if duration_from == "scheduled" else created
    return pd.DataFrame(
        {
            "duration": deleted - start,
            "cpu": raw["cpu_milli"].to_numpy(np.float64) / 1000.0,
            "memory": raw["memory_mib"].to_numpy(np.float64) / 1024.0,
            "gpu": raw["num_gpu"].to_numpy(np.float64) * raw["gpu_milli"].to_numpy(np.float64) / 1000.0,
            "num_gpu": raw["num_gpu"].to_numpy(np.int64),
            "gpu_milli": raw["gpu_milli"].to_numpy(np.float64),
            "qos": raw["qos"].to_numpy(),
            "phase": ph.to_numpy(),
            "creation_time": created,
            "deletion_time": deleted,
        }
    )


def load_alibaba_gpu_v2023(
    trace_dir: PathLike | None = None,
    *,
    path: PathLike | None = None,
    phases: Sequence[str] = ("Running", "Succeeded", "Failed"),
    duration_from: Literal["scheduled", "creation"] = "scheduled",
    clip_before: float | None = None,
    window: tuple[float | None, float | None] | None = None,
    first_n: int | None = None,
    min_duration: float | None = None,
    invalid: Invalid = "error",
) -> TraceTable:
    """Alibaba GPU v2023 pods (``openb_pod_list_default.csv``), one job per pod.

    Demands: ``cpu`` = cpu_milli/1000 vCPU, ``memory`` = memory_mib/1024 GiB, ``gpu`` =
    num_gpu x gpu_milli/1000 GPUs (a 1-GPU pod with gpu_milli 460 asks 0.46 of a GPU; multi-GPU
    pods have gpu_milli 1000).  Times are trace seconds.

    Args:
        phases: pod phases kept (Pending pods never ran: excluded by default).
        duration_from: ``scheduled``: deletion - scheduled_time (run time; creation for pods
            without one); ``creation``: deletion - creation (lifetime).
        clip_before: pods created before this trace time arrive at it with their remaining
            lifetime (left-censoring; counted in ``modified``); those deleted by then are dropped.
        window: on the (clipped) creation time, trace seconds.

    Returns:
        columns ``arrival, duration, cpu, memory, gpu, num_gpu, gpu_milli, qos, phase, creation_time``.
    """
    _check_invalid(invalid)
    choice(duration_from, "duration_from", ("scheduled", "creation"))
    bad = [s for s in phases if s not in _V2023_PHASES]
    if bad or isinstance(phases, str):
        raise ScenarioError("phases", f"expected a list of {list(_V2023_PHASES)}, got {phases!r}")
    p = (
        Path(path)
        if path is not None
        else trace_path(
            "alibaba-gpu-v2023",
            "openb_pod_list_default.csv",
            trace_dir=trace_dir,
            alternatives=("openb_pod_list_default.csv.gz",),
        )
    )
    raw, line, ph = _read_v2023_pods(p)
    rep = FilterReport(str(p), rows=len(raw))
    rep.counts["phase"] = {k: int(v) for k, v in ph.value_counts().items()}
    rep.counts["num_gpu"] = {int(k): int(v) for k, v in raw["num_gpu"].value_counts().sort_index().items()}
    df = _v2023_frame(raw, ph, duration_from)
    filt = Filtering(df, rep)
    filt.keep(df["phase"].isin(list(phases)).to_numpy(), f"phase not in {list(phases)}")
    if clip_before is not None:
        _clip_before(filt, rep, float(clip_before))
    _durations(filt, p, line, "deletion_time", invalid, min_duration)
    _window_first(filt, window, first_n, "creation_time")
    filt.df = filt.df.drop(columns=["deletion_time"])
    return _finish(
        filt,
        rep,
        "creation_time",
        "alibaba-gpu-v2023",
        ("cpu", "memory", "gpu"),
        {"cpu": "vCPU", "memory": "GiB", "gpu": "GPUs (fractional shares)", "creation_time": "s (trace)"},
        f"Alibaba GPU v2023 pods, phases {list(phases)}; duration from {duration_from}",
    )


def load_alibaba_gpu_v2023_nodes(
    trace_dir: PathLike | None = None, *, path: PathLike | None = None
) -> tuple[pd.DataFrame, FilterReport]:
    """GPU v2023 nodes (``openb_node_list_all_node.csv``): columns ``node``, ``cpu`` (vCPU),
    ``memory`` (GiB), ``gpu`` (count), ``model`` (empty = no GPU)."""
    p = (
        Path(path)
        if path is not None
        else trace_path("alibaba-gpu-v2023", "openb_node_list_all_node.csv", trace_dir=trace_dir)
    )
    cols = [
        Col("node", "sn", "str"),
        Col("cpu_milli", "cpu_milli", "float"),
        Col("memory_mib", "memory_mib", "float"),
        Col("gpu", "gpu", "int"),
        Col("model", "model", "str", required=False),
    ]
    raw = read_table(p, cols, header=True, what="Alibaba GPU v2023 node list")
    for c in ("cpu_milli", "memory_mib", "gpu"):
        v = raw[c].to_numpy(dtype=np.float64)
        if (v < 0).any():
            i = int(np.flatnonzero(v < 0)[0])
            raise TraceFormatError(f"{p}: line {i + 2}, field '{c}': negative capacity {v[i]!r}")
    out = pd.DataFrame(
        {
            "node": raw["node"].to_numpy(),
            "cpu": raw["cpu_milli"].to_numpy(np.float64) / 1000.0,
            "memory": raw["memory_mib"].to_numpy(np.float64) / 1024.0,
            "gpu": raw["gpu"].to_numpy(np.float64),
            "model": raw["model"].fillna("").astype(str).to_numpy(),
        }
    )
    rep = FilterReport(str(p), rows=len(out), records=len(out), kept=len(out))
    rep.counts["gpus"] = int(out["gpu"].sum())
    rep.counts["model"] = {(k or "none"): int(v) for k, v in out["model"].value_counts().items()}
    rep.steps.append("GPU v2023 nodes: cpu_milli/1000 vCPU, memory_mib/1024 GiB, gpu count")
    return out, rep


# ---------------------------------------------------------------------------------------------- GPU v2025


_V2025_COLS = [
    Col("role", "role", "str"),
    Col("app", "app_name", "str", required=False),
    Col("cpu", "cpu_request", "float"),
    Col("gpu", "gpu_request", "float"),
    Col("rdma", "rdma_request", "float"),
    Col("memory", "memory_request", "float"),
    Col("disk", "disk_request", "float"),
    Col("max_instance_per_node", "max_instance_per_node", "int"),
    Col("creation_time", "creation_time", "float", required=False),
    Col("scheduled_time", "scheduled_time", "float", required=False),
    Col("deletion_time", "deletion_time", "float", required=False),
]


def _v2025_censoring(filt: Filtering, rep: FilterReport, left: str, right: str, t_end: float) -> None:
    """Left-censored instances (no creation time) and right-censored ones (no deletion time; truncated at
    ``t_end`` s) dropped or kept and counted, as ``left``/``right`` say."""
    if left == "drop":
        filt.keep(~filt.df["_lc"].to_numpy(), "no creation time (existed before the trace: left-censored)")
    else:
        rep.modify("no creation time: arrive at 0 (left-censored)", int(filt.df["_lc"].sum()))
    if right == "drop":
        filt.keep(~filt.df["_rc"].to_numpy(), "no deletion time (alive at the end: right-censored)")
    else:
        rep.modify(f"no deletion time: duration truncated at {t_end:g} s (right-censored)", int(filt.df["_rc"].sum()))


def _v2025_frame(
    raw: pd.DataFrame, rep: FilterReport, duration_from: str, end_time: float | None
) -> tuple[pd.DataFrame, float]:
    """One row per instance (censoring flags in ``_lc``/``_rc``) and the end of the trace ``t_end`` (s);
    counts of roles and censoring in ``rep``."""
    created = raw["creation_time"].to_numpy(np.float64)
    deleted = raw["deletion_time"].to_numpy(np.float64)
    sched = raw["scheduled_time"].to_numpy(np.float64)
    t_end = float(np.nanmax(np.r_[created, deleted, sched])) if end_time is None else float(end_time)
    rep.counts["role"] = {str(k): int(v) for k, v in raw["role"].value_counts().items()}
    rep.counts["no_creation_time (left-censored)"] = int(np.isnan(created).sum())
    rep.counts["no_deletion_time (right-censored)"] = int(np.isnan(deleted).sum())
    rep.counts["both_times"] = int((~np.isnan(created) & ~np.isnan(deleted)).sum())
    rep.counts["end_time"] = t_end
    lc, rc = np.isnan(created), np.isnan(deleted)
    arr = np.where(lc, 0.0, created)
    start = np.where(np.isfinite(sched), sched, arr) if duration_from == "scheduled" else arr
    df = pd.DataFrame(
        {
            "duration": np.where(rc, t_end, deleted) - start,
            "cpu": raw["cpu"].to_numpy(np.float64),
            "gpu": raw["gpu"].to_numpy(np.float64),
            "rdma": raw["rdma"].to_numpy(np.float64),
            "memory": raw["memory"].to_numpy(np.float64),
            "disk": raw["disk"].to_numpy(np.float64),
            "role": raw["role"].astype(str).to_numpy(),
            "app": raw["app"].to_numpy(),
            "max_instance_per_node": raw["max_instance_per_node"].to_numpy(np.int64),
            "censored": lc | rc,
            "creation_time": arr,
            "_lc": lc,
            "_rc": rc,
        }
    )
    return df, t_end


def load_alibaba_gpu_v2025(
    trace_dir: PathLike | None = None,
    *,
    path: PathLike | None = None,
    roles: Sequence[str] | None = None,
    left_censored: Literal["drop", "at_start"] = "drop",
    right_censored: Literal["truncate", "drop"] = "truncate",
    end_time: float | None = None,
    duration_from: Literal["scheduled", "creation"] = "scheduled",
    window: tuple[float | None, float | None] | None = None,
    first_n: int | None = None,
    min_duration: float | None = None,
    invalid: Invalid = "error",
) -> TraceTable:
    """Alibaba GPU v2025 DLRM serving instances (``disaggregated_DLRM_trace.csv``), one job per instance.

    Demands (requests, not limits): ``cpu`` vCPU, ``gpu`` GPUs, ``rdma`` % of one RNIC's bandwidth,
    ``memory`` GiB, ``disk`` GiB.

    Args:
        roles: keep these roles (``CN`` CPU nodes, ``HN`` GPU nodes); ``None`` keeps all.
        left_censored: instances without a creation time existed before the trace: ``drop``
            them (counted), or let them arrive at time 0 (``at_start``; their duration is then a
            lower bound, flagged in ``censored``).
        right_censored: instances without a deletion time were alive at the end: ``truncate``
            their duration at ``end_time`` (default: the largest time in the file; flagged in
            ``censored``), or ``drop`` them.
        duration_from: ``scheduled`` (deletion - scheduled_time, else creation) or ``creation``.

    Returns:
        columns ``arrival, duration, cpu, gpu, rdma, memory, disk, role, app, max_instance_per_node,
        censored, creation_time``.
    """
    _check_invalid(invalid)
    choice(left_censored, "left_censored", ("drop", "at_start"))
    choice(right_censored, "right_censored", ("truncate", "drop"))
    choice(duration_from, "duration_from", ("scheduled", "creation"))
    p = (
        Path(path)
        if path is not None
        else trace_path(
            "alibaba-gpu-v2025",
            "disaggregated_DLRM_trace.csv.gz",
            trace_dir=trace_dir,
            alternatives=("disaggregated_DLRM_trace.csv",),
        )
    )
    raw = read_table(p, _V2025_COLS, header=True, what="Alibaba GPU v2025 DLRM trace")
    line = np.arange(len(raw)) + 2
    keys = {k.name: str(k.key) for k in _V2025_COLS}
    for c in ("cpu", "gpu", "rdma", "memory", "disk", "creation_time", "scheduled_time", "deletion_time"):
        v = raw[c].to_numpy(dtype=np.float64)
        _reject(p, line, keys[c], (v < 0) | np.isinf(v), "negative or infinite value ", v)
    rep = FilterReport(str(p), rows=len(raw))
    df, t_end = _v2025_frame(raw, rep, duration_from, end_time)
    filt = Filtering(df, rep)
    if roles is not None:
        filt.keep(df["role"].isin(list(roles)).to_numpy(), f"role not in {list(roles)}")
    _v2025_censoring(filt, rep, left_censored, right_censored, t_end)
    _durations(filt, p, line, "deletion_time", invalid, min_duration)
    _window_first(filt, window, first_n, "creation_time")
    filt.df = filt.df.drop(columns=["_lc", "_rc"])
    return _finish(
        filt,
        rep,
        "creation_time",
        "alibaba-gpu-v2025",
        ("cpu", "gpu", "rdma", "memory", "disk"),
        {
            "cpu": "vCPU",
            "gpu": "GPUs",
            "rdma": "% of one RNIC",
            "memory": "GiB",
            "disk": "GiB",
            "creation_time": "s (trace)",
        },
        f"Alibaba GPU v2025 DLRM instances; left-censored {left_censored}, right-censored {right_censored}",
    )
