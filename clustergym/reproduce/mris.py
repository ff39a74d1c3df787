"""Claims of the MRIS paper (Fan & Liang, ICPP'24: Lemmas 4.1 and 6.4, §7, Figs. 1-7) for ``clustergym reproduce``.

Every number is measured by running the agents through the environment (``run_on_instance``) and is
the paper's metric, Σ w_j C_j or AWCT = (1/N) Σ w_j C_j with absolute completion times (§3).

Exact instances: Lemma 4.1 (``mris-lemma41``, ``mris-lemma41-growth``), the Lemma 6.4 tightness case
(``mris-lemma64-tight``), the Figure 7 "patience" instance (``mris-fig7-patience``).

Trace-driven claims (``mris-trace-*``): the paper's Azure packing trace is not available; they run on
the substitute preset ``mris-alibaba`` (Alibaba GPU v2023 pods, weight from QoS: LS -> 1, BE -> 2, the
reference code's priority + 1; see :mod:`clustergym.scenarios.presets.mris`) on one to four machines.
The paper's load axes are the number of jobs in a fixed 12.5-day window (Fig. 3) and the number of
machines (Fig. 4); here the load is set by ``traffic_scaling`` (arrivals packed into a window 1/s as
long: more arrivals per unit time) and by the number of machines.  The data differ, so these claims
state what the paper reports and what was measured; ``passed`` says whether the paper's ordering holds
on the substitute.  Every run is a :class:`~clustergym.runner.Cell` run by the runner (``--workers``,
``--ray``); the trace runs are shared between claims within one process.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from clustergym.agent_api import make_agent
from clustergym.core.jobs import JobStatus
from clustergym.reproduce import ReproduceConfig, claim, episodes
from clustergym.runner import Cell, Probe, run_episode
from clustergym.scenarios.presets.mris import instance_scenario, lemma41_instance, patience_instance
from clustergym.theory.mris import MRISInstance

__all__ = [
    "schedule_of",
    "paper_metrics",
    "run_on_instance",
    "instance_cell",
    "trace_cell",
    "trace_runs",
    "TRACE",
    "ARRIVAL_SWEEP",
    "MACHINE_SWEEP",
    "HEAVY",
    "FIVE",
]

PAPER = "mris"
#: the substitute trace preset
TRACE = "mris-alibaba"
#: the five schedulers of Figs 3-6 (MRIS-WSJF, PQ-WSJF, TETRIS, BF-EXEC, CA-PQ-WSJF)
FIVE = ("mris", "pq", "tetris-mris", "bf-exec", "ca-pq")
#: Fig. 3 axis (arrival rate): traffic_scaling on one machine
ARRIVAL_SWEEP = (1.0, 4.0, 16.0)
#: Fig. 4 axis (machines) at the heaviest arrival rate
MACHINE_SWEEP = (1, 2, 4)
#: the heavy-load setting (Figs 1, 2, 6)
HEAVY = {"num_servers": 1, "traffic_scaling": 16.0}
#: the Fig. 5 setting (MRIS ahead of PQ-WSJF by a few percent, as at the paper's N = 64000, M = 20)
FIG5 = {"num_servers": 2, "traffic_scaling": 16.0}


# ================================================================================== metrics and runs
def schedule_of(sim: Any) -> dict[str, np.ndarray]:
    """Per real job of a finished (or running) episode: ``arrival, start, end, weight, server, completed``."""
    jobs = sim.jobs
    jobs.require_all_rows("schedule_of")
    n = jobs.size
    real = ~jobs.dummy[:n]
    return {
        "arrival": jobs.arrival[:n][real].copy(),
        "start": jobs.start[:n][real].copy(),
        "end": jobs.end[:n][real].copy(),
        "weight": jobs.weight[:n][real].copy(),
        "server": jobs.server[:n][real].copy(),
        "completed": jobs.status[:n][real] == int(JobStatus.COMPLETED),
    }


def paper_metrics(sim: Any) -> dict[str, Any]:
    """The MRIS paper's metrics of an episode (AWCT, §3; queuing delay, §7.5.2).

    ``awct`` = (1/N) Σ w_j C_j with absolute completion times C_j (the paper's metric), over the N
    real jobs (``all_completed`` says whether every one finished; if not, over the completed ones);
    ``total_weighted_completion`` = Σ w_j C_j; ``weighted_flow`` = Σ w_j (C_j - r_j) (= minus the
    episode return of the ``weighted-system`` objective); ``makespan``; ``mean_queuing_delay``
    (unweighted S_j - r_j) and ``zero_delay_fraction`` over started jobs.
    """
    s = schedule_of(sim)
    done = s["completed"]
    C, r, w = s["end"][done], s["arrival"][done], s["weight"][done]
    started = ~np.isnan(s["start"])
    delay = s["start"][started] - s["arrival"][started]
    n = int(done.sum())
    twc = float(np.dot(w, C))
    return {
        "jobs": int(s["arrival"].size),
        "completed": n,
        "all_completed": bool(done.all()),
        "awct": twc / n if n else math.nan,
        "total_weighted_completion": twc,
        "weighted_flow": float(np.dot(w, C - r)),
        "makespan": float(C.max()) if n else math.nan,
        "mean_queuing_delay": float(delay.mean()) if delay.size else math.nan,
        "zero_delay_fraction": float(np.mean(delay <= 0)) if delay.size else math.nan,
    }


def run_on_instance(
    scenario: Any, agent: Any, *, seed: int = 0, validate: bool = False, **agent_params: Any
) -> dict[str, Any]:
    """Run ``agent`` (a name or an agent) through the environment on ``scenario`` (a Scenario, a preset
    name or an :class:`MRISInstance`); return the run metrics, :func:`paper_metrics` under ``paper``,
    the per-job schedule under ``schedule`` and the agent under ``agent_obj``."""
    if isinstance(scenario, MRISInstance):
        scenario = instance_scenario(scenario)
    name = agent if isinstance(agent, str) else getattr(agent, "name", str(agent))
    ag = make_agent(agent, **agent_params) if isinstance(agent, str) else agent
    res = run_episode(
        scenario,
        ag,
        seed=seed,
        agent_name=name,
        validate=validate,
        probes={"paper": Probe(_paper), "schedule": Probe(_schedule)},
    )
    res["agent_obj"] = ag
    return res


def _paper(env: Any) -> dict[str, Any]:
    return paper_metrics(env.sim)


def _schedule(env: Any) -> dict[str, np.ndarray]:
    return schedule_of(env.sim)


def _first_start(env: Any) -> float:
    """When job 0 (the long job of the Figure 7 instance) started."""
    return float(schedule_of(env.sim)["start"][0])


def instance_cell(scenario: Any, agent: str, *, seed: int = 0, **agent_params: Any) -> Cell:
    """``agent`` on ``scenario`` (a Scenario or an :class:`MRISInstance`) with :func:`paper_metrics`
    (``paper``) and the start of job 0 (``first_start``); the cell form of :func:`run_on_instance`."""
    if isinstance(scenario, MRISInstance):
        scenario = instance_scenario(scenario)
    return Cell(
        scenario,
        agent,
        seed,
        agent_params=tuple(sorted(agent_params.items())),
        probes=(("paper", Probe(_paper)), ("first_start", Probe(_first_start))),
    )


def trace_cell(agent: str, params: dict[str, Any], **agent_params: Any) -> Cell:
    """``agent`` on ``TRACE`` with ``params``, measured by :func:`paper_metrics` (``paper``)."""
    return Cell(
        TRACE,
        agent,
        0,
        params=tuple(sorted(params.items())),
        agent_params=tuple(sorted(agent_params.items())),
        probes=(("paper", Probe(_paper)),),
    )


def trace_runs(config: ReproduceConfig, runs: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> list[dict[str, Any]]:
    """:func:`paper_metrics` of each ``(agent, params, agent_params)`` on ``TRACE`` (shared between claims)."""
    return [r["paper"] for r in episodes([trace_cell(a, p, **ap) for a, p, ap in runs], config)]


def _papers(config: ReproduceConfig, cells: list[Cell]) -> list[dict[str, Any]]:
    return [r["paper"] for r in episodes(cells, config)]


def _traces() -> bool:
    from clustergym.traces import traces_available

    return traces_available()


def _r(x: float, nd: int = 4) -> float:
    return float(round(x, nd))


_NO_TRACES = ({"skipped": "the traces were not found (set CLUSTERGYM_TRACES)"}, "needs the traces", False)


# =============================================================================================== exact instances


@claim(
    "mris-lemma41",
    PAPER,
    "Lemma 4.1 instance (N=65, P=64, delta_r=0.5, R=2, M=1): PQ (every sort key), TETRIS "
    "and BF-EXEC total sum w_j C_j = 4224 against MRIS 256 and the optimum 161.5",
)
def _lemma41(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    agents = [f"pq-{k}" for k in ("svf", "wsvf", "sjf", "wsjf", "sdf", "wsdf", "erf")] + [
        "tetris-mris",
        "bf-exec",
        "mris",
        "mris-greedy",
        "ca-pq",
    ]
    cells = [instance_cell("mris-lemma41", a) for a in agents] + [
        instance_cell("mris-lemma41", "mris", knapsack="cadp", eps=0.125)
    ]
    twc = [m["total_weighted_completion"] for m in _papers(config, cells)]
    got, cadp = dict(zip(agents, twc[:-1])), twc[-1]
    measured = {
        "PQ (all 7 keys)": sorted(set(got[a] for a in agents[:7])),
        "TETRIS": got["tetris-mris"],
        "BF-EXEC": got["bf-exec"],
        "MRIS (exact)": got["mris"],
        "MRIS (CADP eps=1/8)": cadp,
        "MRIS-GREEDY": got["mris-greedy"],
        "CA-PQ (= OPT)": got["ca-pq"],
        "OPT (closed form)": 161.5,
    }
    expected = {"PQ": 4224.0, "TETRIS": 4224.0, "BF-EXEC": 4224.0, "MRIS": 256.0, "OPT": 161.5}
    passed = all(got[a] == 4224.0 for a in agents[:9]) and got["mris"] == cadp == 256.0 and got["ca-pq"] == 161.5
    return measured, expected, passed


@claim(
    "mris-lemma41-growth",
    PAPER,
    "Lemma 4.1: PQ's competitive ratio is Omega(N) (N=257, P=256: PQ/OPT = 103) "
    "while MRIS stays within 8R (MRIS/OPT = 1.60)",
)
def _lemma41_growth(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    n, P, d = 257, 256.0, 0.5
    opt = (n - 1) * (1 + d) + 1 + d + P
    sc = instance_scenario(lemma41_instance(n, P, d, R=2))
    pq, mris = (
        m["total_weighted_completion"] for m in _papers(config, [instance_cell(sc, "pq"), instance_cell(sc, "mris")])
    )
    measured = {"PQ": pq, "MRIS": mris, "OPT": opt, "PQ/OPT": _r(pq / opt), "MRIS/OPT": _r(mris / opt)}
    return (
        measured,
        {"PQ/OPT": "66048/641.5 = 103.0 (> N/4)", "MRIS/OPT": "1024/641.5 = 1.60 (<= 8R = 16)"},
        bool(pq == P + (n - 1) * (P + 1) and pq / opt > n / 4 and mris == 2 * (n - 1) + 2 * P and mris / opt <= 16),
    )


@claim(
    "mris-lemma64-tight",
    PAPER,
    "Lemma 6.4: PQ's makespan bound max{2 p_max, 2 V/M} is tight: one job of demand "
    "1/2 meets it; N jobs of demand 1/2+delta give C_max = N P = 2V/(1+2 delta)",
)
def _lemma64(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    one = MRISInstance([0.0], [5.0], [1.0], [[0.5, 0.0]])
    N, P = 8, 3.0
    deltas = (0.1, 0.01, 0.001)
    insts = [
        MRISInstance(np.zeros(N), np.full(N, P), np.ones(N), np.tile([0.5 + delta, 0.0], (N, 1))) for delta in deltas
    ]
    spans = [m["makespan"] for m in _papers(config, [instance_cell(i, "pq") for i in [one, *insts]])]
    trivial = spans[0]
    ratios, ok = {}, trivial == 5.0 == 2 * one.volume.sum()
    for delta, inst, cmax in zip(deltas, insts, spans[1:]):
        bound = max(2 * P, 2 * inst.volume.sum())
        ratios[str(delta)] = _r(cmax / bound, 6)
        ok &= cmax == N * P and cmax <= bound and math.isclose(cmax / bound, 1 / (1 + 2 * delta))
    measured = {
        "one job: C_max, 2V/M": [trivial, float(2 * one.volume.sum())],
        "N=8 jobs, C_max / max{2p_max, 2V/M} by delta": ratios,
    }
    return measured, {"one job": "C_max = 2V/M", "ratio": "1/(1+2 delta) -> 1"}, bool(ok)


@claim(
    "mris-fig7-patience",
    PAPER,
    "Figure 7 (N=2500, M=1, R=3): PQ-WSVF, TETRIS and BF-EXEC commit to the long job "
    "at once; MRIS-WSVF waits, and its AWCT is nearly three times less",
)
def _fig7(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    agents = ("mris-wsvf", "pq-wsvf", "tetris-mris", "bf-exec")
    awct = {a: [] for a in agents}
    big = {a: [] for a in agents}
    seeds = (0, 1, 2)
    keys = [(seed, a) for seed in seeds for a in agents]
    scs = {seed: instance_scenario(patience_instance(2500, seed)) for seed in seeds}
    for (_seed, a), r in zip(keys, episodes([instance_cell(scs[seed], a) for seed, a in keys], config)):
        awct[a].append(r["paper"]["awct"])
        big[a].append(r["first_start"])
    ratio = {a: _r(float(np.mean(awct[a])) / float(np.mean(awct["mris-wsvf"])), 3) for a in agents[1:]}
    measured = {
        "seeds": list(seeds),
        "AWCT (mean)": {a: _r(float(np.mean(v)), 3) for a, v in awct.items()},
        "ratio to MRIS-WSVF": ratio,
        "long job starts (seed 0)": {a: _r(v[0], 3) for a, v in big.items()},
    }
    passed = (
        all(2.5 <= x <= 3.5 for x in ratio.values())
        and all(b == 0.01 for a in agents[1:] for b in big[a])
        and min(big["mris-wsvf"]) > 14
    )
    return (
        measured,
        {"ratio": "nearly 3 (accepted: 2.5 to 3.5 for each)", "long job": "PQ family at 0.01, MRIS later"},
        passed,
    )


# =============================================================================================== trace-driven


def _sweep_table(config: ReproduceConfig, settings: list[dict[str, Any]], label: str) -> dict[str, dict[str, float]]:
    runs = iter(trace_runs(config, [(a, s, {}) for s in settings for a in FIVE]))
    return {
        f"{label}={s[label]:g}" if isinstance(s[label], float) else f"{label}={s[label]}": {
            a: _r(next(runs)["awct"], 3) for a in FIVE
        }
        for s in settings
    }


@claim(
    "mris-trace-arrival-rate",
    PAPER,
    "Fig. 3 (substitute trace, stated as measured): at low arrival rates MRIS is "
    "outperformed by the PQ family (e.g. TETRIS); as arrivals increase MRIS "
    "exceeds all others",
)
def _trace_arrival(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    if not _traces():
        return _NO_TRACES
    settings = [{"num_servers": 1, "traffic_scaling": s} for s in ARRIVAL_SWEEP]
    table = _sweep_table(config, settings, "traffic_scaling")
    light, heavy = table[next(iter(table))], table[list(table)[-1]]
    light_ok = min(light[a] for a in ("pq", "tetris-mris", "bf-exec")) < light["mris"]
    heavy_ok = heavy["mris"] == min(heavy.values())
    return (
        {
            "AWCT (days), M=1, by traffic_scaling": table,
            "PQ family beats MRIS at the lowest rate": light_ok,
            "MRIS lowest at the highest rate": heavy_ok,
        },
        "lowest rate: PQ family < MRIS; highest rate: MRIS lowest of MRIS, PQ-WSJF, TETRIS, BF-EXEC, CA-PQ",
        bool(light_ok and heavy_ok),
    )


@claim(
    "mris-trace-pq-family-similar",
    PAPER,
    "Fig. 3 (substitute trace, stated as measured): TETRIS, BF-EXEC and PQ "
    "perform similarly across all arrival rates (here: within 15%)",
)
def _trace_similar(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    if not _traces():
        return _NO_TRACES
    spread = {}
    trio = ("pq", "tetris-mris", "bf-exec")
    runs = iter(
        trace_runs(config, [(a, {"num_servers": 1, "traffic_scaling": s}, {}) for s in ARRIVAL_SWEEP for a in trio])
    )
    for s in ARRIVAL_SWEEP:
        v = [next(runs)["awct"] for _ in trio]
        spread[f"traffic_scaling={s:g}"] = _r(max(v) / min(v), 3)
    return (
        {"max/min AWCT of PQ, TETRIS, BF-EXEC": spread},
        "<= 1.15 at every rate (the paper's curves overlap)",
        bool(all(x <= 1.15 for x in spread.values())),
    )


@claim(
    "mris-trace-machines",
    PAPER,
    "Fig. 4 (substitute trace, stated as measured): with few machines MRIS has the "
    "lowest AWCT (nearly half of TETRIS's); with more machines PQ-WSJF beats MRIS",
)
def _trace_machines(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    if not _traces():
        return _NO_TRACES
    settings = [{"num_servers": m, "traffic_scaling": HEAVY["traffic_scaling"]} for m in MACHINE_SWEEP]
    table = _sweep_table(config, settings, "num_servers")
    few, many = table[next(iter(table))], table[list(table)[-1]]
    few_ok = few["mris"] == min(few.values())
    many_ok = many["pq"] < many["mris"]
    return (
        {
            f"AWCT (days), traffic_scaling={HEAVY['traffic_scaling']:g}, by machines": table,
            "MRIS/TETRIS with the fewest machines": _r(few["mris"] / few["tetris-mris"], 3),
            "MRIS lowest with the fewest machines": few_ok,
            "PQ-WSJF < MRIS with the most machines": many_ok,
        },
        "checked: fewest machines MRIS lowest, most machines PQ-WSJF < MRIS (the paper's MRIS/TETRIS of about "
        "0.5 is reported, not checked: the data differ)",
        bool(few_ok and many_ok),
    )


@claim(
    "mris-trace-queuing-delay",
    PAPER,
    "Fig. 5 (substitute trace, stated as measured): nearly 60% of jobs start "
    "with zero queuing delay under TETRIS, BF-EXEC and PQ-WSJF, none under MRIS; "
    "CA-PQ has the worst queuing delay",
)
def _trace_delay(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    if not _traces():
        return _NO_TRACES
    loads = [(1, ARRIVAL_SWEEP[0]), (1, ARRIVAL_SWEEP[1])]
    fig5 = dict(zip(FIVE, trace_runs(config, [(a, FIG5, {}) for a in FIVE])))
    at = iter(
        trace_runs(
            config, [(a, {"num_servers": m, "traffic_scaling": s}, {}) for m, s in loads for a in ("pq", "mris")]
        )
    )
    zero = {a: _r(fig5[a]["zero_delay_fraction"], 3) for a in FIVE}
    mean = {a: _r(fig5[a]["mean_queuing_delay"], 3) for a in FIVE}
    other = {
        f"M={m}, traffic_scaling={s:g}": {a: _r(next(at)["zero_delay_fraction"], 3) for a in ("pq", "mris")}
        for m, s in loads
    }
    fam_ok = all(0.4 <= zero[a] <= 0.8 for a in ("pq", "tetris-mris", "bf-exec"))
    mris_ok = zero["mris"] < 0.05
    capq_ok = mean["ca-pq"] == max(mean.values())
    return (
        {
            "setting": FIG5,
            "zero-delay fraction": zero,
            "mean queuing delay (days)": mean,
            "zero-delay fraction at other loads": other,
            "PQ family near 60%": fam_ok,
            "MRIS near 0": mris_ok,
            "CA-PQ worst mean delay": capq_ok,
        },
        "PQ family zero-delay fraction about 0.6 (accepted 0.4-0.8); MRIS about 0; CA-PQ the worst delay",
        bool(fam_ok and mris_ok and capq_ok),
    )


@claim(
    "mris-trace-sort-keys",
    PAPER,
    "Fig. 1 (substitute trace, stated as measured): inside MRIS, WSJF and WSVF perform "
    "best and ERF worst; weighted and unweighted variants differ negligibly",
)
def _trace_keys(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    if not _traces():
        return _NO_TRACES
    keys = ("wsvf", "svf", "wsdf", "sdf", "wsjf", "sjf", "erf")
    runs = trace_runs(config, [("mris", HEAVY, {"key": k}) for k in keys])
    awct = {k: _r(r["awct"], 3) for k, r in zip(keys, runs)}
    best_ok = max(awct["wsjf"], awct["wsvf"]) < min(awct["sdf"], awct["wsdf"], awct["erf"])
    erf_ok = awct["erf"] == max(awct.values())
    pairs = {f"{k}/w{k}": _r(awct[k] / awct["w" + k], 3) for k in ("svf", "sjf", "sdf")}
    weights_ok = all(abs(x - 1) <= 0.05 for x in pairs.values())
    return (
        {
            "setting": HEAVY,
            "AWCT (days) of MRIS by key": awct,
            "unweighted/weighted": pairs,
            "WSJF and WSVF best": best_ok,
            "ERF worst": erf_ok,
            "weighted ~ unweighted (5%)": weights_ok,
        },
        "WSJF, WSVF < SDF, WSDF, ERF; ERF worst; weighted within 5% of unweighted",
        bool(best_ok and erf_ok and weights_ok),
    )


@claim(
    "mris-trace-knapsack",
    PAPER,
    "Fig. 2 (substitute trace, stated as measured): MRIS-GREEDY is slightly better "
    "than the exact knapsack at light load (2% lower) and worse as jobs increase "
    "(over three times in the paper, §7.4, partly from bugs in the greedy of the authors' code)",
)
def _trace_knapsack(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    if not _traces():
        return _NO_TRACES
    out = {}
    loads = (ARRIVAL_SWEEP[0], ARRIVAL_SWEEP[-1])
    runs = iter(
        trace_runs(
            config, [(a, {"num_servers": 1, "traffic_scaling": s}, {}) for s in loads for a in ("mris", "mris-greedy")]
        )
    )
    for s in loads:
        exact, greedy = next(runs)["awct"], next(runs)["awct"]
        out[f"traffic_scaling={s:g}"] = {
            "MRIS": _r(exact, 3),
            "MRIS-GREEDY": _r(greedy, 3),
            "GREEDY/exact": _r(greedy / exact, 3),
        }
    heavy = out[f"traffic_scaling={ARRIVAL_SWEEP[-1]:g}"]["GREEDY/exact"]
    return (
        out,
        "checked: GREEDY/exact > 1 at the heaviest load (the paper: 0.98 at N=4000, 3.05 at N=64000; the "
        "latter partly from reference-code bugs)",
        bool(heavy > 1.0),
    )


@claim(
    "mris-trace-resources",
    PAPER,
    "Fig. 6 (substitute trace, stated as measured): adding synthetic resources "
    "(R=4 to 20) raises TETRIS's AWCT much more than MRIS's (+80% against +17%)",
)
def _trace_resources(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    if not _traces():
        return _NO_TRACES
    more = {**HEAVY, "extra_resources": 16}
    growth = {}
    trio = ("mris", "tetris-mris", "pq")
    runs = iter(trace_runs(config, [(a, p, {}) for a in trio for p in (HEAVY, more)]))
    for a in trio:
        base, aug = next(runs)["awct"], next(runs)["awct"]
        growth[a] = {"R=3": _r(base, 3), "R=19": _r(aug, 3), "increase": _r(aug / base - 1, 3)}
    ok = growth["tetris-mris"]["increase"] > growth["mris"]["increase"]
    return (
        {"setting": HEAVY, "AWCT (days)": growth},
        "checked: TETRIS's increase above MRIS's (the paper, R=4 to 20: +80% against +17%)",
        bool(ok),
    )
