"""pytest-benchmark versions of ``clustergym bench`` (figures, never assertions on time).

Not part of the default ``pytest`` run (``testpaths = ["tests", "experiments"]``).  Run with

    pytest perf/ --benchmark-only [--benchmark-json out.json]

The replay benchmarks need the real traces (``$CLUSTERGYM_TRACES``; skipped with the reason otherwise); the
SimPy one needs the ``bench`` extra.  Compare the two replay rows for the speed-up on
the same 20,000 tasks (``clustergym bench`` reports the ratio itself, on 50,000 or all).
"""

from __future__ import annotations

import numpy as np
import pytest

from clustergym.agent_api import make_agent
from clustergym.core import accel
from clustergym.runner import run_episode
from clustergym.scenarios import make_preset, resolve_scenario
from clustergym.traces.paths import default_trace_dir, traces_available

REPLAY_N = 20_000
needs_traces = pytest.mark.skipif(
    not traces_available(), reason=f"traces not found ({default_trace_dir()}): set CLUSTERGYM_TRACES"
)


@pytest.mark.parametrize("servers,horizon", [(20, 300.0), (1000, 6.0)])
def test_kernel_best_fit_step_loop(benchmark, servers: int, horizon: float) -> None:
    sc = make_preset("ec2", num_servers=servers, horizon=horizon)
    with accel.forced(False):
        m = benchmark.pedantic(run_episode, args=(sc, "best-fit"), rounds=3, iterations=1)
    benchmark.extra_info["events"] = m["events"]


@pytest.mark.skipif(not accel.available(), reason="numba (the 'fast' extra) is not installed")
def test_kernel_best_fit_compiled(benchmark) -> None:
    sc = make_preset("ec2", num_servers=20, horizon=3000.0)
    run_episode(sc.with_horizon(1.0), make_agent("best-fit", scan=64))  # compile (or load the cache)
    m = benchmark.pedantic(lambda: run_episode(sc, make_agent("best-fit", scan=64)), rounds=3, iterations=1)
    benchmark.extra_info["events"] = m["events"]


@pytest.mark.parametrize("servers", [20, 1000])
def test_env_random_masked_steps(benchmark, servers: int) -> None:
    from clustergym.perf import _random_steps

    sc = make_preset("ec2", num_servers=servers, horizon=1e9)
    steps, events, _, _ = benchmark.pedantic(_random_steps, args=(sc, 0, 5000), rounds=3, iterations=1)
    benchmark.extra_info.update(steps=steps, events=events)


@needs_traces
def test_replay_clustergym(benchmark) -> None:
    sc = resolve_scenario("google-bf-replay", first_n=REPLAY_N)
    run_episode(sc.with_horizon(1.0), make_agent("best-fit", scan=64))
    m = benchmark.pedantic(lambda: run_episode(sc, make_agent("best-fit", scan=64)), rounds=3, iterations=1)
    benchmark.extra_info.update(mean_wait=m["mean_wait"], mean_queue_length=m["mean_queue_length"])


@needs_traces
def test_replay_simpy_reference(benchmark) -> None:
    pytest.importorskip("simpy", reason="simpy is in the 'bench' extra")
    from clustergym.perf import simpy_bestfit as ref

    arrival, duration, demand = ref.load_jobs(REPLAY_N)
    r = benchmark.pedantic(ref.simulate, args=(arrival, duration, demand), rounds=1, iterations=1)
    benchmark.extra_info.update(mean_wait=r["mean_wait"], mean_queue_length=r["mean_queue_length"])
    assert np.isfinite(r["mean_wait"])
