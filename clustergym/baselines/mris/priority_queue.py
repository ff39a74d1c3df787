"""PRIORITY-QUEUE (PQ) and COLLECT-ALL-PQ (CA-PQ) of the MRIS paper (Sec. 4, Sec. 5.2, Sec. 7.2).

PQ (Sec. 4): at every event time ``t`` (arrivals and completions, after every
completion and arrival at ``t`` has been processed, docs/papers/mris.md#event-times), the released, unstarted jobs are
sorted by a key of Sec. 7.3 (ties, up to ``SCORE_RTOL``: release time, then id) and scanned once from the head; each job that
fits some machine now starts on the lowest-index machine where it fits (first fit; equivalent to the
authors' code's machine-major min-clock scan, docs/papers/mris.md#pq-machine).  Work-conserving list
scheduling; Lemma 4.1 shows its competitive ratio is Omega(N).

Agents: ``pq`` (parameter ``key``, default ``wsjf``: PQ-WSJF of Figs 3-6) and one name per key,
``pq-svf``, ``pq-wsvf`` (Figure 7), ``pq-sjf``, ``pq-wsjf``, ``pq-sdf``, ``pq-wsdf``, ``pq-erf``.

CA-PQ (Sec. 7.2): waits until the last release time ``r_max`` -- privileged information, so the
agent is flagged ``uses_oracle`` -- then runs PQ on everything (offline PQ shifted by ``r_max``).
``r_max`` is the last arrival of a replayed table (or the parameter ``r_max``).

Offline references (for checks T2, T3 and T8 of docs/papers/mris.md#test-labels): :func:`pq_schedule` (job-major
first fit, event-driven; ``offline=True`` releases every job at 0, PQ for makespan of Sec. 5.2) and
:func:`pq_schedule_machine_major` (the authors' code's machine-major scan).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from clustergym.agent_api import AgentContext, AgentRequirements
from clustergym.baselines.mris.mris import (
    _NEEDS_DURATION,
    _WORK_EPOCHS,
    SORT_KEYS,
    TOL,
    EventTimeAgent,
    check_key,
    priority_order,
    sort_scores,
)
from clustergym.core.cluster import score_ranks
from clustergym.core.commands import Cmd, Command
from clustergym.errors import ConfigError
from clustergym.theory.mris import MRISInstance
from clustergym.validation import settings

__all__ = [
    "PriorityQueue",
    "PQ_SVF",
    "PQ_WSVF",
    "PQ_SJF",
    "PQ_WSJF",
    "PQ_SDF",
    "PQ_WSDF",
    "PQ_ERF",
    "CollectAllPQ",
    "pq_schedule",
    "pq_schedule_machine_major",
]


class PriorityQueue(EventTimeAgent):
    """PQ with sort key ``key`` (Sec. 4)."""

    description = "PRIORITY-QUEUE (MRIS paper Sec. 4): at each event, scan the queue sorted by a key, first fit"
    default_key: ClassVar[str] = "wsjf"

    def __init__(self, key: str | None = None, **params: Any):
        super().__init__(**params)
        self.key = check_key(key or self.default_key)

    @property
    def needs_durations(self) -> bool:  # type: ignore[override]
        return self.key in _NEEDS_DURATION

    def decide(self) -> Iterator[Command]:
        yield from self.pq_pass()

    def pq_pass(self) -> Iterator[Command]:
        """One PQ scan of the whole queue at the current time."""
        q = self.queued()
        if q.size == 0:
            return
        cand = q[self.fits(q).any(axis=1)]  # usage only grows during the scan: the others never fit
        if cand.size == 0:
            return
        order = self.order(cand)
        dem = self.jobs.dem_abs[order]
        first = 0
        while first < order.size:  # the next job in order that fits some machine, on the first such machine
            ok = np.all(self.view.load[None, :, :] + dem[first:, None, :] <= self.limit[None, :, :], axis=2)
            hit = np.flatnonzero(ok.any(axis=1))
            if hit.size == 0:
                break
            a = int(hit[0])
            job = int(order[first + a])
            yield Command.place(job, self.machine_for(job, ok[a]))
            first += a + 1

    def order(self, cand: np.ndarray) -> np.ndarray:
        """The job ids ``cand`` (shape ``(n,)``) in the order PQ scans them: by the sort key of
        Sec. 7.3, ties by release time, then id."""
        c = self.jobs
        return priority_order(self.key, cand, c.arrival, c.work, c.weight, c.u)

    def machine_for(self, job: int, fits: np.ndarray) -> int:
        """The machine job ``job`` starts on, given ``fits`` (shape ``(L,)``, bool: the machines it fits
        now, at least one): the first, as the paper's list scheduling (Sec. 4)."""
        return int(np.argmax(fits))


def _keyed(key: str) -> type[PriorityQueue]:
    """PQ with a fixed sort key: the agents ``pq-<key>``."""
    return type(
        f"PQ_{key.upper()}",
        (PriorityQueue,),
        {
            "__module__": __name__,
            "name": f"pq-{key}",
            "default_key": key,
            "__doc__": f"PQ-{key.upper()} (Fan & Liang 2024, Sec. 4): PQ sorted by {SORT_KEYS[key]}.",
            "description": f"PQ-{key.upper()} (MRIS paper): priority queue sorted by {SORT_KEYS[key]}, first fit",
        },
    )


