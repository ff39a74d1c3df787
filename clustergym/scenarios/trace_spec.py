"""``kind: trace`` workloads of scenario files: a trace format, its filters and transforms, as a replay source.

See :func:`trace_workload_from_spec` and the "Scenario files" section of ``docs/traces.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from clustergym.errors import ScenarioError, TraceFormatError
from clustergym.traces.formats import FORMATS, load_trace
from clustergym.traces.pipeline import apply_transforms, numeric_column
from clustergym.traces.table import TraceTable
from clustergym.validation import choice, mapping
from clustergym.workloads.replay import ReplaySource

PathLike = str | os.PathLike[str]

__all__ = ["trace_workload_from_spec"]

_SPEC_KEYS = {
    "kind",
    "format",
    "path",
    "trace_dir",
    "filters",
    "transforms",
    "demand",
    "type",
    "weight",
    "reward_rate",
    "time_scale",
}


def trace_workload_from_spec(
    spec: Mapping[str, Any], field: str, num_resources: int, base_dir: str | os.PathLike[str]
) -> ReplaySource:
    """A ``kind: trace`` workload of a scenario file, as a :class:`ReplaySource`.

    Fields of ``spec`` (``kind`` and ``time_scale`` belong to the caller and are ignored here)::

        format: google          # google | alibaba-v2017 | cloudsimpy | alibaba-gpu-v2023 | alibaba-gpu-v2025 | azure
        path: traces/task_events  # optional file or directory, relative to the scenario file
        trace_dir: /data/traces   # optional; default $CLUSTERGYM_TRACES or ../shared/traces
        filters: {lifecycle: strict, priorities: non-production, first_n: 20000}   # the loader's options
        transforms: [{rms_type: {p_max: 9}}]                                       # see apply_transforms
        demand: [size]          # columns, one per resource (default: the format's resources)
        type: type              # optional column of job types (default: set by rms_type/kmeans)
        weight: weight          # optional column
        reward_rate: reward     # optional column

    Raises:
        ScenarioError: whose field is ``<field>.<key>...``; a malformed trace file is reported
            under ``<field>.path`` with the file, line and field in the message.
    """
    mapping(spec, field, _SPEC_KEYS, required=("format",))
    table, hints = apply_transforms(
        _load_table(spec, field, Path(base_dir)), spec.get("transforms"), f"{field}.transforms"
    )
    demand = _demand_columns(spec, field, table, num_resources)
    for c in demand:
        numeric_column(table, c, f"{field}.demand")
    type_col = spec.get("type", hints.get("type_column"))
    same = type_col is not None and type_col == hints.get("type_column")
    names = hints.get("names") if same else None
    type_demand = hints.get("type_demand") if same else None
    if type_demand is not None:
        if all(c == hints.get("size_column") for c in demand):
            type_demand = np.repeat(type_demand[:, :1], num_resources, axis=1)
        else:
            type_demand = None  # the demand is not the rounded size: let the source derive nominal demands
    for key, col in (("type", type_col), ("weight", spec.get("weight")), ("reward_rate", spec.get("reward_rate"))):
        if col is not None:
            numeric_column(table, col, f"{field}.{key}")
    try:
        return table.to_source(
            demand,
            type=type_col,
            type_demand=type_demand,
            names=names,
            weight=spec.get("weight"),
            reward_rate=spec.get("reward_rate"),
        )
    except TraceFormatError as e:
        raise ScenarioError(field, str(e)) from None


def _load_table(spec: Mapping[str, Any], field: str, base: Path) -> TraceTable:
    """The trace table a ``kind: trace`` workload names (``format``, ``path`` and ``trace_dir`` relative to
    the scenario file's folder ``base``, the loader's ``filters``); errors under ``<field>.<key>``."""
    fmt = choice(spec["format"], f"{field}.format", sorted(FORMATS))
    path = spec.get("path")
    if path is not None:
        if not isinstance(path, str):
            raise ScenarioError(f"{field}.path", f"expected a file or directory name, got {path!r}")
        path = Path(path).expanduser()
        if not path.is_absolute():
            path = base / path
    trace_dir = spec.get("trace_dir")
    if trace_dir is not None:
        trace_dir = Path(str(trace_dir)).expanduser()
        if not trace_dir.is_absolute():
            trace_dir = base / trace_dir
    filters = spec.get("filters") or {}
    if not isinstance(filters, Mapping):
        raise ScenarioError(f"{field}.filters", f"expected a mapping, got {type(filters).__name__}")
    try:
        return load_trace(fmt, path, trace_dir=trace_dir, **filters)
    except TraceFormatError as e:
        raise ScenarioError(f"{field}.path", str(e)) from None
    except ScenarioError as e:
        if e.field == "trace_dir":
            raise ScenarioError(f"{field}.{'path' if path is not None else 'trace_dir'}", e.problem) from None
        sub = e.field if e.field.startswith("filters.") else f"filters.{e.field}"
        raise ScenarioError(f"{field}.{sub}", e.problem) from None


def _demand_columns(spec: Mapping[str, Any], field: str, table: TraceTable, num_resources: int) -> list[str]:
    """The table's columns of the jobs' demands, one per resource: ``demand``, or the trace's own resources."""
    if "demand" in spec:
        demand = spec["demand"]
    elif len(table.resources) == num_resources:
        demand = list(table.resources)
    elif num_resources == 1 and "size" in table.jobs.columns:
        demand = ["size"]
    else:
        raise ScenarioError(
            f"{field}.demand",
            f"missing: the scenario has {num_resources} resources and the "
            f"trace's are {list(table.resources)}; name {num_resources} columns "
            f"of {list(table.jobs.columns)}",
        )
    if isinstance(demand, str):
        demand = [demand]
    if not isinstance(demand, list) or not all(isinstance(c, str) for c in demand):
        raise ScenarioError(f"{field}.demand", f"expected a list of column names, got {demand!r}")
    if len(demand) != num_resources:
        raise ScenarioError(
            f"{field}.demand",
            f"expected {num_resources} columns (one per resource), got {demand} "
            f"(the table has {list(table.jobs.columns)})",
        )
    return demand
