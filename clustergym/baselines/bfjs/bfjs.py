"""BF-J, BF-S, BF-J/S and FIFO-FF (Psychas & Ghaderi, "High-Throughput Bin Packing", ToN 2021).

Paper sections are cited as §IV-A etc.; the choices the paper leaves open are in
``docs/papers/bfjs.md``.  This module holds the Best-Fit family
of the paper and the Hadoop-FIFO baseline it is compared with, plus the slotted
machinery shared with :mod:`clustergym.baselines.bfjs.vqs`:

==========  =====================================================================  ==========
name        algorithm                                                              paper
==========  =====================================================================  ==========
``bf-j``    Best-Fit from the job's side: queue in id order, each job to the       §IV-A
            tightest server (least residual capacity; ties: smallest index)
``bf-s``    Best-Fit from the server's side: servers in index order, each filled   §IV-A
            with the largest job that fits (ties: smallest id) until none fits
``bf-js``   BF-J/S (Theorem 2): BF-S over the servers that had departures, then    §IV-A
            BF-J over the new arrivals still waiting
``fifo-ff`` FIFO-FF: the head of the queue to the first server where it fits;      §VII-B
            strict head-of-line blocking (``blocking=False``: First-Fit in job
            order, the "skip" variant)
==========  =====================================================================  ==========

The slotted timeline (docs/papers/bfjs.md#timeline) and how it maps onto the environment
---------------------------------------------------------------------------------------
The agents declare one periodic clock tick per slot and no other epoch
(``EpochConfig(arrivals=False, completions=False, tick_period=1)``).  The
kernel orders events at equal times completions, arrivals, ticks, so at the
tick of slot ``t`` the departures of the slot (jobs started at ``t - S``) and
its arrivals have happened: the agent acts once per slot, after the slot's departures and arrivals.
A job's work is its number ``S`` of slots, so a job placed in slot ``t`` leaves
at ``t + S``.  The agent computes all of a slot's placements at the first
``predict`` call of the tick, then returns them one ``PLACE`` per call and
ends with ``WAIT``.

What changed since the previous slot is derived from the read-only view:

* ``DEP(t)`` ("servers that had job departures during the previous time
  slot"): the agent keeps its own record of the jobs it placed on each server.
  Only this agent starts jobs and jobs never move, so between two ticks the
  kernel's per-server job counts (``view.count_real``) can only drop, and a
  server whose count dropped is exactly a server that lost >= 1 job.  At a tick
  the agent compares the bytes of ``view.count_real`` with their value after
  its previous placements (one cheap comparison when nothing left); if they
  differ, it compares per-server totals with its own counts, and for those
  servers ``view.running_on`` tells which jobs left.  ``DEP(0)`` is every
  server (docs/papers/bfjs.md#timeline).  On scenarios whose epochs also include completions or
  arrivals (not slotted), the agent waits at those epochs and acts at ticks.
* ``NEW(t)``: jobs only enter the central queue by arriving and only leave it
  when this agent places them, so ``view.num_queued`` minus the agent's queue
  length is the number of new jobs.  Job ids increase with arrival order (the
  paper's ids), so they are the next queued ids after the last one seen
  (jobs rejected by the kernel as larger than every server are skipped).

A slot with no departure and no arrival needs no work: every policy here is
idempotent then (BF-J, BF-S, BF-J/S and VQS-BF leave a maximal packing, in
which no queued job fits any server; FIFO-FF's head stays blocked; VQS's
servers keep their configuration and budgets).  Inside a slot the work is
proportional to what changed: BF-S refills only ``DEP(t)`` servers and servers
with room for a new job, and a scan "in id order" visits only jobs that can fit
(:func:`first_by_id`): after a maximal packing an old job can only fit on a
``DEP(t)`` server.

Shared primitives (docs/papers/bfjs.md#ties)
--------------------------------------------
``EPS = 1e-9``: ``fits(r, l) := r <= free(l) + EPS``.  A server's used capacity
is recomputed exactly from its jobs when it loses one (0 when empty), so no
drift survives.  "Largest job that fits" is a bisection in a
``sortedcontainers.SortedList`` keyed ``(size, tie, -id)`` (largest size, then
smallest id).  "Tightest server" is a scan over servers (Python for small ``L``,
NumPy for large ``L``).  Computed scores within ``SCORE_RTOL`` count as equal
(:mod:`clustergym.core.cluster`: frees relative to the server's capacity, sizes
relative to themselves), so float noise does not break the smallest-index or
smallest-id tie rules.

Multi-resource modes (§VII-B, §IX; docs/papers/bfjs.md#multi-resource): parameter ``mode``
-----------------------------------------------------------------------------------------
* ``faithful`` (default; the paper's Google preprocessing): each job is the
  scalar ``r = max_d demand_d / C_d`` and all bookkeeping is scalar with
  ``sum r <= 1`` per server.  Scalar feasibility implies vector feasibility, so
  every PLACE is valid in the vector environment.  With heterogeneous servers,
  ``C_d`` is the largest capacity in resource ``d`` and server ``l`` has scalar
  capacity ``min_d C_ld / C_d`` (for one resource: absolute residuals, docs/papers/bfjs.md#heterogeneous).
* ``vector`` (an extra baseline, **not from the paper**): fits are checked per
  resource; BF-J's tightness score is the mean over resources of the
  normalised free capacity; BF-S's "largest" is the max-demand ``r`` (ties: sum
  of normalised demands, then smallest id).

Parameters: ``mode`` (all agents); ``blocking`` (``fifo-ff``, default True).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

import numpy as np
from sortedcontainers import SortedList

from clustergym.agent_api import Agent, AgentContext, AgentRequirements
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.jobs import JobStatus
from clustergym.core.placement import ResidualIndex
from clustergym.core.scores import argbest, score_tol
from clustergym.core.simulator import SLOT_EPOCHS
from clustergym.errors import ConfigError
from clustergym.validation import settings

__all__ = ["BFJ", "BFJS", "BFS", "EPS", "FIFOFF", "MODES", "SLOT_EPOCHS", "SlottedAgent", "first_by_id"]

EPS = 1e-9  #: fit tolerance in normalised units (§2.0)
SMALL_L = 32  #: up to this many servers, server scans run in Python; beyond, in NumPy
SCAN_MIN = 16  #: see first_by_id
MODES = ("faithful", "vector")
_INF = float("inf")
_QUEUED = JobStatus.QUEUED
_WAIT = Command.wait()


def first_by_id(pool: SortedList, fifo: dict[int, None], occ: dict[int, float], x: float) -> int:
    """The smallest id among the jobs with occupancy ``<= x``, or -1.

    ``pool`` holds the jobs' keys ``(occ, tie, -id)``; ``fifo`` the same jobs in
    id order.  A literal scan "in id order, place every job that fits" places,
    at each step, exactly this job (the capacity only shrinks during a scan, so
    a job skipped once never fits later); this query makes the scan cost
    proportional to what is placed rather than to the queue length.  ``k`` jobs
    qualify (one bisection): few are read from ``pool`` directly; otherwise
    the queue is read in id order for a bounded number of steps (expected
    ``len/k`` when sizes and ids are unrelated), then ``pool`` again.
    """
    k = pool.bisect_right((x, _INF, 0))
    if k == 0:
        return -1
    if k > SCAN_MIN:
        limit = 4 * len(fifo) // k + SCAN_MIN
        for n, i in enumerate(fifo):
            if occ[i] <= x:
                return i
            if n >= limit:
                break
    return -max(key[2] for key in pool.islice(0, k))


class SlottedAgent(Agent):
    """Shared machinery of the slotted baselines of the BF-J/S paper (slotted time of §II; docs/papers/bfjs.md).

    Subclasses implement :meth:`schedule` (one slot's decisions, through
    :meth:`place`) and may override the hooks ``setup``, ``occupancy``,
    ``enqueued``, ``dequeued``, ``placed``, ``server_synced``.
    """

    requirements = AgentRequirements(
        epochs=SLOT_EPOCHS, commands=frozenset({Cmd.WAIT, Cmd.PLACE}), queueing=("central",)
    )

    def __init__(self, mode: str = "faithful", **params: Any):
        super().__init__(**params)
        self.mode = settings.choice(mode, "agent.mode", MODES)
        self.vector = mode == "vector"

    # ================================================================== episode state
    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        v = self.view
        if v.queueing != "central":
            raise ConfigError("agent", f"agent {self.name!r} needs one central queue, got {v.queueing!r}")
        cap = np.asarray(v.capacity, dtype=np.float64)
        L, R = cap.shape
        self.L, self.R = L, R
        ref = cap.max(axis=0)
        self.ref = np.where(ref > 0, ref, 1.0)
        self.capn = cap / self.ref  # (L, R) normalised capacities
        self.cap = self.capn.min(axis=1).tolist()  # scalar capacity of each server
        self.tol = [EPS * c for c in self.cap]
        self.free_scale = float(max(self.cap))  # frees are differences of capacities
        self.homogeneous = bool(np.all(cap == cap[0]))
        self.used = [0.0] * L  # scalar occupancy of each server
        self.free_np = np.array(self.cap)  # mirror of cap - used (NumPy scans)
        self.tol_np = np.array(self.tol)
        # large clusters, faithful mode: tightest/first-fit server queries from an index over free_np
        # (clustergym.core.placement.ResidualIndex: the NumPy scans' answers without a pass over all L)
        self._ridx = ResidualIndex(self.free_np, self.tol_np) if L > SMALL_L and not self.vector else None
        self.uvec = np.zeros((L, R))  # vector mode: normalised usage
        self.on: list[dict[int, None]] = [{} for _ in range(L)]  # jobs on each server
        self.n_on = np.zeros(L, dtype=np.int64)
        self.occ: dict[int, float] = {}  # job -> occupancy (scalar units)
        self.key: dict[int, tuple[float, float, int]] = {}
        self.dvec: dict[int, np.ndarray] = {}  # vector mode: job -> normalised demand
        self.fifo: dict[int, None] = {}  # the central queue, in id order
        self.pool = SortedList()  # the queue by (occ, tie, -id)
        self.next_id = 0
        self.first_tick = True
        self.dirty = False  # schedule even without DEP/NEW
        self.dep: list[int] = []  # DEP(t) and NEW(t) of the last tick
        self.new: list[int] = []
        self.slots = 0  # ticks seen
        self._epoch = -1
        self._cmds: deque[Command] = deque()
        self._counts_after = v.count_real.tobytes()
        self._placed_now = False
        self.setup()

    def setup(self) -> None:
        """Hook: per-episode state of a subclass (called at the end of ``reset``)."""

    # ================================================================== the decision loop
    def act(self, observation: Any) -> Command:
        v = self.view
        if v.epoch != self._epoch:
            self._epoch = v.epoch
            if v.event.kind == EventKind.TICK:
                self._tick()
        if self._cmds:
            return self._cmds.popleft()
        if self._placed_now:
            # the slot's placements are all executed: remember the per-server counts
            self._placed_now = False
            self._counts_after = v.count_real.tobytes()
        return _WAIT

    def _tick(self) -> None:
        self.slots += 1
        dep = self._departures()
        new = self._arrivals()
        self.dep, self.new = dep, new
        if dep or new or self.dirty:
            self.schedule(dep, new)

    def schedule(self, dep: list[int], new: list[int]) -> None:  # pragma: no cover - abstract
        """One slot's decisions: call :meth:`place` for every placement.

        ``dep``: DEP(t), servers that lost >= 1 job since the last tick, ascending.
        ``new``: NEW(t), ids of the jobs that arrived since the last tick, ascending.
        """
        raise NotImplementedError

    # ------------------------------------------------------------------ DEP(t)
    def _departures(self) -> list[int]:
        cnt = self.view.count_real
        dep: list[int] = []
        now = cnt.tobytes()
        if now != self._counts_after:  # cheap test: did any count change since the last slot?
            self._counts_after = now
            total = cnt[:, 0] if cnt.shape[1] == 1 else cnt.sum(axis=1)
            dep = np.flatnonzero(total != self.n_on).tolist()
            for l in dep:
                self._sync_server(l)
        if self.first_tick:
            self.first_tick = False
            dep = list(range(self.L))
        return dep

    def _sync_server(self, l: int) -> None:
        running = set(self.view.running_on(l))
        on = self.on[l]
        for i in [i for i in on if i not in running]:
            del on[i]
            del self.occ[i], self.key[i]
            self.dvec.pop(i, None)
            self.departed(i, l)
        self.n_on[l] = len(on)
        self.used[l] = sum(self.occ[i] for i in on) if on else 0.0
        self.free_np[l] = self.cap[l] - self.used[l]
        if self._ridx is not None:
            self._ridx.touch(l)
        if self.vector:
            self.uvec[l] = np.sum([self.dvec[i] for i in on], axis=0) if on else 0.0
        self.server_synced(l)

    def departed(self, job: int, server: int) -> None:
        """Hook: ``job`` left ``server`` (called before the server's totals are recomputed)."""

    def server_synced(self, server: int) -> None:
        """Hook: ``server`` lost jobs; its ``on``, ``used`` are up to date."""

    # ------------------------------------------------------------------ NEW(t)
    def _arrivals(self) -> list[int]:
        v = self.view
        k = v.num_queued - len(self.fifo)
        if k <= 0:
            return []
        ids: list[int] = []
        j = self.next_id
        while len(ids) < k:
            if v.status(j) == _QUEUED:
                ids.append(j)
            j += 1
        self.next_id = j
        dem = v.demands(ids) / self.ref
        sizes = dem.max(axis=1).tolist()
        ties = dem.sum(axis=1).tolist() if self.vector else [0.0] * k
        for n, i in enumerate(ids):
            o = self.occupancy(sizes[n])
            key = (o, ties[n], -i)
            self.occ[i] = o
            self.key[i] = key
            self.fifo[i] = None
            self.pool.add(key)
            if self.vector:
                self.dvec[i] = dem[n]
            self.enqueued(i)
        return ids

    def occupancy(self, size: float) -> float:
        """Hook: the capacity a job of scalar size ``size`` takes in the agent's bookkeeping."""
        return size

    def enqueued(self, job: int) -> None:
        """Hook: ``job`` joined the queue (``occ``, ``key`` are set)."""

    def dequeued(self, job: int) -> None:
        """Hook: ``job`` left the queue (it is being placed)."""

    def placed(self, job: int, server: int) -> None:
        """Hook: ``job`` was placed on ``server`` (totals updated)."""

    # ------------------------------------------------------------------ placing
    def place(self, i: int, l: int) -> None:
        """Place job ``i``: queue -> server ``l``, and emit the PLACE command."""
        del self.fifo[i]
        self.pool.remove(self.key[i])
        self.dequeued(i)
        self.on[l][i] = None
        self.n_on[l] += 1
        self.used[l] += self.occ[i]
        self.free_np[l] = self.cap[l] - self.used[l]
        if self._ridx is not None:
            self._ridx.touch(l)
        if self.vector:
            self.uvec[l] += self.dvec[i]
        self.placed(i, l)
        self._cmds.append(Command(Cmd.PLACE, job=i, server=l))
        self._placed_now = True

    # ------------------------------------------------------------------ fit checks
    def free(self, l: int) -> float:
        """Scalar free capacity of server ``l`` (faithful mode's residual)."""
        return self.cap[l] - self.used[l]

    def bound(self, l: int) -> float:
        """An upper bound on the occupancy of any job that fits ``l`` (exact in faithful mode)."""
        if self.vector:
            return float((self.capn[l] - self.uvec[l]).max())
        return self.cap[l] - self.used[l]

    def fits(self, i: int, l: int) -> bool:
        if self.vector:
            return bool(np.all(self.dvec[i] <= self.capn[l] - self.uvec[l] + self.tol[l]))
        return self.occ[i] <= self.cap[l] - self.used[l] + self.tol[l]

    def _fit_mask(self, i: int) -> np.ndarray:
        """``(L,)`` bool: servers where job ``i`` fits (NumPy path)."""
        if self.vector:
            return np.all(self.dvec[i] <= self.capn - self.uvec + self.tol_np[:, None], axis=1)
        return self.free_np + self.tol_np >= self.occ[i]

    def _score(self, l: int) -> float:
        """BF-J's tightness score: the residual capacity (vector mode: its mean over resources)."""
        if self.vector:
            return float((self.capn[l] - self.uvec[l]).mean())
        return self.cap[l] - self.used[l]

    def tightest(self, i: int, servers: Iterable[int] | None = None) -> int:
        """ "Tightest server for job i" (BF-J, §IV-A): least residual among the servers where it fits;
        ties to the smallest index.  -1 if it fits nowhere."""
        if servers is None and self._ridx is not None:  # = the NumPy scan below, from the index
            return self._ridx.tightest(self.occ[i], self.free_scale)
        if servers is None and (self.L > SMALL_L or self.vector):
            ok = np.flatnonzero(self._fit_mask(i))
            if ok.size == 0:
                return -1
            score = self.free_np[ok] if not self.vector else (self.capn[ok] - self.uvec[ok]).mean(axis=1)
            return int(ok[argbest(score, largest=False, scale=self.free_scale)])
        best_score = _INF
        cands: list[tuple[int, float]] = []
        for l in range(self.L) if servers is None else servers:
            if self.fits(i, l):
                s = self._score(l)
                cands.append((l, s))
                best_score = min(best_score, s)
        if not cands:
            return -1
        low = best_score + score_tol(best_score, self.free_scale)  # argbest(largest=False), in Python
        return min(l for l, s in cands if s <= low)

    def first_fit(self, i: int, servers: Iterable[int] | None = None) -> int:
        """The smallest-index server where job ``i`` fits, or -1."""
        if servers is None and self._ridx is not None:  # = the NumPy scan below, from the index
            return self._ridx.first(self.occ[i])
        if servers is None and self.L > SMALL_L:
            ok = np.flatnonzero(self._fit_mask(i))
            return int(ok[0]) if ok.size else -1
        for l in range(self.L) if servers is None else sorted(servers):
            if self.fits(i, l):
                return l
        return -1

    def largest_fitting(self, pool: SortedList, l: int) -> int:
        """ "Largest job that fits in l" (BF-S, §IV-A): the largest occupancy <= free + EPS, ties to the
        smallest id, among the jobs of ``pool``; -1 if none."""
        pos = pool.bisect_right((self.bound(l) + self.tol[l], _INF, 0))
        if pos == 0:
            return -1
        # the largest fitting size, then every fitting key tied with it (SCORE_RTOL; they sit just
        # below it in the pool); among them the largest tie key (vector mode, up to SCORE_RTOL),
        # then the smallest id
        tied: list[tuple[float, float, int]] = []
        i = pos - 1
        while i >= 0:
            key = pool[i]
            if tied and tied[0][0] - key[0] > score_tol(tied[0][0]):
                break
            if not self.vector or self.fits(-key[2], l):
                tied.append(key)
                # the rest of its block of equal (size, tie) keys has larger ids: skip it
                i = pool.bisect_left((key[0], key[1], -_INF)) - 1
            else:
                i -= 1
        if not tied:
            return -1
        if len(tied) == 1:
            return -tied[0][2]
        top = max(k[1] for k in tied)
        low = top - score_tol(top)
        return min(-k[2] for k in tied if k[1] >= low)

    def servers_with_room(self, size: float) -> list[int]:
        """Servers whose bound admits a job of occupancy ``size`` (a superset of where it fits)."""
        if self.L > SMALL_L:
            room = self.free_np if not self.vector else (self.capn - self.uvec).max(axis=1)
            return np.flatnonzero(room + self.tol_np >= size).tolist()
        return [l for l in range(self.L) if self.bound(l) + self.tol[l] >= size]

    # ================================================================== the paper's building blocks
    def bf_s_fill(self, l: int, pool: SortedList | None = None) -> None:
        """BF-S on one server (§IV-A): fill server ``l`` with the largest job that fits until none fits."""
        pool = self.pool if pool is None else pool
        while True:
            i = self.largest_fitting(pool, l)
            if i < 0:
                return
            self.place(i, l)

    def scan_jobs(self, dep: list[int], new: list[int], rule: str) -> None:
        """The queue in increasing id, each job to the server chosen by ``rule`` (``tightest``:
        BF-J, §IV-A; ``first``: First-Fit in job order, FIFO-FF's skip variant, §VII-B).

        Old jobs (queued at the end of the last slot, when the packing was maximal) can only fit
        on the DEP(t) servers; new jobs may fit anywhere.
        """
        choose = self.tightest if rule == "tightest" else self.first_fit
        first_new = new[0] if new else -1
        if dep:
            if self.vector:
                for i in [i for i in self.fifo if first_new < 0 or i < first_new]:
                    l = choose(i, dep)
                    if l >= 0:
                        self.place(i, l)
            else:
                while True:
                    x = max(self.cap[l] - self.used[l] + self.tol[l] for l in dep)
                    i = first_by_id(self.pool, self.fifo, self.occ, x)
                    if i < 0 or (first_new >= 0 and i >= first_new):
                        break
                    self.place(i, choose(i, dep))
        for i in new:
            if i in self.fifo:
                l = choose(i)
                if l >= 0:
                    self.place(i, l)


# ====================================================================== the agents
class BFJ(SlottedAgent):
    """BF-J (§IV-A): every slot, the queue in arrival order, each job to the tightest server."""

    description = "BF-J (BF-J/S §IV-A): jobs in arrival order, each to the tightest server; slotted"

    def schedule(self, dep: list[int], new: list[int]) -> None:
        self.scan_jobs(dep, new, "tightest")


class BFS(SlottedAgent):
    """BF-S (§IV-A): every slot, servers in index order, each filled with the largest fitting jobs."""

    description = "BF-S (BF-J/S §IV-A): servers in index order, each filled largest-job-first; slotted"

    def schedule(self, dep: list[int], new: list[int]) -> None:
        servers = dep
        if new:  # servers without departures can only take a new job
            servers = sorted(set(dep).union(self.servers_with_room(min(self.occ[i] for i in new))))
        for l in servers:
            self.bf_s_fill(l)


class BFJS(SlottedAgent):
    """BF-J/S (§IV-A, Theorem 2): BF-S over the servers with departures, then BF-J over the new jobs."""

    description = "BF-J/S (§IV-A, Thm 2): BF-S on servers with departures, BF-J on new jobs; slotted"

    def schedule(self, dep: list[int], new: list[int]) -> None:
        for l in dep:  # step 1: index order, over the whole queue
            self.bf_s_fill(l)
        for i in new:  # step 2: new jobs still waiting, in arrival order
            if i in self.fifo:
                l = self.tightest(i)
                if l >= 0:
                    self.place(i, l)


class FIFOFF(SlottedAgent):
    """FIFO-FF (§VII-B): the head of the queue to the first server where it fits, until it fits nowhere.

    ``blocking=False``: the skip variant, First-Fit in job order (every job that fits is placed).
    """

    description = "FIFO-FF (BF-J/S §VII-B): Hadoop FIFO with First-Fit packing, head-of-line blocking; slotted"

    def __init__(self, blocking: bool = True, mode: str = "faithful", **params: Any):
        super().__init__(mode=mode, **params)
        self.blocking = settings.boolean(blocking, "agent.blocking")

    def schedule(self, dep: list[int], new: list[int]) -> None:
        if not self.blocking:
            self.scan_jobs(dep, new, "first")
            return
        fifo = self.fifo
        while fifo:
            i = next(iter(fifo))
            l = self.first_fit(i)
            if l < 0:
                break
            self.place(i, l)
