"""The Greedy dispatch policy of the LoTES paper (Tran et al. 2018, Sec. 5.1; choices: docs/papers/lotes.md#greedy).

* **Arrival**: first fit over the machines in Table-1 order (configurations top
  to bottom, then machine index; the presets lay machines out in that order, so
  it is the machine index).  The literal rule ignores queues: the first machine
  with enough idle resources takes the job even if jobs wait at it
  (``respect_queues=True`` skips machines with a non-empty queue).
* **No fit**: the job joins the queue of *one* machine, the one with the
  fewest waiting jobs (jobs, not work) among the machines whose *total*
  capacity can hold it (otherwise a job can be stuck for ever), ties
  broken uniformly at random with the agent's seeded generator.
* **Completion** on machine ``m``: strict FCFS with head-of-line blocking:
  while the head of ``m``'s queue fits ``m``, start it
  (``queue_scan="first-fit"``: start the oldest job of the queue that fits).
  No work stealing between machines.  Greedy uses no class information.

Per-machine queues: two equivalent realisations.

* **Central queue + agent bookkeeping** (default, on every LoTES preset): the
  kernel keeps its one central queue and the agent keeps, for each machine, the
  FIFO list of the queued jobs it assigned there; a job is only ever started
  on its machine.  The dynamics and every metric (queue length, waits) are
  those of per-machine queues, and the scenario is *the same object* the
  LoTES and Tetris agents run on, so comparisons are paired on the same seeds
  without a special scenario.
* **Kernel local queues** (``queueing="local"`` with ``routing="agent"``): the
  agent ROUTEs a job that must wait to the machine it chose (and ROUTE + PLACE
  for a job that starts at once).  The kernel then shows the per-machine queues
  in its state and observations (``local_count``).

Both make the same decisions from the same random draws, so on one seed they
produce identical schedules; the test suite checks it.  The first is the
default because LoTES's presets (and the paper's comparison) are central-queue
scenarios: the queue discipline belongs to the agent, not to the kernel.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from clustergym.agent_api import Agent, AgentContext, AgentRequirements
from clustergym.core.cluster import fit_limit
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.jobs import JobStatus
from clustergym.core.simulator import EpochConfig
from clustergym.errors import ConfigError
from clustergym.validation import settings

__all__ = ["LotesGreedy"]


class LotesGreedy(Agent):
    """Greedy of the LoTES paper: first fit, else the shortest per-machine queue; FCFS per machine."""

    description = "LoTES paper's Greedy: first fit in Table-1 order, else shortest per-machine queue, FCFS (HOL)"
    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=True, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.PLACE, Cmd.ROUTE}),
        queueing=("central", "local"),
    )

    def __init__(self, respect_queues: bool = False, queue_scan: str = "fcfs", **params: Any):
        super().__init__(**params)
        self.queue_scan = settings.choice(queue_scan, "agent.queue_scan", ("fcfs", "first-fit"))
        self.respect_queues = settings.boolean(respect_queues, "agent.respect_queues")

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        v = self.view
        self.local = v.queueing == "local"
        if self.local and self.context.scenario.routing != "agent":
            raise ConfigError(
                "agent",
                "lotes-greedy with per-server queues needs routing='agent' "
                f"(the scenario routes by {self.context.scenario.routing!r})",
            )
        L = v.num_servers
        self._lim = fit_limit(v.capacity)
        self._mq: list[deque[int]] = [deque() for _ in range(L)]  # central mode: agent-side machine queues
        self._qlen = np.zeros(L, dtype=np.int64)
        self._epoch = -1
        self._pending: list[Command] = []
        self.stats = {"arrivals": 0, "immediate": 0, "queued": 0, "examined": 0}

    # ------------------------------------------------------------------ decisions
    def act(self, observation: Any) -> Command:
        v = self.view
        ev = v.event
        if v.epoch != self._epoch:
            self._epoch = v.epoch
            self._pending = []
            if ev.kind == EventKind.ARRIVAL and v.status(ev.job) == JobStatus.QUEUED:
                self._pending = self._on_arrival(ev.job)
        if self._pending:
            return self._pending.pop(0)
        if ev.kind == EventKind.COMPLETION:
            job = self._on_completion(ev.server)
            return Command.wait() if job < 0 else Command.place(job, ev.server)
        return Command.wait()

    def _queue_lengths(self) -> np.ndarray:
        return self.view.local_count.sum(axis=1) if self.local else self._qlen

    def _on_arrival(self, job: int) -> list[Command]:
        v = self.view
        st = self.stats
        st["arrivals"] += 1
        d = v.demand(job)
        if self.respect_queues or self.view.any_slots:
            fits = np.all(v.load + d <= self._lim, axis=1)
            if self.respect_queues:
                fits &= self._queue_lengths() == 0
            hit = np.flatnonzero(fits)
            s = int(hit[0]) if hit.size else -1
        else:  # the kernel's first fit: the same fit test, from its placement index on large clusters
            s = v.select_server("first-fit", job)
        if s >= 0:
            st["immediate"] += 1
            st["examined"] += s + 1
            return [Command.route(job, s), Command.place(job, s)] if self.local else [Command.place(job, s)]
        st["examined"] += v.num_servers
        st["queued"] += 1
        qlen = self._queue_lengths()
        hold = np.flatnonzero(np.all(d <= self._lim, axis=1))
        q = qlen[hold]
        best = hold[q == q.min()]
        s = int(best[0]) if best.size == 1 else int(best[self.rng.integers(best.size)])
        if self.local:
            return [Command.route(job, s)]
        self._mq[s].append(job)
        self._qlen[s] += 1
        return []

    def _on_completion(self, m: int) -> int:
        v = self.view
        ids: Sequence[int]
        if self.local:
            heads = [q for t in range(v.num_types) if (q := v.local_queue(m, t))]
            if not heads:
                return -1
            ids = sorted(j for q in heads for j in q)  # ids follow arrival order: FCFS across types
        else:
            if not self._mq[m]:
                return -1
            ids = self._mq[m]
        free = self._lim[m] - v.load[m]
        if self.queue_scan == "fcfs":
            cand = [ids[0]]
        else:
            cand = list(ids)
        for z in cand:
            if np.all(v.demand(z) <= free):
                if not self.local:
                    self._mq[m].remove(z)
                    self._qlen[m] -= 1
                return int(z)
        return -1
