"""Train an SB3 agent on a clustergym scenario (``clustergym train``), CleanRL-style: read top to bottom.

    clustergym train bf-trap --algo maskable-ppo --policy equivariant --timesteps 200000 \\
        --envs 2 --eval-agents best-fit,mwr --eval-every 20000 --set horizon=100 --out runs/bf-trap

Writes to ``OUT``:

* ``model.zip`` + ``model.json`` + ``vecnormalize.npz``: the final model, loadable by
  path wherever an agent name is accepted (``clustergym run X --agent OUT/model.zip``);
* ``checkpoints/``: periodic checkpoints (``--resume`` takes one of them);
* ``tb/``: TensorBoard logs (``tensorboard --logdir OUT/tb``);
* ``eval.csv``: the periodic evaluation of the policy and the chosen baselines on
  the same seeds (common random numbers), one row per (step, agent, seed).

Rewards are the integral of the scenario's cost (or reward) rate between
decision epochs (:mod:`clustergym.envs.reward`), so the return is the paper
metric times the episode length; VecNormalize rescales them for learning
(``normalize_reward``).  The ``mlp`` policy also gets normalised observations;
the equivariant policy does its own scaling (``log1p`` of counts).

``SCENARIO`` may be a suite task (``rms-trap`` or ``clustergym/rms-trap-v1``,
:mod:`clustergym.suite`): the training envs are then ``gymnasium.make`` of its id,
with its settings (action mode, queue window, reward scale and timing,
``invalid_action="wait"``) as the defaults of ``--set``, its scenario and horizon
fixed, and the periodic evaluation scores the task (its score, on seeds that are
not the suite's evaluation seeds).  A model trained without masks on a task (PPO,
A2C or DQN with the ``mlp`` policy) is evaluated without masks, as it was trained.

``--stage STEPS:key=value,...`` (repeatable) trains a curriculum first: ``STEPS`` steps with those
scenario parameters changed (another load, another number of servers), stage after stage, then the
rest of ``--timesteps`` on the scenario or task itself (:mod:`clustergym.training.curriculum`).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from clustergym.agent_api import AgentRequirements
from clustergym.envs.actions import default_action_mode
from clustergym.errors import ConfigError, require_extra
from clustergym.learned.files import load_vecnormalize, record_digests, save_vecnormalize
from clustergym.learned.model_agent import (
    ALGOS,
    DECODINGS,
    META_NAME,
    VECNORM_NAME,
    ModelAgent,
    algo_classes,
    load_sb3,
    vecnormalize_path,
)
from clustergym.runner import worker_count
from clustergym.training.curriculum import Stage, check_stages, phases
from clustergym.validation import choice, mapping, number

__all__ = [
    "train",
    "make_train_env",
    "build_venv",
    "new_model",
    "split_params",
    "ppo_defaults",
    "policy_spec",
    "POLICIES",
    "VEC_ENVS",
    "DEFAULT_ENVS",
]

#: how the training envs run (``--vec-env``)
VEC_ENVS = ("dummy", "subproc")
#: in-process training envs by default: one batched policy forward pass steps all of them
DEFAULT_ENVS = 16


def ppo_defaults(n_envs: int) -> dict[str, Any]:
    """PPO's (and MaskablePPO's) settings unless ``--set algo.<name>`` says otherwise: rollouts of
    2,048 steps over the ``n_envs`` envs, minibatches of 512 and 4 epochs (SB3's defaults are
    minibatches of 64 and 10 epochs: 20 times the gradient steps per rollout, on a learner that
    already took most of the time).  ``clustergym bench --training`` measures both, 3.9x apart in
    steps per second on ec2; ``docs/performance.md`` compares their learning curves, where SB3's
    settings learned more per sample (``--set algo.batch_size=64 --set algo.n_epochs=10``)."""
    return {"n_steps": max(2048 // n_envs, 16), "batch_size": 512, "n_epochs": 4}


#: policy kinds accepted by ``--policy``
POLICIES = ("mlp", "equivariant")
#: ``--set`` keys that are environment arguments rather than scenario parameters
ENV_KEYS = (
    "action_mode",
    "queue_window",
    "horizon",
    "reward_scale",
    "reward_timing",
    "invalid_penalty",
    "invalid_action",
    "rules",
    "pair_features",
)


def split_params(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``--set`` pairs -> (scenario parameters, env kwargs, algorithm kwargs (``algo.<name>``),
    equivariant-policy kwargs (``policy.<name>``: ``work_conserving``, ``wait_bias``, ``server_ids``))."""
    scenario, env, algo, pol = {}, {}, {}, {}
    for key, value in params.items():
        if key.startswith("algo."):
            algo[key[len("algo.") :]] = value
        elif key.startswith("policy."):
            pol[key[len("policy.") :]] = value
        elif key in ENV_KEYS:
            env[key] = value
        else:
            scenario[key] = value
    return scenario, env, algo, pol


