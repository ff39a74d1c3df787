"""Property tests of the simulation kernel (its invariants: capacity, conservation, non-preemption).

Hypothesis draws small random instances -- 1-6 heterogeneous servers, 1-3
resources, typed Poisson streams (exponential / deterministic / log-normal
service), an untyped Poisson stream with uniform demands, a replayed job table
with tied arrival times and tied completion times, a time-scaled source -- and
every queueing mode (central; local with jsq / power-of-two / random / agent
routing; loss).  A random command policy (a numpy generator seeded by
hypothesis) drives a ``Simulator(validate=True)``: at each epoch it issues a
few commands, mostly valid ones chosen from the actual state and sometimes
deliberately invalid ones, then advances.

``validate=True`` makes the kernel assert its own invariants after every event
and command (``Simulator.check_invariants``).  On top of that the driver checks,
from the outside, after every command and every advance:

* time never goes back, every epoch happens at ``sim.now``;
* every job id ``< jobs.size`` has exactly one status, and it agrees with the
  queue / server structures that hold it;
* a running job's ``(start, end)`` never changes; only MIGRATE changes its
  server; a running job stops only by its own completion (at its end time,
  announced as a COMPLETION epoch for real jobs), by PREEMPT, or (dummies) by
  REPLACE; the kernel never starts a job by itself;
* the completed count equals the COMPLETION epochs of real jobs seen;
* the time integrals never decrease, commands do not change them, and
  ``integrals.elapsed == sim.now``;
* an invalid command raises ``InvalidCommandError`` and leaves the whole state
  (summary, loads, queues, job table, event heap, random streams) unchanged.

A second group checks common random numbers: two different command policies on
the same seed see exactly the same arrival stream.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.jobs import JobStatus
from clustergym.core.simulator import EpochConfig, Simulator
from clustergym.core.view import ClusterView
from clustergym.errors import InvalidCommandError
from clustergym.workloads import (
    Deterministic,
    Exponential,
    LogNormal,
    PoissonSource,
    PoissonTypedSource,
    ReplaySource,
    TimeScaled,
    UniformDemand,
)

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
MAX_EPOCHS = 250  # per episode: bounds the runtime of one example
INTEGRAL_TOL = 1e-9  # weighted sums are kept incrementally and may drift by rounding

# ============================================================================ instances


@dataclass(frozen=True)
class Instance:
    num_servers: int
    num_resources: int
    num_types: int
    source_kind: str  # typed | scaled | untyped | replay
    service: str  # exp | det | lognormal | mixed
    queueing: str  # central | local | loss
    routing: str
    ticks: str  # none | poisson | periodic
    arrivals_epochs: bool
    dummy_completions: bool
    with_speed: bool
    impossible_type: bool  # make one job type larger than every server
    finite_horizon: bool  # replay only: False means horizon = inf (episode ends when drained)
    seed: int  # numeric parameters of the instance


@st.composite
def instances(draw, queueing: str | None = None) -> Instance:
    q = queueing or draw(st.sampled_from(["central", "local", "loss"]))
    routing = draw(st.sampled_from(["jsq", "power-of-two", "random", "agent"])) if q == "local" else "jsq"
    kind = draw(st.sampled_from(["typed", "scaled", "untyped", "replay"]))
    ticks = draw(st.sampled_from(["none", "poisson", "periodic"]))
    # without arrival epochs a central/local queue is still served at ticks and completions
    arrivals_epochs = True if ticks == "none" else draw(st.booleans())
    finite = True if (kind != "replay" or ticks != "none") else draw(st.booleans())
    return Instance(
        num_servers=draw(st.integers(1, 6)),
        num_resources=draw(st.integers(1, 3)),
        num_types=draw(st.integers(1, 4)),
        source_kind=kind,
        service=draw(st.sampled_from(["exp", "det", "lognormal", "mixed"])),
        queueing=q,
        routing=routing,
        ticks=ticks,
        arrivals_epochs=arrivals_epochs,
        dummy_completions=draw(st.booleans()),
        with_speed=draw(st.booleans()),
        impossible_type=draw(st.integers(0, 7)) == 0,
        finite_horizon=finite,
        seed=draw(st.integers(0, 2**32 - 1)),
    )


def _service(name: str, rng: np.random.Generator):
    mean = float(rng.choice([0.5, 1.0, 2.0]))
    if name == "exp":
        return Exponential(mean)
    if name == "det":
        return Deterministic(mean)
    return LogNormal(mean, float(rng.choice([0.25, 1.0])))


def build(inst: Instance, validate: bool = True) -> Simulator:
    """A simulator for the instance (numbers drawn from ``inst.seed``), validating by default."""
    rng = np.random.default_rng(inst.seed)
    L, R, J = inst.num_servers, inst.num_resources, inst.num_types
    cap = np.round(rng.uniform(1.0, 4.0, (L, R)), 2)  # heterogeneous rows
    maxcap = cap.max(axis=0)
    horizon = float(rng.uniform(4.0, 12.0))
    total_rate = float(rng.uniform(1.0, 2.5)) * L
    if inst.source_kind in ("typed", "scaled"):
        td = np.round(rng.uniform(0.1, 0.9, (J, R)) * maxcap, 3)
        if inst.impossible_type:
            td[J - 1, int(rng.integers(R))] = 1.25 * maxcap.max()
        if inst.service == "mixed":
            service = [_service(str(rng.choice(["exp", "det", "lognormal"])), rng) for _ in range(J)]
        else:
            service = _service(inst.service, rng)
        rates = rng.dirichlet(np.ones(J)) * total_rate
        source = PoissonTypedSource(
            rates,
            td,
            service,
            weights=np.round(rng.uniform(0.5, 3.0, J), 2),
            reward_rates=np.round(rng.uniform(0.0, 5.0, J), 2),
            chunk_size=int(rng.integers(1, 20)),  # many chunk boundaries
        )
        if inst.source_kind == "scaled":
            factor = float(rng.uniform(0.5, 2.0))
            source = TimeScaled(source, factor)
    elif inst.source_kind == "untyped":
        low = np.round(rng.uniform(0.05, 0.4, R) * maxcap, 3)
        high = np.round(low + rng.uniform(0.1, 0.6, R) * maxcap, 3)
        if inst.impossible_type:
            high[0] = 1.3 * maxcap[0]
        service = _service("exp" if inst.service == "mixed" else inst.service, rng)
        source = PoissonSource(
            total_rate,
            UniformDemand(low, high),
            service,
            weight=1.5,
            reward_rate=2.0,
            chunk_size=int(rng.integers(1, 20)),
        )
    else:  # replay: integer arrival times (ties), works in {0.5, 1, 2, 3} (tied completions)
        n = int(rng.integers(3, 40))
        times = rng.integers(0, 12, n).astype(float)  # unsorted, with ties
        types = rng.integers(0, J, n)
        td = np.round(rng.uniform(0.1, 0.9, (J, R)) * maxcap, 2)
        if inst.impossible_type:
            td[J - 1, 0] = 1.2 * maxcap[0]
        if inst.service in ("exp", "det"):  # exact types: every job of type j demands td[j]
            demand = td[types]
            type_demand = td
        else:  # inexact: demands below the nominal size
            demand = np.round(td[types] * rng.uniform(0.3, 1.0, (n, R)), 3)
            type_demand = None
        source = ReplaySource(
            times,
            demand,
            rng.choice([0.5, 1.0, 2.0, 3.0], n),
            type=types,
            weight=np.round(rng.uniform(0.5, 2.0, n), 2),
            reward_rate=np.round(rng.uniform(0.0, 3.0, n), 2),
            type_demand=type_demand,
            chunk_size=int(rng.integers(1, 10)),
        )
        J = source.types.num_types
        if not inst.finite_horizon:
            horizon = math.inf
    if inst.ticks == "poisson":
        ticks = {"tick_rate": float(rng.uniform(0.5, 2.0))}
    elif inst.ticks == "periodic":
        ticks = {"tick_period": float(rng.choice([0.5, 1.0])), "tick_offset": float(rng.choice([0.0, 0.25]))}
    else:
        ticks = {}
    epochs = EpochConfig(
        arrivals=inst.arrivals_epochs, completions=True, dummy_completions=inst.dummy_completions, **ticks
    )
    speed = rng.choice([0.5, 1.0, 2.0, 4.0], (L, source.types.num_types)) if inst.with_speed else None
    return Simulator(
        cap,
        source,
        queueing=inst.queueing,
        routing=inst.routing,
        epochs=epochs,
        horizon=horizon,
        speed=speed,
        validate=validate,
    )


# ============================================================================ helpers


def same(a, b) -> bool:
    """Deep equality that treats NaN as equal to NaN."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def snapshot(sim: Simulator) -> dict:
    """Everything an invalid command must not touch."""
    j, n = sim.jobs, sim.jobs.size
    c = sim.cluster
    return {
        "summary": sim.summary(),
        "now": sim.now,
        "integrals": integrals(sim),
        "load": c.load.copy(),
        "slots": c.slots.copy(),
        "filled": c.slots_filled.copy(),
        "count_real": c.count_real.copy(),
        "count_dummy": c.count_dummy.copy(),
        "usage": (c.real_usage.copy(), c.dummy_usage.copy(), c.empty_slot_usage.copy()),
        "queue": tuple(sim.queue),
        "local": {k: tuple(v) for k, v in sim.local_queue.items() if v},
        "local_count": sim.local_count.copy(),
        "pending": sim.pending,
        "size": n,
        "columns": {name: getattr(j, name)[:n].copy() for name in j._COLUMNS},
        "running": [tuple(r) for r in sim.running],
        "heap": sorted(sim._heap),
        "rng": [g.bit_generator.state for g in (sim.rng_arrivals, sim.rng_dummies, sim.rng_routing, sim.rng_ticks)],
        "next": (sim._next_arrival, sim._next_tick),
    }


