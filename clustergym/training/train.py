"""Train an SB3 agent on a clustergym scenario (``clustergym train``), CleanRL-style: read top to bottom.

    clustergym train bf-trap --algo maskable-ppo --policy equivariant --timesteps 200000 \\
        --envs 2 --eval-agents best-fit,mwr --eval-every 20000 --set horizon=100 --out runs/bf-trap

The run, top to bottom: :class:`~clustergym.training.config.TrainConfig` (every setting, checked
in one place) -> :func:`setup` (checked against the scenario; a resumed run: its recorded
configuration and starting point) -> :func:`training_venv` (the environment) -> :func:`model_for`
or :func:`load_model` (the model) -> :func:`warm_start` -> :func:`callbacks` -> :func:`learn`
-> :func:`save`.

Writes to ``OUT`` (:mod:`clustergym.training.run_folder`):

* ``model.zip`` + ``model.json`` + ``vecnormalize.npz``: the final model, loadable by
  path wherever an agent name is accepted (``clustergym run X --agent OUT/model.zip``);
  ``model.json`` also records the whole configuration, the run's status and the files' digests;
* ``checkpoints/``: checkpoints after policy updates, and one at Ctrl-C (``--resume`` continues
  from the run's latest);
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
rest of ``--timesteps`` on the scenario or task itself (:mod:`clustergym.training.curriculum`).  A
stage ends at a rollout boundary: its steps are rounded up to whole rollouts, recorded as taken,
with a :class:`~clustergym.training.run_folder.TrainingWarning`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clustergym.agent_api import AgentRequirements
from clustergym.envs.actions import default_action_mode
from clustergym.errors import ConfigError, require_extra
from clustergym.learned.model_agent import algo_classes, load_sb3, read_metadata
from clustergym.runner import worker_count
from clustergym.training.config import POLICIES, VEC_ENVS, TrainConfig, resumed_config
from clustergym.training.curriculum import Stage, check_stages, phases
from clustergym.training.run_folder import (
    ResumePoint,
    TrainingWarning,
    check_resume,
    checkpoint_path,
    earlier_processes,
    load_stats,
    prepare_out,
    record_process,
    resume_point,
    running_process,
    save_model,
    sigterm_as_interrupt,
    take_over,
    write_meta,
)
from clustergym.validation import settings

__all__ = [
    "train",
    "TrainConfig",
    "Setup",
    "setup",
    "make_train_env",
    "inner_train_env",
    "batched_applies",
    "build_venv",
    "new_model",
    "split_params",
    "ppo_defaults",
    "policy_spec",
    "POLICIES",
    "VEC_ENVS",
    "DEFAULT_ENVS",
]

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
    equivariant-policy kwargs (``policy.<name>``: ``work_conserving``, ``wait_bias``, ``server_ids``, ``pool_types``))."""
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
    """One training env: :func:`inner_train_env` wrapped in ``FlattenObservation`` for the ``mlp`` policy
    and in SB3's ``Monitor`` (episode stats); ``seed``: reset once with it."""
    from gymnasium.wrappers import FlattenObservation
    from stable_baselines3.common.monitor import Monitor

    env = inner_train_env(scenario, scenario_params, env_kwargs, stage_params)
    if policy == "mlp":
        env = FlattenObservation(env)
    env = Monitor(env)
    if seed is not None:
        env.reset(seed=seed)
    return env


def inner_train_env(
    scenario: str,
    scenario_params: dict[str, Any],
    env_kwargs: dict[str, Any],
    stage_params: dict[str, Any] | None = None,
    env_checker: bool = True,
) -> Any:
    """The scenario's environment with the epochs a trained agent is evaluated with (a suite
    task: ``gymnasium.make`` of its id; ``action_mode="rule"``: a
    :class:`~clustergym.learned.rule_select.RuleSelectEnv` on it, choosing among ``rules``).  ``stage_params``: a
    curriculum stage's scenario parameters (on a suite task, its environment on the changed scenario:
    :func:`clustergym.training.curriculum.make_stage_env`).  ``env_checker=False``: without Gymnasium's
    passive env checker (the batched vector environment's condition; it checks nothing a trajectory depends on)."""
    from clustergym.envs import make_env
    from clustergym.suite import find_task

    t = find_task(scenario) if not scenario_params else None
    if stage_params and t is None:  # a plain scenario: the stage changes its parameters
        scenario_params = {**scenario_params, **stage_params}
    if stage_params and t is not None:
        from clustergym.training.curriculum import make_stage_env

        if env_kwargs.get("action_mode") == "rule":
            raise ConfigError("curriculum", "the rule mode trains on the task itself: no stages (--stage) with it")
        return make_stage_env(t, stage_params, env_kwargs)
    if env_kwargs.get("action_mode") == "rule":  # a policy choosing among rules (rule_select)
        from clustergym.learned.rule_select import make_rule_select_env

        rest = {k: v for k, v in env_kwargs.items() if k not in ("action_mode", "rules")}
        bound = t.max_episode_steps if t is not None else None
        return make_rule_select_env(
            t if t is not None else scenario,
            env_kwargs.get("rules"),
            max_episode_steps=bound,
            **rest,
            **scenario_params,
        )
    if t is not None:
        import gymnasium

        return gymnasium.make(t.id, disable_env_checker=not env_checker, **env_kwargs)
    return make_env(
        scenario, epochs=AgentRequirements().epochs, **{"skip_trivial": True, **env_kwargs}, **scenario_params
    )


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


