"""The generalization track: zero-shot scores at other loads, other cluster sizes and a second real trace.

Procgen-style (Cobbe et al., "Leveraging procedural generation to benchmark reinforcement learning",
ICML 2020): the track declares a TRAIN distribution and TEST points, in code (here) and in
``docs/generalization.md``; a general policy trains on the first and is scored, zero-shot, on the
second, against every registered baseline scored at each test point and normalized against that
point's own reference (random 0, the point's best non-oracle baseline 1, as the main suite does).

Load and size factors multiply the task's own load and number of servers (:data:`TRACK_TASKS`
says how each task expresses them):

* **train** (:data:`TRAIN_LOADS` x :data:`TRAIN_SIZES`): loads 0.8, 1.0, 1.2 and sizes 0.8, 1.0,
  1.5 times the task's: a grid on even tenths of load and inside [0.8, 1.5] of size, the task itself
  among its nine points; ``clustergym train TASK`` visits it as curriculum stages
  (:func:`train_stages`), one stage per point, the task itself last;
* **test** (:data:`TEST_LOADS` at the task's size, :data:`TEST_SIZES` at its load): loads 0.7, 0.9,
  1.1, 1.3 (odd tenths: between and beyond the train loads, never on them) and sizes 0.5, 2, 10 (outside
  the train sizes' range), plus the real-trace task :data:`GOOGLE_TASKS` (the Google 2011 cluster
  data, where no model of the suite trains).  Each test point's servers and rates differ from every
  train point's (a test checks it); the track's seeds (:data:`TRACK_SEEDS`) are neither the suite's
  evaluation seeds nor ``clustergym train``'s.

Tasks: ``rms-trap``, ``autoscale-syn4`` and ``mris-poisson``, where both a load and a size are
parameters of the scenario; not ``bfjs-uniform`` (five servers: half is not a whole number) nor
``lotes-hetero`` (one machine of each of ten configurations: half drops configurations, so the
instance changes, not its size) nor ``azure-vms`` (a trace: its load is the trace's; the second trace
stands for it).

Seeds per point (:func:`point_seeds`): 5 at the loads and at sizes 0.5 and 2, 2 at size 10 (an
episode there costs ten times the task's): the whole reference in about 20 CPU minutes.  The track's
reference (``generalization.json``, :func:`build_track_reference`) is the main reference's
document per point, with the track's version stamp (:data:`TRACK_VERSION`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from clustergym.errors import ClusterGymError, ConfigError
from clustergym.suite.tasks import SUITE_VERSION, TASKS, Task

__all__ = [
    "GOOGLE_TASKS",
    "TEST_LOADS",
    "TEST_SIZES",
    "TRACK",
    "TRACK_PATH",
    "TRACK_SEEDS",
    "TRACK_TASKS",
    "TRACK_VERSION",
    "TRAIN_LOADS",
    "TRAIN_SIZES",
    "Point",
    "load_track_reference",
    "point_agents",
    "point_seeds",
    "register_track",
    "select_points",
    "test_points",
    "train_points",
    "train_stages",
]

#: the track's name (``clustergym benchmark --track generalization``)
TRACK = "generalization"
#: the track's version: a change of its points, seeds or tasks makes a new one (and a new reference)
TRACK_VERSION = 1
#: the shipped reference of the track's test points
TRACK_PATH = Path(__file__).with_name("generalization.json")
#: the train distribution: load factors x size factors (a uniform grid, the task itself among them)
TRAIN_LOADS: tuple[float, ...] = (0.8, 1.0, 1.2)
TRAIN_SIZES: tuple[float, ...] = (0.8, 1.0, 1.5)
#: the test points: load factors at the task's size, size factors at the task's load
TEST_LOADS: tuple[float, ...] = (0.7, 0.9, 1.1, 1.3)
TEST_SIZES: tuple[float, ...] = (0.5, 2.0, 10.0)
#: the track's evaluation seeds (each point runs the first :func:`point_seeds` of them)
TRACK_SEEDS = range(3_000_000, 3_000_100)
#: seeds per point, and at the largest size (an episode there costs ten times the task's)
SEEDS_PER_POINT = 5
SEEDS_LARGEST = 2


def _rms(load: float, size: float) -> dict[str, Any]:
    """``bf-trap``: the load is the arrival rates (20.8, 10.4 on 10 servers: RMS §III, Fig. 1b), which
    scale with the servers to keep the load per server."""
    n = round(10 * size)
    return {"queue_cap": None, "num_servers": n, "rate1": 20.8 * load * n / 10, "rate2": 10.4 * load * n / 10}


def _autoscale(load: float, size: float) -> dict[str, Any]:
    """``autoscale-4vm``: ``load`` multiplies the SYN4 rates per server (Sec. 7.1), 10 servers."""
    return {"num_servers": round(10 * size), "load": 1.0 * load}


def _mris(load: float, size: float) -> dict[str, Any]:
    """``mris-poisson``: ``load`` is each resource's offered load (0.8; MRIS Sec. 3 model), 4 machines."""
    return {"num_servers": round(4 * size), "load": 0.8 * load}


