"""Oracle and property tests of clustergym.theory.rms and clustergym.theory.configurations (RMS paper §II, §III, §V Lemma 1, §VII-A)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from clustergym.errors import ScenarioError
from clustergym.theory import configurations as capmod
from clustergym.theory.configurations import enumerate_configurations, maximal_configurations
from clustergym.theory.rms import (
    boundary_point,
    capacity_scale,
    interior_margin,
    max_jobs_per_server,
    product_form_law,
)

# ---------------------------------------------------------------------------------------------
# settings from the RMS paper

# EC2, Table I (§VII-A); resources in the order (cpu, memory, disk);
# j = 0 Standard XL, j = 1 High-Memory XL, j = 2 High-CPU XL (the paper's rows 1, 2, 3).
EC2_DEMAND = np.array(
    [
        [8.0, 15.0, 1690.0],  # Standard Extra Large
        [6.5, 17.1, 420.0],  # High-Memory Extra Large
        [20.0, 7.0, 1690.0],  # High-CPU Extra Large
    ]
)
EC2_SERVER = np.array([90.0, 90.0, 5000.0])

# Fig. 1b (§III): one resource, capacity 10, sizes 2 and 5, L = 10.
FIG1B_DEMAND = np.array([[2.0], [5.0]])
FIG1B_SERVER = np.array([10.0])

# Google trace (§VII-B): 10 power-of-1/2 sizes 2^-p, p = 0..9, servers of size 1.
GOOGLE_SIZES = 2.0 ** -np.arange(10)

REL = 1e-9  # the module's feasibility tolerance, restated independently here


def _feasible(k: np.ndarray, demand: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Independent additive feasibility test, row-wise (§II, additive case)."""
    return np.all(np.atleast_2d(k).astype(float) @ demand <= cap * (1 + REL), axis=1)


def _servers(cap: np.ndarray, n: int) -> np.ndarray:
    return np.tile(cap, (n, 1))


# ---------------------------------------------------------------------------------------------
# EC2 (§VII-A; eqs. 2-3)


def test_ec2_configurations() -> None:
    k = enumerate_configurations(EC2_DEMAND, EC2_SERVER)
    assert k.dtype == np.int64 and k.shape == (28, 3)
    assert k[0].tolist() == [0, 0, 0]
    assert [tuple(r) for r in k] == sorted(tuple(r) for r in k)
    assert _feasible(k, EC2_DEMAND, EC2_SERVER).all()
    assert k.sum(axis=1).max() == 5


def test_ec2_maximal_configurations_match_spec() -> None:
    k = enumerate_configurations(EC2_DEMAND, EC2_SERVER)
    maximal = maximal_configurations(k, EC2_DEMAND, EC2_SERVER)
    # the six Pareto-maximal configurations, tuples in the order (Standard, High-Memory, High-CPU)
    expected = {(0, 3, 2), (0, 4, 1), (0, 5, 0), (1, 3, 1), (1, 4, 0), (2, 3, 0)}
    assert {tuple(r) for r in maximal.tolist()} == expected
    assert len(maximal) == 6
    assert (maximal.sum(axis=1) == 5).all()


def test_ec2_max_jobs_and_boundary_point() -> None:
    assert max_jobs_per_server(EC2_DEMAND, EC2_SERVER) == 5
    assert max_jobs_per_server(EC2_DEMAND, _servers(EC2_SERVER, 20)) == 5
    np.testing.assert_allclose(boundary_point(EC2_DEMAND, EC2_SERVER), [2 / 3, 11 / 3, 2 / 3], rtol=1e-12)
    v = boundary_point(EC2_DEMAND, _servers(EC2_SERVER, 20))
    np.testing.assert_allclose(v, [40 / 3, 220 / 3, 40 / 3], rtol=1e-12)
    assert v.sum() == pytest.approx(100.0)


def test_ec2_boundary_point_is_on_the_boundary_l20() -> None:
    servers = _servers(EC2_SERVER, 20)
    v = boundary_point(EC2_DEMAND, servers)
    assert capacity_scale(v, EC2_DEMAND, servers) == pytest.approx(1.0, abs=1e-9)
    assert interior_margin(v, EC2_DEMAND, servers) == pytest.approx(0.0, abs=1e-9)
    # lambda = zeta V with zeta = 0.9 (§VII-A): inside C^o, traffic intensity 0.9
    assert capacity_scale(0.9 * v, EC2_DEMAND, servers) == pytest.approx(1 / 0.9, rel=1e-9)
    assert interior_margin(0.9 * v, EC2_DEMAND, servers) > 0
    assert interior_margin(1.1 * v, EC2_DEMAND, servers) < 0


