"""Trace-driven presets: the papers' trace setups (each a function of documented keyword parameters).

``scenario.params["trace_report"]`` holds the loader's filter report and ``scenario.params["preprocessing"]``
the steps.  The trace files are read when a preset is built (not when this module is imported);
without them, building raises :class:`~clustergym.traces.paths.TraceNotFoundError` naming the directory.

* :func:`rms_google` -- the RMS paper's Google trace setup (Psychas & Ghaderi 2018, §VII-B):
  non-production, completed-without-interruption tasks; size = max of CPU and memory rounded up to
  1/2^p (p <= 9), 10 types; 1000 unit servers.
* :func:`bfjs_google` -- the BF-J/S paper's trace setup: completed-without-interruption tasks, demand
  max(cpu, mem) clamped at 1e-3, 100 ms slots; 1000 unit servers.
* :func:`lotes_google` -- LoTES Sec. 5.3: every SUBMIT-SCHEDULE attempt (initial batch at t=0), CPU and
  memory; the 10 machine configurations of machine_events; 4 k-means classes.
* :func:`autoscale_google` -- the auto-scaling paper's trace experiment: a loss system; tasks completed
  in the window, size rounded up to 1/2^p, reward = size x 1/3/9 by priority band; types = (band, size).
* :func:`alibaba_gpu` -- Alibaba GPU v2023: pods with CPU, memory and GPU on the 1,523 heterogeneous
  nodes of the trace (GPU as a third resource).
* :func:`google_bf_replay` -- completed Google tasks on 420 unit servers: the performance benchmark's
  Best-Fit replay.
* :func:`azure_vms` -- Azure V1 (2017) VM arrivals, flavours as job types, on a few hosts: each seed a
  random day of the trace, thinned (:class:`~clustergym.workloads.windows.TraceWindowSource`).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from clustergym.core.simulator import SLOT_EPOCHS
from clustergym.scenarios.spec import Scenario
from clustergym.traces import transforms as T
from clustergym.traces.alibaba import (
    load_alibaba_gpu_v2023,
    load_alibaba_gpu_v2023_nodes,
)
from clustergym.traces.cache import cached, file_stamp, google_table
from clustergym.traces.google import (
    load_google_machines,
    machine_configurations,
    task_event_files,
)
from clustergym.traces.paths import trace_path
from clustergym.traces.table import TraceTable
from clustergym.traces.transforms import pow_half_names
from clustergym.validation import number, positive
from clustergym.workloads.replay import ReplaySource

PathLike = str | os.PathLike[str]

# ---------------------------------------------------------------------------------------------- helpers


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


def rms_google(
    num_servers: int = 1000,
    traffic_scaling: float = 1.0,
    first_n: int | None = None,
    p_max: int = 9,
    horizon: float = math.inf,
    queue_cap: int | None = None,
    trace_dir: str | None = None,
) -> Scenario:
    """RMS on the Google trace (RMS paper §VII-B, Figs. 7-8), 1-D power-of-1/2 sizes on unit servers.

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
    L = positive(num_servers, "params.num_servers", integer=True)
    s = positive(traffic_scaling, "params.traffic_scaling")
    p_max = number(p_max, "params.p_max", lo=0, hi=30, integer=True)
    first_n = positive(first_n, "params.first_n", integer=True, allow_none=True)
    table = google_table(trace_dir, lifecycle="strict", priorities="non-production", first_n=first_n)
    jobs = table.jobs
    p = T.rms_type(jobs["cpu"].to_numpy(), jobs["memory"].to_numpy(), p_max=p_max)
    source = ReplaySource(
        T.scale_arrivals(jobs["arrival"].to_numpy(), s),
        np.ldexp(1.0, -p),
        jobs["duration"].to_numpy(),
        type=p,
        type_demand=T.pow_half_type_demand(p_max),
        names=pow_half_names(p_max),
        source=table.source,
        columns={"time": "arrival", "work": "duration", "type": "type", "demand": ["size"]},
    )
    steps = [
        f"type p = min(p(cpu), p(mem)), p(x) = min({p_max}, floor(log2(1/x))); size = 2^-p",
        f"arrivals divided by traffic_scaling = {s:g}",
    ]
    return Scenario(
        name="rms-google",
        capacity=np.ones((L, 1)),
        source=source,
        resources=("size",),
        horizon=positive(horizon, "params.horizon", allow_inf=True),
        objective="queue",
        queue_cap=queue_cap,
        description="RMS Google trace: non-production completed tasks, 10 power-of-1/2 types, L unit servers",
        params=_params(
            scope,
            table,
            steps,
            jobs_per_type=np.bincount(p, minlength=p_max + 1).tolist(),
            mean_duration_per_type=source.types.mean_work.tolist(),
        ),
    )


