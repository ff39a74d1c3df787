"""Tests of clustergym.workloads: distributions, Poisson/slotted/replay sources, spec parsing.

Statistical checks use fixed seeds and a 5-sigma CLT tolerance: an estimate of a
mean ``m`` from ``n`` i.i.d. draws with variance ``v`` must lie within
``5 * sqrt(v / n)`` of ``m``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustergym.errors import ScenarioError, TraceFormatError
from clustergym.workloads import (
    ArrivalChunk,
    ArrivalSource,
    Deterministic,
    DiscreteDemand,
    Empirical,
    Exponential,
    FixedDemand,
    Geometric,
    IndependentDemand,
    LogNormal,
    PoissonSource,
    PoissonTypedSource,
    ReplaySource,
    SlottedSource,
    TimeScaled,
    TruncatedNormalDemand,
    UniformDemand,
    demand_from_spec,
    service_from_spec,
)

N = 100_000


def assert_mean(samples: np.ndarray, mean: float, var: float) -> None:
    n = samples.shape[0]
    tol = 5.0 * math.sqrt(var / n) + 1e-12
    assert abs(float(samples.mean()) - mean) <= tol, (float(samples.mean()), mean, tol)


def take(source, rng: np.random.Generator, n_chunks: int) -> list[ArrivalChunk]:
    out = []
    for chunk in source.chunks(rng):
        out.append(chunk)
        if len(out) == n_chunks:
            break
    return out


def concat(chunks: list[ArrivalChunk]) -> dict[str, np.ndarray]:
    return {
        f: np.concatenate([getattr(c, f) for c in chunks])
        for f in ("time", "demand", "type", "work", "weight", "reward_rate")
    }


def chunks_equal(a: list[ArrivalChunk], b: list[ArrivalChunk]) -> bool:
    ca, cb = concat(a), concat(b)
    return all(np.array_equal(ca[k], cb[k]) for k in ca)


# ------------------------------------------------------------------ service distributions


@pytest.mark.parametrize(
    "dist",
    [Exponential(2.5), Deterministic(3.0), LogNormal(2.0, 0.8), Empirical([1.0, 2.0, 7.5]), Geometric(0.1)],
    ids=lambda d: d.name,
)
def test_service_sample_mean_and_shape(dist):
    x = dist.sample(np.random.default_rng(11), N)
    assert x.shape == (N,) and x.dtype == np.float64
    assert np.all(x > 0)
    assert_mean(x, dist.mean, dist.variance)
    # second moment check for the variance formula (loose: 5 sigma of the sample variance is wide)
    if dist.variance > 0 and not isinstance(dist, LogNormal):
        assert abs(x.var() / dist.variance - 1.0) < 0.05


def test_lognormal_is_parameterised_by_its_mean():
    d = LogNormal(4.0, 1.0)
    assert d.mean == 4.0
    assert math.isclose(d.mu, math.log(4.0) - 0.5)
    assert math.isclose(d.variance, math.expm1(1.0) * 16.0)


def test_geometric_support_and_pmf():
    p = 0.25
    x = Geometric(p).sample(np.random.default_rng(3), N)
    assert np.all(x >= 1) and np.all(x == np.floor(x))
    frac1 = float(np.mean(x == 1))
    assert abs(frac1 - p) <= 5 * math.sqrt(p * (1 - p) / N)
    assert Geometric(p).integer_valued and not Exponential(1.0).integer_valued
    assert Deterministic(100).integer_valued and not Deterministic(2.5).integer_valued
    assert Empirical([1, 2]).integer_valued and not Empirical([1, 2.5]).integer_valued


def test_empirical_resamples_only_its_values():
    x = Empirical([1.0, 5.0]).sample(np.random.default_rng(0), 1000)
    assert set(np.unique(x)) == {1.0, 5.0}


# ------------------------------------------------------------------ demand distributions


def test_fixed_demand():
    d = FixedDemand([0.2, 0.3])
    x, t = d.sample_typed(np.random.default_rng(0), 5)
    assert x.shape == (5, 2) and np.all(x == [0.2, 0.3]) and np.all(t == 0)
    assert d.discrete and d.num_types == 1


def test_uniform_demand_mean_and_bounds():
    d = UniformDemand([0.01, 0.1], [0.19, 0.9])
    x = d.sample(np.random.default_rng(5), N)
    assert x.shape == (N, 2)
    assert np.all(x >= d.low) and np.all(x <= d.high)
    var = (d.high - d.low) ** 2 / 12
    for r in range(2):
        assert_mean(x[:, r], d.mean[r], var[r])
    assert not d.discrete and d.num_types == 1


def test_discrete_demand_frequencies_and_types():
    values = [[0.2], [0.5], [0.9]]
    probs = [0.5, 0.3, 0.2]
    d = DiscreteDemand(values, probs)
    x, t = d.sample_typed(np.random.default_rng(9), N)
    assert x.shape == (N, 1) and t.dtype == np.int64
    assert np.array_equal(x[:, 0], np.array([0.2, 0.5, 0.9])[t])
    for j, p in enumerate(probs):
        assert abs(np.mean(t == j) - p) <= 5 * math.sqrt(p * (1 - p) / N)
    assert np.array_equal(d.type_of(x), t)
    assert np.allclose(d.mean, [0.2 * 0.5 + 0.5 * 0.3 + 0.9 * 0.2])


def test_discrete_demand_zero_probability_never_drawn():
    d = DiscreteDemand([[0.1], [0.2], [0.3]], [0.3, 0.7, 0.0])
    _, t = d.sample_typed(np.random.default_rng(1), N)
    assert not np.any(t == 2)


def test_truncated_normal_demand_lotes():
    loc = np.array([0.025, 0.04, 0.5])
    d = TruncatedNormalDemand(loc)  # cv 0.5, [0, 1]
    x = d.sample(np.random.default_rng(21), N)
    assert x.shape == (N, 3) and np.all(x >= 0) and np.all(x <= 1)
    # LoTES Sec. 5.4 truncation: the realised mean is about 1.0276 r when the lower cut is at -2 sigma
    assert np.allclose(d.mean[:2] / loc[:2], 1.0276, atol=5e-4)
    assert math.isclose(d.mean[2], 0.5, abs_tol=1e-9)  # symmetric truncation
    for r in range(3):
        assert_mean(x[:, r], d.mean[r], (0.5 * loc[r]) ** 2)
    assert np.array_equal(d.loc, loc)


def test_truncated_normal_degenerate_resource():
    d = TruncatedNormalDemand([0.0, 0.3], cv=0.5)
    x = d.sample(np.random.default_rng(0), 100)
    assert np.all(x[:, 0] == 0.0) and np.all(x[:, 1] > 0)


def test_independent_demand():
    d = IndependentDemand([Exponential(0.1), UniformDemand([0.2], [0.4])])
    x = d.sample(np.random.default_rng(2), N)
    assert x.shape == (N, 2)
    assert_mean(x[:, 0], 0.1, 0.01)
    assert_mean(x[:, 1], 0.3, 0.2**2 / 12)
    assert np.allclose(d.mean, [0.1, 0.3])


# ------------------------------------------------------------------ specs


@pytest.mark.parametrize(
    "dist",
    [Exponential(2.0), Deterministic(100), LogNormal(1.0, 0.5), Empirical([1.0, 3.0]), Geometric(0.01)],
    ids=lambda d: d.name,
)
def test_service_spec_round_trip(dist):
    assert service_from_spec(dist.to_spec(), "s") == dist


@pytest.mark.parametrize(
    "dist",
    [
        FixedDemand([0.1, 0.2]),
        UniformDemand([0.1, 0.0], [0.9, 0.5]),
        DiscreteDemand([[0.4, 0.1], [0.6, 0.2]], [0.25, 0.75]),
        TruncatedNormalDemand([0.02, 0.03], cv=0.4, low=0.0, high=[1.0, 0.5]),
        IndependentDemand([Exponential(0.1), Geometric(0.5)]),
    ],
    ids=lambda d: d.name,
)
def test_demand_spec_round_trip(dist):
    assert demand_from_spec(dist.to_spec(), "d", dist.num_resources) == dist


def test_spec_conveniences():
    assert service_from_spec({"dist": "geometric", "mean": 100}, "s") == Geometric(0.01)
    d = demand_from_spec({"dist": "discrete", "values": [0.4, 0.6]}, "d", 1)
    assert d.values.shape == (2, 1) and np.allclose(d.probs, 0.5)
    u = demand_from_spec({"dist": "uniform", "low": 0.1, "high": 0.9}, "d", 1)
    assert np.allclose(u.mean, [0.5])


SERVICE_ERRORS = [
    ({"dist": "weibull", "k": 1}, "w.service.dist", "unknown distribution 'weibull'"),
    ({"mean": 1.0}, "w.service.dist", "missing"),
    ("exponential", "w.service", "mapping"),
    ({"dist": "exponential"}, "w.service.mean", "missing"),
    ({"dist": "exponential", "mean": "fast"}, "w.service.mean", "expected a number"),
    ({"dist": "exponential", "mean": "1e-3"}, "w.service.mean", "expected a number"),
    ({"dist": "exponential", "mean": True}, "w.service.mean", "expected a number"),
    ({"dist": "exponential", "mean": 0.0}, "w.service.mean", "> 0"),
    ({"dist": "exponential", "mean": float("inf")}, "w.service.mean", "finite"),
    ({"dist": "exponential", "mean": 1.0, "sigma": 2}, "w.service.sigma", "unknown parameter"),
    ({"dist": "deterministic", "value": -1}, "w.service.value", "> 0"),
    ({"dist": "lognormal", "mean": 1.0}, "w.service.sigma", "missing"),
    ({"dist": "lognormal", "mean": 1.0, "sigma": -0.1}, "w.service.sigma", ">= 0"),
    ({"dist": "empirical", "values": []}, "w.service.values", "non-empty"),
    ({"dist": "empirical", "values": [1.0, 0.0]}, "w.service.values[1]", "> 0"),
    ({"dist": "empirical", "values": 3.0}, "w.service.values", "list"),
    ({"dist": "geometric", "p": 1.5}, "w.service.p", "<= 1"),
    ({"dist": "geometric", "p": 0}, "w.service.p", "> 0"),
    ({"dist": "geometric"}, "w.service.p", "exactly one"),
    ({"dist": "geometric", "p": 0.5, "mean": 2}, "w.service.p", "exactly one"),
    ({"dist": "geometric", "mean": 0.5}, "w.service.mean", ">= 1"),
]


@pytest.mark.parametrize("spec,field,problem", SERVICE_ERRORS)
def test_service_spec_errors_name_the_field(spec, field, problem):
    with pytest.raises(ScenarioError) as info:
        service_from_spec(spec, "w.service")
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")
    assert problem in str(info.value)


DEMAND_ERRORS = [
    ({"dist": "gamma"}, "w.demand.dist", "unknown distribution 'gamma'; expected one of fixed, uniform"),
    ({"dist": "fixed"}, "w.demand.vector", "missing"),
    ({"dist": "fixed", "vector": [0.1]}, "w.demand.vector", "expected 2 numbers (one per resource), got 1"),
    ({"dist": "fixed", "vector": [0.1, -0.2]}, "w.demand.vector[1]", ">= 0"),
    ({"dist": "fixed", "vector": [0.1, "x"]}, "w.demand.vector[1]", "expected a number"),
    ({"dist": "fixed", "vector": 0.1}, "w.demand.vector", "single number"),
    ({"dist": "uniform", "low": [0.1, 0.1], "high": [0.9]}, "w.demand.high", "expected 2 numbers"),
    ({"dist": "uniform", "low": [0.1, 0.5], "high": [0.9, 0.4]}, "w.demand.high[1]", "must be >= low[1]"),
    ({"dist": "uniform", "low": [0.1, float("nan")], "high": [0.9, 0.4]}, "w.demand.low[1]", "finite"),
    ({"dist": "discrete", "values": [[0.4, 0.1], [0.6, 0.2]], "probs": [0.5, 0.4]}, "w.demand.probs", "sum to 1"),
    ({"dist": "discrete", "values": [[0.4, 0.1], [0.6, 0.2]], "probs": [0.5]}, "w.demand.probs", "expected 2 numbers"),
    ({"dist": "discrete", "values": [[0.4, 0.1], [0.6, 0.2]], "probs": [1.5, -0.5]}, "w.demand.probs[1]", ">= 0"),
    ({"dist": "discrete", "values": [[0.4, 0.1], [0.6]]}, "w.demand.values[1]", "expected 2 numbers"),
    ({"dist": "discrete", "values": []}, "w.demand.values", "at least one row"),
    ({"dist": "discrete", "values": [[0.4, 0.1], [0.6, -1]]}, "w.demand.values[1][1]", ">= 0"),
    ({"dist": "truncated_normal", "mean": [0.1, 0.2], "cv": -1}, "w.demand.cv", ">= 0"),
    ({"dist": "truncated_normal", "mean": [0.1, 2.0]}, "w.demand.mean[1]", "must lie in [low, high]"),
    ({"dist": "truncated_normal", "mean": [0.1, 0.2], "low": 0.5, "high": 0.5}, "w.demand.high", "must be > low"),
    ({"dist": "truncated_normal", "mean": [0.1, 0.2], "high": [1.0]}, "w.demand.high", "expected 2 numbers"),
    ({"dist": "truncated_normal", "mean": [0.1, 0.2], "sd": 1}, "w.demand.sd", "unknown parameter"),
    ({"dist": "independent", "components": [{"dist": "exponential", "mean": 1}]}, "w.demand.components", "expected 2"),
    (
        {"dist": "independent", "components": [{"dist": "exponential", "mean": 1}, {"dist": "pareto"}]},
        "w.demand.components[1].dist",
        "unknown distribution 'pareto'",
    ),
    (
        {
            "dist": "independent",
            "components": [{"dist": "exponential", "mean": 1}, {"dist": "uniform", "low": [0.1, 0.2], "high": [1, 1]}],
        },
        "w.demand.components[1].low",
        "expected 1 numbers",
    ),
    (
        {
            "dist": "independent",
            "components": [{"dist": "exponential", "mean": -1}, {"dist": "exponential", "mean": 1}],
        },
        "w.demand.components[0].mean",
        "> 0",
    ),
]


@pytest.mark.parametrize("spec,field,problem", DEMAND_ERRORS)
def test_demand_spec_errors_name_the_field(spec, field, problem):
    with pytest.raises(ScenarioError) as info:
        demand_from_spec(spec, "w.demand", 2)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")
    assert problem in str(info.value)


# ------------------------------------------------------------------ Poisson sources


def ec2_source(**kw) -> PoissonTypedSource:
    return PoissonTypedSource(
        [2.0, 11.0, 2.0],
        [[15, 8, 1690], [17.1, 6.5, 420], [7, 20, 1690]],
        [Exponential(1.0), Exponential(2.0), Deterministic(0.5)],
        weights=[1.0, 2.0, 3.0],
        reward_rates=[0.5, 1.0, 1.5],
        names=["std", "highmem", "highcpu"],
        **kw,
    )


def test_typed_poisson_rates_types_and_work():
    src = ec2_source(chunk_size=8192)
    assert isinstance(src, ArrivalSource)
    c = concat(take(src, np.random.default_rng(42), 8))
    T = float(c["time"][-1])
    n = c["time"].shape[0]
    total = 15.0
    # N jobs at the n-th arrival epoch T: T ~ Gamma(n, total), mean n/total, sd sqrt(n)/total
    assert abs(T - n / total) <= 5 * math.sqrt(n) / total
    p = src.rates / total
    for j in range(3):
        mask = c["type"] == j
        assert abs(mask.mean() - p[j]) <= 5 * math.sqrt(p[j] * (1 - p[j]) / n)
        assert np.all(c["demand"][mask] == src.type_demand[j])
        assert np.all(c["weight"][mask] == [1.0, 2.0, 3.0][j])
        assert np.all(c["reward_rate"][mask] == [0.5, 1.0, 1.5][j])
        dist = src.services[j]
        assert_mean(c["work"][mask], dist.mean, dist.variance)
    gaps = np.diff(c["time"])
    assert_mean(gaps, 1 / total, 1 / total**2)
    assert src.types.exact and src.types.names == ("std", "highmem", "highcpu")
    assert np.allclose(src.types.mean_work, [1.0, 2.0, 0.5])
    assert np.array_equal(src.arrival_rates(), [2.0, 11.0, 2.0])


def test_typed_poisson_sample_work():
    src = ec2_source()
    rng = np.random.default_rng(0)
    x = np.array([src.sample_work(1, rng) for _ in range(4000)])
    assert_mean(x, 2.0, 4.0)
    assert src.sample_work(2, rng) == 0.5
    with pytest.raises(ValueError):
        src.sample_work(3, rng)


def test_typed_poisson_determinism():
    src = ec2_source(chunk_size=500)
    a = take(src, np.random.default_rng(7), 3)
    b = take(src, np.random.default_rng(7), 3)
    c = take(src, np.random.default_rng(8), 3)
    assert chunks_equal(a, b)
    assert not np.array_equal(concat(a)["time"], concat(c)["time"])
    assert all(len(ch) == 500 for ch in a)


def test_typed_poisson_validation():
    with pytest.raises(ScenarioError, match=r"^rates\[1\]: "):
        PoissonTypedSource([1.0, -1.0], [[1], [2]], Exponential(1))
    with pytest.raises(ScenarioError, match=r"^type_demand: expected 2 rows"):
        PoissonTypedSource([1.0, 1.0], [[1]], Exponential(1))
    with pytest.raises(ScenarioError, match=r"^service: "):
        PoissonTypedSource([1.0, 1.0], [[1], [2]], [Exponential(1)])
    with pytest.raises(ScenarioError, match=r"^names: "):
        PoissonTypedSource([1.0], [[1]], Exponential(1), names=["a", "b"])
    # zero total rate: no arrivals at all
    assert take(PoissonTypedSource([0.0], [[1]], Exponential(1)), np.random.default_rng(0), 1) == []


def test_poisson_source_continuous_and_discrete():
    cont = PoissonSource(3.0, UniformDemand([0.1], [0.9]), LogNormal(2.0, 0.5), weight=2.0)
    c = concat(take(cont, np.random.default_rng(1), 5))
    assert np.all(c["type"] == 0) and np.all(c["weight"] == 2.0)
    assert not cont.types.exact and cont.types.num_types == 1
    assert np.allclose(cont.types.demand, [[0.5]]) and np.allclose(cont.types.mean_work, [2.0])
    assert_mean(c["work"], 2.0, LogNormal(2.0, 0.5).variance)
    assert np.allclose(cont.arrival_rates(), [3.0])

    disc = PoissonSource(0.014, DiscreteDemand([[0.4], [0.6]]), Geometric(0.01))
    c = concat(take(disc, np.random.default_rng(1), 3))
    assert np.array_equal(c["demand"][:, 0], np.array([0.4, 0.6])[c["type"]])
    assert disc.types.exact and disc.types.num_types == 2
    assert np.allclose(disc.arrival_rates(), [0.007, 0.007])


# ------------------------------------------------------------------ slotted


def test_slotted_counts_per_slot_are_poisson():
    lam = 2.5
    src = SlottedSource(lam, UniformDemand([0.1], [0.9]), Geometric(0.01), slot=1.0, chunk_size=20000)
    c = concat(take(src, np.random.default_rng(5), 2))
    slots = c["time"]
    assert np.all(slots == np.floor(slots))
    K = int(slots[-1])  # slots 0 .. K-1 are complete
    counts = np.bincount(slots[slots < K].astype(np.int64), minlength=K)
    assert_mean(counts.astype(float), lam, lam)  # Poisson: mean = variance = lam
    assert abs(counts.var() / lam - 1) < 5 * math.sqrt(2 / K) + 0.02
    assert abs(np.mean(counts == 0) - math.exp(-lam)) <= 5 * math.sqrt(math.exp(-lam) / K)


def test_slotted_times_work_and_slot_length():
    slot = 0.5
    src = SlottedSource(
        0.3, DiscreteDemand([[0.2], [0.5]], [2 / 3, 1 / 3]), Deterministic(100), slot=slot, chunk_size=1000
    )
    c = concat(take(src, np.random.default_rng(2), 3))
    k = c["time"] / slot
    assert np.all(k == np.round(k)) and np.all(np.diff(c["time"]) >= 0)
    assert np.all(c["work"] == 100 * slot)
    assert np.allclose(src.types.mean_work, [50.0, 50.0])
    assert np.allclose(src.arrival_rates(), [0.3 / slot * 2 / 3, 0.3 / slot / 3])
    geo = SlottedSource(0.014, FixedDemand([0.4]), Geometric(0.01), chunk_size=4096)
    c = concat(take(geo, np.random.default_rng(2), 3))
    assert np.all(c["work"] >= 1) and np.all(c["work"] == np.floor(c["work"]))
    assert_mean(c["work"], 100.0, Geometric(0.01).variance)
    # sparse arrivals: 4096 jobs span about 4096 / 0.014 ~ 2.9e5 slots, in one chunk
    assert abs(c["time"][-1] - 3 * 4096 / 0.014) <= 5 * math.sqrt(3 * 4096) / 0.014


def test_slotted_rejects_non_integer_service():
    with pytest.raises(ScenarioError, match=r"^service: .*whole number of slots"):
        SlottedSource(1.0, FixedDemand([0.5]), Exponential(100.0))
    with pytest.raises(ScenarioError, match=r"^slot: "):
        SlottedSource(1.0, FixedDemand([0.5]), Geometric(0.5), slot=0)


def test_slotted_determinism():
    src = SlottedSource(1.0, UniformDemand([0.1], [0.9]), Geometric(0.1), chunk_size=300)
    assert chunks_equal(take(src, np.random.default_rng(3), 3), take(src, np.random.default_rng(3), 3))
    assert not chunks_equal(take(src, np.random.default_rng(3), 3), take(src, np.random.default_rng(4), 3))


# ------------------------------------------------------------------ replay


def small_table() -> dict:
    return dict(
        time=[0.0, 5.0, 2.0, 2.0, 9.0],
        demand=[[0.5, 0.1], [0.25, 0.5], [0.5, 0.2], [1.0, 1.0], [0.125, 0.1]],
        work=[1.0, 2.0, 3.0, 4.0, 5.0],
        type=[1, 2, 1, 0, 3],
    )


def test_replay_sorts_stably_and_replays_everything():
    src = ReplaySource(**small_table(), source="t.csv", chunk_size=2)
    assert src.reordered
    assert np.array_equal(src.rows, [0, 2, 3, 1, 4])  # ties (rows 2 and 3) keep table order
    chunks = list(src.chunks(np.random.default_rng(0)))
    assert [len(c) for c in chunks] == [2, 2, 1]
    c = concat(chunks)
    assert np.array_equal(c["time"], [0, 2, 2, 5, 9])
    assert np.array_equal(c["work"], [1, 3, 4, 2, 5])
    assert np.array_equal(c["type"], [1, 1, 0, 2, 3])
    assert src.arrival_rates() is None
    assert isinstance(src, ArrivalSource)
    assert list(src.chunks(np.random.default_rng(0)))[0].time.tolist() == [0.0, 2.0]  # replayable


def test_replay_types():
    src = ReplaySource(**small_table())
    assert src.types.num_types == 4
    assert np.allclose(src.types.demand, [[1.0, 1.0], [0.5, 0.2], [0.25, 0.5], [0.125, 0.1]])
    assert np.allclose(src.types.mean_work, [4.0, 2.0, 2.0, 5.0])
    assert not src.types.exact
    td = [[1, 1], [0.5, 0.25], [0.25, 0.5], [0.125, 0.125], [0.0625, 0.0625]]
    src2 = ReplaySource(**small_table(), type_demand=td)
    assert src2.types.num_types == 5 and np.allclose(src2.types.demand, td)
    assert src2.types.mean_work[4] == pytest.approx(3.0)  # no jobs: overall mean
    one = ReplaySource([0, 1], [[0.5], [0.5]], [1, 3])
    assert one.types.num_types == 1 and one.types.exact and np.allclose(one.types.mean_work, [2.0])


def test_replay_sample_work_is_exponential_with_type_mean():
    src = ReplaySource(**small_table())
    rng = np.random.default_rng(4)
    x = np.array([src.sample_work(3, rng) for _ in range(4000)])
    assert_mean(x, 5.0, 25.0)


def bad(**changes):
    t = small_table()
    t.update(changes)
    return t


REPLAY_ERRORS = [
    (bad(time=[0.0, 5.0, np.nan, 2.0, 9.0]), 2, "time", "finite"),
    (bad(time=[0.0, 5.0, 2.0, -2.0, 9.0]), 3, "time", ">= 0"),
    (bad(time=[0.0, np.inf, 2.0, 2.0, 9.0]), 1, "time", "finite"),
    (bad(work=[1.0, 2.0, 3.0, 0.0, 5.0]), 3, "work", "> 0"),
    (bad(work=[1.0, 2.0, 3.0, 4.0, np.nan]), 4, "work", "> 0"),
    (bad(work=[1.0, -2.0, 3.0, 4.0, 5.0]), 1, "work", "> 0"),
    (bad(demand=[[0.5, 0.1], [0.25, 0.5], [0.5, -0.2], [1.0, 1.0], [0.125, 0.1]]), 2, "demand[1]", ">= 0"),
    (bad(demand=[[0.5, 0.1], [0.25, 0.5], [0.5, 0.2], [np.nan, 1.0], [0.125, 0.1]]), 3, "demand[0]", "finite"),
    (bad(demand=[[0.5, 0.1], [0.25, 0.5], [0.5, 0.2], [1.0], [0.125, 0.1]]), 3, "demand", "expected 2 demand values"),
    (bad(type=[1, 2, -1, 0, 3]), 2, "type", "whole number >= 0"),
    (bad(type=[1, 2, 1, 0.5, 3]), 3, "type", "whole number >= 0"),
    (bad(type_demand=[[1, 1], [1, 1], [1, 1]]), 4, "type", "out of range [0, 3)"),
    (bad(weight=[1, 1, 1, -1, 1]), 3, "weight", ">= 0"),
    (bad(reward_rate=[1, np.nan, 1, 1, 1]), 1, "reward_rate", "finite"),
    (bad(time=[0.0, "soon", 2.0, 2.0, 9.0]), 1, "time", "not a number: 'soon'"),
    (bad(type=[1, 2, 1, 0, 10**12]), 4, "type", "remap the types"),
]


@pytest.mark.parametrize("table,row,column,problem", REPLAY_ERRORS)
def test_replay_errors_name_source_row_and_column(table, row, column, problem):
    with pytest.raises(TraceFormatError) as info:
        ReplaySource(**table, source="jobs.csv")
    msg = str(info.value)
    assert msg.startswith(f"jobs.csv: row {row}, column '{column}': "), msg
    assert problem in msg


def test_replay_wrong_width_and_shapes():
    with pytest.raises(TraceFormatError, match=r"^jobs\.csv: row 0, column 'demand': expected 3 demand values"):
        ReplaySource(**small_table(), num_resources=3, source="jobs.csv")
    with pytest.raises(TraceFormatError, match=r"^jobs\.csv: type_demand: expected 2 numbers per row"):
        ReplaySource(**small_table(), type_demand=[[1], [1], [1], [1]], source="jobs.csv")
    with pytest.raises(TraceFormatError, match=r"^jobs\.csv: column 'work': has 4 rows, expected 5"):
        ReplaySource(**bad(work=[1, 2, 3, 4]), source="jobs.csv")
    with pytest.raises(TraceFormatError, match=r"^jobs\.csv: the job table is empty"):
        ReplaySource([], [], [], source="jobs.csv")


def test_replay_from_frame():
    df = pd.DataFrame(
        {
            "arrival": [3.0, 1.0, 2.0],
            "cpu": [0.5, 0.25, 0.125],
            "mem": [0.1, 0.2, 0.3],
            "duration": [10.0, 20.0, 30.0],
            "cls": [0, 1, 1],
        }
    )
    src = ReplaySource.from_frame(df, ["cpu", "mem"], type="cls", source="g.csv")
    c = concat(list(src.chunks(np.random.default_rng(0))))
    assert np.array_equal(c["time"], [1, 2, 3]) and np.array_equal(c["work"], [20, 30, 10])
    assert np.array_equal(c["demand"], [[0.25, 0.2], [0.125, 0.3], [0.5, 0.1]])
    assert src.num_resources == 2 and src.types.num_types == 2

    bad_df = df.assign(mem=[0.1, -0.2, 0.3])
    with pytest.raises(TraceFormatError, match=r"^g\.csv: row 1, column 'mem': demand must be finite and >= 0"):
        ReplaySource.from_frame(bad_df, ["cpu", "mem"], source="g.csv")
    with pytest.raises(TraceFormatError, match=r"^g\.csv: row 2, column 'duration': not a number: 'long'"):
        ReplaySource.from_frame(df.assign(duration=[1, 2, "long"]), ["cpu", "mem"], source="g.csv")
    with pytest.raises(TraceFormatError, match=r"^g\.csv: row 0, column 'arrival': "):
        ReplaySource.from_frame(df.assign(arrival=[np.nan, 1.0, 2.0]), ["cpu"], source="g.csv")
    with pytest.raises(TraceFormatError, match=r"^g\.csv: missing column 'disk'"):
        ReplaySource.from_frame(df, ["cpu", "disk"], source="g.csv")


# ------------------------------------------------------------------ TimeScaled


def test_time_scaled_replay_and_poisson():
    base = ReplaySource(**small_table())
    scaled = TimeScaled(base, 2.0)
    a = concat(list(base.chunks(np.random.default_rng(0))))
    b = concat(list(scaled.chunks(np.random.default_rng(0))))
    assert np.array_equal(b["time"], 2.0 * a["time"])
    assert np.array_equal(b["work"], a["work"]) and np.array_equal(b["demand"], a["demand"])
    assert scaled.arrival_rates() is None and scaled.types is base.types
    assert scaled.num_resources == 2 and isinstance(scaled, ArrivalSource)

    src = ec2_source(chunk_size=100)
    half = TimeScaled(src, 0.5)  # traffic scaling 1/alpha = 2
    assert np.allclose(half.arrival_rates(), 2 * src.arrival_rates())
    x = concat(take(src, np.random.default_rng(1), 2))
    y = concat(take(half, np.random.default_rng(1), 2))
    assert np.allclose(y["time"], 0.5 * x["time"]) and np.array_equal(y["work"], x["work"])
    with pytest.raises(ScenarioError, match=r"^factor: "):
        TimeScaled(src, 0.0)


# ------------------------------------------------------------------ property: time order across chunks


def make_source(kind: int, chunk: int, rate: float):
    if kind == 0:
        return PoissonTypedSource([rate, 2 * rate], [[0.1], [0.2]], Exponential(1.0), chunk_size=chunk)
    if kind == 1:
        return PoissonSource(rate, TruncatedNormalDemand([0.3]), Exponential(1.0), chunk_size=chunk)
    if kind == 2:
        return SlottedSource(rate, DiscreteDemand([[0.4], [0.6]]), Geometric(0.5), chunk_size=chunk)
    times = np.random.default_rng(int(rate * 1000)).exponential(1.0, 40)
    return TimeScaled(ReplaySource(times, np.full((40, 1), 0.5), np.ones(40), chunk_size=chunk), 1.0 / rate)


@settings(max_examples=60, deadline=None)
@given(
    kind=st.integers(0, 3),
    chunk=st.integers(1, 17),
    rate=st.floats(0.01, 50.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_times_non_decreasing_across_chunks(kind, chunk, rate, seed):
    src = make_source(kind, chunk, rate)
    last = -np.inf
    chunks = take(src, np.random.default_rng(seed), 6)
    assert chunks
    for c in chunks:
        assert len(c) >= 1
        assert c.time[0] >= last
        assert np.all(np.diff(c.time) >= 0)
        assert c.demand.shape == (len(c), src.num_resources)
        assert c.type.dtype == np.int64 and np.all((c.type >= 0) & (c.type < src.types.num_types))
        assert np.all(c.work > 0)
        last = c.time[-1]
