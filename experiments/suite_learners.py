"""Do plain RL algorithms complete episodes on every suite task?  (The suite's learnability target, measured.)

For each suite task and each algorithm -- PPO without masks, MaskablePPO, DQN without masks, all
Stable-Baselines3 defaults on ``gymnasium.make("clustergym/<task>-v1")`` with the ``MultiInputPolicy``
(DQN: a 50,000-transition buffer) -- train for ``--steps`` environment steps and report the episodes
completed (Monitor), their mean length in steps, ``ep_rew_mean`` and the share of invalid actions
(which act as WAIT).  Figures only, no assertion; the suite's tests check the property itself
(tests/suite/test_tasks.py: an unmasked agent completes episodes on each task).

    python experiments/suite_learners.py [--steps 6000] [--tasks rms-trap,...] [--algos ppo,maskable-ppo,dqn] [--threads 1] [--json]

The ``azure-vms`` task needs the real traces (``CLUSTERGYM_TRACES``); it is skipped without them.
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np


class _Invalid(gym.Wrapper):
    """Counts the steps whose action was invalid (``info["invalid_action"]``)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.invalid = 0
        self.steps = 0

    def step(self, action):
        out = self.env.step(action)
        self.steps += 1
        self.invalid += bool(out[4].get("invalid_action"))
        return out


def run(task: str, algo: str, steps: int, seed: int = 0) -> dict:
    """Train ``algo`` on ``task`` for ``steps`` steps; episodes completed and their statistics."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.monitor import Monitor

    import clustergym  # noqa: F401  (registers the ids)

    counter = _Invalid(gym.make(f"clustergym/{task}-v1"))
    env = Monitor(counter)
    kwargs: dict = {"seed": seed, "verbose": 0}
    if algo == "ppo":
        model = PPO("MultiInputPolicy", env, **kwargs)
    elif algo == "maskable-ppo":
        model = MaskablePPO("MultiInputPolicy", env, **kwargs)
    elif algo == "dqn":
        model = DQN("MultiInputPolicy", env, buffer_size=50_000, **kwargs)
    else:
        raise SystemExit(f"unknown algorithm {algo!r}: ppo, maskable-ppo or dqn")
    t0 = time.perf_counter()
    model.learn(steps)
    wall = time.perf_counter() - t0
    lengths, returns = env.get_episode_lengths(), env.get_episode_rewards()
    return {
        "task": task,
        "algo": algo,
        "steps": counter.steps,
        "episodes": len(lengths),
        "mean_length": float(np.mean(lengths)) if lengths else None,
        "ep_rew_mean": float(np.mean(returns)) if returns else None,
        "invalid_share": counter.invalid / max(counter.steps, 1),
        "wall_seconds": wall,
    }


def main() -> None:
    from clustergym.suite import TASKS
    from clustergym.suite.reference import traces_available

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--tasks", default=",".join(TASKS))
    p.add_argument("--algos", default="ppo,maskable-ppo,dqn")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    rows = []
    for task in a.tasks.split(","):
        if TASKS[task].needs_traces and not traces_available():
            print(f"{task}: skipped (needs the real traces: set CLUSTERGYM_TRACES)")
            continue
        for algo in a.algos.split(","):
            r = run(task, algo, a.steps)
            rows.append(r)
            if not a.json:
                length = "-" if r["mean_length"] is None else f"{r['mean_length']:.0f}"
                rew = "-" if r["ep_rew_mean"] is None else f"{r['ep_rew_mean']:.4g}"
                print(
                    f"{task:15s} {algo:13s} episodes {r['episodes']:2d}  mean length {length:>5s}  "
                    f"ep_rew_mean {rew:>9s}  invalid {r['invalid_share']:.0%}  {r['wall_seconds']:.0f} s",
                    flush=True,
                )
    if a.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
