"""The clustergym suite: named, versioned learning tasks with reference scores.

Each task (:mod:`.tasks`) is a Gymnasium id ``clustergym/<task>-v1`` built by :func:`make_task_env`
(:mod:`.env`); importing this package registers them (``import clustergym`` does).  The reference
scores of random and of every compatible baseline ship per split of the evaluation seeds
(``reference.json``: validation, ``reference_test.json``: test; :mod:`.reference`);
:mod:`.scoring` scores an agent or saved models on the suite, normalised against them, and
:mod:`.report` reports the method with rliable's statistics and verdicts whose intervals cover
training seeds and evaluation episodes (:mod:`.aggregate`, :mod:`.intervals`)::

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
    DEFAULT_SPLIT,
    EVAL_SEEDS,
    REFERENCE_SEEDS,
    SPLITS,
    SUITE_VERSION,
    TASKS,
    TEST_SEEDS,
    Task,
    check_split,
    eval_seeds,
    find_task,
    task,
    task_names,
)

__all__ = [
    "DEFAULT_SPLIT",
    "EVAL_SEEDS",
    "REFERENCE_SEEDS",
    "SPLITS",
    "SUITE_IDS",
    "SUITE_VERSION",
    "TASKS",
    "TEST_SEEDS",
    "Task",
    "check_split",
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


def _register_track() -> list[str]:
    """Register the generalization track's test points (:mod:`.generalization`): not suite tasks, but
    worker processes build their environments by id."""
    from clustergym.suite.generalization import register_track

    return register_track()


_register_track()


def score(
    agent: Any,
    tasks: Sequence[str] | None = None,
    seeds: int = 30,
    *,
    workers: int | None = 1,
    decoding: str | None = None,
    split: str = "validation",
    queue_window: int | None = None,
) -> dict[str, Any]:
    """Score one agent on the suite: the document ``clustergym benchmark AGENT --json`` prints.

    Args:
        agent: an agent or policy object (anything with SB3's ``predict(observation)``; ``reset(context,
            seed)`` is called when it has one), or what ``clustergym benchmark`` takes: a registered
            name, a model path or folder, or an import path ``package.module:factory``.
        tasks: task names (default: every task that can run here).
        seeds: the first ``seeds`` evaluation seeds of ``split``.
        workers: worker processes (default 1: this process; an object travels to workers pickled).
        decoding: how a model acts (``argmax``, ``sample``, ``two-level``; default: its own).
        split: ``validation`` (develop and select there) or ``test`` (held out: final claims).
        queue_window: the queue window a saved equivariant model runs with (default: its own).

    Returns:
        :func:`clustergym.suite.scoring.evaluate`'s document (its ``specs`` name the agent) with its
        ``report`` (:func:`clustergym.suite.report.report`), as ``clustergym benchmark --json``.
    """
    from clustergym.agent_api import AGENTS, PolicyAgent
    from clustergym.suite.report import report
    from clustergym.suite.scoring import evaluate

    def scored(spec: str) -> dict[str, Any]:
        doc = evaluate(
            [spec], tasks, seeds=seeds, workers=workers, decoding=decoding, split=split, queue_window=queue_window
        )
        doc["report"] = report(doc)
        return doc

    if isinstance(agent, str):
        return scored(agent)
    if queue_window is not None:
        from clustergym.errors import ConfigError

        raise ConfigError("queue_window", "sets a saved model's queue window: give the model's path, not an object")
    obj = agent if callable(getattr(agent, "reset", None)) else PolicyAgent(agent)
    name = str(getattr(agent, "name", "") or type(agent).__name__).lower()
    while name in AGENTS:
        name += "-scored"
    AGENTS[name] = lambda **_: obj  # for this call only (built-in agents register in clustergym.baselines)
    try:
        return scored(name)
    finally:
        AGENTS.pop(name, None)
