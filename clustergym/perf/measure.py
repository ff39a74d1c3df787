"""How a figure is taken: a rate row, a child process's JSON output, its wall and CPU time and peak RSS."""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

__all__ = ["child_json", "rate_row", "rss_mb", "timed_process"]


def rate_row(bench: str, name: str, L: int, events: int, steps: int, wall: float, cpu: float) -> dict[str, Any]:
    return {
        "benchmark": bench,
        "scenario": name,
        "servers": L,
        "events": events,
        "steps": steps,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "events_per_second": events / wall,
        "steps_per_second": steps / wall,
        "events_per_cpu_second": events / cpu,
        "steps_per_cpu_second": steps / cpu,
    }


def child_json(cmd: list[str], timeout: float) -> dict[str, Any]:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout)


def timed_process(cmd: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd`` to the end: its JSON output, and the wall time, CPU time (user + system) and peak
    RSS of that process alone (``os.wait4``)."""
    import tempfile
    import threading

    with tempfile.TemporaryFile("w+") as errf:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, text=True, env=env)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            stdout = p.stdout.read() if p.stdout is not None else ""
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.stdout is not None:
            p.stdout.close()
        if p.returncode != 0:
            errf.seek(0)
            raise RuntimeError(f"{' '.join(cmd[:4])} ... failed ({p.returncode}): {errf.read().strip()[-2000:]}")
    return {
        "output": json.loads(stdout),
        "wall_seconds": wall,
        "cpu_seconds": ru.ru_utime + ru.ru_stime,
        "user_seconds": ru.ru_utime,
        "system_seconds": ru.ru_stime,
        "peak_rss_mb": ru.ru_maxrss / 1024,
    }


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")
