"""The Google Best-Fit replay (``google-bf-replay``) through clustergym and through the SimPy reference
:mod:`clustergym.perf.simpy_bestfit`, each in its own process, and the whole ``clustergym run`` process on a
cold and a warm trace cache."""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from clustergym.perf.measure import child_json, rss_mb, timed_process
from clustergym.runner import run_episode

__all__ = ["REFERENCE", "REPLAY_SCAN", "SIMPY_MODULE", "bench_replay", "replay_child", "replay_command"]


REPLAY_SCAN = 64


#: the SimPy reference, run as ``python -m clustergym.perf.simpy_bestfit`` (needs the ``bench`` extra)
SIMPY_MODULE = "clustergym.perf.simpy_bestfit"
#: what the ratio is taken against (docs/performance.md, "The SimPy reference")
REFERENCE = (
    f"{SIMPY_MODULE}: SimPy events, a deque queue, NumPy Best-Fit over the (servers,) load arrays at a job's first "
    "examination, then only on the server that completed since it last fitted nowhere (clustergym's exact pruning)"
)


def replay_child(first_n: int | None, servers: int) -> None:
    """In a child process: the replay through clustergym; prints one JSON line."""

    from clustergym.agent_api import make_agent
    from clustergym.core import accel
    from clustergym.scenarios import resolve_scenario

    t0 = time.perf_counter()
    sc = resolve_scenario("google-bf-replay", num_servers=servers, first_n=first_n)
    load_s = time.perf_counter() - t0
    rss_loaded = rss_mb(os.getpid())
    warm = 0.0
    if accel.enabled():  # numba compiles once (cached on disk): timed apart, like SimPy's import
        t0 = time.perf_counter()
        run_episode(sc.with_horizon(1.0), make_agent("best-fit", scan=REPLAY_SCAN))
        warm = time.perf_counter() - t0
    c0 = time.process_time()
    m = run_episode(sc, make_agent("best-fit", scan=REPLAY_SCAN), agent_name="best-fit")
    out = {
        "implementation": "clustergym" + (" (compiled path)" if accel.enabled() else " (NumPy path)"),
        "jobs": m["arrivals"],
        "servers": servers,
        "sim_time": m["sim_time"],
        "mean_wait": m["mean_wait"],
        "mean_queue_length": m["mean_queue_length"],
        "events": m["events"],
        "wall_seconds": m["wall_seconds"],
        "cpu_seconds": time.process_time() - c0,
        "trace_load_seconds": load_s,
        "warmup_seconds": warm,
        "rss_after_load_mb": rss_loaded,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print(json.dumps(out))


def replay_command(first_n: int | None = None, servers: int = 420) -> list[str]:
    """The replay as one ``clustergym run`` process (what the whole-process figures time)."""
    cmd = [
        sys.executable,
        "-m",
        "clustergym",
        "run",
        "google-bf-replay",
        "--agent",
        "best-fit",
        "--set",
        f"agent.scan={REPLAY_SCAN}",
        "--json",
    ]
    if servers != 420:
        cmd += ["--set", f"num_servers={servers}"]
    if first_n is not None:
        cmd += ["--set", f"first_n={first_n}"]
    return cmd


def bench_replay(
    first_n: int | None = None,
    servers: int = 420,
    simpy: bool = True,
    log: Callable[[str], Any] | None = None,
    timeout: float = 3600.0,
    whole_process: bool = True,
) -> dict[str, Any]:
    """clustergym and the SimPy reference on the Google Best-Fit replay, side by side.

    ``whole_process``: also time the whole ``clustergym run`` process on an empty trace cache
    (``cold``) and again (``warm``), and the SimPy reference's whole process (module docstring).
    Returns ``{"status": "skipped", "reason": ...}`` when the traces (or, for the reference,
    SimPy) are absent.
    """
    import shutil
    import tempfile

    from clustergym.traces.diskcache import ENV_VAR as CACHE_VAR
    from clustergym.traces.paths import default_trace_dir, traces_available

    if not traces_available():
        return {"status": "skipped", "reason": f"traces not found ({default_trace_dir()}): set CLUSTERGYM_TRACES"}
    what = "all" if first_n is None else f"the first {first_n:,}"
    if log:
        log(f"replay: clustergym best-fit scan={REPLAY_SCAN} on google-bf-replay ({what} tasks, L={servers})")
    code = f"from clustergym.perf.replay import replay_child; replay_child({first_n!r}, {servers})"
    cg = child_json([sys.executable, "-c", code], timeout)
    out: dict[str, Any] = {"status": "ok", "clustergym": cg}
    cache = tempfile.mkdtemp(prefix="clustergym-bench-trace-cache-")
    env = dict(os.environ, **{CACHE_VAR: cache})
    try:
        if whole_process:
            out["whole_process"] = _whole_process(first_n, servers, timeout, env, log)
            out["whole_process"]["trace_cache"] = f"a fresh empty directory (${CACHE_VAR}); numba's on-disk cache warm"
        if not simpy:
            return out
        try:
            import simpy as _simpy  # noqa: F401
        except ImportError:
            out["simpy"] = {"status": "skipped", "reason": "simpy is not installed (pip install 'clustergym[bench]')"}
            return out
        if log:
            log(f"replay: SimPy reference {SIMPY_MODULE} on the same run")
        cmd = [sys.executable, "-m", SIMPY_MODULE, "--json", "--servers", str(servers), "--scan", str(REPLAY_SCAN)]
        if first_n is not None:
            cmd += ["--first-n", str(first_n)]
        whole = timed_process(cmd, timeout, env)
        out["simpy"] = whole.pop("output")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    _side_by_side(out, whole)
    return out


def _whole_process(
    first_n: int | None, servers: int, timeout: float, env: dict[str, str], log: Callable[[str], Any] | None
) -> dict[str, Any]:
    """The whole ``clustergym run`` process of the replay, on a cold and then a warm trace cache."""
    runs: dict[str, Any] = {}
    for phase in ("cold", "warm"):
        if log:
            log(f"replay: the whole `clustergym run` process, {phase} trace cache")
        r = timed_process(replay_command(first_n, servers), timeout, env)
        m = r.pop("output")
        r.update(
            {
                "mean_wait": m["mean_wait"],
                "mean_queue_length": m["mean_queue_length"],
                "episode_wall_seconds": m["wall_seconds"],
            }
        )
        runs[phase] = r
    runs["command"] = " ".join(["python"] + replay_command(first_n, servers)[1:])
    return runs


def _side_by_side(out: dict[str, Any], whole: dict[str, Any]) -> None:
    """Add to ``out`` whether clustergym and SimPy give the same metrics and how much faster clustergym is
    (the simulation alone, and with ``out["whole_process"]``, the whole processes; ``whole``: SimPy's)."""
    cg, sp = out["clustergym"], out["simpy"]
    out["identical_metrics"] = bool(
        cg["mean_wait"] == sp["mean_wait"] and cg["mean_queue_length"] == sp["mean_queue_length"]
    )
    out["relative_difference"] = {
        k: abs(cg[k] - sp[k]) / max(abs(sp[k]), 1e-300) for k in ("mean_wait", "mean_queue_length", "sim_time")
    }
    out["speedup_wall"] = sp["wall_seconds"] / cg["wall_seconds"]
    out["speedup_cpu"] = sp["cpu_seconds"] / cg["cpu_seconds"]
    if "whole_process" in out:
        wp = out["whole_process"]
        wp["simpy"] = whole
        wp["identical_metrics"] = all(
            wp[ph]["mean_wait"] == sp["mean_wait"] and wp[ph]["mean_queue_length"] == sp["mean_queue_length"]
            for ph in ("cold", "warm")
        )
        wp["speedup"] = {
            f"{ph}_{kind}": whole[f"{kind}_seconds"] / wp[ph][f"{kind}_seconds"]
            for ph in ("cold", "warm")
            for kind in ("wall", "cpu")
        }
        # the figure of record: both processes read the parsed trace from the cache, in CPU time (the machine
        # is shared; wall beside it); then the first run's cost (parsing the trace into the cache), paid once
        wp["ratio"] = wp["speedup"]["warm_cpu"]
        wp["ratio_wall"] = wp["speedup"]["warm_wall"]
        wp["first_run_wall_seconds"] = wp["cold"]["wall_seconds"]
        wp["first_run_cpu_seconds"] = wp["cold"]["cpu_seconds"]
        wp["reference"] = REFERENCE
