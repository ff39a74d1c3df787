"""Bounded job memory (``job_memory="bounded"``): same results as the full table, bounded rows.

What is exact and what is not (see :mod:`clustergym.core.jobs`): counts, events and the
time integrals (mean queue) are bit-identical; ``mean_wait`` and
``mean_weighted_completion`` equal the full table's up to summation order (asserted
within 1e-12 relative); ``p99_wait`` is within the histogram's stated relative error 1e-3.
"""

from __future__ import annotations

import numpy as np
import pytest

from clustergym.agent_api import make_agent
from clustergym.core import jobs as jobs_mod
from clustergym.core.commands import Command
from clustergym.core.jobs import JobStatus, JobTable, StreamingJobStats
from clustergym.errors import InvalidCommandError, ReleasedJobError, ScenarioError
from clustergym.runner import run_episode
from clustergym.scenarios.registry import make_preset

EXACT = (
    "events",
    "arrivals",
    "started",
    "completed",
    "rejected",
    "queued_at_end",
    "mean_queue_length",
    "mean_jobs_in_system",
    "reward_rate",
    "sim_time",
)


def _pair(agent_kw: dict, horizon: float, seed: int, name: str = "ec2", **params) -> tuple[dict, dict]:
    out = []
    for mem in ("full", "bounded"):
        sc = make_preset(name, horizon=horizon, job_memory=mem, **params)
        out.append(run_episode(sc, make_agent("best-fit", **agent_kw), seed=seed))
    return out[0], out[1]


def _assert_same(full: dict, bounded: dict) -> None:
    for k in EXACT:
        assert full[k] == bounded[k], k
    for k in ("mean_wait", "mean_weighted_completion"):
        assert bounded[k] == pytest.approx(full[k], rel=1e-12, abs=0), k
    assert abs(bounded["p99_wait"] - full["p99_wait"]) <= 1e-3 * full["p99_wait"] + 1e-12
    assert "p99_wait_method" not in full
    assert bounded["p99_wait_method"].startswith("histogram")


@pytest.mark.parametrize("seed", [0, 5])
def test_bounded_matches_full_compiled_path(seed):
    # ~70k jobs: past RELEASE_EVERY (65,536), so rows are released while the run goes on
    full, bounded = _pair({"scan": 64}, horizon=800.0, seed=seed, num_servers=20, zeta=0.9)
    assert full["arrivals"] > jobs_mod.RELEASE_EVERY
    _assert_same(full, bounded)


def test_bounded_matches_full_step_path_with_invariants(monkeypatch):
    # release often, so a short run through env.step (validate: invariants at every step) crosses many releases
    monkeypatch.setattr(jobs_mod, "RELEASE_EVERY", 128)
    monkeypatch.setattr(jobs_mod, "RELEASE_BLOCK", 64)
    out = []
    for mem in ("full", "bounded"):
        sc = make_preset("ec2", horizon=15.0, num_servers=20, zeta=0.95, job_memory=mem)
        out.append(run_episode(sc, make_agent("best-fit"), seed=2, validate=True))
    assert out[0]["arrivals"] > 10 * 128
    _assert_same(*out)


def test_rows_are_released_and_stay_bounded():
    from clustergym.core import fastpath

    sc = make_preset("ec2", horizon=1500.0, num_servers=20, zeta=0.9, job_memory="bounded")
    sim = sc.make_simulator()
    sim.reset(seed=1)
    if not fastpath.supported(sim, "best-fit", 64, "queue"):
        pytest.skip("numba is not installed: the compiled path is off")
    fastpath.run_scan_episode(sim, "best-fit", 64, sign=-1.0, integral="queue", scale=1.0)
    t = sim.jobs
    assert t.size > 2 * jobs_mod.RELEASE_EVERY
    # rows kept: from the last release's base to the end: at most a release period plus the live span
    assert t.size - t.base <= jobs_mod.RELEASE_EVERY + jobs_mod.RELEASE_BLOCK + 10_000
    assert t.stats.counts_by["real"] + int(t.real().sum()) == sim.n_arrivals


