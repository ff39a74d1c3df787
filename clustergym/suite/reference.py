"""Reference scores: random and every compatible registered baseline on every task (``reference.json``).

For each task, every registered agent that can run on its scenario
(:func:`clustergym.runner.compatible_agents`, minus the task's documented exclusions) runs the
task's episodes -- through the task's own environment (``Cell.env``: the same start, the same
window) -- on the first :data:`~clustergym.suite.tasks.REFERENCE_SEEDS` evaluation seeds, as
runner cells (worker processes; the compiled path wherever it applies).  Each row's score is the
task's score (:func:`clustergym.suite.env.window_metrics`); the document keeps every seed's score,
the mean and its 95% Student-t half-width (:func:`clustergym.runner.mean_ci`) and whether the
agent is an oracle (``uses_oracle``: it reads what a learned agent does not get).

Normalized score (:func:`normalized`): ``(score - random) / (best - random)`` with ``best`` the best
non-oracle baseline's mean (random excluded), so random scores 0 and that baseline 1; the same
against the best oracle (``vs_oracle``).  ``clustergym benchmark --reference --out DIR`` regenerates
the document (``--tasks`` some of its tasks) into ``DIR/reference.json`` (:func:`plan_reference`,
every episode kept in ``DIR/cells.jsonl``, then :func:`summarize_reference`; ``--resume DIR``
continues it); the packaged table changes
only with ``clustergym benchmark --update-packaged DIR/reference.json`` (:func:`update_packaged`,
which refuses to shrink it).
"""

from __future__ import annotations

import json
import math
import platform
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from clustergym.errors import ClusterGymError, ConfigError
from clustergym.runner import Cell, Probe, compatible_agents, mean_ci, plan, run_rows
from clustergym.suite.env import window_metrics
from clustergym.suite.tasks import (
    DEFAULT_SPLIT,
    REFERENCE_SEEDS,
    SUITE_VERSION,
    TASKS,
    Task,
    check_split,
    eval_seeds,
)
from clustergym.suite.tasks import task as get_task

__all__ = [
    "EXCLUDED",
    "REFERENCE_PATH",
    "REFERENCE_PATHS",
    "ReferencePlan",
    "build_reference",
    "load_reference",
    "markdown",
    "normalized",
    "plan_reference",
    "reference_agents",
    "reference_table",
    "summarize_reference",
    "summarize_task",
    "task_cells",
    "task_rows",
    "traces_available",
    "update_packaged",
    "write_reference",
]

#: the shipped reference scores
REFERENCE_PATH = Path(__file__).with_name("reference.json")
#: the shipped reference scores of each split
REFERENCE_PATHS: dict[str, Path] = {
    "validation": REFERENCE_PATH,
    "test": Path(__file__).with_name("reference_test.json"),
}

#: agents left out of a task's reference, with the reason (they pass the compatibility check but
#: cannot finish an episode in reasonable time)
_RMS = ("rms", "rms-ad", "rms-bf", "rms-bf-ad", "rms-less-wasteful", "rms-rf", "rms-rf-ad", "rms-rf-ad-plus")
EXCLUDED: dict[str, dict[str, str]] = {
    "azure-vms": {
        **{
            name: "RMS enumerates the maximal configurations of the six flavours on a (64 vCPU, 256 GB) host "
            "(RMS §II): too many for an episode in minutes"
            for name in _RMS
        },
        **{
            name: "a slotted-time agent (BF-J/S paper) that keeps its own record of the cluster from an empty "
            "system: the VMs the warm start placed are not in it"
            for name in ("bf-j", "bf-js", "bf-s", "fifo-ff", "vqs", "vqs-bf")
        },
        **{
            name: "MRIS plans from an empty system on an interval grid anchored at time 0: after the warm start it "
            "misses its first boundary"
            for name in ("mris", "mris-greedy", "mris-wsvf")
        },
    },
}


def traces_available() -> bool:
    """Whether the real traces can be found (``trace_dir``, ``$CLUSTERGYM_TRACES`` or the user data folder: :func:`clustergym.traces.paths.resolve_trace_dir`)."""
    from clustergym.traces.paths import TraceNotFoundError, trace_path

    try:
        trace_path("azure", ".")
    except TraceNotFoundError:
        return False
    return True