def integrals(sim: Simulator) -> dict:
    I = sim.integrals
    return {
        "elapsed": I.elapsed,
        "queue": I.queue,
        "system": I.system,
        "weighted_system": I.weighted_system,
        "weighted_queue": I.weighted_queue,
        "reward": I.reward,
        "queue_by_type": I.queue_by_type.copy(),
        "real_usage": I.real_usage.copy(),
        "dummy_usage": I.dummy_usage.copy(),
        "empty_slot_usage": I.empty_slot_usage.copy(),
    }


def real_stream(sim: Simulator) -> tuple[np.ndarray, ...]:
    """(arrival, demand, type, work, weight, reward) of the real jobs, in arrival order."""
    j, n = sim.jobs, sim.jobs.size
    real = ~j.dummy[:n]
    return tuple(getattr(j, c)[:n][real].copy() for c in ("arrival", "demand", "type", "work", "weight", "reward_rate"))


# ============================================================================ the driver


class Driver:
    """Random command policy + external invariant checks around a validating simulator."""

    def __init__(
        self,
        sim: Simulator,
        rng: np.random.Generator,
        *,
        p_invalid: float = 0.2,
        max_commands: int = 4,
        kinds: set[Cmd] | None = None,
    ):
        self.sim = sim
        self.view = ClusterView(sim)
        self.rng = rng
        self.p_invalid = p_invalid
        self.max_commands = max_commands
        self.kinds = kinds  # restrict the valid command kinds (None: all)
        self.running: dict[int, tuple[float, float, int]] = {}
        self.real_completion_events = 0
        self.events = Counter()
        self.applied = Counter()
        self.invalid = Counter()
        self.last_now = 0.0
        self.last_integrals: dict | None = None
        self.woke_at = -1
        self.routed: dict[int, int] = {}  # local queues: the server each job was routed to

    # ---------------------------------------------------------------- episode
    def run(self, seed: int, max_epochs: int = MAX_EPOCHS) -> None:
        sim = self.sim
        ev = sim.reset(seed)
        assert ev.kind == EventKind.START and ev.time == 0.0 and sim.now == 0.0
        self.last_integrals = integrals(sim)
        self.check_statuses()
        for _ in range(max_epochs):
            for _ in range(int(self.rng.integers(0, self.max_commands + 1))):
                if self.rng.random() < self.p_invalid:
                    self.issue_invalid()
                else:
                    self.issue_valid()
            before_size = sim.jobs.size
            before_now = sim.now
            ev = sim.advance()
            self.after_advance(ev, before_size, before_now)
            if ev is None:
                assert sim.done and sim.advance() is None
                break

    # ---------------------------------------------------------------- checks
    def check_statuses(self) -> None:
        """Every job has exactly one status, consistent with the structure that holds it."""
        sim = self.sim
        jobs, n = sim.jobs, sim.jobs.size
        status = jobs.status[:n]
        known = {s.value for s in JobStatus}
        assert set(np.unique(status).tolist()) <= known
        in_central = set(sim.queue)
        in_local: dict[int, int] = {}
        for (s, t), q in sim.local_queue.items():
            for job in q:
                assert job not in in_local and job not in in_central, f"job {job} in two queues"
                in_local[job] = s
                assert jobs.server[job] == s and jobs.type[job] == t
        on_server: dict[int, int] = {}
        for s, r in enumerate(sim.running):
            for job in r:
                assert job not in on_server, f"job {job} runs on two servers"
                on_server[job] = s
        queued = set(np.flatnonzero(status == JobStatus.QUEUED).tolist())
        running = set(np.flatnonzero(status == JobStatus.RUNNING).tolist())
        assert queued == in_central | set(in_local), "QUEUED jobs differ from the jobs in queues"
        assert running == set(on_server), "RUNNING jobs differ from the jobs on servers"
        assert not (queued & running)
        for job, s in on_server.items():
            assert jobs.server[job] == s
        dummies = np.flatnonzero(jobs.dummy[:n])
        assert not np.isin(status[dummies], [JobStatus.QUEUED, JobStatus.REJECTED, JobStatus.PREEMPTED]).any()
        assert not np.any(status[~jobs.dummy[:n]] == JobStatus.CANCELLED), "a real job is CANCELLED"
        if sim.queueing == "loss":
            assert len(queued) <= 1 and queued == ({sim.pending} if sim.pending >= 0 else set())
        if sim.queueing == "local" and sim.routing != "agent":
            assert not in_central, "a local-queue job stayed unrouted"

    def check_integrals(self, *, advanced: bool) -> None:
        sim = self.sim
        now_int = integrals(sim)
        prev = self.last_integrals
        if not advanced:
            assert same(now_int, prev), "a command changed the time integrals"
        for key, val in now_int.items():
            assert np.all(np.asarray(val) >= np.asarray(prev[key]) - INTEGRAL_TOL), f"integral {key} decreased"
        # exact equality is tested in test_elapsed_equals_now_exactly (it drifts by ulps: see there)
        assert now_int["elapsed"] == pytest.approx(sim.now, rel=1e-12, abs=1e-12)
        assert now_int["queue"] <= now_int["system"] + INTEGRAL_TOL
        self.last_integrals = now_int

    def check_running_after(self, cmd: Command | None, ev) -> None:
        """Compare the running set with the one recorded before the command / advance."""
        sim = self.sim
        jobs = sim.jobs
        now_running = {j for r in sim.running for j in r}
        left = set(self.running) - now_running
        for job, (start, end, server) in self.running.items():
            if job in now_running:
                assert jobs.start[job] == start and jobs.end[job] == end, f"running job {job} changed (start, end)"
                moved = cmd is not None and cmd.kind == Cmd.MIGRATE and cmd.job == job
                assert jobs.server[job] == (cmd.server if moved else server), f"job {job} changed server"
        if cmd is not None:  # a command stops at most its target (PREEMPT) or a dummy (REPLACE)
            if cmd.kind == Cmd.PREEMPT:
                assert left == {cmd.job}
                assert jobs.status[cmd.job] == JobStatus.PREEMPTED and jobs.end[cmd.job] == sim.now
            elif cmd.kind == Cmd.REPLACE:
                assert len(left) == 1
                (victim,) = left
                assert jobs.dummy[victim] and jobs.status[victim] == JobStatus.CANCELLED
                assert jobs.type[victim] == jobs.type[cmd.job] and self.running[victim][2] == cmd.server
            else:
                assert not left, f"{cmd} stopped jobs {left}"
            started = now_running - set(self.running)
            if cmd.kind in (Cmd.PLACE, Cmd.REPLACE, Cmd.ADMIT):
                job = cmd.job if cmd.kind != Cmd.ADMIT else self._admitted
                assert started == {job}
                s, t = int(jobs.server[job]), int(jobs.type[job])
                assert s == cmd.server and jobs.start[job] == sim.now
                assert jobs.end[job] == sim.now + jobs.work[job] / sim.speed[s, t]
            elif cmd.kind == Cmd.DUMMY:
                assert len(started) == 1
                (d,) = started
                assert d == jobs.size - 1 and jobs.dummy[d] and jobs.type[d] == cmd.type
                assert jobs.server[d] == cmd.server and jobs.start[d] == sim.now
            else:
                assert not started, f"{cmd} started jobs {started}"
        else:  # an advance: jobs end only by their own completion, and nothing starts
            assert now_running <= set(self.running), "the kernel started a job by itself"
            real_left = {j for j in left if not jobs.dummy[j]}
            for job in left:
                end = self.running[job][1]
                assert jobs.status[job] == JobStatus.COMPLETED, f"job {job} interrupted without PREEMPT"
                assert jobs.end[job] == end <= sim.now
            if ev is not None and ev.kind == EventKind.COMPLETION:
                assert ev.job in left and ev.time == self.running[ev.job][1]
                assert ev.server == self.running[ev.job][2] and ev.type == jobs.type[ev.job]
                if not jobs.dummy[ev.job]:
                    self.real_completion_events += 1
                assert real_left <= {ev.job}, "a real completion was not a decision epoch"
                if sim.epochs.dummy_completions:
                    assert left == {ev.job}
            else:
                assert not real_left, "a real completion was not a decision epoch"
                if sim.epochs.dummy_completions and ev is not None:
                    assert not left, "a dummy expiry was not a decision epoch"
        self.running = {j: (float(jobs.start[j]), float(jobs.end[j]), int(jobs.server[j])) for j in now_running}

    def after_advance(self, ev, before_size: int, before_now: float) -> None:
        sim = self.sim
        jobs = sim.jobs
        assert sim.now >= self.last_now, "time went back"
        self.last_now = sim.now
        if ev is None:
            assert sim.done and (sim.terminated != sim.truncated)
            if sim.truncated:
                assert sim.now == sim.horizon
        else:
            self.events[ev.kind.name] += 1
            assert ev.time == sim.now and ev is sim.event
            assert ev.kind in (EventKind.COMPLETION, EventKind.ARRIVAL, EventKind.TICK, EventKind.WAKEUP)
            if ev.kind == EventKind.ARRIVAL:
                job = ev.job
                assert job == jobs.size - 1 and not jobs.dummy[job] and jobs.arrival[job] == sim.now
                assert jobs.status[job] == JobStatus.QUEUED and ev.type == jobs.type[job]
                if sim.queueing == "loss":
                    assert sim.pending == job
                elif sim.queueing == "local" and sim.routing != "agent":
                    s = ev.server
                    assert s >= 0 and job in sim.local_queue_of(s, int(jobs.type[job]))
                    assert np.all(jobs.demand[job] <= sim.cluster._limit[s]), "routed where it can never fit"
                else:
                    assert job in sim.queue
            if ev.kind == EventKind.TICK:
                assert sim.epochs.tick_rate > 0 or sim.epochs.tick_period > 0
            if ev.kind != EventKind.ARRIVAL or sim.queueing != "loss":
                assert sim.pending == -1
        # arrivals during the advance happened in (before_now, now], in time order
        new = np.arange(before_size, jobs.size)
        new = new[~jobs.dummy[new]]
        if sim.queueing == "local" and sim.routing != "agent":
            for j in new:
                if jobs.status[j] != JobStatus.REJECTED:  # impossible jobs are not routed
                    self.routed[int(j)] = int(jobs.server[j])
        arr = jobs.arrival[new]
        assert np.all(arr >= before_now) and np.all(arr <= sim.now) and np.all(np.diff(arr) >= 0)
        self.check_running_after(None, ev)
        assert sim.n_completed == self.real_completion_events
        self.check_statuses()
        self.check_integrals(advanced=True)

    # ---------------------------------------------------------------- valid commands
    def valid_candidates(self) -> dict[Cmd, list[Command]]:
        sim, view = self.sim, self.view
        jobs = sim.jobs
        L, J = sim.num_servers, sim.num_types
        cap_limit = sim.cluster._limit
        out: dict[Cmd, list[Command]] = {k: [] for k in Cmd}
        queued: list[tuple[int, int]] = []  # (job, server it may start on: -1 = any)
        if sim.queueing == "central":
            queued = [(j, -1) for j in list(sim.queue)[:12]]
        elif sim.queueing == "local":
            for (s, _t), q in sim.local_queue.items():
                queued += [(j, s) for j in list(q)[:6]]
            for j in list(sim.queue)[:6]:  # unrouted (agent routing)
                for s in range(L):
                    if np.all(jobs.demand[j] <= cap_limit[s]):
                        out[Cmd.ROUTE].append(Command.route(j, s))
        for j, where in queued:
            servers = range(L) if where < 0 else [where]
            t = int(jobs.type[j])
            for s in servers:
                if view.fits_at(j, s):
                    out[Cmd.PLACE].append(Command.place(j, s))
                if sim.types.exact and sim.cluster.count_dummy[s, t] > 0:
                    out[Cmd.REPLACE].append(Command.replace(j, s))
            out[Cmd.REJECT].append(Command.reject(j))
        if sim.queueing == "loss" and sim.pending >= 0:
            p = sim.pending
            out[Cmd.ADMIT] = [Command.admit(s) for s in range(L) if view.fits_at(p, s)]
            out[Cmd.REJECT] = [Command.reject(), Command.reject(p)]
        if sim.types.exact:
            for t in range(J):
                fits = view.fits_type(t)
                for s in np.flatnonzero(fits):
                    out[Cmd.DUMMY].append(Command.dummy(t, int(s)))
                    out[Cmd.RESERVE].append(Command.reserve(t, int(s)))
        c = sim.cluster
        for s, t in np.argwhere(c.slots > c.slots_filled):
            out[Cmd.RELEASE].append(Command.release(int(t), int(s)))
        for j in self.running:
            if jobs.dummy[j]:
                continue
            out[Cmd.PREEMPT].append(Command.preempt(j))
            for s in range(L):
                if s != jobs.server[j] and view.fits_at(j, s):
                    out[Cmd.MIGRATE].append(Command.migrate(j, s))
        if self.woke_at != sim.n_epochs:  # at most one wake-up per epoch, or epochs multiply
            out[Cmd.WAKE].append(Command.wake(sim.now + float(self.rng.uniform(0.01, 3.0))))
        if self.kinds is not None:
            out = {k: v for k, v in out.items() if k in self.kinds}
        return {k: v for k, v in out.items() if v}

    # how often each kind is chosen when available (placement dominates, like a real agent)
    WEIGHTS: ClassVar[dict[Cmd, int]] = {
        Cmd.PLACE: 8,
        Cmd.ADMIT: 8,
        Cmd.ROUTE: 6,
        Cmd.DUMMY: 2,
        Cmd.RESERVE: 2,
        Cmd.RELEASE: 2,
        Cmd.REPLACE: 3,
        Cmd.MIGRATE: 2,
        Cmd.PREEMPT: 1,
        Cmd.REJECT: 1,
        Cmd.WAKE: 1,
    }

    def issue_valid(self) -> None:
        cands = self.valid_candidates()
        if not cands:
            return
        kinds = list(cands)
        w = np.array([self.WEIGHTS[k] for k in kinds], dtype=float)
        kind = kinds[int(self.rng.choice(len(kinds), p=w / w.sum()))]
        cmd = cands[kind][int(self.rng.integers(len(cands[kind])))]
        self.apply_valid(cmd)

    def apply_valid(self, cmd: Command) -> None:
        sim = self.sim
        reason = sim.check(cmd)
        assert reason is None, f"{cmd} should be valid: {reason}"
        self._admitted = sim.pending
        load_before = sim.cluster.load.copy()
        counts = (sim.n_started, sim.n_rejected, sim.n_preempted, sim.n_migrations, sim.n_dummies)
        sim.apply(cmd)
        self.applied[cmd.kind.name] += 1
        if cmd.kind == Cmd.WAKE:
            self.woke_at = sim.n_epochs
        assert sim.now == self.last_now
        jobs = sim.jobs
        c = sim.cluster
        delta = c.load - load_before
        if cmd.kind in (Cmd.PLACE, Cmd.ADMIT):
            job = cmd.job if cmd.kind == Cmd.PLACE else self._admitted
            expect = np.zeros_like(delta)
            if jobs.in_slot[job]:
                self.applied["filled_slot"] += 1
            else:
                expect[cmd.server] = jobs.demand[job]
            np.testing.assert_allclose(delta, expect, atol=1e-9)
            assert sim.n_started == counts[0] + 1
        elif cmd.kind in (Cmd.DUMMY, Cmd.RESERVE):
            expect = np.zeros_like(delta)
            expect[cmd.server] = sim.types.demand[cmd.type]
            np.testing.assert_allclose(delta, expect, atol=1e-9)
            if cmd.kind == Cmd.DUMMY:
                assert sim.n_dummies == counts[4] + 1
        elif cmd.kind == Cmd.RELEASE:
            expect = np.zeros_like(delta)
            expect[cmd.server] = -sim.types.demand[cmd.type]
            np.testing.assert_allclose(delta, expect, atol=1e-9)
        elif cmd.kind == Cmd.MIGRATE:
            assert sim.n_migrations == counts[3] + 1
        elif cmd.kind == Cmd.PREEMPT:
            assert sim.n_preempted == counts[2] + 1
        elif cmd.kind == Cmd.REJECT:
            assert sim.n_rejected == counts[1] + 1
            job = self._admitted if cmd.job < 0 else cmd.job
            assert jobs.status[job] == JobStatus.REJECTED and np.isnan(jobs.start[job])
        elif cmd.kind in (Cmd.ROUTE, Cmd.WAKE):
            np.testing.assert_array_equal(delta, 0.0)
            if cmd.kind == Cmd.ROUTE:
                self.routed[cmd.job] = cmd.server
                assert jobs.server[cmd.job] == cmd.server
                assert cmd.job in sim.local_queue_of(cmd.server, int(jobs.type[cmd.job]))
        self.check_running_after(cmd, None)
        self.check_statuses()
        self.check_integrals(advanced=False)

    # ---------------------------------------------------------------- invalid commands
    def invalid_candidates(self) -> list[Command]:
        sim, view = self.sim, self.view
        jobs = sim.jobs
        n, L, J = jobs.size, sim.num_servers, sim.num_types
        status = jobs.status[:n]
        dummy = jobs.dummy[:n]
        real_ids = np.flatnonzero(~dummy)
        queued = np.flatnonzero(status == JobStatus.QUEUED)
        running_real = [j for j in self.running if not jobs.dummy[j]]
        running_dummy = [j for j in self.running if jobs.dummy[j]]
        finished = np.flatnonzero(np.isin(status, [JobStatus.COMPLETED, JobStatus.REJECTED, JobStatus.PREEMPTED]))
        c = sim.cluster
        out = [
            Command.place(n, 0),
            Command.place(-5, 0),
            Command.migrate(n + 3, 0),
            Command.preempt(n),
            Command.dummy(J, 0),
            Command.reserve(-1, 0),
            Command.release(J, 0),
            Command.dummy(0, L),
            Command.admit(L),
            Command.admit(-1),
            Command.wake(sim.now),
            Command.wake(sim.now - 0.5),
            Command.wake(math.nan),
            Command(Cmd.REPLACE, job=n, server=0),
        ]
        if len(queued):
            j = int(queued[0])
            out += [Command.place(j, L), Command.place(j, -1), Command.migrate(j, 0), Command.preempt(j)]
            for s in range(L):
                if not view.fits_at(j, s):
                    out.append(Command.place(j, s))
                if c.count_dummy[s, jobs.type[j]] == 0:
                    out.append(Command.replace(j, s))
            if sim.queueing == "loss":
                out += [Command.place(j, s) for s in range(L)] + [Command.replace(j, s) for s in range(L)]
        if sim.queueing == "loss" and sim.pending >= 0:
            out += [Command.admit(s) for s in range(L) if not view.fits_at(sim.pending, s)]
        else:
            out += [Command.admit(0), Command.reject()]
        for j in running_real[:3]:
            s = int(jobs.server[j])
            out += [Command.migrate(j, s), Command.place(j, s), Command.reject(j), Command.replace(j, s)]
            out += [Command.migrate(j, d) for d in range(L) if d != s and not view.fits_at(j, d)]
            if sim.queueing == "local":
                out.append(Command.route(j, s))
        for d in running_dummy[:2]:
            out += [
                Command.preempt(d),
                Command.migrate(d, (int(jobs.server[d]) + 1) % L),
                Command.place(d, 0),
                Command.reject(d),
            ]
        for j in finished[:3]:
            j = int(j)
            out += [Command.place(j, 0), Command.preempt(j), Command.reject(j), Command.migrate(j, 0)]
        if sim.types.exact:
            for t in range(J):
                for s in np.flatnonzero(~view.fits_type(t)):
                    out += [Command.dummy(t, int(s)), Command.reserve(t, int(s))]
                for s in np.flatnonzero(c.slots[:, t] <= c.slots_filled[:, t]):
                    out.append(Command.release(t, int(s)))
        else:
            out += [Command.dummy(0, 0), Command.reserve(0, 0)]
        if sim.queueing != "local" and len(real_ids):
            out.append(Command.route(int(real_ids[-1]), 0))
        elif sim.queueing == "local":
            routed = [j for q in sim.local_queue.values() for j in q][:2]
            out += [Command.route(j, 0) for j in routed]
            for j in list(sim.queue)[:2]:  # unrouted: a server that can never hold the job
                for s in range(L):
                    if not np.all(jobs.demand[j] <= c._limit[s]):
                        out.append(Command.route(j, s))
        return out

    def issue_invalid(self) -> None:
        sim = self.sim
        cands = self.invalid_candidates()
        cmd = cands[int(self.rng.integers(len(cands)))]
        before = snapshot(sim)
        assert sim.check(cmd) is not None, f"{cmd} should be invalid"
        with pytest.raises(InvalidCommandError) as info:
            sim.apply(cmd)
        assert cmd.kind.name in str(info.value)
        after = snapshot(sim)
        for key in before:
            assert same(before[key], after[key]), f"invalid {cmd} changed {key}"
        self.invalid[cmd.kind.name] += 1


