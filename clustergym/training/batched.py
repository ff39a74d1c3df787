"""Training on the batched vector environment: an SB3 ``VecEnv`` over :class:`~clustergym.envs.vector.BatchedVectorEnv`.

:func:`batched_vec_env` is what ``clustergym train`` steps its in-process environments with (its default
``--vec-env batched``, :func:`clustergym.training.train.build_venv`); :func:`make_batched_venv` makes ``N``
environments of a suite task or a scenario that way: stepped in one process with their observations built as arrays, seen by SB3 as a ``VecEnv``
(episode statistics through SB3's ``VecMonitor``; masks through ``env_method("action_masks")``, which
MaskablePPO calls, answered from the batch's ``(N, M)`` mask array).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv, VecMonitor

from clustergym.envs.vector import BatchedVectorEnv

__all__ = ["SB3BatchedVecEnv", "batched_vec_env", "make_batched_venv"]


class SB3BatchedVecEnv(VecEnv):
    """SB3's ``VecEnv`` API over a :class:`BatchedVectorEnv` (made here in ``SAME_STEP`` autoreset: SB3
    resets an environment in the step that ends its episode, the last observation in
    ``infos[i]["terminal_observation"]``).

    Args:
        venv: the batched environment.
        flatten: hand out each observation flattened (``gymnasium.spaces.flatten``'s layout, ``float32``),
            as ``FlattenObservation`` does, for SB3's ``MlpPolicy``.
    """

    def __init__(self, venv: BatchedVectorEnv, flatten: bool = False):
        if venv.autoreset_mode != AutoresetMode.SAME_STEP:
            raise ValueError("SB3BatchedVecEnv needs a BatchedVectorEnv with autoreset_mode=SAME_STEP")
        self.venv = venv
        self.flatten = flatten
        space = venv.single_observation_space
        obs_space = spaces.flatten_space(space) if flatten else space
        super().__init__(venv.num_envs, obs_space, venv.single_action_space)
        self._actions: Any = None

    def _out(self, obs: dict[str, np.ndarray]) -> Any:
        if not self.flatten:
            return obs
        n = self.num_envs
        return np.concatenate([v.reshape(n, -1) for v in obs.values()], axis=1, dtype=np.float32)

    def _one(self, obs: dict[str, np.ndarray]) -> Any:
        return spaces.flatten(self.venv.single_observation_space, obs).astype(np.float32) if self.flatten else obs

    def reset(self) -> Any:
        seeds = self._seeds if any(s is not None for s in self._seeds) else None
        obs, _ = self.venv.reset(seed=seeds)
        self._reset_seeds()
        self.reset_infos = [dict(i) for i in self.venv.env_infos]
        return self._out(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> Any:
        obs, rewards, terms, truncs = self.venv.step_envs(self._actions)
        infos: list[dict[str, Any]] = []
        for i, info in enumerate(self.venv.env_infos):
            if terms[i] or truncs[i]:
                final = {k: v for k, v in info.items() if k not in ("final_obs", "final_info")}
                final.update(info["final_info"])
                final["terminal_observation"] = self._one(info["final_obs"])
                final["TimeLimit.truncated"] = bool(truncs[i] and not terms[i])
                infos.append(final)
            else:
                infos.append(info)
        return self._out(obs), rewards.astype(np.float32), terms | truncs, infos

    def action_masks(self) -> np.ndarray:
        """``(N, M)`` bool masks."""
        return self.venv.action_masks()

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [self.venv.envs[i].get_wrapper_attr(attr_name) for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        for i in self._get_indices(indices):
            self.venv.envs[i].set_wrapper_attr(attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        idx = list(self._get_indices(indices))
        if method_name == "action_masks" and not method_args and not method_kwargs:
            masks = self.venv.action_masks()
            return [masks[i] for i in idx]
        return [self.venv.envs[i].get_wrapper_attr(method_name)(*method_args, **method_kwargs) for i in idx]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        from stable_baselines3.common import env_util

        return [env_util.is_wrapped(self.venv.envs[i], wrapper_class) for i in self._get_indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        return attr_name == "action_masks" or super().has_attr(attr_name)

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        return super().seed(seed)


def batched_vec_env(
    env_fns: Sequence[Callable[[], Any]], seed: int | None = None, *, flatten: bool = False, monitor: bool = True
) -> VecEnv:
    """The environments ``env_fns`` make (each a :class:`~clustergym.envs.ClusterEnv`, wrapped or not, without
    Gymnasium's env checker: :class:`BatchedVectorEnv`'s condition) as one SB3 ``VecEnv`` stepped in this
    process (:class:`SB3BatchedVecEnv`), in SB3's ``VecMonitor`` unless ``monitor=False``; ``seed``:
    environment ``i``'s first reset is seeded ``seed + i`` (SB3's ``VecEnv.seed``, as ``DummyVecEnv``).
    ``flatten``: flat observations, for the ``mlp`` policy."""
    venv: VecEnv = SB3BatchedVecEnv(BatchedVectorEnv(env_fns, autoreset_mode=AutoresetMode.SAME_STEP), flatten=flatten)
    if seed is not None:
        venv.seed(seed)
    return VecMonitor(venv) if monitor else venv


def make_batched_venv(
    task_or_scenario: str,
    n_envs: int,
    seed: int | None = None,
    *,
    flatten: bool = False,
    monitor: bool = True,
    **env_kwargs: Any,
) -> VecEnv:
    """``n_envs`` environments of a suite task (a name or id: ``gymnasium.make`` of its id) or a scenario
    (:func:`clustergym.envs.make_env`, ``env_kwargs`` then also its preset parameters) as one SB3 ``VecEnv``
    (:func:`batched_vec_env`: ``seed``, ``flatten`` and ``monitor`` as there)."""
    import gymnasium

    from clustergym.envs import make_env
    from clustergym.suite import find_task
    from clustergym.validation import settings

    n = settings.number(n_envs, "n_envs", lo=1, integer=True)
    t = find_task(task_or_scenario)
    if t is not None:
        fns = [lambda: gymnasium.make(t.id, disable_env_checker=True, **env_kwargs) for _ in range(n)]
    else:
        fns = [lambda: make_env(task_or_scenario, **env_kwargs) for _ in range(n)]
    return batched_vec_env(fns, seed, flatten=flatten, monitor=monitor)
