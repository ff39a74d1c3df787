"""A search over packing rules that read no durations on ``bfjs-uniform``: is there room without them?

    python experiments/packing_search.py [--seeds 30] [--workers 2]          # the validation search
    python experiments/packing_search.py --test [--seeds 30]                  # its best rule, once, on test
    python experiments/packing_search.py --task azure-vms --test              # the same search on another task

Round 9 ([round9.md](round9.md)) measured that the oracles' room on ``bfjs-uniform`` (``bf-exec`` 1.36
normalized) is the durations they read -- fed durations drawn from the task's own geometric law,
``bf-exec`` falls to 0.77 -- and that four size orders with the Best-Fit machine stay at or below
``best-fit``.  What a policy without durations can still choose is the packing: which queued job
starts next, and on which machine.  This script searches a family of such rules, wider than round 9's:

* PRIORITY-QUEUE's scan (MRIS Sec. 4: at every event, the queue in a key's order, each job that
  fits somewhere started; list scheduling, work-conserving), with the key
  ``a x size - b x wait / unit`` (smaller first: ``a > 0`` smallest first, ``a < 0``
  largest first, ``b > 0`` ages the order toward first-come-first-served; ties by arrival, then id;
  the size is the job's largest demand as a fraction of a machine, MRIS's ``u``, which ``pq-sdf``
  sorts by; the unit of waiting is the task's time unit: ``bfjs-uniform``'s 20 slots, its mean
  service time, ``azure-vms``'s hour);
* and the machine: ``best`` (``bf-exec``'s: the smallest norm of the capacity left, the Best-Fit of
  a single resource), ``first`` (the lowest index where the job fits) or ``worst`` (the most left).

The grid (``a`` in -1, -0.5, -0.25, 0, 0.25, 0.5, 1; ``b`` in 0, 0.1, 0.3, 1, 3; three machines: 105
rules) is scored on the validation split's first ``--seeds`` seeds, each rule's normalized score and
paired difference against the task's best non-oracle baseline (``best-fit`` on ``bfjs-uniform``,
``pq-sdf`` on ``azure-vms``), as ``clustergym benchmark`` reports them; ``--test`` scores the
validation's best rule once on the test split.  ``--task`` runs the search on another suite task
(round 12: ``azure-vms``).  No rule is registered: each is an agent for its own evaluation only.
"""

from __future__ import annotations

import argparse
import itertools
from typing import Any

import numpy as np

from clustergym.agent_api import AGENTS, register_agent
from clustergym.baselines.mris.bf_exec import tightest_by_norm
from clustergym.baselines.mris.priority_queue import PriorityQueue
from clustergym.core.cluster import score_ranks
from clustergym.suite import task as suite_task
from clustergym.suite.scoring import evaluate

TASK = "bfjs-uniform"
SIZE_WEIGHTS = (-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0)
AGE_WEIGHTS = (0.0, 0.1, 0.3, 1.0, 3.0)
MACHINES = ("best", "first", "worst")


class ScoredPacking(PriorityQueue):
    """PRIORITY-QUEUE with the key ``a x size - b x wait / unit`` (smaller first; ties by
    arrival, then id) and the ``best``, ``first`` or ``worst`` machine.  Reads no durations.

    ``unit`` (time): the scenario's ``mean_service`` when it has one (``None``), else given."""

    description = "diagnostic: PRIORITY-QUEUE by size and age, best, first or worst machine"

    def __init__(self, a: float = 0.0, b: float = 0.0, machine: str = "best", unit: float | None = None, **params: Any):
        super().__init__(key="sdf", **params)  # sdf: a key that needs no durations (order is overridden)
        if machine not in MACHINES:
            raise ValueError(f"machine must be one of {MACHINES}, got {machine!r}")
        self.a, self.b, self.machine = float(a), float(b), machine
        self.unit = unit

    def key_of(self, cand: np.ndarray) -> np.ndarray:
        """``(n,)`` the sort key of the job ids ``cand`` now (smaller first)."""
        c = self.jobs
        unit = float(self.unit if self.unit is not None else self.context.scenario.params["mean_service"])
        return self.a * c.u[cand] - self.b * (self.view.now - c.arrival[cand]) / unit

    def order(self, cand: np.ndarray) -> np.ndarray:
        return cand[np.lexsort((cand, self.jobs.arrival[cand], score_ranks(self.key_of(cand))))]

    def machine_for(self, job: int, fits: np.ndarray) -> int:
        if self.machine == "first":
            return int(np.argmax(fits))
        if self.machine == "best":
            return tightest_by_norm(self.view.load, self.jobs.dem_abs[job], self.limit, self.capacity)
        left = np.where(fits, (self.capacity - self.view.load).sum(axis=1), -np.inf)
        return int(np.argmax(left))  # worst fit: the most capacity left, ties to the lowest index


