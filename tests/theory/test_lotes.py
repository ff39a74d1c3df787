"""LoTES (Tran et al. 2018, Sec. 4): the offline stages against hand-solved instances, the bin enumeration
against brute force, and the Stage-3 dispatcher's rules on small deterministic scenarios."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustergym.agent_api import make_agent, make_env_for
from clustergym.core.commands import Cmd
from clustergym.core.jobs import JobStatus
from clustergym.errors import ConfigError, ScenarioError
from clustergym.scenarios import Scenario, make_preset
from clustergym.scenarios.presets.lotes import TABLE1, TABLE2
from clustergym.theory.lotes import (
    LotesInputs,
    algorithm1_bins,
    allocation_lp,
    assignment_lp,
    lotes_inputs,
    nondominated_bins,
    nondominated_filter,
    plan_for,
    round_assignment,
    solve_lotes,
)
from clustergym.workloads import ArrivalChunk, TypeInfo


# =========================================================================== Stage 1 / Stage 2 LPs
def test_fluid_example_stage1_vs_stage2():
    """Sec. 4.1's fluid example (O1): 2 machines of capacity 5, jobs of size 3, rate 1: 10/3 (fluid) vs 2 (bins)."""
    s1 = allocation_lp([2], [[5.0]], [1.0], [[3.0]], [[1.0]])
    assert s1.lam == pytest.approx(10 / 3, rel=1e-9)
    bins = nondominated_bins([5.0], [0], np.array([[3.0]]))
    assert bins.tolist() == [[1]]
    s2 = assignment_lp([2], [1.0], [[1.0]], [bins])
    assert s2.lam == pytest.approx(2.0, rel=1e-9)


def test_fragmentation_example_80_vs_60():
    """The fragmentation example of Sec. 2 (O1): 30 machines x 8 cores, 3-core jobs: 80 concurrent (fluid) vs 60 (2 per machine)."""
    assert allocation_lp([30], [[8.0]], [1.0], [[3.0]], [[1.0]]).lam == pytest.approx(80.0)
    bins = nondominated_bins([8.0], [0], np.array([[3.0]]))
    assert assignment_lp([30], [1.0], [[1.0]], [bins]).lam == pytest.approx(60.0)


def test_stage1_hand_solved_pairing():
    """Two 1-machine configurations, cpu-rich (4, 1) and memory-rich (1, 4); a cpu-heavy class (1, 1/4)
    and a memory-heavy one (1/4, 1), alpha = 1/2: every resource is used at lambda = 8 only with the
    pairing class 1 -> config 1, class 2 -> config 2 (the vertex is unique)."""
    s1 = allocation_lp([1, 1], [[4.0, 1.0], [1.0, 4.0]], [0.5, 0.5], [[1.0, 0.25], [0.25, 1.0]], [[1.0, 1.0]] * 2)
    assert s1.lam == pytest.approx(8.0)
    assert s1.y == pytest.approx(np.array([[4.0, 0.0], [0.0, 4.0]]), abs=1e-9)
    assert s1.support.tolist() == [[True, False], [False, True]]
    # delta_jkl = r_kl y_jk / (n_j c_jl): class 1 takes all of config 1
    assert s1.delta[0, 0] == pytest.approx([1.0, 1.0])