def batched_applies(env_kwargs: dict[str, Any]) -> bool:
    """Whether ``--vec-env batched`` steps these envs as one batch: every in-process env (a scenario, a suite
    task, each curriculum stage) except the ``rule`` mode's (a policy choosing among rules sees other masks
    than the cluster environment's), which runs as ``dummy``."""
    return env_kwargs.get("action_mode") != "rule"


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
    """The ``n_envs`` training envs, seeded so that training episodes never reuse the evaluation seeds 0,
    1, ...; not normalised.  ``vec_env``: ``batched`` (in-process, stepped as one batch:
    :func:`clustergym.training.batched.batched_vec_env`, where :func:`batched_applies`; else as ``dummy``),
    ``dummy`` (SB3's ``DummyVecEnv``) or ``subproc`` (a process per env).  The three give the same
    trajectories for the same seeds (tests/training/test_batched_train.py).  ``stage_params``: a curriculum
    stage's scenario parameters (:func:`make_train_env`)."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    first_seed = 10_000 + 100 * seed
    if vec_env == "batched" and batched_applies(env_kwargs):
        from clustergym.training.batched import batched_vec_env

        inner = functools.partial(
            inner_train_env, scenario, scenario_params, env_kwargs, stage_params, env_checker=False
        )
        return batched_vec_env([inner] * n_envs, first_seed, flatten=policy == "mlp")
    factories: list[Any] = [
        functools.partial(make_train_env, scenario, scenario_params, env_kwargs, policy, stage_params=stage_params)
        for _ in range(n_envs)
    ]
    # subproc: workers started with spawn are this process's children, so once closed their CPU is in
    # RUSAGE_CHILDREN (RunClock, model.json); SB3's default forkserver makes them the fork server's
    venv = SubprocVecEnv(factories, "spawn") if vec_env == "subproc" and n_envs > 1 else DummyVecEnv(factories)
    venv.seed(first_seed)
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


# ---------------------------------------------------------------------------------------- 1. the setup
@dataclass(frozen=True)
class Setup:
    """A checked run: its configuration (a resumed run's: the recorded one) and what follows from it.

    ``scenario`` is the task's name, the preset's, or the scenario file's absolute path;
    ``env_kwargs`` the training envs' settings (the task's defaults and ``--set`` keys; ``horizon``
    in simulated time units); ``time_unit`` the semi-Markov discount's unit (``None``: per step)."""

    config: TrainConfig
    out: Path
    scenario: str
    task: Any
    sc: Any
    scenario_params: dict[str, Any]
    env_kwargs: dict[str, Any]
    algo_kwargs: dict[str, Any]
    policy_params: dict[str, Any]
    n_envs: int
    semi_markov: Any
    time_unit: float | None
    eval_horizon: float | None
    resume: ResumePoint | None

    @property
    def start(self) -> int:
        """The step this process starts from: the resume point's, or 0 for a new run."""
        return self.resume.step if self.resume is not None else 0


def _resume(config: TrainConfig) -> tuple[TrainConfig, ResumePoint]:
    """The configuration of the run ``config.resume`` names, and the checked point it continues from:
    a model of this run (the same loader as ``clustergym run``: a damaged file is the same error),
    below the asked total, not behind later work of the run (:func:`.run_folder.check_resume`)."""
    model, run_dir = resume_point(config.resume)  # type: ignore[arg-type]
    meta = read_metadata(model)
    merged = resumed_config(config, meta, str(model))
    if config.out is not None and Path(config.out).resolve() != run_dir.resolve():
        raise ConfigError("out", f"--resume continues the run in {run_dir}; --out {config.out} is another folder")
    step = int(load_sb3(algo_classes()[merged.algo], model, merged.algo, device="cpu").num_timesteps)
    if merged.timesteps is None:  # a run recorded before its total was: as asked, or 100,000
        merged = dataclasses.replace(merged, timesteps=merged.total)
    point = check_resume(model, run_dir, meta, step, merged.total, config.overwrite)
    return dataclasses.replace(merged, out=run_dir, resume=point.model), point


