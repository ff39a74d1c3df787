"""Models trained outside clustergym, and the per-process cache of loaded models.

A plain Stable-Baselines3 or sb3-contrib save (``model.save("ppo.zip")`` after training on a
clustergym id) needs no ``model.json``: :func:`outside_kind` reads, from the zip's JSON only, the
algorithm (PPO, A2C, DQN, MaskablePPO: the policy class's module and the settings the zip holds)
and whether the policy reads the ``Dict`` observation (``MultiInputPolicy``) or its flattened vector
(``MlpPolicy`` on ``FlattenObservation``).  The spaces are the environment's it runs on -- a suite
task's under ``clustergym benchmark --tasks`` -- and the zip is loaded at the agent's first
:meth:`~OutsideModelAgent.reset` with :func:`clustergym.learned.model_agent.load_sb3_safely`
(nothing in the file is unpickled).  A folder in rl-baselines3-zoo's layout (one ``.zip`` with
``config.yml`` and ``env_kwargs.yml`` beside it) loads the same way, its ``env_kwargs.yml`` giving
the environment arguments the model acts with (e.g. ``pair_features: true``, ``queue_window``; its
training scenario's parameters and reward settings are left to the training).

Every model, clustergym's own or not, is read once per process: :func:`cached` keys it by its
resolved path and the SHA-256 of its bytes (and the spaces it is built for), so ``clustergym
benchmark MODEL --tasks T --seeds 30`` loads ``MODEL`` once in each worker process, not once per
episode.  :data:`LOADS` counts the loads by path (what the tests read).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import numpy as np

from clustergym._cache import Cache
from clustergym.errors import ConfigError
from clustergym.learned.model_agent import ModelAgent

__all__ = ["LOADS", "OutsideModelAgent", "cached", "outside_kind", "zoo_model", "load_outside_agent"]

#: loaded models, by (resolved path, SHA-256 of the file, what they are built for); 8: the models
#: of one benchmark (training seeds of a method) fit, and each holds its weights once
_MODELS: Cache[Any] = Cache(8)
#: resolved path -> times its file was read and loaded in this process
LOADS: Counter[str] = Counter()


def cached(path: Path, build: Callable[[], Any], *extra: Hashable) -> Any:
    """``build()``'s model for the file at ``path``, built once per process for its bytes."""
    from clustergym.learned.files import file_digest

    resolved = str(path.resolve())

    def load() -> Any:
        LOADS[resolved] += 1
        return build()

    return _MODELS.get((resolved, file_digest(path), *extra), load)


def outside_kind(path: Path) -> tuple[str, str]:
    """``(algo, policy)`` of a plain SB3 save, from its ``data`` JSON (nothing is unpickled):
    ``algo`` one of ``ppo``, ``a2c``, ``dqn``, ``maskable-ppo``; ``policy`` ``MultiInputPolicy`` (a
    ``Dict`` observation) or ``MlpPolicy`` (a flat one).

    Raises:
        ConfigError: not an SB3 zip (see :func:`clustergym.learned.model_agent._check_zip`), or of
            an algorithm or observation space clustergym does not run.
    """
    from clustergym.learned.model_agent import _check_zip

    data = _check_zip(path)
    module = str((data.get("policy_class") or {}).get("__module__", ""))
    if module.startswith("sb3_contrib.common.maskable"):
        algo = "maskable-ppo"
    elif module.startswith("stable_baselines3.dqn"):
        algo = "dqn"
    elif module.startswith("stable_baselines3.common.policies"):
        algo = "ppo" if "clip_range" in data else "a2c"
    else:
        raise ConfigError(
            "agent",
            f"{path}: a model of policy module {module or '?'!r}; clustergym runs PPO, A2C, DQN and "
            "MaskablePPO saves (or models of `clustergym train`, with their model.json)",
        )
    space = str((data.get("observation_space") or {}).get(":type:", ""))
    if "spaces.dict.Dict" in space:
        return algo, "MultiInputPolicy"
    if "spaces.box.Box" in space:
        return algo, "MlpPolicy"
    raise ConfigError(
        "agent", f"{path}: an observation space {space or '?'} (expected the Dict observation or its flattening)"
    )


def zoo_model(folder: Path) -> Path | None:
    """The model of a folder in rl-baselines3-zoo's layout (one ``.zip`` beside ``config.yml``), or ``None``."""
    if not (folder / "config.yml").is_file():
        return None
    zips = sorted(folder.glob("*.zip"))
    if len(zips) != 1:
        raise ConfigError("agent", f"{folder}: a zoo folder holds one model .zip beside config.yml, found {len(zips)}")
    return zips[0]


