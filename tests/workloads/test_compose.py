"""PrefixedSource: a fixed job table merged into another stream (clustergym/workloads/compose.py)."""

from __future__ import annotations

import numpy as np
import pytest

from clustergym.errors import ScenarioError
from clustergym.runner import run_episode
from clustergym.scenarios import Scenario
from clustergym.workloads import (
    Exponential,
    PoissonTypedSource,
    PrefixedSource,
    ReplaySource,
)

SIZES = [[2.0], [5.0]]


def _collect(source, seed=0, limit=5000):
    rng = np.random.default_rng(seed)
    rows = {k: [] for k in ("time", "type", "work", "demand")}
    n = 0
    for chunk in source.chunks(rng):
        for k, col in rows.items():
            col.append(getattr(chunk, k))
        n += len(chunk)
        if n >= limit:
            break
    return {k: np.concatenate(v) for k, v in rows.items()}


def _prefix(times, types, works):
    return ReplaySource(
        np.asarray(times, float),
        np.asarray(SIZES)[np.asarray(types)][:, 0],
        np.asarray(works, float),
        type=types,
        type_demand=SIZES,
    )


def test_prefix_at_time_zero_comes_first_and_stream_is_unchanged():
    then = PoissonTypedSource([2.0, 1.0], SIZES, Exponential(1.0), chunk_size=64)
    pre = _prefix([0.0, 0.0, 0.0], [1, 0, 1], [5.0, 6.0, 7.0])
    merged = _collect(PrefixedSource(pre, then), seed=3, limit=500)
    plain = _collect(then, seed=3, limit=500)
    np.testing.assert_array_equal(merged["time"][:3], 0.0)
    np.testing.assert_array_equal(merged["type"][:3], [1, 0, 1])
    np.testing.assert_array_equal(merged["work"][:3], [5.0, 6.0, 7.0])
    n = min(len(plain["time"]), len(merged["time"]) - 3)
    # common random numbers: the continuing stream is exactly the plain source's
    np.testing.assert_array_equal(merged["time"][3 : 3 + n], plain["time"][:n])
    np.testing.assert_array_equal(merged["work"][3 : 3 + n], plain["work"][:n])
    assert np.all(np.diff(merged["time"]) >= 0)


def test_prefix_jobs_are_merged_in_time_order_across_chunks():
    then = PoissonTypedSource([5.0, 5.0], SIZES, Exponential(1.0), chunk_size=16)
    pre_t = [0.5, 3.0, 3.0, 40.0]
    pre = _prefix(pre_t, [0, 1, 0, 1], [1.0, 2.0, 3.0, 4.0])
    merged = _collect(PrefixedSource(pre, then), seed=1, limit=2000)
    assert np.all(np.diff(merged["time"]) >= 0)
    for t, w in zip(pre_t, [1.0, 2.0, 3.0, 4.0]):
        hit = np.flatnonzero((merged["time"] == t) & (merged["work"] == w))
        assert hit.size == 1
    # the two prefix jobs at t=3 keep their table order
    i2 = np.flatnonzero(merged["work"] == 2.0)[0]
    i3 = np.flatnonzero(merged["work"] == 3.0)[0]
    assert i2 + 1 == i3


def test_rest_of_prefix_after_a_finite_stream_and_rate_zero():
    pre = _prefix([0.0, 1.0, 100.0], [0, 1, 0], [1.0, 1.0, 1.0])
    empty = PoissonTypedSource([0.0, 0.0], SIZES, Exponential(1.0))
    merged = _collect(PrefixedSource(pre, empty))
    np.testing.assert_array_equal(merged["time"], [0.0, 1.0, 100.0])
    finite = _prefix([0.5, 2.0], [1, 1], [9.0, 9.0])
    merged = _collect(PrefixedSource(pre, finite))
    np.testing.assert_array_equal(merged["time"], [0.0, 0.5, 1.0, 2.0, 100.0])


def test_types_rates_and_dummy_lifetimes_come_from_the_continuing_source():
    then = PoissonTypedSource([2.0, 1.0], SIZES, Exponential(3.0))
    src = PrefixedSource(_prefix([0.0], [0], [1.0]), then)
    assert src.types is then.types and src.num_resources == 1 and len(src) == 1
    np.testing.assert_array_equal(src.arrival_rates(), [2.0, 1.0])
    a = src.sample_work(1, np.random.default_rng(7))
    b = then.sample_work(1, np.random.default_rng(7))
    assert a == b


def test_mismatched_sources_are_rejected():
    then = PoissonTypedSource([1.0, 1.0], SIZES, Exponential(1.0))
    with pytest.raises(ScenarioError, match="job types"):
        PrefixedSource(ReplaySource([0.0], [[2.0]], [1.0]), then)  # one type
    with pytest.raises(ScenarioError, match="type demands differ"):
        PrefixedSource(ReplaySource([0.0], [[2.0]], [1.0], type=[0], type_demand=[[2.0], [4.0]]), then)
    with pytest.raises(ScenarioError, match="resources"):
        PrefixedSource(ReplaySource([0.0], [[2.0, 1.0]], [1.0]), then)
    with pytest.raises(ScenarioError, match="ReplaySource"):
        PrefixedSource(then, then)  # type: ignore[arg-type]


def test_prefixed_source_drives_an_episode():
    then = PoissonTypedSource([1.0, 0.5], SIZES, Exponential(1.0))
    pre = _prefix([0.0] * 6, [0, 0, 0, 1, 1, 1], [50.0] * 6)
    sc = Scenario(
        name="prefixed",
        capacity=np.full((1, 1), 10.0),
        source=PrefixedSource(pre, then),
        resources=("units",),
        horizon=20.0,
    )
    r = run_episode(sc, "first-fit", seed=0, validate=True)
    assert r["arrivals"] >= 6
    assert r["started"] >= 2  # the prefix jobs packed the server at t=0
