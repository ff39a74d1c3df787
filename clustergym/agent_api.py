"""The agent protocol and the registry of agents by name (DESIGN §4, §6).

Every agent, learned or published, is driven the same way::

    env = make_env(scenario, agent)          # the scenario plus the agent's decision epochs
    obs, info = env.reset(seed=seed)
    agent.reset(env, seed=seed)
    while True:
        action, _ = agent.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break

``predict`` has Stable-Baselines3's signature, so a trained SB3 model and a
baseline are interchangeable.  Rule-based agents read the full state through
the env's read-only :class:`~clustergym.core.view.ClusterView` and return
:class:`~clustergym.core.commands.Command` objects, one per call, ending each
epoch with ``WAIT``.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import numpy as np

from clustergym.core.commands import Cmd
from clustergym.core.simulator import EpochConfig
from clustergym.errors import ScenarioError

__all__ = ["Agent", "AgentRequirements", "register_agent", "make_agent", "list_agents", "AGENTS"]


@dataclass(frozen=True)
class AgentRequirements:
    """What an agent needs from the environment.

    Attributes:
        epochs: decision epochs it needs (merged with the scenario's).
        action_mode: the env action mode it speaks (``None``: the env default;
            rule-based agents pass ``Command`` objects, which every mode accepts).
        commands: the commands it issues.
        queueing: the queueing modes it works with.
        needs_types: it needs a workload with discrete job types.
        uses_oracle: it reads information a learned agent does not get (the
            scenario's rates, job durations in a non-clairvoyant scenario).
        skip_trivial: let the env skip epochs where the action mode allows only
            WAIT (agents acting through the action mask); rule-based agents that
            issue commands by job id see every epoch.
        observes: it reads the observation (learned and masked-random agents);
            ``False`` lets the runner skip building observations.
        env_kwargs: further environment keyword arguments it was built for, as
            ``(name, value)`` pairs (a trained model's ``queue_window``).
    """

    epochs: EpochConfig = field(default_factory=lambda: EpochConfig(arrivals=True, completions=True,
                                                                    dummy_completions=False))
    action_mode: str | None = None
    commands: frozenset[Cmd] = frozenset({Cmd.WAIT, Cmd.PLACE})
    queueing: tuple[str, ...] = ("central",)
    needs_types: bool = False
    uses_oracle: bool = False
    skip_trivial: bool = False
    observes: bool = False
    env_kwargs: tuple[tuple[str, Any], ...] = ()


class Agent(ABC):
    """Base class of rule-based agents.

    Subclasses set ``name``, ``description`` and ``requirements`` and implement
    :meth:`act`, which returns the next command for the current state.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    requirements: ClassVar[AgentRequirements] = AgentRequirements()

    def __init__(self, **params: Any):
        if params:
            raise ScenarioError(f"agent.{next(iter(params))}", f"agent {self.name!r} takes no parameter "
                                                               f"{next(iter(params))!r}")
        self.view: Any = None
        self.rng = np.random.default_rng(0)

    def requirements_for(self, scenario: Any) -> AgentRequirements:
        """The requirements on a given scenario (most agents: the class constant)."""
        return self.requirements

    def reset(self, env: Any, seed: int | None = None) -> None:
        """Bind to an environment at the start of an episode.

        ``seed`` seeds the agent's own generator (independent of the env's streams).
        """
        self.env = env.unwrapped
        self.view = self.env.view
        self.rng = np.random.default_rng(np.random.SeedSequence([0 if seed is None else seed, 0xA9E17]))

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = True) -> tuple[Any, None]:
        """SB3-style call: ``(action, state)``; rule-based agents return a ``Command``."""
        return self.act(observation), None

    @abstractmethod
    def act(self, observation: Any) -> Any:
        """The next command at the current epoch (``Command.wait()`` to advance time)."""


#: name -> factory (a class or a callable returning an Agent)
AGENTS: dict[str, Callable[..., Any]] = {}
#: modules whose import registers the built-in agents
_BUILTIN_MODULES = ("clustergym.baselines",)
_loaded = False


def register_agent(name: str) -> Callable[[Any], Any]:
    """Class decorator: register an agent factory under a kebab-case name."""

    def deco(cls: Any) -> Any:
        if name in AGENTS and AGENTS[name] is not cls:
            raise ValueError(f"agent name {name!r} is already registered")
        AGENTS[name] = cls
        if isinstance(cls, type) and not getattr(cls, "name", ""):
            cls.name = name
        return cls

    return deco


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        for mod in _BUILTIN_MODULES:
            importlib.import_module(mod)
        _loaded = True


def list_agents() -> dict[str, str]:
    """Registered agent names with their one-line descriptions."""
    _load_builtins()
    return {name: (getattr(f, "description", "") or (f.__doc__ or "").strip().split("\n")[0])
            for name, f in sorted(AGENTS.items())}


def make_agent(name: str, **params: Any) -> Any:
    """An agent by registered name, or by path to a saved model (``.zip``)."""
    _load_builtins()
    if name in AGENTS:
        return AGENTS[name](**params)
    if name.endswith(".zip"):
        from clustergym.agents import load_model_agent  # learned agents, issue "Learning"

        return load_model_agent(name, **params)
    raise ScenarioError("agent", f"unknown agent {name!r}; registered agents: {', '.join(sorted(AGENTS))}")
