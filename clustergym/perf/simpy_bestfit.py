"""Reference: the Google Best-Fit replay written with SimPy, the way a user would.

The run: completed Google 2011 tasks of the shared slice (clustergym's ``google-bf-replay``
preprocessing: arrival = first SUBMIT, duration = FINISH - last SCHEDULE, demand = (CPU,
memory) requests), ``L`` identical servers of capacity (1, 1), one FIFO queue, and
work-conserving Best-Fit scanning the first 64 queued jobs at every arrival and every
completion:

* the scan takes a snapshot of the first 64 queued jobs (oldest first; an arriving job has
  joined the tail), and places each one that fits somewhere on the *tightest* server: the
  largest score ``sum_d demand_d * load_d`` (capacities are 1), ties to the lowest index (scores
  within a relative 1e-9 of the largest are ties, as clustergym's ``SCORE_RTOL``);
* a job fits where ``load + demand <= capacity * (1 + 1e-9) + 1e-12`` in every resource
  (clustergym's rounding tolerance); a server's load is reset to exactly 0 when it empties;
* at equal times completions come before arrivals (clustergym's event order): completion
  events are scheduled with SimPy's URGENT priority.

Metrics: mean wait (start - arrival, over all jobs) and the time-average queue length
(exact integral of the number of waiting jobs, over [0, last completion]).

    python -m clustergym.perf.simpy_bestfit [--servers 420] [--first-n N] [--scan 64] [--json]

It prints the metrics and the simulation's wall time (trace loading excluded) and peak RSS.
clustergym's equivalent: ``clustergym run google-bf-replay --agent best-fit --set agent.scan=64``.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import time
from collections import deque
from itertools import islice

import numpy as np

from clustergym.errors import require_extra

# the reference is written with SimPy throughout: without the bench extra, importing it names the extra
require_extra("simpy", "bench", "the SimPy reference (clustergym.perf.simpy_bestfit)")

import simpy
from simpy.core import URGENT

RTOL, ATOL = 1e-9, 1e-12  # clustergym.core.cluster.FIT_RTOL and its absolute slack
SCORE_RTOL = 1e-9  # clustergym.core.cluster.SCORE_RTOL: scores this close are a tie


def load_jobs(first_n: int | None = None, trace_dir: str | None = None):
    """(arrival, duration, demand (n, 2)) of the replay, sorted by arrival (stable)."""
    from clustergym.traces.cache import google_table as _google_table

    jobs = _google_table(trace_dir, lifecycle="finished", first_n=first_n).jobs
    order = np.argsort(jobs["arrival"].to_numpy(), kind="stable")
    arrival = jobs["arrival"].to_numpy()[order]
    duration = jobs["duration"].to_numpy()[order]
    demand = np.column_stack([jobs["cpu"].to_numpy(dtype=float), jobs["memory"].to_numpy(dtype=float)])[order]
    return arrival, duration, demand


class Completion(simpy.events.Event):
    """A timeout that fires before ordinary events at the same time (SimPy URGENT priority)."""

    def __init__(self, env: simpy.Environment, delay: float):
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, URGENT, delay)


def simulate(arrival: np.ndarray, duration: np.ndarray, demand: np.ndarray, servers: int = 420, scan: int = 64) -> dict:
    """The replay (module docstring) on pre-parsed jobs, written as a careful SimPy user would: one
    process per job, a ``deque`` as the FIFO queue, Best-Fit as whole-array NumPy operations over the
    ``(servers, 2)`` load array: the fit test of the scanned jobs on every server at once (then only the
    column of the server a placement changed), the score of every server at once; scalars as Python
    floats."""
    env = simpy.Environment()
    n = len(arrival)
    limit = np.ones((servers, 2)) * (1.0 + RTOL) + ATOL  # capacities are 1
    load = np.zeros((servers, 2))
    jobs_on = [0] * servers
    queue: deque[int] = deque()  # FIFO of waiting job ids
    arrivals, durations = arrival.tolist(), duration.tolist()
    start = [math.nan] * n
    area = [0.0, 0.0]  # [integral of queue length, time of the last update]
    minus_inf = -np.inf

    def integrate() -> None:
        area[0] += len(queue) * (env.now - area[1])
        area[1] = env.now

    def best_fit_scan() -> None:
        if not queue:
            return
        ids = list(islice(queue, scan))
        D = demand[ids]  # (k, 2)
        fits = (load[None] + D[:, None] <= limit).all(axis=2)  # (k, servers): every scanned job at once
        for r in np.flatnonzero(fits.any(axis=1)).tolist():  # loads only grow during a scan: no other job fits
            row = fits[r]
            if not row.any():  # the servers it fitted on were filled by a job earlier in the scan
                continue
            j, d = ids[r], D[r]
            score = np.where(row, (d * load).sum(axis=1), minus_inf)  # sum_d demand_d * load_d / capacity_d^2
            top = score.max()  # ties within clustergym's SCORE_RTOL of the largest score: the lowest index
            s = int(np.argmax(score >= top - SCORE_RTOL * abs(top)))
            queue.remove(j)  # within the first `scan` entries
            load[s] += d
            fits[r + 1 :, s] = (load[s] + D[r + 1 :] <= limit[s]).all(axis=1)  # only server s changed
            jobs_on[s] += 1
            start[j] = env.now
            Completion(env, durations[j]).callbacks.append(lambda _ev, j=j, s=s: complete(j, s))

    def complete(j: int, s: int) -> None:
        integrate()
        load[s] -= demand[j]
        jobs_on[s] -= 1
        if jobs_on[s] == 0:
            load[s] = 0.0
        best_fit_scan()

    def job(j: int):
        yield env.timeout(arrivals[j])  # from time 0: the exact arrival time
        integrate()
        queue.append(j)
        best_fit_scan()

    for j in range(n):
        env.process(job(j))
    env.run()
    T = env.now
    waits = np.array(start) - arrival
    return {
        "jobs": n,
        "servers": servers,
        "sim_time": T,
        "mean_wait": float(waits.mean()),
        "mean_queue_length": area[0] / T,
        "events": 2 * n,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=420)
    ap.add_argument("--first-n", type=int, default=None)
    ap.add_argument("--scan", type=int, default=64)
    ap.add_argument("--trace-dir", default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    arrival, duration, demand = load_jobs(args.first_n, args.trace_dir)
    with open("/proc/self/status") as f:  # resident memory before the simulation (Linux)
        rss_loaded = next((int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:")), float("nan"))
    t0 = time.perf_counter()
    c0 = time.process_time()
    out = simulate(arrival, duration, demand, args.servers, args.scan)
    out["wall_seconds"] = time.perf_counter() - t0
    out["cpu_seconds"] = time.process_time() - c0
    out["rss_after_load_mb"] = rss_loaded
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["implementation"] = f"simpy {simpy.__version__}"
    print(json.dumps(out, indent=None if args.json else 1))


if __name__ == "__main__":
    main()
