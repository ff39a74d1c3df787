"""The callbacks of a training run: periodic evaluation against baselines, checkpoints, and the
position of the learner in its rollout (so that Ctrl-C saves the policy of the last update).

Evaluations and checkpoints are taken at the start of a rollout (the previous policy update
done), once their interval has passed since the last one, so no two hold the same policy and none
holds the untrained one.  A resumed run continues both schedules where the run left them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from stable_baselines3.common.callbacks import BaseCallback

from clustergym.learned.model_agent import ModelAgent

__all__ = [
    "CpuBudget",
    "LiveStats",
    "PeriodicEval",
    "UpdateCheckpoint",
    "RolloutPosition",
    "episode_runner",
]


def episode_runner(meta: dict[str, Any], eval_horizon: float | None) -> tuple[Callable[..., dict[str, Any]], str]:
    """``(run(agent, seed, name) -> row, metric)``: one evaluation episode of the run's scenario (on
    a suite task: the task's episode, scored), and the metric its rows are compared on."""
    from clustergym.core.objectives import objective_metric
    from clustergym.runner import Probe, run_episode
    from clustergym.scenarios import resolve_scenario
    from clustergym.suite import find_task
    from clustergym.suite.env import window_metrics

    t = find_task(meta["scenario"]) if meta.get("task") else None
    if t is not None:
        sc, metric = t.scenario(), "score"
        episode_args: dict[str, Any] = {"env_id": t.id, "probes": {"task": Probe(window_metrics)}}
    else:
        sc = resolve_scenario(meta["scenario"], **meta["scenario_params"])
        metric, episode_args = objective_metric(sc.objective), {"horizon": eval_horizon}

    def run(agent: Any, seed: int, name: str) -> dict[str, Any]:
        row = run_episode(sc, agent, seed=seed, agent_name=name, **episode_args)
        if t is not None:
            row["score"] = row["task"]["score"]
        return row

    return run, metric


class LiveStats:
    """The observation statistics of a training run's ``VecNormalize`` as an agent reads them: the
    running ``mean`` and ``var`` (``(D,)``), and ``normalize(x)`` as the envs normalise (clipped, float32)."""

    def __init__(self, venv: Any) -> None:
        self.venv = venv

    @property
    def mean(self) -> Any:
        return self.venv.obs_rms.mean

    @property
    def var(self) -> Any:
        return self.venv.obs_rms.var

    def normalize(self, x: Any) -> Any:
        return self.venv.normalize_obs(x).astype("float32")