def test_stage2_hand_solved_mix_and_rounding():
    """One configuration of 10 unit machines, sizes 0.4 and 0.3, alpha = 1/2, mu = 1.

    Non-dominated bins (N1, N2): (2,0), (1,2), (0,3).  Stage 1: lambda = 10 / 0.35.  Stage 2:
    maximise t = lambda/2 with 2a + b >= t, 2b + 3c >= t, a + b + c = 10: the vertices give
    (a, b) = (10/3, 20/3) -> lambda = 80/3 (best), (a, c) = (6, 4) -> 24, b alone -> 20.
    Rounding (q = 1, largest fraction 2/3 goes up): (3, 7, 0), lambda_round = min(13, 14) / 0.5 = 26.
    """
    r = np.array([[0.4], [0.3]])
    bins = nondominated_bins([1.0], [0, 1], r)
    assert sorted(map(tuple, bins.tolist())) == [(0, 3), (1, 2), (2, 0)]
    inp = LotesInputs(np.array([[1.0]]), np.array([10.0]), np.zeros(10, dtype=np.int64), np.array([0.5, 0.5]), r,
                      np.ones((1, 2)))
    plan = solve_lotes(inp)
    assert plan.lam1 == pytest.approx(10 / 0.35)
    assert plan.lam2 == pytest.approx(80 / 3)
    x = dict(zip(map(tuple, plan.bins[0].tolist()), plan.stage2.x[0]))
    assert x[(2, 0)] == pytest.approx(10 / 3) and x[(1, 2)] == pytest.approx(20 / 3) and x[(0, 3)] == pytest.approx(0)
    xi = dict(zip(map(tuple, plan.bins[0].tolist()), plan.x_int[0]))
    assert xi == {(2, 0): 3, (1, 2): 7, (0, 3): 0}
    assert plan.lam_round == pytest.approx(26.0)
    assert plan.Delta.tolist() == [[13, 14]]
    # machines emulate bins consecutively, bin by bin (docs/papers/lotes.md#rounding): 3 x (2,0) then 7 x (1,2)
    assert plan.machine_bin.tolist() == [[2, 0]] * 3 + [[1, 2]] * 7


def test_round_assignment_rule():
    assert round_assignment(np.array([10 / 3, 20 / 3, 0.0]), 10).tolist() == [3, 7, 0]
    assert round_assignment(np.array([1.5, 1.5, 1.0]), 4).tolist() == [2, 1, 1]  # ties by bin index
    assert round_assignment(np.array([0.2, 0.3, 0.5]), 1).tolist() == [0, 0, 1]
    assert round_assignment(np.array([4.0, 3.0]), 7).tolist() == [4, 3]


def test_column_generation_matches_full_lp():
    """The Stage-2 column generation reaches the full LP's optimum (Tables 1-2 and a 9-class instance)."""
    from clustergym.scenarios.presets.lotes import generated_instance

    cases = [(TABLE1[:, 1:], TABLE1[:, 0], TABLE2[:, 3], TABLE2[:, 1:3], np.tile(1 / TABLE2[:, 0], (10, 1)))]
    d = generated_instance(0.015, 1)
    cases.append((TABLE1[:, 1:], np.full(10, 50.0), np.full(9, 1 / 9), d["r"], d["mu"]))
    for cap, n, alpha, r, mu in cases:
        s1 = allocation_lp(n, cap, alpha, r, mu)
        B = [nondominated_bins(cap[j], np.flatnonzero(s1.support[j]), r) for j in range(len(n))]
        full = assignment_lp(n, alpha, mu, B, column_generation=False)
        cg = assignment_lp(n, alpha, mu, B, column_generation=True)
        assert cg.lam == pytest.approx(full.lam, rel=1e-9)
        assert [x.sum() for x in cg.x] == pytest.approx(list(n))
        assert full.lam <= s1.lam * (1 + 1e-9)  # O3


def test_table_1_2_offline_reference():
    """O3-O6 (docs/papers/lotes.md#test-labels) on the paper's Table 1/2 inputs."""
    inp = LotesInputs(TABLE1[:, 1:], TABLE1[:, 0], np.repeat(np.arange(10), TABLE1[:, 0].astype(int)),
                      TABLE2[:, 3], TABLE2[:, 1:3], np.tile(1 / TABLE2[:, 0], (10, 1)))
    plan = solve_lotes(inp)
    assert plan.lam1 == pytest.approx(4_730_797, rel=1e-6)
    assert plan.lam2 == pytest.approx(4_719_097, rel=1e-6)
    assert plan.lam_round <= plan.lam2 <= plan.lam1
    assert 1 - plan.lam_round / plan.lam2 < 1e-3                       # O5 (paper < 0.001 %, gate 0.1 %)
    K_j = plan.support_sizes
    assert sum(K_j) <= 4 + 10 * 2                                       # O4: a simplex vertex is sparse
    assert sum(1 for k in K_j if k <= 2) >= 8                           # most configurations: 1-2 classes
    # configuration (0.50, 0.03) cannot hold one class-4 job: its only bin is empty (docs/papers/lotes.md#empty-bin)
    assert plan.bins[6].tolist() == [[0, 0, 0, 0]]
    restricted = sum(b.shape[0] for b in plan.bins)
    unrestricted = sum(nondominated_bins(TABLE1[j, 1:], range(4), TABLE2[:, 1:3]).shape[0] for j in range(10))
    assert restricted < unrestricted / 10                                # O7 (restricted << unrestricted)
    assert plan.machine_bin.shape == (12_583, 4)


