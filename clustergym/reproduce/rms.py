"""The RMS paper's claims (Psychas & Ghaderi 2018: Proposition 1 and Fig. 1b in §III, Figs. 2-8 in
§VII) for ``clustergym reproduce``; C1-C15 label the paper's qualitative claims (the table maps them).

Every claim runs the registered agents through the environment and returns
``(measured, expected, passed)``; ``measured`` holds the figures (means and
95% confidence half-widths over seeds, Student t) and ``passed`` is honest:
a claim that does not reproduce reports ``False`` with its figures.

Horizons (§VII-A repeats each experiment three times, "long enough so that the
queues show steady state", without stating the horizon; T = 10^4 for EC2 would
be ~10x over a reasonable budget in pure Python, so the EC2 figures use shorter
runs, each metric being the exact time average of the total queue over
[0.2 T, T], i.e. after a 20% warm-up):

=====================  ==============================================================  ==========
claim                  setting                                                         horizon
=====================  ==============================================================  ==========
rms-prop1 (C1)         Prop. 1, k = 2, a = 5, b = 4, rho_2 = 0.05; FF/BF/RF x 3 refills  T = 10^4
rms-fig1b (C2)         (a) BF from the trap state, 3 seeds; (c) RMS from empty          2000; 2x10^4
                       (uniform, eps 0.05, r_j = 50), 1 seed; BF from empty: an early    3000; 5000
                       trap (seed 8) and random-type refill; a 16-seed study of the
                       time to trap is stated (benchmarks/fig1b_time_to_trap.py)
rms-fig3 (C4)          EC2, L = 20, zeta in {0.8, 0.85, 0.9, 0.95}, sum of clocks 30     T = 1000, 3 seeds
rms-fig4 (C5, C15)     RMS (r_j = 10) vs RMS+JSQ (r_j^l = 0.5), same grid               T = 1000, 3 seeds
rms-fig5-* (C6-C9)     RMS, RMS-RF-AD, RMS-RF-AD+ (r = 150), MWR, MWS, BF, same grid     T = 1000, 3 seeds
rms-fig6 (C10)         EC2, zeta = 0.9, L in {20, 30, 40, 50}, r_j = L (AD: 3L, +: 15L)  T = 400, 2 seeds
rms-clock-rate (C12)   EC2, L = 20, zeta = 0.8, r_j in {1, 10, 100}                      T = 1000, 2 seeds
rms-fig8 (C11)         rms-google: first N tasks of the shared slice, 1/alpha in          until drained,
                       {0.5, 1, 1.5}, L = 1000 (the paper's) and L = 50 (loaded)         1 seed
=====================  ==============================================================  ==========

Fig. 8 (§VII-B): the paper states neither the clock rates on the trace nor
the grid of traffic scalings.  Here the clock of every fixed/AD variant has a
total rate equal to the scaled mean arrival rate of the segment (the "+"
variant 5x that, as in §VII-A).  ``--set rms.google_n=N`` sets N (default
10,000; 0 = the whole 288k-task slice, hours of CPU: the "+" variant alone
makes about 120 events per task), ``--set rms.google_scalings=0.5,1,1.5`` the
grid (the default; ``0.5,0.75,1,1.25,1.5`` is a finer one over Fig. 8's range).

Every run is a :class:`~clustergym.runner.Cell` run by the runner
(:func:`clustergym.reproduce.episodes`), on ``--workers`` local processes (the
command's default: ``min(2, cores)``) or on Ray.  The EC2 runs are shared
between the Fig. 3-5 claims (computed once per process).  ``--scale F``
multiplies every horizon (e.g. 0.1 for a quick look; the verdicts are then not
meaningful).  A full ``clustergym reproduce`` of these ten claims costs ~25
CPU-minutes (~15 minutes on 2 free cores; the first EC2 claim carries the
shared runs, so its reported wall time is the largest).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import cloudpickle
import numpy as np
from scipy import stats

from clustergym.agent_api import Agent, make_agent, make_env_for
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.reproduce import ReproduceConfig, claim, episodes
from clustergym.runner import Cell, Probe
from clustergym.runner.stats import mean_ci
from clustergym.scenarios import Scenario, make_preset
from clustergym.workloads import PrefixedSource, ReplaySource

__all__ = [
    "TrapSetup",
    "trap_scenario",
    "trap_cell",
    "ec2_cell",
    "google_cell",
    "fig8_results",
    "bf_time_to_trap",
    "TRAP_HOLD",
    "ZETAS",
    "EC2_HORIZON",
    "EC2_SEEDS",
]

ZETAS = (0.8, 0.85, 0.9, 0.95)
EC2_HORIZON = 1000.0
EC2_SEEDS = (0, 1, 2)
WARMUP = 0.2
FIG6_SERVERS = (20, 30, 40, 50)
FIG6_HORIZON = 400.0
FIG6_SEEDS = (0, 1)
RMS_VARIANTS = ("rms", "rms-rf", "rms-bf", "rms-ad", "rms-rf-ad", "rms-bf-ad", "rms-rf-ad-plus")
PRIOR = ("mwr", "mws", "best-fit")


# ============================================================================ the EC2 runs
def ec2_cell(agent: str, zeta: float, seed: int, horizon: float, num_servers: int = 20, **aparams: Any) -> Cell:
    """One EC2 episode, with the queue integral sampled at the end of the warm-up (``WARMUP * horizon``)."""
    sparams = {"zeta": zeta, "num_servers": num_servers}
    if agent == "rms-jsq":
        sparams["queueing"] = "local"
    return Cell(
        "ec2",
        agent,
        seed,
        params=tuple(sorted(sparams.items())),
        horizon=float(horizon),
        agent_params=tuple(sorted(aparams.items())),
        probes=(("warm", Probe(_queue_so_far, at=(WARMUP * float(horizon),))),),
    )


def _cost(cell: Cell) -> float:
    """Horizon x servers: the longest runs go first on several workers."""
    return float(cell.horizon or 1.0) * float(dict(cell.params).get("num_servers", 20))


def _queue_so_far(env: Any) -> tuple[float, float]:
    return env.sim.now, env.sim.integrals.queue


def _ec2_record(r: dict[str, Any]) -> dict[str, Any]:
    """An EC2 row with ``queue``: the exact time average of the total queue after the warm-up."""
    t_mark, area_mark = r["warm"][0] if r["warm"][0][0] < r["sim_time"] else (0.0, 0.0)
    span = r["sim_time"] - t_mark
    area = r["mean_queue_length"] * r["sim_time"] - area_mark
    return {
        "agent": r["agent"],
        "seed": r["seed"],
        "queue": area / span if span > 0 else math.nan,
        "queue_from_0": r["mean_queue_length"],
        "unstable": bool(r["unstable"]),
        "queued_at_end": r["queued_at_end"],
        "arrivals": r["arrivals"],
        "started": r["started"],
        "sim_time": r["sim_time"],
        "wall": r["wall_seconds"],
    }


def _ec2_runs(cells: list[Cell], config: ReproduceConfig) -> list[dict[str, Any]]:
    return [_ec2_record(r) for r in episodes(cells, config, cost=_cost)]


def _fmt(mean: float, half: float) -> str:
    return f"{mean:.4g} ± {half:.2g}" if math.isfinite(half) else f"{mean:.4g}"


# ============================================================================ the EC2 grid (Figs. 3-5)
def _ec2(
    agents: tuple[str, ...], config: ReproduceConfig, zetas: tuple[float, ...] = ZETAS
) -> dict[tuple[str, float], dict[str, Any]]:
    """Per (agent, zeta): queue mean and CI over seeds, unstable count, raw runs."""
    T = EC2_HORIZON * config.scale
    cells = {(a, z, s): ec2_cell(a, z, s, T) for a in agents for z in zetas for s in EC2_SEEDS}
    res = dict(zip(cells, _ec2_runs(list(cells.values()), config)))
    out = {}
    for a in agents:
        for z in zetas:
            runs = [res[(a, z, s)] for s in EC2_SEEDS]
            mean, half = mean_ci([r["queue"] for r in runs])
            out[(a, z)] = {
                "mean": mean,
                "ci": half,
                "unstable": sum(r["unstable"] for r in runs),
                "runs": runs,
                "text": _fmt(mean, half)
                + (f" [{sum(r['unstable'] for r in runs)} unstable]" if any(r["unstable"] for r in runs) else ""),
            }
    return out


def _table(grid: dict, agents: tuple[str, ...], zetas: tuple[float, ...] = ZETAS) -> dict[str, dict[str, str]]:
    return {f"zeta={z}": {a: grid[(a, z)]["text"] for a in agents} for z in zetas}


def _setting(config: ReproduceConfig) -> str:
    T = EC2_HORIZON * config.scale
    return (
        f"EC2, L=20, T={T:g} (time-average queue over [{WARMUP * T:g}, {T:g}]), seeds {list(EC2_SEEDS)}, mean ± 95% CI"
    )


# ============================================================================ C1: Proposition 1
def _prop1_scenario(horizon: float, seed: int = 0) -> tuple[Scenario, int]:
    """The counterexample in the proof of Proposition 1 (§III) with k = 2, rho_1 = a/b = 5/4 and
    rho_2 = 0.05: size-1/3 jobs every 4 time units lasting 5; size-1 jobs at integer times t >= 1
    with probability 0.05, lasting 1; one unit server."""
    rng = np.random.default_rng(seed)
    t1 = np.arange(0.0, horizon, 4.0)
    t2 = np.arange(1.0, horizon).astype(float)
    t2 = t2[rng.random(t2.size) < 0.05]
    t = np.concatenate([t1, t2])
    typ = np.concatenate([np.zeros(t1.size, int), np.ones(t2.size, int)])
    demand = np.where(typ == 0, 1.0 / 3.0, 1.0)[:, None]
    work = np.where(typ == 0, 5.0, 1.0)
    source = ReplaySource(t, demand, work, type=typ, type_demand=[[1.0 / 3.0], [1.0]])
    return Scenario(name="prop1", capacity=np.ones((1, 1)), source=source, resources=("units",), horizon=horizon), int(
        t2.size
    )


def _most_running_of_type1(env: Any) -> int:
    """The most type-1 jobs ever running at once on server 0, from the job table's start and end times."""
    jobs = env.sim.jobs
    n = jobs.size
    on = (jobs.type[:n] == 1) & (jobs.server[:n] == 0) & ~np.isnan(jobs.start[:n])
    starts, ends = jobs.start[:n][on], jobs.end[:n][on]
    ends = np.where(np.isnan(ends), np.inf, ends)
    # sweep: +1 at a start, -1 at an end; at equal times the end comes first (a completion frees the slot)
    times = np.concatenate([starts, ends])
    steps = np.concatenate([np.ones(starts.size, dtype=np.int64), -np.ones(ends.size, dtype=np.int64)])
    order = np.lexsort((steps, times))
    return int(np.cumsum(steps[order]).max()) if times.size else 0


