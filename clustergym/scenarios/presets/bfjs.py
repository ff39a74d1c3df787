"""BF-J/S paper presets (Psychas & Ghaderi, "High-throughput bin packing: scheduling jobs with random
resource demands in clusters", IEEE/ACM ToN 2021): one server with two job sizes (E1/E2) and uniform sizes on L unit
servers (E3), in slotted time.
"""

from __future__ import annotations

import math

import numpy as np

from clustergym.core.simulator import SLOT_EPOCHS
from clustergym.errors import ScenarioError
from clustergym.scenarios.spec import Scenario
from clustergym.validation import choice, positive
from clustergym.workloads import (
    Deterministic,
    DiscreteDemand,
    Geometric,
    SlottedSource,
    UniformDemand,
)
from clustergym.workloads.replay import ReplaySource

__all__ = ["bfjs_google", "two_sizes", "uniform_sizes"]


def two_sizes(
    variant: str = "e1", rate: float | None = None, horizon: float = 100_000.0, queue_cap: int | None = 100_000
) -> Scenario:
    """The two-size instances of §VII-A-1 and §VII-A-2 (Fig. 3), in slotted time (docs/papers/bfjs.md#timeline).

    ``variant="e1"``: one unit server, sizes 0.4 and 0.6 equally likely, Poisson
    0.014 jobs per slot, geometric service of mean 100 slots (VQS unstable).
    ``variant="e2"``: one server of capacity 10, sizes 2 (prob. 2/3) and 5 (1/3),
    Poisson 0.0306 jobs per slot, deterministic service of 100 slots (BF-J/S unstable).
    Decision epochs: one tick per slot, after the slot's departures and arrivals.
    """
    if choice(variant, "params.variant", ("e1", "e2")) == "e1":
        demand = DiscreteDemand([[0.4], [0.6]], [0.5, 0.5])
        service, cap, default_rate = Geometric(0.01), 1.0, 0.014
    else:
        demand = DiscreteDemand([[2.0], [5.0]], [2.0 / 3.0, 1.0 / 3.0])
        service, cap, default_rate = Deterministic(100.0), 10.0, 0.0306
    rate = positive(rate, "params.rate", allow_none=True) or default_rate
    source = SlottedSource(rate, demand, service)
    return Scenario(
        name="two-sizes",
        capacity=np.array([[cap]]),
        source=source,
        resources=("units",),
        horizon=positive(horizon, "params.horizon"),
        objective="queue",
        queue_cap=queue_cap,
        epochs=SLOT_EPOCHS,
        description="BF-J/S paper E1/E2: one server, two job sizes, slotted time",
        params={"variant": variant, "rate": rate, "horizon": horizon},
    )


def uniform_sizes(
    low: float = 0.1,
    high: float = 0.9,
    alpha: float = 0.9,
    num_servers: int = 5,
    mean_service: float = 100.0,
    horizon: float = 100_000.0,
    queue_cap: int | None = 100_000,
) -> Scenario:
    """Uniform job sizes in slotted time (§VII-A-3, Fig. 4; E3a: [0.01, 0.19]; E3b: [0.1, 0.9]).

    L unit servers, sizes U[low, high], geometric service of mean ``mean_service``
    slots, Poisson arrivals of alpha * mu * L / mean size jobs per slot (the paper
    prints the rate without alpha: docs/papers/bfjs.md#arrival-rate; alpha = 1 is the capacity bound).
    """
    low, high = positive(low, "params.low"), positive(high, "params.high")
    if not low < high <= 1.0:
        raise ScenarioError("params.high", f"need 0 < low < high <= 1, got low={low}, high={high}")
    L = positive(num_servers, "params.num_servers", integer=True)
    mu = 1.0 / positive(mean_service, "params.mean_service")
    alpha = positive(alpha, "params.alpha")
    rate = alpha * mu * L / ((low + high) / 2.0)
    source = SlottedSource(rate, UniformDemand([low], [high]), Geometric(mu))
    return Scenario(
        name="uniform-sizes",
        capacity=np.ones((L, 1)),
        source=source,
        resources=("units",),
        horizon=positive(horizon, "params.horizon"),
        objective="queue",
        queue_cap=queue_cap,
        epochs=SLOT_EPOCHS,
        description="BF-J/S paper E3: uniform sizes on L unit servers, slotted time, intensity alpha",
        params={
            "low": low,
            "high": high,
            "alpha": alpha,
            "num_servers": L,
            "mean_service": mean_service,
            "rate_per_slot": rate,
            "horizon": horizon,
        },
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
    scope = dict(locals())  # the arguments, before the imports below add names
    # the trace modules (pandas) are imported when a trace preset is built, not with this module
    from clustergym.scenarios.presets.traces import unit_server_scenario
    from clustergym.traces import transforms as T
    from clustergym.traces.cache import google_table

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
    return unit_server_scenario(
        "bfjs-google",
        "BF-J/S Google trace: completed tasks, demand max(cpu, mem), 100 ms slots, L unit servers",
        source,
        table,
        steps,
        scope,
        num_servers=L,
        horizon=horizon,
        queue_cap=queue_cap,
        epochs=SLOT_EPOCHS,
        clamped=clamped,
    )
