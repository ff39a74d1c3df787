"""Learned agents: policies and trained models as agents (``clustergym.learned``).

* :mod:`.policies`: the MLP reference and the permutation-equivariant
  actor-critic (:class:`~.policies.EquivariantMaskablePolicy`) for SB3;
* :mod:`.model_agent`: a saved model as an agent (``--agent path/model.zip``);
* :mod:`.rule_select`: the ``rule`` mode, a policy choosing a rule-based agent per decision epoch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_model_agent"]


def load_model_agent(path: str, **params: Any) -> Any:
    """Load a trained model saved by ``clustergym train`` (``OUT/model.zip`` or a checkpoint) as an agent."""
    from clustergym.learned.model_agent import load_model_agent as _load

    return _load(path, **params)