def _on_task(config: TrainConfig, task: Any, scenario_params: dict[str, Any], env_kwargs: dict[str, Any]) -> None:
    """A suite task fixes its scenario and its episodes' horizon: refuse a ``--set`` of them."""
    from clustergym.suite import find_task

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
    if config.eval_horizon is not None:
        raise ConfigError("--eval-horizon", f"suite task {task.name!r} fixes its episodes' horizon")


def _env_settings(config: TrainConfig, task: Any, sc: Any, env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The training envs' settings: the task's defaults, the queueing's action mode, a queue window
    of 8, and in the rule mode the rules (named in ``model.json``)."""
    env_kwargs = {**(task.env_kwargs() if task is not None else {}), **env_kwargs}
    env_kwargs.setdefault("action_mode", default_action_mode(sc.queueing))
    env_kwargs.setdefault("queue_window", 8)
    if env_kwargs["action_mode"] == "command":
        raise ConfigError(
            "action_mode",
            "the 'command' mode (MultiDiscrete, factorised mask) is for rule-based "
            f"agents; train {config.algo} with action_mode head, slot or admit",
        )
    if env_kwargs["action_mode"] == "rule" or "rules" in env_kwargs:
        from clustergym.learned.rule_select import default_rules, parse_rules

        if env_kwargs["action_mode"] != "rule":
            raise ConfigError("rules", "rules are chosen among in the rule mode: add --set action_mode=rule")
        rules = env_kwargs.get("rules")
        env_kwargs["rules"] = parse_rules(rules) if rules is not None else default_rules(task or sc)
        if config.warm_start and config.warm_start not in env_kwargs["rules"]:
            raise ConfigError(
                "warm_start",
                f"in the rule mode the teacher is one of the rules {env_kwargs['rules']}, not {config.warm_start!r}",
            )
    return env_kwargs


def _algo_settings(
    config: TrainConfig, n_envs: int, more: dict[str, Any], policy_params: dict[str, Any]
) -> dict[str, Any]:
    """The SB3 algorithm's keyword arguments: the measured PPO defaults (:func:`ppo_defaults`), then
    ``algo_kwargs`` and ``algo.*``; each one a setting the algorithm has."""
    import inspect

    algo_kwargs = {**config.algo_kwargs, **more}
    if config.algo in ("ppo", "maskable-ppo"):
        algo_kwargs = {**ppo_defaults(n_envs), **algo_kwargs}
    settings.mapping(policy_params, "policy", ("work_conserving", "wait_bias", "use_time", "server_ids", "pool_types"))
    if policy_params and config.policy != "equivariant":
        raise ConfigError("policy", f"policy.* settings {sorted(policy_params)} are for --policy equivariant")
    internal = {"self", "policy", "env", "seed", "device", "tensorboard_log", "policy_kwargs", "verbose"}
    accepted = set(inspect.signature(algo_classes()[config.algo].__init__).parameters) - internal
    accepted.discard("_init_setup_model")
    for key in algo_kwargs:
        if key not in accepted:
            raise ConfigError(
                f"algo.{key}", f"{config.algo} has no setting {key!r}; it takes {', '.join(sorted(accepted))}"
            )
    return algo_kwargs


def _time_unit(config: TrainConfig, semi_markov: Any, task: Any) -> float | None:
    """``--set semi_markov=true|T``: ``gamma`` per time unit (:mod:`clustergym.training.semi_markov`)."""
    if semi_markov is False:
        return None
    from clustergym.training.semi_markov import semi_markov_time_unit

    unit = semi_markov_time_unit(semi_markov, config.algo, task.time_unit if task is not None else None)
    if config.warm_start:
        raise ConfigError(
            "semi_markov",
            "the warm start fits the critic to per-decision discounted returns; "
            "train with semi_markov without --warm-start",
        )
    return unit


def setup(config: TrainConfig) -> Setup:
    """Check ``config`` against its scenario and resolve it; a resumed run: the recorded configuration
    and its checked starting point.  Everything is checked here, before a step is taken; a new run's
    folder is prepared (new or empty, unless ``overwrite``)."""
    from clustergym.scenarios import resolve_scenario
    from clustergym.suite import find_task

    point = None
    if config.resume is not None:
        config, point = _resume(config)
    params = dict(config.params)
    semi_markov = params.pop("semi_markov", False)  # a training setting, not a scenario parameter
    scenario_params, env_kwargs, more_algo, policy_params = split_params(params)
    scenario = str(config.scenario)
    task = find_task(scenario)
    if task is not None:
        _on_task(config, task, scenario_params, env_kwargs)
        scenario, sc = task.name, task.scenario()
    else:
        sc = resolve_scenario(scenario, **scenario_params)  # fails early, naming a bad parameter
        if Path(scenario).suffix in (".yaml", ".yml", ".json"):
            scenario = str(Path(scenario).resolve())
    env_kwargs = _env_settings(config, task, sc, env_kwargs)
    n = config.n_envs
    n_envs = worker_count(n, "envs") if n is not None or config.vec_env == "subproc" else DEFAULT_ENVS
    algo_kwargs = _algo_settings(config, n_envs, more_algo, policy_params)
    time_unit = _time_unit(config, semi_markov, task)
    eval_horizon = config.eval_horizon if config.eval_horizon is not None else env_kwargs.get("horizon")
    stages = check_stages(config.curriculum, config.total)
    probe = make_train_env(scenario, scenario_params, env_kwargs, config.policy)  # env settings fail here
    _check_stages(stages, probe.observation_space, scenario, scenario_params, env_kwargs, config.policy, policy_params)
    probe.close()
    out = Path("runs/train" if config.out is None else config.out)
    if point is None:
        prepare_out(out, config.overwrite)
    else:  # checked: now the run's folder is made ready (later work removed with --overwrite)
        point = take_over(point)
    config = dataclasses.replace(
        config, scenario=scenario, n_envs=n_envs, timesteps=config.total, resume=point.model if point else None
    )
    return Setup(
        config,
        out,
        scenario,
        task,
        sc,
        scenario_params,
        env_kwargs,
        algo_kwargs,
        policy_params,
        n_envs,
        semi_markov,
        time_unit,
        eval_horizon,
        point,
    )


def metadata(s: Setup) -> dict[str, Any]:
    """``model.json``: what a loaded agent needs (algorithm, policy, scenario, observation, env
    settings: ``horizon``/``reward_scale`` only shape training episodes), the whole configuration
    (``"config"``, what ``--resume`` restores) and the run's status.  A policy trained without masks
    where an invalid action waits is evaluated the same way (``"masked": false``)."""
    c, task, env_kwargs = s.config, s.task, s.env_kwargs
    previous = s.resume.meta if s.resume is not None else {}
    masked = c.algo == "maskable-ppo" or c.policy != "mlp" or env_kwargs.get("invalid_action") != "wait"
    agent_keys = ("action_mode", "rules", "queue_window", "invalid_action", "pair_features")
    return {
        **{k: v for k, v in previous.items() if k in ("warm_start", "curriculum_asked")},
        "algo": c.algo,
        "policy": c.policy,
        "decoding": c.decoding,
        "scenario": s.scenario,
        "scenario_params": s.scenario_params,
        "task": task.id if task is not None else None,
        # the observation the policy learns on: the task's (its scaled features) or the environment's own
        "observation": "task" if task is not None else "env",
        "observation_time_unit": task.time_unit if task is not None else None,
        "masked": masked,
        "env_kwargs": {k: env_kwargs[k] for k in agent_keys if k in env_kwargs},
        "train_env_kwargs": env_kwargs,
        "seed": c.seed,
        "n_envs": s.n_envs,
        "vec_env": c.vec_env,
        "normalize_reward": c.normalize_reward,
        "normalize_obs": c.policy == "mlp",
        "hidden": c.hidden,
        "algo_kwargs": s.algo_kwargs,
        "policy_kwargs": s.policy_params,
        "semi_markov": s.semi_markov,
        "semi_markov_time_unit": s.time_unit,
        "curriculum": [st.to_json() for st in c.curriculum],
        "config": c.to_json(),
        "status": "running",
        "resumed_from": str(c.resume or ""),
        "processes": earlier_processes(previous),
    }


# ---------------------------------------------------------------------------------------- 2. the environment
def training_venv(s: Setup, stage_params: dict[str, Any], stats_of: Path | None = None) -> Any:
    """The normalised training envs of a stage (``{}``: the scenario or task itself): reward
    normalisation, and observation normalisation for the ``mlp`` policy; with ``stats_of``, the
    statistics saved with that model (a resumed run goes on learning them)."""
    from stable_baselines3.common.vec_env import VecNormalize

    c = s.config
    raw = build_venv(s.scenario, s.scenario_params, s.env_kwargs, c.policy, s.n_envs, c.vec_env, c.seed, stage_params)
    loaded = load_stats(stats_of, raw) if stats_of is not None else None
    if loaded is not None:
        return loaded
    gamma = s.algo_kwargs.get("gamma", 0.99)
    return VecNormalize(raw, norm_obs=c.policy == "mlp", norm_reward=c.normalize_reward, gamma=gamma)


# ---------------------------------------------------------------------------------------- 3. the model
def _buffer_kwargs(s: Setup, space: Any) -> dict[str, Any]:
    if s.time_unit is None:
        return {}
    from clustergym.training.semi_markov import semi_markov_buffer_kwargs

    return semi_markov_buffer_kwargs(s.config.algo, space, s.time_unit)


def model_for(s: Setup, venv: Any) -> Any:
    """A new model on ``venv`` (:func:`new_model`: also at a curriculum stage of another cluster size)."""
    c = s.config
    return new_model(
        c.algo,
        c.policy,
        s.env_kwargs["action_mode"],
        venv,
        seed=c.seed,
        hidden=c.hidden,
        policy_params=s.policy_params,
        algo_kwargs=s.algo_kwargs,
        tensorboard_log=str(s.out / "tb"),
        buffer_kwargs=_buffer_kwargs(s, venv.observation_space),
    )


def load_model(s: Setup, venv: Any) -> Any:
    """The resumed run's model, on ``venv`` (its stage's envs)."""
    assert s.resume is not None
    Algo, buffers = algo_classes()[s.config.algo], _buffer_kwargs(s, venv.observation_space)
    path, tb = s.resume.model, str(s.out / "tb")
    return load_sb3(Algo, path, s.config.algo, env=venv, device="cpu", tensorboard_log=tb, **buffers)


def rollout_steps(model: Any) -> int | None:
    """Steps one ``learn`` iteration takes (a rollout of every env): a phase ends at the first
    multiple at or after its end.  ``None`` when it is counted in episodes (DQN's ``train_freq``)."""
    if hasattr(model, "n_steps"):
        return int(model.n_steps * model.n_envs)
    freq = getattr(model, "train_freq", None)
    if freq is not None and getattr(freq.unit, "value", "") == "step":
        return int(freq.frequency * model.n_envs)
    return None


def stages_as_taken(s: Setup, model: Any) -> Setup:
    """The stages, and the run's total, with their steps as the learner takes them: a phase ends at
    the first rollout boundary at or after its end, so a stage's steps are rounded up to whole
    rollouts (a stage whose steps the rounding before it already covered takes none and is left
    out).  A :class:`TrainingWarning` says so when that is not as asked; the setup records the
    steps taken, so that a resumed run follows the same plan."""
    rollout, c = rollout_steps(model), s.config
    if rollout is None or not c.curriculum:
        return s
    taken, skipped, end, start = [], [], 0, 0
    for i, st in enumerate(c.curriculum):
        end += st.steps
        actual = start + max(0, math.ceil((end - start) / rollout)) * rollout
        if actual > start:
            taken.append(Stage(actual - start, st.params))
        else:
            skipped.append(str(i + 1))
        start = actual
    total = start + max(0, math.ceil((c.total - start) / rollout)) * rollout
    if taken == list(c.curriculum) and total == c.total:
        return s
    said = []  # only what differs (a resumed run's stages were rounded when it started)
    if taken != list(c.curriculum):
        asked = ", ".join(f"{st.steps:,}" for st in c.curriculum)
        none = f" (stage {', '.join(skipped)} takes none: the rounding before it covers its steps)" if skipped else ""
        said.append(f"the stages take {', '.join(f'{st.steps:,}' for st in taken)} steps, not {asked} as asked{none}")
    if total != c.total:
        said.append(f"the run {total:,} steps (--timesteps {c.total:,})")
    warnings.warn(
        f"--stage: {', and '.join(said)}: a stage ends at a rollout boundary (rollouts of "
        f"{rollout:,} steps: {s.n_envs} envs x {rollout // s.n_envs}); model.json records the steps taken",
        TrainingWarning,
        stacklevel=3,
    )
    return dataclasses.replace(s, config=dataclasses.replace(c, curriculum=tuple(taken), timesteps=total))


# ---------------------------------------------------------------------------------------- 3b. the warm start
def warm_start(s: Setup, model: Any, venv: Any, stage_params: dict[str, Any]) -> dict[str, Any]:
    """Imitate a rule-based teacher (actor) and fit its returns (critic) before RL
    (:mod:`clustergym.training.imitation`); return what ``model.json`` records of it."""
    from clustergym.training.imitation import clone, collect_demonstrations, return_scale, teacher_params

    c, env_kwargs = s.config, s.env_kwargs
    assert c.warm_start is not None
    t_bc = time.perf_counter()
    # the teacher sees every epoch it asks for (trivial ones too: a rule may keep records across
    # epochs); the demonstrations keep only the decisions the policy will face
    demo_kwargs = env_kwargs if env_kwargs.get("action_mode") == "rule" else {**env_kwargs, "skip_trivial": False}
    demo_env = make_train_env(s.scenario, s.scenario_params, demo_kwargs, c.policy, stage_params=stage_params)
    teacher = teacher_params(c.warm_start, env_kwargs["action_mode"], env_kwargs["queue_window"])
    demos = collect_demonstrations(
        demo_env, c.warm_start, c.warm_start_steps, seed=20_000 + 100 * c.seed, params=teacher
    )
    running, scale = return_scale(demos, model.gamma)
    if c.normalize_reward:  # PPO's reward scaling starts from the statistics the critic was fitted with
        venv.ret_rms.update(running)
    else:
        scale = 1.0
    stats = clone(model.policy, demos, gamma=model.gamma, scale=scale, epochs=c.warm_start_epochs, seed=c.seed)
    if c.verbose:
        print(
            f"warm start: imitated {c.warm_start}{''.join(f' {k}={v}' for k, v in teacher.items())} on {len(demos)} "
            f"decisions ({stats['inexpressible']:.0f} of them not expressible in the action mode: run, not "
            f"imitated), accuracy {stats['accuracy']:.3f}",
            flush=True,
        )
    return {
        "teacher": c.warm_start,
        "teacher_params": teacher,
        "steps": c.warm_start_steps,
        "epochs": c.warm_start_epochs,
        **stats,
        "wall_seconds": time.perf_counter() - t_bc,
    }


# ---------------------------------------------------------------------------------------- 4. the callbacks
def callbacks(s: Setup, meta: dict[str, Any], clock: RunClock | None = None, spent_before: float = 0.0) -> list[Any]:
    """The learner's position (first: Ctrl-C keeps the last update's policy), the CPU budget (second,
    with ``cpu_budget``: the run's CPU seconds so far are ``spent_before``, its earlier processes', and
    ``clock``'s), checkpoints every ``checkpoint_every`` steps (default a tenth of the run; each records
    the process's seconds so far, from ``clock``), the semi-Markov discount's durations, and the periodic
    evaluation; a resumed run continues the schedules where the run left them."""
    from clustergym.training.callbacks import CpuBudget, PeriodicEval, RolloutPosition, UpdateCheckpoint

    c, point = s.config, s.resume
    every = c.checkpoint_every or max(c.total // 10, 1)
    save = functools.partial(checkpoint, s, meta, clock=clock)
    out: list[Any] = [RolloutPosition()]
    if c.cpu_budget is not None and clock is not None:
        out.append(CpuBudget(c.cpu_budget, lambda: spent_before + clock.cpu_now()))
    out.append(UpdateCheckpoint(every, save, s.start))
    if s.time_unit is not None:
        from clustergym.training.semi_markov import SemiMarkovCallback

        out.append(SemiMarkovCallback())
    if c.eval_agents or c.eval_every:
        last, wall = (point.last_eval, point.wall_seconds) if point is not None else (0, 0.0)
        evaluation = PeriodicEval(
            meta, s.out, c.eval_agents, c.eval_every or c.total + 1, c.eval_seeds, s.eval_horizon, c.verbose, last, wall
        )
        out.append(evaluation)
    return out


def checkpoint(s: Setup, meta: dict[str, Any], model: Any, clock: RunClock | None = None) -> Path:
    """``OUT/checkpoints/rl_model_<N>_steps.zip`` and its statistics; ``model.json`` records its digest
    and, with ``clock``, this process's seconds so far (:func:`.run_folder.running_process`: what a
    resumed run counts if this process is killed before it records itself)."""
    step = int(model.num_timesteps)
    path = checkpoint_path(s.out, step)
    save_model(model, model.get_vec_normalize_env(), path)
    if clock is not None:
        running_process(meta, (s.start, step), clock.wall_now(), clock.cpu_now(), clock.torch_threads)
    write_meta(s.out, meta)
    return path


# ---------------------------------------------------------------------------------------- 5. the run
def learn(
    s: Setup,
    model: Any,
    venv: Any,
    meta: dict[str, Any],
    stage_params: dict[str, Any],
    clock: RunClock | None = None,
    spent_before: float = 0.0,
) -> tuple[Any, Any]:
    """Train to ``timesteps``, a phase at a time (one without a curriculum; each stage, then the
    scenario itself, with one); return the model and its envs.  With ``cpu_budget`` (the run's CPU
    seconds so far: ``spent_before``, its earlier processes', and this process's, ``clock``) the run
    ends at the first policy update after the budget is spent, ``meta["stopped_by"] = "cpu_budget"``.
    Ctrl-C, or ``SIGTERM`` (``kill``, a job scheduler's time limit), saves a checkpoint of the policy's
    last update and marks the run interrupted (``--resume`` continues it)."""
    from stable_baselines3.common.callbacks import CallbackList

    from clustergym.training.callbacks import CpuBudget
    from clustergym.training.threads import no_distribution_checks

    c, calls = s.config, callbacks(s, meta, clock, spent_before)
    budget = next((cb for cb in calls if isinstance(cb, CpuBudget)), None)
    fresh = s.resume is None
    try:
        for end, params_of_phase in phases(c.curriculum, c.total):
            if model.num_timesteps >= end:
                continue
            if params_of_phase != stage_params:  # the next stage (or the scenario itself): its envs
                stage_params = params_of_phase
                raw = build_venv(
                    s.scenario, s.scenario_params, s.env_kwargs, c.policy, s.n_envs, c.vec_env, c.seed, stage_params
                )
                model, venv = _enter_stage(model, venv, raw, functools.partial(model_for, s))
                if c.verbose:
                    print(f"[stage @ {model.num_timesteps}] {stage_params or 'the scenario itself'}", flush=True)
            with no_distribution_checks():  # same numbers, less per-call overhead
                model.learn(
                    end - model.num_timesteps,
                    callback=CallbackList(calls),
                    progress_bar=c.progress_bar,
                    reset_num_timesteps=fresh,
                    tb_log_name=c.algo,
                )
            fresh = False
            if budget is not None and budget.exhausted:  # the rest of the run, later stages too, is not trained
                meta["stopped_by"] = "cpu_budget"
                break
    except KeyboardInterrupt:
        if calls[0].in_rollout:  # the steps of an unfinished rollout taught the policy nothing yet
            model.num_timesteps = calls[0].start
        meta["status"] = "interrupted"
        meta["interrupted_at"] = int(model.num_timesteps)
        kept = checkpoint(s, meta, model, clock)
        venv.close()
        raise KeyboardInterrupt(
            f"the policy of step {model.num_timesteps:,} is kept in {kept}; continue the run with "
            f"`clustergym train --resume {s.out}`"
        ) from None
    return model, venv


# ---------------------------------------------------------------------------------------- 6. the saved run
class RunClock:
    """The seconds of one ``clustergym train`` process, part by part: ``setup`` (the configuration, the
    environments, the model), ``warm_start`` (the teacher's demonstrations and the cloning), ``learn``
    (the RL updates, periodic evaluations included) and ``save``.  CPU is user + system of this process
    and of its worker processes once they have ended (``subproc`` environments are counted when
    :func:`save` closes them)."""

    def __init__(self) -> None:
        #: the torch CPU threads of this process's learner (recorded with its seconds)
        self.torch_threads: int | None = None
        self._wall, self._cpu = time.perf_counter(), _cpu_now()
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def mark(self, part: str) -> None:
        """End ``part`` now: the seconds since the previous mark (or the start) are its."""
        wall, cpu = time.perf_counter(), _cpu_now()
        self.wall[part], self.cpu[part] = wall - self._wall, cpu - self._cpu
        self._wall, self._cpu = wall, cpu

    def wall_total(self) -> float:
        """Wall seconds of the parts marked so far."""
        return float(sum(self.wall.values()))

    def cpu_total(self) -> float:
        """CPU seconds of the parts marked so far."""
        return float(sum(self.cpu.values()))

    def cpu_now(self) -> float:
        """CPU seconds of this process so far, the part not yet marked included."""
        return self.cpu_total() + _cpu_now() - self._cpu

    def wall_now(self) -> float:
        """Wall seconds of this process so far, the part not yet marked included."""
        return self.wall_total() + time.perf_counter() - self._wall

    def parts(self) -> dict[str, dict[str, float]]:
        """``{part: {"wall_seconds": ..., "cpu_seconds": ...}}`` in the order the parts ran."""
        return {k: {"wall_seconds": self.wall[k], "cpu_seconds": self.cpu[k]} for k in self.wall}


def _cpu_now() -> float:
    """CPU seconds (user + system) so far of this process and of its child processes that have ended."""
    own = time.process_time()
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return own
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + ch.ru_utime + ch.ru_stime


def save(s: Setup, model: Any, venv: Any, meta: dict[str, Any], clock: RunClock) -> Path:
    """``OUT/model.zip`` with its normalisation statistics, and ``model.json`` marked finished with
    the steps taken and the process's seconds, wall and CPU (:class:`RunClock`: the whole process,
    cloning included, and its parts), added to the run's processes and totals
    (:func:`.run_folder.record_process`); closes ``venv`` first so that its worker processes' CPU is
    counted."""
    path = s.out / "model.zip"
    save_model(model, venv, path)
    venv.close()
    clock.mark("save")
    meta.update(
        timesteps=int(model.num_timesteps),
        status="finished",
        policy_class=type(model.policy).__name__,
        wall_seconds_last_run=clock.wall_total(),
        cpu_seconds_last_run=clock.cpu_total(),
        seconds_last_run_parts=clock.parts(),
    )
    record_process(
        meta, (s.start, meta["timesteps"]), "finished", clock.wall_total(), clock.cpu_total(), clock.torch_threads
    )
    write_meta(s.out, meta)
    return path


def _record_interrupted(s: Setup, meta: dict[str, Any], clock: RunClock) -> None:
    """After Ctrl-C (the checkpoint is saved): this process's seconds in ``model.json``, so that the
    resumed run's totals count them."""
    clock.mark("interrupted")
    record_process(
        meta,
        (s.start, meta.get("interrupted_at", s.start)),
        "interrupted",
        clock.wall_total(),
        clock.cpu_total(),
        clock.torch_threads,
    )
    write_meta(s.out, meta)


def describe_run(run_dir: str | Path) -> str:
    """One line on a finished run: the algorithm, the policy (its class), the task or scenario, the
    steps and the time of its last process."""
    meta = json.loads((Path(run_dir) / "model.json").read_text(encoding="utf-8"))
    on = f"suite task {meta['scenario']}" if meta.get("task") else f"scenario {meta['scenario']}"
    policy = f"the {meta['policy']} policy ({meta.get('policy_class', '?')})"
    stopped = ""
    if meta.get("stopped_by") == "cpu_budget":
        stopped = (
            f" (its CPU budget of {meta['config']['cpu_budget']:g} s spent: "
            f"{meta.get('cpu_seconds_total') or 0:.0f} s, before the {meta['config']['timesteps']:,} steps asked)"
        )
    return (
        f"trained {meta['algo']} with {policy} on {on} for {meta['timesteps']:,} steps in "
        f"{meta.get('wall_seconds_last_run', 0):.0f} s{stopped} -> {Path(run_dir) / 'model.zip'}"
    )


def train(config: TrainConfig | str | None = None, algo: str | None = None, **kwargs: Any) -> Path:
    """Train as ``config`` says (:class:`TrainConfig`) and save ``OUT/model.zip``; return its path.

    The keyword form ``train(scenario, algo, timesteps=..., ..., **params)`` builds the configuration
    (:meth:`TrainConfig.from_kwargs`: keywords that are not fields are ``--set`` pairs).  With
    ``resume`` the run continues with the configuration it recorded in ``model.json``, in its own
    folder, up to ``timesteps`` (default: its own total); a setting given again must have the
    recorded value.  The steps, in order: :func:`setup`, :func:`training_venv`, :func:`model_for`
    (or :func:`load_model`), :func:`warm_start`, :func:`callbacks`, :func:`learn`, :func:`save`.

    Raises:
        ConfigError: a bad setting, scenario, output folder or resume point; nothing is trained.
        KeyboardInterrupt: Ctrl-C; the policy of the last update is kept as a checkpoint.
    """
    if not isinstance(config, TrainConfig):
        config = TrainConfig.from_kwargs(config, algo, **kwargs)
    elif algo is not None or kwargs:
        raise TypeError("train(config) takes no other argument: put the settings in the TrainConfig")
    require_extra(("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "tqdm"), "train", "clustergym train")
    from clustergym.training.threads import env_workers, set_torch_threads

    clock = RunClock()
    s = setup(config)
    earlier = [p["cpu_seconds"] for p in earlier_processes(s.resume.meta)] if s.resume is not None else []
    if s.config.cpu_budget is not None and None in earlier:
        raise ConfigError(
            "cpu_budget",
            f"{s.out}: the CPU of an earlier process of this run was not recorded; a budget cannot count it",
        )
    spent_before = float(sum(earlier))
    # never more torch threads than the cores the environment processes leave (a warning says so)
    clock.torch_threads = set_torch_threads(s.config.torch_threads, env_workers(s.n_envs, s.config.vec_env))
    stage_params = next((p for end, p in phases(s.config.curriculum, s.config.total) if end > s.start), {})
    venv = training_venv(s, stage_params, s.resume.model if s.resume is not None else None)
    model = load_model(s, venv) if s.resume is not None else model_for(s, venv)
    asked = s.config.curriculum
    s = stages_as_taken(s, model)
    meta = metadata(s)
    if s.config.curriculum != asked:
        meta["curriculum_asked"] = [st.to_json() for st in asked]
    write_meta(s.out, meta)
    clock.mark("setup")
    if s.config.warm_start and s.resume is None:  # a resumed run continues its warm-started policy
        meta["warm_start"] = warm_start(s, model, venv, stage_params)
        clock.mark("warm_start")
        meta["warm_start"]["cpu_seconds"] = clock.cpu["warm_start"]
        write_meta(s.out, meta)
    try:
        with sigterm_as_interrupt():
            model, venv = learn(s, model, venv, meta, stage_params, clock, spent_before)
    except KeyboardInterrupt:
        if meta.get("status") == "interrupted":  # learn kept a checkpoint
            _record_interrupted(s, meta, clock)
        raise
    clock.mark("learn")
    return save(s, model, venv, meta, clock)
