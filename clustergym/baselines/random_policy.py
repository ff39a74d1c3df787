"""The masked random policy: a uniformly random valid action of the env's action mode.

A reference point for learned agents: any policy worth training
should beat it.  It acts through the discrete action space, exactly as a
learned agent does, using the action mask.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import MultiDiscrete

from clustergym.agent_api import Agent, AgentRequirements
from clustergym.core.commands import Cmd
from clustergym.core.simulator import EpochConfig

__all__ = ["RandomMasked"]


class RandomMasked(Agent):
    """Uniformly random valid action (masked) of the env's action mode."""

    description = "uniformly random valid action of the env's action mode (masked)"
    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=True, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.PLACE, Cmd.ADMIT, Cmd.REJECT}),
        queueing=("central", "loss", "local"),
        skip_trivial=True,
        observes=True,
    )

    def act(self, observation: Any) -> Any:
        ctx = self.context
        mask = ctx.action_mask()
        space = ctx.action_space
        if isinstance(space, MultiDiscrete):  # a factorised mask
            out, start = [], 0
            for n in space.nvec:
                valid = np.flatnonzero(mask[start : start + n])
                out.append(int(valid[self.rng.integers(valid.size)]))
                start += n
            return np.array(out)
        valid = np.flatnonzero(mask)
        return int(valid[self.rng.integers(valid.size)])
