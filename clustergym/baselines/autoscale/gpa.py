"""Static reservation baselines of the auto-scaling paper (Sec. 3, Corollary 1): ORACLES, they know rho.

Both partition the ``L`` servers once, at time 0, into configurations, hold
each configuration as the kernel's reservation slots (RESERVE), and route
every arrival to an empty slot of its type -- the lowest server id that has
one -- or reject it.  No migration, no reconfiguration.

* ``gpa-static`` -- the integer GPA (Algorithm 1, with the clamp fix) on
  ``Ŷ = rho L``: its reward per server tends to ``U^(g)[rho]`` (Prop. 2, Cor. 1).
* ``lp-static`` -- the LP (3.2): ``floor(x*_k L)`` servers in each configuration
  with ``x*_k > 0`` (configurations in Definition-2 descending order, lowest
  server ids first); the leftover servers stay in configuration 0
  (paper-faithful; ``leftover=best`` gives them the maximum-reward
  configuration instead).  Its reward per server tends to ``U*[rho]``.

``rho_j = lambda_j E[work_j] / L`` is read from the scenario's arrival rates
(``view.rates``, an oracle read): both declare ``uses_oracle=True``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from clustergym.agent_api import Agent, AgentContext, AgentRequirements
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.simulator import EpochConfig
from clustergym.errors import ConfigError
from clustergym.theory.autoscale import Config, ConfigSpace, as_fraction, gpa, lp_upper_bound, space_of
from clustergym.validation import settings

__all__ = ["StaticReservation", "GPAStatic", "LPStatic", "static_partition_gpa", "static_partition_lp"]


def static_partition_gpa(rho: list[Fraction], num_servers: int, space: ConfigSpace) -> list[tuple[Config, int]]:
    """``GPA(L, rho L)``: the configurations with their server counts (plan order; zero counts dropped)."""
    L = int(num_servers)
    return [(st.config, st.count) for st in gpa([r * L for r in rho], L, space) if st.count > 0]


def static_partition_lp(
    rho: list[Fraction], num_servers: int, space: ConfigSpace, leftover: str = "empty"
) -> list[tuple[Config, int]]:
    """``floor(x*_k L)`` servers per configuration of an optimal LP (3.2) solution, Def.-2 descending."""
    L = int(num_servers)
    lp = lp_upper_bound(rho, space)
    parts = []
    for k, x in sorted(lp.x.items(), key=lambda kv: space.order_key(kv[0]), reverse=True):
        n = int(math.floor(x * L + 1e-9))
        if n > 0 and any(k):
            parts.append((k, n))
    used = sum(n for _, n in parts)
    if leftover == "best" and used < L:
        best = space.max_reward(range(space.num_types))
        parts.append((best, L - used))
    return parts


class StaticReservation(Agent):
    """Reserve a fixed partition at time 0; route each arrival to the lowest-id server with an empty slot."""

    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=False, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.ADMIT, Cmd.REJECT, Cmd.RESERVE}),
        queueing=("loss",),
        needs_types=True,
        uses_oracle=True,
    )

    def partition(self, rho: list[Fraction], space: ConfigSpace) -> list[tuple[Config, int]]:
        raise NotImplementedError

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        v = self.view
        sc = self.context.scenario
        rates = v.rates
        if rates is None:
            raise ConfigError("agent", f"{self.name} knows rho from the arrival rates; scenario {sc.name!r} has none")
        L = v.num_servers
        self.space = space_of(sc)
        mean_work = np.asarray(v.types.mean_work, dtype=float)
        self.rho = [as_fraction(float(r) * float(w) / L) for r, w in zip(rates, mean_work)]
        self.parts = self.partition(self.rho, self.space)
        cmds = []
        s = 0
        self.assignment: list[Config] = []
        for k, n in self.parts:
            for _ in range(n):
                for j, c in enumerate(k):
                    cmds.extend([Command.reserve(j, s)] * c)
                self.assignment.append(k)
                s += 1
        self.assignment += [(0,) * v.num_types] * (L - s)
        self._start_cmds = cmds
        self._ci = 0
        self._epoch = -1
        self._done_arrival = False

    def act(self, observation: Any) -> Command:
        v = self.view
        if v.epoch != self._epoch:
            self._epoch = v.epoch
            self._done_arrival = False
        if v.event.kind == EventKind.START or self._ci < len(self._start_cmds):
            if self._ci < len(self._start_cmds):
                cmd = self._start_cmds[self._ci]
                self._ci += 1
                return cmd
        job = v.pending
        if job < 0 or self._done_arrival:
            return Command.wait()
        self._done_arrival = True
        j = v.job_type(job)
        free = v.slots[:, j] > v.slots_filled[:, j]
        s = int(np.argmax(free))
        return Command.admit(s) if free[s] else Command.reject()


class GPAStatic(StaticReservation):
    """Static GPA reservation (ORACLE: knows rho): GPA(L, rho L) slots, fixed (Cor. 1)."""

    description = "static GPA(rho L) reservation, route to an empty slot or reject (ORACLE: knows rho)"

    def partition(self, rho: list[Fraction], space: ConfigSpace) -> list[tuple[Config, int]]:
        return static_partition_gpa(rho, self.view.num_servers, space)


class LPStatic(StaticReservation):
    """Static LP reservation (ORACLE: knows rho): floor(x*_k L) servers per LP (3.2) configuration."""

    description = "static LP (3.2) reservation floor(x* L), route to an empty slot or reject (ORACLE: knows rho)"

    def __init__(self, leftover: str = "empty", **params: Any):
        super().__init__(**params)
        self.leftover = settings.choice(leftover, "agent.leftover", ("empty", "best"))

    def partition(self, rho: list[Fraction], space: ConfigSpace) -> list[tuple[Config, int]]:
        return static_partition_lp(rho, self.view.num_servers, space, self.leftover)