def google_bf_replay(
    num_servers: int = 420,
    first_n: int | None = None,
    horizon: float = math.inf,
    queue_cap: int | None = None,
    trace_dir: str | None = None,
) -> Scenario:
    """The performance benchmark's replay (issue #10): completed Google tasks, CPU and memory, unit servers.

    Preprocessing: Google task_events, lifecycle ``finished`` (first SUBMIT inside the slice,
    the last non-UPDATE event a FINISH; interruptions and resubmissions allowed), all
    priorities; arrival = first SUBMIT in seconds from the first kept one; duration = FINISH -
    last SCHEDULE (seconds); demand = (CPU request, memory request), normalised to the largest
    machine.  ``num_servers`` identical servers of capacity (1, 1), one central FIFO queue.
    Run it with ``best-fit --set agent.scan=64`` (Best-Fit over the first 64 queued jobs at every
    arrival and completion); ``clustergym/perf/simpy_bestfit.py`` is the same run written with SimPy.

    Args:
        num_servers: L servers of capacity (1, 1) (the benchmark: 420).
        first_n: the first N kept arrivals (``None``: all 310,705 of the shared 19.7 h slice).
        horizon: simulated seconds (``inf``: until every task has finished).
        queue_cap: waiting tasks beyond which the run stops as unstable (``None``: no cap).
        trace_dir: the trace directory (default ``$CLUSTERGYM_TRACES`` or ``../shared/traces``).
    """
    scope = dict(locals())
    L = positive(num_servers, "params.num_servers", integer=True)
    first_n = positive(first_n, "params.first_n", integer=True, allow_none=True)
    table = google_table(trace_dir, lifecycle="finished", first_n=first_n)
    jobs = table.jobs
    demand = np.column_stack([jobs["cpu"].to_numpy(dtype=float), jobs["memory"].to_numpy(dtype=float)])
    source = ReplaySource(
        jobs["arrival"].to_numpy(),
        demand,
        jobs["duration"].to_numpy(),
        source=table.source,
        columns={"time": "arrival", "work": "duration", "demand": ["cpu", "memory"]},
    )
    return Scenario(
        name="google-bf-replay",
        capacity=np.ones((L, 2)),
        source=source,
        resources=("cpu", "memory"),
        horizon=positive(horizon, "params.horizon", allow_inf=True),
        objective="queue",
        queue_cap=queue_cap,
        description="Google 2011 completed tasks (CPU, memory) on L servers of capacity (1, 1): the benchmark replay",
        params=_params(scope, table, ["demand = (cpu, memory) requests; capacity (1, 1) per server"]),
    )


