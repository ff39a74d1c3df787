"""Paper claims checked by ``clustergym reproduce``.

Each claim is a function that measures something and compares it with what the paper states; it
reports ``id, paper, claim, measured, expected, passed``.  The modules of this package register
claims with :func:`claim`, one module per paper (:mod:`.rms`, :mod:`.bfjs`, :mod:`.autoscale`,
:mod:`.lotes`, :mod:`.mris`); the short seeded versions run in the test suite.

Every episode of a claim is a :class:`~clustergym.runner.Cell` run by the runner
(:func:`episodes`, i.e. :func:`clustergym.runner.run_rows`): serially, on local worker processes
or on Ray, with the same rows in every case.  Episodes shared between claims (the EC2 grid of the
RMS paper's Figs. 3-5, the LoTES runs, the MRIS trace runs) run once per process: :data:`RUNS`
is the one memo of the package, keyed by the cell.

How a run is made is a :class:`ReproduceConfig`, given to every claim function: ``workers``,
``ray``, ``scale`` (a factor on simulated horizons) and the per-paper :data:`SETTINGS`
(``clustergym reproduce --set lotes.machines=100``).  The defaults give the documented figures.
"""

from __future__ import annotations

import importlib
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import yaml

from clustergym.errors import ClusterGymError, ConfigError
from clustergym.runner import Cell, run_rows

__all__ = [
    "CLAIMS",
    "RUNS",
    "SETTINGS",
    "Claim",
    "ReproduceConfig",
    "Setting",
    "claim",
    "episodes",
    "load_claims",
    "run_claims",
]


# ============================================================================================ settings
@dataclass(frozen=True)
class Setting:
    """A size knob of one paper's claims (``--set name=value``).

    ``kind`` is ``int``, ``float`` or ``floats`` (a list, ``[0.5,1]`` or ``0.5,1``); values must be
    at least ``minimum`` (``above``: strictly above it).  ``paper`` is the value at the paper's own
    size (``None``: the default already is), taken with :attr:`ReproduceConfig.paper_scale`.
    """

    name: str
    default: Any
    kind: str
    minimum: float
    help: str
    above: bool = False
    paper: Any = None

    def parse(self, value: Any) -> Any:
        """The value checked and normalised (``floats`` as a tuple); :class:`ConfigError` if bad."""

        def bad(why: str) -> ConfigError:
            return ConfigError(self.name, f"{why}, got {value!r} ({self.help})")

        def number(v: Any, kind: type) -> Any:
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating, str)):
                raise bad(f"expected {'an integer' if kind is int else 'a number'}")
            try:
                x = float(v)
            except ValueError:
                raise bad(f"expected {'an integer' if kind is int else 'a number'}") from None
            if not math.isfinite(x) or (kind is int and x != int(x)):
                raise bad(f"expected {'an integer' if kind is int else 'a finite number'}")
            if x < self.minimum or (self.above and x == self.minimum):
                raise bad(f"expected a value {'>' if self.above else '>='} {self.minimum:g}")
            return int(x) if kind is int else x

        if self.kind == "floats":
            items = value.split(",") if isinstance(value, str) else value
            if isinstance(items, (int, float, np.integer, np.floating)) and not isinstance(items, bool):
                items = [items]  # one value (``--set rms.google_scalings=1.5`` reads as a number)
            if not isinstance(items, (list, tuple)) or not items:
                raise bad("expected a non-empty list of numbers such as 0.5,1,1.5")
            return tuple(number(v.strip() if isinstance(v, str) else v, float) for v in items)
        return number(value, int if self.kind == "int" else float)


