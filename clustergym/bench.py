"""``clustergym bench``: speed figures of the kernel and the environment.

Measured, never asserted: the test suite checks correctness only.  Two
figures per scenario:

* ``kernel`` -- work-conserving Best-Fit driven through the environment by
  ``Command`` objects: simulated events per wall-clock second;
* ``env-random`` -- the masked random policy through the Gymnasium API
  (``head`` action mode, trivial epochs skipped): environment steps per second.

Wall-clock rates and, beside them, rates per CPU second of this process (less
sensitive to other load on the machine).

Scenarios: ``ec2`` (20 servers) and ``ec2`` with 1000 servers (arrival rates
scale with L).
"""

from __future__ import annotations

import platform
import time
from typing import Any, Callable

import numpy as np

from clustergym.evaluation import run_episode
from clustergym.scenarios import make_preset

__all__ = ["run_benchmarks"]


def _random_steps(scenario, seed: int, max_steps: int) -> tuple[int, int, float, float]:
    from clustergym.envs import ClusterEnv

    env = ClusterEnv(scenario)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    c0 = time.process_time()
    t0 = time.perf_counter()
    steps = 0
    while steps < max_steps:
        valid = np.flatnonzero(obs["action_mask"])
        obs, _, term, trunc, _ = env.step(int(valid[rng.integers(valid.size)]))
        steps += 1
        if term or trunc:
            obs, _ = env.reset(seed=seed + steps)
    return steps, env.sim.n_events, time.perf_counter() - t0, time.process_time() - c0


def run_benchmarks(quick: bool = False, log: Callable[[str], Any] | None = None) -> dict[str, Any]:
    cases = [("ec2", 20, 200.0 if quick else 1000.0), ("ec2", 1000, 4.0 if quick else 20.0)]
    results = []
    for name, L, horizon in cases:
        sc = make_preset(name, num_servers=L, zeta=0.9, horizon=horizon)
        if log:
            log(f"kernel: best-fit on {name} L={L} horizon={horizon:g}")
        c0 = time.process_time()
        r = run_episode(sc, "best-fit", seed=0)
        cpu = time.process_time() - c0
        results.append({"benchmark": "kernel", "scenario": name, "servers": L, "events": r["events"],
                        "steps": r["steps"], "wall_seconds": r["wall_seconds"], "cpu_seconds": cpu,
                        "events_per_second": r["events"] / r["wall_seconds"],
                        "steps_per_second": r["steps"] / r["wall_seconds"],
                        "events_per_cpu_second": r["events"] / cpu})
        max_steps = 5_000 if quick else 50_000
        if log:
            log(f"env-random: masked random policy on {name} L={L}, {max_steps} steps")
        steps, events, wall, cpu = _random_steps(sc.with_horizon(1e9), 0, max_steps)
        results.append({"benchmark": "env-random", "scenario": name, "servers": L, "events": events,
                        "steps": steps, "wall_seconds": wall, "cpu_seconds": cpu, "events_per_second": events / wall,
                        "steps_per_second": steps / wall, "events_per_cpu_second": events / cpu})
    return {"machine": {"python": platform.python_version(), "processor": platform.machine()},
            "benchmarks": results}