# =========================================================================== bins vs brute force
def _brute_bins(cap, cls, r, tol=1e-9):
    cap = np.asarray(cap, float) + tol
    lim = [int(min(cap[l] / r[k, l] for l in range(r.shape[1]) if r[k, l] > 0)) for k in cls]
    out = []
    for c in itertools.product(*[range(m + 1) for m in lim]):
        used = sum((m * r[k] for k, m in zip(cls, c)), np.zeros(r.shape[1]))
        if np.all(used <= cap) and not any(np.all(used + r[k] <= cap) for k in cls) and any(c):
            out.append(c)
    return sorted(out)


def test_fig5_bins_and_algorithm1():
    """O2: capacity 7, sizes 2 and 3: non-dominated {(3,0), (2,1), (0,2)}; Algorithm 1 with the
    nextBin reset adds the dominated (1,1); the literal text emits seven bins."""
    r = np.array([[2.0], [3.0]])
    assert nondominated_bins([7.0], [0, 1], r).tolist() == [[3, 0], [2, 1], [0, 2]]
    raw = algorithm1_bins([7.0], [0, 1], r)
    assert raw.tolist() == [[3, 0], [2, 1], [1, 1], [0, 2]]
    assert algorithm1_bins([7.0], [0, 1], r, reset_next_bin=False).tolist() == [
        [3, 0], [2, 1], [2, 0], [1, 1], [1, 0], [0, 2], [0, 1]]
    assert nondominated_filter(raw, [7.0], [0, 1], r).tolist() == [[3, 0], [2, 1], [0, 2]]
    # nothing fits: the empty bin (docs/papers/lotes.md#empty-bin); Algorithm 1 is undefined there and returns nothing
    big = np.array([[8.0], [9.0]])
    assert nondominated_bins([7.0], [0, 1], big).tolist() == [[0, 0]]
    assert algorithm1_bins([7.0], [0, 1], big).shape == (0, 2)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 2), st.integers(0, 2**31 - 1))
def test_bins_match_brute_force(K, R, seed):
    rng = np.random.default_rng(seed)
    r = np.round(rng.uniform(0.05, 0.5, (K, R)), 3)
    cap = np.round(rng.uniform(0.3, 1.0, R), 3)
    cls = sorted(rng.choice(K, int(rng.integers(1, K + 1)), replace=False).tolist())
    got = nondominated_bins(cap, cls, r)
    assert np.all(got[:, [k for k in range(K) if k not in cls]] == 0)
    rows = sorted(tuple(int(v) for v in b[cls]) for b in got if b.any())
    assert rows == _brute_bins(cap, cls, r)
    # Algorithm 1 (with the reset) + the non-dominance filter yields the same set
    raw = algorithm1_bins(cap, cls, r)
    if rows:
        filt = nondominated_filter(raw, cap, cls, r)
        assert sorted(tuple(int(v) for v in b[cls]) for b in filt) == rows


# =========================================================================== scenario -> inputs
def test_lotes_inputs_of_table_preset():
    sc = make_preset("lotes-table", machine_scale=0.001, horizon=0.1)
    inp = lotes_inputs(sc)
    assert inp.cap.tolist() == TABLE1[:, 1:].tolist()
    assert inp.n.tolist() == np.maximum(1, np.round(TABLE1[:, 0] * 0.001)).tolist()
    assert inp.alpha == pytest.approx(TABLE2[:, 3])
    assert inp.r == pytest.approx(TABLE2[:, 1:3])
    assert inp.mu == pytest.approx(np.tile(1 / TABLE2[:, 0], (10, 1)))
    plan = plan_for(sc)
    assert sc.params["rate"] == pytest.approx(0.9 * plan.lam2)   # load x lambda*_2 (before rounding: docs/papers/lotes.md#lambda-star)


