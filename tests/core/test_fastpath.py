"""The compiled whole-episode path (clustergym.core.fastpath) equals the step loop, bit for bit.

Each case runs Best-/First-Fit with a scan window twice -- through ``ClusterEnv.step``
(numba switched off) and on the compiled path -- and compares every metric, the return
and the step count exactly.  The cases reach every branch of the compiled loop: finite
and infinite horizons, several arrival chunks, the queue cap, impossible jobs,
heterogeneous servers and speeds.  The SimPy reference of the benchmark agrees with
clustergym on the committed fixture trace.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clustergym.agent_api import make_agent
from clustergym.core import accel
from clustergym.errors import ConfigError
from clustergym.runner import run_episode
from clustergym.scenarios import resolve_scenario
from clustergym.scenarios.spec import Scenario
from clustergym.workloads.replay import ReplaySource

HERE = Path(__file__).resolve().parents[1]  # tests/
FIX = str(HERE / "fixtures" / "traces")
needs_numba = pytest.mark.skipif(not accel.available(), reason="numba (the optional 'fast' extra) is not installed")


def _same(a: dict, b: dict) -> None:
    diff = {
        k: (a[k], b[k])
        for k in a
        if k != "wall_seconds"
        and not (a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k])))
    }
    assert not diff, diff


def _both(sc: Scenario, agent: str, seed: int = 0, horizon: float | None = None, **params) -> tuple[dict, dict]:
    out = []
    for on in (False, True):
        with accel.forced(on):
            out.append(run_episode(sc, make_agent(agent, **params), seed=seed, horizon=horizon))
    return out[0], out[1]


def _tiny_replay(n: int = 3000, impossible: str = "reject", queue_cap: int | None = None, speed=None) -> Scenario:
    rng = np.random.default_rng(7)
    t = np.sort(rng.exponential(0.3, n).cumsum())
    d = rng.uniform(0.05, 0.7, (n, 2))
    d[::97] = [2.5, 0.1]  # larger than every server: impossible
    src = ReplaySource(t, d, rng.exponential(2.0, n), chunk_size=700)  # several chunks
    cap = np.array([[1.0, 1.0], [1.0, 2.0], [2.0, 1.0]])
    return Scenario(
        name="tiny",
        capacity=cap,
        source=src,
        resources=("cpu", "mem"),
        horizon=math.inf,
        objective="queue",
        queue_cap=queue_cap,
        impossible=impossible,
        speed=speed,
    )


@needs_numba
@pytest.mark.parametrize("agent,scan", [("best-fit", 64), ("best-fit", 1), ("first-fit", 5)])
def test_replay_with_chunks_and_impossible_jobs(agent: str, scan: int) -> None:
    slow, fast = _both(_tiny_replay(), agent, scan=scan)
    assert fast["impossible_rejected"] > 0 and fast["events"] > 5000 and fast["mean_wait"] > 0
    _same(slow, fast)


@needs_numba
def test_heterogeneous_speeds_and_poisson_with_horizon() -> None:
    _same(*_both(_tiny_replay(speed=np.array([[1.0], [2.0], [0.5]])), "best-fit", scan=8))
    _same(*_both(resolve_scenario("ec2", num_servers=30), "best-fit", seed=3, horizon=40.0, scan=16))
    _same(*_both(resolve_scenario("lotes-table"), "first-fit", seed=1, horizon=0.03, scan=4))


@needs_numba
@pytest.mark.parametrize("agent", ["best-fit", "first-fit"])
def test_full_and_pruned_scans_over_many_mixed_servers(agent: str) -> None:
    """37 servers of mixed capacities under a long queue: the compiled loop's full scans (a job's first
    examination) and pruned ones (only servers that completed since) place as the step loop does."""
    rng = np.random.default_rng(11)
    n = 4000
    t = np.sort(rng.integers(0, 300, n)).astype(float)
    cap = rng.choice([0.5, 1.0, 2.0], (37, 2))
    sc = Scenario(
        name="blocks",
        capacity=cap,
        source=ReplaySource(t, rng.uniform(0.02, 0.5, (n, 2)), rng.integers(1, 60, n).astype(float), chunk_size=900),
        resources=("cpu", "mem"),
        horizon=math.inf,
        objective="queue",
    )
    slow, fast = _both(sc, agent, scan=16)
    assert fast["mean_queue_length"] > 50 and fast["completed"] == n
    _same(slow, fast)


@needs_numba
def test_queue_cap_terminates_identically() -> None:
    slow, fast = _both(_tiny_replay(queue_cap=5), "best-fit", scan=4)
    assert fast["hit_queue_cap"] and fast["unstable"]
    _same(slow, fast)


@needs_numba
def test_impossible_job_error_is_raised_on_both_paths() -> None:
    from clustergym.core.simulator import ImpossibleJobError

    for on in (False, True):
        with accel.forced(on), pytest.raises(ImpossibleJobError, match="more than the capacity of every server"):
            run_episode(_tiny_replay(impossible="error"), make_agent("best-fit", scan=8))


def test_numba_off_falls_back_and_other_agents_never_take_the_path() -> None:
    from clustergym.core import fastpath

    sc = resolve_scenario("ec2")
    env_sim = sc.make_simulator(make_agent("best-fit").requirements.epochs)
    env_sim.reset(0)
    with accel.forced(False):
        assert not fastpath.supported(env_sim, "best-fit", 64, "queue")
    with accel.forced(True):
        assert fastpath.supported(env_sim, "best-fit", 64, "queue") == accel.available()
        assert not fastpath.supported(env_sim, "best-fit", None, "queue")  # no scan window
        assert not fastpath.supported(env_sim, "random-fit", 64, "queue")  # draws random numbers


@pytest.mark.parametrize("bad", [0, -3, 2.5, "x"])
def test_bad_scan_is_a_clear_error(bad) -> None:
    with pytest.raises(ConfigError, match="agent.scan"):
        make_agent("best-fit", scan=bad)


def test_simpy_reference_agrees_on_the_fixture_trace() -> None:
    pytest.importorskip("simpy", reason="simpy is in the 'bench' extra")
    p = subprocess.run(
        [sys.executable, "-m", "clustergym.perf.simpy_bestfit", "--json", "--servers", "2", "--trace-dir", FIX],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    ref = json.loads(p.stdout)
    m = run_episode(resolve_scenario("google-bf-replay", trace_dir=FIX, num_servers=2), make_agent("best-fit", scan=64))
    assert m["mean_wait"] > 0  # the fixture queues on 2 servers: the comparison means something
    assert (ref["jobs"], ref["sim_time"], ref["mean_wait"], ref["mean_queue_length"]) == (
        m["arrivals"],
        m["sim_time"],
        m["mean_wait"],
        m["mean_queue_length"],
    )


@pytest.mark.parametrize("scan", [64, 5])
def test_simpy_reference_pruned_and_full_scans_agree_with_clustergym(scan: int) -> None:
    """The reference's pruned scan (a job that fitted nowhere is tried again only on the server that completed
    since) and its full scans give clustergym's metrics bit for bit, on both clustergym paths: a queue far
    longer than the window, scores tied (demands on a coarse grid) and completions at arrival times (integer
    times and durations)."""
    pytest.importorskip("simpy", reason="simpy is in the 'bench' extra")
    from clustergym.perf.simpy_bestfit import simulate

    rng = np.random.default_rng(3)
    n, servers = 2500, 12
    arrival = np.sort(rng.integers(0, 600, n)).astype(float)
    duration = rng.integers(1, 40, n).astype(float)
    demand = rng.integers(1, 9, (n, 2)) / 16.0
    sc = Scenario(
        name="replay",
        capacity=np.ones((servers, 2)),
        source=ReplaySource(arrival, demand, duration, chunk_size=600),
        resources=("cpu", "memory"),
        horizon=math.inf,
        objective="queue",
    )
    pruned = simulate(arrival, duration, demand, servers, scan)
    full = simulate(arrival, duration, demand, servers, scan, prune=False)
    assert pruned["mean_queue_length"] > 5 * scan  # the window is full most of the time
    for on in {False, accel.available()}:
        with accel.forced(on):
            m = run_episode(sc, make_agent("best-fit", scan=scan))
        for ref in (pruned, full):
            assert (ref["sim_time"], ref["mean_wait"], ref["mean_queue_length"]) == (
                m["sim_time"],
                m["mean_wait"],
                m["mean_queue_length"],
            )


def test_replay_ratio_of_record_is_warm_cpu_against_the_reference() -> None:
    """bench's replay figures: the ratio of record is the reference's whole-process CPU time over the warm
    ``clustergym run`` process's, the wall ratio and the first (parsing) run's cost beside it; metrics that
    differ in the last bit are reported as not identical."""
    from clustergym.perf.replay import REFERENCE, _side_by_side

    m = {"mean_wait": 2.5, "mean_queue_length": 7.0, "sim_time": 9.0}
    run = {**m, "wall_seconds": 2.0, "cpu_seconds": 1.0}
    out = {
        "clustergym": dict(run),
        "simpy": {**run, "wall_seconds": 50.0, "cpu_seconds": 40.0},
        "whole_process": {"cold": {**run, "wall_seconds": 9.0, "cpu_seconds": 6.0}, "warm": dict(run)},
    }
    _side_by_side(out, {"wall_seconds": 60.0, "cpu_seconds": 48.0})
    wp = out["whole_process"]
    assert (wp["ratio"], wp["ratio_wall"], wp["speedup"]["cold_cpu"]) == (48.0, 30.0, 8.0)
    assert (wp["first_run_cpu_seconds"], wp["first_run_wall_seconds"], wp["reference"]) == (6.0, 9.0, REFERENCE)
    assert out["identical_metrics"] and wp["identical_metrics"] and out["speedup_cpu"] == 40.0
    out["whole_process"]["warm"]["mean_wait"] = math.nextafter(2.5, 3.0)
    _side_by_side(out, {"wall_seconds": 60.0, "cpu_seconds": 48.0})
    assert not out["whole_process"]["identical_metrics"]


def test_observation_queue_window_rows_match_job_features() -> None:
    """The vectorised queue window (long queues) writes what ObservationBuilder._job_features writes."""
    from clustergym.envs import ClusterEnv

    env = ClusterEnv("ec2", num_servers=2, zeta=1.5, queue_window=8, skip_trivial=False)
    obs, _ = env.reset(seed=0)
    for _ in range(60):  # WAIT only: the queue grows past the window
        obs, *_ = env.step(env.sim.num_servers)
    ids = list(env.sim.queue)[:8]
    assert len(ids) == 8
    want = np.zeros_like(obs["queue_jobs"])
    for i, j in enumerate(ids):
        env.obs_builder._job_features(j, want[i])
    assert np.array_equal(obs["queue_jobs"], want) and obs["queue_mask"].sum() == 8


@needs_numba
def test_a_subclass_with_its_own_machine_rule_is_not_replaced_by_the_compiled_path():
    """A greedy agent whose ``_server_for`` differs keeps its own rule with a scan window: the compiled
    loop reproduces First-/Best-Fit only, so ``run_fast`` declines and the step loop runs it."""
    from clustergym.baselines.greedy import FirstFit

    class LastFit(FirstFit):
        def _server_for(self, job: int) -> int:
            fits = np.flatnonzero(self.view.fits(job))
            return int(fits[-1]) if fits.size else -1

    sc = _tiny_replay()
    with accel.forced(True):
        last = run_episode(sc, LastFit(scan=8), seed=0)
        first = run_episode(sc, make_agent("first-fit", scan=8), seed=0)
    with accel.forced(False):
        last_loop = run_episode(sc, LastFit(scan=8), seed=0)
    _same({k: v for k, v in last.items() if k != "agent"}, {k: v for k, v in last_loop.items() if k != "agent"})
    assert last["return"] != first["return"]
