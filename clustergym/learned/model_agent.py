"""A trained SB3 model as a clustergym agent (``clustergym run X --agent path/model.zip``).

A training run (:mod:`clustergym.training.train`) writes, in its output folder::

    model.zip            the SB3 model (weights, hyperparameters, policy class and kwargs)
    model.json           what the agent needs besides the weights: algorithm, policy kind,
                         scenario and its parameters, env kwargs (action mode, queue window),
                         and the SHA-256 of each file (``sha256``)
    vecnormalize.npz     VecNormalize statistics (observation normalisation for ``mlp``)
    checkpoints/         rl_model_<N>_steps.zip (+ rl_model_vecnormalize_<N>_steps.npz)

:func:`load_model_agent` needs only the path of a ``.zip`` (final model or checkpoint).

Loading never runs code from the folder: the zip's pickled entries are rebuilt by clustergym
(:func:`load_sb3_safely`), its tensors read with ``torch.load(weights_only=True)``, the statistics
are plain arrays (:mod:`clustergym.learned.files`), and the files' digests are checked first.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from clustergym.agent_api import AgentContext, AgentRequirements, agent_context
from clustergym.errors import ConfigError, require_extra
from clustergym.learned.observations import ObservationAdapter, observation_adapter
from clustergym.validation import settings

__all__ = [
    "ModelAgent",
    "load_model_agent",
    "read_metadata",
    "without_log_folder",
    "ALGOS",
    "META_NAME",
    "VECNORM_NAME",
]

META_NAME = "model.json"
VECNORM_NAME = "vecnormalize.npz"


def without_log_folder(model: Any) -> Any:
    """``model`` with a logger that records nothing and makes no folder; returns it.  SB3's ``learn()``
    without a TensorBoard folder makes an empty ``<tmp>/SB3-<date-time>`` folder at each call: measurements
    that learn without logging (``clustergym bench``) would leave one behind at every run."""
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def algo_classes() -> dict[str, Any]:
    require_extra(("torch", "stable_baselines3", "sb3_contrib"), "train", "a trained model")
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import A2C, DQN, PPO

    return {"ppo": PPO, "maskable-ppo": MaskablePPO, "dqn": DQN, "a2c": A2C}


#: algorithm names accepted by ``clustergym train --algo``
ALGOS = ("ppo", "maskable-ppo", "dqn", "a2c")


def metadata_path(model_path: Path) -> Path | None:
    """The ``model.json`` of a model: beside it (``X.json``, or the folder's), or in the run folder above a checkpoint."""
    cands = (model_path.with_suffix(".json"), model_path.parent / META_NAME, model_path.parent.parent / META_NAME)
    return next((c for c in cands if c.is_file()), None)


#: ``model.json``'s ``observation``: the task's scaled observation or the environment's own
OBSERVATIONS = ("task", "env")


def read_metadata(model_path: Path) -> dict[str, Any]:
    """``model.json`` beside the model, or in the run folder above a checkpoint.

    Raises:
        ConfigError: there is none, or it is damaged (not JSON, not an object, no known ``algo``,
            ``policy`` or ``observation``, a ``task`` that is not a registered suite task); the
            message names the file.
    """
    import gymnasium

    cand = metadata_path(model_path)
    if cand is None:
        raise ConfigError(
            "agent",
            f"{model_path}: no {META_NAME} beside it or in its run folder; models saved by `clustergym train` have one",
        )
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
        raise ConfigError("agent", f"{cand}: unknown policy {meta.get('policy')!r} (expected mlp or equivariant)")
    if meta.get("observation") is not None and meta["observation"] not in OBSERVATIONS:
        raise ConfigError(
            "agent", f"{cand}: unknown observation {meta['observation']!r} (expected one of {', '.join(OBSERVATIONS)})"
        )
    task = meta.get("task")
    if task is not None and (not isinstance(task, str) or task not in gymnasium.registry):
        raise ConfigError("agent", f"{cand}: unknown task {task!r} (not a suite task of this clustergym)")
    return meta


def check_digests(model_path: Path, meta: dict[str, Any]) -> None:
    """The model file and its normalisation statistics against the digests of its ``model.json``
    (:func:`clustergym.learned.files.verify_digests`)."""
    from clustergym.learned.files import verify_digests

    where = metadata_path(model_path)
    if where is not None:
        vn = vecnormalize_path(model_path)
        verify_digests(where, [model_path, *([vn] if vn is not None else [])], meta)


def _ends_as_a_zip(path: Path) -> bool:
    """The zip's end-of-central-directory record ends the file (with its comment): a truncated zip
    may still look like one (a model's policy.pth is itself a zip, whose record comes earlier)."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        f.seek(max(0, size - 65_557))
        tail = f.read()
    pos = tail.rfind(b"PK\x05\x06")
    return pos >= 0 and pos + 22 + int.from_bytes(tail[pos + 20 : pos + 22], "little") == len(tail)


#: the pickled entries of an SB3 zip's ``data`` that :func:`load_sb3_safely` rebuilds itself (None:
#: the algorithm's ``_setup_model`` or ``learn`` makes them anew); any other pickled entry is refused
REBUILT = (
    "policy_class",
    "observation_space",
    "action_space",
    "lr_schedule",
    "clip_range",
    "clip_range_vf",
    "exploration_schedule",
    "rollout_buffer_class",
    "replay_buffer_class",
    "_last_obs",
    "_last_episode_starts",
    "_last_original_obs",
    "ep_info_buffer",
    "ep_success_buffer",
    "train_freq",
)


def _check_zip(path: Path) -> dict[str, Any]:
    """The ``data`` JSON of an SB3 zip, after checking the zip; a :class:`ConfigError` naming the file
    for one that is not such a model: not a zip (or a truncated one), a zip of another program, a
    damaged member, a ``data`` that is not a JSON object."""
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
            raw = z.read("data") if "data" in names else b"{}"
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
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError("agent", f"{path}: its data entry is not JSON ({e})") from None
    if not isinstance(data, dict):
        raise ConfigError("agent", f"{path}: its data entry is not a JSON object")
    return data


def _policy_class(Algo: Any, algo: str, policy_kind: str) -> Any:
    """The policy class of ``policy_kind``: ``mlp`` (SB3's ``MlpPolicy`` of the algorithm),
    ``equivariant`` (:mod:`clustergym.learned.policies`), or a name of the algorithm's own policies
    (``MultiInputPolicy``)."""
    if policy_kind == "equivariant":
        from clustergym.learned import policies

        return policies.EquivariantMaskablePolicy if algo == "maskable-ppo" else policies.EquivariantPolicy
    name = "MlpPolicy" if policy_kind == "mlp" else policy_kind
    if name not in Algo.policy_aliases:
        raise ConfigError("agent", f"unknown policy {policy_kind!r} for {algo} (expected mlp or equivariant)")
    return Algo.policy_aliases[name]


def _safe_classes() -> dict[str, Any]:
    """The classes a pickled ``policy_kwargs`` may name, by the text SB3 writes beside the pickle
    (``"<class 'torch.optim.rmsprop.RMSprop'>"``): optimizers and activations of torch, nothing else."""
    import torch as th

    classes = [th.optim.Adam, th.optim.AdamW, th.optim.RMSprop, th.optim.SGD]
    classes += [th.nn.ReLU, th.nn.Tanh, th.nn.ELU, th.nn.LeakyReLU, th.nn.GELU, th.nn.SiLU, th.nn.Sigmoid]
    return {f"<class '{c.__module__}.{c.__qualname__}'>": c for c in classes}


def _rebuilt_policy_kwargs(entry: dict[str, Any], path: Path) -> dict[str, Any]:
    """A pickled ``policy_kwargs`` (A2C's adds its optimizer class) rebuilt from the text SB3 writes
    beside the pickle: literals read with :func:`ast.literal_eval`, classes from :func:`_safe_classes`."""
    import ast

    safe = _safe_classes()
    out: dict[str, Any] = {}
    for key, text in entry.items():
        if key in (":type:", ":serialized:"):
            continue
        if not isinstance(text, str):  # SB3 keeps a JSON value as it is beside the pickle
            out[key] = text
            continue
        if text in safe:
            out[key] = safe[text]
            continue
        try:
            out[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError):
            raise ConfigError(
                "agent", f"{path}: policy_kwargs.{key} = {text!r} is not a value clustergym rebuilds without unpickling"
            ) from None
    if entry.get(":type:") != "<class 'dict'>":
        raise ConfigError("agent", f"{path}: policy_kwargs is not a dict ({entry.get(':type:')})")
    return out


def _rebuilt_objects(
    Algo: Any, algo: str, policy_kind: str, observation_space: Any, action_space: Any, settings: dict[str, Any]
) -> dict[str, Any]:
    """SB3's ``custom_objects``: every entry of :data:`REBUILT`, made by clustergym (``clip_range`` and
    ``clip_range_vf``, DQN's ``train_freq``: ``settings``' value, else the algorithm's default)."""
    import inspect

    defaults = {k: p.default for k, p in inspect.signature(Algo.__init__).parameters.items()}
    objects: dict[str, Any] = dict.fromkeys(REBUILT)
    objects.update(
        policy_class=_policy_class(Algo, algo, policy_kind),
        observation_space=observation_space,
        action_space=action_space,
    )
    for key in ("clip_range", "clip_range_vf", "train_freq"):
        if key not in defaults:
            continue
        value = settings.get(key, defaults.get(key))
        if isinstance(value, list):  # train_freq as [n, "step"] from JSON
            value = tuple(value)
        if value is not None and not isinstance(value, (int, float, tuple)):
            raise ConfigError("agent", f"{key}: a number is expected to rebuild the model, got {value!r}")
        objects[key] = value
    return objects


def load_sb3_safely(
    path: str | Path,
    algo: str,
    policy_kind: str,
    observation_space: Any,
    action_space: Any,
    *,
    settings: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """An SB3 model from ``path`` without unpickling anything in it.

    SB3 stores a model's settings as JSON and some objects as base64 cloudpickles (``:serialized:``),
    which its ``load`` would unpickle -- running any code a crafted file holds.  Here every pickled
    entry SB3 writes (:data:`REBUILT`, and ``policy_kwargs`` holding a class:
    :func:`_rebuilt_policy_kwargs`) is supplied through ``custom_objects`` instead: the policy
    class from ``policy_kind`` (``mlp``, ``equivariant`` or an SB3 policy name), the spaces given,
    the schedules and buffers rebuilt by the algorithm (``clip_range`` from ``settings``, else the
    default); a pickled entry of any other name is refused.  The ``.pth`` members (weights,
    optimizer state, PyTorch variables) are read by SB3 with ``torch.load(weights_only=True)``,
    which loads tensors and plain containers only.

    Args:
        path: the ``.zip``.
        algo: one of :data:`ALGOS`.
        policy_kind: ``mlp``, ``equivariant``, or a policy name of the algorithm (``MlpPolicy``).
        observation_space, action_space: the spaces the model was trained on.
        settings: the run's algorithm settings (``model.json``'s ``algo_kwargs``).
        **kwargs: more arguments of ``Algo.load`` (``env``, ``device``, ...).

    Raises:
        ConfigError: a file that is not such a model (:func:`_check_zip`), a pickled entry not
            rebuilt here, a model that does not load with these spaces and classes, or one of
            another algorithm; the message names the file.
    """
    path = Path(path)
    Algo = algo_classes()[algo]
    data = _check_zip(path)
    rebuilt = (*REBUILT, "policy_kwargs")
    foreign = sorted(k for k, v in data.items() if isinstance(v, dict) and ":serialized:" in v and k not in rebuilt)
    if foreign:
        raise ConfigError(
            "agent",
            f"{path}: its data holds pickled objects clustergym does not rebuild ({', '.join(foreign)}); "
            "unpickling them could run code from the file, so the model is not loaded",
        )
    objects = _rebuilt_objects(Algo, algo, policy_kind, observation_space, action_space, settings or {})
    if isinstance(data.get("policy_kwargs"), dict) and ":serialized:" in data["policy_kwargs"]:
        objects["policy_kwargs"] = _rebuilt_policy_kwargs(data["policy_kwargs"], path)
    try:
        model = Algo.load(str(path), custom_objects=objects, **kwargs)
    except Exception as e:  # SB3 and torch raise many kinds: a state dict of other shapes, a refused tensor file, ...
        first = (str(e).strip().splitlines() or [""])[-1].strip()[:300]
        raise ConfigError(
            "agent",
            f"{path}: cannot be loaded as a {algo} model ({type(e).__name__}: {first}); "
            f"is its {META_NAME} the one it was saved with?",
        ) from None
    if type(model).__name__ != Algo.__name__:
        raise ConfigError("agent", f"{path}: loads as {type(model).__name__}, but its {META_NAME} says {algo}")
    return model


def model_spaces(meta: dict[str, Any]) -> tuple[Any, Any]:
    """The observation and action spaces a model was trained on, rebuilt from its ``model.json``:
    the environment of its task (``gymnasium.make`` of the task id) or scenario with its env
    settings, the rule mode's observation for ``action_mode: rule``, flattened for ``mlp``.

    Raises:
        ConfigError: the task or scenario cannot be built here (a scenario file that is not there).
    """
    import gymnasium
    from gymnasium.spaces import Discrete, flatten_space

    from clustergym.envs import make_env

    kw = dict(meta.get("train_env_kwargs") or meta.get("env_kwargs") or {})
    rules = kw.pop("rules", None) if kw.get("action_mode") == "rule" else None
    if rules is not None:
        kw.pop("action_mode")
    for key in ("reward_scale", "reward_timing", "invalid_penalty"):  # training-only: no effect on spaces
        kw.pop(key, None)
    what = meta.get("task") or meta.get("scenario")
    try:
        if meta.get("task"):
            env = gymnasium.make(meta["task"], disable_env_checker=True, **kw)
        else:
            kw = {"skip_trivial": True, **kw, **meta.get("scenario_params", {})}
            env = make_env(meta["scenario"], epochs=AgentRequirements().epochs, **kw)
    except Exception as e:  # a scenario file that is not there, a setting of another version, ...
        raise ConfigError(
            "agent", f"the model's {META_NAME} names {what!r}, which cannot be built here ({e})"
        ) from None
    obs_space, act_space = env.observation_space, env.action_space
    env.close()
    if rules is not None:
        from clustergym.learned.rule_select import parse_rules, rule_observation_space

        n = len(parse_rules(rules, "agent"))
        assert isinstance(obs_space, gymnasium.spaces.Dict)  # every clustergym env observes a Dict
        obs_space, act_space = rule_observation_space(obs_space, n), Discrete(n)
    if meta["policy"] == "mlp":
        obs_space = flatten_space(obs_space)
    return obs_space, act_space


def load_sb3(Algo: Any, path: Path, algo: str, **kwargs: Any) -> Any:
    """:func:`load_sb3_safely` for a model of ``clustergym train`` whose ``model.json`` is beside it
    (or in its run folder): its digests checked, the spaces from :func:`model_spaces` (or, with
    ``env`` in ``kwargs`` -- a resumed run's -- that env's).  ``Algo`` must be ``algo``'s class."""
    meta = read_metadata(path)
    _check_zip(path)  # the file's own damage named first (a truncated zip), then any other change
    check_digests(path, meta)
    env = kwargs.get("env")
    spaces = (env.observation_space, env.action_space) if env is not None else model_spaces(meta)
    return load_sb3_safely(path, algo, meta["policy"], *spaces, settings=meta.get("algo_kwargs"), **kwargs)


def vecnormalize_path(model_path: Path) -> Path | None:
    """The VecNormalize statistics (``.npz``) saved with a model or a checkpoint; ``None`` if there are none.

    Raises:
        ConfigError: there are only statistics saved as a pickle (folders saved before the ``.npz``
            format): they are never loaded (:func:`clustergym.learned.files.legacy_message`).
    """
    from clustergym.learned.files import legacy_message

    m = re.fullmatch(r"(.*)_(\d+)_steps", model_path.stem)
    stems = [model_path.parent / f"{m.group(1)}_vecnormalize_{m.group(2)}_steps"] if m else []
    stems.append(model_path.parent / Path(VECNORM_NAME).stem)
    for stem in stems:
        if stem.with_suffix(".npz").is_file():
            return stem.with_suffix(".npz")
        if stem.with_suffix(".pkl").is_file():
            raise ConfigError("agent", legacy_message(stem.with_suffix(".pkl")))
    return None


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
    ``"decoding": "two-level"`` (every model trained with two-level decoding) decides deterministically with
    :func:`two_level_argmax` in the placement modes.  An equivariant policy is rebuilt for the
    env's spaces at :meth:`reset`, so it runs on any number of servers.

    The agent feeds the policy the observation it was trained on (``model.json``: ``"observation"``,
    ``task`` for a run on a suite task, ``env`` for one on a scenario; older models: ``task`` when
    they name a task) through the :attr:`adapter` chosen at :meth:`reset` from that metadata and the
    agent's context (:func:`clustergym.learned.observations.observation_adapter`): a model trained on a
    scenario and run on a suite task reads the environment's own observation beneath the task's, and
    one trained on a task and run on a scenario reads it scaled as its task scales it (with the time
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
        # from the observation the agent is shown to the policy's, chosen at reset (the class docstring)
        self.adapter: ObservationAdapter | None = None
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
        self.adapter = observation_adapter(self.meta, context, self.name)
        obs_space: Any = self.adapter.space
        act_space = context.action_space
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

    def _model_input(self, obs: dict[str, np.ndarray]) -> Any:
        if self.meta["policy"] != "mlp":
            return obs
        from gymnasium.spaces import flatten

        assert self._obs_space is not None, "call reset(env) first"
        x = np.asarray(flatten(self._obs_space, obs), dtype=np.float32)
        if self.obs_rms is not None:
            x = self.obs_rms.normalize(x)
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
        if self.adapter is not None:
            observation = self.adapter(observation)
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


def _model_file(p: Path) -> Path:
    """The model file of a path: the file, a run folder's ``model.zip``, or a zoo folder's ``.zip``."""
    if p.is_dir():
        from clustergym.learned.outside import zoo_model

        zoo = zoo_model(p) if not (p / "model.zip").is_file() else None
        if zoo is not None:
            return zoo
        if not (p / "model.zip").is_file():
            raise ConfigError(
                "agent",
                f"{p}: a folder without model.zip (a run folder of `clustergym train` "
                "holds one when the run has finished; a zoo folder, one .zip beside config.yml)",
            )
        p = p / "model.zip"
    if not p.is_file():
        raise ConfigError("agent", f"{p}: no such model file")
    return p


def _load_trained(p: Path, meta: dict[str, Any]) -> tuple[Any, Any]:
    """A model of ``clustergym train`` and its observation statistics (``None`` if it has none)."""
    model = load_sb3(algo_classes()[meta["algo"]], p, meta["algo"], device="cpu")
    obs_rms = None
    if meta["policy"] == "mlp":  # the mlp policy learned on normalised observations: its statistics are part of it
        from clustergym.learned.files import read_vecnormalize

        vn = vecnormalize_path(p)
        if vn is None:
            raise ConfigError(
                "agent",
                f"{p}: an mlp model without its normalisation statistics ({VECNORM_NAME} beside it, or "
                "rl_model_vecnormalize_<N>_steps.npz beside a checkpoint): it would act on unnormalised "
                "observations, with another score",
            )
        stats = read_vecnormalize(vn)
        obs_rms = stats if stats.norm_obs else None
    return model, obs_rms


def load_model_agent(path: str | Path, **params: Any) -> ModelAgent:
    """Load a model as an agent: one saved by ``clustergym train`` (``OUT/model.zip``, a checkpoint, or
    the run folder), a plain SB3 / sb3-contrib save without ``model.json``, or a folder in
    rl-baselines3-zoo's layout (:mod:`clustergym.learned.outside`).  A model file is read once per
    process (:func:`clustergym.learned.outside.cached`); each call returns a fresh agent.

    Parameters (``params``): ``decoding`` (:data:`DECODINGS`; default the model's own) and
    ``queue_window`` (an equivariant model's queue window ``K`` where it runs; default the one it
    trained with: its weights do not depend on ``K``, and a wider window lets it reach jobs
    further back in a long queue, as a rule that scans the whole queue does).

    Sets torch to one CPU thread (``torch.set_num_threads(1)``) for per-step inference.
    """
    decoding = params.pop("decoding", None)
    queue_window = params.pop("queue_window", None)
    if params:
        raise ConfigError(
            f"agent.{next(iter(params))}",
            f"a trained model takes no parameter {next(iter(params))!r} (its parameters are decoding and queue_window)",
        )
    if decoding is not None:
        settings.choice(decoding, "agent.decoding", DECODINGS)
    if queue_window is not None:
        queue_window = settings.number(queue_window, "agent.queue_window", lo=1, integer=True, error=ConfigError)
    require_extra(("torch", "stable_baselines3", "sb3_contrib"), "train", "a trained model")
    import torch as th

    # one observation at a time: one thread is fastest, and on a busy machine several threads are
    # ~10x slower (the training-time evaluation also runs with one thread: the same arithmetic)
    th.set_num_threads(1)
    p = _model_file(Path(path))
    if metadata_path(p) is None:  # a plain SB3 save: its spaces are the env's it runs on
        from clustergym.learned.outside import OutsideModelAgent

        if queue_window is not None:
            raise ConfigError(
                "agent.queue_window", f"{path} is a plain Stable-Baselines3 save: it runs on the env it is given"
            )

        return OutsideModelAgent(p, decoding)
    from clustergym.learned.files import file_digest
    from clustergym.learned.outside import cached

    meta = read_metadata(p)
    # the key holds every file the load reads: the model (cached's own), its model.json and its statistics
    also = [f for f in (metadata_path(p), vecnormalize_path(p)) if f is not None]
    model, obs_rms = cached(p, lambda: _load_trained(p, meta), "trained", *map(file_digest, also))
    if decoding is not None:
        meta = {**meta, "decoding": decoding}
    if queue_window is not None:
        if meta["policy"] != "equivariant":
            raise ConfigError(
                "agent.queue_window",
                f"{path}: the {meta['policy']} policy's inputs are sized for the queue window it trained with; "
                "an equivariant model runs with another",
            )
        meta = {**meta, "env_kwargs": {**meta.get("env_kwargs", {}), "queue_window": int(queue_window)}}
    return ModelAgent(model, meta, obs_rms, name=str(path))
