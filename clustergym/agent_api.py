"""The agent protocol and the registry of agents by name (``clustergym list`` prints it).

Every agent, learned or published, is driven the same way::

    env = make_env_for(scenario, agent)      # the scenario plus the agent's decision epochs
    obs, info = env.reset(seed=seed)
    agent.reset(agent_context(env, seed), seed=seed)   # what it may read, not the env
    while True:
        action, _ = agent.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break

(:func:`clustergym.run_episode` does exactly this.)  An agent is handed an :class:`AgentContext`,
never the environment: the read-only :class:`~clustergym.core.view.ClusterView` of the kernel, the
scenario, the objective, its own seeded generator (:meth:`AgentContext.generator`), and the spaces
and action mask a masked policy samples from.  ``predict`` has Stable-Baselines3's signature, so a
trained SB3 model and a baseline are interchangeable: an object with ``predict`` only (an SB3 model)
needs no ``reset`` and is fed observations alone.  Rule-based agents read the full state through the
view and return :class:`~clustergym.core.commands.Command` objects, one per call, ending each epoch
with ``WAIT``.  An agent whose decisions the kernel's compiled loop reproduces says so with
:meth:`Agent.compiled_policy`; the runner decides whether that path may run (it gives identical
results only under the environment's default reward).

A minimal agent::

    class Oldest(Agent):
        # start the oldest queued job that fits on the first server where it fits

        def act(self, observation):
            for job in self.view.queue():
                server = self.view.select_server("first-fit", job)
                if server >= 0:
                    return Command.place(job, server)
            return Command.wait()
"""

from __future__ import annotations

import importlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from clustergym.core.commands import Cmd
from clustergym.core.simulator import EpochConfig
from clustergym.core.view import ClusterView
from clustergym.envs.context import AgentContext, agent_context
from clustergym.errors import ConfigError

__all__ = [
    "Agent",
    "AgentContext",
    "AgentRequirements",
    "CompiledPolicy",
    "agent_context",
    "register_agent",
    "agent_factory",
    "make_agent",
    "PolicyAgent",
    "list_agents",
    "AGENTS",
    "MODEL_LOADERS",
    "register_model_loader",
    "make_env_for",
    "requirements_of",
]


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

    epochs: EpochConfig = field(
        default_factory=lambda: EpochConfig(arrivals=True, completions=True, dummy_completions=False)
    )
    action_mode: str | None = None
    commands: frozenset[Cmd] = frozenset({Cmd.WAIT, Cmd.PLACE})
    queueing: tuple[str, ...] = ("central",)
    needs_types: bool = False
    uses_oracle: bool = False
    skip_trivial: bool = False
    observes: bool = False
    env_kwargs: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class CompiledPolicy:
    """A whole-episode policy the kernel's compiled loop reproduces (:mod:`clustergym.core.fastpath`).

    Attributes:
        server_rule: the greedy server rule, ``"first-fit"`` or ``"best-fit"``.
        scan: the scan window, the first ``scan`` queued jobs (a positive integer).
    """

    server_rule: str
    scan: int