def bfjs_google(
    num_servers: int = 1000,
    traffic_scaling: float = 1.0,
    first_n: int | None = None,
    min_demand: float = 1e-3,
    slot: float = 0.1,
    horizon: float = math.inf,
    queue_cap: int | None = None,
    trace_dir: str | None = None,
) -> Scenario:
    """BF-J/S, VQS on the Google trace (BF-J/S paper §VII-B, Fig. 5), in slotted time.

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
    L = positive(num_servers, "params.num_servers", integer=True)
    s = positive(traffic_scaling, "params.traffic_scaling")
    slot = positive(slot, "params.slot")
    md = positive(min_demand, "params.min_demand")
    first_n = positive(first_n, "params.first_n", integer=True, allow_none=True)
    table = google_table(trace_dir, lifecycle="strict", first_n=first_n)
    jobs = table.jobs
    demand, clamped = T.clamp_min(T.max_demand(jobs["cpu"].to_numpy(), jobs["memory"].to_numpy()), md)
    arr = np.floor(T.scale_arrivals(jobs["arrival"].to_numpy(), s) / slot)
    dur = np.maximum(1.0, np.ceil(jobs["duration"].to_numpy() / slot - 1e-9))
    source = ReplaySource(
        arr,
        demand,
        dur,
        source=table.source,
        columns={"time": "arrival slot", "work": "duration slots", "demand": ["max(cpu, memory)"]},
    )
    steps = [
        "demand = max(cpu, memory)",
        f"demand raised to min_demand = {md:g} for {clamped} tasks",
        f"time in slots of {slot:g} s; arrival slot = floor(arrival / {s:g} / slot), duration = max(1, ceil(d / slot))",
    ]
    return Scenario(
        name="bfjs-google",
        capacity=np.ones((L, 1)),
        source=source,
        resources=("size",),
        horizon=positive(horizon, "params.horizon", allow_inf=True),
        objective="queue",
        queue_cap=queue_cap,
        epochs=SLOT_EPOCHS,
        description="BF-J/S Google trace: completed tasks, demand max(cpu, mem), 100 ms slots, L unit servers",
        params=_params(scope, table, steps, clamped=clamped),
    )


def lotes_google(
    machine_scale: float = 1.0,
    k: int = 4,
    fit_hours: float = 24.0,
    first_n: int | None = None,
    decimals: int = 2,
    seed: int = 0,
    horizon: float = math.inf,
    queue_cap: int | None = None,
    trace_dir: str | None = None,
) -> Scenario:
    """LoTES on the Google trace (LoTES Sec. 5.3), 2 resources on 10 heterogeneous machine configurations.

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
    scale = positive(machine_scale, "params.machine_scale")
    k = positive(k, "params.k", integer=True)
    fit_h = positive(fit_hours, "params.fit_hours")
    first_n = positive(first_n, "params.first_n", integer=True, allow_none=True)
    mpath = trace_path("google", "machine_events", "part-00000-of-00001.csv.gz", trace_dir=trace_dir)
    machines, mrep = cached(("google-machines", file_stamp([mpath])), lambda: load_google_machines(path=mpath, at=None))
    conf = machine_configurations(machines, decimals=None if decimals is None else int(decimals))
    counts = _scaled_counts(conf["count"].to_numpy(), scale)
    cap = np.repeat(conf[["cpu", "memory"]].to_numpy(), counts, axis=0)
    table = google_table(trace_dir, lifecycle="attempts", first_n=first_n)
    jobs = table.jobs
    X = jobs[["cpu", "memory"]].to_numpy()
    fit = jobs["arrival"].to_numpy() < fit_h * 3600.0
    labels, centroids = cached(
        ("kmeans", file_stamp(task_event_files(trace_dir)), first_n, k, fit_h, int(seed)),
        lambda: T.kmeans_classes(X, k, fit_mask=fit, seed=int(seed)),
    )
    classes = T.class_table(labels, jobs["duration"].to_numpy(), {"cpu": X[:, 0], "memory": X[:, 1]}, k)
    source = ReplaySource(
        jobs["arrival"].to_numpy(),
        X,
        jobs["duration"].to_numpy(),
        type=labels,
        names=tuple(f"class{j + 1}" for j in range(k)),
        source=table.source,
        columns={"time": "arrival", "work": "duration", "type": "class", "demand": ["cpu", "memory"]},
    )
    steps = [
        f"machines: {len(cap)} in {len(conf)} configurations (scale {scale:g}) from machine_events",
        f"k-means k={k} on (cpu, memory) of the {int(fit.sum())} jobs of the first {fit_h:g} h; all jobs "
        "assigned to the nearest centroid",
    ]
    return Scenario(
        name="lotes-google",
        capacity=cap,
        source=source,
        resources=("cpu", "memory"),
        horizon=positive(horizon, "params.horizon", allow_inf=True),
        objective="queue",
        queue_cap=queue_cap,
        description="LoTES Google trace: every attempt, 10 machine configurations (Table 1), k-means classes",
        params=_params(
            scope,
            table,
            steps,
            machine_configurations=[
                {"cpu": float(c), "memory": float(m), "count": int(n)}
                for c, m, n in zip(conf["cpu"], conf["memory"], counts)
            ],
            machines_report=mrep.to_dict(),
            centroids=centroids.tolist(),
            classes=classes.to_dict("records"),
        ),
    )


