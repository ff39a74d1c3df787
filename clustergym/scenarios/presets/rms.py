"""RMS paper presets (Psychas & Ghaderi, "Randomized algorithms for scheduling multi-resource jobs in
the cloud", IEEE/ACM ToN 2018): the synthetic EC2 setting of §VII-A and the Best-Fit trap of §III.

The paper's Google-trace setting (§VII-B) is :func:`clustergym.scenarios.presets.traces.rms_google`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from clustergym.scenarios.spec import Scenario
from clustergym.theory.rms import boundary_point
from clustergym.validation import choice, number, positive
from clustergym.workloads import (
    Exponential,
    PoissonTypedSource,
)
from clustergym.workloads.replay import ReplaySource

__all__ = ["rms_google", "EC2_TYPES", "EC2_NAMES", "EC2_SERVER", "ec2", "bf_trap"]

#: RMS Table I (§VII-A), resources (cpu units, memory GB, disk GB):
#: Standard Extra Large, High-Memory Extra Large, High-CPU Extra Large.
EC2_TYPES = np.array([[8.0, 15.0, 1690.0], [6.5, 17.1, 420.0], [20.0, 7.0, 1690.0]])
EC2_NAMES = ("standard-xl", "high-memory-xl", "high-cpu-xl")
#: "90 GB memory, 90 CPU Units and 5000 GB storage"
EC2_SERVER = np.array([90.0, 90.0, 5000.0])


def queueing_params(queueing: Any, routing: Any) -> tuple[str, str]:
    """Validate the ``queueing``/``routing`` parameters of the RMS presets."""
    return choice(queueing, "params.queueing", ("central", "local")), choice(
        routing, "params.routing", ("jsq", "power-of-two")
    )


def ec2(
    zeta: float = 0.9,
    num_servers: int = 20,
    horizon: float = 1000.0,
    queue_cap: int | None = 100_000,
    queueing: str = "central",
    routing: str = "jsq",
) -> Scenario:
    """RMS synthetic setup (§VII-A, Table I): three EC2 VM types on identical servers
    (90 CPU units, 90 GB, 5000 GB); Poisson arrivals lambda = zeta * V with V the sum
    over servers of the average maximal configuration ((2/3, 11/3, 2/3) per server),
    exponential service of mean 1; objective: mean queue length.

    Args:
        zeta: traffic intensity in (0, 1) (the fraction of the capacity boundary).
        num_servers: L.
        horizon: simulated time units (1 unit = 1 mean service time).
        queue_cap: waiting jobs beyond which the run stops as unstable.
        queueing: ``central`` (one queue per type, the paper's RMS) or ``local``
            (per-server queues, RMS+JSQ of §IV-B: ``--set queueing=local``).
        routing: with local queues, ``jsq`` (Algorithm 2) or ``power-of-two``
            (Remark 4); ignored with central queues.
    """
    zeta = positive(zeta, "params.zeta")
    queueing, routing = queueing_params(queueing, routing)
    L = positive(num_servers, "params.num_servers", integer=True)
    cap = np.tile(EC2_SERVER, (L, 1))
    rates = zeta * boundary_point(EC2_TYPES, cap)
    source = PoissonTypedSource(rates, EC2_TYPES, Exponential(1.0), names=EC2_NAMES)
    return Scenario(
        name="ec2",
        capacity=cap,
        source=source,
        resources=("cpu", "memory", "disk"),
        horizon=positive(horizon, "params.horizon"),
        objective="queue",
        queue_cap=queue_cap,
        queueing=queueing,
        routing=routing,
        description="RMS Table I: 3 EC2 VM types, L servers, intensity zeta of the capacity boundary",
        params={
            "zeta": zeta,
            "num_servers": L,
            "horizon": horizon,
            "rates": rates.tolist(),
            "queueing": queueing,
            "routing": routing,
        },
    )


def bf_trap(
    num_servers: int = 10,
    rate1: float = 20.8,
    rate2: float = 10.4,
    horizon: float = 2000.0,
    queue_cap: int | None = 100_000,
    queueing: str = "central",
    routing: str = "jsq",
) -> Scenario:
    """The Best-Fit trap of RMS Fig. 1b (§III): 10 servers of capacity 10,
    job sizes 2 and 5, Poisson rates (20.8, 10.4), exponential service of mean 1.
    The load is 0.936 of capacity, yet work-conserving Best-Fit that refills with the
    largest fitting job freezes every server in configuration (2, 1) and the queue grows.
    ``queueing``/``routing`` as in ``ec2`` (``local`` queues for RMS+JSQ).
    """
    L = positive(num_servers, "params.num_servers", integer=True)
    queueing, routing = queueing_params(queueing, routing)
    sizes = np.array([[2.0], [5.0]])
    rates = np.array([positive(rate1, "params.rate1"), positive(rate2, "params.rate2")])
    source = PoissonTypedSource(rates, sizes, Exponential(1.0), names=("size-2", "size-5"))
    return Scenario(
        name="bf-trap",
        capacity=np.full((L, 1), 10.0),
        source=source,
        resources=("units",),
        horizon=positive(horizon, "params.horizon"),
        objective="queue",
        queue_cap=queue_cap,
        queueing=queueing,
        routing=routing,
        description="RMS Fig. 1b: sizes 2 and 5 on capacity-10 servers, where Best-Fit is unstable",
        params={
            "num_servers": L,
            "rate1": rates[0],
            "rate2": rates[1],
            "horizon": horizon,
            "queueing": queueing,
            "routing": routing,
        },
    )


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
        trace_dir: the trace directory (default ``$CLUSTERGYM_TRACES``, then the user data folder, :func:`~clustergym.traces.paths.default_trace_dir`).
    """
    scope = dict(locals())  # the arguments, before the imports below add names
    # the trace modules (pandas) are imported when a trace preset is built, not with this module
    from clustergym.scenarios.presets.traces import unit_server_scenario
    from clustergym.traces import transforms as T
    from clustergym.traces.cache import google_table
    from clustergym.traces.transforms import pow_half_names

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
    return unit_server_scenario(
        "rms-google",
        "RMS Google trace: non-production completed tasks, 10 power-of-1/2 types, L unit servers",
        source,
        table,
        steps,
        scope,
        num_servers=L,
        horizon=horizon,
        queue_cap=queue_cap,
        jobs_per_type=np.bincount(p, minlength=p_max + 1).tolist(),
        mean_duration_per_type=source.types.mean_work.tolist(),
    )
