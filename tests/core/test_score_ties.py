"""Score ties are decided by the documented tie rule, not by floating-point rounding.

Every score-based choice of the baselines goes through the kernel's tie helpers
(``clustergym.core.cluster``: ``SCORE_RTOL``, ``best_mask``, ``argbest``,
``score_ranks``).  Each instance below has two candidates whose scores are equal
in exact arithmetic but differ in the last bits once demands are summed or
divided by capacities (0.9 + 0.6 + 0.2 = 1.7 but 0.7 + 0.4 + 0.6 =
1.7000000000000002; 0.5 + 0.1 + 0.2 - 0.5 = 0.30000000000000004), arranged
so that the rounding and the tie rule disagree: the tie rule must win.
"""

from __future__ import annotations

import numpy as np
import pytest

from clustergym.agent_api import make_agent, make_env_for
from clustergym.baselines.greedy import select_server
from clustergym.baselines.mris.bf_exec import tightest_by_norm
from clustergym.baselines.mris.mris import priority_order
from clustergym.core import accel
from clustergym.core.cluster import (
    SCORE_RTOL,
    argbest,
    best_mask,
    score_ranks,
    score_tol,
)
from clustergym.core.scores import argbest_rows
from clustergym.reproduce.mris import run_on_instance
from clustergym.runner.episode import run_compiled
from clustergym.scenarios.spec import Scenario
from clustergym.theory.lotes import round_assignment
from clustergym.theory.mris import MRISInstance, knapsack_exact, knapsack_greedy, select_batch
from clustergym.theory.rms import Knapsack
from clustergym.workloads.replay import ReplaySource

needs_numba = pytest.mark.skipif(not accel.available(), reason="numba (the optional 'fast' extra) is not installed")

LOW = (0.9, 0.6, 0.2)  # sums to 1.7 in floating point
HIGH = (0.7, 0.4, 0.6)  # sums to 1.7000000000000002


def test_the_instances_really_differ_in_floating_point():
    assert sum(LOW) == 1.7 and sum(HIGH) > 1.7 and np.sum(HIGH) > np.sum(LOW)
    assert ((0.5 + 0.1) + 0.2) - 0.5 > 0.3


# ---------------------------------------------------------------------------------------------- the helpers
def test_best_mask_and_argbest():
    s = np.array([1.7, 1.7000000000000002, 0.3, 1.7 * (1 + 2 * SCORE_RTOL)])
    assert best_mask(s).tolist() == [False, False, False, True]  # a real difference is not a tie
    s = s[:3]
    assert best_mask(s).tolist() == [True, True, False] and argbest(s) == 0
    assert argbest(s, largest=False) == 2 and argbest(np.array([0.3, 0.1 + 0.2]), largest=False) == 0
    assert argbest([]) == -1 and not best_mask([]).any()
    assert argbest([np.nan, 2.0, 2.0]) == 1 and argbest([np.inf, 1.0, np.inf]) == 0
    # a difference of larger terms: only the caller's scale makes 1e-17 and 0 a tie
    assert argbest([1e-17, 0.0], largest=False) == 1 and argbest([1e-17, 0.0], largest=False, scale=1.0) == 0
    assert score_tol(-2.0) == 2 * SCORE_RTOL and score_tol(0.0, 3.0) == 3 * SCORE_RTOL


def test_argbest_rows_is_argbest_of_each_row_among_its_valid_entries():
    rng = np.random.default_rng(3)
    base = rng.choice([0.3, 0.1 + 0.2, 1.7, 1.7000000000000002, np.nan, np.inf, 2.0], size=(300, 6))
    valid = rng.random((300, 6)) < 0.6
    for largest in (True, False):
        got = argbest_rows(base, valid, largest=largest)
        for i in range(300):
            idx = np.flatnonzero(valid[i] & ~np.isnan(base[i]))
            j = argbest(base[i][idx], largest=largest) if idx.size else -1
            assert got[i] == (idx[j] if j >= 0 else -1), (i, base[i], valid[i])
    assert (argbest_rows(base, valid) == -1).any() and len(set(argbest_rows(base, valid).tolist())) > 3


