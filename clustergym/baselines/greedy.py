"""Work-conserving greedy packing: First-Fit, Best-Fit, Random-Fit (RMS paper §I-A, §III, Definition 1).

Definition 1 of the RMS paper: whenever a server has residual capacity and a
queued job fits in it, the algorithm places one of the jobs there.  The
event-driven form enforces "after every event, no queued job fits any server":

* at an arrival, the arriving job goes to ``select_server`` among the servers
  where it fits, or joins the queue;
* at a completion on server ``l`` (only ``l`` gained capacity), jobs are taken
  from the queue by ``select_job`` while one fits on ``l``;
* at the start and at a wake-up the queue is swept in arrival order and every
  job that fits is placed (a clock tick changes nothing, so it needs no sweep).

Server selection (RMS paper §III): First-Fit takes the lowest-index server; Random-Fit a
uniformly random one; Best-Fit the *tightest*, scored as the inner product of
the job's demand and the server's occupied resources, each normalised by the
server's capacity (docs/papers/rms.md#best-fit): ``score = sum_d (s_d / C_d) (u_d / C_d)``;
ties go to the lowest index (scores within ``SCORE_RTOL`` of the best are
ties, :func:`clustergym.core.scores.argbest`, so rounding never overrides the
rule).  With one resource and equal capacities this is
classic Best-Fit (least residual capacity).

Job selection at a completion (the paper leaves it open; docs/papers/rms.md#job-selection):
``largest`` (default for Best-Fit; it reproduces the Fig. 1b trap) takes the
largest fitting job (demand summed over resources, normalised by the server's
capacity; ties, up to ``SCORE_RTOL``, to the oldest), ``fifo`` (default for
First-Fit and Random-Fit) the oldest fitting job, ``random`` a uniformly random fitting job type (or job, for untyped
workloads).  For typed workloads only the head of each type queue is a
candidate, so jobs of one type start in arrival order.

Scan window (``scan=N``, e.g. ``--set agent.scan=64``; not in the paper): at
every arrival and completion (and at the start and wake-ups) the first ``N``
queued jobs, a snapshot in arrival order taken when the epoch opens (an
arriving job has joined the tail), are scanned oldest first, and each one
that fits somewhere is placed on the server of the server rule before the
next is looked at.  This is the common "FIFO queue + Best-Fit over a
backfilling window" scheduler, the one ``clustergym/perf/simpy_bestfit.py``
implements outside clustergym; ``select_job`` is then unused.

The admission variants (``best-fit-admit``, ``first-fit-admit``) run in loss
systems: admit the arriving job to the selected server if it fits anywhere,
else reject it (a baseline not in the auto-scaling paper; docs/papers/autoscale.md#extra-baselines).
"""

from __future__ import annotations

from itertools import islice
from typing import Any, ClassVar

import numpy as np

from clustergym.agent_api import Agent, AgentContext, AgentRequirements, CompiledPolicy
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.jobs import JobStatus
from clustergym.core.placement import scan_select
from clustergym.core.scores import best_mask
from clustergym.core.simulator import EpochConfig
from clustergym.validation import settings

__all__ = [
    "select_server",
    "GreedyAgent",
    "FirstFit",
    "BestFit",
    "RandomFit",
    "FastestEstimatedFit",
    "BestFitAdmit",
    "FirstFitAdmit",
]

SERVER_RULES = ("first-fit", "best-fit", "random-fit")
JOB_RULES = ("largest", "fifo", "random")


#: ``select_server(rule, fits, demand, load, capacity, rng)``: the server chosen by ``rule`` among
#: those where ``fits`` (``(L,)`` bool), or -1, by a scan.  The reference that the kernel's placement
#: index reproduces (``ClusterView.select_server``, used by the agents below).
select_server = scan_select