def _zoo_env_kwargs(path: Path) -> dict[str, Any]:
    """``env_kwargs.yml`` beside the model (rl-baselines3-zoo's layout), read as plain YAML."""
    import yaml

    f = path.parent / "env_kwargs.yml"
    if not f.is_file():
        return {}
    try:
        kw = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ConfigError("agent", f"{f}: not plain YAML ({e})") from None
    if not isinstance(kw, dict):
        raise ConfigError("agent", f"{f}: expected a mapping of environment arguments")
    from clustergym.envs.factory import ENV_KWARGS

    # the agent-side arguments; a training scenario's parameters and reward shaping stay the training's
    agent_side = ENV_KWARGS - {
        "horizon",
        "reward_scale",
        "reward_timing",
        "reward_fn",
        "invalid_penalty",
        "render_mode",
        "epochs",
        "validate",
        "observe",
    }
    return {k: v for k, v in kw.items() if k in agent_side}


class OutsideModelAgent(ModelAgent):
    """A plain SB3 / sb3-contrib save as an agent (module docstring).

    It reads the observation of the environment it runs on, ``Dict`` or flattened as it was trained,
    with no normalisation; MaskablePPO's invalid actions are masked, other algorithms' are not (on a
    suite task an invalid action acts as WAIT, as in training).  ``decoding`` (:data:`DECODINGS`)
    is ``argmax`` unless given: SB3's own ``predict(deterministic=True)``.
    """

    description = "a Stable-Baselines3 or sb3-contrib model saved with model.save"

    def __init__(self, path: Path, decoding: str | None = None):
        from clustergym.agent_api import AgentRequirements

        algo, policy = outside_kind(path)
        self.path = path
        self.algo_policy = policy
        meta = {
            "algo": algo,
            "policy": "mlp" if policy == "MlpPolicy" else "sb3",
            "observation": "as-run",
            "masked": algo == "maskable-ppo",
            "decoding": decoding or "argmax",
        }
        env_kwargs = _zoo_env_kwargs(path)
        self.model, self.meta, self.obs_rms, self.name = None, meta, None, str(path)
        self._policies: dict[Any, Any] = {}
        self._obs_space: Any = None
        self.adapter = None  # set at reset from meta["observation"]: the observation as the agent is shown it
        self.rules = None
        self._mode = env_kwargs.get("action_mode") or "head"
        self.rng = np.random.default_rng(0)
        self.requirements = AgentRequirements(
            action_mode=env_kwargs.get("action_mode"),
            skip_trivial=True,
            observes=True,
            queueing=("central", "loss"),
            env_kwargs=tuple(sorted(env_kwargs.items())),
        )

    def reset(self, context: Any, seed: int | None = None) -> None:
        from gymnasium.spaces import flatten_space

        from clustergym.learned.model_agent import load_sb3_safely
        from clustergym.learned.observations import observation_adapter

        self.adapter = observation_adapter(self.meta, context, self.name)
        obs_space, act_space = self.adapter.space, context.action_space
        space = flatten_space(obs_space) if self.algo_policy == "MlpPolicy" else obs_space
        _check_spaces(self.path, space, act_space)
        self.model = cached(
            self.path,
            lambda: load_sb3_safely(self.path, self.meta["algo"], self.algo_policy, space, act_space, device="cpu"),
            repr(space),
            repr(act_space),
        )
        self.policy = self.model.policy
        self.policy.set_training_mode(False)
        self._obs_space = obs_space
        self.rng = np.random.default_rng(np.random.SeedSequence([0 if seed is None else seed, 0x5B3]))


def _check_spaces(path: Path, space: Any, act_space: Any) -> None:
    """The sizes the zip's JSON declares (``n`` of a ``Discrete``, ``_shape`` of a ``Box``) against the
    environment's, so that another task's model is named as such rather than failing in its weights."""
    from clustergym.learned.model_agent import _check_zip

    data = _check_zip(path)
    n = (data.get("action_space") or {}).get("n")
    shape = (data.get("observation_space") or {}).get("_shape")
    theirs = f"Discrete({n})" if n is not None else "?"
    if (n is not None and str(getattr(act_space, "n", "")) != str(n)) or (
        shape is not None and space.shape is not None and list(space.shape) != list(shape)
    ):
        raise ConfigError(
            "agent",
            f"{path}: the model acts in {theirs} on observations of shape {tuple(shape or ())}; this "
            f"environment has {act_space} and {space.shape}: run it on the environment it was trained on "
            "(a suite task: --tasks or its id clustergym/<task>-v1)",
        )


def load_outside_agent(path: Path, decoding: str | None = None) -> OutsideModelAgent:
    """:class:`OutsideModelAgent` of ``path`` (a ``.zip``), checked now, loaded at its first reset."""
    return OutsideModelAgent(path, decoding)