def autoscale_google(
    num_servers: int = 1000,
    first_n: int | None = None,
    p_max: int = 9,
    traffic_scaling: float = 1.0,
    horizon: float = math.inf,
    trace_dir: str | None = None,
) -> Scenario:
    """Auto-scaling on the Google trace (auto-scaling paper Sec. 7.2): admit or reject, with rewards.

    Preprocessing: lifecycle ``finished`` (first SUBMIT > 0, ends with FINISH; interruptions
    allowed), duration = FINISH - last SCHEDULE; size = max(cpu, mem) rounded up to 1/2^p
    (p <= p_max); priority band 0 = trace {0, 1}, 1 = {2..8}, 2 = {9, 10, 11} (a guess: the paper
    gives no map, docs/papers/autoscale.md#google-trace);
    reward rate = size x (1, 3, 9)[band]; type = band x (p_max + 1) + p (tasks have the same type
    iff band and size agree).  Servers: L of size 1.  Queueing: loss; objective: reward.
    """
    scope = dict(locals())
    L = positive(num_servers, "params.num_servers", integer=True)
    s = positive(traffic_scaling, "params.traffic_scaling")
    p_max = number(p_max, "params.p_max", lo=0, hi=30, integer=True)
    first_n = positive(first_n, "params.first_n", integer=True, allow_none=True)
    table = google_table(trace_dir, lifecycle="finished", first_n=first_n)
    jobs = table.jobs
    p = T.rms_type(jobs["cpu"].to_numpy(), jobs["memory"].to_numpy(), p_max=p_max)
    band = T.map_priority(jobs["priority"].to_numpy(), "autoscale-band").astype(np.int64)
    size = np.ldexp(1.0, -p)
    reward = size * T.map_priority(jobs["priority"].to_numpy(), "autoscale-factor")
    J = 3 * (p_max + 1)
    typ = band * (p_max + 1) + p
    td = np.tile(T.pow_half_type_demand(p_max), (3, 1))
    names = tuple(f"b{b}:{n}" for b in range(3) for n in pow_half_names(p_max))
    source = ReplaySource(
        T.scale_arrivals(jobs["arrival"].to_numpy(), s),
        size,
        jobs["duration"].to_numpy(),
        type=typ,
        reward_rate=reward,
        type_demand=td,
        names=names,
        source=table.source,
    )
    steps = [
        "size = max(cpu, mem) rounded up to 1/2^p",
        "band: {0,1} -> 0, {2..8} -> 1, {9,10,11} -> 2",
        "reward rate = size x (1, 3, 9)[band]",
        f"type = band x {p_max + 1} + p ({J} types)",
        f"arrivals divided by traffic_scaling = {s:g}",
    ]
    return Scenario(
        name="autoscale-google",
        capacity=np.ones((L, 1)),
        source=source,
        resources=("size",),
        horizon=positive(horizon, "params.horizon", allow_inf=True),
        objective="reward",
        queueing="loss",
        description="Auto-scaling Google trace: admit/reject tasks, reward = size x 1/3/9 by priority band",
        params=_params(scope, table, steps, jobs_per_band=np.bincount(band, minlength=3).tolist()),
    )