def test_score_ranks_group_from_the_smallest_member():
    r = score_ranks([3.4000000000000004, 3.4, 1.0, 2.0, 2.0 + 1.5e-9, 2.0 + 3e-9, np.inf, -np.inf, np.nan])
    # 2.0 and 2.0+1.5e-9 tie; 2.0+3e-9 is more than SCORE_RTOL from the group's smallest (2.0): new group
    assert r.tolist() == [4, 4, 1, 2, 2, 3, 5, 0, 6]
    ids = np.arange(2)
    assert np.lexsort((ids, score_ranks([3.4000000000000004, 3.4]))).tolist() == [0, 1]
    assert score_ranks([]).tolist() == [] and score_ranks([5.0]).tolist() == [0]


# ---------------------------------------------------------------------------------------------- MRIS family
def _mris_instance(first, second) -> MRISInstance:
    """One machine, R = 3: jobs 0 and 1 (p = 2) cannot run together; job 2 (p = 7) fits beside either."""
    return MRISInstance(
        release=np.zeros(3),
        proc=np.array([2.0, 2.0, 7.0]),
        weight=np.array([2.0, 1.0, 1.0]),
        demand=np.array([first, second, [0.1, 0.1, 0.1]]),
        machines=1,
    )


def test_tetris_mris_first_maximum_is_the_earliest_job():
    # alignments with an empty machine: 1.7 (job 0) and 1.7000000000000002 (job 1), equal volumes:
    # the documented rule (earliest release, then id) starts job 0, then job 2 beside it
    res = run_on_instance(_mris_instance(LOW, HIGH), "tetris-mris")
    assert res["schedule"]["start"].tolist() == [0.0, 2.0, 0.0]
    assert res["paper"]["awct"] == pytest.approx(5.0)  # rounding's choice [2, 0, 0] gives 17/3


@pytest.mark.parametrize("agent", ["pq-svf", "pq-wsvf", "pq-sdf", "pq-wsdf"])
def test_pq_volume_and_demand_keys_tie_to_the_earliest_id(agent):
    # job 0 has the larger float key (HIGH): only the tie rule puts it first
    res = run_on_instance(_mris_instance(HIGH, LOW), agent)
    assert res["schedule"]["start"][:2].tolist() == [0.0, 2.0]


def test_priority_order_ties_by_release_then_id():
    r = np.array([0.0, 0.0, 0.0])
    p = np.array([2.0, 2.0, 1.0])
    w = np.ones(3)
    u = np.array([np.sum(HIGH), np.sum(LOW), 5.0])
    assert priority_order("svf", np.array([1, 0, 2]), r, p, w, u).tolist() == [0, 1, 2]
    r = np.array([1.0, 0.0, 0.0])  # job 1 released earlier: it goes first among the tied
    assert priority_order("svf", np.array([0, 1]), r, p, w, u).tolist() == [1, 0]


def test_bf_exec_machine_ties_to_the_lowest_index():
    load = np.array([[0.3], [((0.5 + 0.1) + 0.2) - 0.5]])  # 0.3 and 0.30000000000000004
    cap = np.ones((2, 1))
    limit = cap * (1 + 1e-9) + 1e-12
    assert tightest_by_norm(load, np.array([0.5]), limit, cap) == 0
    assert tightest_by_norm(np.array([[0.3], [0.31]]), np.array([0.5]), limit, cap) == 1  # a real difference
    assert tightest_by_norm(load, np.array([0.8]), limit, cap) == -1


def test_knapsack_volume_ties_go_to_the_lower_index():
    v = 2.0 * np.array([np.sum(HIGH), np.sum(LOW)])  # 3.4000000000000004, 3.4: one fits
    w = np.ones(2)
    assert knapsack_greedy(w, v, 3.5 / 2).tolist() == [0]  # greedy: ratio tie, then volume tie, index
    assert knapsack_exact(w, v, 3.5, method="prefix").tolist() == [0]
    assert select_batch("exact", np.zeros(2), v, 3.5).tolist() == [0]  # zero-weight fill: smallest volume first


