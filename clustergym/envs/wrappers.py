"""Wrappers for learning libraries."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["FlattenObservation"]


class FlattenObservation(gym.ObservationWrapper):
    """Flattens the ``Dict`` observation into one float32 vector for MLP policies.

    The action mask stays available through ``action_masks()`` (MaskablePPO) and
    is also part of the flat vector, so the policy sees which actions are valid.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._keys = list(env.observation_space.spaces.keys())  # type: ignore[attr-defined]
        size = sum(int(np.prod(env.observation_space[k].shape)) for k in self._keys)  # type: ignore[index]
        self.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)

    def observation(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([np.asarray(observation[k], dtype=np.float32).ravel() for k in self._keys])

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()  # type: ignore[attr-defined]
