"""Scenarios, the instance generator: named presets and scenario files.

A :class:`Scenario` holds one problem instance (servers, job stream, horizon, objective, queueing);
presets build scenarios from a few documented parameters (registered in
:mod:`clustergym.scenarios.presets`), scenario files from YAML or JSON (:mod:`.files`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import clustergym.scenarios.presets  # noqa: F401  (registers the built-in presets)
from clustergym.errors import ScenarioError
from clustergym.scenarios.files import load_scenario_file, scenario_from_dict
from clustergym.scenarios.registry import PRESETS, make_preset
from clustergym.scenarios.spec import Scenario

__all__ = ["Scenario", "PRESETS", "make_preset", "load_scenario_file", "scenario_from_dict", "resolve_scenario"]


def resolve_scenario(scenario: str | Path | dict | Scenario, **params: Any) -> Scenario:
    """A scenario from a preset name, a file path, a dict in the file format, or itself.

    ``params`` are the preset's parameters (only with a preset name).
    """
    if isinstance(scenario, Scenario):
        if params:
            raise ScenarioError(f"params.{next(iter(params))}", "parameters apply to preset names only")
        return scenario
    if isinstance(scenario, dict):
        if params:
            raise ScenarioError(f"params.{next(iter(params))}", "parameters apply to preset names only")
        return scenario_from_dict(scenario)
    name = str(scenario)
    if name in PRESETS:
        return make_preset(name, **params)
    path = Path(name)
    if path.suffix.lower() in (".yaml", ".yml", ".json") or path.exists():
        if params:
            raise ScenarioError(
                f"params.{next(iter(params))}", "parameters apply to preset names only; write them in the file's params"
            )
        return load_scenario_file(path)
    raise ScenarioError(
        "scenario", f"unknown scenario {name!r}: not a preset ({', '.join(sorted(PRESETS))}) nor a .yaml/.json file"
    )