class PeriodicEval(BaseCallback):
    """Every ``every`` steps: the current policy and the baselines ``agents`` on ``seeds`` -> ``eval.csv``
    (one row per (step, agent, seed), with the training seconds so far) and TensorBoard (``eval/*``).
    Also at the end of each ``learn`` (a curriculum stage, the run).  ``last``: the step of the run's
    last evaluation; ``wall``: its training seconds so far (a resumed run continues both)."""

    def __init__(
        self,
        meta: dict[str, Any],
        out: Path,
        agents: Sequence[str],
        every: int,
        seeds: Sequence[int],
        eval_horizon: float | None,
        verbose: bool,
        last: int = 0,
        wall: float = 0.0,
    ) -> None:
        super().__init__()
        self.meta, self.csv, self.agents, self.every, self.seeds = meta, out / "eval.csv", agents, every, seeds
        self.run, self.metric = episode_runner(meta, eval_horizon)
        self.show, self.last, self.wall = verbose, last, wall
        self.t0 = 0.0
        self.baselines: list[dict[str, Any]] = []

    def _on_training_start(self) -> None:
        if not self.t0:  # the first learn() of this process (a curriculum calls it once per stage)
            self.t0 = time.perf_counter() - self.wall

    def _evaluate(self) -> None:
        self.last = self.num_timesteps = self.model.num_timesteps
        vn = self.model.get_vec_normalize_env()
        obs_rms = LiveStats(vn) if vn is not None and vn.norm_obs else None
        agent = ModelAgent(self.model, self.meta, obs_rms, name="learned")
        if not self.baselines:  # baselines do not change: run them once
            self.baselines = [self.run(a, s, a) for a in self.agents for s in self.seeds]
        rows = [self.run(agent, s, "learned") for s in self.seeds]
        agent.policy.set_training_mode(False)
        self.model.policy.set_training_mode(False)
        df = pd.DataFrame(rows + self.baselines)[["agent", "seed", self.metric, "unstable"]]
        df.insert(0, "step", self.num_timesteps)
        df.insert(1, "wall_seconds", time.perf_counter() - self.t0)  # training time so far (this run)
        df.to_csv(self.csv, mode="a", header=not self.csv.exists(), index=False)
        means = df.groupby("agent", sort=False)[self.metric].mean()
        for name, value in means.items():
            self.logger.record(f"eval/{self.metric}/{name}", float(value))
        # written now, at the step of the evaluated policy, with the train/* scalars of its update
        self.logger.dump(self.num_timesteps)
        if self.show:
            episodes = [ep["r"] for ep in self.model.ep_info_buffer or []]
            train_return = f" (training ep_rew_mean {sum(episodes) / len(episodes):.4g})" if episodes else ""
            scores = ", ".join(f"{k}={v:.4g}" for k, v in means.items())
            print(f"[eval @ {self.num_timesteps}] {self.metric}: {scores}{train_return}", flush=True)

    def _on_step(self) -> bool:
        return True

    def _on_rollout_start(self) -> None:
        if self.model.num_timesteps - self.last >= self.every:
            self._evaluate()

    def _on_training_end(self) -> None:
        if self.model.num_timesteps > self.last or not self.csv.exists():
            self._evaluate()  # also writes the last update's train/* scalars to TensorBoard


class UpdateCheckpoint(BaseCallback):
    """Checkpoints after policy updates, at least ``every`` steps apart: ``save(model)`` at the start
    of a rollout.  ``last``: the step of the run's last checkpoint (a resumed run's starting point)."""

    def __init__(self, every: int, save: Callable[[Any], Any], last: int = 0) -> None:
        super().__init__()
        self.every, self.save, self.last = every, save, last

    def _on_step(self) -> bool:
        return True

    def _on_rollout_start(self) -> None:
        if self.model.num_timesteps - self.last >= self.every:
            self.last = self.model.num_timesteps
            self.save(self.model)

    def _on_training_end(self) -> None:
        # SB3 writes a rollout's scalars before its update: the last update's train/* would be lost
        # (on a run of one rollout, every train/* scalar)
        if self.logger.name_to_value:
            self.logger.dump(self.model.num_timesteps)


class RolloutPosition(BaseCallback):
    """Where the learner is: ``in_rollout`` while a rollout is collected, from the step ``start`` (the
    step count of the policy's last update); the steps of an unfinished rollout taught it nothing yet."""

    def __init__(self) -> None:
        super().__init__()
        self.in_rollout = False
        self.start = 0

    def _on_rollout_start(self) -> None:
        self.in_rollout, self.start = True, int(self.model.num_timesteps)

    def _on_rollout_end(self) -> None:
        self.in_rollout = False

    def _on_step(self) -> bool:
        return True


class CpuBudget(RolloutPosition):
    """Ends the run once its CPU budget is spent, at a policy update: at the first step of each rollout
    (the policy of the last update acting), ``spent()`` (the run's CPU seconds so far, every process) is
    compared with ``limit``; when it is reached the step count goes back to the update's (``start``: that
    step taught nothing), ``exhausted`` is set and the learner stops."""

    def __init__(self, limit: float, spent: Callable[[], float]) -> None:
        super().__init__()
        self.limit, self.spent = float(limit), spent
        self.exhausted = False
        self._first = False

    def _on_rollout_start(self) -> None:
        super()._on_rollout_start()
        self._first = True

    def _on_step(self) -> bool:
        if not self._first:
            return True
        self._first = False
        if self.spent() < self.limit:
            return True
        self.exhausted = True
        self.model.num_timesteps = self.start
        return False