def test_omega_preset_pairs_with_phi_preset():
    """G9: Exp. 3 at Omega = 0 is Exp. 2 at Phi = 0.006 (same instance); lambda* varies with omega."""
    a = make_preset("lotes-phi", phi=0.006, instance=2, machines_per_config=5, load=0.9, horizon=1)
    b = make_preset("lotes-omega", omega=0.0, instance=2, machines_per_config=5, load=0.9, horizon=1)
    c = make_preset("lotes-omega", omega=0.2, instance=2, machines_per_config=5, load=0.9, horizon=1)
    assert a.params["r"] == b.params["r"] and np.array_equal(a.speed, b.speed)
    assert a.params["lambda_stage2"] == pytest.approx(b.params["lambda_stage2"])
    assert c.params["lambda_stage2"] != pytest.approx(b.params["lambda_stage2"])
    assert c.params["r"] == b.params["r"]
    sp = np.array(c.params["mu"]) * np.array(c.params["u"])[None, :]  # omega_jk in [0.8, 1.2]
    assert sp.min() >= 0.8 - 1e-12 and sp.max() <= 1.2 + 1e-12 and sp.std() > 0.01
    with pytest.raises(ScenarioError, match="params.phi"):
        make_preset("lotes-phi", phi=0.03)


# =========================================================================== Stage 3 dispatcher
class _Jobs:
    """A fixed job list with declared class statistics (a deterministic ArrivalSource)."""

    def __init__(self, jobs, profile, mean_work, rates):
        self.jobs = sorted(jobs, key=lambda j: j[0])
        self.types = TypeInfo(demand=np.asarray(profile, float), mean_work=np.asarray(mean_work, float),
                              names=tuple(f"c{k}" for k in range(len(rates))), exact=False)
        self.num_resources = self.types.demand.shape[1]
        self._rates = np.asarray(rates, float)

    def chunks(self, rng) -> Iterator[ArrivalChunk]:
        t, d, k, w = zip(*self.jobs)
        yield ArrivalChunk.build(np.array(t, float), np.array(d, float), np.array(k), np.array(w, float))

    def sample_work(self, job_type, rng):
        return 1.0

    def arrival_rates(self):
        return self._rates


def _scenario(capacity, speed, jobs, profile, rates, mean_work=None, horizon=1e6):
    K = len(rates)
    src = _Jobs(jobs, profile, mean_work if mean_work is not None else [1.0] * K, rates)
    cap = np.asarray(capacity, float)
    return Scenario(name="lotes-unit", capacity=cap, source=src, resources=tuple(f"r{l}" for l in range(cap.shape[1])),
                    horizon=horizon, speed=np.asarray(speed, float))


def _drive(sc, agent, until=None):
    """Run to the end (or to time ``until``); return the placements [(job, server, time)] and the env."""
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


# Two configurations of two unit machines; class 0 runs twice as fast on configuration 0 and
# class 1 on configuration 1.  The unique Stage-1 vertex pairs them; bins (2,0) and (0,2).
SPEED_A = [[2.0, 1.0]] * 2 + [[1.0, 2.0]] * 2
CAP_A = [[1.0]] * 4
PROFILE_A = [[0.5], [0.5]]


def test_dispatch_arrival_level2_then_fallback_then_queue():
    jobs = [(float(i), [0.5], 0, 1e4) for i in range(9)]  # nine class-0 jobs, nothing completes
    sc = _scenario(CAP_A, SPEED_A, jobs, PROFILE_A, [1.0, 1.0])
    agent = make_agent("lotes")
    placed, env = _drive(sc, agent, until=100)
    plan = agent.plan
    assert plan.Delta.tolist() == [[4, 0], [0, 4]]
    assert plan.machine_bin.tolist() == [[2, 0], [2, 0], [0, 2], [0, 2]]
    # level 2: max upsilon, ties to the lowest index: 0, 1, 0, 1; then configuration 0 is full and the
    # fallback takes the first machine with room elsewhere: 2, 2, 3, 3; the ninth job waits
    assert [s for _, s, _ in placed] == [0, 1, 0, 1, 2, 2, 3, 3]
    assert env.view.status(8) == JobStatus.QUEUED
    assert agent.stats["fallback"] == 4 and agent.stats["queued"] == 1 and agent.stats["orphans"] == 0


