"""The share of ``MaskablePPO.learn`` wall time spent inside the environment (needs the ``train`` extra)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["bench_ppo_share"]


def bench_ppo_share(timesteps: int = 4096, log: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """Share of ``MaskablePPO.learn`` wall time spent in the environment on ``ec2`` (CPU torch, seed 0)."""
    import gymnasium as gym
    import torch
    from gymnasium.wrappers import FlattenObservation
    from sb3_contrib import MaskablePPO

    from clustergym.envs import ClusterEnv
    from clustergym.learned.model_agent import without_log_folder

    class Timed(gym.Wrapper):
        """Accumulates the wall time of reset, step and action_masks."""

        def __init__(self, env: gym.Env):
            super().__init__(env)
            self.seconds = 0.0
            self.steps = 0

        def reset(self, **kw: Any):
            t = time.perf_counter()
            r = self.env.reset(**kw)
            self.seconds += time.perf_counter() - t
            return r

        def step(self, action: Any):
            t = time.perf_counter()
            r = self.env.step(action)
            self.seconds += time.perf_counter() - t
            self.steps += 1
            return r

        def action_masks(self) -> np.ndarray:
            t = time.perf_counter()
            m = self.env.unwrapped.action_masks()
            self.seconds += time.perf_counter() - t
            return m

    if log:
        log(f"ppo: MaskablePPO on ec2 for {timesteps} steps, timing the env")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one core for the learner, as on CI; restored below
    try:
        env = Timed(FlattenObservation(ClusterEnv("ec2", horizon=200.0)))
        model = MaskablePPO(
            "MlpPolicy", env, seed=0, n_steps=min(2048, timesteps), batch_size=64, verbose=0, device="cpu"
        )
        without_log_folder(model)
        c0 = time.process_time()
        t0 = time.perf_counter()
        model.learn(timesteps)
        wall = time.perf_counter() - t0
    finally:
        torch.set_num_threads(threads)
    return {
        "scenario": "ec2",
        "timesteps": timesteps,
        "env_steps": env.steps,
        "learn_wall_seconds": wall,
        "learn_cpu_seconds": time.process_time() - c0,
        "env_wall_seconds": env.seconds,
        "env_share": env.seconds / wall,
        "env_steps_per_second": env.steps / env.seconds,
    }
