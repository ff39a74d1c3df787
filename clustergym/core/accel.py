"""Optional compiled kernels (numba), with the pure-NumPy/Python path as the fallback.

numba is the optional extra ``fast`` (``pip install -e ".[fast]"``).  Without it,
or with the environment variable ``CLUSTERGYM_NO_NUMBA=1``, every compiled path
falls back to the ordinary kernel.  Both paths give bit-identical results: the
compiled code performs the same floating-point operations in the same order
(numba compiles without fast-math), and ``tests/test_golden.py`` checks both.

Use :func:`enabled` to ask whether compiled paths are active now, and
:func:`forced` to switch them on or off for a block (tests, benchmarks).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["available", "enabled", "forced", "njit"]

try:  # pragma: no cover - depends on the install
    import numba as _numba
except ImportError:  # pragma: no cover
    _numba = None  # type: ignore[assignment]

_override: bool | None = None


def available() -> bool:
    """Whether numba is installed (the ``fast`` extra)."""
    return _numba is not None


def enabled() -> bool:
    """Whether compiled paths are used now: numba installed, not disabled by
    ``CLUSTERGYM_NO_NUMBA=1``, and not switched off by :func:`forced`."""
    if _override is not None:
        return _override and available()
    return available() and os.environ.get("CLUSTERGYM_NO_NUMBA", "") in ("", "0")


@contextmanager
def forced(on: bool) -> Iterator[None]:
    """Use (``on=True``, if numba is installed) or avoid the compiled paths inside the block."""
    global _override
    old = _override
    _override = bool(on)
    try:
        yield
    finally:
        _override = old


def njit(*args, **kwargs):
    """``numba.njit(cache=True)`` when numba is installed; otherwise the function unchanged
    (it is then never called on a hot path: callers check :func:`enabled`)."""
    kwargs.setdefault("cache", True)
    if _numba is None:
        if args and callable(args[0]):
            return args[0]
        return lambda f: f
    return _numba.njit(*args, **kwargs)