def make_train_env(
    scenario: str,
    scenario_params: dict[str, Any],
    env_kwargs: dict[str, Any],
    policy: str,
    seed: int | None = None,
    stage_params: dict[str, Any] | None = None,
) -> Any:
    """One training env: the scenario with the epochs a trained agent is evaluated with (a suite
    task: ``gymnasium.make`` of its id; ``action_mode="rule"``: a
    :class:`~clustergym.learned.rule_select.RuleSelectEnv` on it, choosing among ``rules``), wrapped in ``FlattenObservation`` for the ``mlp`` policy and
    in SB3's ``Monitor`` (episode stats).  ``stage_params``: a curriculum stage's scenario parameters
    (on a suite task, its environment on the changed scenario:
    :func:`clustergym.training.curriculum.make_stage_env`)."""
    from gymnasium.wrappers import FlattenObservation
    from stable_baselines3.common.monitor import Monitor

    from clustergym.envs import make_env
    from clustergym.suite import find_task

    t = find_task(scenario) if not scenario_params else None
    if stage_params and t is None:  # a plain scenario: the stage changes its parameters
        scenario_params = {**scenario_params, **stage_params}
    if stage_params and t is not None:
        from clustergym.training.curriculum import make_stage_env

        if env_kwargs.get("action_mode") == "rule":
            raise ConfigError("curriculum", "the rule mode trains on the task itself: no stages (--stage) with it")
        env = make_stage_env(t, stage_params, env_kwargs)
    elif env_kwargs.get("action_mode") == "rule":  # a policy choosing among rules (rule_select)
        from clustergym.learned.rule_select import make_rule_select_env

        rest = {k: v for k, v in env_kwargs.items() if k not in ("action_mode", "rules")}
        bound = t.max_episode_steps if t is not None else None
        env = make_rule_select_env(
            t if t is not None else scenario,
            env_kwargs.get("rules"),
            max_episode_steps=bound,
            **rest,
            **scenario_params,
        )
    elif t is not None:
        import gymnasium

        env = gymnasium.make(t.id, **env_kwargs)
    else:
        env = make_env(
            scenario, epochs=AgentRequirements().epochs, **{"skip_trivial": True, **env_kwargs}, **scenario_params
        )
    if policy == "mlp":
        env = FlattenObservation(env)
    env = Monitor(env)
    if seed is not None:
        env.reset(seed=seed)
    return env


def _check_args(algo: str, policy: str, action_mode: str, timesteps: int) -> None:
    choice(algo, "algo", ALGOS, error=ConfigError)
    choice(policy, "policy", POLICIES, error=ConfigError)
    if action_mode == "command":
        raise ConfigError(
            "action_mode",
            "the 'command' mode (MultiDiscrete, factorised mask) is for rule-based "
            f"agents; train {algo} with action_mode head, slot or admit",
        )
    if algo == "dqn" and policy != "mlp":
        raise ConfigError("policy", "dqn trains the mlp policy only (the equivariant policy is an actor-critic)")
    number(timesteps, "timesteps", lo=1, integer=True, error=ConfigError)