def test_dispatch_exit_idles_for_classes_the_configuration_does_not_serve():
    """Sec. 4.3.2 deliberate idling: a completion on a configuration-0 machine never pulls class 1
    (Delta_01 = 0), even though it fits; a completion on configuration 1 does."""
    jobs = [(0.0, [0.5], 0, 10.0), (0.1, [0.5], 0, 1e4), (0.2, [0.5], 0, 1e4), (0.3, [0.5], 0, 1e4),
            (1.0, [0.5], 1, 1e4), (1.1, [0.5], 1, 1e4), (1.2, [0.5], 1, 20.0), (1.3, [0.5], 1, 1e4),
            (2.0, [0.5], 1, 1e4)]  # the ninth job (class 1) waits
    sc = _scenario(CAP_A, SPEED_A, jobs, PROFILE_A, [1.0, 1.0])
    agent = make_agent("lotes")
    placed, _env = _drive(sc, agent)
    where = {j: (s, t) for j, s, t in placed}
    # job 0 (class 0, speed 2: ends at t = 5) frees room on machine 0: class 1 is not pulled there
    assert where[8][1] > 5.0
    # job 6 (class 1 on machine 3, speed 2: ends at 1.2 + 10) frees configuration 1: job 8 starts then
    assert where[6][0] in (2, 3) and where[8] == (where[6][0], pytest.approx(1.2 + 10.0))


def test_dispatch_exit_priority_by_bin_deficit():
    """Sec. 4.3.2: classes in decreasing upsilon = N - kappa (ties: keep the current class, then lowest),
    each class queue scanned FCFS, skipping jobs that do not fit."""
    # one machine (1, 1); profiles (0.6, 0.2) and (0.2, 0.6): the only bin is (1, 1)
    profile = [[0.6, 0.2], [0.2, 0.6]]
    jobs = [(0.0, [0.2, 0.5], 1, 10.0),   # j0 class 1: placed; ends at 10
            (1.0, [0.5, 0.2], 0, 1e4),    # j1 class 0: placed (0.7, 0.7)
            (2.0, [0.6, 0.6], 0, 1e4),    # j2 class 0: never fits while j1 runs -> Q0
            (3.0, [0.1, 0.4], 1, 1e4),    # j3 class 1: does not fit -> Q1
            (4.0, [0.4, 0.1], 0, 1e4)]    # j4 class 0: does not fit -> Q0
    sc = _scenario([[1.0, 1.0]], [[1.0, 1.0]], jobs, profile, [1.0, 1.0])
    agent = make_agent("lotes")
    placed, env = _drive(sc, agent, until=50)
    assert agent.plan.machine_bin.tolist() == [[1, 1]]
    order = [j for j, _, t in placed if t == 10.0]
    # at t = 10 (j0 leaves; kappa = (1, 0)): upsilon = (0, 1) -> class 1 first although j2 and j4 are
    # older; then (0, 0): the current class (1) is kept but its queue is empty -> class 0, scanned
    # FCFS: j2 does not fit and is skipped (no head-of-line blocking), j4 fits
    assert order == [3, 4]
    assert agent.stats["queued"] == 3
    assert env.view.status(2) == JobStatus.QUEUED


def _orphan_scenario(strict: bool):
    # configuration 0: two unit machines (speed 1 for both classes); configuration 1: two machines of
    # capacity 1.5 where class 0 is useless (speed 1e-3).  alpha = (0.2, 0.8): the unique vertex serves
    # class 0 on configuration 0 only (y00 = 2, y01 = 2, y11 = 6).
    speed = [[1.0, 1.0]] * 2 + [[1e-3, 1.0]] * 2
    cap = [[1.0]] * 2 + [[1.5]] * 2
    jobs = [(0.0, [1.1], 1, 10.0),    # class 1, fits only configuration 1
            (0.1, [1.1], 1, 1e4),
            (1.0, [1.2], 0, 1e4)]     # class 0 larger than every configuration-0 machine: an orphan
    sc = _scenario(cap, speed, jobs, [[0.5], [0.5]], [0.2, 0.8])
    agent = make_agent("lotes", strict_paper=strict)
    return sc, agent