class GreedyAgent(Agent):
    """Work-conserving greedy scheduling with a server rule and a job rule."""

    server_rule: ClassVar[str] = "first-fit"
    default_job_rule: ClassVar[str] = "fifo"
    epoch_local = True  # only the current epoch's sweep is kept
    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=True, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.PLACE}),
        queueing=("central", "local"),
    )

    def __init__(self, select_job: str | None = None, scan: int | None = None, **params: Any):
        super().__init__(**params)
        self.select_job = settings.choice(select_job or self.default_job_rule, "agent.select_job", JOB_RULES)
        self.scan = settings.number(scan, "agent.scan", lo=1, integer=True, allow_none=True)
        self._epoch = -1

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        self._epoch = -1
        self._sweep: list[int] = []

    # ------------------------------------------------------------------ decisions
    def act(self, observation: Any) -> Command:
        v = self.view
        ev = v.event
        if v.epoch != self._epoch:  # a new epoch: decide what this epoch is about
            self._epoch = v.epoch
            self._arrival_done = False
            self._sweep = []
            self._pos = 0
            if self.scan is not None:
                if ev.kind != EventKind.TICK:  # the scan window: the first `scan` queued jobs, oldest first
                    self._sweep = (
                        list(v.queue(self.scan))
                        if v.queueing == "central"
                        else list(islice(self._sweep_order(), self.scan))
                    )
            elif ev.kind in (EventKind.START, EventKind.WAKEUP):
                # after an arrival or a completion no queued job fits (that is what the agent keeps
                # true), and a clock tick changes nothing: only these epochs need a sweep
                self._sweep = self._sweep_order()
        if self.scan is not None:
            return self._next_in_sweep()
        if ev.kind == EventKind.ARRIVAL:
            if not self._arrival_done:
                self._arrival_done = True
                if v.status(ev.job) == JobStatus.QUEUED:
                    s = self._server_for(ev.job)
                    if s >= 0:
                        return Command.place(ev.job, s)
            return Command.wait()
        if ev.kind == EventKind.COMPLETION:
            job = self._job_for(ev.server)
            return Command.wait() if job < 0 else Command.place(job, ev.server)
        return self._next_in_sweep()  # start or wake-up: place all that fits, oldest first

    def _next_in_sweep(self) -> Command:
        v = self.view
        while self._pos < len(self._sweep):
            job = self._sweep[self._pos]
            self._pos += 1
            if v.status(job) == JobStatus.QUEUED:
                s = self._server_for(job)
                if s >= 0:
                    return Command.place(job, s)
        return Command.wait()

    def compiled_policy(self) -> CompiledPolicy | None:
        """With a scan window and First-Fit or Best-Fit, the compiled loop
        (:func:`clustergym.core.fastpath.run_scan_episode`) makes this agent's decisions, bit for bit;
        the runner runs it where it gives identical results (the env's default reward, every epoch
        shown, numba installed).  ``None`` without a window, for Random-Fit, and for a subclass that
        decides otherwise (the compiled loop has this class's rules only)."""
        cls = type(self)
        if any(getattr(cls, m) is not getattr(GreedyAgent, m) for m in ("act", "_next_in_sweep", "_server_for")):
            return None
        if self.scan is None or self.server_rule not in ("first-fit", "best-fit"):
            return None
        return CompiledPolicy(self.server_rule, self.scan)

    def _sweep_order(self) -> list[int]:
        v = self.view
        if v.queueing == "local":
            ids = [j for s in range(v.num_servers) for t in range(v.num_types) for j in v.local_queue(s, t)]
            return sorted(ids)
        return list(v.queue())

    def _server_for(self, job: int) -> int:
        v = self.view
        if v.queueing == "local":
            own = v.server_of(job)
            return own if own >= 0 and v.fits_at(job, own) else -1
        return v.select_server(self.server_rule, job, self.rng)  # = select_server(rule, v.fits(job), ...)

    def _job_for(self, server: int) -> int:
        """The queued job to start on ``server`` by the job rule, or -1 if none fits."""
        v = self.view
        cap = v.capacity[server]
        cap = np.where(cap > 0, cap, 1.0)
        if v.queueing == "local":
            cands = [q[0] for t in range(v.num_types) if (q := v.local_queue(server, t))]
        elif v.types.exact:
            cands = [h for t in range(v.num_types) if (h := v.head_of_type(t)) >= 0]
        else:
            cands = list(v.queue())
        if not cands:
            return -1
        ids = np.fromiter(cands, dtype=np.int64, count=len(cands))
        ok = v.fits_on(ids, server)
        fit_ids = ids[ok]
        if fit_ids.size == 0:
            return -1
        if self.select_job == "fifo":
            return int(fit_ids.min())
        if self.select_job == "random":
            return int(fit_ids[self.rng.integers(fit_ids.size)])
        size = (v.demands(fit_ids) / cap).sum(axis=1)
        return int(fit_ids[best_mask(size)].min())  # the oldest among the largest (ties up to SCORE_RTOL)


