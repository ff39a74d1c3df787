"""A batched vector environment: many clusters stepped in one process, their observations built as arrays.

:class:`BatchedVectorEnv` is a Gymnasium :class:`~gymnasium.vector.VectorEnv` over ``N`` environments
(:class:`~clustergym.envs.ClusterEnv`, or a suite task's, each with its wrappers) in one process.  Each
environment steps its own simulator, and its observation builder keeps the environment's features in one
row of an ``(N, D)`` ``float32`` array (:meth:`ObservationBuilder.bind`); the work that is the same for
every row is done once for the batch with array operations: a suite task's scaling
(:class:`~clustergym.envs.observation.Scaler`, ``log1p`` and clipping over ``(N, ...)`` arrays), the copy
handed out, the action masks (an ``(N, M)`` array).  The sub-environments' wrappers (``TimeLimit``, the task's)
run as they are, so an environment's trajectory is the one it has alone (tests/envs/test_vector.py).

Autoreset as Gymnasium 1.x defines it (:class:`gymnasium.vector.AutoresetMode`): ``NEXT_STEP`` (the
default, as ``SyncVectorEnv``): the step after an episode's last one resets that environment and returns
its first observation with reward 0 (its action is ignored); ``SAME_STEP``: the last step returns the
first observation of the next episode, the last one in ``info["final_obs"]`` and its info in
``info["final_info"]`` (what SB3's ``VecEnv`` does; :mod:`clustergym.training.batched`).

Observations are fresh arrays at every step (one copy of the batch buffer, views per key): a caller may
keep them (SB3's buffers do) and nothing later changes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from gymnasium.wrappers import PassiveEnvChecker

from clustergym.envs.cluster_env import ClusterEnv
from clustergym.envs.observation import Scaler, _FlatLayout
from clustergym.errors import ConfigError

__all__ = ["BatchedVectorEnv"]


def _chain(env: gym.Env) -> list[gym.Env]:
    out = [env]
    while isinstance(env, gym.Wrapper):
        env = env.env
        out.append(env)
    return out


class BatchedVectorEnv(VectorEnv):
    """``N`` cluster environments in one process, observations and masks built for the batch (module docstring).

    Args:
        env_fns: functions returning the environments, all of one scenario (or suite task) and one set
            of environment arguments: :class:`~clustergym.envs.ClusterEnv` (or an
            :class:`~clustergym.envs.AdmissionEnv`), wrapped or not, but without Gymnasium's
            ``PassiveEnvChecker`` (``gymnasium.make(..., disable_env_checker=True)``): the environments
            hand their observation to this class, not to their wrappers.
        autoreset_mode: :class:`gymnasium.vector.AutoresetMode` ``NEXT_STEP`` or ``SAME_STEP``.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    ):
        mode = AutoresetMode(autoreset_mode)
        if mode == AutoresetMode.DISABLED:
            raise ConfigError("autoreset_mode", "BatchedVectorEnv resets environments itself: NextStep or SameStep")
        if not env_fns:
            raise ConfigError("env_fns", "no environments: give at least one function returning an environment")
        self.envs = [fn() for fn in env_fns]
        self.inner: list[ClusterEnv] = []
        for env in self.envs:
            chain = _chain(env)
            if any(isinstance(e, PassiveEnvChecker) for e in chain) or not isinstance(chain[-1], ClusterEnv):
                raise ConfigError(
                    "env_fns",
                    f"{env} is not a ClusterEnv without Gymnasium's env checker "
                    "(make it with gymnasium.make(..., disable_env_checker=True))",
                )
            if not chain[-1].observe:
                raise ConfigError("env_fns", "the environments must build observations (observe=True)")
            self.inner.append(chain[-1])
        n = self.num_envs = len(self.envs)
        first = self.envs[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        if any(
            e.observation_space != first.observation_space or e.action_space != first.action_space for e in self.envs
        ):
            raise ConfigError("env_fns", "the environments differ in their observation or action spaces")
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self.metadata = {"autoreset_mode": mode}
        self.render_mode = None
        self.autoreset_mode = mode
        b0 = self.inner[0].obs_builder
        self._raw = _FlatLayout(b0.raw_space, batch=(n,))
        for i, e in enumerate(self.inner):
            e.obs_builder.bind(self._raw.buf[i])
            e.observe = False  # the env's steps return None; this class builds the batch's observation
        self._scaler: Scaler | None = None
        self._out = self._raw
        if b0.space is not b0.raw_space:  # a suite task's scaled observation
            self._out = _FlatLayout(b0.space, batch=(n,))
            self._scaler = Scaler(self.inner[0].sim, b0.K, b0._time_unit, batch=(n,))
        self._pair = b0.pair_features
        self._ids: list[list[int]] = [[] for _ in range(n)]
        self._masks = np.zeros((n, self.inner[0].mode.mask_size), dtype=np.bool_)
        self._ended = np.zeros(n, dtype=bool)
        #: each environment's own ``info`` of the last reset or step (the SB3 adapter reads them)
        self.env_infos: list[dict[str, Any]] = [{} for _ in range(n)]

    # ------------------------------------------------------------------ the batch's observation
    def _refresh(self, i: int) -> None:
        env = self.inner[i]
        self._ids[i] = env.obs_builder.refresh()
        self._masks[i] = env.action_masks()

    def _observations(self) -> dict[str, np.ndarray]:
        if self._scaler is not None:
            self._scaler(self._raw, self._out)
        obs = self._out.emit(self._masks)
        if self._pair:
            obs["pair_scores"] = np.stack([e.obs_builder._pair_scores(ids) for e, ids in zip(self.inner, self._ids)])
        return obs

    def _single_observation(self, i: int) -> dict[str, np.ndarray]:
        """Environment ``i``'s observation now, alone (``final_obs``), from its features in the batch."""
        b = self.inner[i].obs_builder
        return b.build(self._masks[i])

    def action_masks(self) -> np.ndarray:
        """``(N, M)`` bool: the valid actions of each environment (MaskablePPO)."""
        return self._masks.copy()

    # ------------------------------------------------------------------ Gymnasium's VectorEnv
    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None):
        """Reset every environment: ``seed`` an int (environment ``i`` gets ``seed + i``, as
        ``SyncVectorEnv``), a list of seeds, or ``None``."""
        n = self.num_envs
        seeds = [None] * n if seed is None else [seed + i for i in range(n)] if isinstance(seed, int) else list(seed)
        if len(seeds) != n:
            raise ConfigError("seed", f"{len(seeds)} seeds for {n} environments")
        infos: dict[str, Any] = {}
        for i, (env, s) in enumerate(zip(self.envs, seeds)):
            _, info = env.reset(seed=s, options=options)
            self.env_infos[i] = info
            self._refresh(i)
            infos = self._add_info(infos, info, i)
        self._ended[:] = False
        return self._observations(), infos

    def step(self, actions: Any):
        obs, rewards, terms, truncs = self.step_envs(actions)
        return obs, rewards, terms, truncs, self._batch_infos()

    def step_envs(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`step` without gathering the infos into Gymnasium's vector layout: ``(obs, rewards,
        terminations, truncations)``, each environment's own info in :attr:`env_infos` (what SB3's adapter
        reads; the layout took 7 % of a suite task's batch step in a profile)."""
        n = self.num_envs
        rewards = np.zeros(n, dtype=np.float64)
        terms = np.zeros(n, dtype=bool)
        truncs = np.zeros(n, dtype=bool)
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        acts = actions.tolist() if isinstance(actions, np.ndarray) and actions.ndim == 1 else list(actions)
        for i, env in enumerate(self.envs):
            if self._ended[i]:  # NEXT_STEP: this step resets it
                _, info = env.reset()
                self._ended[i] = False
            else:
                _, r, te, tr, info = env.step(acts[i])
                rewards[i], terms[i], truncs[i] = r, te, tr
                if te or tr:
                    if same_step:
                        self._refresh(i)
                        final_obs, final_info = self._single_observation(i), info
                        _, info = env.reset()
                        info = {**info, "final_obs": final_obs, "final_info": final_info}
                    else:
                        self._ended[i] = True
            self.env_infos[i] = info
            self._refresh(i)
        return self._observations(), rewards, terms, truncs

    def _batch_infos(self) -> dict[str, Any]:
        """The environments' infos in Gymnasium's vector layout (``info[key][i]``, ``info["_" + key][i]``: env
        ``i`` has it), as ``_add_info`` builds them; a key every environment has as a plain ``int``, ``float``
        or ``bool`` of one type becomes one array at once."""
        envs, n = self.env_infos, self.num_envs
        infos: dict[str, Any] = {}
        done = set()
        for k, v in envs[0].items():
            t = type(v)
            if t in (int, float, bool) and all(k in e and type(e[k]) is t for e in envs):
                infos[k] = np.array([e[k] for e in envs], dtype=t)
                infos["_" + k] = np.ones(n, dtype=np.bool_)
                done.add(k)
        for i, info in enumerate(envs):  # the rest (nested dicts, strings, keys some environments lack)
            rest = {k: v for k, v in info.items() if k not in done}
            if rest:
                infos = self._add_info(infos, rest, i)
        return infos

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call ``name`` on every environment (an attribute's value when it is not callable)."""
        out = []
        for env in self.envs:
            f = env.get_wrapper_attr(name)
            out.append(f(*args, **kwargs) if callable(f) else f)
        return tuple(out)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return tuple(env.get_wrapper_attr(name) for env in self.envs)

    def set_attr(self, name: str, values: Any) -> None:
        vals = values if isinstance(values, (list, tuple)) else [values] * self.num_envs
        for env, v in zip(self.envs, vals):
            env.set_wrapper_attr(name, v)

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()