# ---------------------------------------------------------------------------------------------- greedy Best-Fit
def test_select_server_and_largest_job_rule():
    rng = np.random.default_rng(0)
    cap = np.ones((2, 1))
    load = np.array([[0.3], [((0.5 + 0.1) + 0.2) - 0.5]])
    assert select_server("best-fit", np.array([True, True]), np.array([0.5]), load, cap, rng) == 0
    assert select_server("best-fit", np.array([True, True]), np.array([0.5]), np.array([[0.3], [0.31]]), cap, rng) == 1


def _bf_tie_scenario() -> Scenario:
    """Two servers, R = 2.  A (0.3, 0.5) goes to server 0; B (0.5, 0.6) cannot join it (memory);
    C (0.1, 0) and D (0.2, 0) join B, the tighter server; B leaves at t = 1.1, so server 1 holds
    0.30000000000000004 of resource 0 and server 0 holds 0.3.  E (0.5, 0) then has equal Best-Fit
    scores (0.15) on both in exact arithmetic: the lowest index, server 0, must take it."""
    t = np.array([0.0, 0.1, 0.2, 0.3, 2.0])
    d = np.array([[0.3, 0.5], [0.5, 0.6], [0.1, 0.0], [0.2, 0.0], [0.5, 0.0]])
    w = np.array([100.0, 1.0, 100.0, 100.0, 100.0])
    return Scenario(
        name="bf-tie", capacity=np.ones((2, 2)), source=ReplaySource(t, d, w), resources=("cpu", "mem"), horizon=10.0
    )


def _servers(sc: Scenario, agent_name: str, compiled: bool, **params) -> list[int]:
    agent = make_agent(agent_name, **params)
    env = make_env_for(sc, agent)
    with accel.forced(compiled):
        env.reset(seed=0)
        agent.reset(env, seed=0)
        done = compiled and run_compiled(agent, env) is not None
        assert done == compiled
        while not done:
            cmd, _ = agent.predict(None)
            _, _, term, trunc, _ = env.step(cmd)
            done = term or trunc
    return env.sim.jobs.server[: env.sim.jobs.size].tolist()


@pytest.mark.parametrize("params", [{}, {"scan": 8}, {"select_job": "fifo"}])
def test_best_fit_server_tie_goes_to_the_lowest_index(params):
    assert _servers(_bf_tie_scenario(), "best-fit", False, **params) == [0, 1, 1, 1, 0]


@needs_numba
def test_compiled_best_fit_applies_the_same_tie_rule():
    assert _servers(_bf_tie_scenario(), "best-fit", True, scan=8) == [0, 1, 1, 1, 0]


def test_best_fit_largest_job_rule_ties_to_the_oldest():
    # a blocker fills the server until t = 1; jobs 1 (size 1.7) and 2 (size 1.7000000000000002) wait;
    # at the completion the "largest" rule must take the oldest of the two (they cannot run together)
    t = np.array([0.0, 0.1, 0.2])
    d = np.array([[1.0, 1.0, 1.0], LOW, HIGH])
    sc = Scenario(
        name="bf-largest",
        capacity=np.ones((1, 3)),
        source=ReplaySource(t, d, np.array([1.0, 5.0, 5.0])),
        resources=("a", "b", "c"),
        horizon=20.0,
    )
    agent = make_agent("best-fit")
    env = make_env_for(sc, agent)
    env.reset(seed=0)
    agent.reset(env, seed=0)
    while True:
        cmd, _ = agent.predict(None)
        _, _, term, trunc, _ = env.step(cmd)
        if term or trunc:
            break
    assert env.sim.jobs.start[:3].tolist() == [0.0, 1.0, 6.0]


