"""The command set of the decision model (README: "The decision model").

At a decision epoch an agent issues commands, one per ``env.step()``, until it
issues ``WAIT``, which advances time to the next epoch.  Learned agents use the
discrete action modes of :mod:`clustergym.envs.actions`, which decode to these
commands; rule-based baselines may pass a :class:`Command` to ``env.step()``
directly (jobs are then named by their id, so any queued or running job can be
addressed).  Both go through the same validation and the same dynamics.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

__all__ = ["Cmd", "Command", "EventKind"]


class Cmd(enum.IntEnum):
    """Command kinds.  See :class:`Command` for the arguments each one uses."""

    WAIT = 0      #: nothing more now; advance to the next epoch
    PLACE = 1     #: start queued ``job`` on ``server`` (it must fit)
    DUMMY = 2     #: start a dummy job of ``type`` on ``server`` (RMS)
    RESERVE = 3   #: create an empty reservation slot of ``type`` on ``server`` (DRA)
    RELEASE = 4   #: drop an empty reservation slot of ``type`` on ``server``
    ADMIT = 5     #: loss mode: start the arriving job on ``server``
    REJECT = 6    #: drop ``job`` (loss mode: the arriving job when ``job`` is -1)
    MIGRATE = 7   #: move running ``job`` to ``server``; it keeps its remaining time
    PREEMPT = 8   #: end running ``job``; it is lost (status PREEMPTED)
    REPLACE = 9   #: start queued ``job`` on ``server`` in place of a dummy of its type (RMS Remark 2)
    ROUTE = 10    #: per-server queues: move an unrouted ``job`` to ``server``'s local queue
    WAKE = 11     #: ask for a decision epoch at absolute ``time`` (> now)


class EventKind(enum.IntEnum):
    """Kinds of events; their value is also their order at equal times."""

    COMPLETION = 0
    ARRIVAL = 1
    TICK = 2
    WAKEUP = 3
    HORIZON = 4
    START = 5  #: the first epoch of an episode, at time 0 before any event


@dataclass(frozen=True, slots=True)
class Command:
    """One command.  Unused fields keep their defaults (-1 / NaN).

    Prefer the constructors: ``Command.place(job, server)``, ``Command.wait()``, ...
    """

    kind: Cmd
    job: int = -1
    server: int = -1
    type: int = -1
    time: float = math.nan

    # Constructors -----------------------------------------------------------------
    @staticmethod
    def wait() -> Command:
        return _WAIT

    @staticmethod
    def place(job: int, server: int) -> Command:
        return Command(Cmd.PLACE, job=int(job), server=int(server))

    @staticmethod
    def dummy(job_type: int, server: int) -> Command:
        return Command(Cmd.DUMMY, type=int(job_type), server=int(server))

    @staticmethod
    def reserve(job_type: int, server: int) -> Command:
        return Command(Cmd.RESERVE, type=int(job_type), server=int(server))

    @staticmethod
    def release(job_type: int, server: int) -> Command:
        return Command(Cmd.RELEASE, type=int(job_type), server=int(server))

    @staticmethod
    def admit(server: int) -> Command:
        return Command(Cmd.ADMIT, server=int(server))

    @staticmethod
    def reject(job: int = -1) -> Command:
        return Command(Cmd.REJECT, job=int(job))

    @staticmethod
    def migrate(job: int, server: int) -> Command:
        return Command(Cmd.MIGRATE, job=int(job), server=int(server))

    @staticmethod
    def preempt(job: int) -> Command:
        return Command(Cmd.PREEMPT, job=int(job))

    @staticmethod
    def replace(job: int, server: int) -> Command:
        return Command(Cmd.REPLACE, job=int(job), server=int(server))

    @staticmethod
    def route(job: int, server: int) -> Command:
        return Command(Cmd.ROUTE, job=int(job), server=int(server))

    @staticmethod
    def wake(time: float) -> Command:
        return Command(Cmd.WAKE, time=float(time))

    def __str__(self) -> str:
        args = []
        if self.job >= 0:
            args.append(f"job={self.job}")
        if self.type >= 0:
            args.append(f"type={self.type}")
        if self.server >= 0:
            args.append(f"server={self.server}")
        if not math.isnan(self.time):
            args.append(f"time={self.time:g}")
        return f"{self.kind.name}({', '.join(args)})"


_WAIT = Command(Cmd.WAIT)