def policy_spec(
    algo: str, policy: str, action_mode: str, hidden: int, policy_params: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """The SB3 policy class (or name) and its keyword arguments for ``--policy`` in an action mode."""
    from clustergym.learned.policies import EquivariantMaskablePolicy, EquivariantPolicy

    if policy == "mlp":
        return "MlpPolicy", {"net_arch": [hidden, hidden]}  # SB3's default is [64, 64], hidden's default
    cls = EquivariantMaskablePolicy if algo == "maskable-ppo" else EquivariantPolicy
    # new models leave out the elapsed-time feature (training episodes are shorter than evaluation ones);
    # the policy class defaults to use_time=True so that models saved before this option still load
    return cls, {"action_mode": action_mode, "hidden": hidden, "use_time": False, **policy_params}


def build_venv(
    scenario: str,
    scenario_params: dict[str, Any],
    env_kwargs: dict[str, Any],
    policy: str,
    n_envs: int,
    vec_env: str,
    seed: int,
    stage_params: dict[str, Any] | None = None,
) -> Any:
    """The ``n_envs`` training envs (in-process, or one process each with ``vec_env="subproc"``),
    seeded so that training episodes never reuse the evaluation seeds 0, 1, ...; not normalised.
    ``stage_params``: a curriculum stage's scenario parameters (:func:`make_train_env`)."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    factories = [
        functools.partial(make_train_env, scenario, scenario_params, env_kwargs, policy, stage_params=stage_params)
        for _ in range(n_envs)
    ]
    venv = SubprocVecEnv(factories) if vec_env == "subproc" and n_envs > 1 else DummyVecEnv(factories)
    venv.seed(10_000 + 100 * seed)
    return venv


def new_model(
    algo: str,
    policy: str,
    action_mode: str,
    venv: Any,
    *,
    seed: int,
    hidden: int,
    policy_params: dict[str, Any],
    algo_kwargs: dict[str, Any],
    tensorboard_log: str | None = None,
    buffer_kwargs: dict[str, Any] | None = None,
) -> Any:
    """A new SB3 model of ``algo`` with ``policy`` (:func:`policy_spec`) on ``venv``, on the CPU."""
    policy_cls, policy_kwargs = policy_spec(algo, policy, action_mode, hidden, policy_params)
    return algo_classes()[algo](
        policy_cls,
        venv,
        seed=seed,
        device="cpu",
        tensorboard_log=tensorboard_log,
        policy_kwargs=policy_kwargs or None,
        verbose=0,
        **algo_kwargs,
        **(buffer_kwargs or {}),
    )


def _stats_of(vn: Any) -> Any:
    """A live ``VecNormalize``'s observation statistics as the agent reads them (``VecNormStats``)."""
    import numpy as np

    from clustergym.learned.files import VecNormStats

    r = vn.ret_rms
    return VecNormStats(
        obs_mean=np.asarray(vn.obs_rms.mean),
        obs_var=np.asarray(vn.obs_rms.var),
        obs_count=float(vn.obs_rms.count),
        ret_mean=float(np.asarray(r.mean)),
        ret_var=float(np.asarray(r.var)),
        ret_count=float(r.count),
        clip_obs=float(vn.clip_obs),
        clip_reward=float(vn.clip_reward),
        gamma=float(vn.gamma),
        epsilon=float(vn.epsilon),
        norm_obs=bool(vn.norm_obs),
        norm_reward=bool(vn.norm_reward),
    )


def _eval_callback(
    meta: dict[str, Any],
    out: Path,
    eval_agents: Sequence[str],
    eval_every: int,
    eval_seeds: Sequence[int],
    eval_horizon: float | None,
    verbose: bool,
) -> Any:
    """Every ``eval_every`` steps: the current policy and the baselines on the same seeds -> eval.csv + TB
    (on a suite task: the task's episodes and score)."""
    from stable_baselines3.common.callbacks import BaseCallback

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

    csv = out / "eval.csv"

    class PeriodicEval(BaseCallback):
        """Evaluations after policy updates: at the start of a rollout (the previous update done) once
        ``eval_every`` steps have passed since the last one, and at the end of training; never before
        the first update of the run, so no two rows evaluate the same policy."""

        def __init__(self) -> None:
            super().__init__()
            self.last = 0
            self.t0 = 0.0
            self.baselines: list[dict[str, Any]] = []

        def _on_training_start(self) -> None:
            self.last = self.model.num_timesteps  # a resumed run: its checkpoint was evaluated before
            if not self.t0:  # the run's first learn() (a curriculum calls it once per stage)
                self.t0 = time.perf_counter()

        def _evaluate(self) -> None:
            self.num_timesteps = self.model.num_timesteps
            vn = self.model.get_vec_normalize_env()
            agent = ModelAgent(
                self.model, meta, _stats_of(vn) if vn is not None and vn.norm_obs else None, name="learned"
            )
            if not self.baselines:  # baselines do not change: run them once
                self.baselines = [run(a, s, a) for a in eval_agents for s in eval_seeds]
            rows = [run(agent, s, "learned") for s in eval_seeds]
            agent.policy.set_training_mode(False)
            self.model.policy.set_training_mode(False)
            df = pd.DataFrame(rows + self.baselines)[["agent", "seed", metric, "unstable"]]
            df.insert(0, "step", self.num_timesteps)
            df.insert(1, "wall_seconds", time.perf_counter() - self.t0)  # training time so far (this run)
            df.to_csv(csv, mode="a", header=not csv.exists(), index=False)
            means = df.groupby("agent", sort=False)[metric].mean()
            for name, value in means.items():
                self.logger.record(f"eval/{metric}/{name}", float(value))
            # written now, at the step of the evaluated policy, with the train/* scalars of its update
            self.logger.dump(self.num_timesteps)
            if verbose:
                episodes = [ep["r"] for ep in self.model.ep_info_buffer or []]
                train_return = f" (training ep_rew_mean {sum(episodes) / len(episodes):.4g})" if episodes else ""
                print(
                    f"[eval @ {self.num_timesteps}] {metric}: "
                    + ", ".join(f"{k}={v:.4g}" for k, v in means.items())
                    + train_return,
                    flush=True,
                )

        def _on_step(self) -> bool:
            return True

        def _on_rollout_start(self) -> None:
            if self.model.num_timesteps - self.last >= eval_every:
                self.last = self.model.num_timesteps
                self._evaluate()

        def _on_training_end(self) -> None:
            if self.model.num_timesteps > self.last or not csv.exists():
                self.last = self.model.num_timesteps
                self._evaluate()  # also writes the last update's train/* scalars to TensorBoard

    return PeriodicEval()


def _checkpoint_callback(every: int, path: Path) -> Any:
    """Checkpoints after policy updates, at least ``every`` steps apart (SB3's checkpoint files, with
    the VecNormalize statistics): taken at the start of a rollout, so each holds a new policy."""
    from stable_baselines3.common.callbacks import CheckpointCallback

    class UpdateCheckpoint(CheckpointCallback):
        def __init__(self) -> None:
            super().__init__(save_freq=1, save_path=str(path), save_vecnormalize=False)
            self.last = 0

        def _on_training_start(self) -> None:
            self.last = self.model.num_timesteps

        def _on_step(self) -> bool:
            return True

        def _on_rollout_start(self) -> None:
            if self.model.num_timesteps - self.last >= every:
                self.last = self.num_timesteps = self.model.num_timesteps
                super()._on_step()  # save_freq 1: saves now
                vn = self.model.get_vec_normalize_env()
                if vn is not None:  # the statistics as plain arrays (never a pickle)
                    save_vecnormalize(vn, self._checkpoint_path("vecnormalize_", extension="npz"))

        def _on_training_end(self) -> None:
            # SB3 writes a rollout's scalars before its update: the last update's train/* would be lost
            # (on a run of one rollout, every train/* scalar)
            if self.logger.name_to_value:
                self.logger.dump(self.model.num_timesteps)

    return UpdateCheckpoint()


def _check_stages(
    stages: Sequence[Stage],
    space: Any,
    scenario: str,
    scenario_params: dict[str, Any],
    env_kwargs: dict[str, Any],
    policy: str,
    policy_params: dict[str, Any],
) -> None:
    """Each stage changes scenario parameters only, builds (a bad parameter is named here, not in a
    worker), and keeps the observation's shapes unless the policy transfers across sizes."""
    for i, stage in enumerate(stages):
        _, env_keys, algo_keys, pol_keys = split_params(stage.params)
        bad = sorted(env_keys) + ["algo." + k for k in algo_keys] + ["policy." + k for k in pol_keys]
        bad += ["horizon"] if "horizon" in stage.params and "horizon" not in bad else []
        if bad:
            raise ConfigError(
                f"stage {i + 1} ({stage.params})",
                f"a stage changes scenario parameters (load, num_servers, ...), not {bad[0]!r}: "
                "the environment, algorithm and policy settings, and the episodes' horizon, are the run's",
            )
        env = make_train_env(scenario, scenario_params, env_kwargs, policy, stage_params=stage.params)
        other = env.observation_space
        env.close()
        if other != space and (policy != "equivariant" or policy_params.get("server_ids")):
            raise ConfigError(
                f"stage {i + 1} ({stage.params})",
                f"the stage {stage.params} changes the observation's shapes (another number of servers), "
                + (
                    "and the mlp policy's inputs are sized for one: change the load only, or train --policy equivariant"
                    if policy != "equivariant"
                    else "and policy.server_ids ties the policy to one number of servers"
                ),
            )


def _saved_timesteps(ckpt: Path) -> int:
    """The step count SB3 saved in a model or checkpoint ``.zip`` (its ``data`` entry), without loading it."""
    import zipfile

    with zipfile.ZipFile(ckpt) as z:
        return int(json.loads(z.read("data"))["num_timesteps"])


def _enter_stage(model: Any, venv: Any, raw: Any, rebuild: Any) -> tuple[Any, Any]:
    """``model`` on the next stage's envs ``raw``: normalised as ``venv`` was (its return statistics
    carried over), the same model if the spaces agree, else a new one (``rebuild``) with the same
    weights, optimizer state and step count (the equivariant policy's weights fit any cluster size)."""
    import copy

    from stable_baselines3.common.vec_env import VecNormalize

    new = VecNormalize(
        raw, norm_obs=venv.norm_obs, norm_reward=venv.norm_reward, gamma=venv.gamma, clip_obs=venv.clip_obs
    )
    new.ret_rms = copy.deepcopy(venv.ret_rms)
    if venv.norm_obs:  # the mlp policy: same shapes (a size change is refused for it)
        new.obs_rms = copy.deepcopy(venv.obs_rms)
    if raw.observation_space == model.observation_space and raw.action_space == model.action_space:
        model.set_env(new)  # the next rollout starts from new episodes
    else:
        moved = rebuild(new)
        moved.policy.load_state_dict(model.policy.state_dict())
        moved.policy.optimizer.load_state_dict(model.policy.optimizer.state_dict())
        moved.num_timesteps, moved._n_updates = model.num_timesteps, model._n_updates
        model = moved
    venv.close()
    return model, new


#: what a training run writes in its folder (``--overwrite`` removes these, and nothing else)
RUN_FILES = (META_NAME, "model.zip", VECNORM_NAME, "eval.csv")
RUN_DIRS = ("checkpoints", "tb")


def _prepare_out(out: Path, overwrite: bool) -> None:
    """A new run's folder: new or empty, unless ``overwrite`` (the earlier run's files are removed)."""
    import shutil

    from clustergym.runner.journal import check_writable

    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            earlier = (out / META_NAME).exists()
            raise ConfigError(
                "out",
                f"{out} {'holds an earlier training run' if earlier else 'is not empty'}: "
                f"continue a run with --resume {out}, replace it with --overwrite, or choose "
                "another --out",
            )
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
        for name in RUN_DIRS:
            if (out / name).is_dir():
                shutil.rmtree(out / name)
    check_writable(out, "out")


def resume_point(resume: str | Path) -> tuple[Path, Path]:
    """``(checkpoint, run folder)`` of ``--resume``: a checkpoint ``.zip`` (in ``OUT/checkpoints/``),
    a ``model.zip``, or a run folder (its latest checkpoint, else its ``model.zip``)."""
    p = Path(resume)
    if p.is_dir():
        ckpts = sorted(
            (p / "checkpoints").glob("rl_model_*_steps.zip"),
            key=lambda c: int(c.stem.split("_")[-2]) if c.stem.split("_")[-2].isdigit() else -1,
        )
        final = p / "model.zip"
        if final.is_file() and (not ckpts or final.stat().st_mtime >= ckpts[-1].stat().st_mtime):
            return final, p
        if ckpts:
            return ckpts[-1], p
        raise ConfigError("resume", f"{p}: no checkpoint (checkpoints/rl_model_N_steps.zip) nor model.zip there")
    if not p.is_file():
        raise ConfigError("resume", f"{resume}: no such checkpoint")
    return p, (p.parent.parent if p.parent.name == "checkpoints" else p.parent)


def _resumed_settings(
    ckpt: Path, meta: dict[str, Any], scenario: str | None, algo: str | None, policy: str | None, params: dict[str, Any]
) -> dict[str, Any]:
    """The recorded run's settings; a setting given again must have the recorded value."""
    recorded = {
        "algo.": meta.get("algo_kwargs", {}),
        "policy.": meta.get("policy_kwargs", {}),
        "": {
            **meta.get("scenario_params", {}),
            **meta.get("train_env_kwargs", meta.get("env_kwargs", {})),
            **{k: v for k, v in meta.items() if k == "semi_markov"},
        },
    }
    flat = {prefix + k: v for prefix, d in recorded.items() for k, v in d.items()}
    for name, value in (("scenario", scenario), ("algo", algo), ("policy", policy)):
        rec = meta.get(name)
        same = (
            value is None
            or value == rec
            or (name == "scenario" and Path(value).exists() and str(Path(value).resolve()) == rec)
        )
        if not same:
            raise ConfigError(
                name,
                f"{ckpt} continues a run trained with {name} {rec!r}, not {value!r}: drop "
                f"it (--resume restores the run's settings) or start a new run",
            )
    for key, value in params.items():
        if key not in flat or flat[key] != value:
            was = f"{key}={flat[key]!r}" if key in flat else f"no {key} (its default)"
            raise ConfigError(
                key,
                f"{ckpt} continues a run trained with {was}, not {key}={value!r}: drop --set "
                f"{key} (--resume restores the run's settings) or start a new run",
            )
    return flat


def train(
    scenario: str | None,
    algo: str | None = None,
    *,
    timesteps: int = 100_000,
    n_envs: int | None = None,
    vec_env: str = "dummy",
    policy: str | None = None,
    seed: int | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    eval_agents: Sequence[str] = (),
    eval_every: int = 0,
    eval_seeds: Sequence[int] = range(3),
    eval_horizon: float | None = None,
    resume: str | Path | None = None,
    checkpoint_every: int | None = None,
    normalize_reward: bool = True,
    hidden: int = 64,
    progress_bar: bool = False,
    torch_threads: int = 1,
    verbose: bool = True,
    warm_start: str | None = None,
    decoding: str = "two-level",
    warm_start_steps: int = 20_000,
    warm_start_epochs: int = 10,
    algo_kwargs: dict[str, Any] | None = None,
    curriculum: Sequence[Any] = (),
    **params: Any,
) -> Path:
    """Train ``algo`` with ``policy`` on ``scenario`` and save ``OUT/model.zip``; return its path.

    ``resume`` continues an earlier run with the whole configuration it recorded in ``model.json``
    (scenario and its parameters, env settings, algorithm and its settings, policy, seed), in its
    own folder; a setting given again must have the recorded value.  A new run's ``out`` must be
    new or empty unless ``overwrite`` (which removes the earlier run's files).

    Args:
        scenario: preset name or scenario file (``None`` with ``resume``).
        algo: ``ppo``, ``maskable-ppo`` (default), ``dqn`` or ``a2c``.
        timesteps: total env steps (decision epochs x commands) to train for, counting the
            steps of the checkpoint when resuming.
        n_envs: environments per rollout (default: :data:`DEFAULT_ENVS` in-process ones, the available
            cores with ``vec_env="subproc"``).
        vec_env: ``dummy`` (the envs step in this process and the policy runs one batched forward
            pass over all of them: the fastest here, ``clustergym bench --training``) or ``subproc``
            (one process per env, for envs whose steps cost more than the policy).
        policy: ``mlp`` (flattened observation) or ``equivariant`` (default).
        seed: seeds the model and the training envs (evaluation uses seeds ``eval_seeds``); default 0.
        out: output folder (default ``runs/train``; with ``resume``, the run's own folder).
        overwrite: write a new run into a folder that holds files (an earlier run's are removed).
        eval_agents: baselines evaluated beside the policy every ``eval_every`` steps (0: only at the end).
        eval_seeds, eval_horizon: the evaluation episodes (horizon in simulated time units).
        resume: a checkpoint ``.zip`` (or ``model.zip``, or the run folder) of an earlier run to continue.
        checkpoint_every: steps between checkpoints (default: a tenth of ``timesteps``).
        normalize_reward: VecNormalize's return-based reward scaling.
        hidden: width of the policy's layers (equivariant, or the MLP's two hidden layers).
        progress_bar: SB3's tqdm/rich progress bar.
        torch_threads: torch CPU threads of the learner (the machine is shared).
        warm_start: a registered rule-based agent to imitate before RL (behaviour cloning,
            :mod:`clustergym.training.imitation`); equivariant policy, new runs only.
        warm_start_steps, warm_start_epochs: the teacher's decisions recorded, and the passes
            over them.
        decoding: how the saved model acts when evaluated (``model.json``; the periodic
            evaluations use it too): ``two-level`` (default), ``argmax`` or ``sample``
            (:data:`clustergym.learned.model_agent.DECODINGS`).
        algo_kwargs: extra keyword arguments of the SB3 algorithm (``--set algo.gamma=0.995``).
        curriculum: stages ``(steps, {parameter: value})`` trained in order before the scenario
            itself, within ``timesteps`` (:mod:`clustergym.training.curriculum`; a resumed run
            continues its own).  Each stage ends at the first rollout boundary at or after its steps.
        **params: ``--set`` pairs: scenario parameters, env kwargs (``action_mode``,
            ``queue_window``, ``horizon`` of training episodes, ``reward_scale``), ``algo.*``,
            ``policy.*`` (``policy.work_conserving=true``) and ``semi_markov`` (``true`` or a
            time unit: ``gamma`` per unit of simulated time instead of per decision, PPO,
            MaskablePPO and A2C; :mod:`clustergym.training.semi_markov`).
    """
    require_extra(("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "tqdm"), "train", "clustergym train")
    import torch as th
    from stable_baselines3.common.callbacks import CallbackList
    from stable_baselines3.common.vec_env import VecNormalize

    # ---- 1. arguments: scenario (or suite task), env and algorithm settings (a resumed run's own, from model.json)
    from clustergym.learned.model_agent import read_metadata
    from clustergym.scenarios import resolve_scenario
    from clustergym.suite import find_task

    previous: dict[str, Any] = {}
    if resume is not None:
        ckpt, run_dir = resume_point(resume)
        previous = read_metadata(ckpt)
        params = _resumed_settings(ckpt, previous, scenario, algo, policy, params)
        scenario, algo, policy = previous["scenario"], previous["algo"], previous["policy"]
        seed = previous.get("seed", 0) if seed is None else seed
        hidden, normalize_reward = previous.get("hidden", hidden), previous.get("normalize_reward", normalize_reward)
        if out is not None and Path(out).resolve() != run_dir.resolve():
            raise ConfigError("out", f"--resume continues the run in {run_dir}; --out {out} is another folder")
        out, resume = run_dir, ckpt
        recorded = previous.get("curriculum", [])
        if curriculum and [s.to_json() for s in check_stages(curriculum, timesteps)] != recorded:
            raise ConfigError(
                "curriculum",
                f"{ckpt} continues a run with the stages {recorded}: drop --stage (--resume restores them)",
            )
        curriculum = recorded
    if scenario is None:
        raise ConfigError("scenario", "a scenario is required (or --resume of an earlier run)")
    algo = "maskable-ppo" if algo is None else algo
    policy = "equivariant" if policy is None else policy
    seed = 0 if seed is None else seed
    semi_markov = params.pop("semi_markov", False)  # a training setting, not a scenario parameter
    scenario_params, env_kwargs, more_algo, policy_params = split_params(params)
    algo_kwargs = {**(algo_kwargs or {}), **more_algo}
    task = find_task(scenario)
    if task is not None:  # a suite task: its scenario and horizon are fixed, its settings are the defaults
        fixed = sorted(scenario_params) + (["horizon"] if "horizon" in env_kwargs else [])
        if fixed:
            # a task named like its preset (mris-poisson, azure-vms) takes the name: a scenario file reaches the preset
            how = (
                f"train on the preset {task.preset!r}"
                if find_task(task.preset) is None
                else f"the name {task.preset!r} is the task's; train on a scenario file with "
                f"'preset: {task.preset}' and 'params:'"
            )
            stage = (
                f"--stage STEPS:{fixed[0]}=VALUE trains on another value with the task's own environment; or "
                if fixed[0] != "horizon"
                else ""
            )
            raise ConfigError(
                "--set",
                f"suite task {task.name!r} fixes its scenario and horizon; {fixed[0]!r} cannot be set "
                f"({stage}{how} to change them)",
            )
        if eval_horizon is not None:
            raise ConfigError("--eval-horizon", f"suite task {task.name!r} fixes its episodes' horizon")
        env_kwargs = {**task.env_kwargs(), **env_kwargs}
        scenario = task.name
        sc = task.scenario()
    else:
        sc = resolve_scenario(scenario, **scenario_params)  # fails early, naming a bad parameter
    env_kwargs.setdefault("action_mode", default_action_mode(sc.queueing))
    env_kwargs.setdefault("queue_window", 8)
    if env_kwargs["action_mode"] == "rule" or "rules" in env_kwargs:  # the rules, named in model.json
        from clustergym.learned.rule_select import default_rules, parse_rules

        if env_kwargs["action_mode"] != "rule":
            raise ConfigError("rules", "rules are chosen among in the rule mode: add --set action_mode=rule")
        rules = env_kwargs.get("rules")
        env_kwargs["rules"] = parse_rules(rules) if rules is not None else default_rules(task or sc)
        if warm_start and warm_start not in env_kwargs["rules"]:
            raise ConfigError(
                "warm_start",
                f"in the rule mode the teacher is one of the rules {env_kwargs['rules']}, not {warm_start!r}",
            )
    choice(vec_env, "vec_env", VEC_ENVS, error=ConfigError)
    choice(decoding, "decoding", DECODINGS, error=ConfigError)
    if resume is not None:
        n_envs, vec_env = previous.get("n_envs", n_envs), previous.get("vec_env", "subproc")
    n_envs = worker_count(n_envs, "envs") if n_envs is not None or vec_env == "subproc" else DEFAULT_ENVS
    _check_args(algo, policy, env_kwargs["action_mode"], timesteps)
    time_unit = None
    if semi_markov is not False:  # --set semi_markov=true|T: gamma per time unit (clustergym.training.semi_markov)
        from clustergym.training.semi_markov import semi_markov_time_unit

        time_unit = semi_markov_time_unit(semi_markov, algo, task.time_unit if task is not None else None)
        if warm_start:
            raise ConfigError(
                "semi_markov",
                "the warm start fits the critic to per-decision discounted returns; "
                "train with semi_markov without --warm-start",
            )
    if algo in ("ppo", "maskable-ppo") and resume is None:  # measured defaults (module docstring); --set overrides
        algo_kwargs = {**ppo_defaults(n_envs), **algo_kwargs}
    mapping(policy_params, "policy", ("work_conserving", "wait_bias", "use_time", "server_ids"), error=ConfigError)
    import inspect

    accepted = set(inspect.signature(algo_classes()[algo].__init__).parameters) - {
        "self",
        "policy",
        "env",
        "seed",
        "device",
        "tensorboard_log",
        "policy_kwargs",
        "verbose",
        "_init_setup_model",
    }
    for key in algo_kwargs:
        if key not in accepted:
            raise ConfigError(f"algo.{key}", f"{algo} has no setting {key!r}; it takes {', '.join(sorted(accepted))}")
    if policy_params and policy != "equivariant":
        raise ConfigError("policy", f"policy.* settings {sorted(policy_params)} are for --policy equivariant")
    probe = make_train_env(scenario, scenario_params, env_kwargs, policy)  # env settings fail here, not in a worker
    stages = check_stages(curriculum, timesteps)
    _check_stages(stages, probe.observation_space, scenario, scenario_params, env_kwargs, policy, policy_params)
    probe.close()
    if warm_start and (policy != "equivariant" or algo == "dqn"):
        raise ConfigError(
            "warm_start",
            "the behaviour-cloning warm start trains the equivariant actor-critic "
            "(--policy equivariant, --algo ppo, maskable-ppo or a2c)",
        )
    if warm_start and resume:
        raise ConfigError("warm_start", "a resumed run continues its own policy; --warm-start is for new runs")
    if warm_start:
        number(warm_start_steps, "warm_start_steps", lo=1, integer=True, error=ConfigError)
    if task is None and Path(scenario).suffix in (".yaml", ".yml", ".json"):
        scenario = str(Path(scenario).resolve())
    if eval_horizon is None:
        eval_horizon = env_kwargs.get("horizon")  # evaluate on episodes as long as the training ones
    out = Path("runs/train" if out is None else out)
    if resume is None:
        _prepare_out(out, overwrite)
    th.set_num_threads(torch_threads)

    # the metadata a loaded agent needs (model.json); horizon/reward_scale only shape training episodes.
    # A policy trained without masks where an invalid action waits is evaluated the same way ("masked": false)
    masked = algo == "maskable-ppo" or policy != "mlp" or env_kwargs.get("invalid_action") != "wait"
    meta: dict[str, Any] = {
        **{k: v for k, v in previous.items() if k == "warm_start"},
        "algo": algo,
        "policy": policy,
        "decoding": previous.get("decoding", "argmax") if previous else decoding,
        "scenario": scenario,
        "scenario_params": scenario_params,
        "task": task.id if task is not None else None,
        # the observation the policy learns on: the task's (its scaled features) or the environment's own
        "observation": "task" if task is not None else "env",
        "observation_time_unit": task.time_unit if task is not None else None,
        "masked": masked,
        "env_kwargs": {
            k: env_kwargs[k]
            for k in ("action_mode", "rules", "queue_window", "invalid_action", "pair_features")
            if k in env_kwargs
        },
        "train_env_kwargs": env_kwargs,
        "seed": seed,
        "n_envs": n_envs,
        "vec_env": vec_env,
        "normalize_reward": normalize_reward,
        "normalize_obs": policy == "mlp",
        "hidden": hidden,
        "algo_kwargs": algo_kwargs,
        "policy_kwargs": policy_params,
        "semi_markov": semi_markov,
        "semi_markov_time_unit": time_unit,
        "curriculum": [s.to_json() for s in stages],
    }
    (out / META_NAME).write_text(json.dumps(meta, indent=2))

    # ---- 2. vectorised envs (one process per env), with reward (and, for mlp, observation) normalisation;
    # with a curriculum, those of the stage the run is at (the first one, or a resumed checkpoint's)
    plan = phases(stages, timesteps)
    at = _saved_timesteps(Path(resume)) if resume else 0
    stage_params = next((p for end, p in plan if end > at), plan[-1][1])
    venv = build_venv(scenario, scenario_params, env_kwargs, policy, n_envs, vec_env, seed, stage_params)
    vn_path = vecnormalize_path(Path(resume)) if resume else None
    if vn_path is not None:
        venv = load_vecnormalize(vn_path, venv)
        venv.training = True
    else:
        venv = VecNormalize(
            venv, norm_obs=policy == "mlp", norm_reward=normalize_reward, gamma=algo_kwargs.get("gamma", 0.99)
        )

    # ---- 3. the model: new, or resumed from a checkpoint
    buffer_kwargs: dict[str, Any] = {}
    if time_unit is not None:
        from clustergym.training.semi_markov import semi_markov_buffer_kwargs

        buffer_kwargs = semi_markov_buffer_kwargs(algo, venv.observation_space, time_unit)

    def rebuild(env: Any) -> Any:
        """A new model on ``env`` (also at a curriculum stage of another cluster size)."""
        more = buffer_kwargs
        if time_unit is not None and env.observation_space != venv.observation_space:
            more = semi_markov_buffer_kwargs(algo, env.observation_space, time_unit)
        return new_model(
            algo,
            policy,
            env_kwargs["action_mode"],
            env,
            seed=seed,
            hidden=hidden,
            policy_params=policy_params,
            algo_kwargs=algo_kwargs,
            tensorboard_log=str(out / "tb"),
            buffer_kwargs=more,
        )

    if resume:
        model = load_sb3(
            algo_classes()[algo],
            Path(resume),
            algo,
            env=venv,
            device="cpu",
            tensorboard_log=str(out / "tb"),
            **buffer_kwargs,
        )
    else:
        model = rebuild(venv)

    # ---- 3b. optional warm start: imitate a rule-based teacher (actor) and fit its returns (critic)
    if warm_start:
        from clustergym.training.imitation import clone, collect_demonstrations, return_scale, teacher_params

        t_bc = time.perf_counter()
        # the teacher sees every epoch it asks for (trivial ones too: a rule may keep records across
        # epochs); the demonstrations keep only the decisions the policy will face
        demo_kwargs = env_kwargs if env_kwargs.get("action_mode") == "rule" else {**env_kwargs, "skip_trivial": False}
        demo_env = make_train_env(scenario, scenario_params, demo_kwargs, policy, stage_params=stage_params)
        teacher = teacher_params(warm_start, env_kwargs["action_mode"], env_kwargs["queue_window"])
        demos = collect_demonstrations(demo_env, warm_start, warm_start_steps, seed=20_000 + 100 * seed, params=teacher)
        running, scale = return_scale(demos, model.gamma)
        if normalize_reward:  # PPO's reward scaling starts from the statistics the critic was fitted with
            venv.ret_rms.update(running)
        else:
            scale = 1.0
        stats = clone(model.policy, demos, gamma=model.gamma, scale=scale, epochs=warm_start_epochs, seed=seed)
        meta["warm_start"] = {
            "teacher": warm_start,
            "teacher_params": teacher,
            "steps": warm_start_steps,
            "epochs": warm_start_epochs,
            **stats,
            "wall_seconds": time.perf_counter() - t_bc,
        }
        if verbose:
            print(
                f"warm start: imitated {warm_start}{''.join(f' {k}={v}' for k, v in teacher.items())} on {len(demos)} decisions "
                f"({stats['inexpressible']:.0f} of them not expressible in the action mode: run, not imitated), "
                f"accuracy {stats['accuracy']:.3f}",
                flush=True,
            )

    # ---- 4. callbacks: checkpoints (with VecNormalize stats) and periodic evaluation against baselines
    every = checkpoint_every or max(timesteps // 10, 1)
    callbacks = [_checkpoint_callback(every, out / "checkpoints")]
    if time_unit is not None:
        from clustergym.training.semi_markov import SemiMarkovCallback

        callbacks.append(SemiMarkovCallback())
    if eval_agents or eval_every:
        callbacks.append(
            _eval_callback(
                meta, out, list(eval_agents), eval_every or timesteps + 1, list(eval_seeds), eval_horizon, verbose
            )
        )

    # ---- 5. learn, then save the model, the normalisation stats and the budget
    t0, c0 = time.perf_counter(), time.process_time()
    first = True
    for end, params_of_phase in plan:  # one phase without a curriculum; a stage at a time with one
        if model.num_timesteps >= end:
            continue
        if params_of_phase != stage_params:  # the next stage (or the scenario itself): its envs
            stage_params = params_of_phase
            new_venv = build_venv(scenario, scenario_params, env_kwargs, policy, n_envs, vec_env, seed, stage_params)
            model, venv = _enter_stage(model, venv, new_venv, rebuild)
            if verbose:
                print(f"[stage @ {model.num_timesteps}] {stage_params or 'the scenario itself'}", flush=True)
        model.learn(
            end - model.num_timesteps,
            callback=CallbackList(callbacks),
            progress_bar=progress_bar,
            reset_num_timesteps=first and not resume,
            tb_log_name=algo,
        )
        first = False
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    model.save(out / "model.zip")
    save_vecnormalize(venv, out / VECNORM_NAME)
    # CPU seconds of this process (the learner and in-process envs; not subprocess envs' workers)
    meta.update(
        timesteps=int(model.num_timesteps),
        wall_seconds_last_run=wall,
        cpu_seconds_last_run=cpu,
        resumed_from=str(resume or ""),
    )
    (out / META_NAME).write_text(json.dumps(meta, indent=2))
    record_digests(out)
    venv.close()
    if verbose:
        print(
            f"trained {algo}/{policy} on {meta.get('task') or sc.name} for {model.num_timesteps} steps in {wall:.0f} s -> "
            f"{out / 'model.zip'}",
            flush=True,
        )
    return out / "model.zip"