# ---------------------------------------------------------------------------------------------
# Fig. 1b (§III; eqs. 2-3)


def test_fig1b_configurations() -> None:
    k = enumerate_configurations(FIG1B_DEMAND, FIG1B_SERVER)
    assert k.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [2, 0], [2, 1], [3, 0], [4, 0], [5, 0]]
    assert maximal_configurations(k, FIG1B_DEMAND, FIG1B_SERVER).tolist() == [[0, 2], [2, 1], [5, 0]]
    assert max_jobs_per_server(FIG1B_DEMAND, _servers(FIG1B_SERVER, 10)) == 5


def test_fig1b_capacity_scale() -> None:
    servers = _servers(FIG1B_SERVER, 10)
    rho = np.array([20.8, 10.4])
    t = capacity_scale(rho, FIG1B_DEMAND, servers)
    assert t == pytest.approx(1.068376, abs=1e-5)
    assert t == pytest.approx(1 / 0.936, rel=1e-9)
    np.testing.assert_allclose(t * rho, [200 / 9, 100 / 9], rtol=1e-9)  # (22.22, 11.11)
    assert interior_margin(rho, FIG1B_DEMAND, servers) > 0  # rho in C^o (yet BF is unstable)


def test_fig1b_average_of_maximal_is_not_on_the_boundary() -> None:
    np.testing.assert_allclose(boundary_point(FIG1B_DEMAND, FIG1B_SERVER), [7 / 3, 1.0], rtol=1e-12)
    servers = _servers(FIG1B_SERVER, 10)
    v = boundary_point(FIG1B_DEMAND, servers)
    np.testing.assert_allclose(v, [70 / 3, 10.0], rtol=1e-12)
    assert capacity_scale(v, FIG1B_DEMAND, servers) == pytest.approx(1.034483, abs=1e-5)
    assert capacity_scale([7 / 3, 1.0], FIG1B_DEMAND, FIG1B_SERVER) == pytest.approx(30 / 29, rel=1e-9)


def test_capacity_scale_of_zero_workload_is_infinite() -> None:
    assert capacity_scale([0.0, 0.0], FIG1B_DEMAND, FIG1B_SERVER) == math.inf
    assert interior_margin([0.0, 0.0], FIG1B_DEMAND, FIG1B_SERVER) > 0


def test_proposition1_region() -> None:
    # Proposition 1 with k = 2 (§III, Fig. 1a): sizes 1/3 and 1, unit capacity: C = {x : x_1/3 + x_2 <= 1}
    demand = np.array([[1 / 3], [1.0]])
    assert enumerate_configurations(demand, [1.0]).tolist() == [[0, 0], [0, 1], [1, 0], [2, 0], [3, 0]]
    assert capacity_scale([1.25, 0.05], demand, [1.0]) == pytest.approx(1 / (1.25 / 3 + 0.05), rel=1e-9)


# ---------------------------------------------------------------------------------------------
# Google power-of-1/2 sizes (§VII-B; M = 512): enumeration is infeasible, fit checks are arithmetic


def test_google_max_jobs_is_512() -> None:
    assert max_jobs_per_server(GOOGLE_SIZES, np.ones((1000, 1))) == 512
    two_resources = np.column_stack([GOOGLE_SIZES, GOOGLE_SIZES])  # size s in both cpu and memory
    assert max_jobs_per_server(two_resources, np.ones((1000, 2))) == 512
    # the integer program itself (used when no type dominates) agrees
    k, value = capmod._knapsack_ilp(np.ones(10), two_resources, np.ones(2))
    assert value == pytest.approx(512) and k.sum() == 512


def test_google_enumeration_refuses() -> None:
    with pytest.raises(ScenarioError, match="too many to enumerate"):
        enumerate_configurations(GOOGLE_SIZES, [1.0], limit=10_000)


def test_google_capacity_scale_by_column_generation() -> None:
    # divisible sizes: Conv(K) = {x >= 0 : sum_p x_p 2^-p <= 1}, so t* = L / (rho . s)
    rho = np.arange(1.0, 11.0) * 10.0
    servers = np.ones((1000, 1))
    t = capacity_scale(rho, GOOGLE_SIZES, servers, limit=10_000)
    assert t == pytest.approx(1000 / (rho @ GOOGLE_SIZES), rel=1e-7)
    delta = interior_margin(rho, GOOGLE_SIZES, servers, limit=10_000)
    assert delta == pytest.approx((1000 - rho @ GOOGLE_SIZES) / GOOGLE_SIZES.sum(), rel=1e-7)


