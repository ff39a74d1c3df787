"""A trained SB3 model as a clustergym agent (``clustergym run X --agent path/model.zip``).

A training run (:mod:`clustergym.training.train`) writes, in its output folder::

    model.zip            the SB3 model (weights, hyperparameters, policy class and kwargs)
    model.json           what the agent needs besides the weights: algorithm, policy kind,
                         scenario and its parameters, env kwargs (action mode, queue window)
    vecnormalize.pkl     VecNormalize statistics (observation normalisation for ``mlp``)
    checkpoints/         rl_model_<N>_steps.zip (+ rl_model_vecnormalize_<N>_steps.pkl)

:func:`load_model_agent` needs only the path of a ``.zip`` (final model or checkpoint).
"""

from __future__ import annotations

import json
import pickle
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from clustergym.agent_api import AgentContext, AgentRequirements, agent_context
from clustergym.errors import ConfigError, require_extra
from clustergym.validation import choice

__all__ = ["ModelAgent", "load_model_agent", "read_metadata", "ALGOS", "META_NAME", "VECNORM_NAME"]

META_NAME = "model.json"
VECNORM_NAME = "vecnormalize.pkl"


def algo_classes() -> dict[str, Any]:
    require_extra(("torch", "stable_baselines3", "sb3_contrib"), "train", "a trained model")
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import A2C, DQN, PPO

    return {"ppo": PPO, "maskable-ppo": MaskablePPO, "dqn": DQN, "a2c": A2C}


#: algorithm names accepted by ``clustergym train --algo``
ALGOS = ("ppo", "maskable-ppo", "dqn", "a2c")


