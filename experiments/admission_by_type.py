"""What an admission policy turns away, per job type, on a suite task's episodes.

    python experiments/admission_by_type.py best-fit-admit models/autoscale-syn4-load15-s0 [--task autoscale-syn4] [--seeds 10]

For each agent (a registered name or a saved model), on the task's first ``--seeds`` reference
evaluation seeds: the arrivals of each job type and the share of them rejected, summed over the
episodes. On ``autoscale-syn4`` this shows which VMs a learned policy keeps out to leave room for
the large one (experiments/log.md, round 5). Prints a Markdown table, one row per type.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from clustergym.agent_api import make_agent
from clustergym.core.jobs import JobStatus
from clustergym.errors import ClusterGymError
from clustergym.runner import Probe, run_episode
from clustergym.suite import eval_seeds
from clustergym.suite import task as find_suite_task


def arrivals_and_rejections(env: Any) -> list[list[int]]:
    """Per job type: ``[arrived, rejected]`` in the finished episode of ``env`` (``env.unwrapped``)."""
    jobs = env.sim.jobs
    kind = np.asarray(jobs.type[: jobs.size])
    rejected = np.asarray(jobs.status[: jobs.size]) == JobStatus.REJECTED
    n = env.sim.types.demand.shape[0]
    return np.stack([np.bincount(kind, minlength=n), np.bincount(kind[rejected], minlength=n)], axis=1).tolist()


def by_type(agent: str, task_name: str, seeds: int) -> np.ndarray:
    """``(types, 2)``: arrivals and rejections of each type over the task's first ``seeds`` seeds."""
    t = find_suite_task(task_name)
    total = None
    for seed in eval_seeds(seeds):
        a = make_agent(agent)  # a name or a saved model, as everywhere
        row = run_episode(t.scenario(), a, seed=seed, env_id=t.id, probes={"types": Probe(arrivals_and_rejections)})
        counts = np.asarray(row["types"])
        total = counts if total is None else total + counts
    assert total is not None
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("agents", nargs="+", help="registered agents or saved models")
    ap.add_argument("--task", default="autoscale-syn4", help="a suite task")
    ap.add_argument("--seeds", type=int, default=10, help="the first N reference evaluation seeds")
    args = ap.parse_args(argv)
    try:
        types = find_suite_task(args.task).scenario().source.types
        counts = {a: by_type(a, args.task, args.seeds) for a in args.agents}
    except ClusterGymError as e:  # an unknown task or agent, a bad seed count: named, exit 2
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("| type | demand | arrivals | " + " | ".join(f"`{a}` rejected" for a in args.agents) + " |")
    print("|---|---|---|" + "---|" * len(args.agents))
    for k, name in enumerate(types.names):
        arrived = int(next(iter(counts.values()))[k, 0])
        shares = " | ".join(f"{c[k, 1] / max(c[k, 0], 1):.1%}" for c in counts.values())
        print(f"| {name} | {tuple(float(x) for x in types.demand[k])} | {arrived:,} | {shares} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
