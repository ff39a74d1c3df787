"""TraceWindowSource: random windows of a job table, thinned, with the jobs in flight at time 0;
and the presets built on new sources (mris-poisson, azure-vms)."""

from __future__ import annotations

import numpy as np
import pytest

from clustergym.errors import ScenarioError
from clustergym.workloads.replay import ReplaySource
from clustergym.workloads.windows import TraceWindowSource


def _table(n=200):
    t = np.arange(n, dtype=float)            # one arrival per time unit
    work = np.full(n, 2.5)                    # each job runs 2.5 units
    work[::10] = 50.0                         # every tenth runs long
    demand = np.column_stack([np.linspace(0.1, 0.5, n), np.full(n, 0.2)])
    return ReplaySource(t, demand, work)


def _chunks(src, seed):
    ch = list(src.chunks(np.random.default_rng(seed)))
    return {k: np.concatenate([getattr(c, k) for c in ch]) for k in ("time", "demand", "work")}


def test_window_replays_jobs_in_flight_at_zero_then_the_window_shifted():
    tab = _table()
    src = TraceWindowSource(tab, 20.0, start_low=60.0, start_high=60.0)  # s = 60 exactly
    carried, inside, remaining, s = src.episode_rows(np.random.default_rng(0))
    assert s == 60.0
    # in flight at 60: arrived before 60 (strictly: a job arriving at 60 is in the window's past) and ends after
    expect = [i for i in range(61) if i + tab.work[i] > 60 and tab.time[i] <= 60]
    assert carried.tolist() == [i for i in expect if tab.time[i] <= 60.0]
    np.testing.assert_allclose(remaining, tab.time[carried] + tab.work[carried] - 60.0)
    assert inside.tolist() == list(range(61, 81))
    got = _chunks(src, 0)
    n0 = carried.size
    assert np.all(got["time"][:n0] == 0.0) and np.all(got["time"][n0:] > 0.0)
    np.testing.assert_allclose(got["time"][n0:], tab.time[inside] - 60.0)
    np.testing.assert_allclose(got["work"][:n0], remaining)
    assert got["time"].max() <= 20.0


def test_thinning_keeps_every_kth_job_from_a_random_phase_and_seeds_differ():
    tab = _table(1000)
    src = TraceWindowSource(tab, 300.0, thin=7)
    seen = set()
    for seed in range(20):
        carried, inside, _, s = src.episode_rows(np.random.default_rng(seed))
        rows = np.concatenate([carried, inside])
        assert len({int(r) % 7 for r in rows}) == 1            # one phase
        assert np.all(np.diff(inside) == 7)
        assert 0.0 <= s <= tab.time[-1] - 300.0
        seen.add((round(s, 6), int(rows[0]) % 7))
    assert len(seen) == 20
    a, b = _chunks(src, 3), _chunks(src, 3)
    assert all(np.array_equal(a[k], b[k]) for k in a)          # a seed fixes the episode


def test_window_arguments_are_checked():
    tab = _table()
    with pytest.raises(ScenarioError, match="start_low <= start_high"):
        TraceWindowSource(tab, 500.0)
    with pytest.raises(ScenarioError, match="thin"):
        TraceWindowSource(tab, 10.0, thin=0)
    with pytest.raises(ScenarioError, match="table"):
        TraceWindowSource([1, 2], 10.0)


def test_mris_poisson_is_a_clairvoyant_weighted_family_with_new_instances_per_seed():
    from clustergym.runner import run_episode
    from clustergym.scenarios import make_preset

    sc = make_preset("mris-poisson", horizon=20.0)
    assert sc.clairvoyant and sc.objective == "weighted-system" and sc.params["gamma0"] > 0
    chunks = [next(sc.source.chunks(np.random.default_rng(s))) for s in (0, 1)]
    assert set(np.unique(chunks[0].weight)) == {1.0, 2.0}
    assert not np.array_equal(chunks[0].work, chunks[1].work)
    assert chunks[0].demand.min() >= 0.02 and chunks[0].demand.max() <= 0.5
    # the offered load per resource: rate x E[p] x E[d] / M
    assert sc.params["rate"] * 1.0 * 0.26 / 4 == pytest.approx(0.8)
    r = run_episode(sc, "pq-wsjf", seed=0)
    assert r["uses_oracle"] is False and r["completed"] > 0
    with pytest.raises(ScenarioError, match="demand_high"):
        make_preset("mris-poisson", demand_high=1.5)
