"""One factory for environments: the class and action mode a scenario needs."""

from __future__ import annotations

from typing import Any

from clustergym.envs.cluster_env import AdmissionEnv, ClusterEnv
from clustergym.scenarios import Scenario, resolve_scenario

__all__ = ["make_env", "ENV_KWARGS"]

#: keyword arguments of the environment (the rest of ``make_env``'s keywords are preset parameters)
ENV_KWARGS = frozenset(
    {
        "action_mode",
        "queue_window",
        "epochs",
        "horizon",
        "invalid_action",
        "invalid_penalty",
        "max_invalid_per_epoch",
        "skip_trivial",
        "reward_scale",
        "reward_timing",
        "reward_fn",
        "rules",
        "pair_features",
        "validate",
        "observe",
        "render_mode",
    }
)


def make_env(scenario: str | dict | Scenario = "ec2", **kwargs: Any) -> ClusterEnv:
    """The environment of a scenario: :class:`AdmissionEnv` for loss systems, else :class:`ClusterEnv`.

    ``kwargs`` are the environment's arguments (:data:`ENV_KWARGS`; the action mode defaults to the
    one of the scenario's queueing, see :func:`clustergym.envs.actions.default_action_mode`) and, for a
    preset name, the preset's parameters.  This is the entry point of the ids ``clustergym/<preset>-v0``.
    """
    env_args = {k: kwargs.pop(k) for k in list(kwargs) if k in ENV_KWARGS}
    sc = resolve_scenario(scenario, **kwargs)
    cls = AdmissionEnv if sc.queueing == "loss" else ClusterEnv
    return cls(sc, **env_args)