def alibaba_gpu(
    node_scale: float = 1.0,
    clip_before: float | None = 10_000_000.0,
    first_n: int | None = None,
    traffic_scaling: float = 1.0,
    horizon: float = math.inf,
    queue_cap: int | None = None,
    trace_dir: str | None = None,
) -> Scenario:
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
    scale = positive(node_scale, "params.node_scale")
    s = positive(traffic_scaling, "params.traffic_scaling")
    first_n = positive(first_n, "params.first_n", integer=True, allow_none=True)
    ppath = trace_path("alibaba-gpu-v2023", "openb_pod_list_default.csv", trace_dir=trace_dir)
    npath = trace_path("alibaba-gpu-v2023", "openb_node_list_all_node.csv", trace_dir=trace_dir)
    table = cached(
        ("v2023", file_stamp([ppath]), clip_before, first_n),
        lambda: load_alibaba_gpu_v2023(path=ppath, clip_before=clip_before, first_n=first_n),
    )
    nodes, nrep = load_alibaba_gpu_v2023_nodes(path=npath)
    shapes = nodes.groupby(["cpu", "memory", "gpu"], sort=False).size().rename("count").reset_index()
    shapes = shapes.sort_values(["count", "gpu", "cpu", "memory"], ascending=False, kind="stable")
    counts = _scaled_counts(shapes["count"].to_numpy(), scale) if scale != 1.0 else shapes["count"].to_numpy()
    cap = np.repeat(shapes[["cpu", "memory", "gpu"]].to_numpy(), counts, axis=0)
    jobs = table.jobs
    source = ReplaySource(
        T.scale_arrivals(jobs["arrival"].to_numpy(), s),
        jobs[["cpu", "memory", "gpu"]].to_numpy(),
        jobs["duration"].to_numpy(),
        source=table.source,
        columns={"time": "arrival", "work": "duration", "demand": ["cpu", "memory", "gpu"]},
    )
    steps = [
        f"nodes: {len(cap)} of {len(nodes)} ({len(shapes)} shapes, scale {scale:g}); GPUs pooled per node",
        f"arrivals divided by traffic_scaling = {s:g}",
    ]
    return Scenario(
        name="alibaba-gpu",
        capacity=cap,
        source=source,
        resources=("cpu", "memory", "gpu"),
        horizon=positive(horizon, "params.horizon", allow_inf=True),
        objective="queue",
        queue_cap=queue_cap,
        description="Alibaba GPU v2023: pods with CPU, memory and GPU on 1,523 heterogeneous nodes",
        params=_params(scope, table, steps, nodes_report=nrep.to_dict(), node_shapes=len(shapes)),
    )


#: name -> (builder, one-line description); registered into clustergym.scenarios.registry.PRESETS by the owner


