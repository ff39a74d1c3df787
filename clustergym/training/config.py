"""The configuration of a training run (``clustergym train``): one typed, frozen record, checked in one place.

:class:`TrainConfig` holds every setting of :func:`clustergym.training.train.train`; its
``__post_init__`` checks each field on its own (choices, ranges, combinations that no scenario can
make valid).  What depends on the scenario (its parameters, the environment settings, the
curriculum's stages) is checked when the run is set up (:func:`clustergym.training.train.setup`),
before the first step.

A run records its configuration in ``model.json`` (``"config"``: :meth:`TrainConfig.to_json`), as
resolved: the scenario file's absolute path, the number of environments, the curriculum's stages as
taken.  ``--resume`` continues from it (:func:`resumed_config`): a setting given again must have the
recorded value, a setting left at its default takes the recorded one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clustergym.errors import ConfigError
from clustergym.learned.model_agent import ALGOS, DECODINGS
from clustergym.training.curriculum import Stage, check_stages
from clustergym.validation import settings

__all__ = ["TrainConfig", "resumed_config", "recorded_config", "POLICIES", "VEC_ENVS", "RUN_FIELDS"]

#: policy kinds accepted by ``--policy``
POLICIES = ("mlp", "equivariant")
#: how the training envs run (``--vec-env``)
VEC_ENVS = ("batched", "dummy", "subproc")
#: how this invocation runs, not what it trains: not recorded in ``model.json``, not restored by ``--resume``
RUN_FIELDS = ("out", "overwrite", "resume", "progress_bar", "verbose")


@dataclass(frozen=True)
class TrainConfig:
    """Every setting of a training run (``clustergym train``'s options).  Steps are environment steps
    (decision epochs x commands), summed over the ``n_envs`` environments."""

    #: preset name, scenario file or suite task (``rms-trap``, ``clustergym/rms-trap-v1``); ``None`` with ``resume``
    scenario: str | None = None
    #: ``ppo``, ``maskable-ppo``, ``dqn`` or ``a2c`` (:data:`clustergym.learned.model_agent.ALGOS`)
    algo: str = "maskable-ppo"
    #: ``mlp`` (SB3's MLP on the flattened observation) or ``equivariant`` (one network per (job, server) pair)
    policy: str = "equivariant"
    #: total steps of the run, a resumed run's included; ``None``: 100,000 for a new run, the recorded total on resume
    timesteps: int | None = None
    #: environments per rollout; ``None``: 16 in-process ones, or the available cores with ``vec_env="subproc"``
    n_envs: int | None = None
    #: ``batched`` (in-process, the envs stepped as one batch, :class:`~clustergym.envs.vector.BatchedVectorEnv`;
    #: the ``rule`` action mode runs as ``dummy``), ``dummy`` (SB3's ``DummyVecEnv``, in-process, one env at
    #: a time) or ``subproc`` (a process per env); every one gives the same trajectories for the same seeds
    vec_env: str = "batched"
    #: seeds the model and the training envs (training episodes use seeds from 10,000 + 100 x seed)
    seed: int = 0
    #: ``--set`` pairs: scenario parameters, env settings (``action_mode``, ``horizon``, ...),
    #: ``algo.<name>``, ``policy.<name>``, ``semi_markov`` (:func:`clustergym.training.train.split_params`)
    params: Mapping[str, Any] = field(default_factory=dict)
    #: keyword arguments of the SB3 algorithm (``algo.<name>`` pairs of ``params`` are added to them)
    algo_kwargs: Mapping[str, Any] = field(default_factory=dict)
    #: width of the policy's layers (the equivariant network's, or each of the MLP's two hidden layers)
    hidden: int = 64
    #: VecNormalize's return-based reward scaling
    normalize_reward: bool = True
    #: how the saved model acts when evaluated: ``two-level``, ``argmax`` or ``sample``
    decoding: str = "two-level"
    #: baselines evaluated beside the policy, on the same seeds
    eval_agents: tuple[str, ...] = ()
    #: steps between evaluations (0: only at the end of each stage and of the run)
    eval_every: int = 0
    #: seeds of the evaluation episodes (never the training envs' seeds)
    eval_seeds: tuple[int, ...] = (0, 1, 2)
    #: evaluation episode length in simulated time units (``None``: the training episodes' ``horizon``)
    eval_horizon: float | None = None
    #: steps between checkpoints (``None``: a tenth of ``timesteps``)
    checkpoint_every: int | None = None
    #: curriculum stages trained before the scenario itself, within ``timesteps`` (:mod:`.curriculum`)
    curriculum: tuple[Stage, ...] = ()
    #: a rule-based agent to imitate before RL (behaviour cloning, :mod:`.imitation`), new runs only
    warm_start: str | None = None
    #: the teacher's decisions recorded for the warm start
    warm_start_steps: int = 20_000
    #: passes over the teacher's decisions
    warm_start_epochs: int = 10
    #: torch CPU threads of the learner, cut (with a warning) to the cores the environment processes
    #: leave, and in a sweep to the cores over the runs at once; the weights depend on the count in
    #: their last bits (the same count, the same run), so each process's count is in ``model.json``
    torch_threads: int = 1
    #: CPU seconds the whole run may take, every ``clustergym train`` process of it (``model.json``'s
    #: ``cpu_seconds_total``); once spent, the run ends at the next policy update, whose policy is the
    #: final model (``None``: no budget).  A resumed run may be given another one
    cpu_budget: float | None = None
    #: output folder (``None``: ``runs/train``; with ``resume``: the run's own folder)
    out: str | Path | None = None
    #: a new run may write into a folder that holds files (the earlier run's are removed); a resume
    #: may go back to an earlier checkpoint of its run (the later ones are removed)
    overwrite: bool = False
    #: a checkpoint ``.zip``, a ``model.zip`` or a run folder of an earlier run, to continue
    resume: str | Path | None = None
    #: SB3's progress bar
    progress_bar: bool = False
    #: print the evaluations, the stages and a last line
    verbose: bool = True

    def __post_init__(self) -> None:
        """Each field checked on its own, and the combinations no scenario makes valid."""
        if self.scenario is None and self.resume is None:
            raise ConfigError("scenario", "a scenario is required (or --resume of an earlier run)")
        settings.choice(self.algo, "algo", ALGOS)
        settings.choice(self.policy, "policy", POLICIES)
        settings.choice(self.vec_env, "vec_env", VEC_ENVS)
        settings.choice(self.decoding, "decoding", DECODINGS)
        settings.number(self.timesteps, "timesteps", lo=1, integer=True, allow_none=True)
        settings.number(self.n_envs, "envs", lo=1, integer=True, allow_none=True)
        settings.number(self.seed, "seed", lo=0, integer=True)
        for name in ("hidden", "warm_start_steps", "warm_start_epochs", "torch_threads"):
            settings.number(getattr(self, name), name, lo=1, integer=True)
        settings.number(self.eval_every, "eval_every", lo=0, integer=True)
        settings.number(self.checkpoint_every, "checkpoint_every", lo=1, integer=True, allow_none=True)
        settings.number(self.eval_horizon, "eval_horizon", lo=0, lo_open=True, allow_none=True)
        settings.number(self.cpu_budget, "cpu_budget", lo=0, lo_open=True, allow_none=True)
        for name in ("normalize_reward", "overwrite", "progress_bar", "verbose"):
            settings.boolean(getattr(self, name), name)
        object.__setattr__(self, "eval_seeds", tuple(self.eval_seeds))
        object.__setattr__(self, "eval_agents", tuple(self.eval_agents))
        for s in self.eval_seeds:
            settings.number(s, "eval_seeds", lo=0, integer=True)
        object.__setattr__(self, "curriculum", tuple(check_stages(self.curriculum, self.timesteps or 10**18)))
        object.__setattr__(self, "params", dict(self.params))
        object.__setattr__(self, "algo_kwargs", dict(self.algo_kwargs))
        if self.cpu_budget is not None and self.vec_env == "subproc" and self.n_envs != 1:
            # the budget counts this process and its ended children: a live env worker's CPU is unseen
            raise ConfigError(
                "cpu_budget",
                "a CPU budget counts the env processes' CPU only once they end, and --vec-env subproc's run "
                "until the training ends: use --vec-env batched (the default) or dummy with --cpu-budget",
            )
        if self.algo == "dqn" and self.policy != "mlp":
            raise ConfigError("policy", "dqn trains the mlp policy only (the equivariant policy is an actor-critic)")
        if self.warm_start is not None:
            if self.policy != "equivariant" or self.algo == "dqn":
                raise ConfigError(
                    "warm_start",
                    "the behaviour-cloning warm start trains the equivariant actor-critic "
                    "(--policy equivariant, --algo ppo, maskable-ppo or a2c)",
                )

    @property
    def total(self) -> int:
        """The run's total steps (``timesteps``, 100,000 when not given)."""
        return 100_000 if self.timesteps is None else int(self.timesteps)

    def to_json(self) -> dict[str, Any]:
        """The recorded fields (all but :data:`RUN_FIELDS`) as JSON values (``model.json``'s ``"config"``)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name in RUN_FIELDS:
                continue
            value = getattr(self, f.name)
            if f.name == "curriculum":
                value = [s.to_json() for s in value]
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, data: Any, where: str, **run: Any) -> TrainConfig:
        """The configuration recorded in ``where`` (``model.json``), with the run fields ``run``."""
        if not isinstance(data, Mapping):
            raise ConfigError("resume", f"{where}: damaged metadata, its config is not a JSON object")
        known = {f.name for f in dataclasses.fields(cls)} - set(RUN_FIELDS)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError("resume", f"{where}: unknown setting {unknown[0]!r} in its config")
        return cls(**data, **run)

    @classmethod
    def from_kwargs(cls, scenario: str | None, algo: str | None = None, **kwargs: Any) -> TrainConfig:
        """``train(scenario, algo, timesteps=..., ..., **params)``: the keyword form; keywords that are
        not fields are ``--set`` pairs (``num_servers=4``, ``**{"algo.n_steps": 64}``); ``None`` for
        ``algo``, ``policy`` or ``seed`` means the default."""
        names = {f.name for f in dataclasses.fields(cls)}
        given = {k: v for k, v in kwargs.items() if k in names and not (v is None and k in ("policy", "seed"))}
        params = {**given.pop("params", {}), **{k: v for k, v in kwargs.items() if k not in names}}
        if algo is not None:
            given["algo"] = algo
        return cls(scenario=scenario, params=params, **given)


def _defaults() -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(TrainConfig):
        factory: Any = f.default_factory
        out[f.name] = f.default if f.default is not dataclasses.MISSING else factory()
    return out


def recorded_config(meta: Mapping[str, Any], where: str, **run: Any) -> TrainConfig:
    """The configuration a run recorded in its ``model.json`` (``meta``); runs saved before the
    ``"config"`` record give theirs from the metadata's other keys (their evaluation settings and
    total steps were not recorded: the defaults)."""
    if "config" in meta:
        return TrainConfig.from_json(meta["config"], where, **run)
    legacy = {k: meta[k] for k in ("scenario", "algo", "policy", "seed", "n_envs", "vec_env", "hidden") if k in meta}
    legacy.update({k: meta[k] for k in ("normalize_reward", "decoding", "curriculum") if k in meta})
    return TrainConfig(**legacy, params=recorded_settings(meta), **run)


def recorded_settings(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Every ``--set`` value a run trained with, its defaults included, as ``--set`` keys."""
    recorded = {
        "algo.": meta.get("algo_kwargs", {}),
        "policy.": meta.get("policy_kwargs", {}),
        "": {
            **meta.get("scenario_params", {}),
            **meta.get("train_env_kwargs", meta.get("env_kwargs", {})),
            **{k: v for k, v in meta.items() if k == "semi_markov"},
        },
    }
    return {prefix + k: v for prefix, d in recorded.items() for k, v in d.items()}


