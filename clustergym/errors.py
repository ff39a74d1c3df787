"""Exceptions raised by clustergym.  Each message names what is wrong."""

from __future__ import annotations

__all__ = ["ClusterGymError", "ScenarioError", "ConfigError", "InvalidCommandError", "TraceFormatError", "ReleasedJobError"]


class ClusterGymError(Exception):
    """Base class of every clustergym error."""


class ScenarioError(ClusterGymError, ValueError):
    """A scenario (preset parameters or a YAML/JSON file) is malformed or impossible.

    The message starts with the dotted path of the offending field, for example
    ``workload.types[2].demand: expected 3 numbers (one per resource), got 2``.
    """

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}" if field else problem)


class ConfigError(ClusterGymError, ValueError):
    """A setting that is not part of a scenario is malformed: an agent and its parameters, a number of
    seeds or workers, a training algorithm or its options, an output folder.

    Like :class:`ScenarioError`, the message starts with the dotted name of the setting when there is
    one (``agent.scan: expected an integer >= 1, got 0``).
    """

    def __init__(self, field: str, problem: str | None = None):
        if problem is None:  # ConfigError("a whole message")
            field, problem = "", field
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}" if field else problem)


class InvalidCommandError(ClusterGymError, ValueError):
    """An agent issued a command that is not valid in the current state."""


class TraceFormatError(ClusterGymError, ValueError):
    """A trace or job table is malformed; the message names the file, line and field."""


class ReleasedJobError(ClusterGymError, KeyError):
    """A job id that is not (or no longer) a row of the job table: with ``job_memory="bounded"``
    the rows of finished jobs are released; the message names the job."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""
