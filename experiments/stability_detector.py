"""Error rates of the instability test (clustergym.core.metrics.stability_test), measured.

Runs many seeds of scenarios whose stability is known and reports, per (case, horizon), the share
of runs the kernel calls ``unstable``, ``undetermined`` and ``stable``.  On stable cases the
``unstable`` share is the false-positive rate; on unstable ones it is the detection rate.  The
previous rule (OLS slope of the queue samples over the second half > 1% of the arrival rate) is
evaluated on the same runs for comparison.

    python experiments/stability_detector.py [--seeds 100] [--workers 2] [--quick] [--json]

Cases (the truth is known from the load, not from the runs):

* stable: ``ec2`` at zeta 0.8, 0.9, 0.95 (the RMS paper's EC2 setting, 20 servers), First-Fit and
  Best-Fit with a scan window of 64 (the compiled path), and work-conserving Best-Fit (largest-job
  refill) at zeta 0.9; ``two-sizes`` under BF-J/S (stable below the capacity region);
* unstable: ``ec2`` at zeta 1.05, 1.1 and 1.2 (outside the capacity region: the queue must grow
  for any policy), and ``bf-trap`` under Best-Fit with random-type refill (unstable from an empty
  start; see the rms-fig1b claim).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

#: (label, preset, preset params, agent, agent params, horizons, truth)
CASES = [
    ("ec2 z=0.8 best-fit(scan)", "ec2", {"zeta": 0.8}, "best-fit", {"scan": 64}, (20, 50, 200, 1000), "stable"),
    ("ec2 z=0.9 best-fit(scan)", "ec2", {"zeta": 0.9}, "best-fit", {"scan": 64}, (20, 50, 200, 1000), "stable"),
    ("ec2 z=0.95 best-fit(scan)", "ec2", {"zeta": 0.95}, "best-fit", {"scan": 64}, (20, 50, 200, 1000), "stable"),
    ("ec2 z=0.9 first-fit(scan)", "ec2", {"zeta": 0.9}, "first-fit", {"scan": 64}, (20, 50, 200, 1000), "stable"),
    ("ec2 z=0.95 first-fit(scan)", "ec2", {"zeta": 0.95}, "first-fit", {"scan": 64}, (20, 50, 200, 1000), "stable"),
    ("ec2 z=0.9 best-fit", "ec2", {"zeta": 0.9}, "best-fit", {}, (20, 50), "stable"),
    ("two-sizes bf-js", "two-sizes", {}, "bf-js", {}, (2000, 10000), "stable"),
    ("ec2 z=1.05 best-fit(scan)", "ec2", {"zeta": 1.05}, "best-fit", {"scan": 64}, (20, 50, 200), "unstable"),
    ("ec2 z=1.1 best-fit(scan)", "ec2", {"zeta": 1.1}, "best-fit", {"scan": 64}, (20, 50, 200), "unstable"),
    ("ec2 z=1.2 first-fit(scan)", "ec2", {"zeta": 1.2}, "first-fit", {"scan": 64}, (20, 50, 200), "unstable"),
    ("bf-trap best-fit random refill", "bf-trap", {}, "best-fit", {"select_job": "random"}, (200, 1000), "unstable"),
]
QUICK_HORIZON_CAP = 200


def old_rule(times: np.ndarray, values: np.ndarray, total_rate: float | None) -> bool:
    """The previous heuristic (the slope rule the run summary used before the instability test of docs/metrics.md)."""
    if total_rate is None or total_rate <= 0 or len(times) < 20:
        return False
    half = len(times) // 2
    t, q = times[half:], values[half:]
    if np.ptp(t) == 0:
        return False
    return bool(np.polyfit(t, q, 1)[0] > 0.01 * total_rate)


def one_run(task: tuple) -> dict:
    label, preset, params, agent_name, aparams, horizon, seed = task
    from clustergym.agent_api import make_agent, make_env_for
    from clustergym.core.metrics import stability_test
    from clustergym.runner.episode import run_compiled
    from clustergym.scenarios import make_preset

    sc = make_preset(preset, **params, horizon=float(horizon), queue_cap=None)
    agent = make_agent(agent_name, **aparams)
    env = make_env_for(sc, agent)
    env.reset(seed=seed)
    agent.reset(env, seed=seed)
    done = run_compiled(agent, env) is not None
    while not done:
        cmd, _ = agent.predict(None)
        _, _, term, trunc, _ = env.step(cmd)
        done = term or trunc
    sim = env.sim
    m = sim.summary()
    times, values = sim.trace.arrays()
    st = stability_test(times, values, sim.total_rate)
    assert (st["verdict"] == "unstable") == (m["unstable"] and not m["hit_queue_cap"])
    return {
        "label": label,
        "horizon": horizon,
        "seed": seed,
        "verdict": m["stability"],
        "old": old_rule(times, values, sim.total_rate),
        "cycles": st["cycles"],
        "p": st["p_value"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--quick", action="store_true", help=f"horizons up to {QUICK_HORIZON_CAP} and 20 seeds")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    seeds = 20 if a.quick else a.seeds
    tasks = [
        (label, preset, params, agent, ap_, h, s)
        for label, preset, params, agent, ap_, hs, _ in CASES
        for h in hs
        if not (a.quick and h > QUICK_HORIZON_CAP)
        for s in range(seeds)
    ]
    truth = {c[0]: c[-1] for c in CASES}
    t0 = time.time()
    with ProcessPoolExecutor(a.workers) as ex:
        rows = list(ex.map(one_run, tasks, chunksize=4))
    table = []
    for label, *_, hs, tr in CASES:
        for h in hs:
            rs = [r for r in rows if r["label"] == label and r["horizon"] == h]
            if not rs:
                continue
            n = len(rs)
            share = {v: sum(r["verdict"] == v for r in rs) / n for v in ("unstable", "undetermined", "stable")}
            table.append(
                {
                    "case": label,
                    "truth": tr,
                    "horizon": h,
                    "runs": n,
                    **share,
                    "old_rule_unstable": sum(r["old"] for r in rs) / n,
                }
            )
    tot = {}
    for tr in ("stable", "unstable"):
        rs = [r for r in rows if truth[r["label"]] == tr]
        tot[tr] = {
            "runs": len(rs),
            "unstable": sum(r["verdict"] == "unstable" for r in rs) / max(1, len(rs)),
            "old_rule_unstable": sum(r["old"] for r in rs) / max(1, len(rs)),
        }
    doc = {"seeds": seeds, "table": table, "totals": tot, "wall_seconds": round(time.time() - t0, 1)}
    if a.json:
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    print(
        f"{'case':34s} {'truth':8s} {'T':>6s} {'runs':>5s} {'unstable':>9s} {'undeterm.':>9s} {'stable':>7s} {'old rule':>9s}"
    )
    for r in table:
        print(
            f"{r['case']:34s} {r['truth']:8s} {r['horizon']:>6g} {r['runs']:>5d} {r['unstable']:>9.3f} "
            f"{r['undetermined']:>9.3f} {r['stable']:>7.3f} {r['old_rule_unstable']:>9.3f}"
        )
    for tr, v in tot.items():
        rate = "false-positive" if tr == "stable" else "detection"
        print(f"{tr} cases: {v['runs']} runs, {rate} rate {v['unstable']:.4f} (old rule {v['old_rule_unstable']:.4f})")
    print(f"wall {doc['wall_seconds']} s")


if __name__ == "__main__":
    main()
