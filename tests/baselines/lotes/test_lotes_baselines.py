"""The LoTES paper's baselines (Sec. 5.1): Greedy and Tetris rules on small deterministic
scenarios, the equivalence of Greedy's two per-machine-queue realisations, and reduced-scale
seeded versions of the generated-data claims G1-G8 (docs/papers/lotes.md#test-labels; the full-scale ones run under
``clustergym reproduce``, see :mod:`clustergym.reproduce.lotes`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest

from clustergym.agent_api import make_agent, make_env_for
from clustergym.core.commands import Cmd
from clustergym.errors import ConfigError
from clustergym.scenarios import Scenario, make_preset
from clustergym.workloads import ArrivalChunk, TypeInfo


class _Jobs:
    """A fixed job list (time, demand, class, work) as an arrival source."""

    def __init__(self, jobs, profile, rates):
        self.jobs = sorted(jobs, key=lambda j: j[0])
        K = len(rates)
        self.types = TypeInfo(demand=np.asarray(profile, float), mean_work=np.ones(K),
                              names=tuple(f"c{k}" for k in range(K)), exact=False)
        self.num_resources = self.types.demand.shape[1]
        self._rates = np.asarray(rates, float)

    def chunks(self, rng) -> Iterator[ArrivalChunk]:
        t, d, k, w = zip(*self.jobs)
        yield ArrivalChunk.build(np.array(t, float), np.array(d, float), np.array(k), np.array(w, float))

    def sample_work(self, job_type, rng):
        return 1.0

    def arrival_rates(self):
        return self._rates


def _scenario(capacity, jobs, speed=None, profile=((0.5,),), rates=(1.0,), **kw):
    cap = np.asarray(capacity, float)
    return Scenario(name="unit", capacity=cap, source=_Jobs(jobs, profile, rates),
                    resources=tuple(f"r{l}" for l in range(cap.shape[1])), horizon=kw.pop("horizon", 1e6),
                    speed=None if speed is None else np.asarray(speed, float), **kw)


def _drive(sc, agent, until=None):
    env = make_env_for(sc, agent)
    env.reset(seed=0)
    agent.reset(env, seed=0)
    out = []
    while True:
        if until is not None and env.view.now > until:
            return out, env
        cmd, _ = agent.predict(None)
        if cmd.kind == Cmd.PLACE:
            out.append((cmd.job, cmd.server, env.view.now))
        _, _, term, trunc, _ = env.step(cmd)
        if term or trunc:
            return out, env


# ============================================================================ Greedy (Sec. 5.1)
def test_greedy_first_fit_then_shortest_queue_that_can_hold_the_job():
    # machines: 0 and 1 of capacity 1, machine 2 of capacity 0.5 (Table-1 order = index order)
    cap = [[1.0], [1.0], [0.5]]
    jobs = [(0.0, [0.6], 0, 100.0),   # j0 -> 0
            (1.0, [0.6], 0, 100.0),   # j1 -> 1
            (2.0, [0.4], 0, 100.0),   # j2 -> 0 (first fit: 0.6 + 0.4 <= 1)
            (3.0, [0.4], 0, 100.0),   # j3 -> 1
            (4.0, [0.4], 0, 100.0),   # j4 -> 2
            (5.0, [0.6], 0, 100.0),   # j5: no fit; machine 2 cannot hold 0.6 -> queue of 0 or 1 (random)
            (6.0, [0.6], 0, 100.0),   # j6: the other of 0, 1 (shortest queue)
            (7.0, [0.1], 0, 100.0)]   # j7 -> 2 (fits 0.4 + 0.1): the literal rule ignores queues
    agent = make_agent("lotes-greedy")
    placed, _ = _drive(_scenario(cap, jobs), agent, until=50)
    assert [(j, s) for j, s, _ in placed] == [(0, 0), (1, 1), (2, 0), (3, 1), (4, 2), (7, 2)]
    queues = {s: list(q) for s, q in enumerate(agent._mq) if q}
    assert sorted(queues) == [0, 1] and sorted(queues[0] + queues[1]) == [5, 6]
    # at t = 100 (machine 0) and 101 (machine 1) the first jobs leave: each machine starts its own
    # queued job (FCFS, only on its machine)
    placed, _env = _drive(_scenario(cap, jobs), make_agent("lotes-greedy"))
    late = {j: s for j, s, t in placed if t >= 100.0}
    assert late == {5: next(s for s, q in queues.items() if 5 in q), 6: next(s for s, q in queues.items() if 6 in q)}


def test_greedy_head_of_line_blocking_and_first_fit_scan():
    cap = [[1.0]]
    jobs = [(0.0, [0.5], 0, 10.0),    # j0 runs until 10
            (0.5, [0.3], 0, 100.0),   # j1 runs
            (1.0, [0.7], 0, 100.0),   # j2 queued (head)
            (2.0, [0.2], 0, 100.0)]   # j3 fits now (0.8 + 0.2)
    placed, _ = _drive(_scenario(cap, jobs), make_agent("lotes-greedy"), until=50)
    assert [j for j, _, _ in placed] == [0, 1, 3]          # j3 jumps the queue at arrival (literal rule)
    jobs[3] = (2.0, [0.25], 0, 100.0)                      # j3 no longer fits at arrival (1.05) -> queued
    placed, _env = _drive(_scenario(cap, jobs), make_agent("lotes-greedy"), until=50)
    # at t = 10 (j0 leaves, 0.7 free) the head j2 (0.7) starts; j3 (0.25) waits behind it (HOL)
    assert [(j, t) for j, _, t in placed] == [(0, 0.0), (1, 0.5), (2, 10.0)]
    jobs[2] = (1.0, [0.8], 0, 100.0)                       # now the head cannot start at t = 10
    placed, _ = _drive(_scenario(cap, jobs), make_agent("lotes-greedy"), until=50)
    assert [j for j, _, _ in placed] == [0, 1]             # strict FCFS: j3 blocked behind j2
    placed, _ = _drive(_scenario(cap, jobs), make_agent("lotes-greedy", queue_scan="first-fit"), until=50)
    assert [(j, t) for j, _, t in placed] == [(0, 0.0), (1, 0.5), (3, 10.0)]


def test_greedy_respect_queues():
    cap = [[1.0], [1.0]]
    jobs = [(0.0, [0.9], 0, 100.0), (1.0, [0.9], 0, 100.0),   # fill both
            (2.0, [0.5], 0, 100.0),                             # queued at 0 or 1
            (3.0, [0.05], 0, 100.0)]                            # fits 0 and 1
    placed, _ = _drive(_scenario(cap, jobs), make_agent("lotes-greedy"), until=50)
    assert (3, 0) in [(j, s) for j, s, _ in placed]
    agent = make_agent("lotes-greedy", respect_queues=True)
    placed, _ = _drive(_scenario(cap, jobs), agent, until=50)
    qm = next(s for s, q in enumerate(agent._mq) if q)
    assert (3, 1 - qm) in [(j, s) for j, s, _ in placed]       # skips the machine with a queue
    with pytest.raises(ConfigError, match="agent.queue_scan"):
        make_agent("lotes-greedy", queue_scan="best")


def test_greedy_local_queues_match_agent_bookkeeping():
    """The two per-machine-queue realisations make the same schedule on the same seed."""
    sc = make_preset("lotes-phi", phi=0.012, instance=1, machines_per_config=2, load=1.1, horizon=3.0)
    local = dataclasses.replace(sc, queueing="local", routing="agent")
    runs = []
    for s in (sc, local):
        agent = make_agent("lotes-greedy")
        env = make_env_for(s, agent)
        env.reset(seed=3)
        agent.reset(env, seed=3)
        while True:
            cmd, _ = agent.predict(None)
            _, _, term, trunc, _ = env.step(cmd)
            if term or trunc:
                break
        jobs = env.sim.jobs
        n = jobs.size
        runs.append((jobs.start[:n].copy(), jobs.server[:n].copy(), env.metrics()))
    (s0, m0, r0), (s1, m1, r1) = runs
    assert r0["arrivals"] > 500 and r0["queued_at_end"] + r0["started"] == r0["arrivals"]
    assert np.array_equal(np.isnan(s0), np.isnan(s1))
    ok = ~np.isnan(s0)
    assert np.array_equal(s0[ok], s1[ok]) and np.array_equal(m0[ok], m1[ok])
    assert r0["mean_queue_length"] == pytest.approx(r1["mean_queue_length"]) and r0["mean_queue_length"] > 0
    with pytest.raises(ConfigError, match="routing='agent'"):
        agent = make_agent("lotes-greedy")
        env = make_env_for(dataclasses.replace(sc, queueing="local", routing="jsq"), agent)
        env.reset(seed=0)
        agent.reset(env, seed=0)


# ============================================================================ Tetris (Sec. 5.1)
def test_tetris_arrival_score_uses_free_capacity_and_machine_processing_time():
    # two resources; machine 0 has (1, 1) free, machine 1 (1, 0.4); machine 1 is 4x faster
    cap = [[1.0, 1.0], [1.0, 0.4]]
    speed = [[1.0], [4.0]]
    # j0: d = (0.2, 0.2), work 1: S0 = 0.4 - 1 * 0.4 = 0; S1 = 0.28 - 0.25 * 0.4 = 0.18 -> machine 1
    # j1: d = (0.1, 0.1), work 0.1: S0 = 0.2 - 0.02 = 0.18; S1 = (0.8, 0.2).(0.1, 0.1) - 0.005 = 0.095 -> 0
    jobs = [(0.0, [0.2, 0.2], 0, 1.0), (1.0, [0.1, 0.1], 0, 0.1)]
    placed, _ = _drive(_scenario(cap, jobs, speed=speed, profile=((0.1, 0.1),)), make_agent("tetris"))
    assert [(j, s) for j, s, _ in placed] == [(0, 1), (1, 0)]
    # equal weights matter: with w_work = 0 the arrival rule is the packing score alone (j0 -> machine 0)
    placed, _ = _drive(_scenario(cap, jobs, speed=speed, profile=((0.1, 0.1),)), make_agent("tetris", w_work=0.0))
    assert placed[0][:2] == (0, 0)


def test_tetris_completion_takes_best_scoring_fitting_job_not_fcfs():
    cap = [[1.0, 1.0]]
    jobs = [(0.0, [0.9, 0.9], 0, 10.0),    # runs until 10
            (1.0, [0.5, 0.5], 0, 2.0),     # queued: S = (0.5+0.5)*1 - 2*1.0 = -1.0 at t=10
            (2.0, [0.3, 0.3], 0, 0.5),     # queued: S = 0.6 - 0.5*0.6 = 0.3   <- best
            (3.0, [1.0, 1.0], 0, 0.1),     # queued: S = 2 - 0.2 = 1.8 but does not fit after j2
            (4.0, [0.2, 0.2], 0, 5.0)]     # queued: S = 0.4 - 2 = -1.6
    placed, _ = _drive(_scenario(cap, jobs, profile=((0.5, 0.5),)), make_agent("tetris"), until=10.05)
    # at t = 10 the machine is empty: j3 scores best (1.8) and fits; nothing else fits beside it
    assert [(j, t) for j, _, t in placed] == [(0, 0.0), (3, 10.0)]
    # at t = 10.1 j3 leaves: among j1, j2, j4: j2 (0.3) then j1 (S with free (0.7, 0.7): 0.7 - 2 = -1.3)
    # then j4 (free (0.2, 0.2): 0.08 - 2 = -1.92), FCFS would take j1 first
    placed, _ = _drive(_scenario(cap, jobs, profile=((0.5, 0.5),)), make_agent("tetris"), until=11)
    assert [j for j, _, t in placed if t == pytest.approx(10.1)] == [2, 1, 4]


def test_tetris_declares_its_oracle():
    assert make_agent("tetris").requirements.uses_oracle
    assert make_agent("lotes").requirements.uses_oracle
    assert not make_agent("lotes-greedy").requirements.uses_oracle


# ============================================================================ reduced-scale G claims
# 10 machines per configuration (paper: 1000), 4 hours (paper: 100), one instance and one seed; the
# full-length versions are the ``lotes-*`` claims of ``clustergym reproduce``.
SMALL = {"machines_per_config": 10, "horizon": 4.0, "instance": 0}


@pytest.fixture(scope="module")
def phi_runs():
    from clustergym.reproduce.lotes import run_case

    sc = make_preset("lotes-phi", phi=0.015, load=0.97, **SMALL)
    return {a: run_case(sc, a) for a in ("lotes", "tetris", "lotes-greedy")}


def test_reduced_greedy_unstable_at_097(phi_runs):
    """G1: at 0.97 lambda* with Phi > 0, Greedy's queue grows (docs/papers/lotes.md#instability) while LoTES's and Tetris's do not."""
    g, lo, te = phi_runs["lotes-greedy"], phi_runs["lotes"], phi_runs["tetris"]
    assert g["arrivals"] == lo["arrivals"] == te["arrivals"] > 10_000   # common random numbers
    assert g["unstable"] and not lo["unstable"] and not te["unstable"]
    assert g["mean_queue"] > 5 * max(lo["mean_queue"], te["mean_queue"])
    assert g["queued_at_end"] > 10 * max(1, lo["queued_at_end"], te["queued_at_end"])


