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

from clustergym.agent_api import AgentRequirements
from clustergym.errors import ConfigError

__all__ = ["ModelAgent", "load_model_agent", "read_metadata", "ALGOS", "META_NAME", "VECNORM_NAME"]

META_NAME = "model.json"
VECNORM_NAME = "vecnormalize.pkl"


def algo_classes() -> dict[str, Any]:
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import A2C, DQN, PPO

    return {"ppo": PPO, "maskable-ppo": MaskablePPO, "dqn": DQN, "a2c": A2C}


#: algorithm names accepted by ``clustergym train --algo``
ALGOS = ("ppo", "maskable-ppo", "dqn", "a2c")


def read_metadata(model_path: Path) -> dict[str, Any]:
    """``model.json`` beside the model, or in the run folder above a checkpoint."""
    for cand in (model_path.with_suffix(".json"), model_path.parent / META_NAME, model_path.parent.parent / META_NAME):
        if cand.is_file():
            return json.loads(cand.read_text())
    raise ConfigError("agent", f"{model_path}: no {META_NAME} beside it or in its run folder; "
                               "models saved by `clustergym train` have one")


def vecnormalize_path(model_path: Path) -> Path | None:
    """The VecNormalize statistics saved with a model or a checkpoint."""
    m = re.fullmatch(r"(.*)_(\d+)_steps", model_path.stem)
    cands = [model_path.parent / f"{m.group(1)}_vecnormalize_{m.group(2)}_steps.pkl"] if m else []
    cands.append(model_path.parent / VECNORM_NAME)
    return next((c for c in cands if c.is_file()), None)


class ModelAgent:
    """A trained policy driven through the agent protocol.

    ``predict(obs, deterministic=True)`` takes the env's ``Dict`` observation,
    applies the policy (flattening and normalising it as in training for the
    ``mlp`` policy), and returns the best *valid* action (masked argmax of the
    logits or Q-values); ``deterministic=False`` samples the masked softmax
    with the agent's own generator.  A model trained without masks where an
    invalid action acts as WAIT (``model.json``: ``"masked": false``; PPO, A2C
    or DQN with the ``mlp`` policy on a suite task) acts as it was trained: the
    argmax of all its logits, an invalid choice then waiting.  An equivariant policy is rebuilt for the
    env's spaces at :meth:`reset`, so it runs on any number of servers.
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
        env_kwargs = meta.get("env_kwargs", {})
        self.requirements = AgentRequirements(action_mode=env_kwargs.get("action_mode"), skip_trivial=True,
                                              observes=True, queueing=("central", "loss"),
                                              env_kwargs=tuple(sorted(env_kwargs.items())))

    def requirements_for(self, scenario: Any) -> AgentRequirements:
        return replace(self.requirements, queueing=(scenario.queueing,)) \
            if scenario.queueing in ("central", "loss") else self.requirements

    def reset(self, env: Any, seed: int | None = None) -> None:
        from clustergym.agents.policies import transfer_policy

        # the spaces of the env as the agent sees it (a wrapper may change the observation, as a suite task's does)
        obs_space, act_space = env.observation_space, env.action_space
        self.rng = np.random.default_rng(np.random.SeedSequence([0 if seed is None else seed, 0x5B3]))
        if self.meta["policy"] == "mlp":
            from gymnasium.spaces import flatten_space

            self._obs_space = obs_space
            flat = flatten_space(obs_space)
            if flat.shape != self.policy.observation_space.shape or act_space != self.policy.action_space:
                raise ConfigError("agent", f"{self.name}: the mlp policy was trained on observations of shape "
                                           f"{self.policy.observation_space.shape} and actions "
                                           f"{self.policy.action_space}; this env has {flat.shape} and "
                                           f"{act_space} (train with --policy equivariant to change sizes)")
            return
        key = (obs_space["free"].shape, obs_space["queue_jobs"].shape, act_space.n)
        if key not in self._policies:
            self._policies[key] = transfer_policy(self.model.policy, obs_space, act_space)
        self.policy = self._policies[key]

    def _model_input(self, obs: dict[str, np.ndarray]) -> Any:
        if self.meta["policy"] != "mlp":
            return obs
        from gymnasium.spaces import flatten

        assert self._obs_space is not None, "call reset(env) first"
        x = flatten(self._obs_space, obs).astype(np.float32)
        if self.obs_rms is not None:
            clip, eps = self.meta.get("clip_obs", 10.0), self.meta.get("norm_epsilon", 1e-8)
            x = np.clip((x - self.obs_rms.mean) / np.sqrt(self.obs_rms.var + eps), -clip, clip).astype(np.float32)
        return x

    def logits(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """``(n_actions,)`` masked logits (Q-values for DQN) of the policy for one observation."""
        from clustergym.agents.policies import masked_logits

        mask = np.asarray(obs["action_mask"]).astype(bool)
        if not self.meta.get("masked", True):
            mask = np.ones_like(mask)
        return masked_logits(self.policy, self._model_input(obs), mask)

    def predict(self, observation: dict[str, np.ndarray], state: Any = None, episode_start: Any = None,
                deterministic: bool = True) -> tuple[int, None]:
        """The action for one observation: masked argmax, or a masked sample when not deterministic."""
        z = self.logits(observation)
        if deterministic or self.meta["algo"] == "dqn":
            return int(np.argmax(z)), None
        p = np.exp(z - z.max())
        return int(self.rng.choice(z.size, p=p / p.sum())), None


def load_model_agent(path: str | Path, **params: Any) -> ModelAgent:
    """Load a model saved by ``clustergym train`` (``OUT/model.zip`` or a checkpoint) as an agent.

    Sets torch to one CPU thread (``torch.set_num_threads(1)``) for per-step inference.
    """
    if params:
        raise ConfigError(f"agent.{next(iter(params))}", f"a trained model takes no parameter "
                                                         f"{next(iter(params))!r}")
    import torch as th

    # one observation at a time: one thread is fastest, and on a busy machine several threads are
    # ~10x slower (the training-time evaluation also runs with one thread: the same arithmetic)
    th.set_num_threads(1)
    p = Path(path)
    if not p.is_file():
        raise ConfigError("agent", f"{path}: no such model file")
    meta = read_metadata(p)
    algos = algo_classes()
    if meta.get("algo") not in algos:
        raise ConfigError("agent", f"{path}: unknown algorithm {meta.get('algo')!r} in its metadata")
    model = algos[meta["algo"]].load(str(p), device="cpu")
    obs_rms = None
    vn = vecnormalize_path(p)
    if vn is not None and meta["policy"] == "mlp":
        with open(vn, "rb") as f:
            stats = pickle.load(f)
        if stats.norm_obs:
            obs_rms = stats.obs_rms
            meta = {**meta, "clip_obs": stats.clip_obs, "norm_epsilon": stats.epsilon}
    return ModelAgent(model, meta, obs_rms, name=str(path))
