"""Validators: one place for every "expected a number / one of / true or false" check.

Each function returns the value converted (``float``, ``int``, ``str``, ``bool``, an array) or
raises ``error(field, problem)``: the field is the dotted path given by the caller
(``params.zeta``, ``workload.types[2].demand``, ``agent.scan``) and the problem says what was
expected and what was given, in one style::

    params.zeta: expected a number, got the string 'high'
    agent.scan: must be >= 1, got 0
    workload.types[0].rate: must be finite, got nan
    queueing: expected one of ['central', 'local', 'loss'], got 'fifo'

The functions raise :class:`~clustergym.errors.ScenarioError` (the default ``error``) for the fields
of a scenario (preset parameters, scenario files, sources, trace options).  The settings that are
not a scenario (agent parameters, environment and training options, worker counts) are checked
through :data:`settings`, the same validators raising :class:`~clustergym.errors.ConfigError`::

    from clustergym.validation import settings
    scan = settings.number(scan, "agent.scan", lo=1, integer=True)

The rules: a bool is not a number (YAML's ``true`` never becomes 1) and a number is not a bool;
numbers may be ``int``, ``float``, NumPy scalars or other real numbers (``Fraction``), never
strings; nan is never accepted and infinities only with ``allow_inf``; an integer may be given
as an integral float (``1e3``).
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar, cast

import numpy as np

from clustergym.errors import ClusterGymError, ConfigError, ScenarioError

__all__ = [
    "is_number",
    "describe",
    "number",
    "positive",
    "choice",
    "boolean",
    "vector",
    "matrix",
    "mapping",
    "Checks",
    "settings",
]

ErrorType = type[ClusterGymError]


def is_number(x: Any) -> bool:
    """A real number, and not a bool (``True`` is an ``int`` to Python, not to a scenario)."""
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def describe(x: Any) -> str:
    """``x`` as an error message shows what was given (quoted numbers get a hint)."""
    if isinstance(x, str):
        hint = ""
        try:
            float(x)
            hint = " (numbers must not be quoted; note that YAML reads 1e-3 as a string: write 1.0e-3)"
        except ValueError:
            pass
        return f"the string {x!r}{hint}"
    return f"{x!r} ({type(x).__name__})"


def _show(value: Any, v: float | int) -> str:
    return repr(value) if type(value) in (int, float) else repr(v)


def _bounds(lo: float | None, lo_open: bool, hi: float | None, hi_open: bool) -> str:
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {lo:g}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {hi:g}")
    return " and ".join(parts)


def number(
    value: Any,
    field: str,
    *,
    lo: float | None = None,
    lo_open: bool = False,
    hi: float | None = None,
    hi_open: bool = False,
    integer: bool = False,
    allow_none: bool = False,
    allow_inf: bool = False,
    error: ErrorType = ScenarioError,
) -> Any:
    """A real number in ``[lo, hi]`` (``lo_open``/``hi_open``: the bound itself excluded).

    Returns a ``float``, or an ``int`` with ``integer`` (an integral float such as ``1e3`` is
    accepted); ``None`` with ``allow_none``; an infinity (also from the strings ``inf`` and
    ``infinity``, as YAML 1.1 reads them) with ``allow_inf``.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if allow_inf and isinstance(value, str) and value.strip().lower().lstrip("+") in ("inf", "infinity"):
        value = math.inf
    if not is_number(value):
        raise error(field, f"expected {'an integer' if integer else 'a number'}, got {describe(value)}")
    v: Any = float(value)
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise error(field, f"must be finite, got {_show(value, v)}")
    if integer and math.isfinite(v):
        if isinstance(value, numbers.Integral):
            v = int(value)
        elif v.is_integer():
            v = int(v)
        else:
            raise error(field, f"expected an integer, got {describe(value)}")
    if (lo is not None and (v <= lo if lo_open else v < lo)) or (hi is not None and (v >= hi if hi_open else v > hi)):
        raise error(field, f"must be {_bounds(lo, lo_open, hi, hi_open)}, got {_show(value, v)}")
    return v


def positive(
    value: Any,
    field: str,
    *,
    integer: bool = False,
    allow_zero: bool = False,
    allow_none: bool = False,
    allow_inf: bool = False,
    error: ErrorType = ScenarioError,
) -> Any:
    """:func:`number` > 0 (>= 0 with ``allow_zero``)."""
    return number(
        value,
        field,
        lo=0.0,
        lo_open=not allow_zero,
        integer=integer,
        allow_none=allow_none,
        allow_inf=allow_inf,
        error=error,
    )


def choice(value: Any, field: str, options: Collection[str], *, error: ErrorType = ScenarioError) -> str:
    """One of the strings ``options`` (a tuple, a list, or a mapping's keys)."""
    if not isinstance(value, str) or value not in options:
        raise error(field, f"expected one of {list(options)}, got {value!r}")
    return value