@pytest.mark.xfail(strict=True, reason="G4 does not reproduce here: at 0.97 lambda* Tetris's mean wait is below "
                                       "LoTES's (see the lotes-phi-ordering claim)")
def test_reduced_lotes_beats_tetris_as_phi_grows(phi_runs):
    """G4: at Phi = 0.015 (the largest of Fig. 11), LoTES waits less than Tetris."""
    assert phi_runs["lotes"]["mean_wait"] < phi_runs["tetris"]["mean_wait"]


@pytest.mark.xfail(strict=True, reason="G7 does not reproduce here: Tetris stays stable (and starts almost every "
                                       "job at once) at 0.95 lambda* with Omega = 0.3 (see lotes-omega-tetris)")
def test_reduced_tetris_unstable_above_omega_01():
    """G7: at 0.95 lambda*, Tetris is unstable for Omega > 0.1."""
    from clustergym.reproduce.lotes import run_case

    te = run_case(make_preset("lotes-omega", omega=0.3, load=0.95, **SMALL), "tetris")
    assert te["unstable"]


# ------------------------------------------------------------------ the agent-side queue mirror
def test_queue_mirror_pop_returns_the_chosen_job_across_a_compaction():
    from clustergym.baselines.lotes.lotes import QueueMirror

    q = QueueMirror(1)
    for j in range(400):
        q.push(1000 + j, np.array([j % 7 / 10.0]))
    taken = [q.pop_at(int(q.fitting(np.zeros(1), np.full(1, 1.0))[-1])) for _ in range(250)]
    # the newest fitting job each time: 1399, 1398, ... even after the mirror compacted (n > 256, live < n/2)
    assert taken == list(range(1399, 1149, -1))
    assert q.live == 150 and q.n < 400   # compacted once, at live = 199
    assert q.pop_at(q.first_fit(np.zeros(1), np.full(1, 0.25))) == 1000
    assert q.pop_at(q.first_fit(np.zeros(1), np.full(1, 0.25))) == 1001
    assert int(q.ids[q.first_fit(np.full(1, 0.6), np.full(1, 0.75))]) == 1007   # 1002..1006 need 0.2..0.6 > 0.15


def test_tetris_drains_a_long_queue_with_the_kernel_validating_every_command():
    """A burst of 700 jobs on two small machines: the mirror grows past 256, compacts while
    draining, and every PLACE names a queued job that fits (regression: it returned a moved id)."""
    from clustergym.workloads import ReplaySource

    rng = np.random.default_rng(5)
    n = 700
    src = ReplaySource(np.sort(rng.uniform(0, 10, n)), rng.uniform(0.05, 0.5, (n, 2)), rng.exponential(3600.0, n))
    sc = Scenario(name="burst", capacity=np.ones((2, 2)), source=src, resources=("cpu", "mem"),
                  horizon=float("inf"))
    from clustergym.runner import run_episode

    r = run_episode(sc, make_agent("tetris"), seed=0, validate=True)
    assert r["completed"] == n and r["queued_at_end"] == 0
