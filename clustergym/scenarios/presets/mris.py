"""MRIS presets (Fan & Liang, ICPP 2024, Sec. 4, Sec. 7): fixed instances for weighted completion time.

Every preset here is *clairvoyant* (a job's duration and weight are visible from its arrival,
as in the paper's model, Sec. 3), has the objective ``weighted-system`` (reward ``-∫ Σ w_j in system dt``, so
the episode return is minus the weighted flow time ``Σ w_j (C_j - r_j)``), an infinite horizon
(the episode ends when every job has completed), identical machines of capacity 1 in every
resource (demands are fractions of a machine), and declares in ``params["gamma0"]`` the time
unit of MRIS's interval grid (the instance's smallest processing time, as the paper's
normalisation and the authors' code do; docs/papers/mris.md#gamma0).

The paper's metric is AWCT = (1/N) Σ w_j C_j with *absolute* completion times (Sec. 3;
docs/papers/mris.md#awct); :func:`clustergym.reproduce.mris.paper_metrics` computes it from a finished episode.

* ``mris-lemma41`` -- the Lemma 4.1 adversarial instance (Sec. 4): one machine, job 0 at
  r=0 with p=P and full demand, then N-1 unit jobs of demand 1/(N-1) at r=delta_r.  Defaults
  N=65, P=64, delta_r=0.5, R=2: PQ, TETRIS, BF-EXEC total 4224, MRIS 256, optimum 161.5.
* ``mris-patience`` -- the Figure 7 synthetic input (Sec. 7.5.4, as the authors'
  generator builds it, docs/papers/mris.md#patience): one machine, R=3, a 14-unit job of demand 0.99 at r=0.01, then N-1
  small jobs at r=0.1 with demands U[0, 0.1) and p = U·2^floor(10 i/N)/100.  Seeded.
* ``mris-poisson`` -- a stochastic instance family of the paper's model (Sec. 3): Poisson arrivals on
  ``M`` machines, ``R`` resources, two weight classes, heavy-tailed processing times, a finite
  horizon; each seed is a new instance (see :func:`mris_poisson`).
* ``mris-alibaba`` -- the trace-driven weighted scenario.  The paper's Azure packing trace
  (2020, with priorities) is not available here; the substitute is the Alibaba GPU v2023 pod
  list of the trace directory (7,091 pods with a binary QoS class over 33.6 days), with the QoS
  mapped to weights (see :func:`mris_alibaba`).  Built lazily: the module imports without the
  traces (building the preset raises ``TraceNotFoundError`` when they are absent).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from clustergym._cache import Cache
from clustergym.core.simulator import EpochConfig
from clustergym.errors import ScenarioError
from clustergym.scenarios.spec import Scenario
from clustergym.theory.mris import MRISInstance
from clustergym.validation import choice, number, positive

__all__ = [
    "instance_scenario",
    "lemma41_instance",
    "patience_instance",
    "mris_lemma41",
    "mris_patience",
    "mris_poisson",
    "mris_alibaba",
    "ALIBABA_WEIGHT_MAPS",
    "ALIBABA_MACHINE",
]

#: decision epochs of the presets (arrivals and completions; agents add wake-ups themselves)
MRIS_EPOCHS = EpochConfig(arrivals=True, completions=True, dummy_completions=False)


def instance_scenario(
    inst: MRISInstance,
    name: str | None = None,
    description: str = "",
    params: dict[str, Any] | None = None,
    resources: tuple[str, ...] | None = None,
) -> Scenario:
    """The instance as a clairvoyant, weighted-completion scenario (replayed once, horizon inf)."""
    from clustergym.workloads.replay import ReplaySource

    nm = name or inst.name
    src = ReplaySource(inst.release, inst.demand, inst.proc, weight=inst.weight, source=nm)
    R = inst.num_resources
    return Scenario(
        name=nm,
        capacity=np.ones((inst.machines, R)),
        source=src,
        resources=resources or tuple(f"r{l}" for l in range(R)),
        horizon=math.inf,
        objective="weighted-system",
        epochs=MRIS_EPOCHS,
        clairvoyant=True,
        description=description or f"MRIS instance: {inst.n} jobs on {inst.machines} machine(s)",
        params={
            **inst.params,
            **(params or {}),
            "gamma0": float(inst.proc.min()),
            "machines": inst.machines,
            "jobs": inst.n,
        },
    )


# ---------------------------------------------------------------------------------------------- Lemma 4.1


def lemma41_instance(n: int = 65, P: float = 64.0, delta_r: float = 0.5, R: int = 2) -> MRISInstance:
    """The Lemma 4.1 instance (Sec. 4): M = 1; job 0: r=0, p=P, d=1; jobs 1..n-1: r=delta_r, p=1,
    d=1/(n-1); all weights 1.  Closed forms: PQ = P + (n-1)(P+1); OPT = (n-1)(1+delta_r) + 1 + delta_r + P;
    MRIS (gamma0 = 1, delta_r <= 1, P a power of two >= 2) = 2(n-1) + 2P."""
    n = positive(n, "params.n", integer=True)
    if n < 2:
        raise ScenarioError("params.n", f"need at least 2 jobs, got {n}")
    P = positive(P, "params.P")
    if P < 1:
        raise ScenarioError("params.P", f"must be >= 1 (p_j >= 1 after normalisation), got {P}")
    delta_r = positive(delta_r, "params.delta_r")
    R = positive(R, "params.R", integer=True)
    rel = np.r_[0.0, np.full(n - 1, float(delta_r))]
    proc = np.r_[float(P), np.ones(n - 1)]
    dem = np.vstack([np.ones((1, R)), np.full((n - 1, R), 1.0 / (n - 1))])
    return MRISInstance(
        rel, proc, np.ones(n), dem, machines=1, name="mris-lemma41", params={"n": n, "P": P, "delta_r": delta_r, "R": R}
    )


def mris_lemma41(n: int = 65, P: float = 64.0, delta_r: float = 0.5, R: int = 2) -> Scenario:
    """Lemma 4.1 adversarial instance (Sec. 4); see :func:`lemma41_instance`."""
    inst = lemma41_instance(n, P, delta_r, R)
    opt = (n - 1) * (1 + delta_r) + 1 + delta_r + P
    return instance_scenario(
        inst,
        "mris-lemma41",
        "MRIS Lemma 4.1: one full-demand job of length P at 0, N-1 small unit jobs just after",
        params={"pq_total": P + (n - 1) * (P + 1), "opt_total": opt},
    )


# ---------------------------------------------------------------------------------------------- Figure 7


def patience_instance(
    n: int = 2500,
    seed: int = 0,
    R: int = 3,
    big_p: float = 14.0,
    big_release: float = 0.01,
    small_release: float = 0.1,
    big_demand: float = 0.99,
    small_demand: float = 0.1,
) -> MRISInstance:
    """The Figure 7 input (Sec. 7.5.4; docs/papers/mris.md#patience): M = 1; job 0: r=0.01, p=14, d=0.99 each; jobs i=1..n-1: r=0.1,
    d_il ~ U[0, 0.1), p_i = U·2^floor(10 i / n)/100 with U ~ U(0, 1] (the authors' generator draws U[0, 1); the
    open end at 0 keeps p > 0); weights 1.  ``numpy.random.default_rng(seed)``: demands first, then p."""
    n = positive(n, "params.n", integer=True)
    if n < 2:
        raise ScenarioError("params.n", f"need at least 2 jobs, got {n}")
    R = positive(R, "params.R", integer=True)
    rng = np.random.default_rng(int(seed))
    d_small = rng.random((n - 1, R)) * float(small_demand)
    i = np.arange(1, n)
    p_small = (1.0 - rng.random(n - 1)) * np.ldexp(1.0, (10 * i) // n) / 100.0
    rel = np.r_[float(big_release), np.full(n - 1, float(small_release))]
    proc = np.r_[float(big_p), p_small]
    dem = np.vstack([np.full((1, R), float(big_demand)), d_small])
    return MRISInstance(
        rel,
        proc,
        np.ones(n),
        dem,
        machines=1,
        name="mris-patience",
        params={"n": n, "seed": int(seed), "R": R, "big_p": float(big_p)},
    )


def mris_patience(n: int = 2500, seed: int = 0) -> Scenario:
    """Figure 7 "patience" instance (Sec. 7.5.4); see :func:`patience_instance`."""
    return instance_scenario(
        patience_instance(n, seed),
        "mris-patience",
        "MRIS Figure 7: a 14-unit job of demand 0.99 at 0.01, then N-1 small jobs at 0.1 (M=1, R=3)",
    )


# ---------------------------------------------------------------------------------------------- stochastic


def mris_poisson(
    num_servers: int = 4,
    num_resources: int = 3,
    load: float = 0.8,
    high_weight: float = 2.0,
    high_share: float = 0.5,
    demand_low: float = 0.02,
    demand_high: float = 0.5,
    sigma: float = 1.2,
    gamma0: float = 0.0625,
    horizon: float = 80.0,
) -> Scenario:
    """A stochastic family of MRIS instances (the model of Sec. 3, on the scale of Sec. 7): a new instance per seed.

    ``M`` identical machines with ``R`` resources of capacity 1; Poisson arrivals of two weight
    classes (weight ``high_weight`` with probability ``high_share``, else 1: a binary priority, as the
    trace's, Sec. 7.1); demands ``U[demand_low, demand_high]`` per resource; processing times
    log-normal of mean 1 and log-standard deviation ``sigma`` (1.2: the median is 0.49, one job in a
    hundred runs longer than 8), the same for both classes.  Clairvoyant: a job's processing time
    and weight are known at its release (Sec. 3).  Arrival rate ``load x M / (E[p] E[d])``, so
    ``load`` is the offered load of each resource.  The horizon is finite (the paper's instances
    are finite job sets; here a seed's jobs are those released before the horizon), so the objective
    ``weighted-system`` integrates the weighted number of jobs in the system over the horizon:
    ``Σ_j w_j`` (time job ``j`` spent in the system before the horizon).
    ``gamma0`` is MRIS's time unit (declared in ``params``, docs/papers/mris.md#gamma0): the
    interval grid ``γ_k = gamma0 2^k``; 1/16 of the mean processing time.
    """
    from clustergym.workloads import LogNormal, PoissonClassSource, UniformDemand

    M = positive(num_servers, "params.num_servers", integer=True)
    R = positive(num_resources, "params.num_resources", integer=True)
    load = positive(load, "params.load")
    wh = positive(high_weight, "params.high_weight")
    share = number(high_share, "params.high_share", lo=0.0, hi=1.0)
    lo = positive(demand_low, "params.demand_low", allow_zero=True)
    hi = number(demand_high, "params.demand_high", lo=lo, hi=1.0)
    sigma = positive(sigma, "params.sigma", allow_zero=True)
    g0 = positive(gamma0, "params.gamma0")
    mean_d = 0.5 * (lo + hi)
    if mean_d <= 0:
        raise ScenarioError("params.demand_high", "the mean demand must be > 0")
    rate = load * M / mean_d  # E[p] = 1
    law = UniformDemand([lo] * R, [hi] * R)
    src = PoissonClassSource(
        rate,
        [1.0 - share, share],
        np.full((2, R), mean_d),
        LogNormal(1.0, sigma),
        demand_laws=[law, law],
        names=("weight-1", f"weight-{wh:g}"),
        weights=[1.0, wh],
    )
    return Scenario(
        name="mris-poisson",
        capacity=np.ones((M, R)),
        source=src,
        resources=tuple(f"r{l}" for l in range(R)),
        horizon=positive(horizon, "params.horizon"),
        objective="weighted-system",
        epochs=MRIS_EPOCHS,
        clairvoyant=True,
        description="MRIS model (Sec. 3), stochastic: Poisson arrivals, two weight classes, log-normal processing times",
        params={
            "num_servers": M,
            "num_resources": R,
            "load": load,
            "rate": rate,
            "high_weight": wh,
            "high_share": share,
            "demand_low": lo,
            "demand_high": hi,
            "sigma": sigma,
            "gamma0": g0,
            "horizon": horizon,
        },
    )


# ---------------------------------------------------------------------------------------------- trace-driven

#: Alibaba GPU v2023 QoS class -> weight.  LS (latency-sensitive) is the high-priority class, BE
#: (best-effort) the low-priority one, like the Azure trace's priorities 0 and 1; ``mris`` (default, the
#: authors' code's w = priority + 1): LS -> 1, BE -> 2; ``mris-natural``: LS -> 2, BE -> 1.
ALIBABA_WEIGHT_MAPS: dict[str, dict[str, float]] = {
    "mris": {"LS": 1.0, "BE": 2.0},
    "mris-natural": {"LS": 2.0, "BE": 1.0},
}
#: the machine of ``mris-alibaba``: the trace's most common node shape (549 of 1,523 nodes)
ALIBABA_MACHINE = (96.0, 384.0, 8.0)

#: the trace directory -> (pods by arrival, table); 1: one trace directory per session
_ALIBABA: Cache[Any] = Cache(1)


def _alibaba_pods(trace_dir: str | None):
    def load() -> Any:
        from clustergym.traces.alibaba import load_alibaba_gpu_v2023

        # pods created before the main window (trace time 1e7 s) are dropped, as the paper ignores the Azure
        # VMs with negative start times (alive when collection began)
        table = load_alibaba_gpu_v2023(trace_dir, window=(10_000_000.0, None))
        return table.jobs.sort_values("arrival", kind="stable").reset_index(drop=True), table

    return _ALIBABA.get(str(trace_dir), load)


def _qos_pods_that_fit(pods: Any, weight_map: str) -> tuple[Any, np.ndarray, dict[str, int]]:
    """The pods of a QoS class the weight map weighs that fit :data:`ALIBABA_MACHINE`: ``(pods, (n, 3)
    demands as fractions of the machine, counts dropped per reason)``."""
    keep = pods["qos"].isin(list(ALIBABA_WEIGHT_MAPS[weight_map])).to_numpy()
    cap = np.asarray(ALIBABA_MACHINE)
    dem = pods[["cpu", "memory", "gpu"]].to_numpy(dtype=np.float64) / cap
    fits = np.all(dem <= 1.0, axis=1)
    dropped = {"qos not LS/BE": int((~keep).sum()), "larger than the machine": int((keep & ~fits).sum())}
    sel = keep & fits
    return pods[sel], dem[sel], dropped


def _downsampling(n_jobs: int | None, offset: int, total: int) -> tuple[int | None, int, int]:
    """The paper's downsampling of ``total`` pods to ``n_jobs``: ``(n_jobs, offset, f)``,
    every f-th pod from ``offset``, ``f = floor(total / n_jobs)`` (``f = 1``, all pods, for ``None``)."""
    if n_jobs is None:
        return None, 0, 1
    n_jobs = positive(n_jobs, "params.n_jobs", integer=True)
    if n_jobs > total:
        raise ScenarioError("params.n_jobs", f"the trace keeps {total} pods, asked for {n_jobs}")
    f = total // n_jobs
    offset = number(offset, "params.offset", integer=True)
    if not 0 <= offset < f:
        raise ScenarioError("params.offset", f"expected 0 <= offset < f = {f}, got {offset}")
    return n_jobs, offset, f


def _augmented(dem: np.ndarray, extra: int, seed: int) -> np.ndarray:
    """``dem`` with ``extra`` more resources (MRIS Fig. 6 resource scaling, Sec. 7.5.3): each job's demand for
    each is the CPU demand of a job drawn uniformly with replacement (``default_rng(seed)``)."""
    if not extra:
        return dem
    total = len(dem)
    pool = dem[:, 0]
    aug = pool[np.random.default_rng(seed).integers(0, total, size=(total, extra))]
    return np.hstack([dem, aug])


def _weighted_replay(
    pods: Any, dem: np.ndarray, weights: Any, unit: float, s: float, resources: tuple[str, ...], source: str
) -> Any:
    """The pods as a weighted :class:`~clustergym.workloads.replay.ReplaySource`: weight from the QoS class
    (``weights``), times in ``unit`` seconds, arrivals divided by the traffic scaling ``s``."""
    from clustergym.workloads.replay import ReplaySource

    return ReplaySource(
        pods["arrival"].to_numpy() / unit / s,
        dem,
        pods["duration"].to_numpy() / unit,
        weight=pods["qos"].map(weights).to_numpy(dtype=np.float64),
        source=source,
        columns={"time": "arrival", "work": "duration", "weight": "qos", "demand": list(resources)},
    )


def mris_alibaba(
    n_jobs: int | None = None,
    offset: int = 0,
    num_servers: int = 1,
    traffic_scaling: float = 1.0,
    weight_map: str = "mris",
    extra_resources: int = 0,
    augment_seed: int = 0,
    time_unit: float = 86400.0,
    trace_dir: str | None = None,
) -> Scenario:
    """Trace-driven weighted scenario on the Alibaba GPU v2023 pods (substitute for the Azure packing trace).

    Why this trace: like the paper's Azure packing trace (VM requests with a high/low priority, lifetimes
    from seconds to 90 days over a 12.5-day window, demands as fractions of a machine), it holds
    requests with a binary QoS class (LS latency-sensitive / BE best-effort), heavy-tailed lifetimes
    (4 s to 34 days; median 10 min) over a 33.6-day window, and multi-resource demands.

    Preprocessing: the loader's pods (phases Running/Succeeded/Failed) created in the main window (from
    trace time 1e7 s; the 58 pods created earlier, alive when the window opens, are dropped as the paper
    drops the Azure VMs with negative start times), QoS LS or BE only (Burstable and Guaranteed dropped);
    demands (CPU, memory, GPU) as fractions of the most common node shape :data:`ALIBABA_MACHINE`
    (96 vCPU, 384 GiB, 8 GPUs), pods larger than it dropped (counted);
    weights from :data:`ALIBABA_WEIGHT_MAPS`; times in ``time_unit`` seconds (days, as the paper);
    arrivals divided by ``traffic_scaling``.  ``n_jobs``: downsample as the paper (every f-th pod from
    ``offset``, ``f = floor(total / n_jobs)``); ``None`` keeps every pod (7,091).
    Load: the 7,091 pods keep about 1.6 machines' CPUs (and GPUs) busy on average over the 33.6-day
    window, so M = 1 is overloaded and M = 4 lightly loaded; ``traffic_scaling`` > 1 packs the arrivals
    into a shorter window (more arrivals per unit time, the axis of the paper's Fig. 3), up to the heavy
    regime in which most processing follows the last arrival.

    ``extra_resources`` (the paper's Fig. 6 resource scaling, Sec. 7.5.3, as the authors' code resolves
    it; docs/papers/mris.md#resource-scaling): k more resources; job j's demand for each is the CPU demand of a pod drawn uniformly at random,
    with replacement, from all kept pods (``numpy.random.default_rng(augment_seed)``), independently per
    (job, resource).
    """
    M = positive(num_servers, "params.num_servers", integer=True)
    extra = positive(extra_resources, "params.extra_resources", integer=True, allow_zero=True)
    unit = positive(time_unit, "params.time_unit")
    s = positive(traffic_scaling, "params.traffic_scaling")
    choice(weight_map, "params.weight_map", ALIBABA_WEIGHT_MAPS)
    pods, table = _alibaba_pods(trace_dir)
    pods, dem, dropped = _qos_pods_that_fit(pods, weight_map)
    total = len(pods)
    n_jobs, offset, f = _downsampling(n_jobs, offset, total)
    idx = np.arange(offset, total, f)[: (n_jobs or total)]
    dem = _augmented(dem, extra, int(augment_seed))
    pods, dem = pods.iloc[idx], dem[idx]
    resources = ("cpu", "memory", "gpu") + tuple(f"aug{l}" for l in range(extra))
    src = _weighted_replay(pods, dem, ALIBABA_WEIGHT_MAPS[weight_map], unit, s, resources, table.source)
    w, p = src.weight, src.work
    return Scenario(
        name="mris-alibaba",
        capacity=np.ones((M, len(resources))),
        source=src,
        resources=resources,
        horizon=math.inf,
        objective="weighted-system",
        epochs=MRIS_EPOCHS,
        clairvoyant=True,
        description="MRIS trace-driven: Alibaba GPU v2023 pods, weight from QoS LS/BE (Azure substitute)",
        params={
            "n_jobs": n_jobs,
            "offset": offset,
            "num_servers": M,
            "traffic_scaling": s,
            "weight_map": weight_map,
            "extra_resources": extra,
            "augment_seed": int(augment_seed),
            "time_unit": unit,
            "trace_dir": trace_dir,
            "f": f,
            "jobs": int(len(pods)),
            "dropped": dropped,
            "machine": list(ALIBABA_MACHINE),
            "gamma0": float(p.min()),
            "weights": {str(k): int(v) for k, v in zip(*np.unique(w, return_counts=True))},
            "trace_report": table.report.to_dict(),
        },
    )