def read_metadata(model_path: Path) -> dict[str, Any]:
    """``model.json`` beside the model, or in the run folder above a checkpoint.

    Raises:
        ConfigError: there is none, or it is damaged (not JSON, not an object, no known ``algo``
            or ``policy``); the message names the file.
    """
    for cand in (model_path.with_suffix(".json"), model_path.parent / META_NAME, model_path.parent.parent / META_NAME):
        if cand.is_file():
            try:
                meta = json.loads(cand.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                raise ConfigError("agent", f"{cand}: damaged metadata, not valid JSON ({e})") from None
            if not isinstance(meta, dict):
                raise ConfigError("agent", f"{cand}: damaged metadata, expected a JSON object")
            if meta.get("algo") not in ALGOS:
                raise ConfigError(
                    "agent", f"{cand}: unknown algorithm {meta.get('algo')!r} (expected one of {', '.join(ALGOS)})"
                )
            if meta.get("policy") not in ("mlp", "equivariant"):
                raise ConfigError(
                    "agent", f"{cand}: unknown policy {meta.get('policy')!r} (expected mlp or equivariant)"
                )
            return meta
    raise ConfigError(
        "agent",
        f"{model_path}: no {META_NAME} beside it or in its run folder; models saved by `clustergym train` have one",
    )


def _ends_as_a_zip(path: Path) -> bool:
    """The zip's end-of-central-directory record ends the file (with its comment): a truncated zip
    may still look like one (a model's policy.pth is itself a zip, whose record comes earlier)."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        f.seek(max(0, size - 65_557))
        tail = f.read()
    pos = tail.rfind(b"PK\x05\x06")
    return pos >= 0 and pos + 22 + int.from_bytes(tail[pos + 20 : pos + 22], "little") == len(tail)


def _zip_data(path: Path) -> dict[str, Any]:
    import json
    import zipfile

    with zipfile.ZipFile(path) as z:
        try:
            return dict(json.loads(z.read("data")))
        except Exception:
            return {}


def load_sb3(Algo: Any, path: Path, algo: str, **kwargs: Any) -> Any:
    """``Algo.load(path)``, with a :class:`ConfigError` naming the file and the problem for a file
    that is not such a model: not a zip (or a truncated one), a zip of another program, a damaged
    member, or a model of another algorithm than its ``model.json`` says."""
    import zipfile

    if not zipfile.is_zipfile(path):
        raise ConfigError(
            "agent", f"{path}: not a model saved by `clustergym train` (not a zip file, or a truncated one)"
        )
    if not _ends_as_a_zip(path):
        raise ConfigError("agent", f"{path}: a truncated or damaged file (its zip end record is not at its end)")
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            bad = z.testzip()
    except Exception as e:  # zipfile.BadZipFile, zlib.error, OSError, EOFError: a damaged member or directory
        raise ConfigError("agent", f"{path}: damaged zip file ({type(e).__name__}: {e})") from None
    missing = {"data", "policy.pth"} - names
    if missing:
        raise ConfigError(
            "agent",
            f"{path}: not a Stable-Baselines3 model (no {', '.join(sorted(missing))} in "
            "the zip): a file of another program?",
        )
    if bad is not None:
        raise ConfigError("agent", f"{path}: damaged member {bad!r} (its checksum does not match)")
    if "custom_objects" not in kwargs:
        # the policy class is pickled by module path; models saved before the package's
        # ``agents`` -> ``learned`` rename name the old path, so supply the class by its kind
        from clustergym.learned import policies

        data = _zip_data(path)
        module = (data.get("policy_class") or {}).get("__module__", "")
        if module.startswith("clustergym."):
            masked = "Maskable" in Algo.__name__
            cls = policies.EquivariantMaskablePolicy if masked else policies.EquivariantPolicy
            kwargs["custom_objects"] = {"policy_class": cls}
    try:
        model = Algo.load(str(path), **kwargs)
    except Exception as e:  # SB3 and torch raise many kinds: a bad pickle, a state dict of other shapes, ...
        first = (str(e).strip().splitlines() or [""])[-1].strip()[:300]
        raise ConfigError(
            "agent",
            f"{path}: cannot be loaded as a {algo} model ({type(e).__name__}: {first}); "
            f"is its {META_NAME} the one it was saved with?",
        ) from None
    expected = Algo.__name__
    if type(model).__name__ != expected:
        raise ConfigError("agent", f"{path}: loads as {type(model).__name__}, but its {META_NAME} says {algo}")
    return model


def vecnormalize_path(model_path: Path) -> Path | None:
    """The VecNormalize statistics saved with a model or a checkpoint."""
    m = re.fullmatch(r"(.*)_(\d+)_steps", model_path.stem)
    cands = [model_path.parent / f"{m.group(1)}_vecnormalize_{m.group(2)}_steps.pkl"] if m else []
    cands.append(model_path.parent / VECNORM_NAME)
    return next((c for c in cands if c.is_file()), None)


#: how a model acts when asked for its deterministic action (``model.json``'s ``decoding``, or the
#: model's parameter ``agent.decoding``): ``argmax`` of the masked logits; ``two-level``
#: (:func:`two_level_argmax`); ``sample``: a draw from the masked softmax with the agent's own
#: generator, seeded by the episode's seed (a stochastic policy, reproducible seed by seed)
DECODINGS = ("argmax", "two-level", "sample")
#: action modes whose last action (WAIT or REJECT) stands against all the placements together
TWO_LEVEL_MODES = ("head", "slot", "admit")


def two_level_argmax(logits: np.ndarray) -> int:
    """The deterministic action of a policy over ``placements + [WAIT or REJECT]``: the last action if
    the policy gives it at least as much probability as all the placements together, else the most
    probable placement.

    The plain argmax compares WAIT (or REJECT) with each placement on its own: a policy that places
    a job with probability 0.8, spread over ten servers, and waits with 0.2 would always wait.  The
    two-level rule decides "place or not" first, then where, as the stochastic policy does in effect.
    """
    z = np.asarray(logits, dtype=np.float64)
    p = np.exp(z - z.max())
    if p[-1] >= p[:-1].sum():
        return int(z.size - 1)
    return int(np.argmax(z[:-1]))


class ModelAgent:
    """A trained policy driven through the agent protocol.

    ``predict(obs, deterministic=True)`` takes the env's ``Dict`` observation,
    applies the policy (flattening and normalising it as in training for the
    ``mlp`` policy), and returns the best *valid* action (masked argmax of the
    logits or Q-values); ``deterministic=False`` samples the masked softmax
    with the agent's own generator.  A model trained without masks where an
    invalid action acts as WAIT (``model.json``: ``"masked": false``; PPO, A2C
    or DQN with the ``mlp`` policy on a suite task) acts as it was trained: the
    argmax of all its logits, an invalid choice then waiting.  A model whose ``model.json`` says
    ``"decoding": "two-level"`` (every model trained since issue #20) decides deterministically with
    :func:`two_level_argmax` in the placement modes.  An equivariant policy is rebuilt for the
    env's spaces at :meth:`reset`, so it runs on any number of servers.

    The agent feeds the policy the observation it was trained on (``model.json``: ``"observation"``,
    ``task`` for a run on a suite task, ``env`` for one on a scenario; older models: ``task`` when
    they name a task): a model trained on a scenario and run on a suite task reads the environment's
    own observation beneath the task's (a wrapper with ``observation_time_unit``, as
    :class:`clustergym.suite.env.TaskEnv`), and one trained on a task and run on a scenario reads it
    scaled as its task scales it (:func:`clustergym.envs.observation.scaled_observation`, with the time
    unit ``model.json`` records as ``observation_time_unit``).  The policy never sees features scaled
    otherwise than in training.

    A model trained in the ``rule`` mode (``model.json``: ``env_kwargs.action_mode == "rule"`` and
    ``env_kwargs.rules``; :mod:`clustergym.learned.rule_select`) chooses a rule at the first call of
    each decision epoch and returns that rule's commands until its WAIT; it needs every epoch its
    rules need, and is an oracle if one of them is.
    """

    description = "a trained Stable-Baselines3 model"

    def __init__(self, model: Any, meta: dict[str, Any], obs_rms: Any = None, name: str = "model"):
        self.model = model
        self.meta = meta
        self.obs_rms = obs_rms
        self.name = name
        self.policy = model.policy
        self.policy.set_training_mode(False)
        self._policies: dict[Any, Any] = {}
        self._obs_space: Any = None
        self.rng = np.random.default_rng(0)
        # which observation the policy was trained on (the class docstring), and how to get it here
        self._trained_on = meta.get("observation") or ("task" if meta.get("task") else "env")
        self._adapt: Any = None
        env_kwargs = meta.get("env_kwargs", {})
        self.rules: list[str] | None = None
        self._mode = env_kwargs.get("action_mode") or "head"  # unset: the default, head or admit (both two-level)
        if env_kwargs.get("action_mode") == "rule":  # a policy choosing among rules (rule_select)
            from clustergym.learned.rule_select import RuleDriver, make_rule, parse_rules

            self.rules = parse_rules(env_kwargs.get("rules", ()), "agent")
            self._allow_oracle = bool(meta.get("allow_oracle", False))
            self._rule_agents = [make_rule(r, "agent") for r in self.rules]
            self._driver = RuleDriver(self._rule_agents, self.rules)
            self._chosen = -1
            self._epoch = -1
            env_kwargs = {k: v for k, v in env_kwargs.items() if k not in ("action_mode", "rules")}
        self.requirements = AgentRequirements(
            action_mode=env_kwargs.get("action_mode"),
            skip_trivial=True,
            observes=True,
            queueing=("central", "loss"),
            env_kwargs=tuple(sorted(env_kwargs.items())),
        )

    def requirements_for(self, scenario: Any) -> AgentRequirements:
        if self.rules is not None:
            from clustergym.learned.rule_select import check_rules, rules_requirements

            agents = check_rules(self.rules, scenario, allow_oracle=self._allow_oracle, field="agent")
            return replace(rules_requirements(agents, scenario), env_kwargs=self.requirements.env_kwargs)
        return (
            replace(self.requirements, queueing=(scenario.queueing,))
            if scenario.queueing in ("central", "loss")
            else self.requirements
        )

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        from gymnasium.spaces import Discrete

        from clustergym.learned.policies import transfer_policy

        if not isinstance(context, AgentContext):  # an environment, from a script
            context = agent_context(context, seed)
        # the spaces of the env as the agent sees it (a wrapper may change the observation, as a suite task's does)
        obs_space, act_space = context.observation_space, context.action_space
        obs_space = self._observation_for(context, obs_space)
        self.rng = np.random.default_rng(np.random.SeedSequence([0 if seed is None else seed, 0x5B3]))
        if self.rules is not None:
            from clustergym.learned.rule_select import rule_observation_space

            obs_space, act_space = rule_observation_space(obs_space, len(self.rules)), Discrete(len(self.rules))
            self._driver.reset(context, seed)
            self._view = context.view
            self._epoch, self._chosen = -1, -1
        if self.meta["policy"] == "mlp":
            from gymnasium.spaces import flatten_space

            self._obs_space = obs_space
            flat = flatten_space(obs_space)
            if flat.shape != self.policy.observation_space.shape or act_space != self.policy.action_space:
                raise ConfigError(
                    "agent",
                    f"{self.name}: the mlp policy was trained on observations of shape "
                    f"{self.policy.observation_space.shape} and actions "
                    f"{self.policy.action_space}; this env has {flat.shape} and "
                    f"{act_space} (train with --policy equivariant to change sizes)",
                )
            return
        if not isinstance(act_space, Discrete):
            raise ConfigError("agent", f"{self.name}: the equivariant policy acts in a Discrete space, not {act_space}")
        key = (obs_space["free"].shape, obs_space["queue_jobs"].shape, act_space.n)
        if key not in self._policies:
            self._policies[key] = transfer_policy(self.model.policy, obs_space, act_space)
        self.policy = self._policies[key]

    def _observation_for(self, context: AgentContext, space: Any) -> Any:
        """The observation space the policy reads in ``context``; sets :attr:`_adapt`, the function from
        the env's observation to the policy's (``None``: as it is)."""
        from clustergym.envs.observation import scaled_observation, scaled_observation_space

        self._adapt = None
        scaled = context.observation_time_unit is not None  # the agent is shown a scaled observation (a task's)
        base = context.base_observation
        if self._trained_on == "env" and scaled and base is not None:  # the environment's own, beneath the scaled one
            self._adapt = lambda _obs: base()
            return context.base_observation_space
        if self._trained_on == "task" and not scaled:  # scaled as the model's task scales it
            tau = self.meta.get("observation_time_unit")
            if tau is None:
                raise ConfigError(
                    "agent",
                    f"{self.name}: this model learned on the scaled observation of {self.meta.get('task')} and "
                    "its model.json does not record the time unit (observation_time_unit): run it on that task",
                )
            R, J = context.view.num_resources, context.view.num_types
            self._adapt = lambda obs: scaled_observation(obs, R, J, float(tau))
            return scaled_observation_space(space)
        return space

    def _model_input(self, obs: dict[str, np.ndarray]) -> Any:
        if self.meta["policy"] != "mlp":
            return obs
        from gymnasium.spaces import flatten

        assert self._obs_space is not None, "call reset(env) first"
        x = np.asarray(flatten(self._obs_space, obs), dtype=np.float32)
        if self.obs_rms is not None:
            clip, eps = self.meta.get("clip_obs", 10.0), self.meta.get("norm_epsilon", 1e-8)
            x = np.clip((x - self.obs_rms.mean) / np.sqrt(self.obs_rms.var + eps), -clip, clip).astype(np.float32)
        return x

    def logits(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """``(n_actions,)`` masked logits (Q-values for DQN) of the policy for one observation."""
        from clustergym.learned.policies import masked_logits

        mask = np.asarray(obs["action_mask"]).astype(bool)
        if not self.meta.get("masked", True):
            mask = np.ones_like(mask)
        return masked_logits(self.policy, self._model_input(obs), mask)

    def predict(
        self,
        observation: dict[str, np.ndarray],
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[Any, None]:
        """The action for one observation: masked argmax, or a masked sample when not deterministic.

        A policy choosing among rules (``action_mode: rule``) returns commands: at the first call of
        a decision epoch it asks every rule for its first command (WAIT when all WAIT: nothing to
        choose), else picks rule ``i`` by its policy on the observation with the rule mask and
        returns rule ``i``'s commands, one per call, until its WAIT -- the steps of
        :class:`~clustergym.learned.rule_select.RuleSelectEnv`, so the episodes are the same."""
        if self._adapt is not None:
            observation = self._adapt(observation)
        if self.rules is not None:
            return self._rule_command(observation, deterministic), None
        return self._choose(observation, deterministic), None

    def _rule_command(self, observation: dict[str, np.ndarray], deterministic: bool) -> Any:
        from clustergym.core.commands import Command
        from clustergym.learned.rule_select import RuleDriver, rule_observation

        epoch = self._view.epoch
        if epoch != self._epoch:
            self._epoch = epoch
            first = self._driver.probe(observation)
            if RuleDriver.all_wait(first):
                self._chosen = -1
                return Command.wait()
            assert self.rules is not None
            self._chosen = self._choose(rule_observation(observation, len(self.rules)), deterministic)
            return first[self._chosen]
        if self._chosen < 0:
            return Command.wait()
        cmd, _ = self._rule_agents[self._chosen].predict(observation)
        return cmd

    def _choose(self, observation: dict[str, np.ndarray], deterministic: bool) -> int:
        z = self.logits(observation)
        if self.meta["algo"] == "dqn":
            return int(np.argmax(z))
        decoding = self.meta.get("decoding", "argmax")
        if deterministic and decoding == "two-level" and self._mode in TWO_LEVEL_MODES:
            return two_level_argmax(z)
        if deterministic and decoding != "sample":
            return int(np.argmax(z))
        p = np.exp(z - z.max())
        return int(self.rng.choice(z.size, p=p / p.sum()))


def load_model_agent(path: str | Path, **params: Any) -> ModelAgent:
    """Load a model saved by ``clustergym train`` (``OUT/model.zip`` or a checkpoint) as an agent.

    Sets torch to one CPU thread (``torch.set_num_threads(1)``) for per-step inference.
    """
    decoding = params.pop("decoding", None)
    if params:
        raise ConfigError(
            f"agent.{next(iter(params))}",
            f"a trained model takes no parameter {next(iter(params))!r} (its one parameter is decoding)",
        )
    if decoding is not None:
        choice(decoding, "agent.decoding", DECODINGS, error=ConfigError)
    require_extra(("torch", "stable_baselines3", "sb3_contrib"), "train", "a trained model")
    import torch as th

    # one observation at a time: one thread is fastest, and on a busy machine several threads are
    # ~10x slower (the training-time evaluation also runs with one thread: the same arithmetic)
    th.set_num_threads(1)
    p = Path(path)
    if p.is_dir():  # a run folder: its final model
        if not (p / "model.zip").is_file():
            raise ConfigError(
                "agent",
                f"{path}: a folder without model.zip (a run folder of `clustergym train` "
                "holds one when the run has finished)",
            )
        p = p / "model.zip"
    if not p.is_file():
        raise ConfigError("agent", f"{path}: no such model file")
    meta = read_metadata(p)
    model = load_sb3(algo_classes()[meta["algo"]], p, meta["algo"], device="cpu")
    obs_rms = None
    vn = vecnormalize_path(p)
    if vn is not None and meta["policy"] == "mlp":
        try:
            with open(vn, "rb") as f:
                stats = pickle.load(f)
            stats.norm_obs, stats.obs_rms  # noqa: B018 (a VecNormalize)
        except Exception as e:  # a damaged or foreign pickle
            raise ConfigError("agent", f"{vn}: damaged normalisation statistics ({type(e).__name__}: {e})") from None
        if stats.norm_obs:
            obs_rms = stats.obs_rms
            meta = {**meta, "clip_obs": stats.clip_obs, "norm_epsilon": stats.epsilon}
    if decoding is not None:
        meta = {**meta, "decoding": decoding}
    return ModelAgent(model, meta, obs_rms, name=str(path))
