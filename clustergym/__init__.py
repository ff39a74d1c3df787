"""clustergym: Gymnasium environments and published baselines for multi-resource cluster scheduling.

Importing the package registers the environments with Gymnasium::

    import gymnasium as gym
    import clustergym  # noqa: F401

    env = gym.make("clustergym/ec2-v0", zeta=0.9)       # a preset, by name
    env = gym.make("clustergym/Queueing-v0", scenario="my.yaml")
    env = gym.make("clustergym/Admission-v0")            # loss system (autoscale-4vm)
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from clustergym.agent_api import Agent, AgentRequirements, list_agents, make_agent, register_agent
from clustergym.core import Cmd, Command, EpochConfig, EventKind, JobStatus, Simulator
from clustergym.envs import AdmissionEnv, ClusterEnv, FlattenObservation
from clustergym.errors import ClusterGymError, InvalidCommandError, ScenarioError, TraceFormatError
from clustergym.scenarios import PRESETS, Scenario, load_scenario_file, make_preset, resolve_scenario

__version__ = "0.1.0"

__all__ = [
    "Agent", "AgentRequirements", "list_agents", "make_agent", "register_agent",
    "Cmd", "Command", "EpochConfig", "EventKind", "JobStatus", "Simulator",
    "ClusterEnv", "AdmissionEnv", "FlattenObservation",
    "ClusterGymError", "InvalidCommandError", "ScenarioError", "TraceFormatError",
    "PRESETS", "Scenario", "load_scenario_file", "make_preset", "resolve_scenario",
    "ENV_IDS",
]


def _register() -> list[str]:
    ids = []
    entries = [("clustergym/Queueing-v0", "clustergym.envs:ClusterEnv", {}),
               ("clustergym/Admission-v0", "clustergym.envs:AdmissionEnv", {})]
    for name in PRESETS:
        entries.append((f"clustergym/{name}-v0", "clustergym.envs:make_scenario_env", {"scenario": name}))
    for env_id, entry, kwargs in entries:
        if env_id not in registry:
            register(id=env_id, entry_point=entry, kwargs=kwargs, disable_env_checker=False)
        ids.append(env_id)
    return ids


#: every environment id registered by clustergym
ENV_IDS: list[str] = _register()
