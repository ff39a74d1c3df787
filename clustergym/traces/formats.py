"""Trace formats by name: one loader per format, with its filters (the ``kind: trace`` ``format`` key).

:data:`FORMATS` maps a format name to its loader and the function whose keyword-only options are
the format's filters; :func:`load_trace` loads any of them by name, checking the filter names.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any

from clustergym.errors import ScenarioError
from clustergym.traces.alibaba import (
    load_alibaba_gpu_v2023,
    load_alibaba_gpu_v2025,
    load_alibaba_v2017,
    load_cloudsimpy_jobs,
)
from clustergym.traces.azure import load_azure_v1
from clustergym.traces.google import (
    google_tasks,
)
from clustergym.traces.table import TraceTable
from clustergym.validation import choice

PathLike = str | os.PathLike[str]
from clustergym.traces.cache import google_table

__all__ = ["FORMATS", "filter_names", "load_trace"]

# ---------------------------------------------------------------------------------------------- formats

def _google_loader(path: PathLike | None = None, trace_dir: PathLike | None = None, **opts: Any) -> TraceTable:
    return google_table(trace_dir, path, **opts)


def _path_loader(fn: Callable[..., TraceTable], path_arg: str = "path") -> Callable[..., TraceTable]:
    def load(path: PathLike | None = None, trace_dir: PathLike | None = None, **opts: Any) -> TraceTable:
        if path is not None:
            opts[path_arg] = path
        return fn(trace_dir, **opts)
    load.__wrapped__ = fn  # type: ignore[attr-defined]
    return load


#: format -> (loader(path=None, trace_dir=None, **filters), the function whose keyword options are the filters)
FORMATS: dict[str, tuple[Callable[..., TraceTable], Callable[..., Any]]] = {
    "google": (_google_loader, google_tasks),
    "alibaba-v2017": (_path_loader(load_alibaba_v2017), load_alibaba_v2017),
    "cloudsimpy": (_path_loader(load_cloudsimpy_jobs), load_cloudsimpy_jobs),
    "alibaba-gpu-v2023": (_path_loader(load_alibaba_gpu_v2023), load_alibaba_gpu_v2023),
    "alibaba-gpu-v2025": (_path_loader(load_alibaba_gpu_v2025), load_alibaba_gpu_v2025),
    "azure": (_path_loader(load_azure_v1, "flavors_path"), load_azure_v1),
}

_NOT_FILTERS = {"trace_dir", "path", "flavors_path", "events", "self"}


def filter_names(fmt: str) -> list[str]:
    """The filter (keyword option) names a format's loader accepts."""
    fn = FORMATS[fmt][1]
    return [k for k, p in inspect.signature(fn).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and k not in _NOT_FILTERS]


def _coerce_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(filters)
    for k in ("window",):
        if k in out and isinstance(out[k], list):
            out[k] = tuple(out[k])
    for k in ("statuses", "phases", "roles"):
        if k in out and isinstance(out[k], str):
            out[k] = [out[k]]
    return out


def load_trace(fmt: str, path: PathLike | None = None, *, trace_dir: PathLike | None = None,
               **filters: Any) -> TraceTable:
    """Load any supported format by name with its filters (see :data:`FORMATS`).

    Raises:
        ScenarioError: unknown format or filter (naming it); TraceFormatError for malformed files.
    """
    choice(fmt, "format", sorted(FORMATS))
    allowed = filter_names(fmt)
    for key in filters:
        if key not in allowed:
            raise ScenarioError(f"filters.{key}", f"format {fmt!r} has no filter {key!r}; it takes {sorted(allowed)}")
    loader = FORMATS[fmt][0]
    return loader(path, trace_dir, **_coerce_filters(filters))


