"""Gymnasium environments over the kernel, split as Jumanji does it:
dynamics (:mod:`clustergym.core`), instance generator (:mod:`clustergym.scenarios`),
observation (:mod:`.observation`), actions (:mod:`.actions`), reward (:mod:`.reward`)
and viewer (:mod:`.viewer`)."""

from typing import Any

from clustergym.envs.cluster_env import AdmissionEnv, ClusterEnv
from clustergym.envs.wrappers import FlattenObservation

__all__ = ["ClusterEnv", "AdmissionEnv", "FlattenObservation", "make_scenario_env"]


def make_scenario_env(scenario: Any = "ec2", **kwargs: Any) -> ClusterEnv:
    """The environment class a scenario needs: :class:`AdmissionEnv` for loss systems,
    else :class:`ClusterEnv` (the entry point of the per-preset Gymnasium ids)."""
    from clustergym.scenarios import resolve_scenario

    env_args = {k: kwargs.pop(k) for k in list(kwargs) if k in _ENV_ARGS}
    sc = resolve_scenario(scenario, **kwargs)
    cls = AdmissionEnv if sc.queueing == "loss" else ClusterEnv
    return cls(sc, **env_args)


_ENV_ARGS = {"action_mode", "queue_window", "epochs", "horizon", "invalid_action", "invalid_penalty",
             "max_invalid_per_epoch", "skip_trivial", "reward_scale", "reward_timing", "validate", "observe",
             "render_mode"}