@claim(
    "rms-prop1",
    "rms",
    "Proposition 1 (C1): on one unit server with sizes 1/3 and 1, a = 5, b = 4, "
    "rho_2 = 0.05 (inside (1/2)C), no work-conserving greedy rule ever starts a size-1 job",
)
def _claim_prop1(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    T = 10_000.0 * min(1.0, config.scale)
    sc, a2 = _prop1_scenario(T)
    measured: dict[str, Any] = {"T": T, "type2_arrivals": a2}
    ok = True
    greedy = [
        (agent, rule) for agent in ("first-fit", "best-fit", "random-fit") for rule in ("largest", "fifo", "random")
    ]
    peak_probe = (("size1_running_max", Probe(_most_running_of_type1)),)
    cells = [Cell(sc, agent, 0, agent_params=(("select_job", rule),), probes=peak_probe) for agent, rule in greedy]
    rows = episodes(cells + [Cell(sc, "rms", 0)], config)
    for (agent, rule), r in zip(greedy, rows):
        peak = r["size1_running_max"]
        starved = peak == 0 and r["queued_at_end"] == a2 and r["mean_queue_length_by_type"][0] == 0.0
        measured[f"{agent}/{rule}"] = {
            "size1_running_max": peak,
            "Q2_end": r["queued_at_end"],
            "Q1_time_avg": r["mean_queue_length_by_type"][0],
        }
        ok &= starved
    # not a claim of the paper: RMS on the same deterministic instance (outside Theorem 1's Poisson/
    # exponential assumptions).  Its ticks place every size-1/3 arrival at once, the size-1/3 jobs
    # overlap, the server never empties, and it starves the size-1 jobs too.
    rms = rows[-1]
    measured["rms on the same instance (not asserted)"] = {
        "Q2_end": rms["queued_at_end"],
        "started": rms["started"],
        "arrivals": rms["arrivals"],
        "mean_queue": round(rms["mean_queue_length"], 3),
    }
    return (measured, "every greedy rule: 0 size-1 starts, Q_2(T) = A_2(T), Q_1 = 0 at all times", ok)


# ============================================================================ C2: Fig. 1b
class TrapSetup(Agent):
    """At t = 0, start the prefix jobs of ``plan`` (job -> server), leave the rest queued, then
    hand over to ``inner``: for the Fig. 1b setting (§III), every server holding two size-2 jobs
    and one size-5 job with both queues long, the state in which Best-Fit stays trapped.

    After the hand-over it records ``left_2_1_at``: the first end of an epoch (``inner`` waits) at
    which both queues are non-empty and some server is not in configuration (2, 1) (``None`` if
    that never happens); ``q_start`` is the queue by type when the prefix is in place.
    """

    def __init__(self, inner: Agent, plan: dict[int, int], num_prefix: int):
        super().__init__()
        self.inner, self.plan, self.num_prefix = inner, plan, num_prefix
        self.requirements = inner.requirements
        self.name = f"trap-setup+{inner.name}"

    def requirements_for(self, scenario: Any) -> Any:
        return self.inner.requirements_for(scenario)

    def reset(self, env: Any, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.inner.reset(env, seed)
        self.handed_over = False
        self._epoch = -1
        self.q_start = None
        self.left_2_1_at = None

    def act(self, observation: Any) -> Command:
        v = self.view
        ev = v.event
        if not self.handed_over:
            if ev.kind == EventKind.START:
                return Command.wait()
            if ev.kind == EventKind.ARRIVAL and ev.job < self.num_prefix and v.now == 0.0:
                if v.epoch == self._epoch:
                    self.q_start = v.queued_by_type.copy()
                    return Command.wait()
                self._epoch = v.epoch
                s = self.plan.get(ev.job)
                if s is not None:
                    return Command.place(ev.job, s)
                self.q_start = v.queued_by_type.copy()
                return Command.wait()
            self.handed_over = True
        cmd = self.inner.act(observation)
        if cmd.kind == Cmd.WAIT and self.left_2_1_at is None:  # the end of an epoch
            q = v.queued_by_type
            if q[0] > 0 and q[1] > 0 and not np.all(v.count_real == [2, 1]):
                self.left_2_1_at = v.now
        return cmd


def _trap_plan(num_servers: int) -> dict[int, int]:
    """Prefix job -> server: jobs 3s, 3s+1 (size 2) and 3s+2 (size 5) on server s."""
    return {3 * s + i: s for s in range(num_servers) for i in range(3)}


def trap_setup_agent(inner: str = "best-fit", num_prefix: int = 0, num_servers: int = 0) -> TrapSetup:
    """A :class:`TrapSetup` around the agent ``inner`` for :func:`trap_scenario` (the factory of
    :func:`trap_cell`'s agent, which is not registered: the cell carries it)."""
    return TrapSetup(make_agent(inner), _trap_plan(num_servers), num_prefix)


def trap_scenario(horizon: float, seed: int = 0, backlog: int = 1000) -> tuple[Scenario, dict[int, int], int]:
    """bf-trap with a prefix at t = 0: every server (2 size-2 jobs, 1 size-5 job), Q = (backlog, backlog)."""
    base = make_preset("bf-trap", horizon=horizon)
    L = base.num_servers
    sizes = np.array([[2.0], [5.0]])
    rng = np.random.default_rng(10_000 + seed)
    types = np.array([0, 0, 1] * L + [0, 1] * backlog)
    pre = ReplaySource(
        np.zeros(types.size), sizes[types], rng.exponential(1.0, types.size), type=types, type_demand=sizes
    )
    return dataclasses.replace(base, source=PrefixedSource(pre, base.source)), _trap_plan(L), int(types.size)


def trap_cell(seed: int, horizon: float, inner: str = "best-fit") -> Cell:
    """``inner`` started from the trap state of :func:`trap_scenario` (seed ``seed``), with the
    probe ``trap``: ``dQ`` (queue growth by type), ``left_2_1_at`` and ``q_start``."""
    sc, _, n = trap_scenario(horizon, seed)
    return Cell(
        sc,
        "rms-trap-setup",
        seed,
        factory=cloudpickle.dumps(trap_setup_agent),
        agent_params=(("inner", inner), ("num_prefix", n), ("num_servers", sc.num_servers)),
        probes=(("trap", Probe(_trap_outcome, of="agent")),),
    )


def _trap_outcome(agent: TrapSetup) -> dict[str, Any]:
    return {
        "dQ": (agent.view.queued_by_type - agent.q_start).tolist(),
        "left_2_1_at": agent.left_2_1_at,
        "q_start": agent.q_start.tolist(),
    }


def _trap_record(r: dict[str, Any]) -> dict[str, Any]:
    t = r["trap"]
    return {
        "seed": r["seed"],
        "dQ": t["dQ"],
        "dQ_total": int(sum(t["dQ"])),
        "left_2_1_at": t["left_2_1_at"],
        "q_start": t["q_start"],
    }


def _empty_cell(agent: str, seed: int, horizon: float, select_job: str | None = None) -> Cell:
    """``agent`` on bf-trap from an empty system (RMS: uniform, eps = 0.05, r_j = 50; Best-Fit with the
    refill rule ``select_job``)."""
    aparams: tuple = (("eps", 0.05), ("rates", (50.0, 50.0))) if agent == "rms" else ()
    if select_job is not None:
        aparams += (("select_job", select_job),)
    return Cell(
        "bf-trap",
        agent,
        seed,
        params=(("horizon", float(horizon)),),
        agent_params=aparams,
        probes=(("queue_trace", Probe(_queue_trace)),),
    )


def _queue_trace(env: Any) -> dict[str, Any]:
    """Mean of the recorded total queue over each quarter of the run, its maximum, the queue at the end."""
    _, q = env.sim.trace.arrays()
    n = q.size
    quarters = [float(q[i * n // 4 : (i + 1) * n // 4].mean()) for i in range(4)]
    return {
        "quarters": [round(x, 1) for x in quarters],
        "max": float(q.max()),
        "end": int(env.view.num_queued),
        "slope": env.sim.stability()["slope"],
    }


def _empty_record(r: dict[str, Any], horizon: float) -> dict[str, Any]:
    return {
        "agent": r["agent"],
        "seed": r["seed"],
        "horizon": horizon,
        **r["queue_trace"],
        "mean": r["mean_queue_length"],
        "unstable": bool(r["unstable"]),
        "wall": r["wall_seconds"],
    }


#: Fig. 1b: a run is *trapped* from the first time tau at which every server holds configuration (2, 1) and
#: both queues are non-empty, if that lasts TRAP_HOLD time units (see :func:`bf_time_to_trap`)
TRAP_HOLD = 1000.0


def bf_time_to_trap(
    seed: int, horizon: float, *, hold: float = TRAP_HOLD, select_job: str = "largest", num_servers: int = 10
) -> dict[str, Any]:
    """Work-conserving Best-Fit on ``bf-trap`` from an empty system: when does it fall into the trap?

    Trapped at ``tau``: at the end of an epoch every server holds configuration (2, 1) and both
    queues are non-empty, and this lasts (at every later epoch end) until ``tau + hold``.  While
    both queues are non-empty no configuration can change (a departure is refilled by its own
    type), so the system is then frozen at a service rate of (20, 10) < lambda = (20.8, 10.4) and
    the queues drift up at (0.8, 0.4) per unit time; after ``hold = 1000`` they hold about
    (800, 400) jobs, and a drifting queue returns to 0 from ``q`` with probability about
    ``exp(-2 x drift x q / variance)`` (type 2: ``exp(-0.039 q)``, below 1e-6 at q = 400): the trap is
    then permanent for practical purposes.  Returns ``tau`` (``None`` if not trapped by
    ``horizon - hold``: censored), the run's end time (the run stops at ``tau + hold``), the final
    queue and its time average, the number of entries into the frozen state (``frozen_spells``) and
    the longest spell that ended (a queue emptied) before ``hold``.
    """
    ag = make_agent("best-fit", select_job=select_job)
    env = make_env_for(make_preset("bf-trap", horizon=horizon, queue_cap=None, num_servers=num_servers), ag)
    env.reset(seed=seed)
    ag.reset(env, seed=seed)
    v = env.view
    spell, tau = None, None
    spells, longest = 0, 0.0
    t0 = time.perf_counter()
    while True:
        cmd, _ = ag.predict(None)
        if cmd.kind == Cmd.WAIT:  # the end of an epoch: the state the next events start from
            q = v.queued_by_type
            if q[0] > 0 and q[1] > 0 and bool(np.all(v.count_real == (2, 1))):
                if spell is None:
                    spell = v.now
                    spells += 1
                elif v.now - spell >= hold:
                    tau = spell
                    break
            elif spell is not None:
                longest = max(longest, v.now - spell)
                spell = None
        _, _, term, trunc, _ = env.step(cmd)
        if term or trunc:
            break
    return {
        "seed": seed,
        "select_job": select_job,
        "trapped_at": tau,
        "t_end": float(v.now),
        "queued_at_end": int(v.num_queued),
        "mean_queue": env.sim.integrals.queue / max(v.now, 1e-12),
        "frozen_spells": spells,
        "longest_escaped_spell": longest,
        "wall": time.perf_counter() - t0,
    }


class TrapWatch(Agent):
    """Best-Fit (``inner``) from an empty bf-trap system, watched for the trap at every end of an epoch
    (when ``inner`` waits): the record of :func:`bf_time_to_trap`, as an agent so that a runner cell
    can carry it (``trapped_at``, ``frozen_spells``, ``longest_escaped_spell``; probe ``of="agent"``)."""

    def __init__(self, inner: Agent, hold: float = TRAP_HOLD):
        super().__init__()
        self.inner, self.hold = inner, float(hold)
        self.requirements = inner.requirements
        self.name = f"trap-watch+{inner.name}"

    def requirements_for(self, scenario: Any) -> Any:
        return self.inner.requirements_for(scenario)

    def reset(self, env: Any, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.inner.reset(env, seed)
        self.spell: float | None = None
        self.trapped_at: float | None = None
        self.frozen_spells, self.longest_escaped_spell = 0, 0.0

    def act(self, observation: Any) -> Command:
        cmd = self.inner.act(observation)
        if cmd.kind == Cmd.WAIT and self.trapped_at is None:  # the end of an epoch
            v = self.view
            q = v.queued_by_type
            if q[0] > 0 and q[1] > 0 and bool(np.all(v.count_real == (2, 1))):
                if self.spell is None:
                    self.spell = v.now
                    self.frozen_spells += 1
                elif v.now - self.spell >= self.hold:
                    self.trapped_at = self.spell
            elif self.spell is not None:
                self.longest_escaped_spell = max(self.longest_escaped_spell, v.now - self.spell)
                self.spell = None
        return cmd


def trap_watch_agent(select_job: str = "largest") -> TrapWatch:
    """The factory of :func:`watch_cell`'s agent (not registered: the cell carries it)."""
    return TrapWatch(make_agent("best-fit", select_job=select_job))


def watch_cell(seed: int, horizon: float, select_job: str = "largest") -> Cell:
    """Best-Fit from an empty bf-trap system watched for the trap (probe ``watch``)."""
    return Cell(
        "bf-trap",
        "rms-trap-watch",
        seed,
        params=(("horizon", float(horizon)),),
        factory=cloudpickle.dumps(trap_watch_agent),
        agent_params=(("select_job", select_job),),
        probes=(("watch", Probe(_watch_outcome, of="agent")),),
    )


def _watch_outcome(agent: TrapWatch) -> dict[str, Any]:
    return {
        "trapped_at": agent.trapped_at,
        "frozen_spells": agent.frozen_spells,
        "longest_escaped_spell": agent.longest_escaped_spell,
        "queued_at_end": int(agent.view.num_queued),
    }


#: Fig. 1b, from an empty system, Best-Fit with the largest-job refill (``bf_time_to_trap``, horizon 5 x 10^4,
#: seeds 0-15; ``python benchmarks/fig1b_time_to_trap.py --seeds 16 --horizon 50000``): the trap times
#: measured (the other 10 seeds were not trapped by 4.9 x 10^4)
FIG1B_TRAP_TIMES = (578, 1921, 9681, 14713, 29674, 41633)
FIG1B_STUDY_SEEDS = 16
FIG1B_STUDY_HORIZON = 49_000.0  # trapped by this time can be seen in a run of 5 x 10^4 (hold 1000)
#: a seed of that study that falls in within the first 2000 time units (the claim's cheap witness)
FIG1B_EARLY_SEED = 8


def _trap_rate() -> tuple[float, float, float]:
    """The trap rate's maximum-likelihood estimate for exponential trap times with censoring
    (traps / total exposure), as a mean time to trap with its exact 95% interval (chi-square)."""
    k = len(FIG1B_TRAP_TIMES)
    exposure = sum(FIG1B_TRAP_TIMES) + (FIG1B_STUDY_SEEDS - k) * FIG1B_STUDY_HORIZON
    lo = 2 * exposure / stats.chi2.ppf(0.975, 2 * k)
    hi = 2 * exposure / stats.chi2.ppf(0.025, 2 * k)
    return exposure / k, lo, hi


def _fig1b_study() -> str:
    """The 16-seed time-to-trap study of Fig. 1b as stated (``FIG1B_TRAP_TIMES``; not rerun)."""
    mtt, lo, hi = _trap_rate()
    return (
        f"{len(FIG1B_TRAP_TIMES)} of {FIG1B_STUDY_SEEDS} seeds trapped by {FIG1B_STUDY_HORIZON:g} "
        f"(at {', '.join(f'{t:g}' for t in FIG1B_TRAP_TIMES)}); mean time to trap {mtt:.3g} "
        f"(95%: {lo:.2g}-{hi:.2g})"
    )


@claim(
    "rms-fig1b",
    "rms",
    "Fig. 1b (C2): work-conserving Best-Fit is unstable at lambda = (20.8, 10.4) inside C "
    "(largest-job refill: trapped in configuration (2,1), the queue grows); RMS stabilises "
    "the system",
)
def _claim_fig1b(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    """Fig. 1b, measured from the trap state and from an empty system.

    Why Best-Fit from an empty system is not trapped at once (the paper's curve grows from the
    start; it gives neither the refill rule, nor the start, nor the horizon):

    * While both queues are non-empty no configuration changes (a departure is refilled by its own
      type), so configurations change only while a queue is empty.  Then the largest-job refill
      moves servers *out* of (2, 1): with no size-5 job waiting, a (2, 1) server that loses its
      size-5 job is refilled with three size-2 jobs, (5, 0).  Entering the trap needs every server in
      (2, 1) at once with both queues non-empty, and then both queues must move away from 0 against
      drifts of only (0.8, 0.4) per unit time: from q jobs, a queue returns to 0 with probability
      about exp(-0.039 q).  Entries are rare and most end within a time unit (seed 8: 9 entries that
      ended, the longest after 0.29 time units, before the tenth held; seed 4: 2 entries in 10^4
      time units).
    * So the time to trap is random and long.  From empty, 16 seeds, horizon 5 x 10^4
      (``benchmarks/fig1b_time_to_trap.py``): trapped at 578, 1921, 9681, 14713, 29674 and 41633, the
      other 10 not by 4.9 x 10^4; 4 of 16 by 2 x 10^4, 5 of 16 by 4 x 10^4.  With censoring, the mean
      time to trap is about 10^5 (95% interval 5 x 10^4 to 2.7 x 10^5).  The earlier contrast runs
      (seed 0 to 2 x 10^4; two seeds to 4 x 10^4) were simply not long enough.  Seed 0 is trapped at
      41,633.
    * A curve that grows from t = 0 is what two of the 16 seeds show (trapped at 578 and 1,921).
      It is also what the trap state as initial condition gives. And it is what a refill by
      uniformly random type gives (diverging without a frozen configuration: all 3 seeds tried, the
      queue at 2 x 10^4 was 6,000-8,000). The paper's one curve fits any of these. The largest-job
      refill is the rule that has the trap; it is clustergym's default.
    * The start matters only through the entry time: the trap, once entered, holds (the trap-state
      runs below, every seed).

    The claim measures the trap from the trap state (3 seeds), RMS from empty, one of the early
    seeds of the study from empty (the witness), and Best-Fit with random-type refill from empty;
    it states the 16-seed study's figures (``FIG1B_TRAP_TIMES``) without rerunning it (hours of CPU).
    """
    s = config.scale
    T_trap, T_long, T_refill = 2000.0 * s, 20_000.0 * s, 5000.0 * s
    cells = [trap_cell(seed, T_trap) for seed in (0, 1, 2)] + [
        _empty_cell("rms", 0, T_long),
        watch_cell(FIG1B_EARLY_SEED, 3000.0 * max(s, 1.0)),
        _empty_cell("best-fit", 0, T_refill, select_job="random"),
    ]
    res = episodes(cells, config)
    traps = [_trap_record(r) for r in res[:3]]
    rms, witness, refill = _empty_record(res[3], T_long), res[4]["watch"], _empty_record(res[5], T_refill)
    mean, sd = 2400.0 * T_trap / 2000.0, 350.0 * math.sqrt(T_trap / 2000.0)
    trap_ok = all(
        r["left_2_1_at"] is None and abs(r["dQ_total"] - mean) < 5 * sd and r["q_start"] == [1000, 1000] for r in traps
    )
    q = rms["quarters"]
    rms_ok = q[3] < 3 * q[1] and rms["max"] < 2000 and not rms["unstable"]
    witness_ok = witness["trapped_at"] is not None
    rq = refill["quarters"]
    refill_ok = rq[1] < rq[2] < rq[3] and refill["unstable"]
    study = _fig1b_study()
    measured = {
        "trap (BF from all-(2,1), Q=(1000,1000))": {
            f"seed {r['seed']}": {"dQ": r["dQ"], "stayed_2_1": r["left_2_1_at"] is None} for r in traps
        }
        | {"T": T_trap},
        "RMS from empty (r_j=50, eps=0.05)": {k: rms[k] for k in ("quarters", "max", "mean", "end", "horizon")},
        f"BF from empty, largest refill, seed {FIG1B_EARLY_SEED} (witness)": {
            k: (float(witness[k]) if isinstance(witness[k], (float, np.floating)) else witness[k])
            for k in ("trapped_at", "frozen_spells", "longest_escaped_spell", "queued_at_end")
        },
        "BF from empty, largest refill, 16 seeds (stated, not rerun)": study,
        "BF from empty, random-type refill": {
            k: refill[k] for k in ("quarters", "end", "slope", "unstable", "horizon")
        },
    }
    expected = (
        f"trap: every server stays (2,1) while both queues are non-empty, total dQ = {mean:g} ± 5 x {sd:.0f}; "
        "RMS: mean queue over the last quarter < 3 x second quarter, max < 2000; "
        f"from empty, largest refill: trapped at a random, mostly late time ({study}), seed "
        f"{FIG1B_EARLY_SEED} within 3000; random-type refill: the queue grows from the start (each quarter's "
        "mean above the previous one, flagged unstable)"
    )
    return measured, expected, bool(trap_ok and rms_ok and witness_ok and refill_ok)


# ============================================================================ C4: Fig. 3
@claim(
    "rms-fig3",
    "rms",
    "Fig. 3 (C4): RF or BF server selection improves the queue over RMS, and adding the adaptive "
    "clock (AD) improves each further, consistently over zeta in [0.8, 0.95]",
)
def _claim_fig3(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    agents = ("rms", "rms-rf", "rms-bf", "rms-ad", "rms-rf-ad", "rms-bf-ad")
    g = _ec2(agents, config)
    checks = {}
    for z in ZETAS:
        m = {a: g[(a, z)]["mean"] for a in agents}
        checks[f"zeta={z}"] = {
            "RF<RMS": m["rms-rf"] < m["rms"],
            "BF<RMS": m["rms-bf"] < m["rms"],
            "AD<RMS": m["rms-ad"] < m["rms"],
            "RF-AD<RF": m["rms-rf-ad"] < m["rms-rf"],
            "BF-AD<BF": m["rms-bf-ad"] < m["rms-bf"],
        }
    ok = all(all(c.values()) for c in checks.values())
    return (
        {"setting": _setting(config), "queue": _table(g, agents), "orderings": checks},
        (
            "at every zeta: RMS-RF < RMS, RMS-BF < RMS, RMS-AD < RMS, RMS-RF-AD < RMS-RF, RMS-BF-AD < RMS-BF "
            "(mean queue)"
        ),
        ok,
    )


# ============================================================================ C5/C15: Fig. 4
@claim(
    "rms-fig4",
    "rms",
    "Fig. 4 (C5, C15): distributed queues (RMS+JSQ, r_j^l = 0.5) give a larger queue than "
    "centralised RMS (r_j = 10) at the same total clock rate 30",
)
def _claim_fig4(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    agents = ("rms", "rms-jsq")
    g = _ec2(agents, config)
    checks = {f"zeta={z}": g[("rms-jsq", z)]["mean"] > g[("rms", z)]["mean"] for z in ZETAS}
    return (
        {"setting": _setting(config), "queue": _table(g, agents), "RMS+JSQ > RMS": checks},
        "at every zeta: mean queue of RMS+JSQ > RMS",
        all(checks.values()),
    )


# ============================================================================ C6-C9: Fig. 5
FIG5 = ("rms", "rms-rf-ad", "rms-rf-ad-plus", "mwr", "mws", "best-fit")


@claim("rms-fig5-bf-stable", "rms", "Fig. 5 (C6): work-conserving Best-Fit is stable in the EC2 setting")
def _claim_fig5_bf(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    g = _ec2(FIG5, config)
    unstable = {f"zeta={z}": g[("best-fit", z)]["unstable"] for z in ZETAS}
    return (
        {
            "setting": _setting(config),
            "best-fit queue": {f"zeta={z}": g[("best-fit", z)]["text"] for z in ZETAS},
            "unstable runs": unstable,
        },
        "no Best-Fit run flagged unstable by the kernel's instability test (one-sided batch-means test "
        "on the queue trend over the second half, alpha = 0.01, drift > 0.5% of sum lambda; docs/metrics.md)",
        not any(unstable.values()),
    )


@claim(
    "rms-fig5-plus-best",
    "rms",
    "Fig. 5 (C7): RMS-RF-AD+ (Remark 2, clock 5 x 30) outperforms all other algorithms "
    "(RMS variants, MWR, MWS, Best-Fit) for zeta in [0.8, 0.95]",
)
def _claim_fig5_plus(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    others = tuple(a for a in RMS_VARIANTS + PRIOR if a != "rms-rf-ad-plus")
    g = _ec2(RMS_VARIANTS + PRIOR, config)
    checks, best_other = {}, {}
    for z in ZETAS:
        plus = g[("rms-rf-ad-plus", z)]["mean"]
        rival = min(others, key=lambda a: g[(a, z)]["mean"])
        best_other[f"zeta={z}"] = f"{rival} ({g[(rival, z)]['text']})"
        checks[f"zeta={z}"] = plus < g[(rival, z)]["mean"]
    non_greedy = {
        f"zeta={z}": g[("rms-rf-ad-plus", z)]["mean"] < min(g[(a, z)]["mean"] for a in others if a != "best-fit")
        for z in ZETAS
    }
    return (
        {
            "setting": _setting(config),
            "queue": _table(g, RMS_VARIANTS + PRIOR),
            "best other": best_other,
            "plus best of all": checks,
            "plus best except Best-Fit": non_greedy,
        },
        "at every zeta: RMS-RF-AD+ has the smallest mean queue of all algorithms",
        all(checks.values()),
    )


@claim("rms-fig5-rms-mws", "rms", "Fig. 5 (C8): basic RMS behaves similarly to MWS in queue size")
def _claim_fig5_mws(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    g = _ec2(("rms", "mws"), config)
    ratio = {f"zeta={z}": round(g[("rms", z)]["mean"] / g[("mws", z)]["mean"], 3) for z in ZETAS}
    ok = all(0.5 <= r <= 2.0 for r in ratio.values())
    return (
        {"setting": _setting(config), "queue": _table(g, ("rms", "mws")), "RMS/MWS": ratio},
        "'similar' read as: mean-queue ratio RMS/MWS within [0.5, 2] at every zeta",
        ok,
    )


@claim(
    "rms-fig5-mwr",
    "rms",
    "Fig. 5 (C9): MWR is good at lower traffic intensity but unstable at higher traffic "
    "intensity (queue size becomes infinity)",
)
def _claim_fig5_mwr(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    g = _ec2(("mwr", "rms"), config)
    low, high = ZETAS[0], ZETAS[-1]
    good_low = g[("mwr", low)]["unstable"] == 0 and g[("mwr", low)]["mean"] <= g[("rms", low)]["mean"]
    unstable_high = g[("mwr", high)]["unstable"] >= math.ceil(len(EC2_SEEDS) / 2)
    first = next((z for z in ZETAS if g[("mwr", z)]["unstable"] >= math.ceil(len(EC2_SEEDS) / 2)), None)
    ends = {f"zeta={z}": [r["queued_at_end"] for r in g[("mwr", z)]["runs"]] for z in ZETAS}
    return (
        {
            "setting": _setting(config),
            "queue": _table(g, ("mwr", "rms")),
            "MWR queue at T": ends,
            "first zeta where MWR is unstable (majority of seeds)": first,
        },
        f"zeta={low}: MWR stable and its queue <= RMS's; zeta={high}: MWR flagged unstable in most seeds",
        bool(good_low and unstable_high),
    )


# ============================================================================ C10: Fig. 6
def _fig6_agents(L: int) -> dict[str, dict[str, Any]]:
    return {
        "rms": {"rates": (float(L),) * 3},
        "rms-rf-ad": {"total_rate": 3.0 * L},
        "rms-rf-ad-plus": {"total_rate": 3.0 * L},
        "mws": {},
        "best-fit": {},
    }


@claim(
    "rms-fig6",
    "rms",
    "Fig. 6 (C10): at zeta = 0.9 with clock rate r_j = L, the RMS family's queue stays roughly "
    "constant for L from 20 to 50, while the other algorithms' queues decrease",
)
def _claim_fig6(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    T = FIG6_HORIZON * config.scale
    keys, cells = [], []
    for L in FIG6_SERVERS:
        for a, p in _fig6_agents(L).items():
            for s in FIG6_SEEDS:
                keys.append((a, L, s))
                cells.append(ec2_cell(a, 0.9, s, T, num_servers=L, **p))
    res = dict(zip(keys, _ec2_runs(cells, config)))
    table: dict[str, dict[str, str]] = {}
    means: dict[str, list[float]] = {}
    for a in _fig6_agents(20):
        means[a] = []
        table[a] = {}
        for L in FIG6_SERVERS:
            m, h = mean_ci([res[(a, L, s)]["queue"] for s in FIG6_SEEDS])
            means[a].append(m)
            table[a][f"L={L}"] = _fmt(m, h)
    flat = {a: round(max(v) / min(v), 3) for a, v in means.items() if a.startswith("rms")}
    decreasing = {
        a: bool(means[a][-1] < means[a][0] and np.polyfit(FIG6_SERVERS, means[a], 1)[0] < 0)
        for a in ("mws", "best-fit")
    }
    ok = all(r < 2.0 for r in flat.values()) and all(decreasing.values())
    return (
        {
            "setting": f"EC2, zeta=0.9, T={T:g} (average over [{WARMUP * T:g}, {T:g}]), seeds {list(FIG6_SEEDS)}; "
            "r_j = L (RMS), r = 3L (RMS-RF-AD), 15L (RMS-RF-AD+)",
            "queue": table,
            "RMS family max/min over L": flat,
            "others decreasing in L": decreasing,
        },
        (
            "RMS family: max/min of the mean queue over L < 2; MWS, Best-Fit: queue(L=50) < queue(L=20) "
            "and negative slope"
        ),
        ok,
    )


# ============================================================================ C11: Fig. 8 (Google)
FIG8_AGENTS = ("rms", "rms-ad", "rms-rf-ad", "rms-rf-ad-plus", "mwr", "mws", "best-fit")
FIG8_ADAPTIVE = ("rms-rf-ad", "rms-rf-ad-plus")
FIG8_PRIOR = ("mwr", "mws")
FIG8_SERVERS = (1000, 50)


def google_cell(
    agent: str, traffic_scaling: float, first_n: int, num_servers: int, clock_rate: float, seed: int = 0
) -> Cell:
    """One ``rms-google`` run (``first_n = 0``: the whole slice), replayed until every task has finished;
    the RMS variants' clocks have the total rate ``clock_rate``."""
    sparams = {"traffic_scaling": float(traffic_scaling), "num_servers": int(num_servers)}
    if first_n:
        sparams["first_n"] = int(first_n)
    aparams = (("total_rate", clock_rate),) if agent.startswith("rms") else ()
    return Cell("rms-google", agent, seed, params=tuple(sorted(sparams.items())), agent_params=aparams)


def _clock_rate(traffic_scaling: float, first_n: int, num_servers: int) -> float:
    """The total clock rate on the trace: the (scaled) mean arrival rate of the segment (§VII-B does not
    state one; see the module docstring)."""
    sparams = {"traffic_scaling": float(traffic_scaling), "num_servers": int(num_servers)}
    if first_n:
        sparams["first_n"] = int(first_n)
    t = np.asarray(make_preset("rms-google", **sparams).source.time)
    return t.size / float(t[-1] - t[0]) if t.size > 1 and t[-1] > t[0] else 1.0


def _google_record(r: dict[str, Any], cell: Cell, rate: float) -> dict[str, Any]:
    return {
        "agent": r["agent"],
        "seed": r["seed"],
        "params": dict(cell.params) | dict(cell.agent_params),
        "clock_rate": rate,
        "queue": float(r["mean_queue_length"]),
        "mean_wait": float(r["mean_wait"]),
        "p99_wait": float(r["p99_wait"]),
        "utilization": float(r["utilization"][0]),
        "unstable": bool(r["unstable"]),
        "arrivals": r["arrivals"],
        "completed": r["completed"],
        "sim_time": float(r["sim_time"]),
        "events": int(r["events"]),
        "wall": r["wall_seconds"],
    }


def fig8_results(
    first_n: int,
    scalings: tuple[float, ...],
    servers: tuple[int, ...] = FIG8_SERVERS,
    agents: tuple[str, ...] = FIG8_AGENTS,
    seed: int = 0,
    config: ReproduceConfig | None = None,
) -> dict[tuple[str, int, float], dict[str, Any]]:
    """``(agent, L, 1/alpha) -> run`` for the Fig. 8 grid (shared with the test suite's short version)."""
    config = config if config is not None else ReproduceConfig()
    rates = {(L, s): _clock_rate(s, first_n, L) for L in servers for s in scalings}
    keys = [(a, L, s) for L in servers for s in scalings for a in agents]
    cells = [google_cell(a, s, first_n, L, rates[(L, s)], seed) for a, L, s in keys]
    rows = episodes(cells, config)
    return {k: _google_record(r, c, rates[k[1:]]) for k, c, r in zip(keys, cells, rows)}


def fig8_verdict(
    res: dict[tuple[str, int, float], dict[str, Any]], L: int, scalings: tuple[float, ...]
) -> dict[str, Any]:
    """C11 on one server count: at the highest traffic both adaptive variants beat MWR and MWS (mean
    queue), and the best adaptive variant's margin over the better of MWR/MWS does not shrink as the
    traffic grows ("especially when the traffic is high")."""
    hi, lo = max(scalings), min(scalings)
    q = {a: {s: res[(a, L, s)]["queue"] for s in scalings} for a in {k[0] for k in res}}
    best_prior = {s: min(q[a][s] for a in FIG8_PRIOR) for s in scalings}
    best_adaptive = {s: min(q[a][s] for a in FIG8_ADAPTIVE) for s in scalings}
    beat_high = all(q[a][hi] < best_prior[hi] for a in FIG8_ADAPTIVE)
    margin = {s: best_prior[s] - best_adaptive[s] for s in scalings}
    return {
        f"adaptive beat MWR and MWS at 1/alpha={hi:g}": beat_high,
        "margin (best of MWR/MWS minus best adaptive) by 1/alpha": {f"{s:g}": round(m, 4) for s, m in margin.items()},
        "margin grows with traffic": bool(margin[hi] >= margin[lo]),
        "passed": bool(beat_high and margin[hi] >= margin[lo]),
    }


def _google_available() -> bool:
    from clustergym.traces import traces_available

    return traces_available()


@claim(
    "rms-fig8",
    "rms",
    "Fig. 8 (C11): on the Google trace (10 power-of-1/2 types, 1000 unit servers, traffic "
    "scaling 1/alpha), the adaptive RMS variants beat MWR and MWS, especially at high traffic",
)
def _claim_fig8(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    expected = (
        "at the highest 1/alpha, RMS-RF-AD and RMS-RF-AD+ have a smaller mean queue than MWR and MWS, and the "
        "margin is at least as large as at the lowest 1/alpha; judged at L = 1000 (the paper's setting); "
        "L = 50 is a loaded sensitivity run"
    )
    if not _google_available():
        return (
            {"skipped": "Google trace not found (set CLUSTERGYM_TRACES or put ../shared/traces beside the repo)"},
            expected,
            False,
        )
    n, scalings = config.get("rms.google_n"), config.get("rms.google_scalings")
    res = fig8_results(n, scalings, config=config)
    table = {
        f"L={L}": {
            a: {
                f"1/alpha={s:g}": (
                    f"queue {res[(a, L, s)]['queue']:.4g}, wait {res[(a, L, s)]['mean_wait']:.4g} s, "
                    f"p99 {res[(a, L, s)]['p99_wait']:.4g} s, util {res[(a, L, s)]['utilization']:.3f}"
                )
                for s in scalings
            }
            for a in FIG8_AGENTS
        }
        for L in FIG8_SERVERS
    }
    verdicts = {f"L={L}": fig8_verdict(res, L, scalings) for L in FIG8_SERVERS}
    first = next(iter(res.values()))
    return (
        {
            "setting": f"rms-google, first {n or 'all'} tasks, seed 0, clock total rate = scaled mean arrival rate "
            f"({first['clock_rate']:.3g}/s at 1/alpha={scalings[0]:g}; x5 for RMS-RF-AD+), until drained",
            "mean queue / wait / p99 / utilisation": table,
            "verdict": verdicts,
            "wall seconds": round(sum(r["wall"] for r in res.values()), 1),
        },
        expected,
        verdicts[f"L={FIG8_SERVERS[0]}"]["passed"],
    )


# ============================================================================ C12: clock rates
@claim(
    "rms-clock-rate",
    "rms",
    "C12 (§IV-A, Fig. 2): the throughput of RMS does not depend on the clock rates; "
    "faster clocks give a smaller queue, with saturation",
)
def _claim_clock(config: ReproduceConfig) -> tuple[Any, Any, bool]:
    T = 1000.0 * config.scale
    rates = (1.0, 10.0, 100.0)
    seeds = (0, 1)
    keys = [(r, s) for r in rates for s in seeds]
    res = dict(zip(keys, _ec2_runs([ec2_cell("rms", 0.8, s, T, rates=(r, r, r)) for r, s in keys], config)))
    thr, q = {}, {}
    ok = True
    for r in rates:
        runs = [res[(r, s)] for s in seeds]
        ratio = [x["started"] / x["arrivals"] for x in runs]
        thr[f"r_j={r:g}"] = [round(x, 4) for x in ratio]
        m, h = mean_ci([x["queue"] for x in runs])
        q[f"r_j={r:g}"] = _fmt(m, h)
        ok &= all(x > 0.97 for x in ratio)
    qm = [np.mean([res[(r, s)]["queue"] for s in seeds]) for r in rates]
    ok &= qm[1] < qm[0] and qm[2] <= 1.1 * qm[1]
    return (
        {"setting": f"EC2, L=20, zeta=0.8, T={T:g}, seeds {list(seeds)}", "started/arrivals": thr, "queue": q},
        (
            "started/arrivals > 0.97 at every rate (same arrivals for all rates); queue(10) < queue(1), "
            "queue(100) <= 1.1 x queue(10)"
        ),
        bool(ok),
    )
