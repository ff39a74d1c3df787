"""The registry of named scenarios (presets).

A preset is a function of a few documented keyword parameters that returns a
:class:`~clustergym.scenarios.spec.Scenario`; ``clustergym list`` shows them and
``--set key=value`` (or keyword arguments to ``gymnasium.make``) sets them.  Every built-in
preset is registered in one place, :mod:`clustergym.scenarios.presets`, by the import path of
its function, which is imported when the preset is first built or described: naming the
presets costs no import of their modules (nor of the trace loaders).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clustergym.errors import ScenarioError
from clustergym.scenarios.spec import MAX_SERVERS, Scenario
from clustergym.validation import is_number, number

__all__ = ["PRESETS", "Preset", "make_preset", "register_preset"]


@dataclass
class Preset:
    """A registered scenario.

    Attributes:
        name: the kebab-case name (``clustergym run NAME``, ``clustergym/NAME-v0``).
        entry_point: the builder, or its import path ``"package.module:function"``.
        description: one line for ``clustergym list``.
        needs_traces: built from the real traces (absent data raises ``TraceNotFoundError``).
    """

    name: str
    entry_point: Callable[..., Scenario] | str
    description: str
    needs_traces: bool = False
    _build: Callable[..., Scenario] | None = field(default=None, repr=False, compare=False)

    @property
    def build(self) -> Callable[..., Scenario]:
        """The builder function (imported on first use)."""
        if self._build is None:
            if callable(self.entry_point):
                self._build = self.entry_point
            else:
                module, _, attr = self.entry_point.partition(":")
                self._build = getattr(importlib.import_module(module), attr)
        return self._build

    def defaults(self) -> dict[str, Any]:
        """The builder's parameters with their default values."""
        return {k: p.default for k, p in inspect.signature(self.build).parameters.items()}


#: name -> preset, in registration order
PRESETS: dict[str, Preset] = {}


def register_preset(
    name: str, entry_point: Callable[..., Scenario] | str, description: str, *, needs_traces: bool = False
) -> None:
    """Add a named scenario; ``entry_point`` is the builder or ``"module:function"``."""
    if name in PRESETS and PRESETS[name].entry_point != entry_point:
        raise ValueError(f"scenario name {name!r} is already registered")
    PRESETS[name] = Preset(name, entry_point, description, needs_traces)


def make_preset(name: str, **params: Any) -> Scenario:
    """Build a preset; unknown parameters are errors that name the parameter."""
    if name not in PRESETS:
        raise ScenarioError("scenario", f"unknown scenario {name!r}; presets are {sorted(PRESETS)}")
    preset = PRESETS[name]
    allowed = preset.defaults()
    # kernel options every preset takes
    kernel = {k: params.pop(k) for k in ("job_memory", "warmup") if k in params}
    for key in params:
        if key not in allowed:
            raise ScenarioError(
                f"params.{key}",
                f"scenario {name!r} has no parameter {key!r}; it takes {sorted(allowed) + ['job_memory', 'warmup']}",
            )
    for key in ("num_servers", "machines_per_config"):  # checked before any (L, R) array is allocated
        if key in params and is_number(params[key]):  # the preset checks the rest (type, lower bound)
            number(params[key], f"params.{key}", hi=MAX_SERVERS)
    sc = preset.build(**params)
    return dataclasses.replace(sc, **kernel) if kernel else sc