#: every ``--set`` knob, by name; the defaults give the documented figures
SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting(
            "rms.google_n",
            10_000,
            "int",
            0,
            "rms-fig8: the first N tasks of the Google slice; 0 = all 288k (hours of CPU)",
            paper=0,
        ),
        Setting(
            "rms.google_scalings",
            (0.5, 1.0, 1.5),
            "floats",
            0,
            "rms-fig8: the traffic scalings 1/alpha (a finer grid: 0.5,0.75,1,1.25,1.5)",
            above=True,
            paper=(0.5, 0.75, 1.0, 1.25, 1.5),  # the paper states no grid: the finer one over Fig. 8's range
        ),
        Setting(
            "lotes.machines", 50, "int", 1, "LoTES generated data: machines per configuration (paper: 1000)", paper=1000
        ),
        Setting(
            "lotes.horizon",
            6.0,
            "float",
            0,
            "LoTES generated data: hours per run (paper: 100)",
            above=True,
            paper=100.0,
        ),
        Setting("lotes.instances", 2, "int", 1, "LoTES generated data: instances per Phi (paper: 5)", paper=5),
        Setting("lotes.google_n", 0, "int", 0, "lotes-google-*: the first N trace attempts; 0 = all"),
        Setting(
            "autoscale.google_servers",
            300,
            "int",
            1,
            "autoscale-google-trace-ordering: unit servers (Fig. 6 of the paper shows 1000)",
            paper=1000,
        ),
        Setting(
            "autoscale.google_n",
            60_000,
            "int",
            0,
            "autoscale-google-trace-ordering: the first N completed tasks; 0 = the whole slice",
            paper=0,
        ),
    )
}


@dataclass(frozen=True)
class ReproduceConfig:
    """How the claims run.

    Attributes:
        workers: local worker processes for the episodes (1: in this process).
        ray: a Ray address (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``): episodes on that cluster.
        scale: multiplies the simulated horizons of the simulation claims that have one (RMS,
            BF-J/S, auto-scaling, LoTES generated data; trace replays and exact instances are not
            scaled); below 1 for a quick look, the verdicts then mean little.
        progress: one line on stderr per finished episode.
        settings: values of :data:`SETTINGS` (the others keep their defaults).
        paper_scale: every setting not in ``settings`` at the paper's size (:attr:`Setting.paper`:
            LoTES §5.4's 10 x 1000 machines, 100 h and 5 instances; RMS Fig. 8's whole Google slice;
            the auto-scaling trace at 1000 servers): CPU-hours per claim, a job for a Ray cluster
            (docs/performance.md has the cost per point).
        out: a folder where every finished episode is kept as it arrives
            (:mod:`clustergym.reproduce.kept`); episodes kept there are not run again.
    """

    workers: int = 1
    ray: str | None = None
    scale: float = 1.0
    progress: bool = False
    settings: Mapping[str, Any] = field(default_factory=dict)
    paper_scale: bool = False
    out: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.workers, bool) or not isinstance(self.workers, (int, np.integer)) or self.workers < 1:
            raise ConfigError("workers", f"expected an integer >= 1, got {self.workers!r}")
        try:
            scale = float(self.scale)
        except (TypeError, ValueError):
            raise ConfigError("scale", f"expected a number > 0, got {self.scale!r}") from None
        if not (math.isfinite(scale) and scale > 0):
            raise ConfigError("scale", f"expected a finite number > 0, got {self.scale!r}")
        unknown = sorted(set(self.settings) - set(SETTINGS))
        if unknown:
            raise ConfigError(unknown[0], f"unknown setting; known: {', '.join(SETTINGS)}")
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "settings", {k: SETTINGS[k].parse(v) for k, v in self.settings.items()})

    def get(self, name: str) -> Any:
        """The value of the setting ``name``: as set, else the paper's with ``paper_scale``, else its default."""
        if name in self.settings:
            return self.settings[name]
        setting = SETTINGS[name]
        return setting.paper if self.paper_scale and setting.paper is not None else setting.default

    @staticmethod
    def parse_sets(items: Sequence[str]) -> dict[str, Any]:
        """``key=value`` strings (``--set``) as a dict of settings (values read as YAML scalars or lists)."""
        out: dict[str, Any] = {}
        for item in items:
            key, eq, raw = item.partition("=")
            if not eq or not key.strip():
                raise ConfigError(
                    "set", f"{item!r}: expected key=value, e.g. lotes.machines=100; settings: {', '.join(SETTINGS)}"
                )
            try:
                out[key.strip()] = yaml.safe_load(raw) if raw.strip() else raw
            except yaml.YAMLError:
                out[key.strip()] = raw
        return out


# ============================================================================================ claims
@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    text: str
    check: Callable[[ReproduceConfig], tuple[Any, Any, bool]]  #: returns (measured, expected, passed)


CLAIMS: dict[str, Claim] = {}
#: the claim modules, one per paper (importing one registers its claims)
_MODULES = tuple(f"clustergym.reproduce.{paper}" for paper in ("rms", "bfjs", "autoscale", "lotes", "mris"))