def task_cells(t: Task, agents: Sequence[str], seeds: Iterable[int]) -> list[Cell]:
    """One cell per (agent, seed): the task's episode, scored by the ``task`` probe.  The cells are
    :func:`clustergym.runner.plan`'s, so an agent registered in this process (not in clustergym)
    travels to the worker processes with its cell."""
    probe = (("task", Probe(window_metrics)),)
    return [
        replace(c, env=t.id, probes=probe)
        for c in plan(t.preset, agents, seeds=seeds, horizon=t.horizon, params=dict(t.params))
    ]


def reference_agents(t: Task) -> tuple[list[str], dict[str, str]]:
    """The agents of the task's reference (random first) and the reason each other one is left out."""
    ok, skipped = compatible_agents(t.scenario())
    excluded = EXCLUDED.get(t.name, {})
    skipped.update({a: why for a, why in excluded.items() if a in ok})
    ok = [a for a in ok if a not in excluded]
    if "random" in ok:
        ok.remove("random")
    return ["random", *ok], skipped


def task_rows(
    t: Task,
    agents: Sequence[str],
    seeds: Iterable[int],
    *,
    workers: int | None = 1,
    progress: Callable[[str, int], None] | None = None,
) -> list[dict[str, Any]]:
    """The rows of the task's cells (see :func:`task_cells`), each with its ``task`` probe."""
    return run_rows(task_cells(t, agents, seeds), workers=workers, progress=progress)


def summarize_task(t: Task, rows: Sequence[dict[str, Any]], seeds: Sequence[int]) -> dict[str, Any]:
    """Per agent: ``scores`` (one per seed, in seed order), ``mean``, ``ci95``, ``oracle``, ``steps``
    (mean), ``complete`` (episodes that reached the window's end)."""
    by_agent: dict[str, dict[int, dict[str, Any]]] = {}
    for r in rows:
        by_agent.setdefault(r["agent"], {})[int(r["seed"])] = r
    out: dict[str, Any] = {}
    for agent, per_seed in by_agent.items():
        scores = [float(per_seed[s]["task"]["score"]) for s in seeds]
        mean, half = mean_ci(scores)
        out[agent] = {
            "oracle": bool(any(per_seed[s]["uses_oracle"] for s in seeds)),
            "mean": mean,
            "ci95": half,
            "scores": scores,
            "steps": sum(per_seed[s]["steps"] for s in seeds) / len(seeds),
            "complete": sum(bool(per_seed[s]["task"]["complete"]) for s in seeds),
        }
    return out


def _best(agents: dict[str, Any], oracle: bool) -> str | None:
    cands = [
        (a["mean"], name)
        for name, a in agents.items()
        if name != "random" and a["oracle"] == oracle and math.isfinite(a["mean"])
    ]
    return min(cands, key=lambda c: (-c[0], c[1]))[1] if cands else None  # ties: the first name


def task_entry(t: Task, agents: dict[str, Any], skipped: dict[str, str], wall: float) -> dict[str, Any]:
    """A task's entry of the reference document."""
    from clustergym.core.objectives import objective

    obj = objective(t.scenario().objective)
    best, best_oracle = _best(agents, False), _best(agents, True)
    return {
        "id": t.id,
        "paper": t.paper,
        "metric": obj.metric,
        "sign": obj.sign,
        "horizon": t.horizon,
        "random": agents["random"]["mean"],
        "best": best,
        "best_score": agents[best]["mean"] if best else None,
        "best_oracle": best_oracle,
        "best_oracle_score": agents[best_oracle]["mean"] if best_oracle else None,
        "agents": dict(sorted(agents.items(), key=lambda kv: -kv[1]["mean"])),
        "skipped": skipped,
        "wall_seconds": wall,
    }


@dataclass(frozen=True)
class ReferencePlan:
    """Every episode of a reference, planned before the first one runs (:func:`plan_reference`).

    ``cells``: every task's cells (:func:`task_cells`), task after task; ``spans[name]``: the
    ``(start, stop)`` of the task's cells in ``cells``; ``agents[name]``: the task's agents (random
    first) and the reason each other one is left out (:func:`reference_agents`)."""

    split: str
    seeds: list[int]
    cells: list[Cell]
    spans: dict[str, tuple[int, int]]
    agents: dict[str, tuple[list[str], dict[str, str]]]