def selected(**params: Any) -> ScoredPacking:
    """The validation search's best rule (round 11): largest first, aged ``b = 0.1``, the tightest
    machine; a teacher by import path (``PYTHONPATH=experiments``, ``--warm-start packing_search:selected``)."""
    return ScoredPacking(a=-1.0, b=0.1, machine="best", **params)


def rule_name(a: float, b: float, machine: str) -> str:
    return f"a={a:g} b={b:g} {machine}"


def age_unit(task_name: str) -> float:
    """The unit of waiting in the key on ``task_name``: the task's time unit (``bfjs-uniform``: 20
    slots, its mean service; ``azure-vms``: an hour)."""
    return float(suite_task(task_name).time_unit)


def score_rule(a: float, b: float, machine: str, seeds: int, split: str, task: str = TASK) -> dict[str, Any]:
    """One rule's row on ``task``: its mean, normalized score and paired difference against the best
    non-oracle baseline over the first ``seeds`` seeds of ``split`` (registered for this call only)."""
    name = rule_name(a, b, machine)
    unit = age_unit(task)
    register_agent(name, lambda **p: ScoredPacking(a=a, b=b, machine=machine, unit=unit, **p))
    try:
        out = evaluate([name], [task], seeds=seeds, workers=1, split=split)
    finally:
        AGENTS.pop(name, None)
    entry = out["tasks"][task]
    r = entry["runs"][name]
    return {
        "rule": name,
        "a": a,
        "b": b,
        "machine": machine,
        "mean": r["mean"],
        "normalized": r["normalized"],
        "paired": r["paired_vs_best"],
        "paired_ci95": r["paired_vs_best_ci95"],
        "best": entry["best"],
    }


def search(
    seeds: int, workers: int, split: str = "validation", grid: Any = None, task: str = TASK
) -> list[dict[str, Any]]:
    """Every rule of ``grid`` (default: the module's) scored on ``task``'s ``split``, best normalized score first."""
    from joblib import Parallel, delayed

    grid = list(grid if grid is not None else itertools.product(SIZE_WEIGHTS, AGE_WEIGHTS, MACHINES))
    rows = Parallel(n_jobs=workers)(delayed(score_rule)(a, b, m, seeds, split, task) for a, b, m in grid)
    return sorted(rows, key=lambda r: -r["normalized"])


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| rule | score | normalized | paired Δ vs best non-oracle |", "|---|---|---|---|"]
    lines += [
        f"| {r['rule']} | {r['mean']:.4g} | {r['normalized']:.3f} | {r['paired']:+.3g} ± {r['paired_ci95']:.2g} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30, help="the first N seeds of the split")
    ap.add_argument("--workers", type=int, default=2, help="rules scored at once")
    ap.add_argument("--test", action="store_true", help="score the validation search's best rule on the test split")
    ap.add_argument("--task", default=TASK, help=f"the suite task (default {TASK})")
    args = ap.parse_args(argv)
    rows = search(args.seeds, args.workers, task=args.task)
    print(f"{args.task}, validation split, first {args.seeds} seeds, {len(rows)} rules (best first):\n")
    print(table(rows))
    if args.test:
        best = rows[0]
        print(f"\n{args.task}, test split, first {args.seeds} seeds, the validation's best rule:\n")
        print(table([score_rule(best["a"], best["b"], best["machine"], args.seeds, "test", args.task)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
