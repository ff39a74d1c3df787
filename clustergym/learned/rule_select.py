"""The ``rule`` action mode: a learned policy chooses which rule-based agent acts at each decision epoch.

The policy learns *when to use which heuristic*.  The rules are injected into the ``rule`` action
mode of :mod:`clustergym.envs.actions` (:class:`RuleDriver` is its :class:`~clustergym.envs.actions.RuleSet`):
a :class:`~clustergym.envs.ClusterEnv` or a suite task's env (any wrapper chain) built with
``action_mode="rule"``, ``rules=RuleDriver(...)``, every epoch its rules need and
``skip_trivial=False``, wrapped in :class:`RuleSelectEnv`; its action space is ``Discrete(N)`` over
the ``N`` rules.  ``step(i)`` drives rule ``i`` for one decision epoch: the rule's commands, one inner
step each, until its WAIT (which ends the epoch) or the end of the episode; the step's reward is the
sum of the inner rewards.  Epochs at which every rule would WAIT are not shown to the policy (there
is nothing to choose): the env advances through them, as every rule would, and their rewards join
the step's.  Every rule is asked for its first command at every epoch (:class:`RuleDriver`), so
each rule sees every epoch, whichever is chosen, and choosing rule ``i`` at every epoch replays
rule ``i``'s own episode exactly.

Observation: the inner env's ``Dict``, whose ``action_mask`` in the rule mode has shape ``(N,)``, all
ones (every rule may act at every epoch shown).  ``info`` is the last inner step's, with ``info["rule"]`` (the
chosen rule) and ``info["commands"]`` (the inner steps it took).

Which rules are accepted: registered agents whose class sets ``epoch_local``
(:class:`~clustergym.agent_api.Agent`): their decisions at an epoch read the state at that epoch
only.  That is the greedy family (``first-fit``, ``best-fit``, ``random-fit``, with a ``scan``
window or not, and ``best-fit-admit``, ``first-fit-admit``).  The papers' algorithms are refused:
they keep records across epochs (MaxWeight its configuration, RMS and VQS virtual queues and
counters, BF-J/S and Tetris mirrors of the servers and the queue, DRA and LoTES their plans) that
would go stale, or be wrong, after epochs at which another rule acted.  ``random`` is refused too
(it acts through the action mask, not by commands).  Rules that read oracle information (the
scenario's rates, hidden durations; ``uses_oracle``) are refused unless ``allow_oracle=True``, as
the learned agent would read them through its rules; such a model is flagged ``uses_oracle``.

Note on mixing: the greedy rules without a ``scan`` window act on the event's job or server only,
trusting that no queued job fitted anywhere after the previous epoch; that holds when every rule
of the set is work-conserving in that sense (the greedy rules are, a ``scan`` window is not: it
may leave a job beyond the window queued).

A rule is given as its registered name, optionally with scalar parameters after colons:
``best-fit:scan=8``, ``random-fit:select_job=random``.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from clustergym.agent_api import (
    AGENTS,
    AgentContext,
    AgentRequirements,
    agent_context,
    agent_factory,
    make_agent,
    requirements_of,
)
from clustergym.core.commands import Cmd, Command
from clustergym.core.simulator import EpochConfig
from clustergym.envs.actions import RuleMode
from clustergym.errors import ClusterGymError, ConfigError

__all__ = [
    "RuleDriver",
    "RuleSelectEnv",
    "check_rules",
    "default_rules",
    "make_rule",
    "make_rule_select_env",
    "parse_rules",
    "rule_observation_space",
    "rules_requirements",
]


def parse_rules(rules: str | Sequence[str], field: str = "rules") -> list[str]:
    """Rule specs from a comma-separated string or a sequence of strings (whitespace stripped).

    Raises:
        ConfigError: not a string nor a sequence of strings, fewer than 2 rules, or a rule twice.
    """
    if isinstance(rules, str):
        items = [r.strip() for r in rules.split(",")]
    elif isinstance(rules, Sequence) and all(isinstance(r, str) for r in rules):
        items = [r.strip() for r in rules]
    else:
        raise ConfigError(field, f"expected rule names, comma-separated or a list, got {rules!r}")
    items = [r for r in items if r]
    if len(items) < 2:
        raise ConfigError(field, f"the rule mode chooses among 2 or more rules, got {items}")
    seen = set()
    for r in items:
        if r in seen:
            raise ConfigError(field, f"rule {r!r} is given twice")
        seen.add(r)
    return items


def _scalar(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def make_rule(spec: str, field: str = "rules") -> Any:
    """The agent of a rule spec, ``name`` or ``name:key=value[:key=value...]`` (scalar values).

    Raises:
        ConfigError: an unknown name, a malformed parameter, or an agent that is not a rule the
            mode accepts (module docstring), naming the rule.
    """
    name, *pairs = spec.split(":")
    if name not in AGENTS:
        raise ConfigError(field, f"unknown rule {name!r}; registered agents: {', '.join(sorted(AGENTS))}")
    params = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise ConfigError(field, f"rule {spec!r}: parameters are name:key=value, got {pair!r}")
        params[key.strip()] = _scalar(value.strip())
    factory = agent_factory(name)
    if not getattr(factory, "epoch_local", False):
        raise ConfigError(
            field,
            f"rule {name!r} keeps records across decision epochs that would go stale at epochs "
            "where another rule acts; the rule mode chooses among epoch-local rules "
            f"({', '.join(epoch_local_rules())})",
        )
    try:
        return make_agent(name, **params)
    except ConfigError as e:
        raise ConfigError(field, f"rule {spec!r}: {e}") from None


def epoch_local_rules() -> list[str]:
    """The registered agents the rule mode accepts (``epoch_local``; imports every agent's module)."""
    return [n for n in sorted(AGENTS) if getattr(agent_factory(n), "epoch_local", False)]


def check_rules(specs: Sequence[str], scenario: Any, *, allow_oracle: bool = False, field: str = "rules") -> list[Any]:
    """The rules' agents, checked against ``scenario`` (a :class:`~clustergym.scenarios.Scenario`).

    Raises:
        ConfigError: naming the rule: unknown, not epoch-local, an oracle (unless
            ``allow_oracle``), acting through the action space rather than by commands, or
            unfit for the scenario (queueing mode, discrete types).
    """
    agents = []
    for spec in specs:
        agent = make_rule(spec, field)
        req = requirements_of(agent, scenario)
        assert req is not None
        if req.uses_oracle and not allow_oracle:
            raise ConfigError(
                field,
                f"rule {spec!r} reads oracle information (uses_oracle); a learned agent must not, "
                "through its rules either (allow_oracle=True records it as an oracle)",
            )
        if req.observes or req.skip_trivial or req.action_mode is not None:
            raise ConfigError(field, f"rule {spec!r} acts through the action space, not by commands")
        if scenario.queueing not in req.queueing:
            raise ConfigError(
                field,
                f"rule {spec!r} works with queueing {list(req.queueing)}, scenario "
                f"{scenario.name!r} is {scenario.queueing!r}",
            )
        if req.needs_types and not scenario.source.types.exact:
            raise ConfigError(
                field, f"rule {spec!r} needs discrete job types; scenario {scenario.name!r} has continuous demands"
            )
        agents.append(agent)
    return agents


def rules_requirements(agents: Sequence[Any], scenario: Any) -> AgentRequirements:
    """What the rules need together: the union of their epochs and commands, the queueing modes all
    accept, ``uses_oracle`` if any is an oracle; ``skip_trivial=False`` (every rule sees every
    epoch) and ``observes=True`` (the policy reads the observation)."""
    reqs = [requirements_of(a, scenario) for a in agents]
    epochs = EpochConfig(arrivals=False, completions=False, dummy_completions=False)
    for r in reqs:
        assert r is not None
        epochs = epochs.merged(r.epochs)
    queueing = tuple(q for q in ("central", "loss", "local") if all(q in r.queueing for r in reqs if r))
    return AgentRequirements(
        epochs=epochs,
        commands=frozenset().union(*(r.commands for r in reqs if r)),
        queueing=queueing,
        needs_types=any(r.needs_types for r in reqs if r),
        uses_oracle=any(r.uses_oracle for r in reqs if r),
        skip_trivial=False,
        observes=True,
    )


def default_rules(task_or_scenario: Any) -> list[str]:
    """The registered epoch-local, non-oracle rules that run on a suite task or a scenario (a
    :class:`~clustergym.suite.Task`, a preset name, a scenario file or a :class:`Scenario`): each is built, checked
    and reset on the scenario's env, as ``clustergym list`` checks agents."""
    from clustergym.envs import make_env

    scenario = _scenario_of(task_or_scenario)
    out = []
    for name in epoch_local_rules():
        try:
            (agent,) = check_rules([name], scenario)
            req = requirements_of(agent, scenario)
            assert req is not None
            env = make_env(scenario, epochs=req.epochs, skip_trivial=False, observe=False)
            env.reset(seed=0)
            agent.reset(agent_context(env, 0), seed=0)
        except ClusterGymError:
            continue
        out.append(name)
    return out


def _scenario_of(task_or_scenario: Any) -> Any:
    from clustergym.scenarios import Scenario, resolve_scenario

    if isinstance(task_or_scenario, Scenario):
        return task_or_scenario
    task = _task_of(task_or_scenario)
    return task.scenario() if task is not None else resolve_scenario(task_or_scenario)


def _task_of(x: Any) -> Any:
    """``x`` if it is a suite :class:`~clustergym.suite.Task` (by its attributes: the suite is a
    layer above), else ``None``."""
    return x if all(hasattr(x, a) for a in ("id", "env_kwargs", "max_episode_steps", "scenario")) else None


def rule_observation_space(space: spaces.Dict, n_rules: int) -> spaces.Dict:
    """``space`` with ``action_mask`` of shape ``(n_rules,)`` (keys in the same order)."""
    return spaces.Dict(
        OrderedDict(
            (k, spaces.Box(0, 1, (n_rules,), np.int8) if k == "action_mask" else v) for k, v in space.spaces.items()
        )
    )


def rule_observation(obs: dict[str, np.ndarray], n_rules: int) -> dict[str, np.ndarray]:
    """``obs`` with the rule mask (all ones, ``(n_rules,)`` int8) as ``action_mask``."""
    out = OrderedDict(obs)
    out["action_mask"] = np.ones(n_rules, dtype=np.int8)
    return out


class RuleDriver:
    """The rules of a rule-mode agent or env, asked for their first command at every epoch: the
    :class:`~clustergym.envs.actions.RuleSet` injected into the ``rule`` action mode.

    Args:
        agents: the rules' agents (:func:`check_rules`).
        names: their specs.
    """

    def __init__(self, agents: Sequence[Any], names: Sequence[str]):
        self.agents = list(agents)
        self.names = list(names)
        self._view: Any = None
        self._epoch = -1
        self._first: list[Command] = []

    def reset(self, context: AgentContext, seed: int | None) -> None:
        """Reset every rule with the context and the episode's seed (each rule seeds its own generator)."""
        for a in self.agents:
            a.reset(context, seed=seed)
        self._view, self._epoch, self._first = context.view, -1, []

    def probe(self, obs: Any = None) -> list[Command]:
        """Every rule's first command at the current epoch (each rule is called once, as it would be
        if it drove the epoch; the chosen rule's command is then executed)."""
        out = []
        for name, a in zip(self.names, self.agents):
            cmd, _ = a.predict(obs)
            if not isinstance(cmd, Command):
                raise ConfigError("rules", f"rule {name!r} returned {cmd!r}, not a Command")
            out.append(cmd)
        return out

    def first_commands(self) -> list[Command]:
        """:meth:`probe` once per epoch: the answers are kept until the epoch ends."""
        assert self._view is not None, "reset(context) first"
        if self._view.epoch != self._epoch:
            self._epoch = self._view.epoch
            self._first = self.probe()
        return self._first

    def next_command(self, i: int) -> Command:
        """Rule ``i``'s next command at the current epoch."""
        cmd, _ = self.agents[i].predict(None)
        return cmd

    @staticmethod
    def all_wait(first: Sequence[Command]) -> bool:
        return all(c.kind == Cmd.WAIT for c in first)


class RuleSelectEnv(gym.Wrapper):
    """Choose a rule per decision epoch (module docstring).

    Args:
        env: the inner env in the ``rule`` action mode, its rules injected (a :class:`RuleDriver`),
            built with the rules' epochs, ``skip_trivial=False`` and observing:
            :func:`make_rule_select_env` builds it.
        requirements: what the rules need together (:func:`rules_requirements`).
    """

    def __init__(self, env: gym.Env, requirements: AgentRequirements):
        super().__init__(env)
        inner: Any = env.unwrapped
        mode = inner.mode
        if not isinstance(mode, RuleMode) or not isinstance(mode.rules, RuleDriver):
            raise ConfigError("action_mode", "RuleSelectEnv wraps an env in the rule action mode with a RuleDriver")
        if inner.skip_trivial or not inner.observe:
            raise ConfigError(
                "rules",
                "the rule mode needs an inner env with skip_trivial=False and observe=True (every rule sees every epoch)",
            )
        self.driver: RuleDriver = mode.rules
        self.rules = list(self.driver.names)
        self.requirements = requirements
        self.uses_oracle = requirements.uses_oracle
        self.action_space = spaces.Discrete(len(self.rules))
        self._end: tuple[Any, float, bool, bool, dict] | None = None
        self._carry = 0.0

    def action_masks(self) -> np.ndarray:
        """``(N,)`` bool, all True (MaskablePPO calls this)."""
        return np.ones(len(self.rules), dtype=bool)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)  # the env resets the rules (the rule mode)
        self._end = None
        obs, carry, term, trunc, step_info = self._to_decision(obs)
        self._carry = carry
        if term or trunc:  # the episode ended before any choice: the first step reports it
            self._end = (obs, carry, term, trunc, step_info)
        return obs, info

    def step(self, action: Any):
        if self._end is not None:
            obs, reward, term, trunc, info = self._end
            self._end = None
            return obs, float(reward), term, trunc, {**info, "rule": None, "commands": 0}
        i = int(action)
        if not 0 <= i < len(self.rules) or isinstance(action, (bool, np.bool_)):
            raise ConfigError("action", f"{action!r} is not a rule index in [0, {len(self.rules)})")
        rule = self.driver.agents[i]
        cmd: Any = self.driver.first_commands()[i]
        step_action: Any = i  # the rule mode executes rule i's first command; its next ones are given as commands
        reward, self._carry = self._carry, 0.0
        n = 0
        while True:
            obs, r, term, trunc, info = self.env.step(step_action)
            reward += float(r)
            n += 1
            if term or trunc or cmd.kind == Cmd.WAIT:
                break
            cmd, _ = rule.predict(obs)
            step_action = cmd
        if not (term or trunc):
            obs, more, term, trunc, later = self._to_decision(obs)
            reward += more
            if later:
                info = later
        info["rule"] = self.rules[i]
        info["commands"] = n
        return obs, float(reward), term, trunc, info

    def _to_decision(self, obs: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Advance through epochs at which every rule WAITs (each rule asked once per epoch)."""
        reward, term, trunc = 0.0, False, False
        info: dict[str, Any] = {}
        if not RuleDriver.all_wait(self.driver.first_commands()):
            return obs, reward, term, trunc, info
        while True:
            obs, r, term, trunc, info = self.env.step(Command.wait())
            reward += float(r)
            if term or trunc or not RuleDriver.all_wait(self.driver.first_commands()):
                return obs, reward, term, trunc, info


def make_rule_select_env(
    scenario: Any,
    rules: str | Sequence[str] | None = None,
    *,
    allow_oracle: bool = False,
    max_episode_steps: int | None = None,
    **env_kwargs: Any,
) -> RuleSelectEnv:
    """A :class:`RuleSelectEnv` on a suite task (a :class:`~clustergym.suite.Task`: ``gymnasium.make``
    of its id, with its own action mode and settings, without its step bound)
    or a scenario (:func:`clustergym.envs.make_env`; ``env_kwargs`` may hold preset parameters).

    Args:
        scenario: the task or scenario.
        rules: rule specs (default: :func:`default_rules` of the scenario).
        allow_oracle: accept oracle rules.
        max_episode_steps: a ``TimeLimit`` on the policy's decisions (``None``: none).
        **env_kwargs: environment arguments (``action_mode`` and ``rules`` are set here: the rule
            mode with the checked rules injected).
    """
    from clustergym.envs import make_env
    from clustergym.envs.factory import ENV_KWARGS
    from clustergym.scenarios import resolve_scenario

    env_kwargs = {k: v for k, v in env_kwargs.items() if k not in ("action_mode", "rules")}
    task = _task_of(scenario)
    if task is not None:
        sc = task.scenario()
    else:
        params = {k: env_kwargs.pop(k) for k in list(env_kwargs) if k not in ENV_KWARGS}
        sc = resolve_scenario(scenario, **params)
        sc = sc.with_horizon(env_kwargs.pop("horizon", None))
    specs = parse_rules(rules) if rules is not None else default_rules(sc)
    if rules is None and len(specs) < 2:
        raise ConfigError("rules", f"fewer than 2 rules run on {sc.name!r} ({specs}); name the rules")
    agents = check_rules(specs, sc, allow_oracle=allow_oracle)
    req = rules_requirements(agents, sc)
    env_kwargs.update(
        epochs=req.epochs, skip_trivial=False, observe=True, action_mode="rule", rules=RuleDriver(agents, specs)
    )
    if task is not None:
        spec = dataclasses.replace(gym.spec(task.id), max_episode_steps=None)
        inner: Any = gym.make(spec, disable_env_checker=True, **env_kwargs)
    else:
        inner = make_env(sc, **env_kwargs)
    env: Any = RuleSelectEnv(inner, req)
    if max_episode_steps is not None:
        env = gym.wrappers.TimeLimit(env, max_episode_steps)
    return env
