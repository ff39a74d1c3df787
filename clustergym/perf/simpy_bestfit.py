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

How it scans (:func:`simulate`): a job's first examination is Best-Fit over every server in NumPy;
after that, a job that fitted nowhere is tried again only once a server completed a job, and only
on that server -- loads only grow between completions, so no other server can have room for it.
That is the exact pruning clustergym's compiled loop does (:mod:`clustergym.core.fastpath`), so
both sides run the same algorithm; ``--no-prune`` scans every server for every job of the window
at every event instead.

    python -m clustergym.perf.simpy_bestfit [--servers 420] [--first-n N] [--scan 64] [--no-prune] [--json]

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
LIMIT = 1.0 * (1.0 + RTOL) + ATOL  # clustergym.core.cluster.fit_limit of capacity 1
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


def best_server(load0: np.ndarray, load1: np.ndarray, d0: float, d1: float) -> int:
    """Best-Fit over every server for one job of demand ``(d0, d1)``: the index of the server where it fits
    with the largest score ``d0 * load0 + d1 * load1`` (ties within SCORE_RTOL: the lowest index), or -1
    where it fits nowhere.  ``load0``, ``load1``: ``(servers,)`` CPU and memory loads (capacities 1)."""
    fit = np.flatnonzero((load0 + d0 <= LIMIT) & (load1 + d1 <= LIMIT))
    if not fit.size:
        return -1
    score = d0 * load0[fit] + d1 * load1[fit]
    top = score.max()
    return int(fit[np.argmax(score >= top - SCORE_RTOL * abs(top))])


# The reference's design: every arrival is a SimPy timeout scheduled at time 0 with the arrival time as
# its delay (so the event time is the trace's, exactly), every completion an URGENT event; a ``deque`` is
# the FIFO queue; the loads are two ``(servers,)`` NumPy arrays.  Best-Fit at each event: a job's first
# examination scans every server (:func:`best_server`, whole-array NumPy).  With ``prune`` (the default),
# a job that fitted nowhere is examined again only after a completion, and only on the server that
# completed: loads only grow between completions and the fit test is monotone in the load, so nothing
# else can have room for it (the same exact pruning as clustergym's compiled loop).  ``prune=False``
# scans every server for every job of the window at every event (the design the issue describes).
def simulate(
    arrival: np.ndarray,
    duration: np.ndarray,
    demand: np.ndarray,
    servers: int = 420,
    scan: int = 64,
    prune: bool = True,
) -> dict:
    """The replay (module docstring) on pre-parsed jobs ``arrival`` (n,), ``duration`` (n,) seconds and
    ``demand`` (n, 2), sorted by arrival, written as a careful SimPy user would (docs/performance.md,
    "The SimPy reference"; its design is in the comment above this function)."""
    env = simpy.Environment()
    n = len(arrival)
    load0, load1 = np.zeros(servers), np.zeros(servers)
    d0s, d1s, durations = demand[:, 0].tolist(), demand[:, 1].tolist(), duration.tolist()
    jobs_on = [0] * servers
    queue: deque[int] = deque()  # FIFO of waiting job ids
    start = [math.nan] * n
    failed = [-1] * n  # the completion count when the job last fitted nowhere (-1: never examined)
    st = [0.0, 0.0, 0, False]  # [queue-length integral, time of its last update, completions, settled]

    def integrate() -> None:
        st[0] += len(queue) * (env.now - st[1])
        st[1] = env.now

    def best_fit_scan(freed: int) -> None:
        c, placed = st[2], False
        l0 = l1 = 0.0
        if freed >= 0:
            l0, l1 = float(load0[freed]), float(load1[freed])
        for j in list(islice(queue, scan)):  # the window when the scan starts
            f = failed[j]
            if prune and f == c:
                continue  # no server has more room than when it last fitted nowhere
            d0, d1 = d0s[j], d1s[j]
            if prune and f == c - 1 and freed >= 0:  # one completion since: only that server can have room
                s = freed if l0 + d0 <= LIMIT and l1 + d1 <= LIMIT else -1
            else:
                s = best_server(load0, load1, d0, d1)
            if s < 0:
                failed[j] = c
                continue
            queue.remove(j)  # within the first `scan` entries
            load0[s] += d0
            load1[s] += d1
            if s == freed:
                l0, l1 = float(load0[s]), float(load1[s])
            jobs_on[s] += 1
            start[j] = env.now
            placed = True
            Completion(env, durations[j]).callbacks.append(lambda _ev, j=j, s=s: complete(j, s))
        st[3] = prune and not placed  # every job of the window fitted nowhere, and the window is unchanged

    def complete(j: int, s: int) -> None:
        integrate()
        jobs_on[s] -= 1
        if jobs_on[s] == 0:
            load0[s] = load1[s] = 0.0
        else:
            load0[s] -= d0s[j]
            load1[s] -= d1s[j]
        st[2] += 1
        best_fit_scan(s)

    def arrive(ev: simpy.events.Event) -> None:
        integrate()
        queue.append(ev.value)
        if not (st[3] and len(queue) > scan):  # else: a settled window, and the job joined behind it
            best_fit_scan(-1)

    for j, a in enumerate(arrival.tolist()):  # all scheduled at time 0, in trace order (ties keep it)
        env.timeout(a, value=j).callbacks.append(arrive)
    env.run()
    return _metrics(arrival, start, st[0], env.now, servers, prune)


def _metrics(arrival: np.ndarray, start: list, queue_area: float, T: float, servers: int, prune: bool) -> dict:
    """The run's summary: mean wait over all jobs, time-average queue length over [0, T]."""
    n = len(arrival)
    waits = np.array(start) - arrival
    return {
        "jobs": n,
        "servers": servers,
        "sim_time": T,
        "mean_wait": float(waits.mean()),
        "mean_queue_length": queue_area / T,
        "events": 2 * n,
        "pruned": prune,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=420)
    ap.add_argument("--first-n", type=int, default=None)
    ap.add_argument("--scan", type=int, default=64)
    ap.add_argument("--trace-dir", default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--no-prune", action="store_true", help="scan every server for every job of the window at every event"
    )
    args = ap.parse_args()
    arrival, duration, demand = load_jobs(args.first_n, args.trace_dir)
    with open("/proc/self/status") as f:  # resident memory before the simulation (Linux)
        rss_loaded = next((int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:")), float("nan"))
    t0 = time.perf_counter()
    c0 = time.process_time()
    out = simulate(arrival, duration, demand, args.servers, args.scan, prune=not args.no_prune)
    out["wall_seconds"] = time.perf_counter() - t0
    out["cpu_seconds"] = time.process_time() - c0
    out["rss_after_load_mb"] = rss_loaded
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["implementation"] = f"simpy {simpy.__version__}"
    print(json.dumps(out, indent=None if args.json else 1))


if __name__ == "__main__":
    main()
