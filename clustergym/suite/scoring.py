"""Score agents or saved models on the suite (``clustergym benchmark``).

Every spec (a registered agent name or a model saved by ``clustergym train``) runs every chosen
task on the first ``seeds`` evaluation seeds, through the task's environment, as runner cells.
Per task: the mean score with its 95% interval, the normalized score against the reference
(:func:`clustergym.suite.reference.normalized`) and against the best oracle.  Aggregates over
tasks (:func:`clustergym.suite.aggregate.aggregate`): the IQM and mean of the normalized scores
with stratified bootstrap intervals -- over episodes with one spec, over the specs (training seeds
of one method) with several.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from clustergym.agent_api import agent_context, make_agent, make_env_for
from clustergym.errors import ClusterGymError, ConfigError
from clustergym.runner import mean_ci, run_rows
from clustergym.suite.aggregate import aggregate
from clustergym.suite.reference import (
    load_reference,
    normalized,
    task_cells,
    traces_available,
)
from clustergym.suite.tasks import DEFAULT_SPLIT, TASKS, Task, eval_seeds
from clustergym.suite.tasks import task as get_task

__all__ = [
    "Evaluation",
    "agent_params",
    "check_agent",
    "distinct_specs",
    "evaluate",
    "is_model",
    "plan_evaluation",
    "select_tasks",
    "summarize_evaluation",
]


def select_tasks(
    names: Sequence[str] | None, reference: dict[str, Any] | None = None
) -> tuple[list[Task], dict[str, str]]:
    """The tasks to run (default: all) and the reason each default task is left out (no traces, no
    reference).  A task named explicitly that cannot run is an error."""
    explicit = names is not None
    tasks = [get_task(n) for n in names] if names is not None else list(TASKS.values())
    chosen, skipped = [], {}
    for t in dict.fromkeys(tasks):
        why = None
        if t.needs_traces and not traces_available():
            why = "needs the real traces (set CLUSTERGYM_TRACES to the trace directory)"
        elif reference is not None and t.name not in reference.get("tasks", {}):
            why = "no reference scores for it (clustergym benchmark --reference --tasks " + t.name + ")"
        if why is None:
            chosen.append(t)
        elif explicit:
            raise ConfigError("tasks", f"task {t.name!r} {why}")
        else:
            skipped[t.name] = why
    if not chosen:
        raise ConfigError("tasks", "no task to run: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    return chosen, skipped


def is_model(spec: str) -> bool:
    """Whether ``spec`` names a saved model (a ``.zip`` or a model's folder), not a registered agent
    or an import path: the specs ``decoding`` applies to."""
    from clustergym.agent_api import AGENTS

    return spec not in AGENTS and (spec.endswith(".zip") or os.path.isdir(spec))


def agent_params(spec: str, decoding: str | None, queue_window: int | None = None) -> dict[str, Any]:
    """The parameters ``spec`` is made with: ``decoding`` and ``queue_window`` (those given) for a model,
    none for other agents."""
    if not is_model(spec):
        return {}
    given = {"decoding": decoding, "queue_window": queue_window}
    return {k: v for k, v in given.items() if v is not None}


def check_agent(spec: str, t: Task, params: dict[str, Any] | None = None) -> str | None:
    """Why ``spec`` cannot run on the task (``None`` if it can): built, its environment made and reset."""
    try:
        agent = make_agent(spec, **(params or {}))
        env = make_env_for(t.scenario(), agent, env_id=t.id)
        env.reset(seed=0)
        agent.reset(agent_context(env, 0), seed=0)
        env.close()
    except ClusterGymError as e:
        return str(e)
    return None


@dataclass
class Evaluation:
    """A benchmark's plan, made before any episode runs (:func:`plan_evaluation`).

    Attributes:
        specs: the specs, each once (:func:`distinct_specs`).
        seeds: the evaluation seeds.
        tasks: the tasks that run.
        skipped: ``task`` or ``task/spec`` -> why it does not run.
        cells: the episodes, one runner cell each; ``owners[i]`` is the task of ``cells[i]``.
        reference: the reference document the scores are normalized against.
        warnings: what was dropped (a spec given twice), to be said to the user.
        decoding: the decoding every model acts with (``None``: each model's own).
        queue_window: the queue window every model runs with (``None``: each model's own).
        split: the evaluation seeds' split (``validation`` or ``test``).
    """

    specs: list[str]
    seeds: list[int]
    tasks: list[Task]
    skipped: dict[str, str]
    cells: list[Any]
    owners: list[str]
    reference: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    decoding: str | None = None
    split: str = DEFAULT_SPLIT
    queue_window: int | None = None


def _model_identity(spec: str) -> str | None:
    """A model spec's identity: the SHA-256 of its ``model.zip`` (a folder means its ``model.zip``);
    ``None`` for an agent name."""
    from pathlib import Path

    from clustergym.learned.files import file_digest

    p = Path(spec)
    if p.is_dir():
        p = p / "model.zip"
    return file_digest(p) if p.is_file() else None


def distinct_specs(specs: Sequence[str]) -> tuple[list[str], list[str]]:
    """``specs`` with each agent and each model once, and a warning per spec dropped.

    A model given twice -- as its folder and as its ``model.zip``, under two paths, or as a copy --
    is one model (the same bytes: the same SHA-256); counting it twice would make two "training
    seeds" of one run (a zero-width interval over specs)."""
    kept: list[str] = []
    warnings: list[str] = []
    seen: dict[str, str] = {}
    for spec in specs:
        key = _model_identity(spec) or f"agent:{spec}"
        if key in seen:
            warnings.append(f"{spec} is the same model as {seen[key]} (the same file): counted once")
            continue
        seen[key] = spec
        kept.append(spec)
    return kept, warnings


def plan_evaluation(
    specs: Sequence[str],
    tasks: Sequence[str] | None = None,
    *,
    seeds: int = 30,
    reference: dict[str, Any] | None = None,
    decoding: str | None = None,
    split: str = DEFAULT_SPLIT,
    queue_window: int | None = None,
) -> Evaluation:
    """Check everything a benchmark needs and plan its episodes, before any runs.

    Raises:
        ConfigError: a bad spec, task or seed count; a spec that runs on none of the tasks.
    """
    if not specs:
        raise ConfigError("agent", "no agent or model to benchmark")
    ref = reference if reference is not None else load_reference(split=split)
    seed_list = eval_seeds(seeds, split)
    chosen, skipped = select_tasks(tasks, ref)
    params = {spec: agent_params(spec, decoding, queue_window) for spec in specs}
    for spec in specs:
        make_agent(spec, **params[spec])  # a ConfigError naming a bad agent or model path, before anything runs
    kept, warnings = distinct_specs(specs)
    plan: list[tuple[Task, str]] = []
    for t in chosen:
        for spec in kept:
            why = check_agent(spec, t, params[spec])
            if why is None:
                plan.append((t, spec))
            else:
                skipped[f"{t.name}/{spec}"] = why
    if not plan:
        raise ConfigError("agent", "no task the agents can run: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    cells, owners = [], []
    for t, spec in plan:
        for cell in task_cells(t, [spec], seed_list):
            cells.append(replace(cell, agent_params=tuple(params[spec].items())))
            owners.append(t.name)
    return Evaluation(kept, seed_list, chosen, skipped, cells, owners, ref, warnings, decoding, split, queue_window)


def evaluate(
    specs: Sequence[str],
    tasks: Sequence[str] | None = None,
    *,
    seeds: int = 30,
    workers: int | None = None,
    reference: dict[str, Any] | None = None,
    progress: Callable[[str, str, int], None] | None = None,
    decoding: str | None = None,
    split: str = DEFAULT_SPLIT,
    ray: str | None = None,
    queue_window: int | None = None,
) -> dict[str, Any]:
    """Benchmark ``specs`` on the suite.

    Args:
        specs: agent names or model paths; several are runs (training seeds) of one method (a
            model given twice counts once: :func:`distinct_specs`).
        tasks: task names (default: all that can run here).
        seeds: the first ``seeds`` evaluation seeds of ``split``.
        workers: worker processes (``None``: the available cores).
        ray: a Ray address (``auto``, ``HOST:PORT``): the episodes run there instead, with the same rows.
        reference: the reference document (default: the shipped one of ``split``).
        progress: called with ``(task, spec, seed)`` as episodes finish.
        split: ``validation`` (develop and select there) or ``test`` (held out: final claims).
        decoding: how every model among ``specs`` acts (``argmax``, ``two-level``, ``sample``;
            ``None``: each model's own), see docs/benchmark.md's Decoding section.
        queue_window: the queue window every equivariant model among ``specs`` runs with (``None``:
            each model's own).

    Returns:
        ``{"seeds", "specs", "tasks": {task: {"reference": ..., "runs": {spec: {...}}}},
        "skipped": {...}, "aggregate": {...}, "rows": [...], "warnings": [...]}`` (see the module
        docstring).

    Raises:
        ConfigError: a bad spec, task or seed count; a spec that runs on none of the tasks.
    """
    ev = plan_evaluation(
        specs, tasks, seeds=seeds, reference=reference, decoding=decoding, split=split, queue_window=queue_window
    )

    def tick(agent: str, seed: int) -> None:
        if progress is not None:
            progress("", agent, seed)

    return summarize_evaluation(ev, run_rows(ev.cells, workers=workers, ray=ray, progress=tick))


def summarize_evaluation(ev: Evaluation, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The result of :func:`evaluate` from the plan and the runner rows of its cells (in plan order)."""
    specs, seed_list, ref = ev.specs, ev.seeds, ev.reference
    out: dict[str, Any] = {
        "split": ev.split,
        "seeds": seed_list,
        "specs": specs,
        "decoding": ev.decoding,
        "queue_window": ev.queue_window,
        "tasks": {},
        "skipped": dict(ev.skipped),
        "warnings": list(ev.warnings),
        "rows": [],
    }
    for name, row in zip(ev.owners, rows):
        m = row["task"]
        out["rows"].append(
            {
                "task": name,
                "agent": row["agent"],
                "seed": row["seed"],
                "score": m["score"],
                "complete": m["complete"],
                "steps": row["steps"],
                "uses_oracle": row["uses_oracle"],
            }
        )
    for t in ev.tasks:
        entry = ref["tasks"][t.name]
        runs = {}
        for spec in specs:
            scores = [r["score"] for r in out["rows"] if r["task"] == t.name and r["agent"] == spec]
            if not scores:
                continue
            runs[spec] = _run_summary(scores, seed_list, entry, out["rows"], t.name, spec, ref.get("seeds", []))
        if runs:
            out["tasks"][t.name] = {
                "id": t.id,
                "metric": entry["metric"],
                "random": entry["random"],
                "best": entry["best"],
                "best_score": entry["best_score"],
                "best_oracle": entry["best_oracle"],
                "best_oracle_score": entry["best_oracle_score"],
                "runs": runs,
            }
    out["aggregate"] = _aggregates(out["tasks"], specs)
    return out


def _run_summary(
    scores: list[float],
    seed_list: list[int],
    entry: dict[str, Any],
    rows: list[dict[str, Any]],
    task: str,
    spec: str,
    ref_seeds: Sequence[int],
) -> dict[str, Any]:
    """One spec's scores on one task: mean, interval, normalized scores, paired difference, completions."""
    mean, half = mean_ci(scores)
    per_seed = [normalized(s, entry) for s in scores]
    return {
        "mean": mean,
        "ci95": half,
        "scores": scores,
        "normalized": normalized(mean, entry),
        "normalized_ci95": abs(half / (entry["best_score"] - entry["random"]))
        if entry["best_score"] not in (None, entry["random"])
        else math.nan,
        "vs_oracle": normalized(mean, entry, oracle=True),
        "normalized_per_seed": per_seed,
        **_paired_with_best(scores, seed_list, entry, ref_seeds),
        "complete": sum(r["complete"] for r in rows if r["task"] == task and r["agent"] == spec),
    }


def _paired_with_best(
    scores: Sequence[float], seeds: Sequence[int], entry: dict[str, Any], ref_seeds: Sequence[int]
) -> dict[str, Any]:
    """The paired difference with the best non-oracle baseline on the same evaluation seeds (common
    random numbers: the same arrivals, sizes and durations): ``paired_vs_best`` (mean of score minus
    the baseline's score, seed by seed; positive: better than the baseline), ``paired_vs_best_ci95``
    (its Student-t half-width) and ``paired_seeds``; NaN when the reference holds no per-seed scores
    of the baseline on these seeds (``ref_seeds``: the reference's seeds, the split's first)."""
    best = entry.get("agents", {}).get(entry.get("best") or "", {})
    ref_scores = best.get("scores") or []
    n = min(len(scores), len(ref_scores))
    if n < 2 or list(seeds[:n]) != list(ref_seeds[:n]):
        return {"paired_vs_best": math.nan, "paired_vs_best_ci95": math.nan, "paired_seeds": 0}
    diff, half = mean_ci([a - b for a, b in zip(scores[:n], ref_scores[:n])])
    return {"paired_vs_best": diff, "paired_vs_best_ci95": half, "paired_seeds": n}


def _aggregates(tasks: dict[str, Any], specs: list[str]) -> dict[str, Any]:
    """Over tasks: per spec (runs = episodes) and, with several specs, over specs (runs = specs)."""
    agg: dict[str, Any] = {"per_spec": {}}
    for spec in specs:
        per_task = [v["runs"][spec]["normalized_per_seed"] for v in tasks.values() if spec in v["runs"]]
        agg["per_spec"][spec] = aggregate(per_task)
    if len(specs) > 1:
        agg["over_specs"] = aggregate([[r["normalized"] for r in v["runs"].values()] for v in tasks.values()])
    return agg