class FirstFit(GreedyAgent):
    """Work-conserving First-Fit: lowest-index server that fits; FIFO refill (RMS paper §III)."""

    description = "work-conserving First-Fit (lowest-index server; FIFO refill)"
    server_rule = "first-fit"
    default_job_rule = "fifo"


class BestFit(GreedyAgent):
    """Work-conserving Best-Fit: tightest server by normalised occupancy score; largest-job refill."""

    description = "work-conserving Best-Fit (tightest server; largest-job refill)"
    server_rule = "best-fit"
    default_job_rule = "largest"


class RandomFit(GreedyAgent):
    """Work-conserving Random-Fit: uniformly random server that fits; FIFO refill."""

    description = "work-conserving Random-Fit (random server that fits; FIFO refill)"
    server_rule = "random-fit"
    default_job_rule = "fifo"


class FastestEstimatedFit(GreedyAgent):
    """Work-conserving greedy placement on the fitting server *estimated* fastest for the job's type;
    FIFO refill.  Not an oracle, and not in the registry (no paper's; the suite's reference is left as
    it is): a teacher for behaviour cloning, by import path
    (``--warm-start clustergym.baselines.greedy:FastestEstimatedFit``).

    On heterogeneous machines (LoTES's ``mu_jk = omega_jk / u_k``, Sec. 5.4.3) the oracles (``lotes``,
    ``tetris``) read the machines' speeds; this rule reads what the episode's completions so far say of
    them, :meth:`~clustergym.core.view.ClusterView.speed_estimate` (the relative speed a policy sees
    with ``pair_features="speed"``), and otherwise decides as ``random-fit``: an arriving job starts at
    once where it fits, a freed server takes the oldest waiting job that fits (the ``scan`` window, if
    any, as every :class:`GreedyAgent`'s).  Ties (every speed 1 before the first completions) go to the
    lowest index.
    """

    description = "work-conserving placement on the fitting server estimated fastest for the job's type"
    server_rule = "first-fit"
    default_job_rule = "fifo"

    def speeds(self) -> np.ndarray:
        """``(L, J)`` the speeds the rule ranks the servers by: the estimate (a subclass may read others)."""
        return self.view.speed_estimate()

    def _server_for(self, job: int) -> int:
        v = self.view
        fits = np.flatnonzero(v.fits(job))
        if fits.size == 0:
            return -1
        speed = self.speeds()[fits, v.job_type(job)]
        return int(fits[best_mask(speed)][0])  # the fastest (ties up to SCORE_RTOL), lowest index


class _AdmitAgent(Agent):
    server_rule: ClassVar[str] = "best-fit"
    epoch_local = True
    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=False, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.ADMIT, Cmd.REJECT}),
        queueing=("loss",),
    )

    def act(self, observation: Any) -> Command:
        v = self.view
        job = v.pending
        if job < 0:
            return Command.wait()
        s = v.select_server(self.server_rule, job, self.rng)  # = select_server(rule, v.fits(job), ...)
        return Command.admit(s) if s >= 0 else Command.reject()


class BestFitAdmit(_AdmitAgent):
    """Loss systems: admit every arrival that fits, to the Best-Fit server; reject the rest."""

    description = "admit-all Best-Fit for loss systems (reject only what fits nowhere)"
    server_rule = "best-fit"


class FirstFitAdmit(_AdmitAgent):
    """Loss systems: admit every arrival that fits, to the First-Fit server; reject the rest."""

    description = "admit-all First-Fit for loss systems (reject only what fits nowhere)"
    server_rule = "first-fit"