#: the tasks of the track and how each expresses a load factor and a size factor as preset parameters
TRACK_TASKS: dict[str, Callable[[float, float], dict[str, Any]]] = {
    "rms-trap": _rms,
    "autoscale-syn4": _autoscale,
    "mris-poisson": _mris,
}

#: the second real trace: Google 2011 tasks, built like ``azure-vms`` (a random thinned window per
#: seed, the tasks running at its start placed by first-fit before the first decision); a test point only
GOOGLE_TASKS = Task(
    name="google-tasks",
    paper="trace",
    section="Google cluster data 2011-2 (the shared 19.5-hour slice); the RMS model §II",
    title="A random thinned 4-hour window of Google tasks, (CPU, memory), on twelve unit servers",
    preset="google-tasks",
    params=(),
    horizon=14_400.0,
    time_unit=600.0,
    action_mode="slot",
    reward_scale=5e-3,
    max_episode_steps=8000,
    warm_start="first-fit",
    needs_traces=True,
    start="the tasks running at the window's start arrive at time 0 and first-fit places them before the first "
    "decision, as in azure-vms",
    why="real bursts (the slice's offered CPU ranges from 0.3 to 1.3 of the servers over two-hour stretches) and "
    "continuous two-resource demands: a test of policies trained elsewhere",
)


@dataclass(frozen=True)
class Point:
    """One point of the track: a task at a load factor and a size factor (or the real-trace task).

    Attributes:
        name: ``<task>-load<factor>`` or ``<task>-size<factor>`` (``google-tasks`` for the trace).
        base: the suite task it derives from (``google-tasks``: itself).
        load: the load factor (x the task's load).
        size: the size factor (x the task's servers).
        task: the point's :class:`Task`: the base task's preset with the point's parameters, its
            own Gymnasium id ``clustergym/<name>-v1``, its step bound scaled with its decisions.
        seeds: how many of :data:`TRACK_SEEDS` its reference runs.
    """

    name: str
    base: str
    load: float
    size: float
    task: Task
    seeds: int


def _point(base: str, load: float, size: float, name: str) -> Point:
    t = TASKS[base]
    params = {**dict(t.params), **TRACK_TASKS[base](load, size)}
    steps = int(math.ceil(t.max_episode_steps * size * max(load, 1.0)))
    pt = replace(t, name=name, params=tuple(params.items()), max_episode_steps=steps)
    return Point(name, base, load, size, pt, point_seeds(size))


def point_seeds(size: float) -> int:
    """Seeds of a point's reference: :data:`SEEDS_PER_POINT`, :data:`SEEDS_LARGEST` at size 10."""
    return SEEDS_LARGEST if size >= 10 else SEEDS_PER_POINT


def test_points() -> list[Point]:
    """The track's test points: per task, the loads at its size, then the sizes at its load; then the trace."""
    pts = []
    for base in TRACK_TASKS:
        pts += [_point(base, lf, 1.0, f"{base}-load{lf:g}") for lf in TEST_LOADS]
        pts += [_point(base, 1.0, sf, f"{base}-size{sf:g}") for sf in TEST_SIZES]
    pts.append(Point(GOOGLE_TASKS.name, GOOGLE_TASKS.name, 1.0, 1.0, GOOGLE_TASKS, SEEDS_PER_POINT))
    return pts


