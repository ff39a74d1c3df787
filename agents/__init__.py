"""Learned agents: policies, feature extractors, training and comparison scripts.

Installed as ``clustergym.agents`` (the top-level folder ``agents/`` is mapped
there by ``pyproject.toml``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_model_agent"]


def load_model_agent(path: str, **params: Any) -> Any:
    """Load a trained model saved by ``clustergym train`` as an agent."""
    from clustergym.errors import ScenarioError

    raise ScenarioError("agent", f"{path}: loading trained models arrives with the learning issue; "
                                 "no model format is supported yet")
