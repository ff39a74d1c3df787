"""Running agents on scenarios, and comparing them fairly (DESIGN §1 use 3).

Fairness: every agent runs on the same seeds, and a seed fixes the arrival
stream independently of the agent's decisions (common random numbers), so
differences between agents are paired.  Results are pandas DataFrames with
one row per (agent, seed); :func:`summarize` gives mean and 95% confidence
intervals (Student t over seeds).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd
from scipy import stats

from clustergym.agent_api import make_agent
from clustergym.envs.cluster_env import AdmissionEnv, ClusterEnv
from clustergym.errors import ScenarioError
from clustergym.scenarios import Scenario, resolve_scenario

__all__ = ["make_env_for", "run_episode", "compare", "sweep", "summarize", "RUN_FIELDS"]

#: fields of ``clustergym run --json`` (DESIGN §6), in order
RUN_FIELDS = ("scenario", "agent", "seed", "servers", "sim_time", "arrivals", "started", "completed", "rejected",
              "mean_queue_length", "mean_wait", "p99_wait", "mean_weighted_completion", "reward_rate",
              "utilization", "events", "wall_seconds", "unstable")


def _requirements(agent: Any, scenario: Scenario) -> Any:
    """The agent's requirements on this scenario (``None`` for objects without any)."""
    if hasattr(agent, "requirements_for"):
        return agent.requirements_for(scenario)
    return getattr(agent, "requirements", None)


def make_env_for(scenario: Scenario, agent: Any, *, validate: bool = False, **env_kwargs: Any) -> ClusterEnv:
    """The environment for ``agent`` on ``scenario``: the scenario plus the agent's decision epochs."""
    req = _requirements(agent, scenario)
    if req is not None:
        if scenario.queueing not in req.queueing:
            raise ScenarioError("agent", f"agent {getattr(agent, 'name', agent)!r} works with queueing "
                                         f"{list(req.queueing)}, scenario {scenario.name!r} is {scenario.queueing!r}")
        if req.needs_types and not scenario.source.types.exact:
            raise ScenarioError("agent", f"agent {agent.name!r} needs discrete job types; scenario "
                                         f"{scenario.name!r} has continuous demands")
        env_kwargs.setdefault("epochs", req.epochs)
        env_kwargs.setdefault("skip_trivial", req.skip_trivial)
        env_kwargs.setdefault("observe", req.observes)
        if req.action_mode is not None:
            env_kwargs.setdefault("action_mode", req.action_mode)
        for key, value in getattr(req, "env_kwargs", ()):
            env_kwargs.setdefault(key, value)
    env_kwargs.setdefault("invalid_action", "raise")
    cls = AdmissionEnv if scenario.queueing == "loss" else ClusterEnv
    return cls(scenario, validate=validate, **env_kwargs)


def run_episode(scenario: Scenario | str, agent: Any, *, seed: int = 0, horizon: float | None = None,
                agent_name: str | None = None, validate: bool = False,
                env_kwargs: dict[str, Any] | None = None,
                on_step: Callable[[ClusterEnv], None] | None = None) -> dict[str, Any]:
    """Run one episode of ``agent`` (an agent object or registered name) and return its metrics.

    The returned dict has the ``clustergym run`` fields plus every kernel metric
    and ``return`` (the sum of rewards).
    """
    sc = resolve_scenario(scenario) if not isinstance(scenario, Scenario) else scenario
    sc = sc.with_horizon(horizon)
    if isinstance(agent, str):
        agent_name = agent_name or agent
        agent = make_agent(agent)
    env = make_env_for(sc, agent, validate=validate, **(env_kwargs or {}))
    t0 = time.perf_counter()
    obs, _ = env.reset(seed=seed)
    agent.reset(env, seed=seed)
    total = 0.0
    steps = 0
    # a compiled whole-episode path (rule-based agents that offer one; identical results)
    fast = getattr(agent, "run_fast", None) if on_step is None else None
    done = fast is not None and (res := fast(env)) is not None
    if done:
        total, steps = res
    while not done:
        action, _ = agent.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, _ = env.step(action)
        total += reward
        steps += 1
        if on_step is not None:
            on_step(env)
        done = terminated or truncated
    wall = time.perf_counter() - t0
    m = env.metrics()
    out: dict[str, Any] = {"scenario": sc.name, "agent": agent_name or getattr(agent, "name", str(agent)),
                           "seed": seed, **m, "wall_seconds": wall, "return": total, "steps": steps,
                           "uses_oracle": bool(getattr(_requirements(agent, sc), "uses_oracle", False))}
    return {k: out[k] for k in RUN_FIELDS} | {k: v for k, v in out.items() if k not in RUN_FIELDS}


