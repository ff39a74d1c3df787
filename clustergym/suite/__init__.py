"""The clustergym suite: named, versioned learning tasks with reference scores.

Each task (:mod:`.tasks`) is a Gymnasium id ``clustergym/<task>-v1`` built by :func:`make_task_env`
(:mod:`.env`); importing this package registers them (``import clustergym`` does).  The reference
scores of random and of every compatible baseline ship in ``reference.json`` (:mod:`.reference`);
:mod:`.benchmark` scores an agent or saved models on the suite, normalised against them, with
interquartile means and stratified bootstrap intervals (:mod:`.aggregate`)::

    import gymnasium as gym
    import clustergym  # noqa: F401

    env = gym.make("clustergym/rms-trap-v1")      # invalid actions act as WAIT: no mask needed

``clustergym benchmark AGENT|MODEL ...`` is the command line; ``docs/benchmark.md`` documents
every task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gymnasium.envs.registration import register, registry

from clustergym.suite.tasks import (
    EVAL_SEEDS,
    REFERENCE_SEEDS,
    SUITE_VERSION,
    TASKS,
    Task,
    eval_seeds,
    find_task,
    task,
    task_names,
)

__all__ = [
    "EVAL_SEEDS",
    "REFERENCE_SEEDS",
    "SUITE_IDS",
    "SUITE_VERSION",
    "TASKS",
    "Task",
    "eval_seeds",
    "find_task",
    "make_task_env",
    "register_suite",
    "score",
    "task",
    "task_names",
]


def register_suite() -> list[str]:
    """Register every task's Gymnasium id (idempotent); return the ids."""
    for t in TASKS.values():
        if t.id not in registry:
            register(
                id=t.id,
                entry_point="clustergym.suite.env:make_task_env",
                kwargs={"task": t.name},
                max_episode_steps=t.max_episode_steps,
                disable_env_checker=False,
            )
    return [t.id for t in TASKS.values()]


def make_task_env(task: str | Task, **kwargs):
    """The environment of a suite task; see :func:`clustergym.suite.env.make_task_env`."""
    from clustergym.suite.env import make_task_env as make

    return make(task, **kwargs)


#: the Gymnasium ids of the suite's tasks
SUITE_IDS: list[str] = register_suite()


def score(
    agent: Any,
    tasks: Sequence[str] | None = None,
    seeds: int = 30,
    *,
    workers: int | None = 1,
    decoding: str | None = None,
) -> dict[str, Any]:
    """Score one agent on the suite: the document ``clustergym benchmark AGENT --json`` prints.

    Args:
        agent: an agent or policy object (anything with SB3's ``predict(observation)``; ``reset(env,
            seed)`` is called when it has one), or what ``clustergym benchmark`` takes: a registered
            name, a model path or folder, or an import path ``package.module:factory``.
        tasks: task names (default: every task that can run here).
        seeds: the first ``seeds`` evaluation seeds.
        workers: worker processes (default 1: this process; an object travels to workers pickled).
        decoding: how a model acts (``argmax``, ``sample``, ``two-level``; default: its own).

    Returns:
        :func:`clustergym.suite.scoring.evaluate`'s document (its ``specs`` name the agent).
    """
    from clustergym.agent_api import AGENTS, PolicyAgent, register_agent
    from clustergym.suite.scoring import evaluate

    if isinstance(agent, str):
        return evaluate([agent], tasks, seeds=seeds, workers=workers, decoding=decoding)
    obj = agent if callable(getattr(agent, "reset", None)) else PolicyAgent(agent)
    name = str(getattr(agent, "name", "") or type(agent).__name__).lower()
    while name in AGENTS:
        name += "-scored"
    register_agent(name, lambda **_: obj)
    try:
        return evaluate([name], tasks, seeds=seeds, workers=workers, decoding=decoding)
    finally:
        AGENTS.pop(name, None)
