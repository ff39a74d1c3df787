"""The Gymnasium ids of clustergym, registered in one place.

* ``clustergym/Queueing-v0`` -- :class:`~clustergym.envs.ClusterEnv` on any scenario (``scenario=``);
* ``clustergym/Admission-v0`` -- :class:`~clustergym.envs.AdmissionEnv` (loss systems);
* ``clustergym/<preset>-v0`` -- one per preset (:mod:`clustergym.scenarios.presets`), built by
  :func:`clustergym.envs.make_env`, which picks the environment class the scenario needs.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from clustergym.scenarios import PRESETS

__all__ = ["register_envs"]


def register_envs() -> list[str]:
    """Register every clustergym id with Gymnasium (idempotent); return the ids."""
    entries: list[tuple[str, str, dict]] = [
        ("clustergym/Queueing-v0", "clustergym.envs:ClusterEnv", {}),
        ("clustergym/Admission-v0", "clustergym.envs:AdmissionEnv", {}),
    ]
    entries += [(f"clustergym/{name}-v0", "clustergym.envs:make_env", {"scenario": name}) for name in PRESETS]
    for env_id, entry, kwargs in entries:
        if env_id not in registry:
            register(id=env_id, entry_point=entry, kwargs=kwargs, disable_env_checker=False)
    return [e[0] for e in entries]
