"""Gymnasium environments over the kernel, split as Jumanji does it:
dynamics (:mod:`clustergym.core`), instance generator (:mod:`clustergym.scenarios`),
observation (:mod:`.observation`), actions (:mod:`.actions`), reward (:mod:`.reward`)
and viewer (:mod:`.viewer`)."""

from clustergym.envs.cluster_env import AdmissionEnv, ClusterEnv
from clustergym.envs.wrappers import FlattenObservation

__all__ = ["ClusterEnv", "AdmissionEnv", "FlattenObservation"]
