"""Validators for scenario fields and preset parameters: one place for every "expected a number" check.

Each function returns the value converted (``int``, ``float``, ``str``) or raises
:class:`~clustergym.errors.ScenarioError` whose field is the dotted path given by the caller
(``params.zeta``, ``workload.types[2].demand``) and whose message says what was expected and what
was given.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clustergym.errors import ScenarioError

__all__ = ["positive", "choice"]


def positive(name: str, value: Any, *, integer: bool = False, allow_zero: bool = False) -> Any:
    """A preset parameter ``name`` that must be a finite number > 0 (>= 0 with ``allow_zero``), an
    integer with ``integer``; errors name the field ``params.<name>``."""
    try:
        v = int(value) if integer else float(value)
    except (TypeError, ValueError):
        raise ScenarioError(f"params.{name}", f"expected a number, got {value!r}") from None
    if integer and float(value) != v:
        raise ScenarioError(f"params.{name}", f"expected an integer, got {value!r}")
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ScenarioError(f"params.{name}", f"must be {'>= 0' if allow_zero else '> 0'} and finite, got {value!r}")
    return v




def choice(field: str, value: Any, options: tuple[str, ...] | list[str]) -> str:
    """``value`` must be one of ``options`` (strings); errors name ``field`` and the options."""
    if not isinstance(value, str) or value not in options:
        raise ScenarioError(field, f"expected one of {list(options)}, got {value!r}")
    return value
