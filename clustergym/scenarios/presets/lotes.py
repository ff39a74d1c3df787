"""LoTES presets (Tran et al., J. Scheduling 2018, Sec. 5): heterogeneous machine configurations,
job classes with per-class demand laws (Phi) and machine-dependent speeds (Omega).

* ``lotes-table`` -- Table 1 machines (10 configurations, counts times
  ``machine_scale``, at least one each) and Table 2 classes (alpha, mean
  cores/memory, mean time in hours) with Poisson arrivals at ``load`` times the
  Stage-2 lambda* of the instance: a proxy of the Google experiment of Sec. 5.3
  (a sanity check, not the trace).  Actual demands are truncated Gaussians around the
  class means (cv ``cv``; ``cv=0`` gives every job its class profile).
* ``lotes-phi`` -- Experiment 2 (Sec. 5.4.2, Fig. 11): the Table-1 capacities with
  ``machines_per_config`` machines each (paper: 1000), nine classes with
  ``alpha = 1/9``, ``r_kl = 0.025 + phi_kl``, ``phi_kl ~ U[-Phi, Phi]``,
  ``mu_jk = 1/u_k``, ``u_k ~ U[0, 1]``, work ~ Exp(1) (hours), demands
  truncated Gaussian (location ``r_kl``, cv 0.5, in ``[0, 1]``), load 0.97
  of lambda*.
* ``lotes-omega`` -- Experiment 3 (Sec. 5.4.3, Figs. 12-13): the same classes at ``phi`` (default
  0.006, docs/papers/lotes.md#phi-misprint), ``mu_jk = omega_jk / u_k`` with ``omega_jk ~ U[1 -
  Omega, 1 + Omega]`` (docs/papers/lotes.md#omega-rates; ``literal_mu=True`` gives the printed
  ``u_k omega_jk``), load 0.90 (or 0.95) of that instance's lambda*.

Instances.  ``instance`` (0, 1, 2, ...) seeds the random draws of an instance,
independently of the episode seed (which drives arrivals, demands and work).
The draws are made once per instance as unit variables and scaled:
``phi_kl = Phi * v_kl`` with ``v_kl ~ U[-1, 1]``, and ``omega_jk = 1 + Omega *
w_jk`` with ``w_jk ~ U[-1, 1]``.  So instance ``i`` has the same ``u_k`` and
``v_kl`` at every Phi (common random numbers across the Phi sweep; instance
``i`` of Experiment 3 uses the ``r_kl`` and ``u_k`` of instance ``i`` of
Experiment 2 at Phi = 0.006, as the paper says it reuses them), and the same ``w_jk`` at
every Omega.  Each value keeps the marginal law the paper gives; only the
pairing across sweep values is a choice (it makes the sweeps smoother).

Load.  ``load`` multiplies lambda*_2, the optimum of the machine assignment
LP of *this* instance at *this* scale, before rounding (docs/papers/lotes.md#lambda-star),
computed with the nominal profiles ``r_kl`` (docs/papers/lotes.md#truncated-gaussian: the
realised truncated-Gaussian mean is about 1.028 r_kl, so load 0.97 is close to critical).  ``params`` records
lambda*_1, lambda*_2, lambda_round and the realised means.

Time unit: hours.  Objective: jobs waiting (mean wait = mean queue / lambda by
Little's law).  ``queue_cap`` (default ``20 x machines``) stops a run whose queue
explodes and flags it unstable.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from clustergym._cache import Cache
from clustergym.errors import ScenarioError
from clustergym.scenarios.spec import Scenario
from clustergym.validation import positive
from clustergym.workloads import Exponential, PoissonClassSource
from clustergym.workloads.replay import ReplaySource

__all__ = [
    "lotes_google",
    "LOTES_SEED",
    "TABLE1",
    "TABLE2",
    "generated_instance",
    "lotes_omega",
    "lotes_phi",
    "lotes_table",
    "scenario_lambdas",
]

#: Table 1 (verbatim): machines, cores, memory (normalised); row order = Greedy's first-fit order
TABLE1 = np.array(
    [
        [6732, 0.50, 0.50],
        [3863, 0.50, 0.25],
        [1001, 0.50, 0.75],
        [795, 1.00, 1.00],
        [126, 0.25, 0.25],
        [52, 0.50, 0.12],
        [5, 0.50, 0.03],
        [5, 0.50, 0.97],
        [3, 1.00, 0.50],
        [1, 1.00, 0.06],
    ]
)
#: Table 2 (verbatim), one row per class: avg time (h), avg cores, avg memory, proportion
TABLE2 = np.array(
    [[0.03, 0.02, 0.01, 0.23], [0.04, 0.02, 0.03, 0.46], [0.04, 0.07, 0.03, 0.30], [0.03, 0.20, 0.06, 0.01]]
)
#: root seed of the generated instances (combined with the instance number)
LOTES_SEED = 20180227
NUM_CLASSES = 9
BASE_REQ = 0.025


def generated_instance(
    phi: float, instance: int, *, omega: float = 0.0, literal_mu: bool = False, num_classes: int = NUM_CLASSES
) -> dict[str, np.ndarray]:
    """The random parameters of a generated instance (Sec. 5.4.2-5.4.3).

    Returns ``r`` (K, 2), ``u`` (K,), ``omega`` (10, K) and ``mu`` (10, K).
    """
    rng = np.random.default_rng([LOTES_SEED, int(instance)])
    v = rng.uniform(-1.0, 1.0, size=(num_classes, 2))
    u = rng.uniform(0.0, 1.0, size=num_classes)
    w = np.random.default_rng([LOTES_SEED, int(instance), 1]).uniform(-1.0, 1.0, size=(TABLE1.shape[0], num_classes))
    u = np.maximum(u, 1e-6)  # U[0, 1] can return exactly 0
    r = BASE_REQ + phi * v
    om = 1.0 + omega * w
    mu = u[None, :] * om if literal_mu else om / u[None, :]
    return {"r": r, "u": u, "omega": om, "mu": mu}


def scenario_lambdas(
    capacity: np.ndarray, speed: np.ndarray, alpha: np.ndarray, r: np.ndarray, mean_work: np.ndarray
) -> dict[str, float]:
    """lambda*_1, lambda*_2 and lambda_round of an instance (Stages 1-2 of LoTES)."""
    from clustergym.theory.lotes import (
        LotesInputs,
        cached_plan,
        group_machines,
    )

    cap, n, conf_of = group_machines(capacity, speed)
    first = np.array([int(np.flatnonzero(conf_of == j)[0]) for j in range(cap.shape[0])])
    mu = speed[first] / mean_work[None, :]
    plan = cached_plan(LotesInputs(cap, n, conf_of, alpha, r, mu))
    return {"lambda_stage1": plan.lam1, "lambda_stage2": plan.lam2, "lambda_round": plan.lam_round}


#: the instance's arrays as bytes -> its lambda*; 64: the instances of a sweep over load or horizon
_LAMBDAS: Cache[dict[str, float]] = Cache(64)


def _build(
    name: str,
    cap_rows: np.ndarray,
    counts: np.ndarray,
    alpha: np.ndarray,
    r: np.ndarray,
    mu: np.ndarray,
    mean_work: np.ndarray,
    load: float,
    horizon: float,
    cv: float,
    queue_cap: Any,
    description: str,
    params: dict[str, Any],
    names: tuple[str, ...] | None = None,
) -> Scenario:
    capacity = np.repeat(cap_rows, counts, axis=0)
    # speed[m, k] = mu_jk * mean_work_k: a job of work w (mean mean_work_k) runs w / speed
    speed = np.repeat(mu * mean_work[None, :], counts, axis=0)
    key = (capacity.tobytes(), speed.tobytes(), alpha.tobytes(), r.tobytes(), mean_work.tobytes())
    lams = _LAMBDAS.get(key, lambda: scenario_lambdas(capacity, speed, alpha, r, mean_work))
    rate = load * lams["lambda_stage2"]
    services = [Exponential(float(m)) for m in mean_work]
    source = PoissonClassSource(
        rate, alpha, r, services if len(set(mean_work.tolist())) > 1 else services[0], cv=cv, names=names
    )
    L = int(capacity.shape[0])
    cap = 20 * L if queue_cap == "auto" else queue_cap
    return Scenario(
        name=name,
        capacity=capacity,
        source=source,
        resources=("cores", "memory"),
        horizon=horizon,
        objective="queue",
        queueing="central",
        queue_cap=cap,
        speed=speed,
        description=description,
        params={
            **params,
            "load": load,
            "horizon": horizon,
            "cv": cv,
            "queue_cap": cap,
            "rate": rate,
            **lams,
            "machines": counts.tolist(),
            "alpha": alpha.tolist(),
            "r": r.tolist(),
            "mu": mu.tolist(),
            "realised_mean": source.realised_mean().tolist(),
        },
    )


def _queue_cap(value: Any) -> Any:
    if value is None or value == "auto":
        return value
    return positive(value, "params.queue_cap", integer=True)


def lotes_table(
    machine_scale: float = 0.01, load: float = 0.9, horizon: float = 2.0, cv: float = 0.5, queue_cap: Any = "auto"
) -> Scenario:
    """Table 1 machines x Table 2 classes (Sec. 5.3 inputs; a proxy of the Google experiment), time in hours.

    Args:
        machine_scale: fraction of each configuration's machines (1.0 = the 12,583 of Table 1;
            at least one machine per configuration).
        load: arrival rate as a fraction of lambda*_2 of the scaled instance.
        horizon: hours.
        cv: coefficient of variation of the per-job demands around the class means (0: exact).
        queue_cap: waiting jobs beyond which a run stops as unstable (``auto``: 20 x machines; ``None``: never).
    """
    scale = positive(machine_scale, "params.machine_scale")
    load = positive(load, "params.load")
    horizon = positive(horizon, "params.horizon")
    cv = positive(cv, "params.cv", allow_zero=True)
    counts = np.maximum(1, np.round(TABLE1[:, 0] * scale)).astype(np.int64)
    alpha = TABLE2[:, 3] / TABLE2[:, 3].sum()
    r = TABLE2[:, 1:3].copy()
    mean_work = TABLE2[:, 0].copy()
    mu = np.tile(1.0 / mean_work, (TABLE1.shape[0], 1))
    return _build(
        "lotes-table",
        TABLE1[:, 1:],
        counts,
        alpha,
        r,
        mu,
        mean_work,
        load,
        horizon,
        cv,
        _queue_cap(queue_cap),
        "LoTES Tables 1-2: 10 machine configurations, 4 Google job classes, Poisson at load x lambda*",
        {"machine_scale": scale},
    )


def _generated(
    name: str,
    phi: float,
    omega: float,
    instance: Any,
    machines_per_config: Any,
    load: float,
    horizon: float,
    literal_mu: bool,
    queue_cap: Any,
    description: str,
    cv: float = 0.5,
) -> Scenario:
    phi = positive(phi, "params.phi", allow_zero=True)
    if phi > BASE_REQ:
        raise ScenarioError(
            "params.phi", f"must be <= {BASE_REQ} (r_kl = 0.025 + U[-phi, phi] must stay >= 0), got {phi}"
        )
    omega = positive(omega, "params.omega", allow_zero=True)
    if omega >= 1:
        raise ScenarioError("params.omega", f"must be < 1 (omega_jk ~ U[1 - Omega, 1 + Omega] > 0), got {omega}")
    inst = positive(instance, "params.instance", integer=True, allow_zero=True)
    n = positive(machines_per_config, "params.machines_per_config", integer=True)
    load = positive(load, "params.load")
    horizon = positive(horizon, "params.horizon")
    d = generated_instance(phi, inst, omega=omega, literal_mu=bool(literal_mu))
    K = d["r"].shape[0]
    counts = np.full(TABLE1.shape[0], n, dtype=np.int64)
    alpha = np.full(K, 1.0 / K)
    cv = positive(cv, "params.cv", allow_zero=True)
    return _build(
        name,
        TABLE1[:, 1:],
        counts,
        alpha,
        d["r"],
        d["mu"],
        np.ones(K),
        load,
        horizon,
        cv,
        _queue_cap(queue_cap),
        description,
        {
            "phi": phi,
            "omega": omega,
            "instance": inst,
            "machines_per_config": n,
            "literal_mu": bool(literal_mu),
            "u": d["u"].tolist(),
        },
    )


def lotes_phi(
    phi: float = 0.009,
    instance: int = 0,
    machines_per_config: int = 100,
    load: float = 0.97,
    horizon: float = 100.0,
    queue_cap: Any = "auto",
    cv: float = 0.5,
) -> Scenario:
    """LoTES Experiment 2 (Sec. 5.4.2): nine classes around 0.025 spread by ``phi``.

    Args:
        phi: Phi in [0, 0.025] (paper: 0 to 0.015 by 0.003).
        instance: which random instance (paper: five per Phi).
        machines_per_config: machines in each of the 10 Table-1 configurations (paper: 1000).
        load: fraction of the instance's lambda*_2 (paper: 0.97).
        horizon: hours (paper: 100).
        queue_cap: as in ``lotes-table``.
        cv: coefficient of variation of the per-job demands (paper: 0.5; 0 = every job its class profile,
            an ablation).
    """
    return _generated(
        "lotes-phi",
        phi,
        0.0,
        instance,
        machines_per_config,
        load,
        horizon,
        False,
        queue_cap,
        "LoTES Exp. 2: 9 generated classes, spread Phi, 10 configurations, load x lambda*",
        cv,
    )


def lotes_omega(
    omega: float = 0.1,
    instance: int = 0,
    machines_per_config: int = 100,
    load: float = 0.9,
    horizon: float = 100.0,
    phi: float = 0.006,
    literal_mu: bool = False,
    queue_cap: Any = "auto",
    cv: float = 0.5,
) -> Scenario:
    """LoTES Experiment 3 (Sec. 5.4.3): machine-dependent rates ``mu_jk = omega_jk / u_k``.

    Args:
        omega: Omega in [0, 1) (omega_jk ~ U[1 - Omega, 1 + Omega]).
        instance: which random instance (its r_kl and u_k are those of ``lotes-phi`` at ``phi``).
        machines_per_config: machines per configuration (paper: 1000).
        load: fraction of the instance's lambda*_2 (paper: 0.90 and 0.95).
        horizon: hours (paper: 100).
        phi: the requirement spread (paper prints 0.06; docs/papers/lotes.md#phi-misprint).
        literal_mu: ``True`` uses the printed ``mu_jk = u_k omega_jk`` (docs/papers/lotes.md#omega-rates).
        queue_cap: as in ``lotes-table``.
        cv: as in ``lotes-phi``.
    """
    return _generated(
        "lotes-omega",
        phi,
        omega,
        instance,
        machines_per_config,
        load,
        horizon,
        literal_mu,
        queue_cap,
        "LoTES Exp. 3: machine-dependent rates, spread Omega, load x lambda*",
        cv,
    )


def _google_machines(
    trace_dir: str | None, scale: float, decimals: int | None
) -> tuple[list[dict[str, Any]], np.ndarray, Any]:
    """Google machines in Table-1 configurations (LoTES Sec. 5.3): ``(configurations {cpu, memory, count}
    with the counts scaled by scale, (M, 2) capacities, machine_events report)``."""
    from clustergym.scenarios.presets.traces import scaled_counts
    from clustergym.traces.cache import cached, file_stamp
    from clustergym.traces.google import load_google_machines, machine_shape_counts
    from clustergym.traces.paths import trace_path

    mpath = trace_path("google", "machine_events", "part-00000-of-00001.csv.gz", trace_dir=trace_dir)
    machines, mrep = cached(("google-machines", file_stamp([mpath])), lambda: load_google_machines(path=mpath, at=None))
    conf = machine_shape_counts(machines, decimals=None if decimals is None else int(decimals))
    counts = scaled_counts(conf["count"].to_numpy(), scale)
    configurations = [
        {"cpu": float(c), "memory": float(m), "count": int(n)} for c, m, n in zip(conf["cpu"], conf["memory"], counts)
    ]
    return configurations, np.repeat(conf[["cpu", "memory"]].to_numpy(), counts, axis=0), mrep


def _kmeans_classes(
    jobs: Any, X: np.ndarray, fit: np.ndarray, k: int, key: tuple
) -> tuple[np.ndarray, np.ndarray, Any]:
    """k-means++ classes of the jobs' ``(n, 2)`` demands ``X`` fitted on the rows of ``fit`` (LoTES Sec. 5.3):
    ``(labels, (k, 2) centroids, class table)``; cached per ``key = (trace_dir, first_n, fit_hours, seed)``."""
    from clustergym.traces import transforms as T
    from clustergym.traces.cache import cached, file_stamp
    from clustergym.traces.google import task_event_files

    trace_dir, first_n, fit_h, seed = key
    labels, centroids = cached(
        ("kmeans", file_stamp(task_event_files(trace_dir)), first_n, k, fit_h, seed),
        lambda: T.kmeans_classes(X, k, fit_mask=fit, seed=seed),
    )
    classes = T.class_table(labels, jobs["duration"].to_numpy(), {"cpu": X[:, 0], "memory": X[:, 1]}, k)
    return labels, centroids, classes


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
    scope = dict(locals())  # the arguments, before the imports below add names
    # the trace modules (pandas) are imported when a trace preset is built, not with this module
    from clustergym.scenarios.presets.traces import trace_params
    from clustergym.traces.cache import google_table

    scale = positive(machine_scale, "params.machine_scale")
    k = positive(k, "params.k", integer=True)
    fit_h = positive(fit_hours, "params.fit_hours")
    first_n = positive(first_n, "params.first_n", integer=True, allow_none=True)
    configurations, cap, mrep = _google_machines(trace_dir, scale, decimals)
    table = google_table(trace_dir, lifecycle="attempts", first_n=first_n)
    jobs = table.jobs
    X = jobs[["cpu", "memory"]].to_numpy()
    fit = jobs["arrival"].to_numpy() < fit_h * 3600.0
    labels, centroids, classes = _kmeans_classes(jobs, X, fit, k, (trace_dir, first_n, fit_h, int(seed)))
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
        f"machines: {len(cap)} in {len(configurations)} configurations (scale {scale:g}) from machine_events",
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
        params=trace_params(
            scope,
            table,
            steps,
            machine_configurations=configurations,
            machines_report=mrep.to_dict(),
            centroids=centroids.tolist(),
            classes=classes.to_dict("records"),
        ),
    )