def train_points(base: str) -> list[Point]:
    """The train distribution of ``base`` (a task of :data:`TRACK_TASKS`): its nine (load, size) points."""
    if base not in TRACK_TASKS:
        raise ConfigError("task", f"{base!r} is not a task of the generalization track ({', '.join(TRACK_TASKS)})")
    return [_point(base, lf, sf, f"{base}-train-load{lf:g}-size{sf:g}") for lf in TRAIN_LOADS for sf in TRAIN_SIZES]


#: the order the stages visit the train grid (load index, size index): consecutive stages change both
#: the load and the size, so no stretch of training sees one of them fixed; the task itself (1, 1) last
_STAGE_ORDER = ((0, 0), (2, 2), (1, 0), (0, 2), (2, 1), (1, 2), (0, 1), (2, 0))


def train_stages(base: str, steps: int) -> list[str]:
    """``clustergym train``'s ``--stage`` arguments that visit the train distribution of ``base``:
    ``steps`` steps at each train point but the task itself (in :data:`_STAGE_ORDER`), which the run's
    remaining steps train on.
    The preset parameters the task fixes itself (its ``params``) are not repeated."""
    own = dict(TASKS[base].params)
    pts = train_points(base)
    out = []
    for i, j in _STAGE_ORDER:
        p = pts[i * len(TRAIN_SIZES) + j]
        changed = {k: v for k, v in p.task.params if own.get(k, object()) != v}
        out.append(f"{steps}:" + ",".join(f"{k}={v:g}" for k, v in changed.items()))
    return out


def register_track() -> list[str]:
    """Register every test point's Gymnasium id (idempotent; :func:`clustergym.suite.make_task_env` with
    the point's :class:`Task`), so worker processes build the points' environments by id."""
    from gymnasium.envs.registration import register, registry

    ids = []
    for p in test_points():
        if p.task.id not in registry:
            register(
                id=p.task.id,
                entry_point="clustergym.suite.env:make_task_env",
                kwargs={"task": p.task},
                max_episode_steps=p.task.max_episode_steps,
                disable_env_checker=False,
            )
        ids.append(p.task.id)
    return ids


def select_points(tasks: Sequence[str] | None = None, *, explicit_traces: bool = False) -> tuple[list[Point], dict]:
    """The test points of ``tasks`` (task names of :data:`TRACK_TASKS` or ``google-tasks``; default all)
    and why each point left out is (the trace point without the traces).

    Raises:
        ConfigError: a name that is no task of the track, or ``google-tasks`` named without the traces.
    """
    from clustergym.suite.reference import traces_available

    known = [*TRACK_TASKS, GOOGLE_TASKS.name]
    names = list(known) if tasks is None else list(dict.fromkeys(tasks))
    bad = [n for n in names if n not in known]
    if bad:
        raise ConfigError(
            "--tasks", f"{bad[0]!r} is not a task of the generalization track; its tasks are {', '.join(known)}"
        )
    skipped: dict[str, str] = {}
    if GOOGLE_TASKS.name in names and not traces_available():
        if tasks is not None:
            raise ConfigError(
                "--tasks", "google-tasks needs the real traces; set CLUSTERGYM_TRACES to the trace directory"
            )
        skipped[GOOGLE_TASKS.name] = "needs the real traces (set CLUSTERGYM_TRACES to the trace directory)"
        names.remove(GOOGLE_TASKS.name)
    return [p for p in test_points() if p.base in names], skipped


def point_agents(p: Point) -> tuple[list[str], dict[str, str]]:
    """The agents of the point's reference (random first) and the reason each other one is left out
    (incompatible with the point's scenario, or left out of its base task's reference; on the trace
    point, those left out of ``azure-vms``'s for starting from an empty system, as its warm start does not)."""
    from clustergym.runner import compatible_agents
    from clustergym.suite.reference import EXCLUDED

    ok, skipped = compatible_agents(p.task.scenario())
    if p.base == GOOGLE_TASKS.name:
        excluded = {k: v for k, v in EXCLUDED["azure-vms"].items() if not k.startswith("rms")}
    else:
        excluded = EXCLUDED.get(p.base, {})
    skipped.update({a: why for a, why in excluded.items() if a in ok})
    ok = [a for a in ok if a not in excluded and a != "random"]
    return ["random", *ok], skipped


