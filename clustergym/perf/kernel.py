"""The ``benchmarks`` rows of ``clustergym bench``: events/s of the kernel (stepped and compiled) and env steps/s
of the masked random policy, on ``ec2`` at 20 and 1000 servers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from clustergym.perf.measure import rate_row
from clustergym.perf.replay import REPLAY_SCAN
from clustergym.runner import run_episode
from clustergym.scenarios import make_preset

__all__ = ["kernel_rows", "random_steps"]


def random_steps(scenario, seed: int, max_steps: int) -> tuple[int, int, float, float]:
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


def kernel_rows(quick: bool, log: Callable[[str], Any] | None) -> list[dict[str, Any]]:
    from clustergym.agent_api import make_agent
    from clustergym.core import accel

    cases = [("ec2", 20, 200.0 if quick else 1000.0), ("ec2", 1000, 4.0 if quick else 20.0)]
    rows = []
    for name, L, horizon in cases:
        sc = make_preset(name, num_servers=L, zeta=0.9, horizon=horizon)
        if log:
            log(f"kernel: best-fit on {name} L={L} horizon={horizon:g}")
        c0 = time.process_time()
        r = run_episode(sc, "best-fit", seed=0)
        rows.append(rate_row("kernel", name, L, r["events"], r["steps"], r["wall_seconds"], time.process_time() - c0))
        if accel.enabled():
            run_episode(sc.with_horizon(1.0), make_agent("best-fit", scan=REPLAY_SCAN), seed=0)  # compile / load cache
            if log:
                log(f"kernel-compiled: best-fit scan={REPLAY_SCAN} on {name} L={L} horizon={10 * horizon:g}")
            c0 = time.process_time()
            r = run_episode(sc.with_horizon(10 * horizon), make_agent("best-fit", scan=REPLAY_SCAN), seed=0)
            rows.append(
                rate_row(
                    "kernel-compiled", name, L, r["events"], r["steps"], r["wall_seconds"], time.process_time() - c0
                )
            )
        max_steps = 5_000 if quick else 50_000
        if log:
            log(f"env-random: masked random policy on {name} L={L}, {max_steps} steps")
        steps, events, wall, cpu = random_steps(sc.with_horizon(1e9), 0, max_steps)
        rows.append(rate_row("env-random", name, L, events, steps, wall, cpu))
    return rows
