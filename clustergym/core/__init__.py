"""The simulation kernel: jobs, servers, events, commands, metrics."""

from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.jobs import JobStatus
from clustergym.core.simulator import EpochConfig, Event, ImpossibleJobError, Simulator
from clustergym.core.view import ClusterView

__all__ = [
    "Cmd",
    "Command",
    "EventKind",
    "JobStatus",
    "EpochConfig",
    "Event",
    "ImpossibleJobError",
    "Simulator",
    "ClusterView",
]
