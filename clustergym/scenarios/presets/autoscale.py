"""Auto-scaling presets (Psychas & Ghaderi, Stochastic Systems 2022): loss systems with rewards.

* ``autoscale-4vm`` -- SYN4, the 4-VM instance of Sec. 7.1 in consistent units
  (docs/papers/autoscale.md#syn4).

* ``autoscale-intro`` -- the introduction's example (Sec. 1): VMs (0.6, 0.6) reward 4,
  (0.7, 0.1) and (0.1, 0.7) reward 3 on a (1, 1) server (here in tenths: (6,6),
  (7,1), (1,7) on (10,10)); ``variant`` a: rho = (1, 1/2, 1/2), b: (2, 1/4, 1/4).
* ``autoscale-example1`` -- Example 1 (Sec. 3.1): server (5, 4), types (2, 1) reward 10
  and (1, 2) reward 1; ``variant`` a: rho = (1, 1), b: (3/2, 1), c: (2, 1/2).
* ``autoscale-worst-case`` -- the worst-case family ``W_n`` (docs/papers/autoscale.md#worst-case; an additive
  realisation, see :func:`clustergym.theory.autoscale.worst_case_family`): rho = 1,
  greedy value ``(1 - (1 - 1/n)^n) U*``; ``eps`` multiplies ``u_1`` by ``1 + eps``
  (``n = 2, eps = 0.1`` is W2-epsilon with rewards doubled).

All: ``L`` identical servers, Poisson arrivals at rate ``load * rho_j * L``,
exponential service of mean 1, reward per unit time in service, queueing
``loss``, objective ``reward`` (episode return = reward rate x horizon).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from clustergym.errors import ScenarioError
from clustergym.scenarios.spec import Scenario
from clustergym.theory.autoscale import worst_case_family
from clustergym.validation import choice, number, positive
from clustergym.workloads import Exponential, PoissonTypedSource
from clustergym.workloads.replay import ReplaySource

__all__ = [
    "autoscale_google",
    "SYN4_TYPES",
    "SYN4_REWARDS",
    "SYN4_RHO",
    "SYN4_SERVER",
    "autoscale_4vm",
    "INTRO_TYPES",
    "INTRO_REWARDS",
    "INTRO_SERVER",
    "EX1_TYPES",
    "EX1_REWARDS",
    "EX1_SERVER",
    "autoscale_intro",
    "autoscale_example1",
    "autoscale_worst_case",
]

#: SYN4, Sec. 7.1's subset instance with every VM doubled (docs/papers/autoscale.md#syn4): (vCPU, GB).
SYN4_TYPES = np.array([[2.0, 2.0], [8.0, 32.0], [4.0, 64.0], [64.0, 512.0]])
SYN4_REWARDS = np.array([18.0, 96.0, 96.0, 1024.0])  # 8 per vCPU + 1 per GB
SYN4_RHO = np.array([2.0, 0.5, 4.0 / 3.0, 1.0])
SYN4_SERVER = np.array([80.0, 640.0])


INTRO_TYPES = np.array([[6.0, 6.0], [7.0, 1.0], [1.0, 7.0]])
INTRO_REWARDS = np.array([4.0, 3.0, 3.0])
INTRO_SERVER = np.array([10.0, 10.0])
INTRO_RHO = {"a": (Fraction(1), Fraction(1, 2), Fraction(1, 2)), "b": (Fraction(2), Fraction(1, 4), Fraction(1, 4))}

EX1_TYPES = np.array([[2.0, 1.0], [1.0, 2.0]])
EX1_REWARDS = np.array([10.0, 1.0])
EX1_SERVER = np.array([5.0, 4.0])
EX1_RHO = {"a": (Fraction(1), Fraction(1)), "b": (Fraction(3, 2), Fraction(1)), "c": (Fraction(2), Fraction(1, 2))}


def autoscale_4vm(num_servers: int = 30, load: float = 1.0, horizon: float = 25.0) -> Scenario:
    """The consistent 4-VM instance SYN4 (Sec. 7.1, Figs. 2-4; docs/papers/autoscale.md#syn4), as a loss system.

    Servers (80 vCPU, 640 GB); VM types (2,2), (8,32), (4,64), (64,512) with reward
    rates 18, 96, 96, 1024 (8 per vCPU + 1 per GB) per unit time in service;
    Poisson arrivals at rate load * rho_j * L with rho = (2, 1/2, 4/3, 1) and
    exponential service of mean 1.  At load 1: greedy value U^(g) = 3196/3 and LP
    optimum U* = 1236 per server.
    """
    L = positive(num_servers, "params.num_servers", integer=True)
    load = positive(load, "params.load")
    rates = load * SYN4_RHO * L
    source = PoissonTypedSource(
        rates,
        SYN4_TYPES,
        Exponential(1.0),
        reward_rates=SYN4_REWARDS,
        names=("vm-2-2", "vm-8-32", "vm-4-64", "vm-64-512"),
    )
    return Scenario(
        name="autoscale-4vm",
        capacity=np.tile(SYN4_SERVER, (L, 1)),
        source=source,
        resources=("vcpu", "memory"),
        horizon=positive(horizon, "params.horizon"),
        objective="reward",
        queueing="loss",
        description="Auto-scaling SYN4: 4 VM types, admit or reject, reward per unit time in service",
        params={
            "num_servers": L,
            "load": load,
            "horizon": horizon,
            "rho": SYN4_RHO.tolist(),
            "rewards": SYN4_REWARDS.tolist(),
        },
    )


def _loss_scenario(
    name: str,
    types: np.ndarray,
    rewards: Any,
    server: np.ndarray,
    rho: Any,
    L: int,
    load: float,
    horizon: float,
    description: str,
    params: dict[str, Any],
    names: tuple[str, ...] | None = None,
    resources: tuple[str, ...] | None = None,
) -> Scenario:
    rho_f = np.array([float(r) for r in rho])
    rates = load * rho_f * L
    source = PoissonTypedSource(
        rates, types, Exponential(1.0), reward_rates=np.array([float(u) for u in rewards]), names=names
    )
    R = types.shape[1]
    return Scenario(
        name=name,
        capacity=np.tile(server, (L, 1)),
        source=source,
        resources=resources or tuple(f"r{d}" for d in range(R)),
        horizon=positive(horizon, "params.horizon"),
        objective="reward",
        queueing="loss",
        description=description,
        params={
            **params,
            "num_servers": L,
            "load": load,
            "horizon": horizon,
            "rho": rho_f.tolist(),
            "rewards": [float(u) for u in rewards],
        },
    )


def autoscale_intro(variant: str = "a", num_servers: int = 30, load: float = 1.0, horizon: float = 25.0) -> Scenario:
    """The introduction's example (Sec. 1) as a loss system.

    Types (6,6) reward 4, (7,1) reward 3, (1,7) reward 3 on (10,10) servers (the paper's
    (0.6,0.6), (0.7,0.1), (0.1,0.7) on (1,1)).  ``variant`` a: rho = (1, 1/2, 1/2)
    (U^(g) = U* = 5 per server); b: rho = (2, 1/4, 1/4) (U^(g) = U* = 9/2).
    """
    v = choice(variant, "params.variant", INTRO_RHO)
    L = positive(num_servers, "params.num_servers", integer=True)
    load = positive(load, "params.load")
    return _loss_scenario(
        "autoscale-intro",
        INTRO_TYPES,
        INTRO_REWARDS,
        INTRO_SERVER,
        INTRO_RHO[v],
        L,
        load,
        horizon,
        "Auto-scaling intro example: reward 4 alone vs 3+3 packed, admit or reject",
        {"variant": v},
        names=("vm-6-6", "vm-7-1", "vm-1-7"),
        resources=("cpu", "memory"),
    )


def autoscale_example1(variant: str = "a", num_servers: int = 30, load: float = 1.0, horizon: float = 25.0) -> Scenario:
    """Example 1 of the paper (Sec. 3.1) as a loss system.

    Servers (5, 4); types (2, 1) with reward 10 and (1, 2) with reward 1.  ``variant``
    a: rho = (1, 1) (U^(g) = U* = 11); b: (3/2, 1) (16); c: (2, 1/2) (41/2).
    """
    v = choice(variant, "params.variant", EX1_RHO)
    L = positive(num_servers, "params.num_servers", integer=True)
    load = positive(load, "params.load")
    return _loss_scenario(
        "autoscale-example1",
        EX1_TYPES,
        EX1_REWARDS,
        EX1_SERVER,
        EX1_RHO[v],
        L,
        load,
        horizon,
        "Auto-scaling Example 1: server (5,4), types (2,1) reward 10 and (1,2) reward 1",
        {"variant": v},
        names=("type-2-1", "type-1-2"),
    )


def autoscale_worst_case(
    n: int = 3, eps: float = 0.0, num_servers: int = 30, load: float = 1.0, horizon: float = 25.0
) -> Scenario:
    """The worst-case family W_n (docs/papers/autoscale.md#worst-case): U^(g)/U* = 1 - (1 - 1/n)^n at rho = 1.

    ``n + 1`` resources realise ``K = down-closure{n e_1, ..., n e_{n-1}, e_n, (1,...,1)}``
    (plus harmless mixtures of the first ``n - 1`` types); rewards
    ``u_i = (n-1)^(i-1) n^(n-i)`` (``i < n``), ``u_n = n (n-1)^(n-1)``; ``U* = n^n``.
    ``eps`` multiplies ``u_1`` by ``1 + eps`` (a strict first greedy choice).
    """
    n_i = positive(n, "params.n", integer=True)
    if n_i < 2:
        raise ScenarioError("params.n", f"the family needs n >= 2, got {n}")
    eps_f = positive(eps, "params.eps", allow_zero=True)
    L = positive(num_servers, "params.num_servers", integer=True)
    load = positive(load, "params.load")
    demand, cap, u, _ = worst_case_family(n_i, Fraction(eps_f).limit_denominator(10**6))
    return _loss_scenario(
        "autoscale-worst-case",
        demand,
        u,
        cap,
        [1] * n_i,
        L,
        load,
        horizon,
        "Auto-scaling worst-case family W_n: greedy ratio 1 - (1 - 1/n)^n",
        {"n": n_i, "eps": eps_f},
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
    scope = dict(locals())  # the arguments, before the imports below add names
    # the trace modules (pandas) are imported when a trace preset is built, not with this module
    from clustergym.scenarios.presets.traces import trace_params
    from clustergym.traces import transforms as T
    from clustergym.traces.cache import google_table
    from clustergym.traces.transforms import pow_half_names

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
        params=trace_params(scope, table, steps, jobs_per_band=np.bincount(band, minlength=3).tolist()),
    )
