"""clustergym: Gymnasium environments and published baselines for multi-resource cluster scheduling.

Importing the package registers the environments with Gymnasium and the built-in agents and
presets by name (nothing heavier: each agent's and preset's module is imported when first used)::

    import gymnasium as gym
    import clustergym  # noqa: F401

    env = gym.make("clustergym/ec2-v0", zeta=0.9)       # a preset, by name
    env = gym.make("clustergym/Queueing-v0", scenario="my.yaml")
    env = gym.make("clustergym/Admission-v0")            # loss system (autoscale-4vm)
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import clustergym.baselines
import clustergym.suite  # noqa: F401  (registers the suite's task ids, clustergym/<task>-v1)
from clustergym.agent_api import (
    Agent,
    AgentContext,
    AgentRequirements,
    agent_context,
    list_agents,
    make_agent,
    make_env_for,
    register_agent,
    register_model_loader,
)
from clustergym.core import Cmd, Command, EpochConfig, EventKind, JobStatus, Simulator
from clustergym.envs import ENV_IDS, AdmissionEnv, ClusterEnv, make_env
from clustergym.errors import ClusterGymError, ConfigError, InvalidCommandError, ScenarioError, TraceFormatError
from clustergym.scenarios import PRESETS, Scenario, load_scenario_file, make_preset, resolve_scenario

try:
    __version__ = version("clustergym")
except PackageNotFoundError:  # a source tree that is not installed
    __version__ = "0+unknown"

__all__ = [
    "Agent",
    "AgentContext",
    "AgentRequirements",
    "agent_context",
    "list_agents",
    "make_agent",
    "make_env_for",
    "register_agent",
    "Cmd",
    "Command",
    "EpochConfig",
    "EventKind",
    "JobStatus",
    "Simulator",
    "ClusterEnv",
    "AdmissionEnv",
    "make_env",
    "ENV_IDS",
    "ClusterGymError",
    "ConfigError",
    "InvalidCommandError",
    "ScenarioError",
    "TraceFormatError",
    "PRESETS",
    "Scenario",
    "load_scenario_file",
    "make_preset",
    "resolve_scenario",
]

# saved models run wherever an agent name does (``--agent runs/x/model.zip``)
register_model_loader(".zip", "clustergym.learned.model_agent:load_model_agent")
