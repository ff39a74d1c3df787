"""Training throughput (``clustergym bench --training``): environment steps per second of an SB3 learner,
split into rollout (policy forward passes + environment steps) and update (PPO's gradient epochs).

One configuration is one short ``learn`` run on a suite task or a scenario with the settings of
``clustergym train`` (vectorized environments, VecNormalize, the chosen policy and algorithm); a
callback timestamps every rollout's start and end, so

* ``rollout_steps_per_s`` = environment steps collected / seconds spent collecting them,
* ``update_steps_per_s`` = environment steps collected / seconds spent in the updates,
* ``steps_per_s`` = environment steps / whole ``learn`` time (what a training run sees).

Each row also gives the CPU seconds of the learner's process (with ``vec_env="subproc"`` the
environment workers' CPU time is not in it), because wall times on a shared machine are noisy.  The figures are measured,
never asserted (the tests check only that a row is produced and self-consistent).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

__all__ = ["TrainingConfig", "TRAINING_CONFIGS", "bench_training", "bench_training_configs"]


@dataclass(frozen=True)
class TrainingConfig:
    """One learner configuration to time.

    Attributes:
        name: a short label for the row.
        task: suite task or scenario preset (the default ``ec2`` task at 20 servers).
        algo: ``maskable-ppo``, ``ppo`` or ``a2c``.
        policy: ``equivariant`` or ``mlp``.
        n_envs: environments stepped per policy forward pass.
        vec_env: ``dummy`` (SB3's ``DummyVecEnv``: in-process, one env at a time, one batched forward pass
            over the ``n_envs`` envs), ``subproc`` (one process per env) or ``batched`` (``clustergym
            train``'s default: in-process, stepped as one batch, :func:`clustergym.training.train.build_venv`).
        n_steps: rollout length per env (a rollout holds ``n_envs x n_steps`` steps).
        batch_size: PPO minibatch size.
        n_epochs: passes over each rollout.
        hidden: width of the policy's layers.
        torch_threads: torch CPU threads of the learner (cut to the cores the environment workers leave:
            :func:`clustergym.training.threads.torch_thread_budget`).
    """

    name: str
    task: str = "ec2"
    algo: str = "maskable-ppo"
    policy: str = "equivariant"
    n_envs: int = 1
    vec_env: str = "dummy"
    n_steps: int = 2048
    batch_size: int = 64
    n_epochs: int = 10
    hidden: int = 64
    torch_threads: int = 1


#: the settings ``clustergym train`` uses (16 envs of 128 steps, minibatches of 512, 4 epochs)
_AFTER = TrainingConfig("after: 16 envs, batch 512, 4 epochs", n_envs=16, n_steps=128, batch_size=512, n_epochs=4)

#: the rows of ``clustergym bench --training``: SB3's PPO defaults as clustergym first used them
#: (one env per core in subprocesses) and the levers one at a time, then together, then
#: ``clustergym train``'s default environments (``batched``) and its ``--torch-threads 2``
TRAINING_CONFIGS: tuple[TrainingConfig, ...] = (
    TrainingConfig("before: SB3 defaults, 2 subproc envs", n_envs=2, vec_env="subproc", n_steps=1024),
    TrainingConfig("1 env, SB3 defaults", n_envs=1),
    TrainingConfig("16 in-process envs", n_envs=16, n_steps=128),
    TrainingConfig("batch 512, 4 epochs", n_envs=1, batch_size=512, n_epochs=4),
    TrainingConfig("2 torch threads", n_envs=1, torch_threads=2),
    TrainingConfig("hidden 32", n_envs=1, hidden=32),
    _AFTER,
    replace(_AFTER, name="mlp policy, after's settings", policy="mlp"),
    replace(_AFTER, name="batched: after's settings", vec_env="batched"),
    replace(_AFTER, name="batched mlp", policy="mlp", vec_env="batched"),
    replace(_AFTER, name="batched, 2 torch threads", vec_env="batched", torch_threads=2),
    replace(_AFTER, name="batched mlp, 2 torch threads", policy="mlp", vec_env="batched", torch_threads=2),
)


def _learner(cfg: TrainingConfig, seed: int) -> tuple[Any, Any]:
    """The SB3 model and its vectorized env, built by ``clustergym train``'s own functions."""
    from stable_baselines3.common.vec_env import VecNormalize

    from clustergym.envs.actions import default_action_mode
    from clustergym.scenarios import resolve_scenario
    from clustergym.suite import find_task
    from clustergym.training.train import build_venv, new_model

    t = find_task(cfg.task)
    if t is not None:
        env_kwargs = t.env_kwargs()
        name = t.name
    else:
        env_kwargs = {"action_mode": default_action_mode(resolve_scenario(cfg.task).queueing), "horizon": 200.0}
        name = cfg.task
    venv = build_venv(name, {}, env_kwargs, cfg.policy, cfg.n_envs, cfg.vec_env, seed)
    venv = VecNormalize(venv, norm_obs=cfg.policy == "mlp", norm_reward=True)
    algo_kwargs: dict[str, Any] = {"n_steps": cfg.n_steps}
    if cfg.algo != "a2c":
        algo_kwargs.update(batch_size=cfg.batch_size, n_epochs=cfg.n_epochs)
    model = new_model(
        cfg.algo,
        cfg.policy,
        env_kwargs["action_mode"],
        venv,
        seed=seed,
        hidden=cfg.hidden,
        policy_params={},
        algo_kwargs=algo_kwargs,
    )
    return model, venv


def bench_training(cfg: TrainingConfig, rollouts: int = 3, seed: int = 0) -> dict[str, Any]:
    """Time ``rollouts`` rollouts and updates of one configuration (after one untimed warm-up
    rollout and update: torch's first calls and the envs' first episodes are slower).

    Returns the configuration's fields and ``torch_threads_used`` (``torch_threads`` cut to the cores the
    environment workers leave), ``steps``, ``rollout_seconds``, ``update_seconds``,
    ``wall_seconds``, ``cpu_seconds`` (this process),
    ``rollout_steps_per_s``, ``update_steps_per_s`` and ``steps_per_s``.
    """
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    from clustergym.learned.model_agent import without_log_folder
    from clustergym.training.threads import env_workers, no_distribution_checks, set_torch_threads

    threads = torch.get_num_threads()
    used = set_torch_threads(cfg.torch_threads, env_workers(cfg.n_envs, cfg.vec_env))  # cut to the cores left
    try:
        model, venv = _learner(cfg, seed)
        without_log_folder(model)
        per_rollout = cfg.n_envs * cfg.n_steps
        with no_distribution_checks():  # as `clustergym train` learns
            model.learn(per_rollout)  # warm-up, untimed

        class Clock(BaseCallback):
            def __init__(self) -> None:
                super().__init__()
                self.rollout = 0.0
                self.start = 0.0

            def _on_rollout_start(self) -> None:
                self.start = time.perf_counter()

            def _on_rollout_end(self) -> None:
                self.rollout += time.perf_counter() - self.start

            def _on_step(self) -> bool:
                return True

        clock = Clock()
        c0 = time.process_time()
        t0 = time.perf_counter()
        with no_distribution_checks():
            model.learn(rollouts * per_rollout, callback=clock, reset_num_timesteps=False)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        venv.close()
    finally:
        torch.set_num_threads(threads)
    steps = rollouts * per_rollout
    update = max(wall - clock.rollout, 1e-9)
    return {
        **asdict(cfg),
        "torch_threads_used": used,
        "steps": steps,
        "rollout_seconds": clock.rollout,
        "update_seconds": update,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "rollout_steps_per_s": steps / max(clock.rollout, 1e-9),
        "update_steps_per_s": steps / update,
        "steps_per_s": steps / wall,
    }


def bench_training_configs(
    configs: Sequence[TrainingConfig] = TRAINING_CONFIGS,
    *,
    task: str | None = None,
    rollouts: int = 3,
    log: Callable[[str], Any] | None = None,
) -> list[dict[str, Any]]:
    """:func:`bench_training` of each configuration (on ``task`` if given), one after the other."""
    rows = []
    for cfg in configs:
        if task is not None:
            cfg = replace(cfg, task=task)
        if log:
            log(f"training: {cfg.name} ({cfg.algo}/{cfg.policy} on {cfg.task})")
        rows.append(bench_training(cfg, rollouts=rollouts))
    return rows
