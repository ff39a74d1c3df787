"""Scenario files: YAML or JSON, validated with errors that name the field.

Two forms.  A preset with parameters::

    preset: ec2
    params: {zeta: 0.95, num_servers: 20}
    horizon: 500            # optional overrides of any top-level field below

or a full definition::

    name: my-cluster
    description: two server kinds, typed Poisson jobs
    resources: [cpu, memory]
    servers:
      - {count: 8, capacity: [32, 128]}
      - {count: 2, capacity: [64, 512]}
    workload:
      kind: poisson-typed           # poisson-typed | poisson | slotted | replay
      types:
        - {name: small, rate: 4.0, demand: [2, 8], service: {dist: exponential, mean: 1.0}}
        - {name: large, rate: 1.0, demand: [16, 64], service: {dist: lognormal, mean: 2.0, sigma: 1.0},
           weight: 2.0, reward_rate: 5.0}
      time_scale: 1.0               # multiplies arrival times (alpha; traffic scaling is 1/alpha)
    horizon: 1000
    objective: queue                # queue | system | weighted-system | reward
    queueing: central               # central | local | loss
    routing: jsq                    # local queues: jsq | power-of-two | random | agent
    epochs: {arrivals: true, completions: true, tick_rate: 0, tick_period: 0, tick_offset: 0}
    queue_cap: 100000              # default: 100000 (as the presets) for an endless workload, none for
                                  # a trace or replay (it drains); null: no cap
    impossible: reject              # reject | error
    clairvoyant: false
    job_memory: full                # full | bounded (finished jobs' rows released; p99_wait estimated)
    warmup: 0                       # metrics over [warmup, horizon] and the jobs arriving from warmup on

``poisson`` takes ``rate``, ``demand`` (a demand distribution) and ``service``;
``slotted`` takes ``rate_per_slot``, ``demand``, ``service`` (whole slots) and
``slot``; ``replay`` takes ``file`` (CSV, relative to the scenario file) and
``columns`` (``arrival``, ``duration``, ``demand: [..]``, optional ``type``,
``weight``, ``reward_rate``); ``trace`` reads a real trace with a loader of
:mod:`clustergym.traces` (``format``, ``path``, ``trace_dir``, ``filters``,
``transforms``, ``demand``, ``type``, ``weight``, ``reward_rate``; see
:func:`clustergym.traces.formats.trace_workload_from_spec` and docs/traces.md).  ``servers[i].speed`` (one number per job type)
sets machine-dependent service rates.

YAML is read with the YAML 1.2 core schema (:func:`_load_yaml`): ``1:30``, ``1_000``, ``yes`` and
``on`` are strings, not YAML 1.1's 90, 1000 and true; ``0o10`` is octal; ``010`` is an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from clustergym.core.jobs import JOB_MEMORY_MODES
from clustergym.core.objectives import OBJECTIVES
from clustergym.core.simulator import QUEUEING_MODES, ROUTINGS, EpochConfig
from clustergym.core.source import is_finite
from clustergym.errors import ScenarioError, TraceFormatError
from clustergym.scenarios.registry import make_preset
from clustergym.scenarios.spec import DEFAULT_QUEUE_CAP, MAX_SERVERS, Scenario
from clustergym.validation import boolean, choice, is_number, mapping, number, vector
from clustergym.workloads import (
    PoissonSource,
    PoissonTypedSource,
    ReplaySource,
    SlottedSource,
    TimeScaled,
    demand_from_spec,
    service_from_spec,
)

__all__ = ["load_scenario_file", "scenario_from_dict"]

_OVERRIDABLE = (
    "horizon",
    "objective",
    "queueing",
    "routing",
    "epochs",
    "queue_cap",
    "impossible",
    "clairvoyant",
    "job_memory",
    "warmup",
)

_TOP = {
    "name",
    "description",
    "resources",
    "servers",
    "workload",
    *_OVERRIDABLE,
    "preset",
    "params",
}


def load_scenario_file(path: str | Path) -> Scenario:
    """Read a ``.yaml``/``.yml``/``.json`` scenario file.

    Raises:
        ScenarioError: the file is unreadable, not valid YAML/JSON, or a field is
            malformed (the message names the field, prefixed by the file name).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ScenarioError("", f"{path}: cannot read the scenario file ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raw = path.read_bytes()
        line = raw.count(b"\n", 0, e.start) + 1
        raise ScenarioError(
            "",
            f"{path}: line {line}: not UTF-8 text (byte {raw[e.start]:#04x} at offset "
            f"{e.start}); scenario files are UTF-8 YAML or JSON",
        ) from None
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
        else:
            data = _load_yaml(text)
    except ScenarioError as e:
        raise ScenarioError(e.field, f"{e.problem} (in {path})") from None
    except Exception as e:  # yaml.YAMLError, json.JSONDecodeError
        raise ScenarioError(
            "", f"{path}: not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'}: {e}"
        ) from None
    try:
        return scenario_from_dict(data, base_dir=path.parent, default_name=path.stem)
    except ScenarioError as e:
        raise ScenarioError(e.field, f"{e.problem} (in {path})") from None


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """JSON objects: a key given twice is an error (json.loads would keep the last one)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ScenarioError(str(k), "given twice in one object (which one was meant?)")
        out[k] = v
    return out


#: YAML 1.2 core schema's plain scalars (PyYAML implements YAML 1.1, where ``1:30`` is 90, ``010`` is
#: 8 and ``yes``/``no``/``on``/``off`` are booleans): (tag, pattern, first characters)
_CORE_SCHEMA = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
)


def _load_yaml(text: str) -> Any:
    """YAML read with the YAML 1.2 core schema (:data:`_CORE_SCHEMA`): ``1:30``, ``1_000``, ``yes``,
    ``on`` are strings (a number or boolean field then names the value), ``0o10`` is octal and
    ``0x10`` hexadecimal; a decimal with a leading zero (``010``: 8 in YAML 1.1, 10 in 1.2) is an
    error, as is a key given twice in one mapping (PyYAML would silently keep the last one)."""
    import re

    import yaml

    class Loader(yaml.SafeLoader):
        yaml_implicit_resolvers: dict[Any, Any] = {}

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in seen:
                        raise ScenarioError(
                            str(key), f"given twice in one mapping (lines {seen[key]} and {line}; which one was meant?)"
                        )
                    seen[key] = line
                except TypeError:  # an unhashable key: the base class reports it
                    break
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node: Any) -> int:
            text = str(self.construct_scalar(node))
            if text.startswith(("0o", "0x")):
                return int(text[2:], 8 if text[1] == "o" else 16)
            digits = text.lstrip("+-")
            if len(digits) > 1 and digits.startswith("0"):
                raise ScenarioError(
                    text,
                    f"a number with a leading zero (line {node.start_mark.line + 1}) is octal in YAML 1.1 "
                    f"and decimal in YAML 1.2: write {int(text)} (or 0o{digits.lstrip('0')} for octal)",
                )
            return int(text)

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    for tag, pattern, first in _CORE_SCHEMA:
        Loader.add_implicit_resolver(tag, re.compile(pattern), list(first))
    return yaml.load(text, Loader=Loader)


def scenario_from_dict(data: Any, *, base_dir: str | Path = ".", default_name: str = "scenario") -> Scenario:
    """Build a scenario from the file format (see the module docstring)."""
    d = mapping(data, "", _TOP)
    if "preset" in d:
        extra = set(d) - {"preset", "params", *_OVERRIDABLE}
        if extra:
            raise ScenarioError(sorted(extra)[0], "not allowed together with 'preset' (only params and overrides)")
        params = d.get("params", {}) or {}
        if not isinstance(params, Mapping):
            raise ScenarioError("params", f"expected a mapping, got {type(params).__name__}")
        try:
            base = make_preset(str(d["preset"]), **params)
        except ScenarioError as e:
            raise ScenarioError("preset" if e.field == "scenario" else e.field, e.problem) from None
        return _apply_overrides(base, d)
    if "params" in d:
        raise ScenarioError("params", "only allowed together with 'preset'")
    mapping(d, "", _TOP, required=("resources", "servers", "workload", "horizon"))
    resources = d["resources"]
    if not isinstance(resources, list) or not resources or not all(isinstance(r, str) for r in resources):
        raise ScenarioError("resources", f"expected a non-empty list of names, got {resources!r}")
    R = len(resources)
    source = _workload(d["workload"], R, Path(base_dir))
    J = source.types.num_types
    capacity, speed = _servers(d["servers"], R, J)
    horizon = number(d["horizon"], "horizon", lo=0.0, lo_open=True, allow_inf=True)
    base = Scenario(
        name=str(d.get("name", default_name)),
        capacity=capacity,
        source=source,
        resources=tuple(resources),
        horizon=horizon,
        speed=speed,
        description=str(d.get("description", "")),
        # an endless workload gets the presets' cap (a run whose queue grows past it stops, flagged unstable);
        # a trace drains, so it has none; `queue_cap: null` removes the cap
        queue_cap=None if is_finite(source) else DEFAULT_QUEUE_CAP,
    )
    return _apply_overrides(base, d)


def _apply_overrides(base: Scenario, d: Mapping[str, Any]) -> Scenario:
    from dataclasses import replace

    kw: dict[str, Any] = {}
    if "horizon" in d:
        kw["horizon"] = number(d["horizon"], "horizon", lo=0.0, lo_open=True, allow_inf=True)
    if "objective" in d:
        kw["objective"] = choice(d["objective"], "objective", OBJECTIVES)
    if "queueing" in d:
        kw["queueing"] = choice(d["queueing"], "queueing", QUEUEING_MODES)
    if "routing" in d:
        kw["routing"] = choice(d["routing"], "routing", ROUTINGS)
    if "epochs" in d:
        e = mapping(
            d["epochs"],
            "epochs",
            {"arrivals", "completions", "dummy_completions", "tick_rate", "tick_period", "tick_offset"},
        )
        args: dict[str, Any] = {}
        for k in ("arrivals", "completions", "dummy_completions"):
            if k in e:
                args[k] = boolean(e[k], f"epochs.{k}")
        for k in ("tick_rate", "tick_period", "tick_offset"):
            if k in e:
                args[k] = number(e[k], f"epochs.{k}", lo=0.0)
        kw["epochs"] = EpochConfig(**args)
    if "queue_cap" in d:
        kw["queue_cap"] = number(d["queue_cap"], "queue_cap", lo=1, integer=True, allow_none=True)
    if "impossible" in d:
        kw["impossible"] = choice(d["impossible"], "impossible", ("reject", "error"))
    if "clairvoyant" in d:
        kw["clairvoyant"] = boolean(d["clairvoyant"], "clairvoyant")
    if "job_memory" in d:
        kw["job_memory"] = choice(d["job_memory"], "job_memory", JOB_MEMORY_MODES)
    if "warmup" in d:
        kw["warmup"] = number(d["warmup"], "warmup", lo=0.0)
    return replace(base, **kw) if kw else base


def _servers(value: Any, R: int, J: int) -> tuple[np.ndarray, np.ndarray | None]:
    if not isinstance(value, list) or not value:
        raise ScenarioError("servers", f"expected a non-empty list of server groups, got {value!r}")
    caps, speeds, any_speed, total = [], [], False, 0
    for i, g in enumerate(value):
        f = f"servers[{i}]"
        mapping(g, f, {"count", "capacity", "speed"}, required=("capacity",))
        count = number(g.get("count", 1), f"{f}.count", lo=1, integer=True)
        total += count
        if total > MAX_SERVERS:  # checked before the (count, R) arrays are allocated
            raise ScenarioError(f"{f}.count", f"{total:,} servers in all exceed the limit of {MAX_SERVERS:,}")
        cap = vector(g["capacity"], f"{f}.capacity", R, lo=0.0)
        if "speed" in g:
            any_speed = True
            sp = g["speed"]
            if is_number(sp):
                sp = [sp] * J
            s = vector(sp, f"{f}.speed", J, lo=0.0, lo_open=True, what="(one per job type)")
        else:
            s = np.ones(J)
        caps.append(np.tile(cap, (count, 1)))
        speeds.append(np.tile(s, (count, 1)))
    return np.vstack(caps), (np.vstack(speeds) if any_speed else None)


def _workload(value: Any, R: int, base_dir: Path):
    w = mapping(
        value,
        "workload",
        {
            "kind",
            "types",
            "rate",
            "demand",
            "service",
            "rate_per_slot",
            "slot",
            "file",
            "columns",
            "time_scale",
            "weight",
            "reward_rate",
            "format",
            "path",
            "trace_dir",
            "filters",
            "transforms",
            "type",
        },
        required=("kind",),
    )
    kind = choice(w["kind"], "workload.kind", ("poisson-typed", "poisson", "slotted", "replay", "trace"))
    if kind == "trace":
        from clustergym.scenarios.trace_spec import trace_workload_from_spec

        source: Any = trace_workload_from_spec(w, "workload", R, base_dir)
        if "time_scale" in w:
            source = TimeScaled(source, number(w["time_scale"], "workload.time_scale", lo=0.0, lo_open=True))
        return source
    if kind == "poisson-typed":
        types = w.get("types")
        if not isinstance(types, list) or not types:
            raise ScenarioError("workload.types", "expected a non-empty list of job types")
        rates, demands, services, weights, rewards, names = [], [], [], [], [], []
        for j, t in enumerate(types):
            f = f"workload.types[{j}]"
            mapping(
                t,
                f,
                {"name", "rate", "demand", "service", "weight", "reward_rate"},
                required=("rate", "demand", "service"),
            )
            rates.append(number(t["rate"], f"{f}.rate", lo=0.0))
            demands.append(vector(t["demand"], f"{f}.demand", R, lo=0.0))
            services.append(service_from_spec(t["service"], f"{f}.service"))
            weights.append(number(t.get("weight", 1.0), f"{f}.weight", lo=0.0))
            rewards.append(number(t.get("reward_rate", 1.0), f"{f}.reward_rate", lo=0.0))
            names.append(str(t.get("name", f"type{j}")))
        source = PoissonTypedSource(
            rates, np.array(demands), services, weights=weights, reward_rates=rewards, names=names
        )
    elif kind in ("poisson", "slotted"):
        rate_key = "rate" if kind == "poisson" else "rate_per_slot"
        for k in (rate_key, "demand", "service"):
            if k not in w:
                raise ScenarioError(f"workload.{k}", f"missing required field for kind {kind!r}")
        rate = number(w[rate_key], f"workload.{rate_key}", lo=0.0)
        demand = demand_from_spec(w["demand"], "workload.demand", R)
        service = service_from_spec(w["service"], "workload.service")
        weight = number(w.get("weight", 1.0), "workload.weight", lo=0.0)
        reward = number(w.get("reward_rate", 1.0), "workload.reward_rate", lo=0.0)
        if kind == "poisson":
            source = PoissonSource(rate, demand, service, weight=weight, reward_rate=reward)
        else:
            slot = number(w.get("slot", 1.0), "workload.slot", lo=0.0, lo_open=True)
            try:
                source = SlottedSource(rate, demand, service, slot=slot, weight=weight, reward_rate=reward)
            except ScenarioError as e:
                raise ScenarioError(f"workload.{e.field}", e.problem) from None
    else:
        source = _replay(w, R, base_dir)
    if "time_scale" in w:
        source = TimeScaled(source, number(w["time_scale"], "workload.time_scale", lo=0.0, lo_open=True))
    return source


def _replay(w: Mapping[str, Any], R: int, base_dir: Path):
    import pandas as pd

    if "file" not in w:
        raise ScenarioError("workload.file", "missing required field for kind 'replay'")
    cols = mapping(
        w.get("columns", {}), "workload.columns", {"arrival", "duration", "demand", "type", "weight", "reward_rate"}
    )
    path = Path(w["file"])
    if not path.is_absolute():
        path = base_dir / path
    demand_cols = cols.get("demand", [f"demand{r}" for r in range(R)])
    if not isinstance(demand_cols, list) or len(demand_cols) != R:
        raise ScenarioError(
            "workload.columns.demand", f"expected {R} column names (one per resource), got {demand_cols!r}"
        )
    try:
        df = pd.read_csv(path)
    except FileNotFoundError:
        raise ScenarioError("workload.file", f"no such file: {path}") from None
    except Exception as e:
        raise ScenarioError("workload.file", f"cannot read {path}: {e}") from None
    try:
        return ReplaySource.from_frame(
            df,
            demand_cols,
            time=cols.get("arrival", "arrival"),
            work=cols.get("duration", "duration"),
            type=cols.get("type"),
            weight=cols.get("weight"),
            reward_rate=cols.get("reward_rate"),
            source=str(path),
        )
    except TraceFormatError as e:
        raise ScenarioError("workload.file", str(e)) from None
