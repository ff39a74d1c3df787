"""The simulation kernel: continuous-time discrete events, queues, commands, metrics.

This module owns the *dynamics* (events, capacity, queues, metrics).  It knows nothing of Gymnasium:
:mod:`clustergym.envs` wraps it.  The kernel advances from one decision epoch
to the next (``advance``) and executes commands at an epoch (``apply``).

Events and their order at equal times: completions, then arrivals, then agent
clock ticks, then agent wake-ups, then the horizon (``EventKind`` values).
Ties inside a kind are broken by insertion order, so runs are deterministic.

Random streams (one ``numpy.random.SeedSequence`` tree per ``reset(seed)``):
``arrivals`` (the job stream, independent of every decision: common random
numbers), ``ticks`` (the agent clock), ``dummies`` (dummy lifetimes), and
``routing`` (ties in queue routing).
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from clustergym.core.cluster import Cluster
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.jobs import JOB_MEMORY_MODES, JobStatus, JobTable
from clustergym.core.metrics import QueueTrace, TimeIntegrals, stability_test
from clustergym.core.source import ArrivalChunk, ArrivalSource
from clustergym.errors import ClusterGymError, InvalidCommandError, ScenarioError
from clustergym.validation import choice, number

__all__ = [
    "EpochConfig",
    "SLOT_EPOCHS",
    "Event",
    "Simulator",
    "Queueing",
    "Routing",
    "QUEUEING_MODES",
    "ROUTINGS",
    "ImpossibleJobError",
]

Queueing = Literal["central", "local", "loss"]
Routing = Literal["jsq", "power-of-two", "random", "agent"]
QUEUEING_MODES: tuple[str, ...] = get_args(Queueing)
ROUTINGS: tuple[str, ...] = get_args(Routing)

_INF = math.inf
_QUEUED, _RUNNING = int(JobStatus.QUEUED), int(JobStatus.RUNNING)
_COMPLETION, _ARRIVAL, _TICK, _WAKEUP, _HORIZON = (
    int(EventKind.COMPLETION),
    int(EventKind.ARRIVAL),
    int(EventKind.TICK),
    int(EventKind.WAKEUP),
    int(EventKind.HORIZON),
)


# command kinds that name a server, a type, a job (sets: one hash per check)
_NEEDS_SERVER = frozenset(
    {Cmd.PLACE, Cmd.DUMMY, Cmd.RESERVE, Cmd.RELEASE, Cmd.ADMIT, Cmd.MIGRATE, Cmd.REPLACE, Cmd.ROUTE}
)
_NEEDS_TYPE = frozenset({Cmd.DUMMY, Cmd.RESERVE, Cmd.RELEASE})
_NEEDS_JOB = frozenset({Cmd.PLACE, Cmd.MIGRATE, Cmd.PREEMPT, Cmd.REPLACE, Cmd.ROUTE})


class ImpossibleJobError(ClusterGymError):
    """A job demands more than the capacity of every server (``impossible="error"``)."""


@dataclass(frozen=True)
class EpochConfig:
    """Which events are decision epochs (README: "The decision model").

    Attributes:
        arrivals: stop at every job arrival (always true in loss mode).
        completions: stop at every completion of a real job.
        dummy_completions: stop at every dummy expiry (RMS needs it).
        tick_rate: rate of a Poisson agent clock (ticks per time unit; 0 = none).
        tick_period: period of a periodic agent clock (0 = none); ticks at
            ``tick_offset + k * tick_period``.  Slotted agents use period 1.
        tick_offset: time of the first periodic tick.

    Wake-ups requested with ``WAKE`` are always epochs.
    """

    arrivals: bool = True
    completions: bool = True
    dummy_completions: bool = True
    tick_rate: float = 0.0
    tick_period: float = 0.0
    tick_offset: float = 0.0

    def __post_init__(self) -> None:
        number(self.tick_rate, "epochs.tick_rate", lo=0.0)
        number(self.tick_period, "epochs.tick_period", lo=0.0)
        if self.tick_rate > 0 and self.tick_period > 0:
            raise ScenarioError("epochs", "give tick_rate (Poisson clock) or tick_period (periodic clock), not both")
        number(self.tick_offset, "epochs.tick_offset", lo=0.0, allow_inf=True)

    def merged(self, other: EpochConfig) -> EpochConfig:
        """The union of two epoch configurations (an agent's needs on top of a scenario's)."""
        return EpochConfig(
            arrivals=self.arrivals or other.arrivals,
            completions=self.completions or other.completions,
            dummy_completions=self.dummy_completions or other.dummy_completions,
            tick_rate=other.tick_rate or self.tick_rate,
            tick_period=other.tick_period or self.tick_period,
            tick_offset=other.tick_offset if other.tick_period else self.tick_offset,
        )


#: slotted time (BF-J/S §1.10): no epoch at arrivals or completions, one tick per slot (a time unit),
#: after the slot's departures and arrivals
SLOT_EPOCHS = EpochConfig(arrivals=False, completions=False, dummy_completions=False, tick_period=1.0)


@dataclass(frozen=True, slots=True)
class Event:
    """The event that opened the current decision epoch.

    ``job``, ``server`` and ``type`` are -1 when they do not apply (a tick has
    none; a completion names the job that left and its server).
    """

    kind: EventKind
    time: float
    job: int = -1
    server: int = -1
    type: int = -1


class _Redraw:
    """In a pickled simulator, the arrival generator: the number of chunks to draw again."""

    def __init__(self, pulled: int):
        self.pulled = pulled


class Simulator:
    """Discrete-event simulation of a cluster under an external agent.

    Args:
        capacity: ``(L, R)`` server capacities.
        source: the job stream (:class:`~clustergym.core.source.ArrivalSource`).
        queueing: ``"central"`` (one queue; the agent picks which job to start),
            ``"local"`` (one queue per server, routing at arrival; a job is
            started only on its server), or ``"loss"`` (no queue: each arrival is
            admitted or rejected at once).
        routing: for local queues, ``"jsq"`` (join the shortest local queue of the
            job's type, ties uniformly at random), ``"power-of-two"`` (the shorter
            of two distinct random servers, RMS paper Remark 4), ``"random"``, or
            ``"agent"`` (the job waits unrouted until the agent issues ``ROUTE``).
        epochs: which events are decision epochs.
        horizon: simulated time at which the episode is truncated (``inf``: run
            until a finite source is exhausted and the system is empty).
        queue_cap: if the number of waiting jobs exceeds it, the episode
            terminates and is flagged unstable.
        impossible: what happens to a job larger than every server:
            ``"reject"`` (status REJECTED, counted in ``impossible_rejected``) or
            ``"error"`` (raise :class:`ImpossibleJobError`).
        speed: ``(L, J)`` service speed of each server for each job type; a job of
            work ``w`` runs ``w / speed`` time units (LoTES machine-dependent
            rates).  Default all ones.
        rate_window: time constant of the exponentially weighted arrival-rate
            estimate shown to agents.
        validate: check every kernel invariant after every event and command
            (slow; for tests).
        warmup: warm-up deletion for the steady-state metrics of :meth:`summary`: the time
            averages cover ``[warmup, now]``, the per-job statistics the jobs arriving at or after
            ``warmup``, and the instability test the second half of ``[warmup, now]``.  Counts,
            the raw integrals (:attr:`integrals`, from 0) and so the environments' rewards are
            unchanged.  0 (default): everything from time 0, exactly as without the option.
    """

    _chunks: Iterator[ArrivalChunk] | None  # None once the source is exhausted
    _arrival_seed: np.random.SeedSequence  # see __getstate__

    def __init__(
        self,
        capacity: np.ndarray,
        source: ArrivalSource,
        *,
        queueing: Queueing = "central",
        routing: Routing = "jsq",
        epochs: EpochConfig = EpochConfig(),
        horizon: float = _INF,
        queue_cap: int | None = None,
        impossible: Literal["reject", "error"] = "reject",
        speed: np.ndarray | None = None,
        rate_window: float = 10.0,
        validate: bool = False,
        job_memory: str = "full",
        warmup: float = 0.0,
    ):
        capacity = np.asarray(capacity, dtype=np.float64)
        if capacity.ndim != 2 or capacity.shape[0] < 1 or capacity.shape[1] < 1:
            raise ScenarioError(
                "cluster.capacity", f"expected an (L, R) array with L, R >= 1, got shape {capacity.shape}"
            )
        if not np.all(np.isfinite(capacity)) or np.any(capacity < 0):
            raise ScenarioError("cluster.capacity", "capacities must be finite and >= 0")
        if source.num_resources != capacity.shape[1]:
            raise ScenarioError(
                "workload", f"demands have {source.num_resources} resources but servers have {capacity.shape[1]}"
            )
        choice(queueing, "queueing", QUEUEING_MODES)
        choice(routing, "routing", ROUTINGS)
        choice(impossible, "impossible", ("reject", "error"))
        number(horizon, "horizon", lo=0.0, lo_open=True, allow_inf=True)
        self.job_memory = choice(job_memory, "job_memory", JOB_MEMORY_MODES)
        number(queue_cap, "queue_cap", lo=1, integer=True, allow_none=True)
        self.warmup = number(warmup, "warmup", lo=0.0)
        if not self.warmup < horizon:
            raise ScenarioError("warmup", f"must be shorter than the horizon ({horizon:g}), got {self.warmup:g}")
        self.source = source
        self.types = source.types
        self.cluster = Cluster(capacity, self.types.demand, exact_types=self.types.exact)
        L, J = self.cluster.num_servers, self.types.num_types
        self.num_servers, self.num_resources, self.num_types = L, capacity.shape[1], J
        if speed is None:
            self.speed = np.ones((L, J))
        else:
            self.speed = np.asarray(speed, dtype=np.float64)
            if self.speed.shape != (L, J) or np.any(~np.isfinite(self.speed)) or np.any(self.speed <= 0):
                raise ScenarioError(
                    "cluster.speed", f"expected ({L}, {J}) positive finite speeds, got shape {self.speed.shape}"
                )
        self.queueing = queueing
        self.routing = routing
        self.epochs = epochs
        self.horizon = float(horizon)
        self.queue_cap = queue_cap
        self.impossible = impossible
        self.rate_window = float(rate_window)
        self.validate = validate
        self._limit = self.cluster._limit
        # with exact types every job of type j demands types.demand[j]: whether it fits some server
        # is known per type (None: check each job)
        self._type_fits: np.ndarray | None = None
        if self.types.exact:
            fits = np.less_equal(self.types.demand[:, None, :], self._limit[None, :, :])
            self._type_fits = fits.all(axis=2).any(axis=1)
        # the distinct rows of the limits: "fits some empty server" without a pass over every server
        self._limit_rows = np.unique(self._limit, axis=0)
        rates = source.arrival_rates()
        self.total_rate = float(np.sum(rates)) if rates is not None else None
        self._seeded = False

    # ====================================================================== copies
    def __getstate__(self) -> dict:
        """Pickle and deep-copy support: the arrival stream is a generator, which cannot be copied, so a
        copy records how many chunks were drawn and :meth:`__setstate__` draws them again from the same
        seed (the stream depends on its seed only), leaving the copy's stream and generator exactly
        where the original's are.  Planning agents (rollouts, tree search) copy an environment and
        continue it."""
        state = self.__dict__.copy()
        if state.get("_chunks") is not None:
            state["_chunks"] = _Redraw(state["_chunks_pulled"])
            state.pop("rng_arrivals")
        return state

    def __setstate__(self, state: dict) -> None:
        redraw = state.get("_chunks")
        self.__dict__.update(state)
        if isinstance(redraw, _Redraw):
            self.rng_arrivals = np.random.default_rng(self._arrival_seed)
            self._chunks = iter(self.source.chunks(self.rng_arrivals))
            for _ in range(redraw.pulled):
                next(self._chunks)

    # ====================================================================== reset
    def reset(self, seed: int | None = None) -> Event:
        """Start a new episode at time 0 and return the START epoch."""
        ss = np.random.SeedSequence(seed)
        s_arr, s_tick, s_dummy, s_route = ss.spawn(4)
        self.rng_arrivals = np.random.default_rng(s_arr)
        self._arrival_seed = s_arr  # rebuilds the arrival stream of a copy (see __getstate__)
        self.rng_ticks = np.random.default_rng(s_tick)
        self.rng_dummies = np.random.default_rng(s_dummy)
        self.rng_routing = np.random.default_rng(s_route)
        self.seed = seed
        L, J = self.num_servers, self.num_types
        self.cluster.reset()
        self.jobs = JobTable(self.num_resources, memory=self.job_memory, warmup=self.warmup)
        self.now = 0.0
        self._heap: list[tuple[float, int, int, int]] = []
        self._seq = 0
        # queues: insertion-ordered dicts of job ids (O(1) removal anywhere, FIFO iteration)
        self.queue: OrderedDict[int, None] = OrderedDict()  # central / unrouted / pending admission
        self.type_queue: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(J)]
        self.local_queue: dict[tuple[int, int], OrderedDict[int, None]] = {}  # (server, type) -> ids
        self.local_count = np.zeros((L, J), dtype=np.int64)
        self.queued_by_type = np.zeros(J, dtype=np.int64)
        self.running: list[dict[int, None]] = [dict() for _ in range(L)]  # real and dummy jobs per server
        self.dummies_by_type: list[dict[int, None]] = [dict() for _ in range(J)]
        self.n_queued = 0
        self.n_running = 0
        self.w_queued = 0.0
        self.w_running = 0.0
        self.r_running = 0.0
        self.pending = -1  # loss mode: the arriving job awaiting ADMIT/REJECT
        # counters
        self.n_arrivals = 0
        self.n_started = 0
        self.n_completed = 0
        #: sum of reward rate x service time over the real jobs started so far: the reward
        #: ``reward_timing="start"`` pays when a job starts (not a time integral: commands change it)
        self.reward_started = 0.0
        #: sum of reward rate x *mean* service time (the type's mean work over the server's speed) over
        #: the real jobs started so far: what ``reward_timing="expected"`` pays when a job starts
        self.reward_started_mean = 0.0
        self.n_rejected = 0
        self.n_preempted = 0
        self.n_migrations = 0
        self.n_dummies = 0
        self.impossible_rejected = 0
        self.n_events = 0
        self.n_epochs = 0
        self.integrals = TimeIntegrals(J, self.num_resources)
        #: the integrals at t = warmup (set when the clock passes it; None before, and without a warm-up)
        self.integrals_at_warmup: TimeIntegrals | None = None
        self.trace = QueueTrace(self.horizon)
        self.rate_estimate = np.zeros(J)
        self._rate_time = 0.0
        # arrival stream
        self._chunks = iter(self.source.chunks(self.rng_arrivals))
        self._chunks_pulled = 0
        self._chunk: ArrivalChunk | None = None
        self._ct: list[float] = []
        self._ci = 0
        self._next_arrival = _INF
        self._pull_chunk()
        # agent clock
        self._tick_k = 0
        self._next_tick = self._draw_tick()
        self.done = False
        self.truncated = False
        self.terminated = False
        self.unstable = False
        self.event = Event(EventKind.START, 0.0)
        self._seeded = True
        if self.validate:
            self.check_invariants()
        return self.event

    # ====================================================================== arrivals
    def _pull_chunk(self) -> None:
        while self._chunks is not None:
            try:
                chunk = next(self._chunks)
                self._chunks_pulled += 1
            except StopIteration:
                self._chunks = None
                break
            if len(chunk):
                if chunk.demand.shape[1] != self.num_resources:
                    raise ScenarioError(
                        "workload", f"a chunk has {chunk.demand.shape[1]} resources, expected {self.num_resources}"
                    )
                self._chunk = chunk
                self._ct = chunk.time.tolist()
                self._ctype = chunk.type.tolist()
                self._cwork = chunk.work.tolist()
                self._cweight = chunk.weight.tolist()
                self._creward = chunk.reward_rate.tolist()
                self._ci = 0
                self._next_arrival = self._ct[0]
                return
        self._chunk = None
        self._next_arrival = _INF

    def _draw_tick(self) -> float:
        e = self.epochs
        if e.tick_rate > 0:
            return self.now + self.rng_ticks.exponential(1.0 / e.tick_rate)
        if e.tick_period > 0:
            t = e.tick_offset + self._tick_k * e.tick_period
            self._tick_k += 1
            return t
        return _INF

    # ====================================================================== time advance
    def _integrate(self, t: float) -> None:
        dt = t - self.now
        if dt < 0:
            raise AssertionError(f"time went back: {t} < {self.now}")
        if dt > 0:
            I = self.integrals
            if self.now < self.warmup <= t and self.integrals_at_warmup is None:
                self._snapshot_warmup()
            I.elapsed = t  # not a running sum: no rounding drift from now
            I.queue += self.n_queued * dt
            I.system += (self.n_queued + self.n_running) * dt
            I.weighted_queue += self.w_queued * dt
            I.weighted_system += (self.w_queued + self.w_running) * dt
            I.reward += self.r_running * dt
            if self.n_queued:
                I.queue_by_type += self.queued_by_type * dt
            c = self.cluster
            I.real_usage += c.real_usage * dt
            if c.had_dummies:  # dummy_usage is exactly zero until the first dummy: nothing to add
                I.dummy_usage += c.dummy_usage * dt
            if c.any_slots:
                I.empty_slot_usage += c.empty_slot_usage * dt
            self.trace.record(self.now, t, self.n_queued)
            self.now = t

    def _snapshot_warmup(self) -> None:
        """The integrals at exactly ``t = warmup`` (the state is constant on ``[now, warmup]``): the
        running ones plus the same products over ``warmup - now``.  The running integrals themselves
        are not split, so they, and the rewards, stay bit for bit those of a run without warm-up."""
        I, c = self.integrals, self.cluster
        d = self.warmup - self.now
        W = TimeIntegrals(self.num_types, self.num_resources)
        W.elapsed = self.warmup
        W.queue = I.queue + self.n_queued * d
        W.system = I.system + (self.n_queued + self.n_running) * d
        W.weighted_queue = I.weighted_queue + self.w_queued * d
        W.weighted_system = I.weighted_system + (self.w_queued + self.w_running) * d
        W.reward = I.reward + self.r_running * d
        W.queue_by_type = I.queue_by_type + self.queued_by_type * d
        W.real_usage = I.real_usage + c.real_usage * d
        W.dummy_usage = I.dummy_usage + c.dummy_usage * d
        W.empty_slot_usage = I.empty_slot_usage + c.empty_slot_usage * d
        self.integrals_at_warmup = W

    def advance(self) -> Event | None:
        """Run events until the next decision epoch; return it, or ``None`` at episode end.

        In loss mode a pending arrival that the agent did not admit is rejected here.
        """
        if self.done:
            return None
        if self.pending >= 0:
            self._reject(self.pending)
        ep = self.epochs
        heap = self._heap
        jobs = self.jobs
        while True:
            # drop stale completions (jobs preempted or replaced) before they can move the clock
            while (
                heap
                and heap[0][1] == _COMPLETION
                and (jobs.status[heap[0][3]] != _RUNNING or jobs.end[heap[0][3]] != heap[0][0])
            ):
                heapq.heappop(heap)
            if self._drained():
                self._finish(terminated=True)
                return None
            # choose the next event: (time, kind order) minimal (kinds as ints: EventKind values)
            t, kind = self.horizon, _HORIZON
            if heap:
                h = heap[0]
                if h[0] < t or (h[0] == t and h[1] < kind):
                    t, kind = h[0], h[1]
            na = self._next_arrival
            if na < t or (na == t and _ARRIVAL < kind):
                t, kind = na, _ARRIVAL
            nt = self._next_tick
            if nt < t or (nt == t and _TICK < kind):
                t, kind = nt, _TICK
            if t == _INF:
                # nothing will ever happen again: a finite source is exhausted and nothing runs
                self._finish(terminated=True)
                return None
            if kind == _HORIZON:
                self._integrate(t)
                self._finish(truncated=True)
                return None
            self._integrate(t)
            self.n_events += 1
            if kind == _COMPLETION or kind == _WAKEUP:
                event, stop = self._pop_completion(t, kind)
            elif kind == _ARRIVAL:
                job = self._arrive()
                if job < 0:  # rejected as impossible
                    stop = False
                    event = None
                else:
                    srv = int(self.jobs.server[job])
                    event = Event(EventKind.ARRIVAL, t, job, srv, int(self.jobs.type[job]))
                    stop = (
                        ep.arrivals or self.queueing == "loss" or (self.queueing == "local" and self.routing == "agent")
                    )
                if self.queue_cap is not None and self.n_queued > self.queue_cap:
                    self.unstable = True
                    self._finish(terminated=True)
                    return None
            else:  # TICK
                self._next_tick = self._draw_tick()
                event = Event(EventKind.TICK, t)
                stop = True
            if self.validate:
                self.check_invariants()
            if stop:
                self.event = event  # type: ignore[assignment]
                self.n_epochs += 1
                return event

    def _pop_completion(self, t: float, kind: int) -> tuple[Event, bool]:
        """Pop the heap's head, a completion or a wake-up at time ``t``: its event, and whether it opens a
        decision epoch (:class:`EpochConfig`)."""
        _, _, _, job = heapq.heappop(self._heap)
        if kind == _WAKEUP:
            return Event(EventKind.WAKEUP, t), True
        jobs = self.jobs
        server = int(jobs.server[job])
        jtype = int(jobs.type[job])
        is_dummy = bool(jobs.dummy[job])
        self._end_job(job, JobStatus.COMPLETED)
        ep = self.epochs
        return Event(EventKind.COMPLETION, t, job, server, jtype), ep.dummy_completions if is_dummy else ep.completions

    def epoch_pending_now(self) -> bool:
        """Whether another decision epoch will open at the current instant.

        True when an event at exactly ``now`` (an arrival, a tick, a wake-up or a
        completion that is an epoch under ``epochs``) has not been processed yet.
        Agents whose rule acts once per event *time* (the MRIS paper's agents, docs/papers/mris.md#event-times) WAIT
        until this is False.
        """
        if self.done or self.now >= self.horizon:
            return False
        t, ep = self.now, self.epochs
        if self._next_arrival == t and (
            ep.arrivals or self.queueing == "loss" or (self.queueing == "local" and self.routing == "agent")
        ):
            return True
        if self._next_tick == t:
            return True
        jobs = self.jobs
        for ht, kind, _, job in self._heap:
            if ht != t:
                continue
            if kind == int(EventKind.WAKEUP):
                return True
            if kind == _COMPLETION and jobs.status[job] == _RUNNING and jobs.end[job] == t:
                if ep.dummy_completions if jobs.dummy[job] else ep.completions:
                    return True
        return False

    def _drained(self) -> bool:
        """With an infinite horizon: the source is exhausted and no real job waits or runs.

        Agent clocks, wake-ups and dummy jobs do not keep such an episode alive."""
        return (
            self.horizon == _INF
            and self._chunks is None
            and self._next_arrival == _INF
            and self.n_queued == 0
            and self.n_running == 0
        )

    def _finish(self, *, truncated: bool = False, terminated: bool = False) -> None:
        self.done = True
        self.truncated = truncated
        self.terminated = terminated
        self.event = Event(EventKind.HORIZON, self.now)

    def _arrive(self) -> int:
        """Create the next arriving job and put it in its queue. Returns its id (-1 if rejected)."""
        ci = self._ci
        t = self._ct[ci]
        jtype = self._ctype[ci]
        demand = self._chunk.demand[ci]  # type: ignore[union-attr]
        job = self.jobs.add(t, demand, jtype, self._cwork[ci], self._cweight[ci], self._creward[ci])
        self._ci = ci + 1
        if self._ci >= len(self._ct):
            self._pull_chunk()
        else:
            self._next_arrival = self._ct[self._ci]
        self.n_arrivals += 1
        if not 0 <= jtype < self.num_types:
            raise ScenarioError("workload", f"job {job} has type {jtype}, outside [0, {self.num_types})")
        # arrival-rate estimate (exponentially weighted, time constant rate_window)
        decay = math.exp(-(t - self._rate_time) / self.rate_window)
        self.rate_estimate *= decay
        self.rate_estimate[jtype] += 1.0 / self.rate_window
        self._rate_time = t
        if self._type_fits is not None and self.queueing != "local" and self._type_fits[jtype]:
            return self._admit_arrival(job)  # exact types: this type's demand fits some server
        if not (demand <= self._limit_rows).all(axis=1).any():
            if self.impossible == "error":
                raise ImpossibleJobError(
                    f"job {job} (arrival t={t:g}, type {jtype}) demands {demand.tolist()}, "
                    f"more than the capacity of every server"
                )
            self.impossible_rejected += 1
            self.jobs.status[job] = JobStatus.REJECTED
            self.n_rejected += 1
            return -1
        if self.queueing == "local":
            self._enqueue_central(job)
            if self.routing != "agent":
                self._route(job, self._choose_route(job, (demand <= self._limit).all(axis=1)))
            return job
        return self._admit_arrival(job)

    def _admit_arrival(self, job: int) -> int:
        """Central queue or loss mode: the job waits in the queue (or for ADMIT/REJECT)."""
        self._enqueue_central(job)
        if self.queueing == "loss":
            self.pending = job
        return job

    def _choose_route(self, job: int, can_hold: np.ndarray) -> int:
        jtype = int(self.jobs.type[job])
        cand = np.flatnonzero(can_hold)
        if self.routing == "random":
            return int(cand[self.rng_routing.integers(len(cand))])
        if self.routing == "power-of-two" and len(cand) >= 2:
            cand = self.rng_routing.choice(cand, size=2, replace=False)
        qlen = self.local_count[cand, jtype] if self.types.exact else self.local_count[cand].sum(axis=1)
        best = cand[qlen == qlen.min()]
        if len(best) == 1:
            return int(best[0])
        return int(best[self.rng_routing.integers(len(best))])

    # ====================================================================== queue bookkeeping
    def _enqueue_central(self, job: int) -> None:
        jtype = int(self.jobs.type[job])
        self.queue[job] = None
        self.type_queue[jtype][job] = None
        self.n_queued += 1
        self.queued_by_type[jtype] += 1
        self.w_queued += self.jobs.weight[job]

    def _dequeue(self, job: int) -> None:
        jobs = self.jobs
        jtype = int(jobs.type[job])
        server = int(jobs.server[job])
        if job in self.queue:
            del self.queue[job]
            del self.type_queue[jtype][job]
        else:
            del self.local_queue[(server, jtype)][job]
            self.local_count[server, jtype] -= 1
        if job == self.pending:
            self.pending = -1
        self.n_queued -= 1
        self.queued_by_type[jtype] -= 1
        self.w_queued -= jobs.weight[job]
        if self.n_queued == 0:
            self.w_queued = 0.0  # no drift survives an empty queue

    def _route(self, job: int, server: int) -> None:
        jtype = int(self.jobs.type[job])
        del self.queue[job]
        del self.type_queue[jtype][job]
        self.jobs.server[job] = server
        self.local_queue.setdefault((server, jtype), OrderedDict())[job] = None
        self.local_count[server, jtype] += 1

    # ====================================================================== service
    def _start(self, job: int, server: int) -> None:
        jobs = self.jobs
        self._dequeue(job)
        jtype = int(jobs.type[job])
        jobs.status[job] = _RUNNING
        jobs.server[job] = server
        jobs.start[job] = self.now
        end = self.now + jobs.work[job] / self.speed[server, jtype]
        jobs.end[job] = end
        jobs.in_slot[job] = self.cluster.add_real(server, jtype, jobs.demand[job])
        self.running[server][job] = None
        self.n_running += 1
        self.w_running += jobs.weight[job]
        self.r_running += jobs.reward_rate[job]
        self.reward_started += jobs.reward_rate[job] * (end - self.now)
        self.reward_started_mean += jobs.reward_rate[job] * self.types.mean_work[jtype] / self.speed[server, jtype]
        self.n_started += 1
        self._push(end, EventKind.COMPLETION, job)

    def _start_dummy(self, jtype: int, server: int) -> int:
        work = float(self.source.sample_work(jtype, self.rng_dummies))
        job = self.jobs.add(self.now, self.types.demand[jtype], jtype, work, 0.0, 0.0, dummy=True)
        jobs = self.jobs
        jobs.status[job] = _RUNNING
        jobs.server[job] = server
        jobs.start[job] = self.now
        end = self.now + work / self.speed[server, jtype]
        jobs.end[job] = end
        self.cluster.add_dummy(server, jtype)
        self.running[server][job] = None
        self.dummies_by_type[jtype][job] = None
        self.n_dummies += 1
        self._push(end, EventKind.COMPLETION, job)
        return job

    def _end_job(self, job: int, status: JobStatus) -> None:
        """Take a running job (real or dummy) off its server with the given final status."""
        jobs = self.jobs
        server = int(jobs.server[job])
        jtype = int(jobs.type[job])
        del self.running[server][job]
        jobs.status[job] = status
        if jobs.dummy[job]:
            del self.dummies_by_type[jtype][job]
            self.cluster.remove_dummy(server, jtype)
            return
        if status != JobStatus.COMPLETED:
            jobs.end[job] = self.now
        self.cluster.remove_real(server, jtype, jobs.demand[job], bool(jobs.in_slot[job]))
        jobs.in_slot[job] = False
        self.n_running -= 1
        self.w_running -= jobs.weight[job]
        self.r_running -= jobs.reward_rate[job]
        if self.n_running == 0:
            self.w_running = self.r_running = 0.0
        if status == JobStatus.COMPLETED:
            self.n_completed += 1
        elif status == JobStatus.PREEMPTED:
            self.n_preempted += 1

    def _reject(self, job: int) -> None:
        self._dequeue(job)
        self.jobs.status[job] = JobStatus.REJECTED
        self.n_rejected += 1

    def _push(self, t: float, kind: EventKind, job: int) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, int(kind), self._seq, job))

    # ====================================================================== commands
    def check(self, cmd: Command) -> str | None:
        """Why ``cmd`` is invalid now, or ``None`` if it is valid."""
        k = cmd.kind
        if self.done:
            return "the episode has ended"
        if k == Cmd.WAIT:
            return None
        L, J = self.num_servers, self.num_types
        jobs = self.jobs
        needs_server = k in _NEEDS_SERVER
        if needs_server and not 0 <= cmd.server < L:
            return f"server {cmd.server} does not exist (0..{L - 1})"
        needs_type = k in _NEEDS_TYPE
        if needs_type:
            if not 0 <= cmd.type < J:
                return f"type {cmd.type} does not exist (0..{J - 1})"
            if not self.types.exact:
                return f"{k.name} needs a workload with discrete job types"
        needs_job = k in _NEEDS_JOB or (k == Cmd.REJECT and cmd.job >= 0)
        if needs_job and not 0 <= cmd.job < jobs.size:
            return f"job {cmd.job} does not exist"
        if needs_job and cmd.job < jobs.base:
            return f"job {cmd.job} has finished and its row was released (job_memory='bounded')"
        if needs_job and jobs.dummy[cmd.job]:
            return f"job {cmd.job} is a dummy job"
        if k == Cmd.PLACE or k == Cmd.REPLACE:
            return self._check_place(cmd)
        if k == Cmd.DUMMY or k == Cmd.RESERVE:
            if not self.cluster.fits_free_at(cmd.server, self.types.demand[cmd.type]):
                return f"a type-{cmd.type} job does not fit in the free capacity of server {cmd.server}"
            return None
        if k == Cmd.RELEASE:
            c = self.cluster
            if c.slots[cmd.server, cmd.type] <= c.slots_filled[cmd.server, cmd.type]:
                return f"server {cmd.server} has no empty type-{cmd.type} slot"
            return None
        if k == Cmd.ADMIT:
            if self.pending < 0:
                return "no arriving job awaits admission"
            j = self.pending
            if not self.cluster.fits_at(cmd.server, int(jobs.type[j]), jobs.demand[j]):
                return f"the arriving job {j} does not fit on server {cmd.server}"
            return None
        if k == Cmd.REJECT:
            if cmd.job < 0:
                return None if self.pending >= 0 else "no arriving job awaits admission"
            if jobs.status[cmd.job] != _QUEUED:
                return f"job {cmd.job} is not queued"
            return None
        if k == Cmd.MIGRATE or k == Cmd.PREEMPT:
            if jobs.status[cmd.job] != _RUNNING:
                return f"job {cmd.job} is not running"
            if k == Cmd.MIGRATE:
                if jobs.server[cmd.job] == cmd.server:
                    return f"job {cmd.job} already runs on server {cmd.server}"
                if not self.cluster.fits_at(cmd.server, int(jobs.type[cmd.job]), jobs.demand[cmd.job]):
                    return f"job {cmd.job} does not fit on server {cmd.server}"
            return None
        if k == Cmd.ROUTE:
            if self.queueing != "local":
                return "ROUTE needs per-server queues (queueing='local')"
            if cmd.job not in self.queue:
                return f"job {cmd.job} is not waiting to be routed"
            if not np.all(jobs.demand[cmd.job] <= self._limit[cmd.server]):
                return f"job {cmd.job} can never fit on server {cmd.server}"
            return None
        if k == Cmd.WAKE:
            if not cmd.time > self.now:
                return f"wake-up time {cmd.time} is not after now ({self.now})"
            return None
        return f"unknown command {cmd}"

    def _check_place(self, cmd: Command) -> str | None:
        """:meth:`check` of PLACE and REPLACE (a queued job onto a server, or into a dummy's place)."""
        jobs = self.jobs
        if self.queueing == "loss":
            return "loss mode: use ADMIT or REJECT for the arriving job"
        if jobs.status[cmd.job] != _QUEUED:
            return f"job {cmd.job} is not queued (status {JobStatus(jobs.status[cmd.job]).name})"
        if self.queueing == "local":
            if cmd.job in self.queue:
                return f"job {cmd.job} has not been routed to a server yet"
            if jobs.server[cmd.job] != cmd.server:
                return f"job {cmd.job} waits at server {jobs.server[cmd.job]}, not {cmd.server}"
        jtype = int(jobs.type[cmd.job])
        if cmd.kind == Cmd.PLACE:
            if not self.cluster.fits_at(cmd.server, jtype, jobs.demand[cmd.job]):
                return f"job {cmd.job} does not fit on server {cmd.server}"
        else:
            if self.cluster.count_dummy[cmd.server, jtype] == 0:
                return f"server {cmd.server} holds no dummy of type {jtype}"
            if not np.all(jobs.demand[cmd.job] <= self.cluster._type_limit[jtype]):
                return f"job {cmd.job} is larger than a type-{jtype} dummy"
        return None

    def apply(self, cmd: Command) -> None:
        """Execute a command at the current epoch (``WAIT`` is a no-op here: call ``advance``).

        Raises:
            InvalidCommandError: if the command is invalid now; the message says why.
        """
        reason = self.check(cmd)
        if reason is not None:
            raise InvalidCommandError(f"{cmd} at t={self.now:g}: {reason}")
        self.execute(cmd)

    def execute(self, cmd: Command) -> None:
        """Execute a command already found valid by :meth:`check` (no second validation)."""
        k = cmd.kind
        if k == Cmd.PLACE:
            self._start(cmd.job, cmd.server)
        elif k == Cmd.ADMIT:
            self._start(self.pending, cmd.server)
        elif k == Cmd.DUMMY:
            self._start_dummy(cmd.type, cmd.server)
        elif k == Cmd.REPLACE:
            jtype = int(self.jobs.type[cmd.job])
            victim = next(j for j in self.running[cmd.server] if self.jobs.dummy[j] and self.jobs.type[j] == jtype)
            self._end_job(victim, JobStatus.CANCELLED)
            self._start(cmd.job, cmd.server)
        elif k == Cmd.RESERVE:
            self.cluster.add_slot(cmd.server, cmd.type)
        elif k == Cmd.RELEASE:
            self.cluster.remove_slot(cmd.server, cmd.type)
        elif k == Cmd.REJECT:
            self._reject(self.pending if cmd.job < 0 else cmd.job)
        elif k == Cmd.MIGRATE:
            self._migrate(cmd.job, cmd.server)
        elif k == Cmd.PREEMPT:
            self._end_job(cmd.job, JobStatus.PREEMPTED)
        elif k == Cmd.ROUTE:
            self._route(cmd.job, cmd.server)
        elif k == Cmd.WAKE:
            self._push(cmd.time, EventKind.WAKEUP, -1)
        if self.validate:
            self.check_invariants()

    def _migrate(self, job: int, dest: int) -> None:
        jobs = self.jobs
        src = int(jobs.server[job])
        jtype = int(jobs.type[job])
        demand = jobs.demand[job]
        c = self.cluster
        c.remove_real(src, jtype, demand, bool(jobs.in_slot[job]))
        jobs.in_slot[job] = c.add_real(dest, jtype, demand)
        del self.running[src][job]
        self.running[dest][job] = None
        jobs.server[job] = dest
        self.n_migrations += 1  # end time unchanged: the job keeps its remaining service

    # ====================================================================== queries
    def local_queue_of(self, server: int, job_type: int) -> OrderedDict[int, None]:
        return self.local_queue.get((server, job_type), OrderedDict())

    def arrival_rate_estimate(self) -> np.ndarray:
        """``(J,)`` exponentially weighted arrival rates per type at the current time.

        The weights ``exp(-(now - s) / rate_window) / rate_window`` over ``[0, now]`` sum to
        ``1 - exp(-now / rate_window)``; dividing by that sum (the start-up correction of any
        exponentially weighted mean) keeps the estimate unbiased from the first arrival on.
        Without it the estimate climbs from 0 over the first few ``rate_window``, a clock that
        a learned policy reads: trained on short episodes, it then misbehaves on long ones.
        """
        if self.now <= 0.0:
            return np.zeros_like(self.rate_estimate)
        raw = self.rate_estimate * math.exp(-(self.now - self._rate_time) / self.rate_window)
        return raw / -math.expm1(-self.now / self.rate_window)

    def window_integrals(self) -> tuple[TimeIntegrals, float]:
        """``(integrals, length)`` over the metrics window ``[warmup, now]``: the running integrals
        themselves without a warm-up; with one, their increments since ``t = warmup`` (zeros and
        length 0 while the clock has not passed it)."""
        I = self.integrals
        if self.warmup <= 0:
            return I, I.elapsed
        W = self.integrals_at_warmup
        D = TimeIntegrals(self.num_types, self.num_resources)
        if W is None:
            return D, 0.0
        D.elapsed = I.elapsed - W.elapsed
        for k in (
            "queue",
            "system",
            "weighted_queue",
            "weighted_system",
            "reward",
            "queue_by_type",
            "real_usage",
            "dummy_usage",
            "empty_slot_usage",
        ):
            setattr(D, k, getattr(I, k) - getattr(W, k))
        return D, D.elapsed

    def stability(self) -> dict:
        """The instability test on the queue trace (:func:`~clustergym.core.metrics.stability_test`)
        over the second half of ``[warmup, now]``; ``verdict`` is ``"unstable"`` also when the run
        stopped at the queue cap.  The arrival rate is the source's, or the observed one."""
        times, values = self.trace.arrays()
        rate = self.total_rate
        if rate is None and self.now > self.warmup:
            rate = self.n_arrivals / self.now
        out = stability_test(times, values, rate, start=self.warmup, end=self.now)
        if self.unstable:
            out["verdict"] = "unstable"
        return out

    def summary(self) -> dict:
        """Metrics of the episode so far (the ``clustergym run`` fields of docs/metrics.md, totals over the cluster).

        Time averages and per-job statistics cover the metrics window (``warmup``, see the class);
        counts cover the whole run."""
        I, T = self.window_integrals()
        jobs = self.jobs
        stats = jobs.job_stats()
        total_cap = self.cluster.capacity.sum(axis=0)
        # an empty metrics window: 0 from time 0 (as always), NaN when a warm-up was not passed
        none = float("nan") if self.warmup > 0 else 0.0
        with np.errstate(invalid="ignore", divide="ignore"):
            util = I.real_usage / (T * total_cap) if T > 0 else np.full(self.num_resources, none)
            dummy_util = I.dummy_usage / (T * total_cap) if T > 0 else np.full(self.num_resources, none)
            reserved = I.empty_slot_usage / (T * total_cap) if T > 0 else np.full(self.num_resources, none)
            if T > 0:  # an idle cluster (capacity 0 in a resource): 0, not NaN
                util, dummy_util, reserved = np.nan_to_num(util), np.nan_to_num(dummy_util), np.nan_to_num(reserved)
        st = self.stability()
        return {
            "servers": self.num_servers,
            "sim_time": self.now,
            "arrivals": self.n_arrivals,
            "started": self.n_started,
            "completed": self.n_completed,
            "rejected": self.n_rejected,
            "impossible_rejected": self.impossible_rejected,
            "preempted": self.n_preempted,
            "migrations": self.n_migrations,
            "dummies": self.n_dummies,
            "queued_at_end": self.n_queued,
            "mean_queue_length": I.queue / T if T > 0 else none,
            "mean_queue_length_by_type": (I.queue_by_type / T).tolist() if T > 0 else [none] * self.num_types,
            "mean_jobs_in_system": I.system / T if T > 0 else none,
            "mean_weighted_jobs_in_system": I.weighted_system / T if T > 0 else none,
            **stats,
            "reward_rate": I.reward / T if T > 0 else none,
            "utilization": util.tolist(),
            "dummy_utilization": dummy_util.tolist(),
            "reserved_utilization": reserved.tolist(),
            "events": self.n_events,
            "epochs": self.n_epochs,
            "unstable": st["verdict"] == "unstable",
            "stability": st["verdict"],
            "hit_queue_cap": bool(self.unstable),
            "warmup": self.warmup,
        }

    # ====================================================================== invariants
    def check_invariants(self) -> None:
        """Assert the kernel invariants (capacity, conservation, non-preemption; raises AssertionError naming the breach).

        O(jobs + servers): for tests and ``validate=True`` runs.
        """
        c = self.cluster
        jobs = self.jobs
        n, lo = jobs.size, jobs.base  # bounded job memory: rows below lo are released (all finished)
        rel = (
            jobs.stats.counts_by
            if jobs.stats is not None
            else dict.fromkeys(("real", "started", "COMPLETED", "REJECTED", "PREEMPTED"), 0)
        )
        assert np.all(c.load <= c._limit), f"server over capacity: {np.argwhere(c.load > c._limit)[:3].tolist()}"
        status = jobs.status[lo:n]
        valid = np.isin(status, [s.value for s in JobStatus])
        assert valid.all(), "a job has an unknown status"
        # recompute load, counts and queues from the job table
        load = np.zeros_like(c.load)
        count_real = np.zeros_like(c.count_real)
        count_dummy = np.zeros_like(c.count_dummy)
        filled = np.zeros_like(c.slots_filled)
        running = lo + np.flatnonzero(status == _RUNNING)
        for j in running:
            s, t = int(jobs.server[j]), int(jobs.type[j])
            assert j in self.running[s], f"running job {j} missing from server {s}"
            assert jobs.start[j] <= self.now <= jobs.end[j] + 1e-9, f"job {j} runs outside [start, end]"
            if jobs.dummy[j]:
                count_dummy[s, t] += 1
                load[s] += c.type_demand[t]
            else:
                count_real[s, t] += 1
                if jobs.in_slot[j]:
                    filled[s, t] += 1
                else:
                    load[s] += jobs.demand[j]
        load += c.slots @ c.type_demand
        assert sum(len(r) for r in self.running) == len(running), "a server lists a job that is not running"
        assert np.array_equal(count_real, c.count_real), "per-type real counts out of sync"
        assert c.servers_without_real == int((count_real.sum(axis=1) == 0).sum()), (
            "count of servers without real jobs out of sync"
        )
        assert np.array_equal(count_dummy, c.count_dummy), "dummy counts out of sync"
        assert np.array_equal(filled, c.slots_filled), "filled slot counts out of sync"
        assert np.all(c.slots_filled <= c.slots), "more filled slots than slots"
        assert np.allclose(load, c.load, rtol=1e-9, atol=1e-9), "incremental load differs from recomputed load"
        queued = lo + np.flatnonzero(status == _QUEUED)
        in_queues = len(self.queue) + int(self.local_count.sum())
        assert len(queued) == in_queues == self.n_queued, (
            f"queued jobs {len(queued)} != jobs in queues {in_queues} != counter {self.n_queued}"
        )
        for j in queued:
            assert not jobs.dummy[j], "a dummy job is queued"
            if j not in self.queue:
                s, t = int(jobs.server[j]), int(jobs.type[j])
                assert j in self.local_queue.get((s, t), {}), f"queued job {j} is in no queue"
        assert int(self.n_running) == int((~jobs.dummy[running]).sum()), "running counter out of sync"
        assert self.n_arrivals == rel["real"] + int(jobs.real().sum()), "arrivals != real jobs"
        real_status = status[~jobs.dummy[lo:n]]
        assert self.n_completed == rel["COMPLETED"] + int((real_status == JobStatus.COMPLETED).sum())
        assert self.n_rejected == rel["REJECTED"] + int((real_status == JobStatus.REJECTED).sum())
        assert self.n_preempted == rel["PREEMPTED"] + int((real_status == JobStatus.PREEMPTED).sum())
        assert self.n_started == rel["started"] + int((~np.isnan(jobs.start[lo:n]) & ~jobs.dummy[lo:n]).sum())
        assert self.now <= self.horizon
