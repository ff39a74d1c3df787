"""Environment steps per second of the suite tasks against Gymnasium's CartPole-v1, measured in one run.

Absolute rates on a shared machine move with its load; the ratio to CartPole, timed in the same process
and interleaved with the task (task, CartPole, task, CartPole, ...), moves far less.  Each round times a
random *valid* action loop (the action drawn from the observation's mask) through ``gymnasium.make``,
with only the time inside ``step`` counted (CartPole's: a random action), and each task's figure is the
median over the rounds with the minimum beside it.  The batched rate is the same loop over
``n_envs`` environments of :class:`~clustergym.envs.vector.BatchedVectorEnv` (environment steps per
second of the whole batch step).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["bench_env_steps"]

#: steps taken untimed first: the first ones load numba's cached machine code of the compiled step
#: (:mod:`clustergym.envs.kernels`, a few tenths of a second once per process) and fill the caches
_WARM_UP = 20


def _masked(rng: np.random.Generator, mask: np.ndarray) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def _task_rate(env_id: str, steps: int, seed: int) -> float:
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    inside = 0.0
    for i in range(_WARM_UP + steps):
        a = _masked(rng, obs["action_mask"])
        t0 = time.perf_counter()
        obs, _, term, trunc, _ = env.step(a)
        if i >= _WARM_UP:
            inside += time.perf_counter() - t0
        if term or trunc:
            obs, _ = env.reset()
    env.close()
    return steps / max(inside, 1e-12)


def _batched_rate(env_id: str, n_envs: int, steps: int, seed: int) -> float:
    from clustergym.envs.vector import BatchedVectorEnv

    venv = BatchedVectorEnv([lambda: gym.make(env_id, disable_env_checker=True)] * n_envs)
    rng = np.random.default_rng(seed)
    venv.reset(seed=seed)
    inside = 0.0
    for i in range(_WARM_UP + steps):
        acts = np.array([_masked(rng, m) for m in venv.action_masks()])
        t0 = time.perf_counter()
        venv.step(acts)
        if i >= _WARM_UP:
            inside += time.perf_counter() - t0
    venv.close()
    return n_envs * steps / max(inside, 1e-12)


def _missing_traces(env_id: str) -> str | None:
    """Why the task's environment cannot run here when its trace files are absent (``None``: it runs)."""
    from clustergym.traces.paths import TraceNotFoundError

    try:
        env = gym.make(env_id)
        env.reset(seed=0)
        env.close()
    except TraceNotFoundError as e:
        return str(e)
    return None


def _cartpole_rate(steps: int, seed: int) -> float:
    env = gym.make("CartPole-v1")
    env.reset(seed=seed)
    env.action_space.seed(seed)
    inside = 0.0
    for _ in range(steps):
        a = env.action_space.sample()
        t0 = time.perf_counter()
        _, _, term, trunc, _ = env.step(a)
        inside += time.perf_counter() - t0
        if term or trunc:
            env.reset()
    env.close()
    return steps / max(inside, 1e-12)


def bench_env_steps(
    tasks: Sequence[str] | None = None,
    *,
    steps: int = 3_000,
    rounds: int = 3,
    n_envs: int = 16,
    log: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """Steps/s of each suite task (names; default: every task) and of CartPole-v1, interleaved in this process.

    Returns ``{"cartpole_steps_per_s": median of every CartPole run, "tasks": rows}``, one row per task with
    ``steps_per_s``, ``cartpole_steps_per_s`` (of the CartPole runs beside it) and ``ratio_to_cartpole``
    (medians over ``rounds``, each round's ratio taken against the CartPole run beside it), ``ratio_min``, and ``batched_steps_per_s`` / ``batched_ratio_to_cartpole`` for ``n_envs``
    environments in one :class:`~clustergym.envs.vector.BatchedVectorEnv` (``n_envs=0``: not measured).
    A task whose trace files are absent (``azure-vms`` without ``CLUSTERGYM_TRACES``) has the row
    ``{"task", "status": "skipped", "reason"}`` instead, and the other tasks are measured.
    """
    import clustergym  # noqa: F401  (registers the ids)
    from clustergym.suite.tasks import task, task_names

    names = list(task_names() if tasks is None else tasks)
    cart: list[float] = []
    rows: list[dict[str, Any]] = []
    for name in names:
        env_id = task(name).id
        missing = _missing_traces(env_id)
        if missing is not None:  # a trace task without its traces: said in its row, the others measured
            rows.append({"task": name, "status": "skipped", "reason": missing})
            if log:
                log(f"env steps: {name} skipped: {missing}")
            continue
        single, batched, ratios, bratios, beside = [], [], [], [], []
        for r in range(rounds):
            cp = _cartpole_rate(steps * 4, r)
            beside.append(cp)
            single.append(_task_rate(env_id, steps, r))
            ratios.append(single[-1] / cp)
            if n_envs:
                batched.append(_batched_rate(env_id, n_envs, max(steps // n_envs, 20), r))
                bratios.append(batched[-1] / cp)
        row: dict[str, Any] = {
            "task": name,
            "cartpole_steps_per_s": statistics.median(beside),
            "steps_per_s": statistics.median(single),
            "ratio_to_cartpole": statistics.median(ratios),
            "ratio_min": min(ratios),
        }
        if n_envs:
            row.update(
                n_envs=n_envs,
                batched_steps_per_s=statistics.median(batched),
                batched_ratio_to_cartpole=statistics.median(bratios),
            )
        if log:
            log(f"env steps: {name} {row['steps_per_s']:,.0f}/s, {row['ratio_to_cartpole']:.3f} x CartPole")
        rows.append(row)
        cart.extend(beside)
    return {"cartpole_steps_per_s": statistics.median(cart) if cart else None, "rounds": rounds, "tasks": rows}