PQ_SVF, PQ_WSVF, PQ_SJF, PQ_WSJF = _keyed("svf"), _keyed("wsvf"), _keyed("sjf"), _keyed("wsjf")
PQ_SDF, PQ_WSDF, PQ_ERF = _keyed("sdf"), _keyed("wsdf"), _keyed("erf")


class CollectAllPQ(PriorityQueue):
    """CA-PQ (Sec. 7.2): nothing starts before the last release ``r_max``; then PQ (key WSJF)."""

    name = "ca-pq"
    description = "CA-PQ (MRIS paper Sec. 7.2): wait for the last release r_max (privileged), then PQ-WSJF"
    requirements = AgentRequirements(
        epochs=_WORK_EPOCHS, commands=frozenset({Cmd.WAIT, Cmd.PLACE, Cmd.WAKE}), queueing=("central",)
    )

    def __init__(self, key: str | None = None, r_max: float | None = None, **params: Any):
        super().__init__(key=key, **params)
        self.r_max_param = settings.number(r_max, "agent.r_max", allow_none=True)

    def _r_max(self, scenario: Any) -> float:
        if self.r_max_param is not None:
            return self.r_max_param
        t = getattr(scenario.source, "time", None)
        if t is None or not len(t):
            raise ConfigError("agent.r_max", "CA-PQ needs the last release time: replay a fixed table or pass r_max")
        return float(np.max(t))

    def _uses_oracle(self, scenario: Any) -> bool:
        return True  # r_max is privileged (docs/papers/mris.md#privileged)

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        self.r_max = self._r_max(self.context.scenario)
        self._woke = False

    def act(self, observation: Any) -> Command:
        if not self._woke:
            self._woke = True
            if self.r_max > self.view.now:
                return Command.wake(self.r_max)
        return super().act(observation)

    def decide(self) -> Iterator[Command]:
        if self.view.now >= self.r_max:
            yield from self.pq_pass()


# ============================================================================================ references


def _order(key: str, ids: list[int], inst: MRISInstance) -> list[int]:
    u = inst.demand.sum(axis=1)
    ids_a = np.asarray(ids, dtype=np.int64)
    s = sort_scores(key, inst.release[ids_a], inst.proc[ids_a], inst.weight[ids_a], u[ids_a])
    return [int(j) for j in ids_a[np.lexsort((ids_a, inst.release[ids_a], score_ranks(s)))]]


def pq_schedule(
    inst: MRISInstance, key: str = "wsjf", *, offline: bool = False, start_time: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """PQ's schedule ``(start, machine)`` of ``inst``, computed directly (Sec. 4).

    ``offline``: every job is released at ``start_time`` (PQ for makespan, Sec. 5.2; CA-PQ is this with
    ``start_time = r_max``).  Otherwise jobs are released at ``max(r_j, start_time)``.
    """
    key = check_key(key, "key")
    n, M = inst.n, inst.machines
    rel = np.full(n, float(start_time)) if offline else np.maximum(inst.release, start_time)
    p, d = inst.proc, inst.demand
    S = np.full(n, math.nan)
    mach = np.full(n, -1)
    running: list[list[int]] = [[] for _ in range(M)]
    started = np.zeros(n, dtype=bool)
    t = float(rel.min())
    while not started.all():
        for i in range(M):
            running[i] = [x for x in running[i] if S[x] + p[x] > t]
        queue = [j for j in range(n) if not started[j] and rel[j] <= t]
        for j in _order(key, queue, inst):
            for i in range(M):
                use = d[running[i]].sum(axis=0) if running[i] else 0.0
                if np.all(use + d[j] <= 1 + TOL):
                    S[j], mach[j], started[j] = t, i, True
                    running[i].append(j)
                    break
        nxt = [rel[j] for j in range(n) if rel[j] > t] + [S[x] + p[x] for i in range(M) for x in running[i]]
        if not nxt:
            break
        t = min(nxt)
    return S, mach


def pq_schedule_machine_major(
    inst: MRISInstance, key: str = "wsjf", *, offline: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """PQ in the authors' code's machine-major form (docs/papers/mris.md#pq-machine): at each event time, for machine
    0, 1, ...: scan the sorted queue and start every job that fits on that machine."""
    key = check_key(key, "key")
    n, M = inst.n, inst.machines
    rel = np.zeros(n) if offline else inst.release
    p, d = inst.proc, inst.demand
    S = np.full(n, math.nan)
    mach = np.full(n, -1)
    started = np.zeros(n, dtype=bool)
    t = float(rel.min())
    while not started.all():
        for i in range(M):
            use = np.zeros(inst.num_resources)
            for x in np.flatnonzero((mach == i) & (S <= t) & (S + p > t)):
                use += d[x]
            for j in _order(key, [j for j in range(n) if not started[j] and rel[j] <= t], inst):
                if np.all(use + d[j] <= 1 + TOL):
                    S[j], mach[j], started[j] = t, i, True
                    use += d[j]
        ends = S + p
        nxt = np.concatenate([rel[rel > t], ends[started & (ends > t)]])
        if nxt.size == 0:
            break
        t = float(nxt.min())
    return S, mach
