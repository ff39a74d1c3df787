"""MRIS -- Multi-Resource Interval Scheduling (Fan & Liang, ICPP'24, Sec. 5, Algorithm 1).

Paper sections are cited as "Sec. 5.3"; the choices the paper leaves open are in
``docs/papers/mris.md``.  Contents:

* :func:`mris_schedule` -- the offline reference: the MRIS schedule of a
  fixed :class:`~clustergym.scenarios.presets.mris.MRISInstance`, written plainly (lists and
  loops) so that it can check the agent;
* :class:`MRIS` (agent ``mris``; ``mris-wsvf`` is MRIS with the WSVF key of Figure 7) and
  :class:`MRISGreedy` (``mris-greedy``, Remark 1) -- MRIS as an agent in the environment;
* the pieces the MRIS-paper baselines share (:mod:`.priority_queue`, :mod:`.tetris`,
  :mod:`.bf_exec`): the sort keys of Sec. 7.3 (:func:`priority_order`), the per-job data cache,
  the "act once per event time" base class :class:`EventTimeAgent` (docs/papers/mris.md#event-times),
  and the paper's metric (:func:`paper_metrics`, AWCT with absolute completion times, Sec. 3).

MRIS (Sec. 5.3, Algorithm 1 with the printed errors corrected): at the interval boundaries
``γ_k = γ_0 α^k`` (``α = 2``, anchored at time 0) it takes the eligible set
``J_k = {released by γ_k, p_j <= γ_k, not committed}``, selects ``B_k ⊆ J_k`` by the knapsack P1
(profit ``w_j``, size ``v_j = p_j Σ_l d_jl``) with capacity ``ζ_k = R·M·γ_k`` (the paper prints
``R γ_k``; Lemma 6.5 and the authors' code use ``R M γ_k``, docs/papers/mris.md#knapsack-capacity), sorts ``B_k``
by the key (WSJF by default), and list-schedules it with backfilling (BATCH_LIST_SCHEDULE):
machine clocks start at ``γ_k``; the machine with the smallest clock (lowest index on ties) scans
the whole list and commits every job that fits *for its whole duration* against all earlier
commitments (FITS_WINDOW), then its clock moves to the next completion or reserved start on it.
Commitments are never revised.  Knapsack options (:mod:`clustergym.theory.mris`): ``exact`` (what the paper's
experiments ran), ``cadp`` (the paper's CADP with ``K = εζ/n``, Sec. 5.1, docs/papers/mris.md#cadp) and
``greedy`` (capacity ``2ζ``, MRIS-GREEDY).

The agent acts only at the boundaries (it asks for them with ``WAKE``) and at planned start times,
which are boundaries or completion times on the job's machine (both are decision epochs).  It keeps
its plan privately and issues ``PLACE`` exactly at each planned start (docs/papers/mris.md#agent).

Time unit ``γ_0`` (docs/papers/mris.md#gamma0): the agent parameter ``gamma0``, else the scenario's declared
``params["gamma0"]`` (the MRIS presets declare the instance's smallest processing time, as the
paper's normalisation does), else the smallest work of a replayed table (privileged: the agent
is then flagged ``uses_oracle``), else 1.

Tolerances (docs/papers/mris.md#tolerance): capacity checks use ``1 + TOL`` in normalised units
(``TOL = 1e-9``, as the kernel's relative fit tolerance); times are compared exactly, because the
environment's event times are exact floats (a completion is ``start + work``, computed the same
way here).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from abc import abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from clustergym.agent_api import Agent, AgentContext, AgentRequirements
from clustergym.core.cluster import fit_limit
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.jobs import JobStatus
from clustergym.core.scores import score_ranks
from clustergym.core.simulator import EpochConfig
from clustergym.errors import ConfigError
from clustergym.theory.mris import KNAPSACKS, MRISInstance, select_batch
from clustergym.validation import settings

__all__ = [
    "TOL",
    "SORT_KEYS",
    "sort_scores",
    "priority_order",
    "check_key",
    "MRISResult",
    "mris_schedule",
    "check_schedule",
    "events_pending_now",
    "JobCache",
    "EventTimeAgent",
    "MRIS",
    "MRISGreedy",
    "MRIS_EPOCHS",
]

#: capacity tolerance in normalised units
TOL = 1e-9

#: the sort heuristics of Sec. 7.3 (score ascending = higher priority)
SORT_KEYS: dict[str, str] = {
    "svf": "smallest volume first: v_j = p_j u_j",
    "wsvf": "weighted smallest volume first: v_j / w_j",
    "sjf": "shortest job first: p_j",
    "wsjf": "weighted shortest job first (Smith's rule): p_j / w_j",
    "sdf": "smallest demand first: u_j = sum_l d_jl",
    "wsdf": "weighted smallest demand first: u_j / w_j",
    "erf": "earliest release first: r_j",
}
_NEEDS_DURATION = {"svf", "wsvf", "sjf", "wsjf"}

MRIS_EPOCHS = EpochConfig(arrivals=False, completions=True, dummy_completions=False)
_WORK_EPOCHS = EpochConfig(arrivals=True, completions=True, dummy_completions=False)


def check_key(key: Any, field: str = "agent.key") -> str:
    """A sort key of :data:`SORT_KEYS`, in any case."""
    return settings.choice(key.lower() if isinstance(key, str) else key, field, SORT_KEYS)


def sort_scores(key: str, r: np.ndarray, p: np.ndarray, w: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Priority scores of Sec. 7.3 (smaller first).  A weight of 0 gives +inf in weighted keys."""
    key = check_key(key)
    base = {"svf": p * u, "wsvf": p * u, "sjf": p, "wsjf": p, "sdf": u, "wsdf": u, "erf": r}[key]
    base = np.asarray(base, dtype=np.float64)
    if key.startswith("w"):
        w = np.asarray(w, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(w > 0, base / np.where(w > 0, w, 1.0), np.inf)
    return base


def priority_order(key: str, ids: np.ndarray, r: np.ndarray, p: np.ndarray, w: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``ids`` sorted by ``(score, r_j, id)`` (deterministic ties, up to ``SCORE_RTOL``: docs/papers/mris.md#event-times).

    Scores within ``SCORE_RTOL`` of each other are ties (:func:`clustergym.core.cluster.score_ranks`):
    ``u_j`` is a sum of demands normalised by the capacity, so keys equal in exact arithmetic can
    differ in the last bits.  ``r, p, w, u`` are indexed by job id."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size == 0:
        return ids
    s = sort_scores(key, r[ids], p[ids], w[ids], u[ids])
    return ids[np.lexsort((ids, r[ids], score_ranks(s)))]


# ================================================================================== offline reference


@dataclasses.dataclass
class MRISResult:
    """An MRIS schedule: per job ``start``, ``machine``, ``completion``, the iteration ``k`` that
    committed it and its ``gamma``; ``log`` has one dict per iteration with a non-empty ``J``:
    ``k, gamma, J, B, zeta, volume, scans`` (``scans``: ``(machine, t, [committed ids])`` in order)."""

    start: np.ndarray
    machine: np.ndarray
    completion: np.ndarray
    k: np.ndarray
    gamma: np.ndarray
    log: list[dict[str, Any]]
    gamma0: float

    def total_weighted_completion(self, inst: MRISInstance) -> float:
        return inst.total_weighted_completion(self.completion)


def _fits_window_ref(res: list[int], S: list[float], C: list[float], d: np.ndarray, j: int, t: float, p: float) -> bool:
    """Whether job ``j`` fits machine ``i`` for all of [t, t + p), checking every reserved start inside."""
    end = t + p
    points = [t] + [S[x] for x in res if t < S[x] < end]
    for tau in points:
        use = np.zeros(d.shape[1])
        for x in res:
            if S[x] <= tau < C[x]:
                use = use + d[x]
        if np.any(use + d[j] > 1.0 + TOL):
            return False
    return True


def mris_schedule(
    inst: MRISInstance,
    key: str = "wsjf",
    knapsack: str = "exact",
    *,
    eps: float = 0.1,
    gamma0: float | None = None,
    alpha: float = 2.0,
    exact_method: str = "auto",
) -> MRISResult:
    """The MRIS schedule of ``inst`` (Sec. 5.3), computed offline by a plain simulation.

    ``gamma0`` defaults to the instance's smallest processing time (the paper's normalisation).
    This is the reference the agent is tested against (check T8); it is
    O(n^3) and meant for small instances.
    """
    key = check_key(key, "key")
    n, M, R = inst.n, inst.machines, inst.num_resources
    r, p, w, d = inst.release, inst.proc, inst.weight, inst.demand
    u = d.sum(axis=1)
    vol = p * u
    g0 = float(p.min()) if gamma0 is None else float(gamma0)
    if not g0 > 0 or not alpha > 1:
        raise ValueError("gamma0 must be > 0 and alpha > 1")
    S = [math.nan] * n
    C = [math.nan] * n
    mach = [-1] * n
    kk = [-1] * n
    gg = [math.nan] * n
    res: list[list[int]] = [[] for _ in range(M)]
    committed = [False] * n
    log: list[dict[str, Any]] = []
    k = 0
    while not all(committed):
        g = g0 * alpha**k
        J = [j for j in range(n) if not committed[j] and r[j] <= g and p[j] <= g * (1 + TOL)]
        if J:
            zeta = R * M * g
            Ja = np.array(J)
            B = Ja[select_batch(knapsack, w[Ja], vol[Ja], zeta, eps=eps, method=exact_method)]
            L = priority_order(key, B, r, p, w, u).tolist()
            scans: list[tuple[int, float, list[int]]] = []
            clock = [g] * M
            while L:
                i = min(range(M), key=lambda m: (clock[m], m))
                t = clock[i]
                placed = []
                for j in list(L):
                    if _fits_window_ref(res[i], S, C, d, j, t, p[j]):
                        S[j], C[j], mach[j], kk[j], gg[j] = t, t + p[j], i, k, g
                        committed[j] = True
                        res[i].append(j)
                        L.remove(j)
                        placed.append(j)
                scans.append((i, t, placed))
                if not L:
                    break
                later = [C[x] for x in res[i] if C[x] > t] + [S[x] for x in res[i] if S[x] > t]
                if not later:
                    raise RuntimeError(f"job {L[0]} does not fit an empty machine")
                clock[i] = min(later)
            log.append(
                {
                    "k": k,
                    "gamma": g,
                    "J": J,
                    "B": sorted(B.tolist()),
                    "zeta": zeta,
                    "volume": float(vol[B].sum()),
                    "scans": scans,
                }
            )
        k += 1
    return MRISResult(np.array(S), np.array(mach), np.array(C), np.array(kk), np.array(gg), log, g0)


def check_schedule(inst: MRISInstance, start: np.ndarray, machine: np.ndarray, tol: float = TOL) -> list[str]:
    """Feasibility problems of a schedule (empty list = feasible; the constraints of Sec. 3):
    every job starts once at ``S_j >= r_j`` on a machine ``0..M-1``; on every machine, at every start
    time, the usage of the jobs with ``S <= t < S + p`` is ``<= 1 + tol`` in every resource."""
    out = []
    start = np.asarray(start, dtype=np.float64)
    machine = np.asarray(machine)
    if start.shape != (inst.n,) or np.any(np.isnan(start)):
        return ["some job never started"]
    if np.any(start < inst.release):
        out.append(f"jobs start before release: {np.flatnonzero(start < inst.release)[:5].tolist()}")
    if np.any((machine < 0) | (machine >= inst.machines)):
        out.append("a job has no valid machine")
        return out
    end = start + inst.proc
    for i in range(inst.machines):
        on = np.flatnonzero(machine == i)
        for t in np.unique(start[on]):
            act = on[(start[on] <= t) & (t < end[on])]
            use = inst.demand[act].sum(axis=0)
            if np.any(use > 1 + tol):
                out.append(f"machine {i} over capacity at t={t:g}: {use.tolist()}")
    return out


# ================================================================================== environment helpers


def events_pending_now(view: Any) -> bool:
    """Whether another decision epoch will open at the current instant (a simultaneous arrival,
    completion, tick or wake-up not yet processed): :meth:`ClusterView.pending_now`.

    The MRIS-paper agents' event handling (docs/papers/mris.md#event-times) frees every job
    completing at ``t`` and adds every job released at ``t`` before the policy acts; the kernel opens one epoch per event, so the
    agents of this family wait (``WAIT``) until the last epoch of an instant.  (A job rejected at
    arrival as impossible opens no epoch; if it is the last event of an instant the agent acts at
    the next epoch instead -- never for the MRIS presets, whose jobs all fit.)
    """
    return view.pending_now()


class JobCache:
    """Per-job data read once through the view when a job is first seen (ids follow arrival order).

    Arrays indexed by job id: ``arrival``, ``work`` (NaN unless ``durations``), ``weight``,
    ``dem_abs`` (demand in resource units), ``dem`` (normalised by ``scale``, the capacity of
    server 0: the paper's machines are identical with unit capacity), ``u`` = Σ_l dem, ``vol`` = work·u.
    """

    def __init__(self, view: Any, scale: np.ndarray, durations: bool = True):
        self.view = view
        self.durations = durations
        self.scale = np.where(scale > 0, scale, 1.0)
        self.n = 0
        self.arrival = self.work = self.weight = np.empty(0)
        self.dem_abs = np.empty((0, self.scale.size))
        self._alloc(256)

    def _alloc(self, cap: int) -> None:
        R = self.scale.size
        old = None if self.n == 0 else (self.arrival, self.work, self.weight, self.dem_abs)
        self.arrival = np.full(cap, np.nan)
        self.work = np.full(cap, np.nan)
        self.weight = np.full(cap, np.nan)
        self.dem_abs = np.full((cap, R), np.nan)
        if old is not None:
            n = self.n
            self.arrival[:n], self.work[:n], self.weight[:n], self.dem_abs[:n] = (a[:n] for a in old)
        self._derive(0, self.n)

    def _derive(self, a: int, b: int) -> None:
        if a == 0:
            cap = self.arrival.size
            self.dem = np.full((cap, self.scale.size), np.nan)
            self.u = np.full(cap, np.nan)
            self.vol = np.full(cap, np.nan)
        self.dem[a:b] = self.dem_abs[a:b] / self.scale
        self.u[a:b] = self.dem[a:b].sum(axis=1)
        self.vol[a:b] = self.work[a:b] * self.u[a:b]

    def ensure(self, ids: Any) -> None:
        """Make sure every id in ``ids`` (and every lower id) is cached."""
        if len(ids) == 0:
            return
        top = int(np.max(ids)) + 1
        if top <= self.n:
            return
        if top > self.arrival.size:
            cap = self.arrival.size
            while cap < top:
                cap *= 2
            self._alloc(cap)
        v = self.view
        for j in range(self.n, top):
            self.arrival[j] = v.arrival(j)
            self.weight[j] = v.weight(j)
            self.dem_abs[j] = v.demand(j)
            if self.durations:
                self.work[j] = v.work(j)
        a, self.n = self.n, top
        self._derive(a, top)


class EventTimeAgent(Agent):
    """Base of the MRIS-paper agents: one decision per event *time* (docs/papers/mris.md#event-times).

    At each epoch it records the event (arrivals in ``arrived_now``, servers with a completion in
    ``departed_now``, both for the current instant); if another epoch opens at the same instant it
    waits, else it runs :meth:`decide`, a generator of commands evaluated lazily (each command is
    executed before the generator resumes, so it sees the updated state).
    """

    needs_durations: ClassVar[bool] = True
    requirements = AgentRequirements(
        epochs=_WORK_EPOCHS, commands=frozenset({Cmd.WAIT, Cmd.PLACE}), queueing=("central",)
    )

    def requirements_for(self, scenario: Any) -> AgentRequirements:
        req = dataclasses.replace(type(self).requirements, uses_oracle=bool(self._uses_oracle(scenario)))
        self.requirements = req  # an instance value: run_episode reports it
        return req

    def _uses_oracle(self, scenario: Any) -> bool:
        return self.needs_durations and not scenario.clairvoyant

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        self.requirements_for(self.context.scenario)
        v = self.view
        self.capacity = np.array(v.capacity, dtype=np.float64)
        self.limit = fit_limit(self.capacity)
        self.jobs = JobCache(v, self.capacity[0], durations=self.needs_durations)
        self._epoch = -1
        self._instant = -math.inf
        self.arrived_now: list[int] = []
        self.departed_now: list[int] = []
        self._cmds: Iterator[Command] = iter(())

    def act(self, observation: Any) -> Command:
        v = self.view
        if v.epoch != self._epoch:
            self._epoch = v.epoch
            ev = v.event
            if ev.time != self._instant:
                self._instant = ev.time
                self.arrived_now, self.departed_now = [], []
            if ev.kind == EventKind.ARRIVAL:
                self.arrived_now.append(ev.job)
            elif ev.kind == EventKind.COMPLETION:
                self.departed_now.append(ev.server)
            if events_pending_now(v):
                self._cmds = iter(())
                return Command.wait()
            self._cmds = self.decide()
        return next(self._cmds, Command.wait())

    @abstractmethod
    def decide(self) -> Iterator[Command]:
        """Commands at a settled event time (``WAIT`` is implied at the end)."""

    # helpers ---------------------------------------------------------------------------------
    def queued(self) -> np.ndarray:
        q = np.fromiter(self.view.iter_queue(), dtype=np.int64, count=self.view.num_queued)
        self.jobs.ensure(q)
        return q

    def fits(self, ids: np.ndarray) -> np.ndarray:
        """``(n, L)`` bool: job ``ids[a]`` fits server ``l`` now (the kernel's test)."""
        load = self.view.load
        return np.all(load[None, :, :] + self.jobs.dem_abs[ids][:, None, :] <= self.limit[None, :, :], axis=2)


# ================================================================================== the MRIS agent


class _Planner:
    """MRIS's reservations per machine and its batch list scheduling (docs/papers/mris.md#backfilling), vectorised."""

    def __init__(self, M: int, R: int):
        self.M, self.R = M, R
        self.S = [np.zeros(0) for _ in range(M)]
        self.C = [np.zeros(0) for _ in range(M)]
        self.D = [np.zeros((0, R)) for _ in range(M)]

    def prune(self, t: float) -> None:
        """Forget reservations that end by ``t`` (they cannot affect windows starting at >= t)."""
        for i in range(self.M):
            keep = self.C[i] > t
            if not keep.all():
                self.S[i], self.C[i], self.D[i] = self.S[i][keep], self.C[i][keep], self.D[i][keep]

    def schedule(self, order: np.ndarray, gamma: float, p: np.ndarray, d: np.ndarray) -> list[tuple[int, int, float]]:
        """Commit the list ``order`` (job ids; ``p``, ``d`` indexed by id) from ``gamma``; returns
        ``(job, machine, start)`` in commit order."""
        self.prune(gamma)
        clock = np.full(self.M, gamma)
        remaining = np.asarray(order, dtype=np.int64)
        out: list[tuple[int, int, float]] = []
        idx = np.arange(self.M)
        while remaining.size:
            i = int(np.lexsort((idx, clock))[0])
            t = float(clock[i])
            took = self._scan(i, t, remaining, p, d, out)
            remaining = remaining[~took]
            if not remaining.size:
                break
            S, C = self.S[i], self.C[i]
            later = np.concatenate([C[C > t], S[S > t]])
            if later.size == 0:
                raise RuntimeError(f"MRIS: job {int(remaining[0])} does not fit an empty machine")
            clock[i] = later.min()
        return out

    def _scan(
        self, i: int, t: float, jobs: np.ndarray, p: np.ndarray, d: np.ndarray, out: list[tuple[int, int, float]]
    ) -> np.ndarray:
        S, C, D = self.S[i], self.C[i], self.D[i]
        taus = np.unique(np.concatenate([[t], S[S > t]]))  # sorted; taus[0] = t
        # usage at each point: sum of D over S <= tau < C = (started by tau) - (ended by tau), by sorted
        # cumulative sums over the reservations alive after t (O(m log m), not O(points x m))
        live = C > t
        U = np.zeros((taus.size, self.R))
        if live.any():
            Sl, Cl, Dl = S[live], C[live], D[live]
            zero = np.zeros((1, self.R))
            o = np.argsort(Sl, kind="stable")
            started = np.vstack([zero, np.cumsum(Dl[o], axis=0)])[np.searchsorted(Sl[o], taus, side="right")]
            o = np.argsort(Cl, kind="stable")
            ended = np.vstack([zero, np.cumsum(Dl[o], axis=0)])[np.searchsorted(Cl[o], taus, side="right")]
            U = started - ended
        ends = t + p[jobs]
        cnt = np.searchsorted(taus, ends, side="left")  # points of the window [t, t + p_j)
        dj = d[jobs]
        took = np.zeros(jobs.size, dtype=bool)
        new_c, new_d = [], []
        lim = 1.0 + TOL
        first = 0
        while first < jobs.size:
            PM = np.maximum.accumulate(U, axis=0)
            ok = np.all(PM[cnt[first:] - 1] + dj[first:] <= lim, axis=1)
            hit = np.flatnonzero(ok)
            if hit.size == 0:
                break
            a = first + int(hit[0])
            took[a] = True
            U[: cnt[a]] += dj[a]
            new_c.append(ends[a])
            new_d.append(dj[a])
            out.append((int(jobs[a]), i, t))
            first = a + 1
        if new_c:
            self.S[i] = np.concatenate([S, np.full(len(new_c), t)])
            self.C[i] = np.concatenate([C, np.asarray(new_c)])
            self.D[i] = np.vstack([D, np.asarray(new_d)])
        return took


class MRIS(EventTimeAgent):
    """MRIS (Sec. 5, Algorithm 1): geometric intervals, knapsack selection, list scheduling with backfilling.

    Parameters:
        key: sort key of the batch list (Sec. 7.3; default ``wsjf``, the paper's choice for
            Figs 2-6; ``wsvf`` for Figure 7, docs/papers/mris.md#sort-keys).
        knapsack: ``exact`` (default; the experiments' solver), ``cadp`` or ``greedy`` (capacity 2ζ).
        eps: CADP's ε (default 0.1; the paper does not state one, docs/papers/mris.md#cadp).
        gamma0: the first boundary / time unit (default: see the module docstring).
        alpha: the geometric base (2, Theorem 6.8).
        exact_method: ``auto``, ``prefix``, ``dp`` or ``milp`` (see :func:`clustergym.theory.mris.knapsack_exact`).
    """

    description = (
        "MRIS (Fan & Liang ICPP'24): intervals gamma_k = gamma0 2^k, knapsack R*M*gamma_k, "
        "list scheduling with backfilling"
    )
    requirements = AgentRequirements(
        epochs=MRIS_EPOCHS, commands=frozenset({Cmd.WAIT, Cmd.PLACE, Cmd.WAKE}), queueing=("central",)
    )
    default_key: ClassVar[str] = "wsjf"
    default_knapsack: ClassVar[str] = "exact"

    def __init__(
        self,
        key: str | None = None,
        knapsack: str | None = None,
        eps: float = 0.1,
        gamma0: float | None = None,
        alpha: float = 2.0,
        exact_method: str = "auto",
        **params: Any,
    ):
        super().__init__(**params)
        self.key = check_key(key or self.default_key)
        self.knapsack = settings.choice(knapsack or self.default_knapsack, "agent.knapsack", KNAPSACKS)
        self.eps = settings.number(eps, "agent.eps", lo=0.0, lo_open=True, hi=1.0, hi_open=True)
        self.gamma0_param = settings.positive(gamma0, "agent.gamma0", allow_none=True)
        self.alpha = settings.number(alpha, "agent.alpha", lo=1.0, lo_open=True)
        self.exact_method = settings.choice(exact_method, "agent.exact_method", ("auto", "prefix", "dp", "milp"))

    def _gamma0(self, scenario: Any) -> tuple[float, bool]:
        """``(gamma0, privileged)``."""
        if self.gamma0_param is not None:
            return self.gamma0_param, False
        if "gamma0" in getattr(scenario, "params", {}):
            return float(scenario.params["gamma0"]), False
        work = getattr(scenario.source, "work", None)
        if work is not None and len(work):
            return float(np.min(work)), True  # the episode's p_min, as the authors' code (offline knowledge)
        return 1.0, False

    def _uses_oracle(self, scenario: Any) -> bool:
        return (not scenario.clairvoyant) or self._gamma0(scenario)[1]

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        cap = self.capacity
        if not np.all(cap == cap[0]):
            raise ConfigError("agent", "MRIS schedules identical machines; the scenario's servers differ")
        self.gamma0 = self._gamma0(self.context.scenario)[0]
        self.M, self.R = cap.shape
        self.k = 0
        self.next_gamma = self.gamma(0)
        self._woke = False
        self.planner = _Planner(self.M, self.R)
        self.plan: list[tuple[float, int, int, int]] = []  # (start, seq, job, machine)
        self._seq = 0
        self.committed = np.zeros(256, dtype=bool)
        self.log: list[dict[str, Any]] = []

    def gamma(self, k: int) -> float:
        """``γ_k = γ_0 α^k`` (the same expression as :func:`mris_schedule`)."""
        return self.gamma0 * self.alpha**k

    def act(self, observation: Any) -> Command:
        if not self._woke:  # the first command of the episode: ask for the first boundary
            self._woke = True
            return Command.wake(self.next_gamma)
        return super().act(observation)

    def decide(self) -> Iterator[Command]:
        now = self.view.now
        if now > self.next_gamma:
            raise RuntimeError(f"MRIS missed its boundary gamma={self.next_gamma:g} (now {now:g})")
        if now == self.next_gamma:
            self._iteration(now)
            self.k += 1
            self.next_gamma = self.gamma(self.k)
            yield Command.wake(self.next_gamma)
        while self.plan and self.plan[0][0] <= now:
            start, _, job, machine = heapq.heappop(self.plan)
            if start < now:
                raise RuntimeError(f"MRIS: planned start {start:g} of job {job} passed without an epoch (now {now:g})")
            yield Command.place(job, machine)
            if self.view.status(job) != JobStatus.RUNNING:  # the env ignored the command (invalid_action="penalize")
                raise RuntimeError(f"MRIS: job {job} did not start at its planned time {start:g} on server {machine}")

    def _iteration(self, g: float) -> None:
        q = self.queued()
        c = self.jobs
        if c.n > self.committed.size:
            grown = np.zeros(max(c.n, 2 * self.committed.size), dtype=bool)
            grown[: self.committed.size] = self.committed
            self.committed = grown
        cand = q[~self.committed[q]]
        elig = cand[(c.arrival[cand] <= g) & (c.work[cand] <= g * (1 + TOL))]
        entry: dict[str, Any] = {"k": self.k, "gamma": float(g), "J": int(elig.size), "B": 0, "volume": 0.0}
        if elig.size:
            zeta = self.R * self.M * g
            sel = select_batch(self.knapsack, c.weight[elig], c.vol[elig], zeta, eps=self.eps, method=self.exact_method)
            B = elig[sel]
            order = priority_order(self.key, B, c.arrival, c.work, c.weight, c.u)
            for job, machine, start in self.planner.schedule(order, g, c.work, c.dem):
                self._seq += 1
                heapq.heappush(self.plan, (start, self._seq, job, machine))
            self.committed[B] = True
            entry.update(B=int(B.size), volume=float(c.vol[B].sum()), zeta=zeta)
        self.log.append(entry)


class MRISWSVF(MRIS):
    """MRIS with the WSVF sort key (the Figure 7 setting, docs/papers/mris.md#sort-keys)."""

    name = "mris-wsvf"
    description = "MRIS with the WSVF sort key (the paper's Figure 7 setting)"
    default_key = "wsvf"


class MRISGreedy(MRIS):
    """MRIS-GREEDY (Sec. 7.4): the knapsack is the w/v greedy with capacity 2ζ (paper Remark 1)."""

    name = "mris-greedy"
    description = "MRIS-GREEDY: MRIS with the greedy w/v knapsack of capacity 2*R*M*gamma_k (Remark 1)"
    default_knapsack = "greedy"