class Agent(ABC):
    """Base class of rule-based agents.

    Subclasses set ``name``, ``description`` and ``requirements`` and implement
    :meth:`act`, which returns the next command for the current state.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: what it needs from the environment (a class constant, or per instance for parametrised agents)
    requirements: AgentRequirements = AgentRequirements()
    #: its decisions at an epoch depend on the state at that epoch only (no record kept across epochs,
    #: such as a mirror of the queue or counters of arrivals), so it may be driven at some epochs and
    #: not others: the rules a learned policy chooses among (:mod:`clustergym.learned.rule_select`)
    epoch_local: ClassVar[bool] = False
    #: the episode's context and its view, set by :meth:`reset` (an agent reads nothing else)
    context: AgentContext
    view: ClusterView

    def __init__(self, **params: Any):
        if params:
            raise ConfigError(
                f"agent.{next(iter(params))}", f"agent {self.name!r} takes no parameter {next(iter(params))!r}"
            )
        self.rng = np.random.default_rng(0)

    def requirements_for(self, scenario: Any) -> AgentRequirements:
        """The requirements on a given scenario (most agents: the class constant)."""
        return self.requirements

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        """Start an episode with what the agent may read (:class:`AgentContext`).

        ``seed`` (default: the context's) seeds the agent's own generator, ``self.rng``
        (:meth:`AgentContext.generator`, independent of the env's streams).  For scripts, an
        environment may be passed instead of a context: it is replaced by
        :func:`agent_context` of it at once, and the agent keeps only the context.
        """
        if not isinstance(context, AgentContext):  # an environment, from a script
            context = agent_context(context, seed)
        elif seed is not None:
            context = context.with_seed(seed)
        self.context = context
        self.view = context.view
        self.rng = context.generator()

    def compiled_policy(self) -> CompiledPolicy | None:
        """The compiled whole-episode policy that makes the same decisions as this agent, or ``None``
        (most agents).  The runner, not the agent, decides whether it may run
        (:func:`clustergym.runner.episode.run_compiled`)."""
        return None

    def predict(
        self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = True
    ) -> tuple[Any, None]:
        """SB3-style call: ``(action, state)``; rule-based agents return a ``Command``."""
        return self.act(observation), None

    @abstractmethod
    def act(self, observation: Any) -> Any:
        """The next command at the current epoch (``Command.wait()`` to advance time)."""


#: name -> factory: a class or callable returning an agent, or its import path ``"module:attr"``
#: (resolved on first use; see :mod:`clustergym.baselines`, where every built-in agent is registered)
AGENTS: dict[str, Callable[..., Any] | str] = {}


#: file suffix -> loader ``(path, **params) -> agent`` of saved models, or its import path; the package
#: registers ``.zip`` (models saved by ``clustergym train``, :mod:`clustergym.learned.model_agent`)
MODEL_LOADERS: dict[str, Callable[..., Any] | str] = {}


def register_model_loader(suffix: str, loader: Callable[..., Any] | str) -> None:
    """Let :func:`make_agent` load saved models whose path ends with ``suffix``."""
    MODEL_LOADERS[suffix] = loader


def register_agent(name: str, entry_point: Callable[..., Any] | str | None = None) -> Any:
    """Register an agent factory under a kebab-case name.

    ``register_agent("my-agent", MyAgent)`` or ``register_agent("my-agent", "pkg.mod:MyAgent")`` (imported
    on first use), or as a class decorator, ``@register_agent("my-agent")``.  A class without a ``name``
    of its own gets the registered name.
    """

    def deco(factory: Any) -> Any:
        if name in AGENTS and AGENTS[name] is not factory and AGENTS[name] != factory:
            raise ValueError(f"agent name {name!r} is already registered")
        AGENTS[name] = factory
        if isinstance(factory, type):
            _name_class(factory, name)
        return factory

    return deco if entry_point is None else deco(entry_point)


def _name_class(cls: type, name: str) -> None:
    if "name" not in cls.__dict__ or not cls.__dict__["name"]:
        cls.name = name  # type: ignore[attr-defined]


def agent_factory(name: str) -> Callable[..., Any]:
    """The factory registered under ``name`` (importing it if registered by path)."""
    factory = AGENTS[name]
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
        if isinstance(factory, type):
            _name_class(factory, name)
        AGENTS[name] = factory
    return factory


def list_agents() -> dict[str, str]:
    """Registered agent names with their one-line descriptions (imports every agent's module)."""
    out = {}
    for name in sorted(AGENTS):
        f = agent_factory(name)
        out[name] = getattr(f, "description", "") or (f.__doc__ or "").strip().split("\n")[0]
    return out


#: ``package.module:attribute``: an agent class or factory by import path
_IMPORT_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def make_agent(name: str, **params: Any) -> Any:
    """An agent by registered name, by path to a saved model (``.zip``), by a model's folder (the run
    folder of a training run, or a folder in rl-baselines3-zoo's layout), or by the import path of a
    class or factory (``mypkg.policies:make_agent``, called with ``params``; the module must be
    importable, e.g. on ``PYTHONPATH``).  An object without ``reset`` (a policy with SB3's
    ``predict`` only, such as an SB3 model) is driven as it is (:class:`PolicyAgent`)."""
    if name in AGENTS:
        return agent_factory(name)(**params)
    if os.path.isdir(name):
        models = [os.path.join(name, f"model{suffix}") for suffix in MODEL_LOADERS]
        found = [m for m in models if os.path.isfile(m)]
        if not found and os.path.isfile(os.path.join(name, "config.yml")):
            return _model_loader(".zip")(name, **params)  # a zoo folder: the loader finds its one .zip
        if not found:
            raise ConfigError(
                "agent",
                f"{name!r} is a folder without a saved model ({', '.join(map(os.path.basename, models))}); "
                "pass a registered agent name, a model file or the run folder of a finished "
                "`clustergym train`",
            )
        name = found[0]
    for suffix in MODEL_LOADERS:
        if name.endswith(suffix):
            return _model_loader(suffix)(name, **params)
    if _IMPORT_PATH.fullmatch(name) and not os.path.exists(name):
        return _imported_agent(name, params)
    raise ConfigError(
        "agent",
        f"unknown agent {name!r}; registered agents: {', '.join(sorted(AGENTS))} (or a model .zip, a model "
        "folder, or a class or factory by import path, package.module:name)",
    )


def _model_loader(suffix: str) -> Callable[..., Any]:
    loader = MODEL_LOADERS[suffix]
    if isinstance(loader, str):
        module, _, attr = loader.partition(":")
        loader = MODEL_LOADERS[suffix] = getattr(importlib.import_module(module), attr)
    return loader


def _imported_agent(path: str, params: dict[str, Any]) -> Any:
    """The agent a class or factory named by import path makes (the user's own code: imported, called)."""
    module, _, attr = path.partition(":")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as e:
        raise ConfigError("agent", f"{path}: no module {e.name!r} (is its folder on PYTHONPATH?)") from None
    except AttributeError:
        raise ConfigError("agent", f"{path}: module {module!r} has no attribute {attr!r}") from None
    if not callable(factory):
        raise ConfigError("agent", f"{path}: {attr!r} is not a class or a function")
    try:
        agent = factory(**params)
    except TypeError as e:
        raise ConfigError("agent", f"{path}: calling it with {params or 'no arguments'} failed ({e})") from None
    if not callable(getattr(agent, "predict", None)):
        raise ConfigError("agent", f"{path}: made {type(agent).__name__}, which has no predict(observation)")
    return agent if callable(getattr(agent, "reset", None)) else PolicyAgent(agent, name=path)


class PolicyAgent:
    """A policy that only maps observations to actions (SB3's ``predict``), driven as an agent: it
    reads the observation of the environment it runs on -- flattened (``gymnasium.spaces.flatten``)
    when the policy declares a ``Box`` ``observation_space`` and the environment's is a ``Dict``, as
    an SB3 model trained on ``FlattenObservation`` does -- and keeps no state across steps."""

    requirements = AgentRequirements(skip_trivial=True, observes=True, queueing=("central", "loss"))

    def __init__(self, policy: Any, name: str = "policy"):
        self.policy = policy
        self.name = name
        self._flatten: Any = None

    def reset(self, context: Any, seed: int | None = None) -> None:
        """Note whether the policy reads the flattened observation (nothing else to bind)."""
        from gymnasium.spaces import Box, Dict

        wants = getattr(self.policy, "observation_space", None)
        has = context.observation_space
        self._flatten = has if isinstance(wants, Box) and isinstance(has, Dict) else None

    def predict(
        self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = True
    ) -> tuple[Any, Any]:
        if self._flatten is not None:
            from gymnasium.spaces import flatten

            observation = flatten(self._flatten, observation)
        action, state = self.policy.predict(observation, state, episode_start, deterministic)
        return (action.item() if isinstance(action, np.ndarray) and action.size == 1 else action), state


def requirements_of(agent: Any, scenario: Any) -> AgentRequirements | None:
    """The agent's requirements on this scenario (``None`` for objects without any, e.g. an SB3 model)."""
    if hasattr(agent, "requirements_for"):
        return agent.requirements_for(scenario)
    return getattr(agent, "requirements", None)


def make_env_for(
    scenario: Any, agent: Any, *, validate: bool = False, env_id: str | None = None, **env_kwargs: Any
) -> Any:
    """The environment for ``agent`` on ``scenario``: the scenario plus the agent's decision epochs, its
    action mode and environment arguments (:class:`AgentRequirements`), built by
    :func:`clustergym.envs.make_env`.  Raises :class:`ConfigError` when the agent cannot run there
    (queueing mode, discrete types).

    With ``env_id`` (a registered Gymnasium id whose entry point takes the environment's keyword
    arguments, e.g. a suite task ``clustergym/<task>-v1``), the environment is ``gymnasium.make(env_id)``
    with the agent's arguments, and ``scenario`` serves only the checks: the id builds its own.
    Its invalid-action policy is the id's.  An agent acting through the action space (``skip_trivial``:
    learned and random agents) decides at the id's decision epochs, as a policy trained on the id
    does, and its steps are bounded by the id's ``max_episode_steps``; an agent that sees every epoch
    (a rule-based agent issuing commands, one step per command at every epoch) adds the epochs it
    needs and runs without the bound.
    """
    from clustergym.envs import make_env

    req = requirements_of(agent, scenario)
    if req is not None:
        if scenario.queueing not in req.queueing:
            raise ConfigError(
                "agent",
                f"agent {getattr(agent, 'name', agent)!r} works with queueing "
                f"{list(req.queueing)}, scenario {scenario.name!r} is {scenario.queueing!r}",
            )
        if req.needs_types and not scenario.source.types.exact:
            raise ConfigError(
                "agent",
                f"agent {agent.name!r} needs discrete job types; scenario {scenario.name!r} has continuous demands",
            )
        env_kwargs.setdefault("epochs", req.epochs)
        env_kwargs.setdefault("skip_trivial", req.skip_trivial)
        env_kwargs.setdefault("observe", req.observes)
        if req.action_mode is not None:
            env_kwargs.setdefault("action_mode", req.action_mode)
        for key, value in req.env_kwargs:
            env_kwargs.setdefault(key, value)
    if env_id is not None:
        import dataclasses

        import gymnasium

        spec = gymnasium.spec(env_id)
        if req is not None and req.skip_trivial:
            env_kwargs.pop("epochs", None)
        elif req is not None and spec.max_episode_steps is not None:
            spec = dataclasses.replace(spec, max_episode_steps=None)
        return gymnasium.make(spec, disable_env_checker=True, validate=validate, **env_kwargs)
    env_kwargs.setdefault("invalid_action", "raise")
    return make_env(scenario, validate=validate, **env_kwargs)