# ============================================================================ tests


@settings(max_examples=80, **SETTINGS)
@given(inst=instances(), policy_seed=st.integers(0, 2**32 - 1), sim_seed=st.integers(0, 2**16))
def test_random_commands_keep_invariants(inst: Instance, policy_seed: int, sim_seed: int) -> None:
    """Any mix of valid and invalid commands, in any queueing mode, keeps every kernel invariant."""
    sim = build(inst)
    drv = Driver(sim, np.random.default_rng(policy_seed))
    drv.run(sim_seed)
    # the run did something and the counters agree with the job table
    s = sim.summary()
    assert s["completed"] == drv.real_completion_events
    assert s["arrivals"] == int((~sim.jobs.dummy[: sim.jobs.size]).sum())
    assert s["started"] >= s["completed"] + s["preempted"]
    assert s["dummies"] == int(sim.jobs.dummy[: sim.jobs.size].sum())
    assert s["sim_time"] == sim.now


@settings(max_examples=30, **SETTINGS)
@given(inst=instances(queueing="local"), policy_seed=st.integers(0, 2**32 - 1), sim_seed=st.integers(0, 2**16))
def test_local_queues_keep_invariants(inst: Instance, policy_seed: int, sim_seed: int) -> None:
    """Per-server queues: routing, placement only at the job's own server, rejection."""
    sim = build(inst)
    drv = Driver(sim, np.random.default_rng(policy_seed), p_invalid=0.3)
    drv.run(sim_seed)
    n = sim.jobs.size
    started = np.flatnonzero(~np.isnan(sim.jobs.start[:n]) & ~sim.jobs.dummy[:n])
    # every started job had been routed, and (without migrations) ran on the server it was routed to
    assert set(started.tolist()) <= set(drv.routed)
    if drv.applied["MIGRATE"] == 0:
        assert all(sim.jobs.server[j] == drv.routed[int(j)] for j in started)