# ---------------------------------------------------------------------------------------------- BF-J/S
def _slotted_agent(name: str, L: int = 2, **params):
    from clustergym.core.simulator import SLOT_EPOCHS

    src = ReplaySource(np.array([100.0]), np.array([[0.5]]), np.array([1.0]))
    sc = Scenario(
        name="slot", capacity=np.ones((L, 1)), source=src, resources=("r",), horizon=200.0, epochs=SLOT_EPOCHS
    )
    agent = make_agent(name, **params)
    env = make_env_for(sc, agent)
    env.reset(seed=0)
    agent.reset(env, seed=0)
    return agent


@pytest.mark.parametrize("L", [2, 40])  # the Python scan (small L) and the NumPy scan (large L)
def test_bf_j_tightest_server_ties_to_the_smallest_index(L):
    ag = _slotted_agent("bf-j", L=L)
    ag.used = [0.0] * L
    ag.used[0], ag.used[1] = 0.3, ((0.5 + 0.1) + 0.2) - 0.5
    ag.free_np[:] = np.array(ag.cap) - np.array(ag.used)
    touch = (lambda *ls: [ag._ridx.touch(l) for l in ls]) if ag._ridx is not None else (lambda *ls: None)
    touch(*range(L))  # large L: the residual index learns of the changed residuals
    ag.occ[99] = 0.5
    assert ag.tightest(99) == 0 and ag.tightest(99, [1, 0]) == 0
    ag.used[1] = 0.31
    ag.free_np[1] = 1 - 0.31
    touch(1)
    assert ag.tightest(99) == 1


def test_bf_s_largest_job_ties_to_the_smallest_id_in_vector_mode():
    from sortedcontainers import SortedList

    ag = _slotted_agent("bf-s", mode="vector")
    # vector mode: the largest max-demand, then the larger sum of demands, then the smallest id;
    # jobs 3 and 4 have the same max (0.9) and sums 1.2 and 1.2000000000000002 (tied)
    dem = {3: np.array([0.9, 0.1, 0.2]), 4: np.array([0.9, 0.2, 0.1]), 5: np.array([0.3, 0.1, 0.1])}
    ag.R, ag.capn, ag.uvec = 3, np.ones((2, 3)), np.zeros((2, 3))
    ag.dvec = dem
    ag.occ = {i: float(v.max()) for i, v in dem.items()}
    pool = SortedList((float(v.max()), float(v.sum()), -i) for i, v in dem.items())
    assert pool[-1][2] == -4  # bit for bit, job 4 would be the largest
    assert ag.largest_fitting(pool, 0) == 3
    ag.uvec[1] = [0.0, 0.0, 0.85]  # on server 1 only job 4 fits (0.85 + 0.2 > 1)
    assert ag.largest_fitting(pool, 1) == 4


# ---------------------------------------------------------------------------------------------- others
def test_power_of_d_least_loaded_order_ties_by_server_index():
    from clustergym.baselines.autoscale.admission import least_loaded_order

    util = np.array([[0.2, 0.1], [((0.5 + 0.1) + 0.2) - 0.5, 0.1], [0.3, 0.1], [0.3, 0.0]])
    servers = np.array([7, 5, 2, 9])
    # max 0.3 for the last three; sums: server 9 lowest; servers 5 and 2 tie (0.4): index 2 first
    assert servers[least_loaded_order(util, servers)].tolist() == [7, 9, 2, 5]


def test_maxweight_greedy_knapsack_density_ties_by_type_index():
    # sizes 1.7000000000000002 (type 0) and 1.7 (type 1), equal queues: equal densities, so type 0
    # (the lower index) is packed first; the two cannot share a server
    ks = Knapsack(np.array([HIGH, LOW]), np.ones(3), blackbox="greedy")
    assert ks.greedy(np.array([3.0, 3.0])).tolist() == [1, 0]
    assert ks.greedy(np.array([3.0, 3.1])).tolist() == [0, 1]


def test_lotes_rounding_fractional_part_ties_by_bin_index():
    x = np.array([0.3, 0.1 + 0.2, 0.0])  # fractional parts 0.3 and 0.30000000000000004
    assert round_assignment(x, 1).tolist() == [1, 0, 0]
    assert round_assignment(np.array([0.3, 0.31, 0.0]), 1).tolist() == [0, 1, 0]
