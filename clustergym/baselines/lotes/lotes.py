"""LoTES stage 3: the online dispatcher (Tran et al., J. Scheduling 2018, Sec. 4.3).

The offline stages 1-2 (allocation LP, bins, machine assignment) are in
:mod:`clustergym.theory.lotes`; this agent solves them at ``reset`` and dispatches online.

The :class:`LoTES` agent keeps per-class
FCFS queues (its view of the kernel's central queue,
  ``view.queue_of_type``); at an arrival, roulette over the configurations
  serving the class (``rho_jk``, sampled without replacement on retries,
  docs/papers/lotes.md#dispatch-arrival), then the machine with the largest bin deficit
  ``upsilon = N_{bin(m),k} - kappa_{m,k}`` among the machines whose bin holds
  class ``k`` (ties: lowest index), then first-fit over every machine not yet
  examined, else the class queue (Sec. 4.3.1); at a completion on machine ``m``,
  the classes with ``Delta_jk > 0`` of ``m``'s configuration in decreasing
  ``upsilon`` (ties keep the current class, then lowest index; docs/papers/lotes.md#dispatch-completion), each
  class queue scanned FCFS skipping jobs that do not fit (Sec. 4.3.2).  The
  **orphan safeguard** (not in the paper; docs/papers/lotes.md#orphans): a queued job that fits no machine
  (at full capacity) of any configuration serving its class is pulled, FCFS,
  by any completing machine where it fits, after the serving classes
  (``strict_paper=True`` disables it).

Stages 1-2 run at ``reset`` from the scenario's parameters (configurations and
counts from the capacity matrix and ``speed``; ``alpha`` from the arrival rates
or, for traces, the class table of the preset; ``r`` the class profiles;
``mu_jk = speed[j, k] / mean_work_k``); they are solved once per instance and
cached.  The agent therefore declares ``uses_oracle=True``.

Parameters of the agent (``--set`` on the agent is not available; pass them to
``make_agent("lotes", ...)``): ``rho_mode`` (``resource``: the paper's
``rho_jk ~ Delta_jk``; ``throughput``: ``~ mu_jk Delta_jk``, docs/papers/lotes.md#omega-rates),
``candidates`` (``bin``: machines whose bin holds the class, docs/papers/lotes.md#dispatch-arrival;
``config``: all machines of the configuration), ``exit_scope`` (``config``:
classes with ``Delta_jk > 0``, the paper's wording; ``bin``: classes of the
machine's own bin), ``bins`` (``exhaustive`` or ``algorithm1``),
``strict_paper`` (no orphan safeguard), ``method`` (LP method, ``highs-ds``), ``rounding``
(``paper``, Sec. 4.2; ``swap``: the paper's rounding improved by single-machine moves between the
LP's bins, not in the paper, for reduced scales where the paper's rounding can leave a class
without a slot).

Instrumentation (``agent.stats``): arrivals, machines examined per arrival
(check T6 of docs/papers/lotes.md#test-labels), fallback placements, queued arrivals, orphans and orphan pulls.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from clustergym.agent_api import Agent, AgentContext, AgentRequirements
from clustergym.core.cluster import fit_limit
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.jobs import JobStatus
from clustergym.core.simulator import EpochConfig
from clustergym.theory.lotes import LotesPlan, plan_for
from clustergym.validation import settings

__all__ = ["ArrivalExitDispatcher", "LoTES", "QueueMirror"]

_QUEUED = int(JobStatus.QUEUED)


# ====================================================================================== Stage 3
class QueueMirror:
    """Agent-side copy of one FCFS queue (ids and demands in arrival order, with tombstones), so that
    "the oldest queued job that fits machine m" (LoTES) or "every queued job that fits m" (Tetris) is one
    vectorised scan however long the queue.  Positions are valid until the next ``remove_at``."""

    def __init__(self, R: int):
        self.ids = np.zeros(64, dtype=np.int64)
        self.dem = np.zeros((64, R))
        self.alive = np.zeros(64, dtype=bool)
        self.n = 0
        self.live = 0

    def push(self, job: int, demand: np.ndarray) -> None:
        if self.n == self.ids.shape[0]:
            size = 2 * self.n
            self.ids = np.resize(self.ids, size)
            self.dem = np.resize(self.dem, (size, self.dem.shape[1]))
            alive = np.zeros(size, dtype=bool)
            alive[: self.n] = self.alive[: self.n]
            self.alive = alive
        self.ids[self.n] = job
        self.dem[self.n] = demand
        self.alive[self.n] = True
        self.n += 1
        self.live += 1

    def reset_to(self, ids: np.ndarray, dem: np.ndarray) -> None:
        n = ids.shape[0]
        size = max(64, 2 * n)
        self.ids = np.zeros(size, dtype=np.int64)
        self.dem = np.zeros((size, self.dem.shape[1]))
        self.alive = np.zeros(size, dtype=bool)
        self.ids[:n] = ids
        if n:
            self.dem[:n] = dem
        self.alive[:n] = True
        self.n = self.live = n

    def first_fit(self, load: np.ndarray, lim: np.ndarray) -> int:
        """Position of the oldest live job with ``load + demand <= lim``, or -1."""
        hits = self.fitting(load, lim)
        return int(hits[0]) if hits.size else -1

    def fitting(self, load: np.ndarray, lim: np.ndarray) -> np.ndarray:
        """Positions (ascending, i.e. arrival order) of the live jobs with ``load + demand <= lim``."""
        n = self.n
        if self.live == 0:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(self.alive[:n] & np.all(load + self.dem[:n] <= lim, axis=1))

    def pop_at(self, pos: int) -> int:
        """Remove the job at ``pos`` and return its id (read before a compaction moves it)."""
        job = int(self.ids[pos])
        self.remove_at(pos)
        return job

    def remove_at(self, pos: int) -> None:
        self.alive[pos] = False
        self.live -= 1
        if self.live * 2 < self.n and self.n > 256:
            keep = np.flatnonzero(self.alive[: self.n])
            m = keep.size
            self.ids[:m] = self.ids[keep]
            self.dem[:m] = self.dem[keep]
            self.alive[:m] = True
            self.alive[m : self.n] = False
            self.n = self.live = m

    def remove_job(self, job: int) -> None:
        hit = np.flatnonzero((self.ids[: self.n] == job) & self.alive[: self.n])
        if hit.size:
            self.remove_at(int(hit[0]))


class ArrivalExitDispatcher(Agent):
    """The decision loop LoTES Stage 3 (Sec. 4.3) and the paper's Tetris (Sec. 5.1) share.

    At a job's arrival: one placement, or none (the job waits in the central queue).  At a
    completion: jobs for the machine that freed resources, one per step, until none is chosen.
    Subclasses implement ``_on_arrival(job) -> server or -1`` and ``_on_exit(server) -> job or -1``;
    ``_new_epoch()`` resets per-epoch state.
    """

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        self._epoch = -1
        self._arrival_done = False

    def _new_epoch(self) -> None:
        """Called once at the first step of every decision epoch."""

    def _on_arrival(self, job: int) -> int:
        raise NotImplementedError

    def _on_exit(self, server: int) -> int:
        raise NotImplementedError

    def act(self, observation: Any) -> Command:
        v = self.view
        ev = v.event
        if v.epoch != self._epoch:
            self._epoch = v.epoch
            self._arrival_done = False
            self._new_epoch()
        if ev.kind == EventKind.ARRIVAL:
            if self._arrival_done:
                return Command.wait()
            self._arrival_done = True
            job = ev.job
            if v.status(job) != JobStatus.QUEUED:
                return Command.wait()
            s = self._on_arrival(job)
            return Command.place(job, s) if s >= 0 else Command.wait()
        if ev.kind == EventKind.COMPLETION:
            if v.num_queued == 0:
                return Command.wait()
            job = self._on_exit(ev.server)
            return Command.wait() if job < 0 else Command.place(job, ev.server)
        return Command.wait()


class LoTES(ArrivalExitDispatcher):
    """LoTES Stage 3 dispatcher (Sec. 4.3) on the Stage 1-2 plan of the scenario."""

    description = "LoTES: allocation LP + bins + assignment LP (oracle: lambda, alpha, r, mu), class-queue dispatch"
    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=True, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.PLACE}),
        queueing=("central",),
        uses_oracle=True,
    )

    def __init__(
        self,
        rho_mode: str = "resource",
        candidates: str = "bin",
        exit_scope: str = "config",
        bins: str = "exhaustive",
        strict_paper: bool = False,
        method: str = "highs-ds",
        rounding: str = "paper",
        **params: Any,
    ):
        super().__init__(**params)
        self.rho_mode = settings.choice(rho_mode, "agent.rho_mode", ("resource", "throughput"))
        self.candidates = settings.choice(candidates, "agent.candidates", ("bin", "config"))
        self.exit_scope = settings.choice(exit_scope, "agent.exit_scope", ("config", "bin"))
        self.bins = settings.choice(bins, "agent.bins", ("exhaustive", "algorithm1"))
        self.rounding = settings.choice(rounding, "agent.rounding", ("paper", "swap"))
        self.strict_paper = settings.boolean(strict_paper, "agent.strict_paper")
        self.method = method
        self.plan: LotesPlan | None = None

    # ------------------------------------------------------------------ reset: Stages 1-2
    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        scenario = self.context.scenario
        t0 = time.perf_counter()
        plan = self.plan = plan_for(scenario, bins=self.bins, method=self.method, rounding=self.rounding)
        self.offline_seconds = time.perf_counter() - t0
        v = self.view
        inp = plan.inputs
        M, K = plan.Delta.shape
        L = v.num_servers
        self._cap = np.array(v.capacity, dtype=float)
        self._lim = fit_limit(self._cap)
        self._conf_of = inp.conf_of
        self._N = plan.machine_bin
        self._rho = plan.rho(self.rho_mode)
        self._serving = [np.flatnonzero(plan.Delta[:, k] > 0) for k in range(K)]  # C_k, canonical order
        self._serve_p = [self._rho[self._serving[k], k] for k in range(K)]
        self._conf_machines = [np.flatnonzero(inp.conf_of == j) for j in range(M)]
        self._cand: list[list[np.ndarray]] = []
        for j in range(M):
            ms = self._conf_machines[j]
            if self.candidates == "bin":
                self._cand.append([ms[self._N[ms, k] > 0] for k in range(K)])
            else:
                self._cand.append([ms for _ in range(K)])
        # the fit limits of each candidate set, per resource (the same comparisons as np.all(load[idx] + d
        # <= lim[idx], axis=1), without gathering the limits at every arrival), and of every machine
        self._cand_lim = [
            [[np.ascontiguousarray(self._lim[idx, r]) for r in range(self._lim.shape[1])] for idx in self._cand[j]]
            for j in range(M)
        ]
        self._lim_col = [np.ascontiguousarray(self._lim[:, r]) for r in range(self._lim.shape[1])]
        self._exit_classes = [[int(k) for k in np.flatnonzero(plan.Delta[j] > 0)] for j in range(M)]
        self._bin_classes = (
            [np.flatnonzero(self._N[m] > 0).tolist() for m in range(L)] if self.exit_scope == "bin" else None
        )
        # full-capacity fit of each class's jobs: a job is an orphan when it fits no machine of C_k
        self._conf_lim = fit_limit(inp.cap)
        self._orphans: dict[int, None] = {}
        # agent-side mirrors of the class queues (the kernel's central queue split by class)
        self._mirror = [QueueMirror(v.num_resources) for _ in range(K)]
        self._current = -1
        self.stats = {
            "arrivals": 0,
            "examined": 0,
            "placed_level2": 0,
            "fallback": 0,
            "queued": 0,
            "orphans": 0,
            "orphan_pulls": 0,
            "exit_placements": 0,
        }

    # ------------------------------------------------------------------ decisions
    def _new_epoch(self) -> None:
        self._current = -1

    def _on_arrival(self, job: int) -> int:
        """Job arrival (Sec. 4.3.1): the machine for an arriving job, or -1 (it stays in its class queue)."""
        v = self.view
        st = self.stats
        st["arrivals"] += 1
        k = v.job_type(job)
        d = v.demand(job)
        load = v.load
        count = v.count_real
        C = self._serving[k]
        p = self._serve_p[k]
        examined: list[np.ndarray] = []
        if C.size:
            remaining = list(range(C.size))
            w = p.astype(float).copy()
            while remaining:
                tot = float(w[remaining].sum())
                if tot <= 0:
                    pick = remaining[0]
                else:
                    u = self.rng.random() * tot
                    acc = 0.0
                    pick = remaining[-1]
                    for i in remaining:
                        acc += w[i]
                        if u < acc:
                            pick = i
                            break
                remaining.remove(pick)
                j = int(C[pick])
                idx = self._cand[j][k]
                if idx.size == 0:
                    continue
                examined.append(idx)
                st["examined"] += int(idx.size)
                lim = self._cand_lim[j][k]
                here = load[idx]
                ok = here[:, 0] + d[0] <= lim[0]
                for r in range(1, d.shape[0]):
                    ok &= here[:, r] + d[r] <= lim[r]
                if ok.any():
                    cand = idx[ok]
                    ups = self._N[cand, k] - count[cand, k]
                    st["placed_level2"] += 1
                    return int(cand[int(np.argmax(ups))])
        # fallback: first fit over every machine not examined (canonical order)
        fits = load[:, 0] + d[0] <= self._lim_col[0]
        for r in range(1, d.shape[0]):
            fits &= load[:, r] + d[r] <= self._lim_col[r]
        unexamined = None
        if examined:
            unexamined = np.ones(v.num_servers, dtype=bool)
            unexamined[np.concatenate(examined)] = False
            fits &= unexamined
        hit = np.flatnonzero(fits)
        if hit.size:
            first = int(hit[0])
            st["fallback"] += 1
            st["examined"] += first + 1 if unexamined is None else int(unexamined[: first + 1].sum())
            return first
        st["examined"] += v.num_servers if unexamined is None else int(unexamined.sum())
        st["queued"] += 1
        self._mirror[k].push(job, d)
        if not self.strict_paper and not self._fits_serving(k, d):
            self._orphans[job] = None
            st["orphans"] += 1
        return -1

    def _fits_serving(self, k: int, d: np.ndarray) -> bool:
        C = self._serving[k]
        if C.size == 0:
            return False
        return bool(np.any(np.all(d <= self._conf_lim[C], axis=1)))

    def _first_fit_in(self, ids: Sequence[int], server: int) -> int:
        if not ids:
            return -1
        v = self.view
        arr = np.fromiter(ids, dtype=np.int64, count=len(ids))
        ok = np.all(v.load[server] + v.demands(arr) <= self._lim[server], axis=1)
        hit = np.flatnonzero(ok)
        return int(arr[hit[0]]) if hit.size else -1

    def _class_mirror(self, k: int) -> QueueMirror:
        """The mirror of class k's queue, rebuilt from the view if it disagrees with the kernel."""
        mq = self._mirror[k]
        v = self.view
        if mq.live != int(v.queued_by_type[k]):
            ids = np.fromiter(v.queue_of_type(k), dtype=np.int64)
            mq.reset_to(ids, v.demands(ids))
        return mq

    def _on_exit(self, server: int) -> int:
        """Job exit (Sec. 4.3.2): the next queued job for the machine that freed resources, or -1."""
        v = self.view
        qbt = v.queued_by_type
        E = self._bin_classes[server] if self._bin_classes is not None else self._exit_classes[self._conf_of[server]]
        ks = [k for k in E if qbt[k] > 0]
        if ks:
            count = v.count_real
            N = self._N
            cur = self._current
            ks.sort(key=lambda k: (-(int(N[server, k]) - int(count[server, k])), k != cur, k))
            load, lim = v.load[server], self._lim[server]
            for k in ks:
                mq = self._class_mirror(k)
                pos = mq.first_fit(load, lim)
                if pos >= 0:
                    z = mq.pop_at(pos)
                    self._current = k
                    self.stats["exit_placements"] += 1
                    if z in self._orphans:
                        del self._orphans[z]
                    return z
        if self._orphans:
            stale = [z for z in self._orphans if v.status(z) != JobStatus.QUEUED]
            for z in stale:
                del self._orphans[z]
            z = self._first_fit_in(list(self._orphans), server)
            if z >= 0:
                del self._orphans[z]
                self._class_mirror(v.job_type(z)).remove_job(z)
                self.stats["orphan_pulls"] += 1
                return z
        return -1
