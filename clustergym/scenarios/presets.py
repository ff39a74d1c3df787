"""Named scenarios that reproduce the papers' setups (DESIGN §5).

Each preset is a function of a few documented keyword parameters that returns
a :class:`~clustergym.scenarios.spec.Scenario`; ``clustergym list`` shows them
and ``--set key=value`` (or keyword arguments to ``gymnasium.make``) sets them.
"""

from __future__ import annotations

import dataclasses

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from clustergym.capacity import boundary_point
from clustergym.core.simulator import EpochConfig
from clustergym.errors import ScenarioError
from clustergym.scenarios.spec import Scenario
from clustergym.workloads import (
    Deterministic,
    DiscreteDemand,
    Exponential,
    Geometric,
    PoissonTypedSource,
    SlottedSource,
    UniformDemand,
)

__all__ = ["PRESETS", "Preset", "make_preset", "register_preset", "EC2_TYPES", "EC2_SERVER", "SYN4_TYPES", "SYN4_REWARDS",
           "SYN4_RHO", "SYN4_SERVER"]

#: RMS Table I (rms.md §4.1), resources (cpu units, memory GB, disk GB):
#: Standard Extra Large, High-Memory Extra Large, High-CPU Extra Large.
EC2_TYPES = np.array([[8.0, 15.0, 1690.0], [6.5, 17.1, 420.0], [20.0, 7.0, 1690.0]])
EC2_NAMES = ("standard-xl", "high-memory-xl", "high-cpu-xl")
#: "90 GB memory, 90 CPU Units and 5000 GB storage"
EC2_SERVER = np.array([90.0, 90.0, 5000.0])

#: autoscale.md §3.5, the consistent ("doubled") instance SYN4: (vCPU, GB).
SYN4_TYPES = np.array([[2.0, 2.0], [8.0, 32.0], [4.0, 64.0], [64.0, 512.0]])
SYN4_REWARDS = np.array([18.0, 96.0, 96.0, 1024.0])  # 8 per vCPU + 1 per GB
SYN4_RHO = np.array([2.0, 0.5, 4.0 / 3.0, 1.0])
SYN4_SERVER = np.array([80.0, 640.0])


def _positive(name: str, value: Any, *, integer: bool = False, allow_zero: bool = False) -> Any:
    try:
        v = int(value) if integer else float(value)
    except (TypeError, ValueError):
        raise ScenarioError(f"params.{name}", f"expected a number, got {value!r}") from None
    if integer and float(value) != v:
        raise ScenarioError(f"params.{name}", f"expected an integer, got {value!r}")
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ScenarioError(f"params.{name}", f"must be {'>= 0' if allow_zero else '> 0'} and finite, got {value!r}")
    return v


def _queueing(queueing: Any, routing: Any) -> tuple[str, str]:
    """Validate the ``queueing``/``routing`` parameters of the RMS presets."""
    if queueing not in ("central", "local"):
        raise ScenarioError("params.queueing", f"expected 'central' or 'local', got {queueing!r}")
    if routing not in ("jsq", "power-of-two"):
        raise ScenarioError("params.routing", f"expected 'jsq' or 'power-of-two', got {routing!r}")
    return str(queueing), str(routing)


def ec2(zeta: float = 0.9, num_servers: int = 20, horizon: float = 1000.0,
        queue_cap: int | None = 100_000, queueing: str = "central", routing: str = "jsq") -> Scenario:
    """RMS synthetic setup (rms.md §4.1): three EC2 VM types on identical servers
    (90 CPU units, 90 GB, 5000 GB); Poisson arrivals lambda = zeta * V with V the sum
    over servers of the average maximal configuration ((2/3, 11/3, 2/3) per server),
    exponential service of mean 1; objective: mean queue length.

    Args:
        zeta: traffic intensity in (0, 1) (the fraction of the capacity boundary).
        num_servers: L.
        horizon: simulated time units (1 unit = 1 mean service time).
        queue_cap: waiting jobs beyond which the run stops as unstable.
        queueing: ``central`` (one queue per type, the paper's RMS) or ``local``
            (per-server queues, RMS+JSQ of rms.md §2.4: ``--set queueing=local``).
        routing: with local queues, ``jsq`` (Algorithm 2) or ``power-of-two``
            (Remark 4); ignored with central queues.
    """
    zeta = _positive("zeta", zeta)
    queueing, routing = _queueing(queueing, routing)
    L = _positive("num_servers", num_servers, integer=True)
    cap = np.tile(EC2_SERVER, (L, 1))
    rates = zeta * boundary_point(EC2_TYPES, cap)
    source = PoissonTypedSource(rates, EC2_TYPES, Exponential(1.0), names=EC2_NAMES)
    return Scenario(
        name="ec2", capacity=cap, source=source, resources=("cpu", "memory", "disk"),
        horizon=_positive("horizon", horizon), objective="queue", queue_cap=queue_cap,
        queueing=queueing, routing=routing,
        description="RMS Table I: 3 EC2 VM types, L servers, intensity zeta of the capacity boundary",
        params={"zeta": zeta, "num_servers": L, "horizon": horizon, "rates": rates.tolist(),
                "queueing": queueing, "routing": routing},
    )