def claim(id: str, paper: str, text: str) -> Callable[[Callable[[ReproduceConfig], tuple[Any, Any, bool]]], Callable]:
    """Decorator registering a claim check, a function of the :class:`ReproduceConfig`."""

    def deco(fn: Callable[[ReproduceConfig], tuple[Any, Any, bool]]) -> Callable:
        CLAIMS[id] = Claim(id, paper, text, fn)
        return fn

    return deco


def load_claims() -> None:
    """Import the modules that register claims."""
    for mod in _MODULES:
        importlib.import_module(mod)


def run_claims(ids: list[str], config: ReproduceConfig | None = None) -> list[dict[str, Any]]:
    """Run the claims ``ids`` in order with ``config`` (default: :class:`ReproduceConfig` ())."""
    load_claims()
    config = config if config is not None else ReproduceConfig()
    unknown = [i for i in ids if i not in CLAIMS]
    if unknown:
        raise ClusterGymError(f"unknown claim(s) {unknown}; known: {sorted(CLAIMS)}")
    results = []
    for i in ids:
        c = CLAIMS[i]
        t0 = time.perf_counter()
        measured, expected, passed = c.check(config)
        results.append(
            {
                "id": c.id,
                "paper": c.paper,
                "claim": c.text,
                "measured": measured,
                "expected": expected,
                "passed": bool(passed),
                "wall_seconds": round(time.perf_counter() - t0, 3),
            }
        )
    return results


# ============================================================================================ episodes
#: rows of the episodes run in this process, by cell: claims that need the same episode share it
RUNS: dict[Cell, dict[str, Any]] = {}


def episodes(
    cells: Sequence[Cell], config: ReproduceConfig, *, cost: Callable[[Cell], float] | None = None
) -> list[dict[str, Any]]:
    """The rows of ``cells``' episodes, in cell order, run by the runner as ``config`` says; an
    episode already run in this process (:data:`RUNS`), or kept in ``config.out``
    (:mod:`clustergym.reproduce.kept`, where each one finished here is kept as it arrives), is not
    run again.

    ``cost`` (an estimate of a cell's run time) only orders the work on several workers, the
    longest first, which packs them better; the rows and their order do not depend on it.
    """
    cells = list(cells)
    order = list(range(len(cells)))
    if cost is not None and (config.workers > 1 or config.ray is not None):
        order.sort(key=lambda i: -cost(cells[i]))
    done, total = [0], _new_runs(cells)

    def tick(agent: str, seed: int) -> None:
        done[0] += 1
        print(f"[reproduce] episode {done[0]}/{total} done: {agent}, seed {seed}", file=sys.stderr, flush=True)

    ordered = [cells[i] for i in order]
    kept, keys, kept_rows = _kept(config, ordered)
    total -= len(kept_rows)
    rows = run_rows(
        ordered,
        workers=config.workers,
        ray=config.ray,
        memo=RUNS,
        progress=tick if config.progress else None,
        done=kept_rows,
        on_row=(lambda j, row: kept.add(keys[j], row)) if kept is not None else None,
    )
    out: list[dict[str, Any]] = [{}] * len(cells)
    for i, row in zip(order, rows):
        out[i] = row
    return out


def _kept(config: ReproduceConfig, cells: list[Cell]) -> tuple[Any, list[str | None], dict[int, dict[str, Any]]]:
    """The kept episodes of ``config.out`` (none without it), each cell's key, and the rows kept of ``cells``."""
    if config.out is None:
        return None, [], {}
    from clustergym.reproduce.kept import KeptEpisodes, episode_key

    kept = _KEPT.get(config.out)
    if kept is None:
        kept = _KEPT[config.out] = KeptEpisodes(config.out)
    keys = [episode_key(c) for c in cells]
    done = {j: row for j, row in ((j, kept.get(k)) for j, k in enumerate(keys)) if row is not None}
    return kept, keys, done


#: the kept-episode folders opened by this process, by path
_KEPT: dict[str, Any] = {}


def _new_runs(cells: list[Cell]) -> int:
    """How many of ``cells`` will run (the others are in :data:`RUNS`, or repeat an earlier cell)."""
    seen: set[Cell] = set()
    n = 0
    for c in cells:
        try:
            if c in RUNS or c in seen:
                continue
            seen.add(c)
        except TypeError:  # not a memo key: it runs
            pass
        n += 1
    return n
