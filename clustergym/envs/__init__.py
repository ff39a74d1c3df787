"""Gymnasium environments over the kernel, split as Jumanji splits its environments: dynamics
(:mod:`clustergym.core`), instance generator (:mod:`clustergym.scenarios`), observation
(:mod:`.observation`), actions (:mod:`.actions`), reward (:mod:`.reward`) and viewer (:mod:`.viewer`);
:mod:`.cluster_env` wires them together, :mod:`.factory` picks the class a scenario needs and
:mod:`.registration` registers the Gymnasium ids."""

from clustergym.envs.cluster_env import AdmissionEnv, ClusterEnv
from clustergym.envs.factory import make_env
from clustergym.envs.registration import register_envs
from clustergym.envs.reward import ObjectiveReward, RewardFn, StartReward

__all__ = ["ClusterEnv", "AdmissionEnv", "make_env", "RewardFn", "ObjectiveReward", "StartReward", "ENV_IDS"]

#: every environment id registered by clustergym
ENV_IDS: list[str] = register_envs()
