"""Fig. 1b of the RMS paper: how long work-conserving Best-Fit takes to fall into the trap from empty.

Runs ``clustergym.reproduce.rms.bf_time_to_trap`` (``bf-trap``: 10 servers of capacity 10, sizes 2
and 5, lambda = (20.8, 10.4), exponential service of mean 1) on many seeds, with the job rule at
departures ``--select-job``, and prints each seed's trap time (``trapped``: every server in (2, 1)
and both queues non-empty, for 1000 time units on end; none if not by ``horizon - 1000``), the
number of seeds trapped and censored, and the share trapped by 2, 4, 6, 8 and 10 x 10^4.

The figures stated by the ``rms-fig1b`` claim (``FIG1B_TRAP_TIMES``) come from
``--seeds 16 --horizon 50000`` (55 minutes on 2 shared cores).

    python experiments/fig1b_time_to_trap.py [--seeds 20] [--horizon 100000] [--select-job largest] [--workers 2] [--json]

A run stops as soon as it is trapped; an untrapped run costs ~6 CPU-minutes per 10^5 time units.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor


def _one(args: tuple) -> dict:
    from clustergym.reproduce.rms import bf_time_to_trap

    seed, horizon, rule = args
    return bf_time_to_trap(seed, horizon, select_job=rule)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--horizon", type=float, default=100_000.0)
    ap.add_argument("--select-job", default="largest", choices=("largest", "fifo", "random"))
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    t0 = time.time()
    tasks = [(s, a.horizon, a.select_job) for s in range(a.first_seed, a.first_seed + a.seeds)]
    with ProcessPoolExecutor(a.workers) as ex:
        rows = list(ex.map(_one, tasks))
    trapped = sorted(r["trapped_at"] for r in rows if r["trapped_at"] is not None)
    doc = {
        "select_job": a.select_job,
        "horizon": a.horizon,
        "seeds": len(rows),
        "runs": rows,
        "trapped": len(trapped),
        "censored": len(rows) - len(trapped),
        "trap_times": trapped,
        "trapped_by": {
            f"{h:g}": sum(t <= h for t in trapped) / len(rows) for h in (2e4, 4e4, 6e4, 8e4, 1e5) if h <= a.horizon
        },
        "wall_seconds": round(time.time() - t0, 1),
    }
    if a.json:
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    for r in rows:
        print(
            f"seed {r['seed']:3d}: trapped at {r['trapped_at']!s:>10} (run to {r['t_end']:g}, "
            f"queue at end {r['queued_at_end']}, mean {r['mean_queue']:.0f})"
        )
    print(
        f"{doc['trapped']} of {doc['seeds']} seeds trapped by {a.horizon - 1000:g}; share trapped by T: {doc['trapped_by']}"
    )
    print(f"wall {doc['wall_seconds']} s")


if __name__ == "__main__":
    main()
