"""MaxWeight Refresh (MWR) and MaxWeight Stop (MWS) — RECONSTRUCTED (RMS paper §I-A, §VII-A).

The RMS paper compares against MWR (Maguluri & Srikant, ref. [18]) and MWS
(Psychas & Ghaderi, ref. [19]) but defines them only in words.  The agents here
are labelled *reconstructions* from the paper's description (§I-A; see
docs/papers/rms.md#maxweight), not transcriptions of [18]/[19]; where the
description leaves a detail open the choice is written below.  Both use the MaxWeight weight of type ``j`` = its queue length
``Q_j`` and the per-server Knapsack step

    ``k* = argmax_{k in K_l} sum_j Q_j k_j``          (the "max-weight configuration")

solved by :class:`clustergym.theory.rms.Knapsack`:

* ``exact`` (default): maximum over the configurations enumerated by
  :func:`clustergym.theory.configurations.enumerate_configurations`, cached per distinct
  server capacity (EC2: 28 configurations; Fig. 1b: 10).  Ties go to the
  configuration with the most jobs, then to the first in enumeration order
  (so ``Q = e_1`` on EC2 gives ``(2, 3, 0)``, a maximal configuration, not ``(2, 0, 0)``).
  When ``K`` is too large to enumerate (Google: 10 power-of-1/2 sizes in a unit
  server) and the sizes are *divisible* — all demands proportional to the
  capacity, with ``C / s_j`` integral — the exact answer is "fill the server with
  the type maximising ``Q_j / s_j``" (with divisible sizes the LP bound is attained).
  Otherwise the greedy blackbox is used and ``knapsack_exact`` is ``False``.
* ``greedy``: types in decreasing ``Q_j / size_j`` (size normalised by capacity,
  summed over resources), each filled as far as it fits (the greedy Knapsack
  blackbox of [19]).

MWR (reconstruction)
--------------------
Each server ``l`` has a target configuration ``k^l``.  While a server is empty it
is at a *refresh time*: its target is uncommitted.  When the scheduler needs it
(a queued job and no committed server with room for it) the empty server takes
the max-weight configuration for the current ``Q`` as its target and commits
to it; from then on it only ever starts head-of-line jobs of type ``j`` while
``k_j^l < target_j`` (checked at arrivals and departures), until it is empty
again (local refresh).  ``refresh="global"`` (the version with the theory of
[18]) uncommits targets only when *all* servers are empty at once.  Empty
servers are committed lazily, one at a time, so each commitment sees the queue
left by the previous one (committing every empty server to the same
``argmax`` at once would give them all one configuration).

MWS (reconstruction)
--------------------
At every departure from ``l`` the blackbox gives ``k~ = argmax_k Q.k``.  If the
server is not empty and ``Q.k^l < beta * Q.k~`` the server is STOPPED: it starts
nothing until it is empty (then it is active again).  An active server fills
towards ``k~`` (head-of-line type-``j`` jobs while ``k_j^l < k~_j`` and the job
fits).  At an arrival the job goes to the first active server with room for it
in its current ``k~``; failing that, empty servers recompute ``k~`` and fill.
``beta`` defaults to 0.5 (an assumption: [19] gives no value for the
simulations).

Queues: central (``Q`` = per-type queues) or per-server (``queueing="local"``,
routed by the kernel — ``jsq`` or ``power-of-two`` — and each server uses its
own ``Q^l`` in the Knapsack step: the "distributed + JSQ" option, since the
paper does not say which queueing its comparison used).

Counters in ``agent.stats``: knapsack solves, refreshes (MWR), stops (MWS).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from clustergym.agent_api import Agent, AgentContext, AgentRequirements
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.simulator import EpochConfig
from clustergym.errors import ConfigError
from clustergym.theory.rms import BLACKBOXES, knapsack_for
from clustergym.validation import settings

__all__ = ["MaxWeightRefresh", "MaxWeightStop"]

_WAIT = Command.wait()


class _MaxWeightBase(Agent):
    """Shared machinery: per-server Knapsack, queue access (central or local), the command loop."""

    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=True, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.PLACE}),
        queueing=("central", "local"),
        needs_types=True,
    )
    _REFRESH: ClassVar[int] = -1  # work-list token: commit the next uncommitted/empty server

    def __init__(self, blackbox: str = "exact", **params: Any):
        super().__init__(**params)
        self.blackbox = settings.choice(blackbox, "agent.blackbox", BLACKBOXES)
        self.stats: dict[str, int] = {}

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        v = self.view
        if not v.types.exact:
            raise ConfigError("agent", f"agent {self.name!r} needs discrete job types")
        self.L, self.J = v.num_servers, v.num_types
        self.type_demand = np.array(v.types.demand, dtype=np.float64)
        self.capacity = np.array(v.capacity, dtype=np.float64)
        self.local = v.queueing == "local"
        rows, inverse = np.unique(self.capacity, axis=0, return_inverse=True)
        ks = [knapsack_for(self.type_demand, r, self.blackbox) for r in rows]
        self.knapsack = [ks[int(i)] for i in np.asarray(inverse).ravel()]  #: per server
        self.knapsack_exact = all(k.exact for k in ks)
        self.target = np.zeros((self.L, self.J), dtype=np.int64)
        self._epoch = -1
        self._todo: list[int] = []
        self.stats = {"knapsack_solves": 0}

    # ------------------------------------------------------------------ helpers
    def _queue(self, server: int) -> np.ndarray:
        """The queue lengths the Knapsack step at ``server`` uses (central, or the server's own)."""
        v = self.view
        return np.array(v.local_count[server] if self.local else v.queued_by_type, dtype=np.float64)

    def _solve(self, server: int) -> np.ndarray:
        self.stats["knapsack_solves"] += 1
        return self.knapsack[server].best(self._queue(server))

    def _head(self, server: int, j: int) -> int:
        v = self.view
        if self.local:
            q = v.local_queue(server, j)
            return q[0] if q else -1
        return v.head_of_type(j)

    def _is_empty(self, server: int) -> bool:
        v = self.view
        return int(v.count_real[server].sum()) == 0 and int(v.count_dummy[server].sum()) == 0

    def _fill(self, server: int) -> Command | None:
        """The next head-of-line job that moves ``server`` towards its target, or ``None``."""
        k = self.view.count_real[server]
        t = self.target[server]
        q = self._queue(server)
        for j in np.argsort(-q, kind="stable"):
            j = int(j)
            if q[j] <= 0:
                break
            if k[j] < t[j] and self.view.type_fits_at(j, server):
                head = self._head(server, j)
                if head >= 0:
                    return Command.place(head, server)
        return None

    def act(self, observation: Any) -> Command:
        v = self.view
        if v.epoch != self._epoch:
            self._epoch = v.epoch
            self._todo = self._plan(v.event)
        while self._todo:
            cmd = self._step(self._todo[0])
            if cmd is not None:
                return cmd
            self._todo.pop(0)
        return _WAIT

    def _plan(self, ev: Any) -> list[int]:
        raise NotImplementedError

    def _step(self, item: int) -> Command | None:
        raise NotImplementedError


class MaxWeightRefresh(_MaxWeightBase):
    """MWR, MaxWeight Refresh — RECONSTRUCTED from the RMS paper's §I-A (ref. [18] not transcribed).

    Args:
        refresh: ``local`` (a server re-targets when it becomes empty; default) or
            ``global`` (targets are reset only when all servers are empty at once).
        blackbox: ``exact`` (default) or ``greedy`` Knapsack.
    """

    description = (
        "MaxWeight Refresh (reconstructed from RMS §I-A): max-weight target per server, "
        "re-chosen only when the server empties"
    )

    def __init__(self, refresh: str = "local", **params: Any):
        super().__init__(**params)
        self.refresh = settings.choice(refresh, "agent.refresh", ("local", "global"))

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        self.committed = np.zeros(self.L, dtype=bool)
        self.stats["refreshes"] = 0

    def _plan(self, ev: Any) -> list[int]:
        kind = ev.kind
        if kind == EventKind.COMPLETION:
            s = ev.server
            if self._is_empty(s):
                if self.refresh == "local":
                    self.committed[s] = False
                elif self.view.count_real.sum() == 0 and self.view.count_dummy.sum() == 0:
                    self.committed[:] = False
            return [s] if self.local else [s, self._REFRESH]
        if kind == EventKind.ARRIVAL:
            if self.local:
                return [ev.server] if ev.server >= 0 else []
            j = ev.type
            room = np.flatnonzero(self.committed & (self.target[:, j] > self.view.count_real[:, j]))
            return [int(room[0])] if room.size else [self._REFRESH]
        return [self._REFRESH] if not self.local else list(range(self.L))

    def _commit(self, server: int) -> bool:
        """Refresh time of an empty server: take the max-weight configuration as its target."""
        t = self._solve(server)
        if not t.any():
            return False
        self.target[server] = t
        self.committed[server] = True
        self.stats["refreshes"] += 1
        return True

    def _step(self, item: int) -> Command | None:
        if item == self._REFRESH:  # central queues: commit empty servers while jobs wait
            while self.view.num_queued > 0:
                free = np.flatnonzero(~self.committed)
                if free.size == 0:
                    return None
                s = int(free[0])
                if not self._commit(s):
                    return None
                cmd = self._fill(s)
                if cmd is not None:
                    self._todo.insert(0, s)  # keep filling s towards its new target
                    return cmd
            return None
        s = item
        if not self.committed[s] and (not self._is_empty(s) or not self._commit(s)):
            return None
        return self._fill(s)


class MaxWeightStop(_MaxWeightBase):
    """MWS, MaxWeight Stop — RECONSTRUCTED from the RMS paper's §I-A (ref. [19] not transcribed).

    Args:
        beta: stop a server when its configuration's weight is below ``beta`` times the
            blackbox's (default 0.5, an assumption).
        blackbox: ``exact`` (default) or ``greedy`` Knapsack.
    """

    description = (
        "MaxWeight Stop (reconstructed from RMS §I-A): knapsack at each departure; "
        "stop a server whose weight < beta x max until it empties"
    )

    def __init__(self, beta: float = 0.5, **params: Any):
        super().__init__(**params)
        self.beta = settings.number(beta, "agent.beta", lo=0.0, lo_open=True, hi=1.0)

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        self.stopped = np.zeros(self.L, dtype=bool)
        self.stats["stops"] = 0

    def _recompute(self, server: int) -> None:
        """Blackbox at ``server``; stop it if its current weight is below ``beta`` of the best."""
        q = self._queue(server)
        best = self.knapsack[server].best(q)
        self.stats["knapsack_solves"] += 1
        self.target[server] = best
        if not self._is_empty(server) and not self.stopped[server]:
            current = float(q @ self.view.count_real[server])
            if current < self.beta * float(q @ best):
                self.stopped[server] = True
                self.stats["stops"] += 1

    def _plan(self, ev: Any) -> list[int]:
        kind = ev.kind
        if kind == EventKind.COMPLETION:
            s = ev.server
            if self._is_empty(s):
                self.stopped[s] = False
            self._recompute(s)
            return [s] if self.local else [s, self._REFRESH]
        if kind == EventKind.ARRIVAL:
            if self.local:
                s = ev.server
                if s >= 0 and self._is_empty(s):
                    self._recompute(s)
                return [s] if s >= 0 else []
            j = ev.type
            v = self.view
            room = np.flatnonzero(~self.stopped & (self.target[:, j] > v.count_real[:, j]) & v.fits_type(j))
            return [int(room[0])] if room.size else [self._REFRESH]
        return [self._REFRESH] if not self.local else list(range(self.L))

    def _step(self, item: int) -> Command | None:
        if item == self._REFRESH:  # central queues: empty servers re-run the blackbox and fill
            v = self.view
            while v.num_queued > 0:
                idle = np.flatnonzero((v.count_real.sum(axis=1) == 0) & (v.count_dummy.sum(axis=1) == 0))
                empty = [int(s) for s in idle if int(s) not in self._refreshed]
                if not empty:
                    return None
                s = empty[0]
                self._refreshed.add(s)
                self._recompute(s)
                cmd = self._fill(s)
                if cmd is not None:
                    self._todo.insert(0, s)
                    return cmd
            return None
        if self.stopped[item]:
            return None
        return self._fill(item)

    def act(self, observation: Any) -> Command:
        if self.view.epoch != self._epoch:
            self._refreshed: set[int] = set()
        return super().act(observation)