def plan_reference(
    tasks: Sequence[str] | None = None, *, seeds: int = REFERENCE_SEEDS, split: str = DEFAULT_SPLIT
) -> ReferencePlan:
    """The episodes of the reference of ``tasks`` (default: all) on the first ``seeds`` seeds of
    ``split``; nothing runs.

    Raises:
        ConfigError: an unknown task or split, a seed count out of range, or a trace task without
            the traces.
    """
    names = list(TASKS) if tasks is None else [get_task(n).name for n in tasks]
    seed_list = eval_seeds(seeds, split)
    cells: list[Cell] = []
    spans: dict[str, tuple[int, int]] = {}
    agents: dict[str, tuple[list[str], dict[str, str]]] = {}
    for name in names:
        t = TASKS[name]
        if t.needs_traces and not traces_available():
            raise ConfigError(
                "tasks",
                f"task {name!r} needs the real traces; set CLUSTERGYM_TRACES to the trace "
                "directory (or leave it out with --tasks)",
            )
        agents[name] = reference_agents(t)
        start = len(cells)
        cells += task_cells(t, agents[name][0], seed_list)
        spans[name] = (start, len(cells))
    return ReferencePlan(check_split(split), seed_list, cells, spans, agents)


def summarize_reference(
    ref: ReferencePlan,
    rows: Sequence[dict[str, Any] | None],
    *,
    tasks: Iterable[str] | None = None,
    walls: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The reference document of ``tasks`` (default: every task of the plan) from ``rows``, the rows
    of ``ref.cells`` in plan order (a task's rows must all be there).  ``walls[name]``: the task's
    ``wall_seconds``; by default the sum of its episodes' ``wall_seconds`` (so the same rows, kept
    and resumed, give the same document)."""
    doc: dict[str, Any] = {"suite_version": SUITE_VERSION, "split": ref.split, "seeds": ref.seeds, "tasks": {}}
    for name in ref.spans if tasks is None else tasks:
        start, stop = ref.spans[name]
        task_rows_ = [r for r in rows[start:stop] if r is not None]
        if len(task_rows_) != stop - start:
            raise ValueError(f"task {name!r}: {stop - start - len(task_rows_)} of its episodes have no row")
        t = TASKS[name]
        wall = walls[name] if walls is not None else sum(float(r.get("wall_seconds", 0.0)) for r in task_rows_)
        doc["tasks"][name] = task_entry(t, summarize_task(t, task_rows_, ref.seeds), ref.agents[name][1], wall)
    return doc


def build_reference(
    tasks: Sequence[str] | None = None,
    *,
    seeds: int = REFERENCE_SEEDS,
    workers: int | None = None,
    progress: Callable[[str, str, int], None] | None = None,
    log: Callable[[str], None] | None = None,
    split: str = DEFAULT_SPLIT,
    ray: str | None = None,
) -> dict[str, Any]:
    """Run the reference of ``tasks`` (default: all; trace tasks need the traces) on the first
    ``seeds`` seeds of ``split`` and return the document (:func:`plan_reference`, then
    :func:`summarize_reference`; each task's ``wall_seconds`` is the time its episodes took here).
    ``workers`` local processes, or ``ray`` (a Ray address) for a cluster: the same document."""
    ref = plan_reference(tasks, seeds=seeds, split=split)
    rows: list[dict[str, Any]] = []
    walls: dict[str, float] = {}
    for name, (start, stop) in ref.spans.items():
        if log is not None:
            log(f"{name}: {len(ref.agents[name][0])} agents x {len(ref.seeds)} seeds")
        t0 = time.perf_counter()

        def tick(agent: str, seed: int, name: str = name) -> None:
            if progress is not None:
                progress(name, agent, seed)

        rows += run_rows(ref.cells[start:stop], workers=workers, ray=ray, progress=tick)
        walls[name] = time.perf_counter() - t0
    return summarize_reference(ref, rows, walls=walls)


def load_reference(path: str | Path | None = None, split: str = DEFAULT_SPLIT) -> dict[str, Any]:
    """The reference document (default: the shipped one of ``split``); a document written before the
    splits existed is the validation split's."""
    p = Path(path) if path is not None else REFERENCE_PATHS[check_split(split)]
    if not p.is_file():
        raise ClusterGymError(
            f"{p}: no reference scores there; regenerate them with "
            f"`clustergym benchmark --reference --split {split} --out DIR`"
        )
    doc = json.loads(p.read_text())
    doc.setdefault("split", "validation")
    return dict(doc)


def write_reference(doc: dict[str, Any], path: str | Path, *, merge: bool = True) -> Path:
    """Write ``doc`` to ``path`` (merged into the document already there when ``merge`` and the seeds
    and suite version agree), by temp-and-rename (never half a file, never through a symlink).

    ``path`` is required: the packaged table (:data:`REFERENCE_PATH`) changes only through
    :func:`update_packaged`, which refuses to shrink it."""
    from importlib.metadata import PackageNotFoundError, version

    from clustergym.runner.journal import atomic_write

    try:
        __version__ = version("clustergym")
    except PackageNotFoundError:
        __version__ = "0+unknown"
    p = Path(path)
    # each task records the version that scored it: a merged document may hold tasks of several versions
    doc = {
        **doc,
        "tasks": {n: {**e, "generated_by": e.get("generated_by", __version__)} for n, e in doc["tasks"].items()},
    }
    if merge and p.is_file():
        old = json.loads(p.read_text())
        split = doc.get("split", "validation")
        if (
            old.get("seeds") == doc["seeds"]
            and old.get("suite_version") == doc["suite_version"]
            and old.get("split", "validation") == split
        ):
            doc = {**old, "tasks": {**old.get("tasks", {}), **doc["tasks"]}}
    doc = {
        **doc,
        "tasks": {n: doc["tasks"][n] for n in TASKS if n in doc["tasks"]},
        "generated": {
            "clustergym": __version__,
            "python": platform.python_version(),
            "command": f"clustergym benchmark --reference --split {doc.get('split', 'validation')}",
        },
    }
    p.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=1, allow_nan=True) + "\n"
    atomic_write(p, lambda tmp: tmp.write_text(text))
    return p


def update_packaged(source: str | Path, target: str | Path | None = None) -> Path:
    """The maintainer's step: put the reference of ``source`` (a ``reference.json`` written by
    ``clustergym benchmark --reference --out DIR``) into the packaged table ``target``.

    Never shrinks it: with the same seeds, ``source``'s tasks replace those of ``target`` and the
    others stay; with more seeds (extending ``target``'s), ``source`` must hold every task of
    ``target``; fewer or other seeds, or another suite version, are refused.

    Raises:
        ConfigError: ``source`` is not a reference document, or it would shrink ``target``.
    """
    src = Path(source)
    try:
        new = json.loads(src.read_text())
        if not isinstance(new, dict) or not isinstance(new.get("tasks"), dict) or "seeds" not in new:
            raise TypeError("not a reference document (no seeds and tasks)")
    except (OSError, ValueError, TypeError, UnicodeDecodeError) as e:
        raise ConfigError("--update-packaged", f"{src}: {e}") from None
    if target is None:  # the packaged table of the source's split
        target = REFERENCE_PATHS[check_split(new.get("split", "validation"))]
    old = (
        load_reference(target)
        if Path(target).is_file()
        else {"seeds": new["seeds"], "tasks": {}, "split": new.get("split", "validation")}
    )
    if new.get("split", "validation") != old.get("split", "validation"):
        raise ConfigError(
            "--update-packaged",
            f"{src}: the {new.get('split', 'validation')} split's reference, the table is the "
            f"{old.get('split', 'validation')} split's",
        )
    oseeds, nseeds = list(old.get("seeds", [])), list(new["seeds"])
    if new.get("suite_version") != old.get("suite_version", new.get("suite_version")):
        raise ConfigError(
            "--update-packaged",
            f"{src}: suite version {new.get('suite_version')}, the table's is {old['suite_version']}",
        )
    if nseeds == oseeds:
        return write_reference(new, target, merge=True)
    if len(nseeds) > len(oseeds) and nseeds[: len(oseeds)] == oseeds:
        lost = sorted(set(old["tasks"]) - set(new["tasks"]))
        if lost:
            raise ConfigError(
                "--update-packaged",
                f"{src} has {len(nseeds)} seeds but not the tasks {', '.join(lost)}: the table would lose "
                "them (or mix seed counts); regenerate every task with these seeds",
            )
        return write_reference(new, target, merge=False)
    raise ConfigError(
        "--update-packaged",
        f"{src} has {len(nseeds)} seeds ({nseeds[:3]}...), the packaged table {len(oseeds)}: updating it would "
        "shrink it or mix seeds; regenerate with --seeds "
        f"{len(oseeds)} (or more)",
    )


def normalized(score: float, entry: dict[str, Any], *, oracle: bool = False) -> float:
    """``(score - random) / (best - random)``: 0 for random, 1 for the task's best non-oracle baseline
    (``oracle``: its best oracle; NaN without one)."""
    top = entry["best_oracle_score"] if oracle else entry["best_score"]
    if top is None or top == entry["random"]:
        return math.nan
    return (score - entry["random"]) / (top - entry["random"])


def reference_table(doc: dict[str, Any], top: int | None = None) -> list[dict[str, Any]]:
    """Rows ``task, agent, oracle, score, ci95, normalized, vs_oracle`` (best first; ``top`` per task)."""
    rows = []
    for name, entry in doc["tasks"].items():
        items = list(entry["agents"].items())
        if top is not None:
            keep = {n for n, _ in items[:top]} | {"random", entry["best"], entry["best_oracle"]}
            items = [(n, a) for n, a in items if n in keep]
        for agent, a in items:
            rows.append(
                {
                    "task": name,
                    "agent": agent,
                    "oracle": a["oracle"],
                    "score": a["mean"],
                    "ci95": a["ci95"],
                    "normalized": normalized(a["mean"], entry),
                    "vs_oracle": normalized(a["mean"], entry, oracle=True),
                }
            )
    return rows


def cell(x: Any, d: int = 4) -> str:
    """A number for a Markdown table: ``d`` significant digits, an en dash for a missing or non-finite one."""
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{d}g}"


