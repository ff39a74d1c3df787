"""``clustergym reproduce --out DIR``: every finished episode kept on the driver as it arrives.

A paper-scale claim is hours of CPU on a cluster (docs/performance.md); a lost node costs nothing
(Ray runs its episodes again), and with ``--out DIR`` a lost driver costs only the episodes still
running: each finished episode's row is appended to ``DIR/episodes.jsonl`` (flushed and fsynced)
under its cell's identity, and the same command (or any other) with the same ``--out`` takes the
kept rows instead of running those episodes again.

The identity of an episode is its cell's (:func:`clustergym.runner.journal.cell_id`: scenario,
parameters, agent, seed, horizon, agent parameters) with its environment id and its probes (each
one's function by import path, its times and its target).  Cells whose scenario is a
:class:`~clustergym.scenarios.Scenario` object are not kept (a name does not identify it): they run.

Rows are written in a tagged JSON form that gives back exactly what the episode returned -- NumPy
arrays and scalars with their dtypes, tuples, dicts with non-string keys, NaN and infinities -- so
a claim computed from kept rows measures what it measures from fresh ones; a row holding anything
else is not kept (its episode runs again).  Reading a kept file never executes code from it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from clustergym.errors import ConfigError
from clustergym.runner import Cell
from clustergym.runner.journal import atomic_write, cell_id, check_writable

__all__ = ["EPISODES_FILE", "KeptEpisodes", "decode", "encode", "episode_key"]

EPISODES_FILE = "episodes.jsonl"


class _Unkept(TypeError):
    """A value the tagged form does not hold."""


def encode(x: Any) -> Any:
    """``x`` as tagged JSON values (see the module docstring); :class:`TypeError` for anything else."""
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, (int, float)) and type(x) in (int, float):
        return x
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "biuf":
            raise _Unkept(f"an array of dtype {x.dtype}")
        return {"__array__": x.dtype.str, "shape": list(x.shape), "v": x.ravel().tolist()}
    if isinstance(x, (np.bool_, np.integer, np.floating)):
        return {"__scalar__": x.dtype.str, "v": x.item()}
    if isinstance(x, tuple):
        return {"__tuple__": [encode(v) for v in x]}
    if isinstance(x, list):
        return [encode(v) for v in x]
    if isinstance(x, dict):
        return {"__dict__": [[encode(k), encode(v)] for k, v in x.items()]}
    raise _Unkept(f"a value of type {type(x).__name__}")


def decode(x: Any) -> Any:
    """The value :func:`encode` was given (only the tags above are read: no code runs)."""
    if isinstance(x, list):
        return [decode(v) for v in x]
    if not isinstance(x, dict):
        return x
    if "__array__" in x:
        return np.array(x["v"], dtype=np.dtype(x["__array__"])).reshape(x["shape"])
    if "__scalar__" in x:
        return np.dtype(x["__scalar__"]).type(x["v"])
    if "__tuple__" in x:
        return tuple(decode(v) for v in x["__tuple__"])
    return {_key(decode(k)): decode(v) for k, v in x["__dict__"]}


def _key(k: Any) -> Any:
    return tuple(_key(v) for v in k) if isinstance(k, (tuple, list)) else k


def episode_key(cell: Cell) -> str | None:
    """The episode's identity (see the module docstring); ``None`` for a cell that is not kept."""
    if not isinstance(cell.scenario, str):
        return None
    probes = [[name, f"{p.fn.__module__}:{p.fn.__qualname__}", list(p.at), p.of] for name, p in cell.probes]
    try:
        return json.dumps([json.loads(cell_id(cell)), cell.env, probes])
    except (TypeError, ValueError, ConfigError):  # a parameter JSON cannot hold: not kept
        return None


class KeptEpisodes:
    """The episodes kept in a folder (``DIR/episodes.jsonl``), by :func:`episode_key`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        check_writable(self.path, "--out")
        self.file = self.path / EPISODES_FILE
        self.rows: dict[str, Any] = {}
        lines = self.file.read_text(encoding="utf-8").split("\n") if self.file.is_file() else []
        good = []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                self.rows[str(entry["key"])] = entry["row"]
            except (ValueError, KeyError, TypeError) as e:
                if n >= len(lines) - 1:  # the last line, cut by an interruption: that episode runs again
                    continue
                raise ConfigError("--out", f"{self.file}: line {n} is damaged ({e}); remove it") from None
            good.append(line + "\n")
        if len(good) != sum(1 for line in lines if line.strip()) or (lines and lines[-1].strip()):
            atomic_write(self.file, lambda tmp: tmp.write_text("".join(good), encoding="utf-8"))  # drop a cut line

    def get(self, key: str | None) -> dict[str, Any] | None:
        """The kept row of ``key`` (decoded), or ``None``."""
        return decode(self.rows[key]) if key is not None and key in self.rows else None

    def add(self, key: str | None, row: dict[str, Any]) -> None:
        """Keep ``row`` under ``key`` (one line, flushed and fsynced); a row the tagged form cannot
        hold, or an episode already kept, is left out."""
        if key is None or key in self.rows:
            return
        try:
            enc = encode(row)
        except _Unkept:
            return
        with open(self.file, "a", encoding="utf-8") as f:
            f.write(json.dumps({"key": key, "row": enc}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.rows[key] = enc
