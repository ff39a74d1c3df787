"""Semantics of the simulation kernel and the decision model on small hand-made instances.

Each test replays a tiny job table (``ReplaySource``) whose outcome can be
worked out by hand, drives a ``Simulator(validate=True)`` with explicit
commands, and checks the exact times, statuses, loads and time integrals.
The last tests use the EC2 preset for Little's law on a long stable run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.jobs import JobStatus
from clustergym.core.simulator import EpochConfig, ImpossibleJobError, Simulator
from clustergym.core.view import ClusterView
from clustergym.errors import InvalidCommandError
from clustergym.scenarios.registry import make_preset
from clustergym.workloads import (
    Deterministic,
    FixedDemand,
    Geometric,
    ReplaySource,
    SlottedSource,
)

# ============================================================================ helpers


def replay(rows, *, type_demand=None, **kw) -> ReplaySource:
    """``rows``: (time, demand, work) or (time, demand, work, type); demand a number or a list."""
    times = [r[0] for r in rows]
    demand = [np.atleast_1d(np.asarray(r[1], dtype=float)).tolist() for r in rows]
    work = [r[2] for r in rows]
    types = [r[3] for r in rows] if len(rows[0]) > 3 else None
    return ReplaySource(times, demand, work, type=types, type_demand=type_demand, **kw)


def make(cap, source, **kw) -> Simulator:
    kw.setdefault("validate", True)
    return Simulator(np.asarray(cap, dtype=float), source, **kw)


class FixedDummyWork:
    """Wraps a source so that every dummy job lives exactly ``work`` (deterministic tests)."""

    def __init__(self, source, work: float):
        self.source, self.work = source, float(work)
        self.num_resources = source.num_resources
        self.types = source.types

    def chunks(self, rng):
        return self.source.chunks(rng)

    def sample_work(self, job_type, rng):
        return self.work

    def arrival_rates(self):
        return self.source.arrival_rates()


def state(sim: Simulator) -> tuple:
    """A comparable fingerprint of the mutable state (for 'an invalid command changes nothing')."""
    n = sim.jobs.size
    return (
        sim.now,
        n,
        sim.jobs.status[:n].tobytes(),
        sim.jobs.server[:n].tobytes(),
        sim.cluster.load.tobytes(),
        sim.cluster.slots.tobytes(),
        sim.cluster.slots_filled.tobytes(),
        tuple(sim.queue),
        sim.pending,
        tuple(sorted(sim._heap)),
        repr(sim.summary()),
    )


def assert_invalid(sim: Simulator, cmd: Command, *words: str) -> None:
    before = state(sim)
    with pytest.raises(InvalidCommandError) as info:
        sim.apply(cmd)
    for w in words:
        assert w in str(info.value)
    assert state(sim) == before, f"invalid {cmd} changed the state"


def run_out(sim: Simulator, limit: int = 10_000) -> list:
    """Advance without commands until the episode ends; return the epochs seen."""
    seen = []
    for _ in range(limit):
        ev = sim.advance()
        if ev is None:
            return seen
        seen.append(ev)
    raise AssertionError("the episode did not end")


# ============================================================================ event order


def test_completion_frees_capacity_for_an_arrival_at_the_same_time():
    """A job finishing at t=5 frees its server for a job arriving at t=5 (completions before
    arrivals), and a periodic tick at t=5 comes after both."""
    src = replay([(0.0, 1.0, 5.0), (5.0, 1.0, 1.0)])
    sim = make(
        [[1.0]],
        src,
        epochs=EpochConfig(arrivals=True, completions=False, tick_period=5.0, tick_offset=5.0),
        horizon=20.0,
    )
    view = ClusterView(sim)
    sim.reset(0)
    ev = sim.advance()
    assert (ev.kind, ev.time, ev.job) == (EventKind.ARRIVAL, 0.0, 0)
    sim.apply(Command.place(0, 0))
    ev = sim.advance()
    assert (ev.kind, ev.time, ev.job) == (EventKind.ARRIVAL, 5.0, 1)
    assert view.status(0) == JobStatus.COMPLETED and sim.cluster.load[0, 0] == 0.0
    assert view.fits_at(1, 0)
    sim.apply(Command.place(1, 0))
    ev = sim.advance()
    assert (ev.kind, ev.time) == (EventKind.TICK, 5.0)
    assert view.status(1) == JobStatus.RUNNING and sim.jobs.end[1] == 6.0


def test_event_order_at_equal_times():
    """At one instant: completion < arrival < tick < wake-up < horizon."""
    src = replay([(0.0, 1.0, 2.0), (2.0, 1.0, 1.0)])
    sim = make([[2.0]], src, epochs=EpochConfig(tick_period=2.0, tick_offset=2.0), horizon=2.0)
    sim.reset(0)
    sim.apply(Command.wake(2.0))
    ev = sim.advance()
    assert (ev.kind, ev.time) == (EventKind.ARRIVAL, 0.0)
    sim.apply(Command.place(0, 0))
    order = [(e.kind, e.time, e.job) for e in run_out(sim)]
    assert order == [
        (EventKind.COMPLETION, 2.0, 0),
        (EventKind.ARRIVAL, 2.0, 1),
        (EventKind.TICK, 2.0, -1),
        (EventKind.WAKEUP, 2.0, -1),
    ]
    assert sim.truncated and not sim.terminated and sim.now == 2.0


def test_ties_within_a_kind_keep_insertion_order():
    """Tied arrivals come in table order (stable sort); tied completions in start order."""
    # table rows (unsorted): row0 t=3, row1 t=1, row2 t=3, row3 t=1 -> ids 0:row1, 1:row3, 2:row0, 3:row2
    src = replay([(3.0, 0.1, 1.0), (1.0, 0.2, 1.0), (3.0, 0.3, 1.0), (1.0, 0.4, 1.0)])
    assert src.reordered
    sim = make([[10.0]], src, horizon=50.0)
    sim.reset(0)
    arrivals = []
    while len(arrivals) < 4:
        ev = sim.advance()
        if ev.kind == EventKind.COMPLETION:
            continue
        assert ev.kind == EventKind.ARRIVAL
        arrivals.append((ev.time, ev.job, float(sim.jobs.demand[ev.job, 0])))
        if ev.job == 1:  # place job 1 before job 0: both end at t=2
            sim.apply(Command.place(1, 0))
            sim.apply(Command.place(0, 0))
    assert arrivals == [(1.0, 0, 0.2), (1.0, 1, 0.4), (3.0, 2, 0.1), (3.0, 3, 0.3)]
    # jobs 2 and 3 arrived at t=3 after the completions at t=2: replay the completions separately
    sim2 = make([[10.0]], src, horizon=50.0)
    sim2.reset(0)
    ev = sim2.advance()
    ev = sim2.advance()
    assert ev.job == 1 and ev.time == 1.0
    sim2.apply(Command.place(1, 0))
    sim2.apply(Command.place(0, 0))
    done = [(e.time, e.job) for e in (sim2.advance(), sim2.advance())]
    assert done == [(2.0, 1), (2.0, 0)]


def test_wake_produces_an_epoch_at_exactly_that_time():
    src = replay([(100.0, 1.0, 1.0)])
    sim = make([[1.0]], src, horizon=10.0)
    sim.reset(0)
    sim.apply(Command.wake(2.5))
    sim.apply(Command.wake(1.0 / 3.0))
    ev = sim.advance()
    assert (ev.kind, ev.time) == (EventKind.WAKEUP, 1.0 / 3.0) and sim.now == 1.0 / 3.0
    assert_invalid(sim, Command.wake(1.0 / 3.0), "WAKE", "not after now")
    assert_invalid(sim, Command.wake(0.1), "WAKE")
    ev = sim.advance()
    assert (ev.kind, ev.time) == (EventKind.WAKEUP, 2.5)
    assert sim.advance() is None and sim.truncated and sim.now == 10.0


# ============================================================================ slotted time


def test_slotted_time_follows_the_canonical_timeline():
    """Slotted time (docs/papers/bfjs.md#timeline): at each slot t, departures, then arrivals, then the agent's tick.
    A job placed at slot t with S slots of service occupies slots t..t+S-1 and is gone at t+S."""
    src = SlottedSource(1.5, FixedDemand([0.5]), Deterministic(1.0))
    epochs = EpochConfig(tick_period=1.0, arrivals=False, completions=False, dummy_completions=False)
    sim = make([[1.0]], src, epochs=epochs, horizon=60.0)
    view = ClusterView(sim)
    sim.reset(3)
    k, seen_size, q_after = 0, 0, []
    while True:
        ev = sim.advance()
        if ev is None:
            break
        assert (ev.kind, ev.time) == (EventKind.TICK, float(k))
        t = ev.time
        # departures happened: every job placed at t-1 (S = 1) is gone, the server is empty
        assert sim.cluster.load[0, 0] == 0.0 and not sim.running[0]
        # arrivals of slot t are already queued, later ones are not
        n = sim.jobs.size
        assert np.all(sim.jobs.arrival[seen_size:n] == t) if n > seen_size else True
        assert np.all(sim.jobs.arrival[:n] <= t)
        seen_size = n
        placed = 0
        for j in list(sim.queue):
            if view.fits_at(j, 0):
                sim.apply(Command.place(j, 0))
                assert sim.jobs.end[j] == t + 1.0
                placed += 1
        assert placed == min(2, placed + sim.n_queued)  # two jobs of 0.5 fill the unit server
        q_after.append(sim.n_queued)
        k += 1
    assert k == 61 and sim.truncated  # ticks at t = 0, 1, ..., 60 (a tick at the horizon comes first)
    assert sim.n_arrivals > 60  # the queue was exercised
    # ∫Q dt over [0, 60] is the sum of the post-scheduling queue lengths Q(t+1) (the BF-J/S paper's eq. 3), t = 0..59
    assert sim.integrals.queue == pytest.approx(sum(q_after[:-1]), rel=1e-12)


def test_slotted_geometric_departures_precede_the_tick():
    """With geometric service: at every tick t no running job has end <= t, and every job
    with end <= t has completed (its capacity is free before the agent decides)."""
    src = SlottedSource(0.6, FixedDemand([0.3]), Geometric(0.3))
    epochs = EpochConfig(tick_period=1.0, arrivals=False, completions=False, dummy_completions=False)
    sim = make([[1.0], [1.0]], src, epochs=epochs, horizon=80.0)
    view = ClusterView(sim)
    sim.reset(11)
    ticks = 0
    while (ev := sim.advance()) is not None:
        ticks += 1
        t = ev.time
        n = sim.jobs.size
        started = ~np.isnan(sim.jobs.start[:n])
        ended = started & (sim.jobs.end[:n] <= t)
        assert np.all(sim.jobs.status[:n][ended] == JobStatus.COMPLETED)
        assert np.all(sim.jobs.status[:n][started & ~ended] == JobStatus.RUNNING)
        assert np.all(np.mod(sim.jobs.end[:n][started], 1.0) == 0.0)
        for j in list(sim.queue):
            fits = view.fits(j)
            if fits.any():
                sim.apply(Command.place(j, int(np.argmax(fits))))
    assert ticks == 81 and sim.n_completed > 10


# ============================================================================ placeholders


def test_reservation_slot_lifecycle():
    """A slot is filled by a later job of its type (adding no load), is empty again at the
    job's departure, and RELEASE drops only empty slots."""
    td = [[2.0], [5.0]]
    src = replay([(1.0, 2.0, 1.0, 0), (1.5, 5.0, 1.0, 1), (3.0, 2.0, 1.0, 0)], type_demand=td)
    sim = make([[10.0]], src, horizon=5.0)
    c = sim.cluster
    sim.reset(0)
    assert_invalid(sim, Command.release(0, 0), "RELEASE", "no empty type-0 slot")
    sim.apply(Command.reserve(0, 0))
    assert c.load[0, 0] == 2.0 and c.slots[0, 0] == 1 and c.slots_filled[0, 0] == 0
    assert_invalid(sim, Command.release(1, 0), "no empty type-1 slot")

    ev = sim.advance()
    assert (ev.kind, ev.time, ev.job) == (EventKind.ARRIVAL, 1.0, 0)
    sim.apply(Command.place(0, 0))
    assert sim.jobs.in_slot[0] and c.slots_filled[0, 0] == 1
    assert c.load[0, 0] == 2.0  # the job fills the slot: no extra load
    assert_invalid(sim, Command.release(0, 0), "no empty type-0 slot")  # the slot is filled

    ev = sim.advance()
    assert (ev.kind, ev.job) == (EventKind.ARRIVAL, 1)
    sim.apply(Command.place(1, 0))  # type 1 does not use a type-0 slot
    assert not sim.jobs.in_slot[1] and c.load[0, 0] == 7.0

    ev = sim.advance()
    assert (ev.kind, ev.time, ev.job) == (EventKind.COMPLETION, 2.0, 0)
    assert c.slots[0, 0] == 1 and c.slots_filled[0, 0] == 0 and c.load[0, 0] == 7.0  # slot empty, still reserved
    ev = sim.advance()
    assert (ev.kind, ev.time, ev.job) == (EventKind.COMPLETION, 2.5, 1)
    assert c.load[0, 0] == 2.0

    ev = sim.advance()
    assert (ev.kind, ev.job) == (EventKind.ARRIVAL, 2)
    sim.apply(Command.place(2, 0))
    assert sim.jobs.in_slot[2] and c.load[0, 0] == 2.0
    ev = sim.advance()
    assert (ev.kind, ev.time, ev.job) == (EventKind.COMPLETION, 4.0, 2)
    sim.apply(Command.release(0, 0))
    assert c.slots[0, 0] == 0 and c.load[0, 0] == 0.0
    assert sim.advance() is None and sim.now == 5.0
    s = sim.summary()
    # empty slot held over [0,1) and [2,3): 2 * 2 = 4 unit-time; real usage 2 + 5 + 2 = 9
    assert s["reserved_utilization"] == pytest.approx([4.0 / 50.0], abs=1e-12)
    assert s["utilization"] == pytest.approx([9.0 / 50.0], abs=1e-12)


def test_migrating_out_of_a_slot_leaves_it_empty():
    src = replay([(0.0, [1.0, 1.0], 4.0, 0)], type_demand=[[1.0, 1.0]])
    sim = make([[4.0, 4.0], [4.0, 4.0]], src, horizon=10.0)
    c = sim.cluster
    sim.reset(0)
    sim.apply(Command.reserve(0, 0))
    sim.advance()
    sim.apply(Command.place(0, 0))
    assert sim.jobs.in_slot[0]
    sim.apply(Command.migrate(0, 1))
    assert not sim.jobs.in_slot[0] and c.slots_filled[0, 0] == 0 and c.slots[0, 0] == 1
    np.testing.assert_array_equal(c.load, [[1.0, 1.0], [1.0, 1.0]])  # the slot stays; the job moved


def test_migrate_keeps_the_end_time_and_moves_the_load():
    src = replay([(0.0, [1.0, 2.0], 3.0)])
    sim = make([[4.0, 4.0], [4.0, 4.0]], src, speed=np.array([[1.0], [4.0]]), horizon=10.0)
    c = sim.cluster
    sim.reset(0)
    sim.advance()
    sim.apply(Command.place(0, 0))
    assert sim.jobs.end[0] == 3.0
    assert_invalid(sim, Command.migrate(0, 0), "MIGRATE", "already runs on server 0")
    sim.apply(Command.wake(1.0))
    ev = sim.advance()
    assert (ev.kind, ev.time) == (EventKind.WAKEUP, 1.0)
    sim.apply(Command.migrate(0, 1))
    np.testing.assert_array_equal(c.load, [[0.0, 0.0], [1.0, 2.0]])
    assert sim.jobs.server[0] == 1 and sim.jobs.start[0] == 0.0 and sim.jobs.end[0] == 3.0  # remaining time kept
    assert sim.n_migrations == 1 and sim.summary()["migrations"] == 1
    ev = sim.advance()
    assert (ev.kind, ev.time, ev.job, ev.server) == (EventKind.COMPLETION, 3.0, 0, 1)
    np.testing.assert_array_equal(c.load, 0.0)


def test_preempt_ends_the_job_and_its_completion_event_is_ignored():
    src = replay([(0.0, 1.0, 10.0), (2.0, 1.0, 1.0)])
    sim = make([[1.0]], src, horizon=20.0)
    sim.reset(0)
    sim.advance()
    sim.apply(Command.place(0, 0))
    sim.apply(Command.wake(1.0))
    ev = sim.advance()
    assert ev.kind == EventKind.WAKEUP
    sim.apply(Command.preempt(0))
    assert sim.jobs.status[0] == JobStatus.PREEMPTED and sim.jobs.end[0] == 1.0
    assert sim.cluster.load[0, 0] == 0.0 and sim.n_running == 0 and sim.n_preempted == 1
    assert_invalid(sim, Command.preempt(0), "PREEMPT", "not running")
    ev = sim.advance()
    assert (ev.kind, ev.time, ev.job) == (EventKind.ARRIVAL, 2.0, 1)
    sim.apply(Command.place(1, 0))  # the capacity is free
    rest = run_out(sim)
    assert [(e.kind, e.time, e.job) for e in rest] == [(EventKind.COMPLETION, 3.0, 1)]  # nothing at t=10
    s = sim.summary()
    assert (s["completed"], s["preempted"], s["started"]) == (1, 1, 2)
    assert sim.jobs.status[0] == JobStatus.PREEMPTED
    assert sim.integrals.reward == pytest.approx(1.0 + 1.0, abs=1e-12)  # job 0 on [0,1), job 1 on [2,3)


def test_stale_completion_does_not_extend_a_drained_episode():
    """With horizon=inf the episode ends when the trace is exhausted and the system is empty.
    A preempted job's stale completion (t=10) must not move the clock: the system drained at t=3."""
    src = replay([(0.0, 1.0, 10.0), (2.0, 1.0, 1.0)])
    sim = make([[1.0]], src)
    sim.reset(0)
    sim.advance()
    sim.apply(Command.place(0, 0))
    sim.apply(Command.preempt(0))
    ev = sim.advance()
    assert (ev.kind, ev.job) == (EventKind.ARRIVAL, 1)
    sim.apply(Command.place(1, 0))
    run_out(sim)
    assert sim.terminated and not sim.truncated
    assert sim.now == 3.0, f"the episode ended at {sim.now}, not when the system drained (t=3)"


def test_replace_cancels_a_dummy_and_starts_the_real_job():
    base = replay([(1.0, 2.0, 1.5, 0), (2.0, 2.0, 1.0, 0)], type_demand=[[2.0]])
    src = FixedDummyWork(base, 5.0)
    sim = make([[4.0]], src, horizon=10.0)
    c = sim.cluster
    sim.reset(0)
    assert_invalid(sim, Command(Cmd.REPLACE, job=0, server=0), "REPLACE")  # job 0 does not exist yet
    sim.apply(Command.dummy(0, 0))
    d = sim.jobs.size - 1
    assert sim.jobs.dummy[d] and sim.jobs.end[d] == 5.0 and c.load[0, 0] == 2.0
    ev = sim.advance()
    assert (ev.kind, ev.time) == (EventKind.ARRIVAL, 1.0)
    job = ev.job
    sim.apply(Command.replace(job, 0))
    assert sim.jobs.status[d] == JobStatus.CANCELLED
    assert sim.jobs.status[job] == JobStatus.RUNNING and sim.jobs.server[job] == 0
    assert c.load[0, 0] == 2.0 and c.count_dummy[0, 0] == 0 and c.count_real[0, 0] == 1
    ev = sim.advance()
    assert (ev.kind, ev.time) == (EventKind.ARRIVAL, 2.0)
    assert_invalid(sim, Command.replace(ev.job, 0), "REPLACE", "no dummy of type 0")
    sim.apply(Command.dummy(0, 0))  # a second dummy, left to expire at 2 + 5 = 7
    d2 = sim.jobs.size - 1
    rest = [(e.kind, e.time, e.job) for e in run_out(sim)]
    # the real job ends at 2.5; the cancelled dummy's expiry at 5 is ignored; the second dummy expires at 7
    assert rest == [(EventKind.COMPLETION, 2.5, job), (EventKind.COMPLETION, 7.0, d2)]
    s = sim.summary()
    assert s["completed"] == 1 and s["dummies"] == 2 and s["arrivals"] == 2
    # dummy capacity: 2 units over [0,1) and [2,7): 12 unit-time over 10 * 4
    assert s["dummy_utilization"] == pytest.approx([12.0 / 40.0], abs=1e-12)


# ============================================================================ loss mode, queues


def test_loss_mode_wait_rejects_the_arriving_job():
    src = replay([(0.0, 0.6, 2.0), (1.0, 0.6, 1.0), (1.5, 0.3, 1.0)], reward_rate=[1.0, 5.0, 2.0])
    sim = make([[1.0]], src, queueing="loss", epochs=EpochConfig(arrivals=False, completions=False), horizon=4.0)
    sim.reset(0)
    assert_invalid(sim, Command.admit(0), "ADMIT", "no arriving job")
    ev = sim.advance()
    assert (ev.kind, ev.job) == (EventKind.ARRIVAL, 0) and sim.pending == 0  # arrivals are always epochs
    assert_invalid(sim, Command.place(0, 0), "loss mode")
    sim.apply(Command.admit(0))
    ev = sim.advance()
    assert (ev.kind, ev.job) == (EventKind.ARRIVAL, 1) and sim.pending == 1
    assert_invalid(sim, Command.admit(0), "does not fit")
    ev = sim.advance()  # WAIT: job 1 is rejected
    assert sim.jobs.status[1] == JobStatus.REJECTED and sim.n_rejected == 1
    assert (ev.kind, ev.job) == (EventKind.ARRIVAL, 2)
    sim.apply(Command.admit(0))
    assert sim.advance() is None
    s = sim.summary()
    assert (s["rejected"], s["started"], s["completed"]) == (1, 2, 2)
    assert sim.integrals.queue == 0.0
    assert sim.integrals.reward == pytest.approx(1.0 * 2.0 + 2.0 * 1.0, abs=1e-12)


def test_queue_cap_terminates_as_unstable():
    src = replay([(float(t), 5.0, 1.0) for t in range(5)])
    sim = make([[10.0]], src, queue_cap=2, horizon=100.0)
    sim.reset(0)
    run_out(sim)
    assert sim.terminated and not sim.truncated and sim.unstable
    assert sim.now == 2.0 and sim.n_queued == 3  # the third waiting job exceeds the cap
    s = sim.summary()
    assert s["hit_queue_cap"] and s["unstable"]


def test_reject_a_queued_job_in_the_central_queue():
    src = replay([(0.0, 1.0, 1.0), (0.0, 1.0, 1.0)])
    sim = make([[1.0]], src, horizon=5.0)
    sim.reset(0)
    sim.advance()
    sim.advance()
    sim.apply(Command.reject(0))
    assert sim.jobs.status[0] == JobStatus.REJECTED and tuple(sim.queue) == (1,)
    assert_invalid(sim, Command.reject(0), "REJECT", "not queued")
    assert_invalid(sim, Command.reject(), "REJECT", "no arriving job")


def test_local_queues_route_and_place_only_at_their_server():
    src = replay([(0.0, 1.0, 1.0), (0.5, 1.0, 1.0)])
    sim = make([[2.0], [2.0]], src, queueing="local", routing="agent", horizon=5.0)
    sim.reset(0)
    ev = sim.advance()
    assert ev.kind == EventKind.ARRIVAL and 0 in sim.queue
    assert_invalid(sim, Command.place(0, 0), "not been routed")
    sim.apply(Command.route(0, 1))
    assert sim.jobs.server[0] == 1 and tuple(sim.local_queue_of(1, 0)) == (0,) and sim.n_queued == 1
    assert_invalid(sim, Command.place(0, 0), "waits at server 1")
    assert_invalid(sim, Command.route(0, 0), "ROUTE", "not waiting to be routed")
    sim.apply(Command.place(0, 1))
    assert sim.jobs.status[0] == JobStatus.RUNNING and sim.local_count.sum() == 0


def test_jsq_routing_joins_the_shortest_local_queue():
    src = replay([(0.0, 1.0, 1.0), (0.1, 1.0, 1.0), (0.2, 1.0, 1.0), (0.3, 1.0, 1.0)])
    for routing in ("jsq", "power-of-two"):
        sim = make([[2.0], [2.0]], src, queueing="local", routing=routing, horizon=0.35)
        sim.reset(5)
        run_out(sim)  # nobody places anything
        np.testing.assert_array_equal(sim.local_count[:, 0], [2, 2])  # with L = 2 both rules alternate


def test_route_refuses_a_server_that_can_never_hold_the_job():
    """Untyped workload (types inexact): the nominal type demand (the mean, 0.425) fits the small
    server, but job 1 (0.55) does not.  ROUTE must refuse it, or the job waits there forever
    (automatic routing never sends it there: it checks the job's own demand)."""
    src = replay([(0.0, 0.3, 1.0), (1.0, 0.55, 1.0)])
    assert not src.types.exact
    sim = make([[1.0], [0.5]], src, queueing="local", routing="agent", horizon=5.0)
    sim.reset(0)
    sim.advance()
    ev = sim.advance()
    assert ev.job == 1
    assert_invalid(sim, Command.route(1, 1), "ROUTE", "can never fit")


# ============================================================================ impossible jobs


def test_impossible_job_is_rejected_and_counted():
    # job 0 fits each resource on some server but no single server holds both
    src = replay([(0.0, [1.5, 0.8], 1.0), (1.0, [0.5, 0.5], 1.0)])
    sim = make([[1.0, 1.0], [2.0, 0.5]], src, impossible="reject", horizon=5.0)
    sim.reset(0)
    ev = sim.advance()
    assert (ev.kind, ev.time, ev.job) == (EventKind.ARRIVAL, 1.0, 1)  # no epoch for the impossible job
    assert sim.jobs.status[0] == JobStatus.REJECTED
    s = sim.summary()
    assert (s["impossible_rejected"], s["rejected"], s["arrivals"]) == (1, 1, 2)


def test_impossible_job_raises_with_impossible_error():
    src = replay([(0.0, [0.5, 0.5], 1.0), (1.0, [1.5, 0.8], 1.0)])
    sim = make([[1.0, 1.0], [2.0, 0.5]], src, impossible="error", horizon=5.0)
    sim.reset(0)
    sim.advance()
    with pytest.raises(ImpossibleJobError) as info:
        sim.advance()
    msg = str(info.value)
    assert "job 1" in msg and "[1.5, 0.8]" in msg


# ============================================================================ episode end


def test_finite_replay_terminates_when_drained_and_truncates_at_a_finite_horizon():
    src = replay([(0.0, 1.0, 2.0), (1.0, 1.0, 1.0)])
    for horizon, end in ((math.inf, 2.0), (1.5, 1.5), (10.0, 10.0)):
        sim = make([[2.0]], src, horizon=horizon)
        sim.reset(0)
        while (ev := sim.advance()) is not None:
            if ev.kind == EventKind.ARRIVAL:
                sim.apply(Command.place(ev.job, 0))
        assert sim.now == end and sim.integrals.elapsed == end
        if math.isinf(horizon):
            assert sim.terminated and not sim.truncated and sim.n_completed == 2
        else:
            assert sim.truncated and not sim.terminated


def test_agent_clock_does_not_prevent_termination_of_a_drained_trace():
    """A finite trace with horizon=inf terminates once exhausted and drained,
    whatever the decision epochs.  With a periodic agent clock the kernel must still stop."""
    src = replay([(0.0, 1.0, 2.0), (1.0, 1.0, 1.0)])
    sim = make([[2.0]], src, epochs=EpochConfig(arrivals=False, completions=False, tick_period=1.0))
    sim.reset(0)
    for _ in range(1000):
        if sim.advance() is None:
            break
        for j in list(sim.queue):
            sim.apply(Command.place(j, 0))
    assert sim.done and sim.terminated and not sim.truncated, (
        f"still running at t={sim.now} with the trace drained ({sim.n_completed} of 2 jobs completed)"
    )
    assert sim.n_completed == 2 and sim.now <= 3.0


# ============================================================================ metrics


def test_exact_time_integrals_on_a_hand_made_replay():
    """Unit server, FIFO (head-of-line blocking) placement at every epoch:
    j0 t=0 d=1 w=2 (runs [0,2)); j1 t=1 d=1 w=1 (waits [1,2), runs [2,3));
    j2 t=1.5 d=0.5 w=3 (waits [1.5,3), runs [3,6)).  Ends (drained) at t=6."""
    src = replay(
        [(0.0, 1.0, 2.0), (1.0, 1.0, 1.0), (1.5, 0.5, 3.0)], weight=[1.0, 2.0, 3.0], reward_rate=[1.0, 10.0, 100.0]
    )
    sim = make([[1.0]], src)
    view = ClusterView(sim)
    sim.reset(0)
    while sim.advance() is not None:
        for j in list(sim.queue):
            if not view.fits_at(j, 0):
                break
            sim.apply(Command.place(j, 0))
    assert sim.terminated and sim.now == 6.0
    np.testing.assert_array_equal(sim.jobs.start[:3], [0.0, 2.0, 3.0])
    I = sim.integrals
    tol = {"rel": 0, "abs": 1e-12}
    # Q: 1 on [1,1.5), 2 on [1.5,2), 1 on [2,3) -> 0.5 + 1 + 1
    assert I.queue == pytest.approx(2.5, **tol)
    # N: 1 [0,1), 2 [1,1.5), 3 [1.5,2), 2 [2,3), 1 [3,6) -> 1 + 1 + 1.5 + 2 + 3
    assert I.system == pytest.approx(8.5, **tol)
    # weighted: 1*2 + 2*2 + 3*4.5 ; reward: 1*2 + 10*1 + 100*3 ; weighted queue: 2*1 + 3*1.5
    assert I.weighted_system == pytest.approx(19.5, **tol)
    assert I.reward == pytest.approx(312.0, **tol)
    assert I.weighted_queue == pytest.approx(6.5, **tol)
    s = sim.summary()
    assert s["sim_time"] == 6.0
    assert s["mean_queue_length"] == pytest.approx(2.5 / 6, **tol)
    assert s["mean_jobs_in_system"] == pytest.approx(8.5 / 6, **tol)
    assert s["mean_weighted_jobs_in_system"] == pytest.approx(19.5 / 6, **tol)
    assert s["reward_rate"] == pytest.approx(52.0, **tol)
    assert s["utilization"] == pytest.approx([4.5 / 6], **tol)  # 1*2 + 1*1 + 0.5*3
    assert s["mean_wait"] == pytest.approx(2.5 / 3, **tol)
    assert s["mean_weighted_completion"] == pytest.approx(19.5 / 3, **tol)
    assert s["mean_queue_length_by_type"] == pytest.approx([2.5 / 6], **tol)


def test_elapsed_equals_now_exactly():
    """``integrals.elapsed`` is ∫ 1 dt from 0, i.e. the current time: it must equal ``sim.now``
    (summary() reports ``sim_time = now`` but divides the integrals by ``elapsed``).  Summing
    the steps ``t_k - t_(k-1)`` in floating point drifts when a step more than doubles the time."""
    times = [1.059, 3.804, 4.312, 6.332, 6.539, 7.253]
    src = replay([(t, 0.1, 1.0) for t in times])
    sim = make([[1.0]], src, horizon=20.0)
    sim.reset(0)
    seen = []
    while sim.advance() is not None:
        seen.append((sim.now, sim.integrals.elapsed))
    assert [t for t, _ in seen] == times
    assert [e for _, e in seen] == times, f"elapsed drifted from now: {seen}"
    assert sim.integrals.elapsed == sim.now == 20.0


def test_speed_scales_durations():
    """A job of work 2 on a speed-4 server ends 0.5 after its start (dummies too)."""
    base = replay([(1.0, 1.0, 2.0), (1.0, 1.0, 2.0)], type_demand=[[1.0]])
    sim = make([[4.0], [4.0]], FixedDummyWork(base, 2.0), speed=np.array([[1.0], [4.0]]), horizon=10.0)
    sim.reset(0)
    sim.apply(Command.dummy(0, 1))
    assert sim.jobs.end[0] == 0.5
    ev = sim.advance()
    assert (ev.kind, ev.time, ev.job) == (EventKind.COMPLETION, 0.5, 0)
    sim.advance()
    ev = sim.advance()
    assert ev.time == 1.0
    sim.apply(Command.place(1, 0))
    sim.apply(Command.place(2, 1))
    assert sim.jobs.end[1] == 3.0 and sim.jobs.end[2] == 1.5
    done = [(e.time, e.job, e.server) for e in run_out(sim)]
    assert done == [(1.5, 2, 1), (3.0, 1, 0)]


# ============================================================================ Little's law


def _best_fit_fifo(sim: Simulator, view: ClusterView, window: int = 64) -> None:
    """Scan the first ``window`` queued jobs in FIFO order; start each that fits on the server
    that it leaves with the least normalised free capacity (best fit)."""
    cap = sim.cluster.capacity
    for j in list(sim.queue)[:window]:
        fits = view.fits(j)
        if not fits.any():
            continue
        left = ((cap - sim.cluster.load - sim.jobs.demand[j]) / cap).sum(axis=1)
        left[~fits] = np.inf
        sim.apply(Command.place(j, int(np.argmin(left))))


def test_littles_law_on_a_long_stable_run():
    """EC2 preset (5 servers, zeta 0.8), best-fit FIFO, horizon 3000:
    mean queue length = (arrivals / sim_time) * mean wait.

    Two versions.  (a) Sample-path identity with *censored* waits: every arrived job counts,
    a job still queued at the end waits until the end; then ∫Q dt = Σ waits exactly (1e-9).
    (b) The reported ``mean_wait`` (over *started* jobs only, no censoring) gives Little's
    law within 3% on this stable run."""
    sc = make_preset("ec2", zeta=0.8, num_servers=5, horizon=3000.0)
    sim = sc.make_simulator(EpochConfig(arrivals=True, completions=True))
    view = ClusterView(sim)
    sim.reset(2024)
    while sim.advance() is not None:
        _best_fit_fifo(sim, view)
    assert sim.truncated and not sim.unstable
    s = sim.summary()
    T, n = s["sim_time"], sim.jobs.size
    arr, start = sim.jobs.arrival[:n], sim.jobs.start[:n]
    assert s["arrivals"] == n > 10_000 and s["rejected"] == 0
    censored = np.where(np.isnan(start), T, start) - arr
    assert sim.integrals.queue == pytest.approx(censored.sum(), rel=1e-9)
    lam = s["arrivals"] / T
    assert s["mean_queue_length"] > 0.5  # a non-trivial queue (about 1 job on average)
    assert s["mean_queue_length"] == pytest.approx(lam * censored.mean(), rel=1e-9)
    assert s["mean_queue_length"] == pytest.approx(lam * s["mean_wait"], rel=0.03)


def test_fit_limit_is_the_kernels_and_absorbs_rounding():
    from clustergym.core.cluster import FIT_RTOL, Cluster, fit_limit

    cap = np.array([[1.0, 10.0], [0.3, 7.0]])
    c = Cluster(cap, np.array([[0.2, 2.0]]))
    assert np.array_equal(c._limit, fit_limit(cap)) and np.array_equal(fit_limit(cap), cap * (1.0 + FIT_RTOL) + 1e-12)
    assert np.array_equal(c._type_limit, fit_limit(c.type_demand))
    assert 0.1 + 0.2 > 0.3 and 0.1 + 0.2 <= fit_limit(0.3)  # jobs of 0.1 and 0.2 fill a server of 0.3
    assert not 1.0 + 1e-6 <= fit_limit(1.0)