def test_released_job_raises_clear_error(monkeypatch, run_stepping):
    monkeypatch.setattr(jobs_mod, "RELEASE_EVERY", 128)
    monkeypatch.setattr(jobs_mod, "RELEASE_BLOCK", 64)
    seen: dict = {}

    def on_step(env):
        sim = env.unwrapped.sim
        if sim.jobs.base > 0 and not seen:
            seen["base"] = sim.jobs.base
            with pytest.raises(ReleasedJobError, match=r"job 3 has finished and its row was released"):
                sim.jobs.check(3)
            with pytest.raises(ReleasedJobError, match=r"job 10000000 does not exist"):
                sim.jobs.check(10_000_000)
            with pytest.raises(InvalidCommandError, match=r"job 3 has finished and its row was released"):
                sim.apply(Command.place(3, 0))
            with pytest.raises(ReleasedJobError, match=r"job 3 has finished"):
                env.unwrapped.view.status(3)  # what agents read: never a zeroed row
            sim.jobs.check(sim.jobs.size - 1)  # a live row: no error
            env.unwrapped.view.arrival(sim.jobs.size - 1)

    sc = make_preset("ec2", horizon=10.0, num_servers=20, zeta=0.9, job_memory="bounded")
    run_stepping(sc, make_agent("best-fit"), on_step)
    assert seen["base"] > 3


def test_streaming_quantile_within_stated_error():
    rng = np.random.default_rng(0)
    waits = np.concatenate([np.zeros(3000), rng.lognormal(-2.0, 2.0, 20_000), rng.exponential(50.0, 500)])
    rng.shuffle(waits)
    t = JobTable(1)
    for w in waits:
        j = t.add(0.0, np.ones(1), 0, 1.0, 1.0, 0.0)
        t.start[j] = w
        t.status[j] = JobStatus.RUNNING
    st = StreamingJobStats()
    st.add_rows(t, 0, 11_000)  # two blocks: the histogram grows in both directions
    st.add_rows(t, 11_000, t.size)
    for q in (0.0, 0.5, 0.9, 0.99, 0.999, 1.0):
        exact = float(np.percentile(waits, 100 * q))
        assert abs(st.quantile(q) - exact) <= 1e-3 * exact + 1e-12, q
    assert st.wait_sum / st.n_wait == pytest.approx(waits.mean(), rel=1e-12)


def test_job_memory_in_scenario_files():
    from clustergym.scenarios import scenario_from_dict

    sc = scenario_from_dict({"preset": "ec2", "params": {"horizon": 5.0}, "job_memory": "bounded"})
    assert sc.job_memory == "bounded" and sc.make_simulator().job_memory == "bounded"
    with pytest.raises(ScenarioError, match="job_memory"):
        scenario_from_dict({"preset": "ec2", "job_memory": "some"})


def test_unknown_job_memory_is_an_error():
    with pytest.raises(ScenarioError, match="job_memory"):
        make_preset("ec2", job_memory="tiny")
    with pytest.raises(ScenarioError, match="job_memory"):
        JobTable(3, memory="tiny")


def test_bounded_table_refuses_copies_and_full_table_still_copies():
    import copy

    with pytest.raises(TypeError, match="cannot be copied"):
        copy.deepcopy(JobTable(3, memory="bounded"))
    t = JobTable(3)
    t.add(1.0, np.ones(3), 0, 1.0, 1.0, 0.0)
    assert copy.deepcopy(t).arrival[0] == 1.0


def test_bench_memory_reports_both_modes():
    from clustergym.perf import bench_memory

    res = {mem: bench_memory(200_000, interval=0.05, job_memory=mem) for mem in ("full", "bounded")}
    full, bounded = res["full"], res["bounded"]
    assert full["events"] == bounded["events"] >= 190_000
    assert full["job_memory"] == "full" and bounded["job_memory"] == "bounded"
    assert full["p99_wait_method"].startswith("exact") and bounded["p99_wait_method"].startswith("histogram")
    assert bounded["mean_wait"] == pytest.approx(full["mean_wait"], rel=1e-12)
    a, b = bounded["episode_seconds"]
    assert 0 < a < b and bounded["rss_peak_mb"] > 0 and len(bounded["samples"]) >= 1


def test_whole_table_readers_refuse_a_bounded_table_with_released_rows():
    from clustergym.core.jobs import JobTable
    from clustergym.errors import ReleasedJobError
    from clustergym.reproduce.mris import schedule_of

    class _Sim:
        jobs = JobTable(1)

    schedule_of(_Sim())  # full mode, nothing released: fine
    _Sim.jobs.base = 5  # as after a release in bounded mode
    with pytest.raises(ReleasedJobError, match="schedule_of reads every job's row.*job_memory='full'"):
        schedule_of(_Sim())