def test_column_generation_matches_enumeration_on_ec2() -> None:
    servers = np.vstack([_servers(EC2_SERVER, 3), [[60.0, 120.0, 4000.0]]])
    rho = np.array([3.0, 7.0, 2.0])
    exact = capacity_scale(rho, EC2_DEMAND, servers)
    assert capacity_scale(rho, EC2_DEMAND, servers, limit=1) == pytest.approx(exact, rel=1e-7)
    exact_margin = interior_margin(rho, EC2_DEMAND, servers)
    assert interior_margin(rho, EC2_DEMAND, servers, limit=1) == pytest.approx(exact_margin, rel=1e-7)


# ---------------------------------------------------------------------------------------------
# Lemma 1 product form (§V, eq. 9; a worked oracle)

LEMMA1_ORDER = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (4, 0), (5, 0)]
LEMMA1 = {
    1: (
        [0.02396, 0.13028, 0.35413, 0.03951, 0.21479, 0.03257, 0.17706, 0.01790, 0.00738, 0.00243],
        (0.76893, 1.23038),
    ),
    2: (
        [0.08434, 0.22925, 0.31158, 0.06952, 0.18899, 0.02866, 0.07790, 0.00787, 0.00162, 0.00027],
        (0.50307, 1.11930),
    ),
}


@pytest.mark.parametrize("num_servers", [1, 2])
def test_product_form_worked_oracle(num_servers: int) -> None:
    configs, probs = product_form_law(FIG1B_DEMAND, FIG1B_SERVER, [1.0, 2.0], [1.0, 1.0], [0.5, 1.0], num_servers)
    assert [tuple(r) for r in configs.tolist()] == LEMMA1_ORDER
    expected_probs, expected_mean = LEMMA1[num_servers]
    np.testing.assert_allclose(probs, expected_probs, atol=5e-6)
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(probs @ configs, expected_mean, atol=5e-6)


def test_product_form_detailed_balance_multiresource() -> None:
    # phi(k) r_j / L = phi(k + e_j) (k_j + 1) mu_j exp(-w_j) whenever k + e_j is feasible (the detailed balance behind Lemma 1)
    r, mu, w, n = np.array([1.5, 0.7, 2.0]), np.array([1.0, 0.5, 2.0]), np.array([0.3, 1.2, 0.0]), 3
    configs, probs = product_form_law(EC2_DEMAND, EC2_SERVER, r, mu, w, n)
    index = {tuple(k): i for i, k in enumerate(configs.tolist())}
    checked = 0
    for i, k in enumerate(configs.tolist()):
        for j in range(3):
            up = list(k)
            up[j] += 1
            if tuple(up) in index:
                lhs = probs[i] * r[j] / n
                rhs = probs[index[tuple(up)]] * up[j] * mu[j] * math.exp(-w[j])
                assert lhs == pytest.approx(rhs, rel=1e-10)
                checked += 1
    assert checked > 0


def test_product_form_zero_clock_rate() -> None:
    configs, probs = product_form_law(FIG1B_DEMAND, FIG1B_SERVER, [0.0, 2.0], [1.0, 1.0], [0.5, 1.0], 1)
    assert np.all(probs[configs[:, 0] > 0] == 0.0)
    assert probs.sum() == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------
# errors and tolerance


def test_type_that_does_not_fit_raises_naming_the_field() -> None:
    demand = np.vstack([EC2_DEMAND, [[10.0, 10.0, 6000.0]]])
    for call in (
        lambda: enumerate_configurations(demand, EC2_SERVER),
        lambda: max_jobs_per_server(demand, _servers(EC2_SERVER, 4)),
        lambda: capacity_scale([1.0, 1.0, 1.0, 1.0], demand, EC2_SERVER),
        lambda: boundary_point(demand, EC2_SERVER),
    ):
        with pytest.raises(ScenarioError) as info:
            call()
        assert info.value.field == "type_demand[3]"
        assert str(info.value).startswith("type_demand[3]:")


def test_too_many_configurations_raises() -> None:
    assert len(enumerate_configurations(EC2_DEMAND, EC2_SERVER, limit=28)) == 28
    with pytest.raises(ScenarioError, match="too many to enumerate"):
        enumerate_configurations(EC2_DEMAND, EC2_SERVER, limit=27)


def test_bad_inputs_raise_scenario_error() -> None:
    with pytest.raises(ScenarioError) as info:
        enumerate_configurations(EC2_DEMAND, [90.0, 90.0])
    assert info.value.field == "capacity"
    with pytest.raises(ScenarioError) as info:
        enumerate_configurations([[1.0, 0.0], [0.0, 0.0]], [1.0, 1.0])
    assert info.value.field == "type_demand[1]"
    with pytest.raises(ScenarioError) as info:
        capacity_scale([1.0, -1.0], FIG1B_DEMAND, FIG1B_SERVER)
    assert info.value.field == "rho"
    with pytest.raises(ScenarioError) as info:
        product_form_law(FIG1B_DEMAND, FIG1B_SERVER, [1.0, 1.0], [1.0, 0.0], [0.0, 0.0], 1)
    assert info.value.field == "mu"