def point_cells(p: Point, agents: Sequence[str], seeds: int | None = None) -> list[Any]:
    """The point's episodes: every agent on its first ``seeds`` (default: its own count) track seeds."""
    from clustergym.suite.reference import task_cells

    n = p.seeds if seeds is None else min(seeds, p.seeds)
    return task_cells(p.task, agents, TRACK_SEEDS[:n])


def point_entry(p: Point, rows: Sequence[dict[str, Any]], skipped: dict[str, str]) -> dict[str, Any]:
    """A point's entry of the track's reference: the main reference's entry (:func:`task_entry`) plus
    the point's base task, load and size factors, parameters and seeds."""
    from clustergym.suite.reference import summarize_task, task_entry

    seeds = sorted({int(r["seed"]) for r in rows})
    wall = sum(float(r.get("wall_seconds", 0.0)) for r in rows)
    entry = task_entry(p.task, summarize_task(p.task, rows, seeds), skipped, wall)
    return {"base": p.base, "load": p.load, "size": p.size, "params": dict(p.task.params), "seeds": seeds, **entry}


def track_document(entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The track's reference document from its points' entries, with its version stamp."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("clustergym")
    except PackageNotFoundError:
        ours = "0+unknown"
    order = [p.name for p in test_points()]
    return {
        "track": TRACK,
        "track_version": TRACK_VERSION,
        "suite_version": SUITE_VERSION,
        "train": {"loads": list(TRAIN_LOADS), "sizes": list(TRAIN_SIZES)},
        "test": {"loads": list(TEST_LOADS), "sizes": list(TEST_SIZES), "trace": GOOGLE_TASKS.name},
        "points": {n: entries[n] for n in order if n in entries},
        "generated": {"clustergym": ours, "command": "clustergym benchmark --track generalization --reference"},
    }


def load_track_reference(path: str | Path | None = None) -> dict[str, Any]:
    """The track's reference document (default: the shipped one); one of another track version is refused.

    Raises:
        ClusterGymError: no document there, or not the track's current version.
    """
    p = Path(path) if path is not None else TRACK_PATH
    if not p.is_file():
        raise ClusterGymError(
            f"{p}: no generalization-track reference there; regenerate it with "
            "`clustergym benchmark --track generalization --reference --out DIR`"
        )
    doc = json.loads(p.read_text())
    if doc.get("track") != TRACK or doc.get("track_version") != TRACK_VERSION:
        raise ClusterGymError(
            f"{p}: track {doc.get('track')!r} version {doc.get('track_version')!r}, not {TRACK!r} version "
            f"{TRACK_VERSION}: regenerate it with `clustergym benchmark --track generalization --reference --out DIR`"
        )
    return dict(doc)


@dataclass
class TrackPlan:
    """The track's episodes, planned before the first runs (:func:`plan_track`).

    ``cells``: every point's cells, point after point; ``spans[name]``: the ``(start, stop)`` of the
    point's cells; ``agents[name]``: the agents run there (the reference's: random first, or the
    specs scored) and ``skipped``: ``point`` or ``point/agent`` -> why it does not run."""

    points: list[Point]
    cells: list[Any]
    spans: dict[str, tuple[int, int]]
    agents: dict[str, list[str]]
    skipped: dict[str, str]
    seeds: int | None


def plan_track(
    specs: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    *,
    seeds: int | None = None,
    decoding: str | None = None,
    queue_window: int | None = None,
) -> TrackPlan:
    """The episodes of the track: of its reference (``specs`` ``None``: every compatible baseline at
    every point) or of ``specs`` (agents or saved models) at every point they run at.  ``seeds``: at
    most that many of each point's seeds (default: the point's own count, :func:`point_seeds`).
    ``decoding`` and ``queue_window``: every model's, as in :func:`clustergym.suite.scoring.evaluate`.

    Raises:
        ConfigError: a bad task, seed count, agent or model path; specs that run at no point.
    """
    from clustergym.suite.scoring import agent_params, check_agent
    from clustergym.validation import settings

    if seeds is not None:
        settings.number(seeds, "--seeds", lo=1, hi=SEEDS_PER_POINT, integer=True)
    points, skipped = select_points(tasks)
    cells: list[Any] = []
    spans: dict[str, tuple[int, int]] = {}
    agents: dict[str, list[str]] = {}
    for p in points:
        if specs is None:
            agents[p.name], why = point_agents(p)
            skipped.update({f"{p.name}/{a}": w for a, w in why.items()})
        else:
            agents[p.name] = []
            for spec in specs:
                why_not = check_agent(spec, p.task, agent_params(spec, decoding, queue_window))
                if why_not is None:
                    agents[p.name].append(spec)
                else:
                    skipped[f"{p.name}/{spec}"] = why_not
        start = len(cells)
        for a in agents[p.name]:
            params = tuple(agent_params(a, decoding, queue_window).items())
            cells += [replace(c, agent_params=params) for c in point_cells(p, [a], seeds)]
        spans[p.name] = (start, len(cells))
    if not cells:
        raise ConfigError(
            "agent",
            "no point of the track the agents can run at: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()),
        )
    return TrackPlan(points, cells, spans, agents, skipped, seeds)


def summarize_track_reference(plan: TrackPlan, rows: Sequence[dict[str, Any] | None]) -> dict[str, Any]:
    """The track's reference document from the rows of a reference plan's cells (in plan order);
    points whose episodes are not all there are left out (a run in progress)."""
    entries = {}
    for p in plan.points:
        start, stop = plan.spans[p.name]
        got = [r for r in rows[start:stop] if r is not None]
        if len(got) == stop - start:
            why = {k.split("/", 1)[1]: v for k, v in plan.skipped.items() if k.startswith(p.name + "/")}
            entries[p.name] = point_entry(p, got, why)
    return track_document(entries)


def _method(
    name: str, rows: list[dict[str, Any]], specs: Sequence[str], entry: dict[str, Any]
) -> dict[str, Any] | None:
    """The specs at one point as the runs (training seeds) of one method, as the main report reads the
    specs benchmarked together (:func:`clustergym.suite.report.method_report`): the normalized score and
    the paired difference with the point's best non-oracle baseline, their intervals from the two-level
    bootstrap over runs and evaluation seeds, the verdict, and each run on its own.  No bound: the papers'
    bounds are the main tasks'.  ``None`` when the point's episodes do not cover two seeds for a run."""
    from clustergym.suite.report import method_report

    done = {int(r["seed"]) for r in rows}
    result = {"seeds": [s for s in entry["seeds"] if s in done], "specs": list(specs), "rows": rows}
    one = method_report(name, result, entry, entry["seeds"], None)
    return None if one is None else one[0]


def summarize_track_scores(
    plan: TrackPlan, rows: Sequence[dict[str, Any]], specs: Sequence[str], reference: dict[str, Any]
) -> dict[str, Any]:
    """The specs' scores at every point, each normalized against the point's own reference, with the
    main report's interval and paired difference with the point's best non-oracle baseline on the
    same seeds (:func:`clustergym.suite.scoring._run_summary`); and, per point, the specs as the runs of
    one method (``"method"``, :func:`_method`): intervals over training seeds and episodes together."""
    from clustergym.suite.scoring import _run_summary

    out: dict[str, Any] = {"track": TRACK, "track_version": TRACK_VERSION, "specs": list(specs), "points": {}}
    for p in plan.points:
        entry = reference["points"].get(p.name)
        if entry is None:
            plan.skipped[p.name] = "no reference for it (clustergym benchmark --track generalization --reference)"
            continue
        start, stop = plan.spans[p.name]
        prow = [
            {
                "task": p.name,
                "agent": r["agent"],
                "seed": r["seed"],
                "score": r["task"]["score"],
                "complete": r["task"]["complete"],
            }
            for r in rows[start:stop]
        ]
        runs = {}
        for spec in plan.agents[p.name]:
            mine = [r for r in prow if r["agent"] == spec]
            seeds = [int(r["seed"]) for r in mine]
            runs[spec] = _run_summary([r["score"] for r in mine], seeds, entry, prow, p.name, spec, entry["seeds"])
        out["points"][p.name] = {
            **{k: entry[k] for k in ("base", "load", "size", "metric", "random", "best", "best_score")},
            **{k: entry[k] for k in ("best_oracle", "best_oracle_score")},
            "seeds": min((len(r["scores"]) for r in runs.values()), default=0),
            "runs": runs,
            "method": _method(p.name, prow, plan.agents[p.name], entry),
        }
    out["skipped"] = dict(plan.skipped)
    return out
