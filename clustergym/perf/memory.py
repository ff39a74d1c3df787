"""Resident memory of a child process over a long Best-Fit run on ``ec2``, sampled as it runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from clustergym.perf.measure import rss_mb
from clustergym.perf.replay import REPLAY_SCAN
from clustergym.runner import run_episode
from clustergym.scenarios import make_preset

__all__ = ["bench_memory", "memory_child"]


def memory_child(events: int, scan: int | None, job_memory: str = "full") -> None:
    from clustergym.agent_api import make_agent

    horizon = events / 179.0  # ec2 L=20 at zeta 0.9: about 179 events per time unit
    sc = make_preset("ec2", num_servers=20, zeta=0.9, horizon=horizon, job_memory=job_memory)
    agent = make_agent("best-fit", **({} if scan is None else {"scan": scan}))
    t_start = time.time()
    m = run_episode(sc, agent)
    t_end = time.time()
    print(
        json.dumps(
            {
                "episode_epoch_seconds": [t_start, t_end],
                "events": m["events"],
                "arrivals": m["arrivals"],
                "wall_seconds": m["wall_seconds"],
                "mean_wait": m["mean_wait"],
                "p99_wait": m["p99_wait"],
                "p99_wait_method": m.get("p99_wait_method", "exact (np.percentile)"),
            }
        )
    )


def bench_memory(
    events: int = 10_000_000,
    scan: int | None = REPLAY_SCAN,
    interval: float = 0.1,
    log: Callable[[str], Any] | None = None,
    job_memory: str = "full",
) -> dict[str, Any]:
    """RSS of a child process running ``events`` events of Best-Fit on ``ec2``, sampled every ``interval`` s.

    ``scan`` (default 64) uses the compiled path when numba is installed (fast); ``None`` the
    step loop.  ``job_memory``: ``full`` keeps every job's row (about 91 bytes per job for
    R = 3), ``bounded`` releases finished rows (:mod:`clustergym.core.jobs`).  Reports the
    samples, the RSS after the first 10% of the run, the sampled peak (not ``ru_maxrss``:
    Linux carries the parent's high-water mark into a forked child), the end, and the growth in bytes per job: the least-squares slope of RSS
    (MB/s) over the samples in the second half of the episode (the child reports when it ran),
    divided by the episode's jobs per wall second (jobs arrive at a steady rate).
    """
    if log:
        log(
            f"memory: RSS over {events:,} events of best-fit on ec2, job_memory={job_memory} "
            f"(child process, sampled every {interval} s)"
        )
    code = f"from clustergym.perf.memory import memory_child; memory_child({events}, {scan!r}, {job_memory!r})"
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    samples: list[tuple[float, float]] = []
    while p.poll() is None:
        try:
            samples.append((time.time() - t0, rss_mb(p.pid)))
        except OSError:
            break
        time.sleep(interval)
    out, err = p.communicate()
    if p.returncode != 0:
        raise RuntimeError(f"memory benchmark child failed: {err.strip()[-2000:]}")
    res = json.loads(out)
    ok = [(t, m) for t, m in samples if np.isfinite(m)]
    rss = np.array([m for _, m in ok])
    slope = None
    a, b = (x - t0 for x in res.pop("episode_epoch_seconds"))
    late = [(t, m) for t, m in ok if (a + b) / 2 <= t <= b]  # second half of the episode (past compilation)
    if len(late) >= 3 and res["arrivals"]:
        t, m = np.array(late).T
        mb_per_s = float(np.polyfit(t, m, 1)[0])
        slope = mb_per_s * 2**20 * (b - a) / res["arrivals"]  # / (jobs per second of the episode)
    res["episode_seconds"] = [round(a, 2), round(b, 2)]
    res.update(
        {
            "job_memory": job_memory,
            "samples": [[round(t, 2), round(m, 1)] for t, m in samples],
            "rss_start_mb": float(rss[max(0, len(rss) // 10)]) if rss.size else None,
            "rss_peak_mb": float(rss.max()) if rss.size else None,
            "rss_end_mb": float(rss[-1]) if rss.size else None,
            "bytes_per_job": slope,
        }
    )
    return res
