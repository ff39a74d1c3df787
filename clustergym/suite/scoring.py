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
from collections.abc import Callable, Sequence
from typing import Any

from clustergym.agent_api import make_agent, make_env_for
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

__all__ = ["check_agent", "evaluate", "select_tasks"]


def select_tasks(
    names: Sequence[str] | None, reference: dict[str, Any] | None = None
) -> tuple[list[Task], dict[str, str]]:
    """The tasks to run (default: all) and the reason each default task is left out (no traces, no
    reference).  A task named explicitly that cannot run is an error."""
    explicit = names is not None
    tasks = [get_task(n) for n in names] if explicit else list(TASKS.values())
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


def check_agent(spec: str, t: Task) -> str | None:
    """Why ``spec`` cannot run on the task (``None`` if it can): built, its environment made and reset."""
    try:
        agent = make_agent(spec)
        env = make_env_for(t.scenario(), agent, env_id=t.id)
        env.reset(seed=0)
        agent.reset(env, seed=0)
        env.close()
    except ClusterGymError as e:
        return str(e)
    return None


def evaluate(
    specs: Sequence[str],
    tasks: Sequence[str] | None = None,
    *,
    seeds: int = 30,
    workers: int | None = None,
    reference: dict[str, Any] | None = None,
    progress: Callable[[str, str, int], None] | None = None,
    split: str = DEFAULT_SPLIT,
) -> dict[str, Any]:
    """Benchmark ``specs`` on the suite.

    Args:
        specs: agent names or model paths; several are runs (training seeds) of one method.
        tasks: task names (default: all that can run here).
        seeds: the first ``seeds`` evaluation seeds of ``split``.
        workers: worker processes (``None``: the available cores).
        reference: the reference document (default: the shipped one of ``split``).
        progress: called with ``(task, spec, seed)`` as episodes finish.
        split: ``validation`` (develop and select there) or ``test`` (held out: final claims).

    Returns:
        ``{"split", "seeds", "specs", "tasks": {task: {"reference": ..., "runs": {spec: {...}}}},
        "skipped": {...}, "aggregate": {...}, "rows": [...]}`` (see the module docstring).

    Raises:
        ConfigError: a bad spec, task or seed count; a spec that runs on none of the tasks.
    """
    specs = list(dict.fromkeys(specs))
    if not specs:
        raise ConfigError("agent", "no agent or model to benchmark")
    ref = reference if reference is not None else load_reference(split=split)
    seed_list = eval_seeds(seeds, split)
    chosen, skipped = select_tasks(tasks, ref)
    for spec in specs:
        make_agent(spec)  # a ConfigError naming a bad agent or model path, before anything runs
    plan: list[tuple[Task, str]] = []
    for t in chosen:
        for spec in specs:
            why = check_agent(spec, t)
            if why is None:
                plan.append((t, spec))
            else:
                skipped[f"{t.name}/{spec}"] = why
    if not plan:
        raise ConfigError("agent", "no task the agents can run: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    cells, owners = [], []
    for t, spec in plan:
        for cell in task_cells(t, [spec], seed_list):
            cells.append(cell)
            owners.append(t.name)

    def tick(agent: str, seed: int) -> None:
        if progress is not None:
            progress("", agent, seed)

    rows = run_rows(cells, workers=workers, progress=tick)
    out: dict[str, Any] = {
        "split": split,
        "seeds": seed_list,
        "specs": specs,
        "tasks": {},
        "skipped": skipped,
        "rows": [],
    }
    for name, row in zip(owners, rows):
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
    for t in chosen:
        entry = ref["tasks"][t.name]
        runs = {}
        for spec in specs:
            scores = [r["score"] for r in out["rows"] if r["task"] == t.name and r["agent"] == spec]
            if not scores:
                continue
            mean, half = mean_ci(scores)
            per_seed = [normalized(s, entry) for s in scores]
            runs[spec] = {
                "mean": mean,
                "ci95": half,
                "scores": scores,
                "normalized": normalized(mean, entry),
                "normalized_ci95": abs(half / (entry["best_score"] - entry["random"]))
                if entry["best_score"] not in (None, entry["random"])
                else math.nan,
                "vs_oracle": normalized(mean, entry, oracle=True),
                "normalized_per_seed": per_seed,
                **_paired_with_best(scores, seed_list, entry, ref.get("seeds", [])),
                "complete": sum(r["complete"] for r in out["rows"] if r["task"] == t.name and r["agent"] == spec),
            }
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