def compare(scenario: Scenario | str, agents: Iterable[str], *, seeds: Iterable[int] = range(5),
            horizon: float | None = None, progress: Callable[[str, int], None] | None = None,
            params: dict[str, Any] | None = None, workers: int = 1, ray: str | None = None) -> pd.DataFrame:
    """Every agent on every seed: one row per (agent, seed), the ``run`` metrics as columns.

    ``workers`` > 1 runs the episodes on that many local processes, ``ray`` on a Ray
    cluster (see :func:`clustergym.harness.run_cells`); the rows are the same.
    """
    from clustergym.harness import plan, run_cells

    return run_cells(plan(scenario, list(agents), seeds=seeds, horizon=horizon, params=params),
                     workers=workers, ray=ray, progress=progress)


def sweep(scenario: str, param: str, values: Iterable[Any], agents: Iterable[str], *,
          seeds: Iterable[int] = range(5), horizon: float | None = None, params: dict[str, Any] | None = None,
          progress: Callable[[str, int], None] | None = None, workers: int = 1,
          ray: str | None = None) -> pd.DataFrame:
    """:func:`compare` at each value of one preset parameter (e.g. ``zeta``); adds a column ``param``."""
    from clustergym.harness import plan, run_cells

    cells = plan(scenario, list(agents), seeds=seeds, horizon=horizon, params=params, sweep=(param, list(values)))
    return run_cells(cells, workers=workers, ray=ray, progress=progress)


def _ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    values = values[np.isfinite(values)]
    n = values.size
    if n == 0:
        return math.nan, math.nan
    mean = float(values.mean())
    if n < 2:
        return mean, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * values.std(ddof=1) / math.sqrt(n))
    return mean, half


def summarize(results: pd.DataFrame, metrics: Iterable[str] = ("mean_queue_length", "mean_wait", "p99_wait",
                                                                  "reward_rate", "mean_weighted_completion"),
              reference: str | None = None, by: str | None = None) -> pd.DataFrame:
    """Mean and 95% CI half-width per agent (and per value of the column ``by``, for
    sweeps) and metric; with ``reference``, also the paired difference (agent -
    reference on the same seeds) and its CI."""
    if reference is not None and reference not in set(results["agent"]):
        raise ScenarioError("reference", f"reference agent {reference!r} is not among the compared agents "
                                         f"{list(dict.fromkeys(results['agent']))}")
    out = []
    keys = ["agent"] if by is None else [by, "agent"]
    for key, grp in results.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        agent = key[-1]
        row: dict[str, Any] = dict(zip(keys, key))
        row.update({"runs": len(grp), "unstable_runs": int(grp["unstable"].sum())})
        for m in metrics:
            mean, half = _ci(grp[m].to_numpy(dtype=float))
            row[m] = mean
            row[f"{m}_ci95"] = half
            if reference is not None and agent != reference:
                same = results["agent"] == reference
                if by is not None:
                    same &= results[by] == key[0]
                ref = results[same].set_index("seed")[m]
                diff = grp.set_index("seed")[m] - ref
                dmean, dhalf = _ci(diff.dropna().to_numpy(dtype=float))
                row[f"{m}_diff"] = dmean
                row[f"{m}_diff_ci95"] = dhalf
        out.append(row)
    return pd.DataFrame(out)