def _same_scenario(given: str, recorded: Any) -> bool:
    return given == recorded or (Path(given).exists() and str(Path(given).resolve()) == recorded)


def resumed_config(given: TrainConfig, meta: Mapping[str, Any], where: str) -> TrainConfig:
    """The recorded configuration of the run ``given.resume`` continues (``meta``: its
    ``model.json``), with ``given``'s run fields, total and CPU budget (when given).  A field of ``given`` left at its default
    takes the recorded value; one given with another value is refused, naming both (``--set`` pairs
    are compared with every value the run trained with, defaults included)."""
    if given.warm_start is not None:
        raise ConfigError("warm_start", "a resumed run continues its own policy; --warm-start is for new runs")
    run = {name: getattr(given, name) for name in RUN_FIELDS}
    recorded = recorded_config(meta, where, **run)
    defaults = _defaults()
    for f in dataclasses.fields(TrainConfig):
        name, value, was = f.name, getattr(given, f.name), getattr(recorded, f.name)
        if (
            name in RUN_FIELDS
            or name in ("timesteps", "params", "cpu_budget")
            or value == defaults[name]
            or value == was
        ):
            continue
        if name == "scenario" and _same_scenario(value, was):
            continue
        if name == "curriculum":
            raise ConfigError(
                "curriculum",
                f"{where} continues a run with the stages {[s.to_json() for s in was]}: drop --stage "
                "(--resume restores them)",
            )
        raise ConfigError(
            name,
            f"{where} continues a run trained with {name} {was!r}, not {value!r}: drop "
            f"it (--resume restores the run's settings) or start a new run",
        )
    flat = recorded_settings(meta)
    for key, value in given.params.items():
        if key not in flat or flat[key] != value:
            was = f"{key}={flat[key]!r}" if key in flat else f"no {key} (its default)"
            raise ConfigError(
                key,
                f"{where} continues a run trained with {was}, not {key}={value!r}: drop --set "
                f"{key} (--resume restores the run's settings) or start a new run",
            )
    total = given.timesteps if given.timesteps is not None else recorded.timesteps
    budget = given.cpu_budget if given.cpu_budget is not None else recorded.cpu_budget
    return dataclasses.replace(recorded, timesteps=total, cpu_budget=budget)