def boolean(value: Any, field: str, *, allow_none: bool = False, error: ErrorType = ScenarioError) -> Any:
    """``True`` or ``False`` (NumPy bools too); not 0/1, not strings (``None`` with ``allow_none``)."""
    if value is None and allow_none:
        return None
    if not isinstance(value, (bool, np.bool_)):
        raise error(field, f"expected true or false, got {describe(value)}")
    return bool(value)


def vector(
    value: Any,
    field: str,
    length: int | None = None,
    *,
    lo: float | None = None,
    lo_open: bool = False,
    hi: float | None = None,
    hi_open: bool = False,
    what: str = "(one per resource)",
    error: ErrorType = ScenarioError,
) -> np.ndarray:
    """A ``(length,)`` float64 array of numbers, each checked by :func:`number` (errors name ``field[i]``).

    A list, tuple or 1-D numeric array; without ``length``, a non-empty one.  A bare number is
    accepted only when ``length == 1``.  ``what`` completes "expected 3 numbers ...".
    """
    bounds = {"lo": lo, "lo_open": lo_open, "hi": hi, "hi_open": hi_open, "error": error}
    if is_number(value) or (isinstance(value, np.ndarray) and value.ndim == 0):
        if length == 1:
            return np.array([number(value, f"{field}[0]", **bounds)], dtype=np.float64)
        count = f"{length} " if length is not None else ""
        raise error(field, f"expected a list of {count}numbers {what}, got a single number")
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise error(field, f"expected a 1-D list of numbers, got an array of shape {value.shape}")
        if value.dtype.kind not in "iuf":
            raise error(field, f"expected numbers, got an array of dtype {value.dtype}")
        items: Sequence[Any] = value.tolist()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        raise error(field, f"expected a list of numbers {what}, got {describe(value)}")
    if length is not None and len(items) != length:
        raise error(field, f"expected {length} numbers {what}, got {len(items)}")
    if length is None and len(items) == 0:
        raise error(field, "expected a non-empty list of numbers")
    out = np.empty(len(items), dtype=np.float64)
    for i, item in enumerate(items):
        out[i] = number(item, f"{field}[{i}]", **bounds)
    return out


def matrix(
    value: Any, field: str, cols: int | None = None, *, lo: float | None = None, error: ErrorType = ScenarioError
) -> np.ndarray:
    """An ``(m, cols)`` float64 array, ``m >= 1``, rows checked by :func:`vector` (errors name
    ``field[i][r]``); without ``cols``, the first row sets the width."""
    if isinstance(value, np.ndarray):
        if value.ndim != 2:
            raise error(field, f"expected a 2-D table (one row per value), got an array of shape {value.shape}")
        rows: Sequence[Any] = list(value)
    elif isinstance(value, (list, tuple)):
        rows = value
    else:
        raise error(field, f"expected a list of rows, got {describe(value)}")
    if len(rows) == 0:
        raise error(field, "expected at least one row")
    width = cols
    out = []
    for i, row in enumerate(rows):
        if width is None:
            width = len(row) if isinstance(row, (list, tuple, np.ndarray)) else 1
        out.append(vector(row, f"{field}[{i}]", width, lo=lo, error=error))
    return np.stack(out)


def mapping(
    value: Any, field: str, allowed: Collection[str], required: Sequence[str] = (), *, error: ErrorType = ScenarioError
) -> Mapping[str, Any]:
    """A mapping whose keys are among ``allowed`` and include ``required`` (errors name ``field.key``)."""
    if not isinstance(value, Mapping):
        raise error(field, f"expected a mapping, got {type(value).__name__}")
    for k in value:
        if k not in allowed:
            raise error(f"{field}.{k}" if field else str(k), f"unknown field; expected one of {sorted(allowed)}")
    for k in required:
        if k not in value:
            raise error(f"{field}.{k}" if field else k, "missing required field")
    return value


_F = TypeVar("_F", bound=Callable[..., Any])


def _bind(fn: _F, error: ErrorType) -> _F:
    return cast(_F, functools.partial(fn, error=error))


class Checks:
    """The validators of this module with their error type bound (:func:`number`, :func:`positive`,
    :func:`choice`, :func:`boolean`, :func:`vector`, :func:`matrix`, :func:`mapping`)."""

    def __init__(self, error: ErrorType):
        self.error = error
        self.number = _bind(number, error)
        self.positive = _bind(positive, error)
        self.choice = _bind(choice, error)
        self.boolean = _bind(boolean, error)
        self.vector = _bind(vector, error)
        self.matrix = _bind(matrix, error)
        self.mapping = _bind(mapping, error)


#: the validators for settings that are not a scenario: they raise :class:`~clustergym.errors.ConfigError`
settings = Checks(ConfigError)
