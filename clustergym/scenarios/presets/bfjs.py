"""BF-J/S paper presets (Psychas & Ghaderi, "High-throughput bin packing: scheduling jobs with random
resource demands in clusters", IEEE/ACM ToN 2021): one server with two job sizes (E1/E2) and uniform sizes on L unit
servers (E3), in slotted time.
"""

from __future__ import annotations

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

__all__ = ["two_sizes", "uniform_sizes"]


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