@settings(max_examples=30, **SETTINGS)
@given(inst=instances(queueing="loss"), policy_seed=st.integers(0, 2**32 - 1), sim_seed=st.integers(0, 2**16))
def test_loss_mode_keeps_invariants(inst: Instance, policy_seed: int, sim_seed: int) -> None:
    """Loss mode: every arrival is admitted at once or rejected; nothing ever waits past its epoch."""
    sim = build(inst)
    drv = Driver(sim, np.random.default_rng(policy_seed))
    drv.run(sim_seed)
    n = sim.jobs.size
    real = ~sim.jobs.dummy[:n]
    started = ~np.isnan(sim.jobs.start[:n])
    # admitted jobs started exactly at their arrival; the others were rejected (or await the current epoch)
    np.testing.assert_array_equal(sim.jobs.start[:n][real & started], sim.jobs.arrival[:n][real & started])
    waiting = real & ~started & (sim.jobs.status[:n] != JobStatus.REJECTED)
    assert waiting.sum() <= 1
    assert sim.integrals.queue == 0.0  # nobody waits a positive time in a loss system


# ---------------------------------------------------------------------------- common random numbers


def _greedy(sim: Simulator, view: ClusterView) -> None:
    """FIFO first-fit over the whole central queue (a different, deterministic policy)."""
    for j in list(sim.queue):
        fits = view.fits(j)
        if fits.any():
            sim.apply(Command.place(j, int(np.argmax(fits))))