def bf_trap(num_servers: int = 10, rate1: float = 20.8, rate2: float = 10.4, horizon: float = 2000.0,
            queue_cap: int | None = 100_000, queueing: str = "central", routing: str = "jsq") -> Scenario:
    """The Best-Fit trap of RMS Fig. 1b (rms.md §4.2, §5.5): 10 servers of capacity 10,
    job sizes 2 and 5, Poisson rates (20.8, 10.4), exponential service of mean 1.
    The load is 0.936 of capacity, yet work-conserving Best-Fit that refills with the
    largest fitting job freezes every server in configuration (2, 1) and the queue grows.
    ``queueing``/``routing`` as in ``ec2`` (``local`` queues for RMS+JSQ).
    """
    L = _positive("num_servers", num_servers, integer=True)
    queueing, routing = _queueing(queueing, routing)
    sizes = np.array([[2.0], [5.0]])
    rates = np.array([_positive("rate1", rate1), _positive("rate2", rate2)])
    source = PoissonTypedSource(rates, sizes, Exponential(1.0), names=("size-2", "size-5"))
    return Scenario(
        name="bf-trap", capacity=np.full((L, 1), 10.0), source=source, resources=("units",),
        horizon=_positive("horizon", horizon), objective="queue", queue_cap=queue_cap,
        queueing=queueing, routing=routing,
        description="RMS Fig. 1b: sizes 2 and 5 on capacity-10 servers, where Best-Fit is unstable",
        params={"num_servers": L, "rate1": rates[0], "rate2": rates[1], "horizon": horizon,
                "queueing": queueing, "routing": routing},
    )


_SLOT_EPOCHS = EpochConfig(arrivals=False, completions=False, dummy_completions=False, tick_period=1.0)


def two_sizes(variant: str = "e1", rate: float | None = None, horizon: float = 100_000.0,
              queue_cap: int | None = 100_000) -> Scenario:
    """The two-size instances of bfjs-vqs.md §3.1–3.2, in slotted time (§1.10).

    ``variant="e1"``: one unit server, sizes 0.4 and 0.6 equally likely, Poisson
    0.014 jobs per slot, geometric service of mean 100 slots (VQS unstable).
    ``variant="e2"``: one server of capacity 10, sizes 2 (prob. 2/3) and 5 (1/3),
    Poisson 0.0306 jobs per slot, deterministic service of 100 slots (BF-J/S unstable).
    Decision epochs: one tick per slot, after the slot's departures and arrivals.
    """
    if variant == "e1":
        demand = DiscreteDemand([[0.4], [0.6]], [0.5, 0.5])
        service, cap, default_rate = Geometric(0.01), 1.0, 0.014
    elif variant == "e2":
        demand = DiscreteDemand([[2.0], [5.0]], [2.0 / 3.0, 1.0 / 3.0])
        service, cap, default_rate = Deterministic(100.0), 10.0, 0.0306
    else:
        raise ScenarioError("params.variant", f"expected 'e1' or 'e2', got {variant!r}")
    rate = default_rate if rate is None else _positive("rate", rate)
    source = SlottedSource(rate, demand, service)
    return Scenario(
        name="two-sizes", capacity=np.array([[cap]]), source=source, resources=("units",),
        horizon=_positive("horizon", horizon), objective="queue", queue_cap=queue_cap, epochs=_SLOT_EPOCHS,
        description="BF-J/S paper E1/E2: one server, two job sizes, slotted time",
        params={"variant": variant, "rate": rate, "horizon": horizon},
    )


def uniform_sizes(low: float = 0.1, high: float = 0.9, alpha: float = 0.9, num_servers: int = 5,
                  mean_service: float = 100.0, horizon: float = 100_000.0,
                  queue_cap: int | None = 100_000) -> Scenario:
    """Uniform job sizes in slotted time (bfjs-vqs.md §3.3, E3a: [0.01, 0.19]; E3b: [0.1, 0.9]).

    L unit servers, sizes U[low, high], geometric service of mean ``mean_service``
    slots, Poisson arrivals of alpha * mu * L / mean size jobs per slot (the
    corrected rate of §3.3; alpha = 1 is the capacity bound).
    """
    low, high = _positive("low", low), _positive("high", high)
    if not low < high <= 1.0:
        raise ScenarioError("params.high", f"need 0 < low < high <= 1, got low={low}, high={high}")
    L = _positive("num_servers", num_servers, integer=True)
    mu = 1.0 / _positive("mean_service", mean_service)
    alpha = _positive("alpha", alpha)
    rate = alpha * mu * L / ((low + high) / 2.0)
    source = SlottedSource(rate, UniformDemand([low], [high]), Geometric(mu))
    return Scenario(
        name="uniform-sizes", capacity=np.ones((L, 1)), source=source, resources=("units",),
        horizon=_positive("horizon", horizon), objective="queue", queue_cap=queue_cap, epochs=_SLOT_EPOCHS,
        description="BF-J/S paper E3: uniform sizes on L unit servers, slotted time, intensity alpha",
        params={"low": low, "high": high, "alpha": alpha, "num_servers": L, "mean_service": mean_service,
                "rate_per_slot": rate, "horizon": horizon},
    )