def markdown(doc: dict[str, Any]) -> str:
    """The reference as Markdown: a summary table, then every agent of every task (docs/benchmark.md)."""
    f = cell

    lines = [
        (
            f"Scores on the {doc.get('split', 'validation')} split's {len(doc['seeds'])} reference seeds "
            f"({doc['seeds'][0]}–{doc['seeds'][-1]}): mean ± "
            "95% Student-t half-width; higher is better (costs are negated)."
        ),
        "",
        "| task | metric | random | best non-oracle baseline | best oracle | oracle, normalized |",
        "|---|---|---|---|---|---|",
    ]
    for name, e in doc["tasks"].items():
        a = e["agents"]
        best = f"`{e['best']}` {f(e['best_score'])} ± {f(a[e['best']]['ci95'], 2)}"
        orc = (
            f"`{e['best_oracle']}` {f(e['best_oracle_score'])} ± {f(a[e['best_oracle']]['ci95'], 2)}"
            if e["best_oracle"]
            else "–"
        )
        norm = f(normalized(e["best_oracle_score"], e), 3) if e["best_oracle"] else "–"
        lines.append(
            f"| `{name}` | {e['metric']} | {f(e['random'])} ± {f(a['random']['ci95'], 2)} | {best} | {orc} | {norm} |"
        )
    for name, e in doc["tasks"].items():
        lines += [
            "",
            (
                f"<details><summary><code>{name}</code>: all {len(e['agents'])} agents "
                f"({e['metric']}, sign {e['sign']:+g})</summary>"
            ),
            "",
            "| agent | oracle | score | 95% CI ± | normalized | vs best oracle | steps |",
            "|---|---|---|---|---|---|---|",
        ]
        for agent, a in e["agents"].items():
            lines.append(
                f"| `{agent}` | {'yes' if a['oracle'] else ''} | {f(a['mean'])} | {f(a['ci95'], 2)} | "
                f"{f(normalized(a['mean'], e), 3)} | {f(normalized(a['mean'], e, oracle=True), 3)} | "
                f"{a['steps']:.0f} |"
            )
        if e["skipped"]:
            lines += [
                "",
                "Not run: "
                + "; ".join(
                    f"`{k}` ({v.split(':')[-1].strip()})" if len(v) < 90 else f"`{k}`" for k, v in e["skipped"].items()
                )
                + ".",
            ]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