def test_tolerance_accepts_exact_fills() -> None:
    assert enumerate_configurations([[0.2]], [1.0])[:, 0].tolist() == [0, 1, 2, 3, 4, 5]
    assert enumerate_configurations([[0.1]], [1.0])[:, 0].max() == 10
    assert enumerate_configurations([[0.1]], [0.3])[:, 0].max() == 3  # 3 * 0.1 = 0.30000000000000004
    k = enumerate_configurations([[0.1, 0.3], [0.2, 0.1]], [0.6, 0.9])
    assert [2, 2] in k.tolist() and [0, 3] in k.tolist()


# ---------------------------------------------------------------------------------------------
# properties

_grid = st.integers(min_value=1, max_value=12).map(lambda i: i / 10)  # 0.1 .. 1.2


@st.composite
def _instances(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Small (type_demand (J, R), capacity (R,)) with every type fitting; entries on a 0.1 grid."""
    j_count = draw(st.integers(1, 3))
    r_count = draw(st.integers(1, 3))
    cap = np.array([draw(st.integers(5, 20)) / 10 for _ in range(r_count)])
    demand = np.zeros((j_count, r_count))
    for j in range(j_count):
        for r in range(r_count):
            zero = r_count > 1 and draw(st.booleans()) and draw(st.booleans())
            demand[j, r] = 0.0 if zero else min(draw(_grid), cap[r])
        if not np.any(demand[j] > 0):
            demand[j, 0] = min(0.1 * draw(st.integers(1, 5)), cap[0])
    return demand, cap


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_instances())
def test_enumeration_is_exactly_the_feasible_set(instance: tuple[np.ndarray, np.ndarray]) -> None:
    demand, cap = instance
    k = enumerate_configurations(demand, cap)
    # every enumerated configuration is feasible, sorted, unique, starting at 0
    assert _feasible(k, demand, cap).all()
    assert k[0].tolist() == [0] * demand.shape[0]
    assert [tuple(r) for r in k.tolist()] == sorted(set(tuple(r) for r in k.tolist()))
    # every feasible vector of a box containing K is enumerated (box: k_j <= max cap / min demand)
    side = int(np.ceil(cap.max() / demand[demand > 0].min())) + 1
    box = np.array(list(itertools.product(range(side + 1), repeat=demand.shape[0])))
    brute = box[_feasible(box, demand, cap)]
    assert {tuple(r) for r in brute.tolist()} == {tuple(r) for r in k.tolist()}
    # maximal ones admit no extra job; every other feasible one admits one
    maximal = maximal_configurations(k, demand, cap)
    maximal_set = {tuple(r) for r in maximal.tolist()}
    for row in k:
        extendable = any(_feasible(row + np.eye(len(row), dtype=np.int64)[j], demand, cap)[0] for j in range(len(row)))
        assert extendable != (tuple(row.tolist()) in maximal_set)
    # M by the integer program / dominance argument equals the enumerated maximum
    assert max_jobs_per_server(demand, cap) == k.sum(axis=1).max()
    # the average of the maximal configurations lies in C, so t* >= 1
    v = boundary_point(demand, cap)
    np.testing.assert_allclose(v, maximal.mean(axis=0))
    assert capacity_scale(v, demand, cap) >= 1 - 1e-9


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _instances(),
    st.lists(st.integers(0, 30), min_size=3, max_size=3),
    st.integers(1, 3),
    st.integers(0, 2),
)
def test_interior_margin_sign_agrees_with_capacity_scale(
    instance: tuple[np.ndarray, np.ndarray], raw_rho: list[int], n_servers: int, n_bigger: int
) -> None:
    demand, cap = instance
    servers = np.vstack([_servers(cap, n_servers), _servers(cap * 1.5, n_bigger)])
    rho = np.array(raw_rho[: demand.shape[0]], dtype=float) / 10
    assume(np.any(rho > 0))
    t = capacity_scale(rho, demand, servers)
    assume(abs(t - 1) > 1e-6)
    delta = interior_margin(rho, demand, servers)
    assert (delta > 0) == (t > 1)
    # column generation (used when K is too large to enumerate) reaches the same optimum
    assert capacity_scale(rho, demand, servers, limit=1) == pytest.approx(t, rel=1e-7)
    # t* rho is on the boundary of C: its margin is 0
    assert interior_margin(t * rho, demand, servers) == pytest.approx(0.0, abs=1e-7 * max(1.0, t * rho.max()))
