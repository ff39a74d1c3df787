"""Exceptions raised by clustergym.  Each message names what is wrong."""

from __future__ import annotations

__all__ = [
    "ClusterGymError",
    "ScenarioError",
    "ConfigError",
    "InvalidCommandError",
    "TraceFormatError",
    "ReleasedJobError",
    "MissingExtraError",
    "require_extra",
]


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


class MissingExtraError(ConfigError):
    """A feature needs an optional dependency that is not installed; the message names the extra
    to install (``pip install 'clustergym[train]'``)."""

    def __init__(self, what: str, extra: str, missing: str):
        self.extra = extra
        self.missing = missing
        super().__init__(
            "",
            f"{what} needs the optional dependency {missing!r}, which is not installed; "
            f"install it with `pip install 'clustergym[{extra}]'`",
        )


def require_extra(modules: str | tuple[str, ...], extra: str, what: str) -> None:
    """Raise :class:`MissingExtraError` unless every module of ``modules`` can be imported.

    ``what`` says which feature needs them (``"clustergym train"``), ``extra`` which extra
    brings them.  Only the import is tried: nothing else of the module runs.
    """
    import importlib.util

    for module in (modules,) if isinstance(modules, str) else modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise MissingExtraError(what, extra, module)