@settings(max_examples=30, **SETTINGS)
@given(inst=instances(queueing="central"), policy_seed=st.integers(0, 2**32 - 1), sim_seed=st.integers(0, 2**16))
def test_common_random_numbers(inst: Instance, policy_seed: int, sim_seed: int) -> None:
    """Two different policies on one seed see the same arrival stream, also when one places dummies
    (dummy lifetimes come from their own stream) and uses wake-ups, migrations and preemptions."""
    # policy A: random commands of every kind, dummies favoured (validating; at most MAX_EPOCHS epochs)
    sim_a = build(inst)
    drv = Driver(sim_a, np.random.default_rng(policy_seed), p_invalid=0.1, max_commands=5)
    drv.WEIGHTS = {**Driver.WEIGHTS, Cmd.DUMMY: 8}
    drv.run(sim_seed)
    # policy B: greedy FIFO first-fit, no dummies, to the end of the episode
    sim_b = build(inst, validate=False)
    view_b = ClusterView(sim_b)
    sim_b.reset(sim_seed)
    while True:
        _greedy(sim_b, view_b)
        if sim_b.advance() is None:
            break
    # policy C: never does anything
    sim_c = build(inst, validate=False)
    sim_c.reset(sim_seed)
    while sim_c.advance() is not None:
        pass
    assert sim_b.done and sim_c.done
    a, b, c = real_stream(sim_a), real_stream(sim_b), real_stream(sim_c)
    k = len(a[0])
    assert len(b[0]) >= k and (len(b[0]) == k or not sim_a.done)
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(y, z)  # B and C: the whole episode
        np.testing.assert_array_equal(x, y[:k])  # A: as far as it went
    assert sim_b.n_arrivals == sim_c.n_arrivals
    if inst.source_kind == "replay" and not inst.impossible_type and not sim_b.truncated:
        assert sim_b.n_arrivals == sim_b.source.num_jobs


