"""The transform pipeline of ``kind: trace`` workloads: named transforms applied to a table, in order.

Each entry of a scenario file's ``transforms`` list names one of the pure functions of
:mod:`clustergym.traces.transforms` with its arguments (see :func:`apply_transforms`); the
pipeline also returns the hints (type column, type demands, names) that the replay source needs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from clustergym.errors import ScenarioError
from clustergym.traces import transforms as T
from clustergym.traces.table import TraceTable
from clustergym.validation import number

PathLike = str | os.PathLike[str]

__all__ = ["apply_transforms", "numeric_column", "TRANSFORMS"]

# ---------------------------------------------------------------------------------------------- transforms on tables

def numeric_column(table: TraceTable, name: Any, field: str) -> np.ndarray:
    if not isinstance(name, str) or name not in table.jobs.columns:
        raise ScenarioError(field, f"no column {name!r}; columns are {list(table.jobs.columns)}")
    v = table.jobs[name]
    if not pd.api.types.is_numeric_dtype(v):
        raise ScenarioError(field, f"column {name!r} is not numeric")
    return v.to_numpy(dtype=np.float64)


def apply_transforms(table: TraceTable, transforms: Any, field: str = "transforms") -> tuple[TraceTable, dict[str, Any]]:
    """Apply a list of transforms (scenario-file form) to a table, in order.

    Each item is a one-key mapping ``{name: arguments}``:

    ``rms_type: {columns: [cpu, memory], p_max: 9, as: size, type_as: type}``
        type p = min over columns of p(x); ``as`` = 2^-p; sets power-of-1/2 ``type_demand``.
    ``round_up_pow_half: {column: cpu, p_max: 9, as: cpu}``
    ``max_of: {columns: [cpu, memory], as: size}``
    ``clamp_min: {column: size, min: 0.001}``
    ``scale: {column: cpu, factor: 0.01, as: cpu}`` (unit conversion)
    ``kmeans: {columns: [cpu, memory], k: 4, fit_hours: 24, seed: 0, standardize: false, as: class}``
    ``priority_map: {map: autoscale-factor | {"0-1": 1, ...}, column: priority, as: weight, times: size}``
    ``scale_arrivals: {traffic_scaling: 1.25}``
    ``window: {start: 0, end: 3600}`` (seconds on ``arrival``)
    ``first_n: 1000``
    ``rebase: {}`` (arrivals start at 0)

    Returns:
        the new table and hints for the source: ``type_demand`` and ``names`` when ``rms_type`` ran.

    Raises:
        ScenarioError: naming ``<field>[i].<name>.<argument>``.
    """
    hints: dict[str, Any] = {}
    if transforms is None:
        return table, hints
    if not isinstance(transforms, list):
        raise ScenarioError(field, f"expected a list of {{name: arguments}} items, got {type(transforms).__name__}")
    for i, item in enumerate(transforms):
        f = f"{field}[{i}]"
        if not isinstance(item, Mapping) or len(item) != 1:
            raise ScenarioError(f, f"expected a mapping with one transform name, got {item!r}")
        name, args = next(iter(item.items()))
        f = f"{f}.{name}"
        if name not in TRANSFORMS:
            raise ScenarioError(f, f"unknown transform; expected one of {sorted(TRANSFORMS)}")
        fn, allowed = TRANSFORMS[name]
        if name == "first_n" and not isinstance(args, Mapping):
            args = {"n": args}
        args = {} if args is None else args
        if not isinstance(args, Mapping):
            raise ScenarioError(f, f"expected a mapping of arguments, got {args!r}")
        for k in args:
            if k not in allowed:
                raise ScenarioError(f"{f}.{k}", f"unknown argument; expected one of {sorted(allowed)}")
        try:
            table = fn(table, dict(args), f, hints)
        except ScenarioError as e:
            if e.field.startswith(f):
                raise
            raise ScenarioError(f"{f}.{e.field}" if e.field else f, e.problem) from None
    return table, hints


def _num_arg(args: Mapping[str, Any], key: str, f: str, default: Any = None, *, positive: bool = False) -> Any:
    v = args.get(key, default)
    if v is None:
        raise ScenarioError(f"{f}.{key}", "missing required argument")
    return number(v, f"{f}.{key}", lo=0.0 if positive else None, lo_open=True)


def _cols_arg(args: Mapping[str, Any], f: str, default: list[str]) -> list[str]:
    cols = args.get("columns", default)
    if isinstance(cols, str):
        cols = [cols]
    if not isinstance(cols, list) or not cols:
        raise ScenarioError(f"{f}.columns", f"expected a list of column names, got {cols!r}")
    return cols


def _t_rms_type(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    cols = _cols_arg(a, f, ["cpu", "memory"])
    p_max = int(_num_arg(a, "p_max", f, 9))
    p = T.rms_type(*[numeric_column(t, c, f"{f}.columns") for c in cols], p_max=p_max)
    out, tcol = str(a.get("as", "size")), str(a.get("type_as", "type"))
    hints["type_demand"] = T.pow_half_type_demand(p_max)
    hints["names"] = T.pow_half_names(p_max)
    hints["type_column"] = tcol
    hints["size_column"] = out
    return t.replace(t.jobs.assign(**{out: np.ldexp(1.0, -p), tcol: p}),
                     step=f"{out} = 2^-p, {tcol} = p = min over {cols} of min({p_max}, floor(log2(1/x)))")


def _t_round(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    c = a.get("column")
    p_max = int(_num_arg(a, "p_max", f, 9))
    out = str(a.get("as", c))
    return t.replace(t.jobs.assign(**{out: T.round_up_pow_half(numeric_column(t, c, f"{f}.column"), p_max)}),
                     step=f"{out} = {c} rounded up to a power of 1/2 (p <= {p_max})")


def _t_max(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    cols = _cols_arg(a, f, ["cpu", "memory"])
    out = str(a.get("as", "size"))
    return t.replace(t.jobs.assign(**{out: T.max_demand(*[numeric_column(t, c, f"{f}.columns") for c in cols])}),
                     step=f"{out} = max({', '.join(cols)})")


def _t_clamp(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    c = a.get("column")
    m = _num_arg(a, "min", f)
    v, n = T.clamp_min(numeric_column(t, c, f"{f}.column"), m)
    return t.replace(t.jobs.assign(**{str(c): v}), step=f"{c} raised to {m:g} where smaller",
                     modified={f"{c} raised to {m:g}": n})


def _t_scale(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    c = a.get("column")
    k = _num_arg(a, "factor", f, positive=True)
    out = str(a.get("as", c))
    return t.replace(t.jobs.assign(**{out: numeric_column(t, c, f"{f}.column") * float(k)}), step=f"{out} = {c} x {k:g}")


def _t_kmeans(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    default = ["cpu", "memory"] if {"cpu", "memory"} <= set(t.jobs.columns) else list(t.resources)
    cols = _cols_arg(a, f, default)
    k = int(_num_arg(a, "k", f, 4, positive=True))
    X = np.column_stack([numeric_column(t, c, f"{f}.columns") for c in cols])
    fit = None
    if "fit_hours" in a:
        fit = t.jobs["arrival"].to_numpy() < float(_num_arg(a, "fit_hours", f, positive=True)) * 3600.0
    labels, C = T.kmeans_classes(X, k, fit_mask=fit, seed=int(_num_arg(a, "seed", f, 0)),
                                 standardize=bool(a.get("standardize", False)))
    out = str(a.get("as", "class"))
    hints["type_column"] = out
    hints["names"] = tuple(f"class{j + 1}" for j in range(k))
    hints.pop("type_demand", None)
    return t.replace(t.jobs.assign(**{out: labels}), step=f"{out} = k-means (k={k}) on {cols}; centroids {C.tolist()}")


def _t_priority(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    mapping = a.get("map")
    if mapping is None:
        raise ScenarioError(f"{f}.map", "missing required argument (a map name or a mapping)")
    c = a.get("column", "priority")
    v = T.map_priority(numeric_column(t, c, f"{f}.column"), mapping)
    if "times" in a:
        v = v * numeric_column(t, a["times"], f"{f}.times")
    out = str(a.get("as", "weight"))
    return t.replace(t.jobs.assign(**{out: v}), step=f"{out} = map({c}, {mapping})" +
                     (f" x {a['times']}" if "times" in a else ""))


def _t_scale_arrivals(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    s = _num_arg(a, "traffic_scaling", f, positive=True)
    return t.replace(t.jobs.assign(arrival=T.scale_arrivals(t.jobs["arrival"].to_numpy(), s)),
                     step=f"arrivals divided by traffic_scaling = {s:g}")


def _t_window(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    lo, hi = a.get("start"), a.get("end")
    for key, v in (("start", lo), ("end", hi)):
        number(v, f"{f}.{key}", allow_none=True)
    df, n = T.window(t.jobs, lo, hi)
    return t.replace(df, step=f"window [{lo}, {hi}) s on arrival", dropped={f"outside the window [{lo}, {hi}) s": n})


def _t_first_n(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    n = number(a.get("n"), f, lo=1, integer=True)
    df, d = T.first_n(t.jobs, n)
    return t.replace(df, step=f"the first {n} arrivals", dropped={f"after the first {n} arrivals": d})


def _t_rebase(t: TraceTable, a: dict, f: str, hints: dict) -> TraceTable:
    a0, o = T.rebase(t.jobs["arrival"].to_numpy())
    return t.replace(t.jobs.assign(arrival=a0), step=f"arrivals shifted by -{o:g} s", origin=t.origin + o)


TRANSFORMS: dict[str, tuple[Callable[[TraceTable, dict, str, dict], TraceTable], set[str]]] = {
    "rms_type": (_t_rms_type, {"columns", "p_max", "as", "type_as"}),
    "round_up_pow_half": (_t_round, {"column", "p_max", "as"}),
    "max_of": (_t_max, {"columns", "as"}),
    "clamp_min": (_t_clamp, {"column", "min"}),
    "scale": (_t_scale, {"column", "factor", "as"}),
    "kmeans": (_t_kmeans, {"columns", "k", "fit_hours", "seed", "standardize", "as"}),
    "priority_map": (_t_priority, {"map", "column", "as", "times"}),
    "scale_arrivals": (_t_scale_arrivals, {"traffic_scaling"}),
    "window": (_t_window, {"start", "end"}),
    "first_n": (_t_first_n, {"n"}),
    "rebase": (_t_rebase, set()),
}

