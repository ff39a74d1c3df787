"""One episode of one agent on one scenario, and its metrics.

Fairness: a seed fixes the arrival stream whatever the agent does (common random numbers), so two
agents on the same seed see the same jobs and their difference is paired.  What a study needs
beyond the ``clustergym run`` fields it asks for with named :class:`Probe` s, measured on the
finished environment or sampled at given simulated times; the runner never hands out the live
environment, so the compiled whole-episode path stays on wherever it gives identical results.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from clustergym.agent_api import agent_context, make_agent, make_env_for, requirements_of
from clustergym.envs.reward import ObjectiveReward
from clustergym.errors import ConfigError
from clustergym.scenarios import Scenario, resolve_scenario
from clustergym.validation import settings

__all__ = ["Probe", "run_episode", "run_compiled", "compiled_path_allowed", "RUN_FIELDS"]

#: fields of ``clustergym run --json``, in order (every kernel metric follows them)
RUN_FIELDS = (
    "scenario",
    "agent",
    "seed",
    "servers",
    "sim_time",
    "arrivals",
    "started",
    "completed",
    "rejected",
    "mean_queue_length",
    "mean_wait",
    "p99_wait",
    "mean_weighted_completion",
    "reward_rate",
    "utilization",
    "events",
    "wall_seconds",
    "unstable",
)


@dataclass(frozen=True)
class Probe:
    """A named measurement of an episode.

    Attributes:
        fn: called with the environment (``env.unwrapped``), or with the agent when ``of`` is
            ``"agent"``: on the finished episode when ``at`` is empty, else after the first step that
            leaves the clock at or after each time of ``at`` (and, for the times the episode never
            reached, on the finished episode).  Its value goes into the result under the probe's name
            (a list of values with ``at``).  In a worker process the value must pickle, so return
            numbers, arrays or dicts of them, not the environment or the agent.
        at: simulated times to sample at (non-decreasing).  Sampling needs the step loop, so a
            probe with ``at`` turns the compiled path off for its episode.
        of: ``"env"`` (default) or ``"agent"``: what ``fn`` measures, e.g. an agent's own counters
            or what it recorded during the episode.
    """

    fn: Callable[[Any], Any]
    at: tuple[float, ...] = ()
    of: str = "env"

    def __post_init__(self) -> None:
        if self.of not in ("env", "agent"):
            raise ConfigError("probe.of", f"expected 'env' or 'agent', got {self.of!r}")


def _as_probe(p: Probe | Callable[[Any], Any]) -> Probe:
    return p if isinstance(p, Probe) else Probe(p)


def _slotted_on_continuous(agent: Any, sc: Scenario, env: Any) -> bool:
    """Whether ``agent`` is a slotted-time agent (it decides only at a periodic clock, the BF-J/S
    paper's model, §II) run on a scenario whose arrivals are not slotted: it then acts once per
    period, after every arrival of the period, which figures and tables mark."""
    from clustergym.workloads.slotted import SlottedSource

    ep = getattr(requirements_of(agent, sc), "epochs", None)
    slotted_agent = ep is not None and ep.tick_period > 0 and not ep.arrivals and not ep.completions
    return bool(slotted_agent and not isinstance(getattr(env.sim, "source", None), SlottedSource))


def compiled_path_allowed(env: Any) -> bool:
    """Whether the environment's settings let a compiled whole-episode policy stand in for the step
    loop with identical results: its reward function is the default, the scenario objective's
    integral (:class:`~clustergym.envs.reward.ObjectiveReward`; a custom ``reward_fn`` or a
    ``reward_timing`` other than ``integral`` pays otherwise than the compiled loop sums), and it shows
    every epoch (``skip_trivial=False``, as rule-based agents run)."""
    inner = env.unwrapped
    return type(inner.reward_fn) is ObjectiveReward and not inner.skip_trivial


def run_compiled(agent: Any, env: Any) -> tuple[float, int] | None:
    """Run a freshly reset episode of ``agent`` to its end on the kernel's compiled path, if the agent
    offers one (:meth:`~clustergym.agent_api.Agent.compiled_policy`), the environment allows it
    (:func:`compiled_path_allowed`) and the kernel supports it for this run
    (:func:`clustergym.core.fastpath.supported`: numba installed, a central queue, no warm-up, ...).

    Returns:
        ``(return, steps)``, bit-identical to what the ``step`` loop would have summed and counted,
        or ``None``: nothing ran, drive the step loop.
    """
    from clustergym.core import fastpath

    offer = getattr(agent, "compiled_policy", None)
    policy = offer() if offer is not None else None
    if policy is None or not compiled_path_allowed(env):
        return None
    inner = env.unwrapped
    reward = inner.reward_fn
    if not fastpath.supported(inner.sim, policy.server_rule, policy.scan, reward.integral):
        return None
    return fastpath.run_scan_episode(
        inner.sim, policy.server_rule, policy.scan, sign=reward.sign, integral=reward.integral, scale=reward.scale
    )


def _step_loop(agent: Any, env: Any, obs: Any, after_step: Callable[[], None] | None) -> tuple[float, int]:
    """Drive ``agent`` on the reset ``env`` to the episode's end, calling ``after_step`` after every
    step; ``(return, steps)``."""
    total, steps, done = 0.0, 0, False
    while not done:
        action, _ = agent.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, _ = env.step(action)
        total += reward
        steps += 1
        done = terminated or truncated
        if after_step is not None:
            after_step()
    return total, steps


def run_episode(
    scenario: Scenario | str,
    agent: Any,
    *,
    seed: int = 0,
    horizon: float | None = None,
    agent_name: str | None = None,
    validate: bool = False,
    env_kwargs: dict[str, Any] | None = None,
    probes: Mapping[str, Probe | Callable[[Any], Any]] | None = None,
    env_id: str | None = None,
) -> dict[str, Any]:
    """Run one episode of ``agent`` (an agent object or a registered name) and return its metrics.

    Args:
        scenario: a preset name, a scenario file or a :class:`Scenario`.
        agent: an agent object (anything with SB3's ``predict``; its ``reset(context, seed)``, if it
            has one, is handed an :class:`~clustergym.agent_api.AgentContext`, never the environment)
            or a name for :func:`clustergym.make_agent`.
        seed: the episode seed (it fixes the arrival stream) and the agent's.
        horizon: overrides the scenario's horizon (simulated time units).
        agent_name: the ``agent`` field of the result (default: the name given or ``agent.name``).
        validate: check every kernel invariant after every event (slow).
        env_kwargs: further environment arguments (see :func:`clustergym.make_env_for`).
        probes: named :class:`Probe` s (or plain callables of the finished environment), measuring
            the environment or the agent.
        env_id: a Gymnasium id that builds the environment (a suite task, ``clustergym/<task>-v1``;
            see :func:`clustergym.make_env_for`); ``scenario`` and ``horizon`` must be the id's.

    Returns:
        The ``clustergym run`` fields (:data:`RUN_FIELDS`) first, then every kernel metric,
        ``return`` (the sum of rewards), ``steps``, ``uses_oracle``, ``slotted_on_continuous`` and one
        entry per probe.
    """
    sc = resolve_scenario(scenario) if not isinstance(scenario, Scenario) else scenario
    sc = sc.with_horizon(horizon).check_run_size()
    seed = settings.number(seed, "seed", lo=0, integer=True)
    if isinstance(agent, str):
        agent_name = agent_name or agent
        agent = make_agent(agent)
    probes_: dict[str, Probe] = {name: _as_probe(p) for name, p in (probes or {}).items()}
    sampled = {name: p for name, p in probes_.items() if p.at}
    samples: dict[str, list[Any]] = {name: [] for name in sampled}
    env = make_env_for(sc, agent, validate=validate, env_id=env_id, **(env_kwargs or {}))
    inner = env.unwrapped
    t0 = time.perf_counter()
    obs, _ = env.reset(seed=seed)
    if hasattr(agent, "reset"):  # an SB3 model maps observations to actions and has none
        agent.reset(agent_context(env, seed), seed=seed)

    def measure(p: Probe) -> Any:
        return p.fn(agent if p.of == "agent" else inner)

    def sample() -> None:
        for name, p in sampled.items():
            got = samples[name]
            while len(got) < len(p.at) and inner.sim.now >= p.at[len(got)]:
                got.append(measure(p))

    # a compiled whole-episode path (rule-based agents that offer one, where it gives identical results)
    res = run_compiled(agent, env) if not sampled else None
    total, steps = res if res is not None else _step_loop(agent, env, obs, sample if sampled else None)
    wall = time.perf_counter() - t0
    for name, p in sampled.items():
        samples[name] += [measure(p) for _ in range(len(p.at) - len(samples[name]))]
    out = _fields(sc, agent, agent_name, seed, inner, wall_seconds=wall, total=total, steps=steps)
    for name, p in probes_.items():
        out[name] = samples[name] if p.at else measure(p)
    return {k: out[k] for k in RUN_FIELDS} | {k: v for k, v in out.items() if k not in RUN_FIELDS}


def _fields(
    sc: Scenario,
    agent: Any,
    agent_name: str | None,
    seed: int,
    inner: Any,
    *,
    wall_seconds: float,
    total: float,
    steps: int,
) -> dict[str, Any]:
    """The fields of a finished episode's result, before its probes: who ran where, every kernel metric,
    the wall time (seconds), the return (sum of rewards) and the steps."""
    return {
        "scenario": sc.name,
        "agent": agent_name or getattr(agent, "name", str(agent)),
        "seed": seed,
        **inner.metrics(),
        "wall_seconds": wall_seconds,
        "return": total,
        "steps": steps,
        "uses_oracle": bool(getattr(requirements_of(agent, sc), "uses_oracle", False)),
        "slotted_on_continuous": _slotted_on_continuous(agent, sc, inner),
    }