@settings(max_examples=15, **SETTINGS)
@given(policy_seed=st.integers(0, 2**32 - 1), sim_seed=st.integers(0, 2**16))
def test_dummy_lifetimes_come_from_their_own_stream(policy_seed: int, sim_seed: int) -> None:
    """The k-th dummy of an episode gets the k-th draw of the dummy stream, whatever the real jobs
    did in between (both types share one service law, so the draw does not depend on the type)."""
    src = PoissonTypedSource([1.0, 2.0], [[1.0], [2.0]], Exponential(1.0), chunk_size=7)

    def lifetimes(place_real: bool) -> list[float]:
        sim = Simulator(np.full((3, 1), 4.0), src, horizon=20.0, validate=True)
        view = ClusterView(sim)
        sim.reset(sim_seed)
        rng = np.random.default_rng(policy_seed)
        out = []
        while True:
            if place_real:
                _greedy(sim, view)
            if rng.random() < 0.3:
                t = int(rng.integers(2))
                free = view.fits_type(t)
                if free.any():
                    sim.apply(Command.dummy(t, int(np.argmax(free))))
                    j = sim.jobs.size - 1
                    assert sim.jobs.dummy[j]
                    out.append(float(sim.jobs.work[j]))
            if sim.advance() is None:
                return out

    a, b = lifetimes(False), lifetimes(True)
    k = min(len(a), len(b))
    assert k > 0
    assert a[:k] == b[:k]
