"""Exact oracles of the auto-scaling paper (Sec. 1, Sec. 3.1, Sec. 7.1; tests T2-T3 of docs/papers/autoscale.md#test-labels): no simulation."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustergym.errors import ScenarioError
from clustergym.reproduce.autoscale import check_lp_bound, reward_per_server_table
from clustergym.scenarios import Scenario, make_preset
from clustergym.scenarios.presets.autoscale import (
    EX1_REWARDS,
    EX1_SERVER,
    EX1_TYPES,
    INTRO_REWARDS,
    INTRO_SERVER,
    INTRO_TYPES,
    SYN4_REWARDS,
    SYN4_SERVER,
    SYN4_TYPES,
)
from clustergym.theory.autoscale import (
    ConfigSpace,
    as_fraction,
    critical_loads,
    default_g,
    dual_bound,
    global_greedy,
    gpa,
    gpa_objective,
    greedy_value_per_server,
    instance_of,
    lp_bound_per_server,
    lp_upper_bound,
    lp_upper_bound_total,
    trace_upper_bound,
    worst_case_family,
)
from clustergym.workloads import ReplaySource

RHO = (F(2), F(1, 2), F(4, 3), F(1))


@pytest.fixture(scope="module")
def syn4():
    return ConfigSpace.additive(SYN4_TYPES, SYN4_SERVER, SYN4_REWARDS)


def _lp(rho, sp):
    return lp_upper_bound(rho, sp).value


# =============================================================================== SYN4 (Sec. 7.1)
def test_syn4_configurations_and_max_reward_table(syn4):
    assert syn4.size == 1459 and syn4.max_jobs == 40
    table = {  # MaxReward of every type subset, types 1..4 -> 0..3
        (0, 1, 2, 3): (12, 3, 8, 0),
        (0, 1, 2): (12, 3, 8, 0),
        (0, 2, 3): (22, 0, 9, 0),
        (0, 2): (22, 0, 9, 0),
        (1, 2, 3): (0, 7, 6, 0),
        (1, 2): (0, 7, 6, 0),
        (0, 1, 3): (0, 2, 0, 1),
        (1, 3): (0, 2, 0, 1),
        (2, 3): (0, 0, 2, 1),
        (0, 3): (8, 0, 0, 1),
        (3,): (0, 0, 0, 1),
        (0, 1): (0, 10, 0, 0),
        (1,): (0, 10, 0, 0),
        (2,): (0, 0, 10, 0),
        (0,): (40, 0, 0, 0),
        (): (0, 0, 0, 0),
    }
    assert len(table) == 16
    for S, k in table.items():
        assert syn4.max_reward(S) == k, S
    U = {k: syn4.U(k) for k in table.values()}
    assert U[(12, 3, 8, 0)] == 1272 and U[(0, 2, 0, 1)] == U[(0, 0, 2, 1)] == 1216 and U[(40, 0, 0, 0)] == 720
    kg = syn4.greedy_configurations()
    assert len(kg) == 11 and kg[0] == (12, 3, 8, 0) and kg[-1] == (0, 0, 0, 0)
    # Def. 2 among equal rewards: (0,2,0,1) > (0,0,2,1) (larger k_2)
    assert kg.index((0, 2, 0, 1)) < kg.index((0, 0, 2, 1))


def test_syn4_global_greedy_is_exact(syn4):
    g = global_greedy(RHO, syn4)
    assert g.value == F(3196, 3)
    assert [(s.config, s.z, s.x, s.removed) for s in g.steps] == [
        ((12, 3, 8, 0), F(1, 6), F(1, 6), 0),  # types 1-3 exhausted together: the smallest index goes
        ((0, 7, 6, 0), F(0), F(0), 1),
        ((0, 0, 2, 1), F(0), F(0), 2),
        ((0, 0, 0, 1), F(1), F(5, 6), 3),
    ]
    assert g.x == {(12, 3, 8, 0): F(1, 6), (0, 0, 0, 1): F(5, 6)}
    assert g.y == (F(2), F(1, 2), F(4, 3), F(5, 6))
    assert all(a <= b for a, b in zip(g.y, RHO))


def test_syn4_lp_optimum_and_feasibility(syn4):
    lp = lp_upper_bound(RHO, syn4)
    assert lp.value == pytest.approx(1236.0, rel=1e-6)
    assert sum(lp.x.values()) == pytest.approx(1.0, abs=1e-9)
    held = sum(x * np.array(k, float) for k, x in lp.x.items())
    assert np.all(lp.y <= held + 1e-7) and np.all(lp.y <= np.array([float(r) for r in RHO]) + 1e-9)
    assert float(g := global_greedy(RHO, syn4).value) / lp.value == pytest.approx(0.861920, abs=1e-6)
    assert g < 1236


@pytest.mark.parametrize(
    "alpha,ug,ustar",
    [
        (F(1, 2), F(618), 618.0),
        (F(6, 7), F(7416, 7), 7416 / 7),
        (F(9, 10), F(10612, 10), 1112.4),
        (F(1), F(3196, 3), 1236.0),
        (F(5, 4), F(32270, 30), 1241.0),
        (F(2), F(3320, 3), 1253.44),
        (F(3), F(1148), 1258.08),
        (F(5), F(36920, 30), 1267.36),
        (F(6), F(1272), 1272.0),
        (F(10), F(1272), 1272.0),
    ],
)
def test_syn4_figure2_table(syn4, alpha, ug, ustar):
    rho = [alpha * r for r in RHO]
    assert global_greedy(rho, syn4).value == ug
    assert _lp(rho, syn4) == pytest.approx(ustar, rel=1e-6)


def test_syn4_closed_forms_and_critical_loads(syn4):
    assert critical_loads(RHO, syn4) == (F(6, 7), F(6))
    for alpha in (F(6, 7), F(1), F(17, 7), F(6)):
        assert global_greedy([alpha * r for r in RHO], syn4).value == 1024 + F(124, 3) * alpha
    for alpha in (F(1, 10), F(1, 2), F(6, 7)):
        assert global_greedy([alpha * r for r in RHO], syn4).value == 1236 * alpha


def _holds_all(rho, sp, alpha):
    """Definition of the first critical load: the greedy assignment serves all of ``alpha rho``."""
    g = global_greedy([alpha * r for r in rho], sp)
    return all(y == alpha * r for y, r in zip(g.y, rho))


# Two-resource instances where the cap (sum z = 1) binds at the *first* step, so later steps
# must still follow eq. (3.3) on the uncapped workload.  Capacity (12, 12).
CAP_FIRST = [
    # demands, rewards, rho, steps (config, z, x, removed), alpha_1
    (
        [[6, 7], [4, 5], [8, 5]],
        (7, 5, 7),
        (3, 3, 1),
        [((1, 1, 0), F(3), F(1), 0), ((0, 1, 1), F(0), F(0), 1), ((0, 0, 1), F(1), F(0), 2)],
        F(1, 4),
    ),
    (
        [[7, 6], [5, 6], [9, 3]],
        (8, 7, 1),
        (2, F(5, 3), 1),
        [((1, 1, 0), F(5, 3), F(1), 1), ((1, 0, 0), F(1, 3), F(0), 0), ((0, 0, 1), F(1), F(0), 2)],
        F(1, 3),
    ),
]


@pytest.mark.parametrize("demand,u,rho,steps,alpha1", CAP_FIRST)
def test_greedy_z_follows_eq_3_3_after_the_cap(demand, u, rho, steps, alpha1):
    sp = ConfigSpace.additive(np.array(demand, float), np.array([12.0, 12.0]), u)
    g = global_greedy(rho, sp)
    assert [(s.config, s.z, s.x, s.removed) for s in g.steps] == steps
    # eq. (3.3): every removed type is exhausted exactly by the z of the steps up to its own
    for i, s in enumerate(g.steps):
        assert as_fraction(rho[s.removed]) == sum(t.config[s.removed] * t.z for t in g.steps[: i + 1])
    assert g.total_z == 1 / alpha1 and critical_loads(rho, sp)[0] == alpha1


@pytest.mark.parametrize("demand,u,rho,steps,alpha1", CAP_FIRST)
def test_first_critical_load_against_its_definition(demand, u, rho, steps, alpha1):
    sp = ConfigSpace.additive(np.array(demand, float), np.array([12.0, 12.0]), u)
    a1, _ = critical_loads(rho, sp)
    assert _holds_all(rho, sp, a1) and _holds_all(rho, sp, a1 * F(999, 1000))
    assert not _holds_all(rho, sp, a1 * F(1001, 1000))
    for c in (F(1, 3), F(2), F(7, 2)):  # scale invariance: alpha_1(c rho) = alpha_1(rho) / c
        assert critical_loads([c * r for r in rho], sp)[0] == a1 / c


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_first_critical_load_is_the_largest_fully_served_load(seed):
    rng = np.random.default_rng(seed)
    sp, rho = _random_instance(rng)
    a1, _ = critical_loads(rho, sp)
    assert a1 > 0
    assert _holds_all(rho, sp, a1) and not _holds_all(rho, sp, a1 * F(1001, 1000))
    c = F(int(rng.integers(1, 50)), int(rng.integers(1, 50)))
    assert critical_loads([c * r for r in rho], sp)[0] == a1 / c


# =============================================================================== exact oracle instances
@pytest.mark.parametrize(
    "name,demand,cap,u,rho,ug,ustar",
    [
        ("EX1a", EX1_TYPES, EX1_SERVER, EX1_REWARDS, (1, 1), F(11), 11),
        ("EX1b", EX1_TYPES, EX1_SERVER, EX1_REWARDS, (F(3, 2), 1), F(16), 16),
        ("EX1c", EX1_TYPES, EX1_SERVER, EX1_REWARDS, (2, F(1, 2)), F(41, 2), 20.5),
        ("INTRO", INTRO_TYPES, INTRO_SERVER, INTRO_REWARDS, (1, F(1, 2), F(1, 2)), F(5), 5),
        ("INTRO-b", INTRO_TYPES, INTRO_SERVER, INTRO_REWARDS, (2, F(1, 4), F(1, 4)), F(9, 2), 4.5),
        ("W2", [[2.0], [3.0]], [5.0], (1, 1), (1, 1), F(3, 2), 2),
        ("W2eps", [[2.0], [3.0]], [5.0], (F(11, 10), 1), (1, 1), F(8, 5), 2.1),
        ("W3", [[20, 6], [12, 20], [24, 33]], [60, 60], (3, 2, 4), (1, 1, 1), F(19, 3), 9),
        ("W3eps", [[20, 6], [12, 20], [24, 33]], [60, 60], (F(31, 10), F(21, 10), 4), (1, 1, 1), F(98, 15), 9.2),
    ],
)
def test_exact_oracles(name, demand, cap, u, rho, ug, ustar):
    sp = ConfigSpace.additive(np.array(demand, float), np.array(cap, float), u)
    assert global_greedy(rho, sp).value == ug
    assert _lp(rho, sp) == pytest.approx(ustar, rel=1e-6)


def test_example1_configurations_and_tie_rule():
    sp = ConfigSpace.additive(EX1_TYPES, EX1_SERVER, EX1_REWARDS)
    assert {tuple(int(v) for v in k) for k in sp.configs} == {(2, 1), (2, 0), (1, 1), (1, 0), (0, 2), (0, 1), (0, 0)}
    assert sp.size == 7 and sp.max_jobs == 3
    assert sp.greedy_configurations() == [(2, 1), (2, 0), (0, 2), (0, 0)]
    # case 1 (rho_1 > 2 rho_2) uses (2,0) second, case 2 (rho_1 < 2 rho_2) uses (0,2)
    assert [s.config for s in global_greedy((3, 1), sp).steps] == [(2, 1), (2, 0)]
    assert [s.config for s in global_greedy((1, 1), sp).steps] == [(2, 1), (0, 2)]
    # at rho_1 = 2 rho_2 both types are exhausted at once: type 1 (smallest index) goes first -> case 2,
    # with z^(2) = 0, so x^(g) is the same either way (docs/papers/autoscale.md#example1)
    g = global_greedy((2, 1), sp)
    assert [s.config for s in g.steps] == [(2, 1), (0, 2)] and g.steps[1].z == 0
    assert g.x == {(2, 1): F(1)}


def test_w2_w3_tie_breaks_follow_definition_2():
    w2 = ConfigSpace.additive([[2.0], [3.0]], [5.0], (1, 1))
    assert w2.max_reward({0, 1}) == (2, 0)  # ties with (1,1) at U = 2
    w3 = ConfigSpace.additive(np.array([[20, 6], [12, 20], [24, 33]], float), [60.0, 60.0], (3, 2, 4))
    assert w3.max_reward({0, 1, 2}) == (3, 0, 0)  # ties with (1,1,1) at 9
    assert w3.max_reward({1, 2}) == (0, 3, 0)  # ties with (0,1,1) at 6
    g = global_greedy((1, 1, 1), w3)
    assert g.x == {(3, 0, 0): F(1, 3), (0, 3, 0): F(1, 3), (0, 0, 1): F(1, 3)}


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_worst_case_family_ratio_is_exact(n):
    demand, cap, u, gens = worst_case_family(n)
    want = 1 - (1 - F(1, n)) ** n
    for sp in (ConfigSpace.from_generators(gens, u), ConfigSpace.additive(demand, cap, u)):
        g = global_greedy([1] * n, sp)
        assert g.value == want * n**n
        assert _lp([1] * n, sp) == pytest.approx(n**n, rel=1e-9)
        assert [s.config for s in g.steps][: n - 1] == [
            tuple(n if j == i else 0 for j in range(n)) for i in range(n - 1)
        ]
    assert want >= 1 - 1 / math.e
    # the additive realisation has the family's configurations (and only harmless extra mixtures)
    add = ConfigSpace.additive(demand, cap, u)
    assert all(add.is_feasible(k) for k in ConfigSpace.from_generators(gens, u).configs)


def test_worst_case_family_eps_makes_the_first_choice_strict():
    demand, cap, u, _ = worst_case_family(2, F(1, 10))
    sp = ConfigSpace.additive(demand, cap, u)
    assert u == (F(11, 5), F(2))  # W2-epsilon with rewards doubled
    assert global_greedy((1, 1), sp).value == F(16, 5) and _lp((1, 1), sp) == pytest.approx(4.2)
    with pytest.raises(ScenarioError):
        worst_case_family(1)


# =============================================================================== GPA (Algorithm 1)
def test_integer_gpa_on_syn4(syn4):
    def counts(yhat, L):
        return [(s.config, s.count) for s in gpa(yhat, L, syn4)]

    assert counts([360, 90, 240, 180], 180) == [
        ((12, 3, 8, 0), 30),
        ((0, 7, 6, 0), 0),
        ((0, 0, 2, 1), 0),
        ((0, 0, 0, 1), 150),
    ]
    # with the safety margin g = 12 (DRA's first plan at L = 180 under load rho L)
    assert [c for _, c in counts([372, 102, 252, 192], 180)] == [31, 1, 1, 147]
    assert [k for k, _ in counts([372, 102, 252, 192], 180)] == [
        (12, 3, 8, 0),
        (0, 7, 6, 0),
        (0, 2, 0, 1),
        (0, 0, 0, 1),
    ]
    L = 1000
    assert [c for _, c in counts([r * L + 19 for r in RHO], L)] == [169, 1, 3, 827]
    L = 10**6
    got = {k: c for k, c in counts([r * L for r in RHO], L) if c}
    assert got == {(12, 3, 8, 0): 166667, (0, 0, 0, 1): 833333}


def test_gpa_objective_uses_min_with_demand(syn4):
    L = 10
    steps = gpa([r * L for r in RHO], L, syn4)
    naive = sum(s.count * syn4.U(s.config) for s in steps) / L
    assert float(naive) == pytest.approx(
        1073.6
    )  # the ceiling over-provisions slots (docs/papers/autoscale.md#gpa-clamp)
    val = gpa_objective(steps, [r * L for r in RHO], syn4.rewards) / L
    assert val < naive and float(val) <= _lp(RHO, syn4) + 1e-9


def test_gpa_clamp_keeps_counts_non_negative():
    # ceiling overshoot leaves r_2 = -2 for a later configuration with k_2 = 1: unclamped GPA gives X = -1
    sp = ConfigSpace.additive(np.array([[9.0, 3.0], [8.0, 7.0], [1.0, 3.0]]), np.array([13.0, 10.0]), (8, 8, 1))
    steps = gpa([1, 7, 1], 6, sp)
    assert [(s.config, s.count) for s in steps] == [((1, 0, 2), 1), ((0, 1, 1), 0), ((0, 1, 0), 5)]


@pytest.mark.parametrize("which", ["syn4", "w2", "w3"])
@pytest.mark.parametrize("L", [1000, 10_000, 1_000_000])
def test_integer_gpa_converges_to_global_greedy(which, L, syn4):
    """T3 / Proposition 2: |GPA(L, rho L)_k / L - x^(g)_k| <= J / L."""
    if which == "syn4":
        sp, rho = syn4, RHO
    elif which == "w2":
        sp, rho = ConfigSpace.additive([[2.0], [3.0]], [5.0], (1, 1)), (1, 1)
    else:
        sp, rho = (
            ConfigSpace.additive(np.array([[20, 6], [12, 20], [24, 33]], float), [60.0, 60.0], (3, 2, 4)),
            (1, 1, 1),
        )
    xg = global_greedy(rho, sp).x
    counts: dict = {}
    for s in gpa([F(r) * L for r in rho], L, sp):
        counts[s.config] = counts.get(s.config, 0) + s.count
    for k in set(counts) | set(xg):
        assert abs(F(counts.get(k, 0), L) - xg.get(k, 0)) <= F(sp.num_types, L)


# =============================================================================== Theorems 1-2 (T2)
def _random_instance(rng):
    J = int(rng.integers(1, 6))
    D = int(rng.integers(1, 4))
    cap = rng.integers(6, 17, size=D).astype(float)
    demand = np.stack([rng.integers(1, cap.astype(int) + 1) for _ in range(J)]).astype(float)
    u = [int(x) for x in rng.integers(1, 21, size=J)]
    rho = [F(int(x), 10) for x in rng.integers(1, 61, size=J)]
    return ConfigSpace.additive(demand, cap, u), rho


def test_greedy_ratio_on_random_instances():
    """Theorem 1 (>= 1/2), Theorem 2 for J = 2 (>= 3/4), exactness for J = 1 (T2 with fewer instances)."""
    rng = np.random.default_rng(7)
    seen = set()
    for _ in range(250):
        sp, rho = _random_instance(rng)
        ug = float(global_greedy(rho, sp).value)
        us = _lp(rho, sp)
        J = sp.num_types
        seen.add(J)
        assert ug <= us * (1 + 1e-9)
        assert ug >= 0.5 * us - 1e-9
        if J == 1:
            assert ug == pytest.approx(us, rel=1e-7)
        if J == 2:
            assert ug >= 0.75 * us - 1e-9
    assert seen == {1, 2, 3, 4, 5}


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_gpa_properties_on_random_inputs(seed):
    rng = np.random.default_rng(seed)
    sp, _ = _random_instance(rng)
    L = int(rng.integers(1, 40))
    yhat = [int(x) for x in rng.integers(0, 3 * L, size=sp.num_types)]
    steps = gpa(yhat, L, sp)
    assert all(s.count >= 0 for s in steps) and sum(s.count for s in steps) <= L
    assert sorted(s.removed for s in steps) == list(range(sp.num_types))
    Us = [sp.U(s.config) for s in steps]
    assert Us == sorted(Us, reverse=True)  # nested type sets: non-increasing rewards
    assert len({s.config for s in steps}) == len(steps)
    # every removed type is covered, unless the servers ran out first
    slots = [sum(s.count * s.config[j] for s in steps) for j in range(sp.num_types)]
    if sum(s.count for s in steps) < L:
        assert all(slots[j] >= yhat[j] for j in range(sp.num_types))
    # the GPA objective never exceeds the LP (3.1)
    assert float(gpa_objective(steps, yhat, sp.rewards)) <= lp_upper_bound_total(yhat, L, sp) * (1 + 1e-9) + 1e-9


# =============================================================================== dual bound, LP forms
def test_dual_bound_is_an_upper_bound(syn4):
    us = _lp(RHO, syn4)
    assert dual_bound(RHO, syn4) == sum(u * r for u, r in zip(syn4.rewards, RHO)) == 1236
    assert dual_bound(RHO, syn4, syn4.rewards) == 1272
    rng = np.random.default_rng(3)
    for _ in range(20):
        beta = [F(int(rng.integers(0, 101)), 100) * u for u in syn4.rewards]
        assert float(dual_bound(RHO, syn4, beta)) >= us - 1e-6
    with pytest.raises(ScenarioError, match="beta"):
        dual_bound(RHO, syn4, [-1, 0, 0, 0])
    # at load 2 the trivial bounds are loose and an intermediate beta is tighter than both
    rho2 = [2 * r for r in RHO]
    assert _lp(rho2, syn4) < 1272 < float(dual_bound(rho2, syn4))


def test_lp_total_form_scales_with_L(syn4):
    for L in (1, 7, 180):
        assert lp_upper_bound_total([r * L for r in RHO], L, syn4) == pytest.approx(1236 * L, rel=1e-6)


def test_divisible_one_resource_closed_form_matches_enumeration():
    sizes = np.array([[0.5], [0.25], [0.125], [0.25], [0.5]])
    u = (1.5, 0.75, 0.125, 0.25, 0.5)  # densities 3, 3, 1, 1, 1
    enum = ConfigSpace.additive(sizes, [1.0], u)
    closed = ConfigSpace.additive(sizes, [1.0], u, limit=10)
    assert enum.configs is not None and closed.configs is None
    for m in range(1, 32):
        assert closed.max_reward(m) == enum.max_reward(m), m
    rng = np.random.default_rng(0)
    for _ in range(20):
        rho = [F(int(x), 8) for x in rng.integers(0, 24, size=5)]
        assert lp_upper_bound(rho, closed).value == pytest.approx(lp_upper_bound(rho, enum).value, rel=1e-7, abs=1e-9)
        assert global_greedy(rho, closed).value == global_greedy(rho, enum).value


# =============================================================================== scenario helpers
def test_scenario_helpers_and_lp_bound_check():
    sc = make_preset("autoscale-4vm", num_servers=12)
    inst = instance_of(sc)
    assert inst.rho == RHO and inst.num_servers == 12
    assert lp_bound_per_server(sc) == pytest.approx(1236, rel=1e-6)
    assert greedy_value_per_server(sc) == F(3196, 3)
    assert lp_bound_per_server(make_preset("autoscale-4vm", load=0.5)) == pytest.approx(618, rel=1e-6)
    ok = check_lp_bound([1200 * 12, 1210 * 12, 1190 * 12], sc)
    assert ok["passed"] and ok["reward_per_server"] == pytest.approx(1200)
    bad = check_lp_bound([1300 * 12, 1301 * 12, 1299 * 12], sc)
    assert not bad["passed"] and bad["ratio"] > 1
    df = pd.DataFrame(
        {
            "agent": ["a", "a", "b", "b"],
            "seed": [0, 1, 0, 1],
            "reward_rate": [12000, 12240, 6000, 6000],
            "uses_oracle": [False, False, True, True],
        }
    )
    tab = reward_per_server_table(df, sc).set_index("agent")
    assert tab.loc["a", "reward_per_server"] == pytest.approx(1010)
    assert tab.loc["a", "ratio_U_g"] == pytest.approx(1010 / (3196 / 3))
    assert tab.loc["b", "ci95"] == 0 and bool(tab.loc["b", "uses_oracle"])
    assert default_g(180) == 12 and default_g(500) == 16 and default_g(1000) == 19 and default_g(30) == 7


def test_presets_carry_the_paper_instances():
    assert greedy_value_per_server(make_preset("autoscale-intro")) == 5
    assert greedy_value_per_server(make_preset("autoscale-intro", variant="b")) == F(9, 2)
    assert greedy_value_per_server(make_preset("autoscale-example1", variant="c")) == F(41, 2)
    sc = make_preset("autoscale-worst-case", n=4)
    assert greedy_value_per_server(sc) == 175 and lp_bound_per_server(sc) == pytest.approx(256)
    with pytest.raises(ScenarioError) as ei:
        make_preset("autoscale-example1", variant="z")
    assert ei.value.field == "params.variant"
    with pytest.raises(ScenarioError) as ei:
        make_preset("autoscale-worst-case", n=1)
    assert ei.value.field == "params.n"


def test_as_fraction():
    assert as_fraction(3.1) == F(31, 10) and as_fraction(4 / 3) == F(4, 3) and as_fraction("4/3") == F(4, 3)
    assert as_fraction(0.1 + 0.2) == F(3, 10) and as_fraction(7) == 7
    assert as_fraction(math.pi) == F(math.pi)  # not a simple rational: kept exactly


def test_trace_upper_bound_on_a_tiny_trace():
    # unit servers; sizes 1/2 (reward 1.5: density 3) and 1/4 (reward 0.25: density 1); L = 1
    times = [0.0, 0.0, 0.0, 1.0]
    sizes = [0.5, 0.25, 0.25, 0.5]
    works = [2.0, 4.0, 4.0, 2.0]
    src = ReplaySource(
        np.array(times),
        np.array(sizes)[:, None],
        np.array(works),
        type=np.array([0, 1, 1, 0]),
        reward_rate=np.array([1.5, 0.25, 0.25, 1.5]),
        type_demand=np.array([[0.5], [0.25]]),
    )
    sc = Scenario(
        name="t",
        capacity=np.ones((1, 1)),
        source=src,
        resources=("size",),
        horizon=4.0,
        objective="reward",
        queueing="loss",
    )
    # [0,1): one 1/2 (1.5) + two 1/4 (0.5) = 2.0; [1,2): two 1/2 fill the server: 3.0;
    # [2,3): one 1/2 + two 1/4: 2.0; [3,4): two 1/4: 0.5
    assert trace_upper_bound(sc) == pytest.approx((2.0 + 3.0 + 2.0 + 0.5) / 4)
    assert trace_upper_bound(sc, t0=1.0, t1=2.0) == pytest.approx(3.0)
