"""Trace-driven scenarios: presets for the papers' trace setups, and ``kind: trace`` workloads in scenario files.

Presets (:data:`TRACE_PRESETS`; each a function of documented keyword parameters returning a
:class:`~clustergym.scenarios.spec.Scenario`; ``scenario.params["trace_report"]`` holds the
loader's filter report and ``scenario.params["preprocessing"]`` the steps):

* :func:`rms_google` -- rms.md §4.8: non-production, completed-without-interruption Google
  tasks; size = max of CPU and memory rounded up to 1/2^p (p <= 9), 10 types; 1000 unit servers.
* :func:`bfjs_google` -- bfjs-vqs.md §3.4: completed-without-interruption tasks, demand
  max(cpu, mem) clamped at 1e-3, 100 ms slots; 1000 unit servers.
* :func:`lotes_google` -- lotes.md §3.2: every SUBMIT-SCHEDULE attempt (initial batch at t=0),
  CPU and memory; the 10 machine configurations of machine_events (Table 1); 4 k-means classes.
* :func:`autoscale_google` -- autoscale.md §3.6: a loss system; tasks completed in the window,
  size rounded up to 1/2^p, reward = size x 1/3/9 by priority band; types = (band, size).
* :func:`alibaba_gpu` -- Alibaba GPU v2023: pods with CPU, memory and GPU on the 1,523
  heterogeneous nodes of the trace (GPU as a third resource).

Loaded tables are cached per process (keyed by the files' paths, sizes and mtimes and the
options), so building a preset twice reads the trace once; :func:`clear_cache` empties it.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clustergym.core.simulator import EpochConfig
from clustergym.errors import ScenarioError, TraceFormatError
from clustergym.scenarios.spec import Scenario
from clustergym.traces import transforms as T
from clustergym.traces.alibaba import (
    load_alibaba_gpu_v2023,
    load_alibaba_gpu_v2023_nodes,
    load_alibaba_gpu_v2025,
    load_alibaba_v2017,
    load_cloudsimpy_jobs,
)
from clustergym.traces.azure import load_azure_v1
from clustergym.traces.google import (
    GoogleTaskEvents,
    google_tasks,
    load_google_machines,
    machine_configurations,
    read_task_events,
    task_event_files,
)
from clustergym.traces.paths import trace_path
from clustergym.traces.table import TraceTable
from clustergym.workloads.replay import ReplaySource

__all__ = ["TRACE_PRESETS", "FORMATS", "rms_google", "google_bf_replay", "bfjs_google", "lotes_google", "autoscale_google", "alibaba_gpu",
           "load_trace", "apply_transforms", "trace_workload_from_spec", "clear_cache", "filter_names",
           "pow_half_names"]

PathLike = str | os.PathLike[str]

# ---------------------------------------------------------------------------------------------- caching

_CACHE: dict[Any, Any] = {}
_EVENTS: dict[Any, GoogleTaskEvents] = {}
_CACHE_MAX = 16


def clear_cache() -> None:
    """Forget every cached trace table and the cached Google task events."""
    _CACHE.clear()
    _EVENTS.clear()


def _stamp(paths: list[Path]) -> tuple:
    out = []
    for p in paths:
        try:
            st = p.stat()
            out.append((str(p.resolve()), st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((str(p), -1, -1))
    return tuple(out)


def _freeze(x: Any) -> Any:
    if isinstance(x, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    if isinstance(x, os.PathLike):
        return os.fspath(x)
    return x


def _cached(key: Any, build: Callable[[], Any]) -> Any:
    if key in _CACHE:
        return _CACHE[key]
    val = build()
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = val
    return val


def _google_events(trace_dir: PathLike | None, task_events: Any = None) -> GoogleTaskEvents:
    files = task_event_files(trace_dir) if task_events is None else None
    if files is None:
        ev = read_task_events(task_events)
        return ev
    key = _stamp(files)
    if key not in _EVENTS:
        _EVENTS.clear()  # keep one event set (about 110 MB for the 2.6 M-row slice)
        _EVENTS[key] = read_task_events(files)
    return _EVENTS[key]


def _google_table(trace_dir: PathLike | None, **opts: Any) -> TraceTable:
    files = task_event_files(trace_dir)
    return _cached(("google", _stamp(files), _freeze(opts)), lambda: google_tasks(_google_events(trace_dir), **opts))


# ---------------------------------------------------------------------------------------------- helpers

def _pos(name: str, value: Any, *, integer: bool = False, allow_none: bool = False, allow_inf: bool = False) -> Any:
    if value is None and allow_none:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ScenarioError(f"params.{name}", f"expected a number, got {value!r}") from None
    if math.isnan(v) or v <= 0 or (math.isinf(v) and not allow_inf):
        raise ScenarioError(f"params.{name}", f"must be > 0{'' if allow_inf else ' and finite'}, got {value!r}")
    if integer:
        if v != int(v):
            raise ScenarioError(f"params.{name}", f"expected a whole number, got {value!r}")
        return int(v)
    return v


def pow_half_names(p_max: int = 9) -> tuple[str, ...]:
    """Type names ``"1", "1/2", ..., "1/512"`` for the power-of-1/2 sizes."""
    return tuple("1" if p == 0 else f"1/{2 ** p}" for p in range(int(p_max) + 1))


def _scaled_counts(counts: np.ndarray, scale: float) -> np.ndarray:
    """Scale machine counts, keeping at least one machine of every configuration."""
    return np.maximum(1, np.rint(counts * scale)).astype(np.int64)


def _params(scope: dict[str, Any], table: TraceTable, steps: list[str], **extra: Any) -> dict[str, Any]:
    p = {k: (os.fspath(v) if isinstance(v, os.PathLike) else v) for k, v in scope.items()}
    p.update(extra)
    p["jobs"] = len(table)
    p["preprocessing"] = list(table.report.steps) + steps
    p["trace_report"] = table.report.to_dict()
    return p


# ---------------------------------------------------------------------------------------------- presets

def rms_google(num_servers: int = 1000, traffic_scaling: float = 1.0, first_n: int | None = None, p_max: int = 9,
               horizon: float = math.inf, queue_cap: int | None = None, trace_dir: str | None = None) -> Scenario:
    """RMS on the Google trace (rms.md §4.8, Figs. 7-8), 1-D power-of-1/2 sizes on unit servers.

    Preprocessing: Google task_events, lifecycle ``strict`` (exactly one SCHEDULE, ends with its
    only FINISH, no EVICT/FAIL/KILL/LOST, SUBMIT > 0), priorities 0-8 (non-production);
    arrival = SUBMIT in seconds from the first, times 1/traffic_scaling; duration = FINISH -
    SCHEDULE (not scaled); type p = min(p(cpu), p(mem)) with p(x) = min(p_max, floor(log2(1/x))),
    size 2^-p (the max of the rounded-up CPU and memory).  Dummy jobs of type p live
    Exp(mean = the empirical mean duration of type p).  Objective: mean queue length.

    Args:
        num_servers: L unit servers (the paper: 1000).
        traffic_scaling: 1/alpha; arrival times are divided by it (1.25 = 25% more traffic).
        first_n: the first N kept arrivals (the paper: 10^6; the 19.7 h shared slice has 288,424).
        p_max: the largest exponent (10 types for 9).
        horizon: simulated seconds (``inf``: until every task has finished).
        queue_cap: waiting tasks beyond which the run stops as unstable (``None``: no cap).
        trace_dir: the trace directory (default ``$CLUSTERGYM_TRACES`` or ``../shared/traces``).
    """
    scope = dict(locals())
    L = _pos("num_servers", num_servers, integer=True)
    s = _pos("traffic_scaling", traffic_scaling)
    p_max = int(p_max)
    if not 0 <= p_max <= 30:
        raise ScenarioError("params.p_max", f"expected 0..30, got {p_max}")
    first_n = _pos("first_n", first_n, integer=True, allow_none=True)
    table = _google_table(trace_dir, lifecycle="strict", priorities="non-production", first_n=first_n)
    jobs = table.jobs
    p = T.rms_type(jobs["cpu"].to_numpy(), jobs["memory"].to_numpy(), p_max=p_max)
    source = ReplaySource(T.scale_arrivals(jobs["arrival"].to_numpy(), s), np.ldexp(1.0, -p), jobs["duration"].to_numpy(),
                          type=p, type_demand=T.pow_half_type_demand(p_max), names=pow_half_names(p_max),
                          source=table.source, columns={"time": "arrival", "work": "duration", "type": "type",
                                                        "demand": ["size"]})
    steps = [f"type p = min(p(cpu), p(mem)), p(x) = min({p_max}, floor(log2(1/x))); size = 2^-p",
             f"arrivals divided by traffic_scaling = {s:g}"]
    return Scenario(
        name="rms-google", capacity=np.ones((L, 1)), source=source, resources=("size",),
        horizon=_pos("horizon", horizon, allow_inf=True), objective="queue", queue_cap=queue_cap,
        description="RMS Google trace: non-production completed tasks, 10 power-of-1/2 types, L unit servers",
        params=_params(scope, table, steps, jobs_per_type=np.bincount(p, minlength=p_max + 1).tolist(),
                       mean_duration_per_type=source.types.mean_work.tolist()),
    )


def google_bf_replay(num_servers: int = 420, first_n: int | None = None, horizon: float = math.inf,
                     queue_cap: int | None = None, trace_dir: str | None = None) -> Scenario:
    """The performance benchmark's replay (issue #10): completed Google tasks, CPU and memory, unit servers.

    Preprocessing: Google task_events, lifecycle ``finished`` (first SUBMIT inside the slice,
    the last non-UPDATE event a FINISH; interruptions and resubmissions allowed), all
    priorities; arrival = first SUBMIT in seconds from the first kept one; duration = FINISH -
    last SCHEDULE (seconds); demand = (CPU request, memory request), normalised to the largest
    machine.  ``num_servers`` identical servers of capacity (1, 1), one central FIFO queue.
    Run it with ``best-fit --set agent.scan=64`` (Best-Fit over the first 64 queued jobs at every
    arrival and completion); ``benchmarks/simpy_bestfit.py`` is the same run written with SimPy.

    Args:
        num_servers: L servers of capacity (1, 1) (the benchmark: 420).
        first_n: the first N kept arrivals (``None``: all 310,705 of the shared 19.7 h slice).
        horizon: simulated seconds (``inf``: until every task has finished).
        queue_cap: waiting tasks beyond which the run stops as unstable (``None``: no cap).
        trace_dir: the trace directory (default ``$CLUSTERGYM_TRACES`` or ``../shared/traces``).
    """
    scope = dict(locals())
    L = _pos("num_servers", num_servers, integer=True)
    first_n = _pos("first_n", first_n, integer=True, allow_none=True)
    table = _google_table(trace_dir, lifecycle="finished", first_n=first_n)
    jobs = table.jobs
    demand = np.column_stack([jobs["cpu"].to_numpy(dtype=float), jobs["memory"].to_numpy(dtype=float)])
    source = ReplaySource(jobs["arrival"].to_numpy(), demand, jobs["duration"].to_numpy(), source=table.source,
                          columns={"time": "arrival", "work": "duration", "demand": ["cpu", "memory"]})
    return Scenario(
        name="google-bf-replay", capacity=np.ones((L, 2)), source=source, resources=("cpu", "memory"),
        horizon=_pos("horizon", horizon, allow_inf=True), objective="queue", queue_cap=queue_cap,
        description="Google 2011 completed tasks (CPU, memory) on L servers of capacity (1, 1): the benchmark replay",
        params=_params(scope, table, ["demand = (cpu, memory) requests; capacity (1, 1) per server"]),
    )


_SLOT_EPOCHS = EpochConfig(arrivals=False, completions=False, dummy_completions=False, tick_period=1.0)


def bfjs_google(num_servers: int = 1000, traffic_scaling: float = 1.0, first_n: int | None = None,
                min_demand: float = 1e-3, slot: float = 0.1, horizon: float = math.inf, queue_cap: int | None = None,
                trace_dir: str | None = None) -> Scenario:
    """BF-J/S, VQS on the Google trace (bfjs-vqs.md §3.4, Fig. 5), in slotted time.

    Preprocessing: lifecycle ``strict`` (all priorities, SUBMIT > 0); demand = max(cpu, mem),
    raised to ``min_demand`` when smaller (counted); time unit = one slot of ``slot`` seconds:
    arrival slot = floor((SUBMIT - first) / traffic_scaling / slot), duration = max(1,
    ceil(duration / slot)) slots (not scaled).  Decision epochs: one tick per slot, after the
    slot's departures and arrivals.  Objective: mean queue length (per slot).

    Args:
        num_servers: L unit servers (the paper: 1000).
        traffic_scaling: 1/beta (the paper: 1 to 1.6).
        first_n: the first N kept arrivals (the paper: ~10^6 over ~1.5 days).
        min_demand: the clamp of tiny demands.
        slot: seconds per slot (the paper: 100 ms).
        horizon: simulated slots (``inf``: until every task has finished).
    """
    scope = dict(locals())
    L = _pos("num_servers", num_servers, integer=True)
    s = _pos("traffic_scaling", traffic_scaling)
    slot = _pos("slot", slot)
    md = _pos("min_demand", min_demand)
    first_n = _pos("first_n", first_n, integer=True, allow_none=True)
    table = _google_table(trace_dir, lifecycle="strict", first_n=first_n)
    jobs = table.jobs
    demand, clamped = T.clamp_min(T.max_demand(jobs["cpu"].to_numpy(), jobs["memory"].to_numpy()), md)
    arr = np.floor(T.scale_arrivals(jobs["arrival"].to_numpy(), s) / slot)
    dur = np.maximum(1.0, np.ceil(jobs["duration"].to_numpy() / slot - 1e-9))
    source = ReplaySource(arr, demand, dur, source=table.source,
                          columns={"time": "arrival slot", "work": "duration slots", "demand": ["max(cpu, memory)"]})
    steps = ["demand = max(cpu, memory)", f"demand raised to min_demand = {md:g} for {clamped} tasks",
             f"time in slots of {slot:g} s; arrival slot = floor(arrival / {s:g} / slot), duration = max(1, ceil(d / slot))"]
    return Scenario(
        name="bfjs-google", capacity=np.ones((L, 1)), source=source, resources=("size",),
        horizon=_pos("horizon", horizon, allow_inf=True), objective="queue", queue_cap=queue_cap,
        epochs=_SLOT_EPOCHS,
        description="BF-J/S Google trace: completed tasks, demand max(cpu, mem), 100 ms slots, L unit servers",
        params=_params(scope, table, steps, clamped=clamped),
    )


def lotes_google(machine_scale: float = 1.0, k: int = 4, fit_hours: float = 24.0, first_n: int | None = None,
                 decimals: int = 2, seed: int = 0, horizon: float = math.inf, queue_cap: int | None = None,
                 trace_dir: str | None = None) -> Scenario:
    """LoTES on the Google trace (lotes.md §3.2), 2 resources on 10 heterogeneous machine configurations.

    Machines: every machine of machine_events with its last known (CPU, memory) capacity, rounded
    to ``decimals`` (2 reproduces Table 1 exactly: 6732, 3863, 1001, 795, 126, 52, 5, 5, 3, 1),
    counts times ``machine_scale`` (at least one per configuration), configurations in Table-1
    order (most machines first).  Jobs: lifecycle ``attempts`` -- one job per SUBMIT followed by
    a SCHEDULE, tasks present at the trace start arrive at t=0 (the initial batch), duration =
    SCHEDULE -> next FINISH/EVICT/FAIL/KILL/LOST, truncated at the end of the slice.  Classes:
    k-means (k-means++, ``seed``) on (CPU, memory) of the jobs arriving in the first
    ``fit_hours`` hours (the 19.7 h shared slice is shorter than a day: all of it), every job
    assigned to its nearest centroid; the class is the job's type.  Jobs larger than every
    machine are rejected at arrival and counted.  Objective: jobs waiting (mean wait by Little's law).

    Args:
        machine_scale: fraction of each configuration's machines (1.0 = the 12,583 of Table 1).
        k: job classes.
        fit_hours: the clustering window from the first arrival.
        first_n: the first N attempts by arrival.
        decimals: rounding of machine capacities (``None`` keeps the raw values).
        seed: k-means seed.
    """
    scope = dict(locals())
    scale = _pos("machine_scale", machine_scale)
    k = _pos("k", k, integer=True)
    fit_h = _pos("fit_hours", fit_hours)
    first_n = _pos("first_n", first_n, integer=True, allow_none=True)
    mpath = trace_path("google", "machine_events", "part-00000-of-00001.csv.gz", trace_dir=trace_dir)
    machines, mrep = _cached(("google-machines", _stamp([mpath])), lambda: load_google_machines(path=mpath, at=None))
    conf = machine_configurations(machines, decimals=None if decimals is None else int(decimals))
    counts = _scaled_counts(conf["count"].to_numpy(), scale)
    cap = np.repeat(conf[["cpu", "memory"]].to_numpy(), counts, axis=0)
    table = _google_table(trace_dir, lifecycle="attempts", first_n=first_n)
    jobs = table.jobs
    X = jobs[["cpu", "memory"]].to_numpy()
    fit = jobs["arrival"].to_numpy() < fit_h * 3600.0
    labels, centroids = _cached(("kmeans", _stamp(task_event_files(trace_dir)), first_n, k, fit_h, int(seed)),
                                lambda: T.kmeans_classes(X, k, fit_mask=fit, seed=int(seed)))
    classes = T.class_table(labels, jobs["duration"].to_numpy(), {"cpu": X[:, 0], "memory": X[:, 1]}, k)
    source = ReplaySource(jobs["arrival"].to_numpy(), X, jobs["duration"].to_numpy(), type=labels,
                          names=tuple(f"class{j + 1}" for j in range(k)), source=table.source,
                          columns={"time": "arrival", "work": "duration", "type": "class", "demand": ["cpu", "memory"]})
    steps = [f"machines: {len(cap)} in {len(conf)} configurations (scale {scale:g}) from machine_events",
             f"k-means k={k} on (cpu, memory) of the {int(fit.sum())} jobs of the first {fit_h:g} h; all jobs "
             "assigned to the nearest centroid"]
    return Scenario(
        name="lotes-google", capacity=cap, source=source, resources=("cpu", "memory"),
        horizon=_pos("horizon", horizon, allow_inf=True), objective="queue", queue_cap=queue_cap,
        description="LoTES Google trace: every attempt, 10 machine configurations (Table 1), k-means classes",
        params=_params(scope, table, steps, machine_configurations=[
            {"cpu": float(c), "memory": float(m), "count": int(n)}
            for c, m, n in zip(conf["cpu"], conf["memory"], counts)],
            machines_report=mrep.to_dict(), centroids=centroids.tolist(),
            classes=classes.to_dict("records")),
    )


def autoscale_google(num_servers: int = 1000, first_n: int | None = None, p_max: int = 9,
                     traffic_scaling: float = 1.0, horizon: float = math.inf, trace_dir: str | None = None) -> Scenario:
    """Auto-scaling on the Google trace (autoscale.md §3.6, §5 item 19): admit or reject, with rewards.

    Preprocessing: lifecycle ``finished`` (first SUBMIT > 0, ends with FINISH; interruptions
    allowed), duration = FINISH - last SCHEDULE; size = max(cpu, mem) rounded up to 1/2^p
    (p <= p_max); priority band 0 = trace {0, 1}, 1 = {2..8}, 2 = {9, 10, 11} (the spec's guess);
    reward rate = size x (1, 3, 9)[band]; type = band x (p_max + 1) + p (tasks have the same type
    iff band and size agree).  Servers: L of size 1.  Queueing: loss; objective: reward.
    """
    scope = dict(locals())
    L = _pos("num_servers", num_servers, integer=True)
    s = _pos("traffic_scaling", traffic_scaling)
    p_max = int(p_max)
    first_n = _pos("first_n", first_n, integer=True, allow_none=True)
    table = _google_table(trace_dir, lifecycle="finished", first_n=first_n)
    jobs = table.jobs
    p = T.rms_type(jobs["cpu"].to_numpy(), jobs["memory"].to_numpy(), p_max=p_max)
    band = T.map_priority(jobs["priority"].to_numpy(), "autoscale-band").astype(np.int64)
    size = np.ldexp(1.0, -p)
    reward = size * T.map_priority(jobs["priority"].to_numpy(), "autoscale-factor")
    J = 3 * (p_max + 1)
    typ = band * (p_max + 1) + p
    td = np.tile(T.pow_half_type_demand(p_max), (3, 1))
    names = tuple(f"b{b}:{n}" for b in range(3) for n in pow_half_names(p_max))
    source = ReplaySource(T.scale_arrivals(jobs["arrival"].to_numpy(), s), size, jobs["duration"].to_numpy(), type=typ,
                          reward_rate=reward, type_demand=td, names=names, source=table.source)
    steps = ["size = max(cpu, mem) rounded up to 1/2^p", "band: {0,1} -> 0, {2..8} -> 1, {9,10,11} -> 2",
             "reward rate = size x (1, 3, 9)[band]", f"type = band x {p_max + 1} + p ({J} types)",
             f"arrivals divided by traffic_scaling = {s:g}"]
    return Scenario(
        name="autoscale-google", capacity=np.ones((L, 1)), source=source, resources=("size",),
        horizon=_pos("horizon", horizon, allow_inf=True), objective="reward", queueing="loss",
        description="Auto-scaling Google trace: admit/reject tasks, reward = size x 1/3/9 by priority band",
        params=_params(scope, table, steps, jobs_per_band=np.bincount(band, minlength=3).tolist()),
    )


def alibaba_gpu(node_scale: float = 1.0, clip_before: float | None = 10_000_000.0, first_n: int | None = None,
                traffic_scaling: float = 1.0, horizon: float = math.inf, queue_cap: int | None = None,
                trace_dir: str | None = None) -> Scenario:
    """Alibaba GPU v2023: pods with (CPU, memory, GPU) demands on the trace's 1,523 heterogeneous nodes.

    Preprocessing: pods in phase Running/Succeeded/Failed (Pending pods never ran); demands
    cpu_milli/1000 vCPU, memory_mib/1024 GiB, num_gpu x gpu_milli/1000 GPUs; arrival = creation,
    duration = deletion - scheduled_time; pods created before ``clip_before`` (1 % long-running
    pods, before the 10.01 M s main window) arrive at it with their remaining lifetime, those
    deleted by then are dropped; arrivals from the first kept one, divided by traffic_scaling.
    Nodes: (cpu, memory GiB, GPU count) of ``openb_node_list_all_node.csv``; with
    ``node_scale < 1`` every distinct node shape keeps that fraction (at least one).  A node's
    GPUs are pooled into one resource: a 0.46-GPU pod needs 0.46 of the node's GPU total (the
    per-GPU packing of GPU sharing is not modelled).  Objective: mean queue length.
    """
    scope = dict(locals())
    scale = _pos("node_scale", node_scale)
    s = _pos("traffic_scaling", traffic_scaling)
    first_n = _pos("first_n", first_n, integer=True, allow_none=True)
    ppath = trace_path("alibaba-gpu-v2023", "openb_pod_list_default.csv", trace_dir=trace_dir)
    npath = trace_path("alibaba-gpu-v2023", "openb_node_list_all_node.csv", trace_dir=trace_dir)
    table = _cached(("v2023", _stamp([ppath]), clip_before, first_n),
                    lambda: load_alibaba_gpu_v2023(path=ppath, clip_before=clip_before, first_n=first_n))
    nodes, nrep = load_alibaba_gpu_v2023_nodes(path=npath)
    shapes = nodes.groupby(["cpu", "memory", "gpu"], sort=False).size().rename("count").reset_index()
    shapes = shapes.sort_values(["count", "gpu", "cpu", "memory"], ascending=False, kind="stable")
    counts = _scaled_counts(shapes["count"].to_numpy(), scale) if scale != 1.0 else shapes["count"].to_numpy()
    cap = np.repeat(shapes[["cpu", "memory", "gpu"]].to_numpy(), counts, axis=0)
    jobs = table.jobs
    source = ReplaySource(T.scale_arrivals(jobs["arrival"].to_numpy(), s), jobs[["cpu", "memory", "gpu"]].to_numpy(),
                          jobs["duration"].to_numpy(), source=table.source,
                          columns={"time": "arrival", "work": "duration", "demand": ["cpu", "memory", "gpu"]})
    steps = [f"nodes: {len(cap)} of {len(nodes)} ({len(shapes)} shapes, scale {scale:g}); GPUs pooled per node",
             f"arrivals divided by traffic_scaling = {s:g}"]
    return Scenario(
        name="alibaba-gpu", capacity=cap, source=source, resources=("cpu", "memory", "gpu"),
        horizon=_pos("horizon", horizon, allow_inf=True), objective="queue", queue_cap=queue_cap,
        description="Alibaba GPU v2023: pods with CPU, memory and GPU on 1,523 heterogeneous nodes",
        params=_params(scope, table, steps, nodes_report=nrep.to_dict(), node_shapes=len(shapes)),
    )


#: name -> (builder, one-line description); registered into clustergym.scenarios.presets.PRESETS by the owner
TRACE_PRESETS: dict[str, tuple[Callable[..., Scenario], str]] = {
    "rms-google": (rms_google, "RMS Google trace: non-production completed tasks, 10 power-of-1/2 types, "
                               "1000 unit servers (rms.md §4.8)"),
    "bfjs-google": (bfjs_google, "BF-J/S Google trace: completed tasks, demand max(cpu, mem), 100 ms slots, "
                                 "1000 unit servers (bfjs-vqs.md §3.4)"),
    "lotes-google": (lotes_google, "LoTES Google trace: all attempts, Table-1 machine configurations, k-means "
                                   "classes (lotes.md §3.2)"),
    "autoscale-google": (autoscale_google, "Auto-scaling Google trace: loss system, reward size x 1/3/9 by "
                                           "priority (autoscale.md §3.6)"),
    "alibaba-gpu": (alibaba_gpu, "Alibaba GPU v2023 pods (CPU, memory, GPU) on 1,523 heterogeneous nodes"),
    "google-bf-replay": (google_bf_replay, "Google 2011 completed tasks (CPU, memory) on 420 unit servers: the "
                                           "performance benchmark's Best-Fit replay (issue #10)"),
}


# ---------------------------------------------------------------------------------------------- formats

def _google_loader(path: PathLike | None = None, trace_dir: PathLike | None = None, **opts: Any) -> TraceTable:
    return google_tasks(_google_events(trace_dir, path), **opts)


def _path_loader(fn: Callable[..., TraceTable], path_arg: str = "path") -> Callable[..., TraceTable]:
    def load(path: PathLike | None = None, trace_dir: PathLike | None = None, **opts: Any) -> TraceTable:
        if path is not None:
            opts[path_arg] = path
        return fn(trace_dir, **opts)
    load.__wrapped__ = fn  # type: ignore[attr-defined]
    return load


#: format -> (loader(path=None, trace_dir=None, **filters), the function whose keyword options are the filters)
FORMATS: dict[str, tuple[Callable[..., TraceTable], Callable[..., Any]]] = {
    "google": (_google_loader, google_tasks),
    "alibaba-v2017": (_path_loader(load_alibaba_v2017), load_alibaba_v2017),
    "cloudsimpy": (_path_loader(load_cloudsimpy_jobs), load_cloudsimpy_jobs),
    "alibaba-gpu-v2023": (_path_loader(load_alibaba_gpu_v2023), load_alibaba_gpu_v2023),
    "alibaba-gpu-v2025": (_path_loader(load_alibaba_gpu_v2025), load_alibaba_gpu_v2025),
    "azure": (_path_loader(load_azure_v1, "flavors_path"), load_azure_v1),
}

_NOT_FILTERS = {"trace_dir", "path", "flavors_path", "events", "self"}


def filter_names(fmt: str) -> list[str]:
    """The filter (keyword option) names a format's loader accepts."""
    fn = FORMATS[fmt][1]
    return [k for k, p in inspect.signature(fn).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and k not in _NOT_FILTERS]


def _coerce_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(filters)
    for k in ("window",):
        if k in out and isinstance(out[k], list):
            out[k] = tuple(out[k])
    for k in ("statuses", "phases", "roles"):
        if k in out and isinstance(out[k], str):
            out[k] = [out[k]]
    return out


def load_trace(fmt: str, path: PathLike | None = None, *, trace_dir: PathLike | None = None,
               **filters: Any) -> TraceTable:
    """Load any supported format by name with its filters (see :data:`FORMATS`).

    Raises:
        ScenarioError: unknown format or filter (naming it); TraceFormatError for malformed files.
    """
    if fmt not in FORMATS:
        raise ScenarioError("format", f"unknown trace format {fmt!r}; expected one of {sorted(FORMATS)}")
    allowed = filter_names(fmt)
    for key in filters:
        if key not in allowed:
            raise ScenarioError(f"filters.{key}", f"format {fmt!r} has no filter {key!r}; it takes {sorted(allowed)}")
    loader = FORMATS[fmt][0]
    return loader(path, trace_dir, **_coerce_filters(filters))


# ---------------------------------------------------------------------------------------------- transforms on tables

def _col(table: TraceTable, name: Any, field: str) -> np.ndarray:
    if not isinstance(name, str) or name not in table.jobs.columns:
        raise ScenarioError(field, f"no column {name!r}; columns are {list(table.jobs.columns)}")
    v = table.jobs[name]
    if not pd.api.types.is_numeric_dtype(v):
        raise ScenarioError(field, f"column {name!r} is not numeric")
    return v.to_numpy(dtype=np.float64)


def apply_transforms(table: TraceTable, transforms: Any, field: str = "transforms") -> tuple[TraceTable, dict[str, Any]]:
    """Apply a list of transforms (scenario-file form) to a table, in order.

    Each item is a one-key mapping ``{name: arguments}``:

    ``rms_type: {columns: [cpu, memory], p_max: 9, as: size, type_as: type}``
        type p = min over columns of p(x); ``as`` = 2^-p; sets power-of-1/2 ``type_demand``.
    ``round_up_pow_half: {column: cpu, p_max: 9, as: cpu}``
    ``max_of: {columns: [cpu, memory], as: size}``
    ``clamp_min: {column: size, min: 0.001}``
    ``scale: {column: cpu, factor: 0.01, as: cpu}`` (unit conversion)
    ``kmeans: {columns: [cpu, memory], k: 4, fit_hours: 24, seed: 0, standardize: false, as: class}``
    ``priority_map: {map: autoscale-factor | {"0-1": 1, ...}, column: priority, as: weight, times: size}``
    ``scale_arrivals: {traffic_scaling: 1.25}``
    ``window: {start: 0, end: 3600}`` (seconds on ``arrival``)
    ``first_n: 1000``
    ``rebase: {}`` (arrivals start at 0)

    Returns:
        the new table and hints for the source: ``type_demand`` and ``names`` when ``rms_type`` ran.

    Raises:
        ScenarioError: naming ``<field>[i].<name>.<argument>``.
    """
    hints: dict[str, Any] = {}
    if transforms is None:
        return table, hints
    if not isinstance(transforms, list):
        raise ScenarioError(field, f"expected a list of {{name: arguments}} items, got {type(transforms).__name__}")
    for i, item in enumerate(transforms):
        f = f"{field}[{i}]"
        if not isinstance(item, Mapping) or len(item) != 1:
            raise ScenarioError(f, f"expected a mapping with one transform name, got {item!r}")
        name, args = next(iter(item.items()))
        f = f"{f}.{name}"
        if name not in _TRANSFORMS:
            raise ScenarioError(f, f"unknown transform; expected one of {sorted(_TRANSFORMS)}")
        fn, allowed = _TRANSFORMS[name]
        if name == "first_n" and not isinstance(args, Mapping):
            args = {"n": args}
        args = {} if args is None else args
        if not isinstance(args, Mapping):
            raise ScenarioError(f, f"expected a mapping of arguments, got {args!r}")
        for k in args:
            if k not in allowed:
                raise ScenarioError(f"{f}.{k}", f"unknown argument; expected one of {sorted(allowed)}")
        try:
            table = fn(table, dict(args), f, hints)
        except ScenarioError as e:
            if e.field.startswith(f):
                raise
            raise ScenarioError(f"{f}.{e.field}" if e.field else f, e.problem) from None
    return table, hints


def _num_arg(args: Mapping[str, Any], key: str, f: str, default: Any = None, *, positive: bool = False) -> Any:
    v = args.get(key, default)
    if v is None:
        raise ScenarioError(f"{f}.{key}", "missing required argument")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ScenarioError(f"{f}.{key}", f"expected a number, got {v!r}")
    if positive and not v > 0:
        raise ScenarioError(f"{f}.{key}", f"must be > 0, got {v!r}")
    return v


def _cols_arg(args: Mapping[str, Any], f: str, default: list[str]) -> list[str]:
    cols = args.get("columns", default)
    if isinstance(cols, str):
        cols = [cols]
    if not isinstance(cols, list) or not cols:
        raise ScenarioError(f"{f}.columns", f"expected a list of column names, got {cols!r}")
    return cols


def _t_rms_type(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    cols = _cols_arg(a, f, ["cpu", "memory"])
    p_max = int(_num_arg(a, "p_max", f, 9))
    p = T.rms_type(*[_col(t, c, f"{f}.columns") for c in cols], p_max=p_max)
    out, tcol = str(a.get("as", "size")), str(a.get("type_as", "type"))
    hints["type_demand"] = T.pow_half_type_demand(p_max)
    hints["names"] = pow_half_names(p_max)
    hints["type_column"] = tcol
    hints["size_column"] = out
    return t.replace(t.jobs.assign(**{out: np.ldexp(1.0, -p), tcol: p}),
                     step=f"{out} = 2^-p, {tcol} = p = min over {cols} of min({p_max}, floor(log2(1/x)))")


def _t_round(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    c = a.get("column")
    p_max = int(_num_arg(a, "p_max", f, 9))
    out = str(a.get("as", c))
    return t.replace(t.jobs.assign(**{out: T.round_up_pow_half(_col(t, c, f"{f}.column"), p_max)}),
                     step=f"{out} = {c} rounded up to a power of 1/2 (p <= {p_max})")


def _t_max(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    cols = _cols_arg(a, f, ["cpu", "memory"])
    out = str(a.get("as", "size"))
    return t.replace(t.jobs.assign(**{out: T.max_demand(*[_col(t, c, f"{f}.columns") for c in cols])}),
                     step=f"{out} = max({', '.join(cols)})")


def _t_clamp(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    c = a.get("column")
    m = _num_arg(a, "min", f)
    v, n = T.clamp_min(_col(t, c, f"{f}.column"), m)
    return t.replace(t.jobs.assign(**{str(c): v}), step=f"{c} raised to {m:g} where smaller",
                     modified={f"{c} raised to {m:g}": n})


def _t_scale(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    c = a.get("column")
    k = _num_arg(a, "factor", f, positive=True)
    out = str(a.get("as", c))
    return t.replace(t.jobs.assign(**{out: _col(t, c, f"{f}.column") * float(k)}), step=f"{out} = {c} x {k:g}")


def _t_kmeans(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    default = ["cpu", "memory"] if {"cpu", "memory"} <= set(t.jobs.columns) else list(t.resources)
    cols = _cols_arg(a, f, default)
    k = int(_num_arg(a, "k", f, 4, positive=True))
    X = np.column_stack([_col(t, c, f"{f}.columns") for c in cols])
    fit = None
    if "fit_hours" in a:
        fit = t.jobs["arrival"].to_numpy() < float(_num_arg(a, "fit_hours", f, positive=True)) * 3600.0
    labels, C = T.kmeans_classes(X, k, fit_mask=fit, seed=int(_num_arg(a, "seed", f, 0)),
                                 standardize=bool(a.get("standardize", False)))
    out = str(a.get("as", "class"))
    hints["type_column"] = out
    hints["names"] = tuple(f"class{j + 1}" for j in range(k))
    hints.pop("type_demand", None)
    return t.replace(t.jobs.assign(**{out: labels}), step=f"{out} = k-means (k={k}) on {cols}; centroids {C.tolist()}")


def _t_priority(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    mapping = a.get("map")
    if mapping is None:
        raise ScenarioError(f"{f}.map", "missing required argument (a map name or a mapping)")
    c = a.get("column", "priority")
    v = T.map_priority(_col(t, c, f"{f}.column"), mapping)
    if "times" in a:
        v = v * _col(t, a["times"], f"{f}.times")
    out = str(a.get("as", "weight"))
    return t.replace(t.jobs.assign(**{out: v}), step=f"{out} = map({c}, {mapping})" +
                     (f" x {a['times']}" if "times" in a else ""))


def _t_scale_arrivals(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    s = _num_arg(a, "traffic_scaling", f, positive=True)
    return t.replace(t.jobs.assign(arrival=T.scale_arrivals(t.jobs["arrival"].to_numpy(), s)),
                     step=f"arrivals divided by traffic_scaling = {s:g}")


def _t_window(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    lo, hi = a.get("start"), a.get("end")
    for key, v in (("start", lo), ("end", hi)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise ScenarioError(f"{f}.{key}", f"expected a number, got {v!r}")
    df, n = T.window(t.jobs, lo, hi)
    return t.replace(df, step=f"window [{lo}, {hi}) s on arrival", dropped={f"outside the window [{lo}, {hi}) s": n})


def _t_first_n(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    n = a.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ScenarioError(f"{f}", f"expected a whole number >= 1, got {n!r}")
    df, d = T.first_n(t.jobs, n)
    return t.replace(df, step=f"the first {n} arrivals", dropped={f"after the first {n} arrivals": d})


def _t_rebase(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    a0, o = T.rebase(t.jobs["arrival"].to_numpy())
    return t.replace(t.jobs.assign(arrival=a0), step=f"arrivals shifted by -{o:g} s", origin=t.origin + o)


_TRANSFORMS: dict[str, tuple[Callable[[TraceTable, dict, str, dict], TraceTable], set[str]]] = {
    "rms_type": (_t_rms_type, {"columns", "p_max", "as", "type_as"}),
    "round_up_pow_half": (_t_round, {"column", "p_max", "as"}),
    "max_of": (_t_max, {"columns", "as"}),
    "clamp_min": (_t_clamp, {"column", "min"}),
    "scale": (_t_scale, {"column", "factor", "as"}),
    "kmeans": (_t_kmeans, {"columns", "k", "fit_hours", "seed", "standardize", "as"}),
    "priority_map": (_t_priority, {"map", "column", "as", "times"}),
    "scale_arrivals": (_t_scale_arrivals, {"traffic_scaling"}),
    "window": (_t_window, {"start", "end"}),
    "first_n": (_t_first_n, {"n"}),
    "rebase": (_t_rebase, set()),
}

_SPEC_KEYS = {"kind", "format", "path", "trace_dir", "filters", "transforms", "demand", "type", "weight",
              "reward_rate", "time_scale"}


def trace_workload_from_spec(spec: Mapping[str, Any], field: str, num_resources: int,
                             base_dir: str | os.PathLike[str]) -> ReplaySource:
    """A ``kind: trace`` workload of a scenario file, as a :class:`ReplaySource`.

    Fields of ``spec`` (``kind`` and ``time_scale`` belong to the caller and are ignored here)::

        format: google          # google | alibaba-v2017 | cloudsimpy | alibaba-gpu-v2023 | alibaba-gpu-v2025 | azure
        path: traces/task_events  # optional file or directory, relative to the scenario file
        trace_dir: /data/traces   # optional; default $CLUSTERGYM_TRACES or ../shared/traces
        filters: {lifecycle: strict, priorities: non-production, first_n: 20000}   # the loader's options
        transforms: [{rms_type: {p_max: 9}}]                                       # see apply_transforms
        demand: [size]          # columns, one per resource (default: the format's resources)
        type: type              # optional column of job types (default: set by rms_type/kmeans)
        weight: weight          # optional column
        reward_rate: reward     # optional column

    Raises:
        ScenarioError: whose field is ``<field>.<key>...``; a malformed trace file is reported
            under ``<field>.path`` with the file, line and field in the message.
    """
    if not isinstance(spec, Mapping):
        raise ScenarioError(field, f"expected a mapping, got {type(spec).__name__}")
    for k in spec:
        if k not in _SPEC_KEYS:
            raise ScenarioError(f"{field}.{k}", f"unknown field; expected one of {sorted(_SPEC_KEYS)}")
    fmt = spec.get("format")
    if fmt is None:
        raise ScenarioError(f"{field}.format", "missing required field for kind 'trace'")
    if fmt not in FORMATS:
        raise ScenarioError(f"{field}.format", f"expected one of {sorted(FORMATS)}, got {fmt!r}")
    base = Path(base_dir)
    path = spec.get("path")
    if path is not None:
        if not isinstance(path, str):
            raise ScenarioError(f"{field}.path", f"expected a file or directory name, got {path!r}")
        path = Path(path).expanduser()
        if not path.is_absolute():
            path = base / path
    trace_dir = spec.get("trace_dir")
    if trace_dir is not None:
        trace_dir = Path(str(trace_dir)).expanduser()
        if not trace_dir.is_absolute():
            trace_dir = base / trace_dir
    filters = spec.get("filters") or {}
    if not isinstance(filters, Mapping):
        raise ScenarioError(f"{field}.filters", f"expected a mapping, got {type(filters).__name__}")
    try:
        table = load_trace(fmt, path, trace_dir=trace_dir, **filters)
    except TraceFormatError as e:
        raise ScenarioError(f"{field}.path", str(e)) from None
    except ScenarioError as e:
        if e.field == "trace_dir":
            raise ScenarioError(f"{field}.{'path' if path is not None else 'trace_dir'}", e.problem) from None
        sub = e.field if e.field.startswith("filters.") else f"filters.{e.field}"
        raise ScenarioError(f"{field}.{sub}", e.problem) from None
    table, hints = apply_transforms(table, spec.get("transforms"), f"{field}.transforms")
    if "demand" in spec:
        demand = spec["demand"]
    elif len(table.resources) == num_resources:
        demand = list(table.resources)
    elif num_resources == 1 and "size" in table.jobs.columns:
        demand = ["size"]
    else:
        raise ScenarioError(f"{field}.demand", f"missing: the scenario has {num_resources} resources and the "
                                               f"trace's are {list(table.resources)}; name {num_resources} columns "
                                               f"of {list(table.jobs.columns)}")
    if isinstance(demand, str):
        demand = [demand]
    if not isinstance(demand, list) or not all(isinstance(c, str) for c in demand):
        raise ScenarioError(f"{field}.demand", f"expected a list of column names, got {demand!r}")
    if len(demand) != num_resources:
        raise ScenarioError(f"{field}.demand", f"expected {num_resources} columns (one per resource), got {demand} "
                                               f"(the table has {list(table.jobs.columns)})")
    for c in demand:
        _col(table, c, f"{field}.demand")
    type_col = spec.get("type", hints.get("type_column"))
    same = type_col is not None and type_col == hints.get("type_column")
    names = hints.get("names") if same else None
    type_demand = hints.get("type_demand") if same else None
    if type_demand is not None:
        if all(c == hints.get("size_column") for c in demand):
            type_demand = np.repeat(type_demand[:, :1], num_resources, axis=1)
        else:
            type_demand = None  # the demand is not the rounded size: let the source derive nominal demands
    for key, col in (("type", type_col), ("weight", spec.get("weight")), ("reward_rate", spec.get("reward_rate"))):
        if col is not None:
            _col(table, col, f"{field}.{key}")
    try:
        return table.to_source(demand, type=type_col, type_demand=type_demand, names=names,
                               weight=spec.get("weight"), reward_rate=spec.get("reward_rate"))
    except TraceFormatError as e:
        raise ScenarioError(field, str(e)) from None