def autoscale_4vm(num_servers: int = 30, load: float = 1.0, horizon: float = 25.0) -> Scenario:
    """The consistent 4-VM instance SYN4 of autoscale.md §3.5, as a loss system.

    Servers (80 vCPU, 640 GB); VM types (2,2), (8,32), (4,64), (64,512) with reward
    rates 18, 96, 96, 1024 (8 per vCPU + 1 per GB) per unit time in service;
    Poisson arrivals at rate load * rho_j * L with rho = (2, 1/2, 4/3, 1) and
    exponential service of mean 1.  At load 1: greedy value U^(g) = 3196/3 and LP
    optimum U* = 1236 per server.
    """
    L = _positive("num_servers", num_servers, integer=True)
    load = _positive("load", load)
    rates = load * SYN4_RHO * L
    source = PoissonTypedSource(rates, SYN4_TYPES, Exponential(1.0), reward_rates=SYN4_REWARDS,
                                names=("vm-2-2", "vm-8-32", "vm-4-64", "vm-64-512"))
    return Scenario(
        name="autoscale-4vm", capacity=np.tile(SYN4_SERVER, (L, 1)), source=source,
        resources=("vcpu", "memory"), horizon=_positive("horizon", horizon), objective="reward",
        queueing="loss",
        description="Auto-scaling SYN4: 4 VM types, admit or reject, reward per unit time in service",
        params={"num_servers": L, "load": load, "horizon": horizon, "rho": SYN4_RHO.tolist(),
                "rewards": SYN4_REWARDS.tolist()},
    )


@dataclass(frozen=True)
class Preset:
    name: str
    build: Callable[..., Scenario]
    description: str

    def defaults(self) -> dict[str, Any]:
        sig = inspect.signature(self.build)
        return {k: p.default for k, p in sig.parameters.items()}


PRESETS: dict[str, Preset] = {
    p.name: p for p in (
        Preset("ec2", ec2, "RMS Table I: 3 EC2 VM types on L servers at intensity zeta (rms.md §4.1)"),
        Preset("bf-trap", bf_trap, "RMS Fig. 1b: sizes 2 and 5 on capacity-10 servers; Best-Fit unstable (rms.md §4.2)"),
        Preset("two-sizes", two_sizes, "BF-J/S paper E1/E2: one server, two sizes, slotted time (bfjs-vqs.md §3.1-3.2)"),
        Preset("uniform-sizes", uniform_sizes, "BF-J/S paper E3: uniform sizes, L unit servers, slotted (bfjs-vqs.md §3.3)"),
        Preset("autoscale-4vm", autoscale_4vm, "Auto-scaling SYN4: 4 VM types, admit/reject with rewards (autoscale.md §3.5)"),
    )
}


def register_preset(name: str, build: Callable[..., Scenario], description: str) -> None:
    """Add a named scenario (used by the modules ``clustergym/scenarios/presets_*.py``)."""
    if name in PRESETS and PRESETS[name].build is not build:
        raise ValueError(f"scenario name {name!r} is already registered")
    PRESETS[name] = Preset(name, build, description)


def make_preset(name: str, **params: Any) -> Scenario:
    """Build a preset; unknown parameters are errors that name the parameter."""
    if name not in PRESETS:
        raise ScenarioError("scenario", f"unknown scenario {name!r}; presets are {sorted(PRESETS)}")
    preset = PRESETS[name]
    allowed = preset.defaults()
    # kernel options every preset takes
    kernel = {k: params.pop(k) for k in ("job_memory", "warmup") if k in params}
    for key in params:
        if key not in allowed:
            raise ScenarioError(f"params.{key}", f"scenario {name!r} has no parameter {key!r}; "
                                                 f"it takes {sorted(allowed) + ['job_memory', 'warmup']}")
    sc = preset.build(**params)
    return dataclasses.replace(sc, **kernel) if kernel else sc


def _load_preset_modules() -> None:
    """Import every ``presets_*.py`` module beside this one: each registers its family's scenarios."""
    import importlib
    import pkgutil
    from pathlib import Path

    for m in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if m.name.startswith("presets_"):
            importlib.import_module(f"clustergym.scenarios.{m.name}")


_load_preset_modules()
