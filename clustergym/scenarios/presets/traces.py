"""Trace-driven presets that belong to no paper, and the helpers every trace preset shares.

Each paper's own trace setup lives in its paper's module (``rms_google`` in :mod:`.rms`,
``bfjs_google`` in :mod:`.bfjs`, ``lotes_google`` in :mod:`.lotes`, ``autoscale_google`` in
:mod:`.autoscale`, ``mris_alibaba`` in :mod:`.mris`).  ``scenario.params["trace_report"]`` holds the
loader's filter report and ``scenario.params["preprocessing"]`` the steps (:func:`trace_params`).
The trace files are read when a preset is built (not when a module is imported); without them,
building raises :class:`~clustergym.traces.paths.TraceNotFoundError` naming the directory.

* :func:`alibaba_gpu` -- Alibaba GPU v2023: pods with CPU, memory and GPU on the 1,523 heterogeneous
  nodes of the trace (GPU as a third resource).
* :func:`google_bf_replay` -- completed Google tasks on 420 unit servers: the replay of
  ``clustergym bench`` (speed against SimPy, ``docs/performance.md``).
* :func:`azure_vms` -- Azure V1 (2017) VM arrivals, flavours as job types, on a few hosts: each seed a
  random day of the trace, thinned (:class:`~clustergym.workloads.windows.TraceWindowSource`).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from clustergym.core.simulator import EpochConfig
from clustergym.scenarios.spec import Scenario
from clustergym.traces import transforms as T
from clustergym.traces.alibaba import (
    load_alibaba_gpu_v2023,
    load_alibaba_gpu_v2023_nodes,
)
from clustergym.traces.cache import cached, file_stamp, google_table
from clustergym.traces.paths import trace_path
from clustergym.traces.table import TraceTable
from clustergym.validation import number, positive
from clustergym.workloads.replay import ReplaySource

PathLike = str | os.PathLike[str]

# ---------------------------------------------------------------------------------------------- helpers


def scaled_counts(counts: np.ndarray, scale: float) -> np.ndarray:
    """Scale machine counts ``(G,)`` by ``scale``, keeping at least one machine of every configuration."""
    return np.maximum(1, np.rint(counts * scale)).astype(np.int64)


def trace_params(scope: dict[str, Any], table: TraceTable, steps: list[str], **extra: Any) -> dict[str, Any]:
    """A trace scenario's ``params``: the preset's arguments (``scope``), ``extra``, the job count, the
    preprocessing steps (the loader's, then ``steps``) and the loader's filter report."""
    p = {k: (os.fspath(v) if isinstance(v, os.PathLike) else v) for k, v in scope.items()}
    p.update(extra)
    p["jobs"] = len(table)
    p["preprocessing"] = list(table.report.steps) + steps
    p["trace_report"] = table.report.to_dict()
    return p


def window_source(
    tab: ReplaySource, window: float, start: float, thin: int, *, field: str, unit: tuple[str, float], span: str
) -> Any:
    """The episodes of a windowed trace preset: a :class:`~clustergym.workloads.windows.TraceWindowSource`
    of ``window`` seconds starting uniformly between ``start`` and the last arrival minus the window,
    every ``thin``-th job; a :class:`ScenarioError` on ``field`` when no such window fits (``unit``: the
    name and seconds of the unit ``field`` is given in, ``span``: what the trace is called)."""
    from clustergym.workloads.windows import TraceWindowSource

    end = float(tab.time[-1])
    if start > end - window:
        from clustergym.errors import ScenarioError

        name, seconds = unit
        raise ScenarioError(
            field,
            f"windows of {window / 3600:g} h starting after {name} {start / seconds:g} "
            f"do not fit the {end / seconds:.2f}-{name} {span}",
        )
    return TraceWindowSource(tab, window, start_low=start, start_high=end - window, thin=thin)


def unit_server_scenario(
    name: str,
    description: str,
    source: ReplaySource,
    table: TraceTable,
    steps: list[str],
    scope: dict[str, Any],
    *,
    num_servers: int,
    horizon: Any,
    queue_cap: int | None,
    epochs: EpochConfig | None = None,
    **extra: Any,
) -> Scenario:
    """A trace scenario on ``num_servers`` (checked) unit servers of one resource (``size``) with the mean
    queue length as objective, as the RMS (§VII-B) and BF-J/S (§VII-B) papers set up their Google-trace
    experiments; ``horizon`` is checked here; ``params`` from :func:`trace_params` (``scope``, ``table``,
    ``steps``, ``extra``)."""
    return Scenario(
        name=name,
        capacity=np.ones((num_servers, 1)),
        source=source,
        resources=("size",),
        horizon=positive(horizon, "params.horizon", allow_inf=True),
        objective="queue",
        queue_cap=queue_cap,
        **({} if epochs is None else {"epochs": epochs}),
        description=description,
        params=trace_params(scope, table, steps, **extra),
    )


# ---------------------------------------------------------------------------------------------- presets


def google_bf_replay(
    num_servers: int = 420,
    first_n: int | None = None,
    horizon: float = math.inf,
    queue_cap: int | None = None,
    trace_dir: str | None = None,
) -> Scenario:
    """The replay of ``clustergym bench``: completed Google tasks, CPU and memory, unit servers.

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
        trace_dir: the trace directory (default ``$CLUSTERGYM_TRACES``, then the user data folder, :func:`~clustergym.traces.paths.default_trace_dir`).
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
        params=trace_params(scope, table, ["demand = (cpu, memory) requests; capacity (1, 1) per server"]),
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
    counts = scaled_counts(shapes["count"].to_numpy(), scale) if scale != 1.0 else shapes["count"].to_numpy()
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
        params=trace_params(scope, table, steps, nodes_report=nrep.to_dict(), node_shapes=len(shapes)),
    )