def test_dispatch_orphan_safeguard():
    sc, agent = _orphan_scenario(strict=False)
    placed, env = _drive(sc, agent)
    assert agent.plan.Delta[1, 0] == 0 and agent.plan.Delta[0, 0] > 0
    where = {j: (s, t) for j, s, t in placed}
    assert agent.stats["orphans"] == 1 and agent.stats["orphan_pulls"] == 1
    assert where[2][0] == where[0][0] and where[2][1] == pytest.approx(10.0)  # pulled when job 0 leaves
    sc, agent = _orphan_scenario(strict=True)
    placed, env = _drive(sc, agent, until=1e5)
    assert 2 not in {j for j, _, _ in placed}  # strict_paper: the orphan starves
    assert env.view.status(2) == JobStatus.QUEUED


def test_roulette_follows_rho():
    """Level 1: configurations drawn in proportion to rho_jk (here 1/2, 1/2 for class 0)."""
    # two identical configurations differing only by a speed tie-break-free label: class 0 served by both
    speed = [[1.0]] * 10 + [[1.0 + 1e-12]] * 10
    jobs = [(float(i), [0.01], 0, 1e4) for i in range(400)]
    sc = _scenario([[1.0]] * 20, speed, jobs, [[0.5]], [1.0])
    agent = make_agent("lotes")
    placed, _ = _drive(sc, agent, until=1e3)
    rho = agent.plan.rho()[:, 0]
    assert rho.sum() == pytest.approx(1.0)
    share = np.mean([s >= 10 for _, s, _ in placed])
    assert abs(share - rho[1]) < 0.08
    assert agent.stats["fallback"] == 0


def test_lotes_agent_rejects_bad_parameters():
    with pytest.raises(ConfigError, match="agent.rho_mode"):
        make_agent("lotes", rho_mode="x")
    with pytest.raises(ConfigError, match="agent.colour"):
        make_agent("lotes", colour="red")


def test_reduced_load90_lotes_starts_nearly_every_job_on_arrival():
    """G6 (reduced: 10 machines per configuration, 4 h): at 0.90 lambda* (Omega = 0.2) LoTES starts
    at least 99 % of the jobs on arrival, and its mean wait is below 1e-3 h."""
    from clustergym.reproduce.lotes import run_case

    sc = make_preset("lotes-omega", omega=0.2, load=0.90, machines_per_config=10, horizon=4.0, instance=0)
    rec = run_case(sc, "lotes")
    assert rec["arrivals"] > 10_000
    assert rec["immediate"] >= 0.99 and rec["mean_wait"] < 1e-3 and not rec["unstable"]


def test_poisson_class_source_draws_demands_around_the_class_profiles():
    from clustergym.workloads import Exponential, PoissonClassSource

    src = PoissonClassSource(50.0, [0.25, 0.75], [[0.02, 0.04], [0.04, 0.0]], Exponential(1.0), chunk_size=20_000)
    assert not src.types.exact and src.types.demand.tolist() == [[0.02, 0.04], [0.04, 0.0]]
    assert src.arrival_rates() == pytest.approx([12.5, 37.5])
    c = next(src.chunks(np.random.default_rng(1)))
    assert np.all(np.diff(c.time) >= 0) and c.time[-1] == pytest.approx(20_000 / 50.0, rel=0.05)
    assert np.mean(c.type == 0) == pytest.approx(0.25, abs=0.015)
    for k in range(2):
        d = c.demand[c.type == k]
        assert np.all(d >= 0) and np.all(d <= 1)
        assert d.mean(axis=0) == pytest.approx(src.realised_mean()[k], rel=0.03, abs=1e-12)
    assert np.all(c.demand[c.type == 1][:, 1] == 0)            # a zero profile stays zero
    assert src.realised_mean()[0] == pytest.approx([0.02 * 1.0276, 0.04 * 1.0276], rel=1e-3)  # docs/papers/lotes.md#truncated-gaussian
    c2 = next(src.chunks(np.random.default_rng(1)))
    assert np.array_equal(c.demand, c2.demand) and np.array_equal(c.work, c2.work)
    with pytest.raises(ScenarioError, match="alpha"):
        PoissonClassSource(1.0, [0.5, 0.6], [[0.1], [0.1]], Exponential(1.0))
