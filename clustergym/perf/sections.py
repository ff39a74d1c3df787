"""Every section of ``clustergym bench`` in one run (the package docstring lists them)."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from typing import Any

from clustergym.perf.kernel import kernel_rows
from clustergym.perf.memory import bench_memory
from clustergym.perf.ppo import bench_ppo_share
from clustergym.perf.replay import bench_replay

__all__ = ["run_benchmarks"]


def run_benchmarks(
    quick: bool = False,
    log: Callable[[str], Any] | None = None,
    *,
    replay: bool = True,
    full_replay: bool = False,
    ppo: bool = True,
    memory_events: int = 0,
    env_steps: bool = True,
) -> dict[str, Any]:
    """Every section in one run (see the module docstring); ``--quick`` sizes for a smoke test.
    ``env_steps``: each suite task's steps/s against CartPole-v1's (:mod:`clustergym.perf.envspeed`)."""
    from clustergym.core import accel
    from clustergym.errors import require_extra
    from clustergym.validation import settings

    settings.number(memory_events, "--memory-events", lo=0, integer=True)
    if ppo:  # checked before anything runs
        require_extra(
            ("torch", "stable_baselines3", "sb3_contrib"), "train", "bench's PPO share (--ppo; --no-ppo skips it)"
        )
    out: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "processor": platform.machine(),
            "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()),
            "numba": accel.available() and accel.enabled(),
        },
        "benchmarks": kernel_rows(quick, log),
    }
    if env_steps:
        from clustergym.perf.envspeed import bench_env_steps

        if quick:
            out["env_steps"] = bench_env_steps(["rms-trap", "mris-poisson"], steps=200, rounds=1, n_envs=4, log=log)
        else:
            out["env_steps"] = bench_env_steps(log=log)
    if replay:
        first_n = None if full_replay else (3_000 if quick else 50_000)
        out["replay"] = bench_replay(first_n=first_n, log=log)
    if ppo:
        out["ppo"] = bench_ppo_share(512 if quick else 8192, log=log)
    if memory_events:
        out["memory"] = bench_memory(memory_events, log=log)
        out["memory_bounded"] = bench_memory(memory_events, log=log, job_memory="bounded")
    out["machine"]["load_average_end"] = list(os.getloadavg())
    return out