def _common_flavours(jobs: Any, share: float) -> tuple[Any, np.ndarray, list[str]]:
    """The VMs of the flavours holding at least ``share`` of them: ``(jobs kept, mask over jobs, flavours)``."""
    counts = jobs["flavor"].value_counts()
    kept = sorted(f for f, n in counts.items() if n >= share * len(jobs))
    sel = jobs["flavor"].isin(kept).to_numpy()
    return jobs[sel], sel, kept


def _flavour_types(jobs: Any, kept: list[str], cap: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The VMs' ``(n, 2)`` demands (vCPU, GB), types (index in ``kept``) and ``(J, 2)`` flavour demands; a VM
    larger than a host ``cap`` is an error."""
    demand = jobs[["vcpu", "memory"]].to_numpy(dtype=np.float64)
    too_big = ~np.all(demand <= cap, axis=1)
    if too_big.any():
        from clustergym.errors import ScenarioError

        raise ScenarioError("params.host_vcpu", f"{int(too_big.sum())} VMs do not fit a host of {cap.tolist()}")
    typ = jobs["flavor"].map({f: i for i, f in enumerate(kept)}).to_numpy(dtype=np.int64)
    return demand, typ, np.array([demand[typ == i][0] for i in range(len(kept))])


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
    scope = dict(locals())  # the arguments, before the imports below add names
    from clustergym.traces.azure import load_azure_v1

    L = positive(num_servers, "params.num_servers", integer=True)
    cap = np.array([positive(host_vcpu, "params.host_vcpu"), positive(host_memory, "params.host_memory")])
    k = positive(thin, "params.thin", integer=True)
    W = positive(window_hours, "params.window_hours") * 3600.0
    start = positive(start_day, "params.start_day", allow_zero=True) * 86400.0
    share = number(min_share, "params.min_share", lo=0.0, hi=1.0)
    table = cached(("azure-v1", str(trace_dir), split), lambda: load_azure_v1(trace_dir, split=split, arrival="spread"))
    jobs, sel, kept = _common_flavours(table.jobs, share)
    demand, typ, type_demand = _flavour_types(jobs, kept, cap)
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
    src = window_source(tab, W, start, k, field="params.start_day", unit=("day", 86400.0), span="trace")
    steps = [
        f"flavours kept: {''.join(kept)} (each >= {share:g} of the VMs); {int((~sel).sum())} VMs of other "
        f"flavours dropped",
        f"episodes: a {W / 3600:g} h window from day {start / 86400:g} on, every {k}-th VM, the VMs running "
        "at its start at time 0 with their remaining lifetime",
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
        params=trace_params(
            scope, table, steps, dropped_vms=int((~sel).sum()), flavors=kept, flavor_demand=type_demand.tolist()
        ),
    )


def google_tasks(
    num_servers: int = 12,
    thin: int = 40,
    window_hours: float = 4.0,
    start_hour: float = 1.0,
    trace_dir: str | None = None,
) -> Scenario:
    """Google 2011 tasks (the shared 19.5 h slice of the cluster data 2011-2): each seed replays a random
    thinned window of the trace on a few unit servers, as :func:`azure_vms` does for the Azure VMs.

    Preprocessing: the completed tasks of :func:`google_bf_replay` (first SUBMIT inside the slice, the
    last non-UPDATE event a FINISH; arrival = first SUBMIT, duration = FINISH - last SCHEDULE, in
    seconds; demand = (CPU request, memory request) normalised to the largest machine: continuous
    demands, no job types).  Episodes (:class:`~clustergym.workloads.windows.TraceWindowSource`): a
    window of ``window_hours`` starting uniformly between ``start_hour`` hours (the slice starts
    empty: the tasks submitted before it are missing) and the last arrival minus the window; every
    ``thin``-th task (random phase), so ``num_servers`` servers of capacity (1, 1) see the load that
    ``thin x num_servers`` machines of the largest size saw; the tasks still running at the window
    start arrive at time 0 with their remaining duration.  The slice offers 334 largest-machine
    CPUs on average (142 to 634 over its two-hour stretches), so ``thin`` 40 on 12 servers is a
    mean CPU load of 0.70, from idle windows to bursts of 1.3.  Time in seconds; central queue; mean queue length.

    Args:
        num_servers: L servers of capacity (1, 1).
        thin: keep every ``thin``-th task.
        window_hours: the episode's window (hours).
        start_hour: the earliest window start (hours from the slice's first kept arrival).
        trace_dir: the trace directory (default ``$CLUSTERGYM_TRACES``, then the user data folder).
    """
    scope = dict(locals())  # the arguments

    L = positive(num_servers, "params.num_servers", integer=True)
    k = positive(thin, "params.thin", integer=True)
    W = positive(window_hours, "params.window_hours") * 3600.0
    start = positive(start_hour, "params.start_hour", allow_zero=True) * 3600.0
    replay = google_bf_replay(num_servers=1, trace_dir=trace_dir)  # its table of every completed task
    tab = replay.source
    assert isinstance(tab, ReplaySource)
    src = window_source(tab, W, start, k, field="params.start_hour", unit=("hour", 3600.0), span="slice")
    steps = [
        f"episodes: a {W / 3600:g} h window from hour {start / 3600:g} on, every {k}-th task, the tasks running "
        "at its start at time 0 with their remaining duration",
    ]
    return Scenario(
        name="google-tasks",
        capacity=np.ones((L, 2)),
        source=src,
        resources=("cpu", "memory"),
        horizon=W,
        objective="queue",
        queue_cap=None,
        description="Google 2011 tasks: random thinned windows of the trace, (CPU, memory), on L unit servers",
        params={
            **scope,
            "jobs": replay.params["jobs"],
            "preprocessing": [*replay.params["preprocessing"], *steps],
            "trace_report": replay.params["trace_report"],
        },
    )