def azure_vms(
    num_servers: int = 8,
    host_vcpu: float = 64.0,
    host_memory: float = 256.0,
    thin: int = 100,
    window_hours: float = 24.0,
    start_day: float = 2.0,
    min_share: float = 0.001,
    split: str = "test",
    trace_dir: str | None = None,
) -> Scenario:
    """Azure V1 VMs (the Azure Public Dataset V1, 2017, as the RNN trace generator of SOSP'21 preprocessed it):
    each seed replays a random window of the trace on a few hosts.

    Preprocessing: the ``split`` VM arrivals with binned lifetimes (:func:`~clustergym.traces.azure.load_azure_v1`,
    arrivals spread over their 300 s bin, censored VMs run to the censoring time, lifetimes at the
    middle of their bin); demand (vCPU, memory GB) of the VM's flavour; flavours with less than
    ``min_share`` of the VMs dropped (counted), the others are the job types (exact demands).
    Episodes (:class:`~clustergym.workloads.windows.TraceWindowSource`): a window of ``window_hours``
    starting uniformly between ``start_day`` days (the trace starts empty: the VMs created before it
    are missing, and the long-lived population takes about two days to build up) and the end of the
    trace minus the window; every ``thin``-th VM (random phase), so ``num_servers`` hosts see the load
    that ``thin x num_servers`` hosts saw; the VMs still running at the window start arrive at time 0
    with their remaining lifetime.  Hosts: ``num_servers`` of (``host_vcpu``, ``host_memory``): a
    clustergym choice (the trace has no host sizes), which puts the CPU near its capacity on most
    windows.  Time in seconds; central queue; objective: mean queue length.
    """
    from clustergym.traces.azure import load_azure_v1
    from clustergym.workloads.windows import TraceWindowSource

    scope = dict(locals())
    L = positive(num_servers, "params.num_servers", integer=True)
    cap = np.array([positive(host_vcpu, "params.host_vcpu"), positive(host_memory, "params.host_memory")])
    k = positive(thin, "params.thin", integer=True)
    W = positive(window_hours, "params.window_hours") * 3600.0
    start = positive(start_day, "params.start_day", allow_zero=True) * 86400.0
    share = number(min_share, "params.min_share", lo=0.0, hi=1.0)
    table = cached(("azure-v1", str(trace_dir), split), lambda: load_azure_v1(trace_dir, split=split, arrival="spread"))
    jobs = table.jobs
    counts = jobs["flavor"].value_counts()
    kept = sorted(f for f, n in counts.items() if n >= share * len(jobs))
    sel = jobs["flavor"].isin(kept).to_numpy()
    jobs = jobs[sel]
    index = {f: i for i, f in enumerate(kept)}
    demand = jobs[["vcpu", "memory"]].to_numpy(dtype=np.float64)
    too_big = ~np.all(demand <= cap, axis=1)
    if too_big.any():
        from clustergym.errors import ScenarioError

        raise ScenarioError("params.host_vcpu", f"{int(too_big.sum())} VMs do not fit a host of {cap.tolist()}")
    typ = jobs["flavor"].map(index).to_numpy(dtype=np.int64)
    type_demand = np.array([demand[typ == i][0] for i in range(len(kept))])
    tab = ReplaySource(
        jobs["arrival"].to_numpy(),
        demand,
        jobs["duration"].to_numpy(),
        type=typ,
        type_demand=type_demand,
        names=tuple(f"flavor-{f}" for f in kept),
        source=table.source,
        columns={"time": "arrival", "work": "duration", "type": "flavor", "demand": ["vcpu", "memory"]},
    )
    end = float(tab.time[-1])
    if start > end - W:
        from clustergym.errors import ScenarioError

        raise ScenarioError(
            "params.start_day",
            f"windows of {W / 3600:g} h starting after day {start / 86400:g} "
            f"do not fit the {end / 86400:.2f}-day trace",
        )
    src = TraceWindowSource(tab, W, start_low=start, start_high=end - W, thin=k)
    steps = [
        f"flavours kept: {''.join(kept)} (each >= {share:g} of the VMs); {int((~sel).sum())} VMs of other "
        "flavours dropped",
        f"episodes: a {W / 3600:g} h window from day {start / 86400:g} on, every "
        f"{k}-th VM, the VMs running at its start at time 0 with their remaining lifetime",
    ]
    return Scenario(
        name="azure-vms",
        capacity=np.tile(cap, (L, 1)),
        source=src,
        resources=("vcpu", "memory"),
        horizon=W,
        objective="queue",
        queue_cap=None,
        description="Azure V1 VMs: random thinned windows of the trace, flavours as types, on L hosts",
        params=_params(
            scope, table, steps, dropped_vms=int((~sel).sum()), flavors=kept, flavor_demand=type_demand.tolist()
        ),
    )
