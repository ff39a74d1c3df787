"""``clustergym bench``: speed and memory figures, measured side by side in one run.

Measured, never asserted: the test suite checks correctness only.  Sections:

* ``benchmarks`` (rows) -- on ``ec2`` (20 servers) and ``ec2`` with 1000 servers
  (arrival rates scale with L):

  - ``kernel``: work-conserving Best-Fit driven through the environment by
    ``Command`` objects, one ``step`` per command: simulated events per second;
  - ``kernel-compiled``: Best-Fit with a 64-job scan window on the compiled
    whole-episode path (:mod:`clustergym.core.fastpath`; only with numba);
  - ``env-random``: the masked random policy through the Gymnasium API (``head``
    action mode, trivial epochs skipped, observations built): steps per second.

* ``replay`` -- the Google Best-Fit replay of issue #10 (``google-bf-replay``:
  completed tasks, CPU and memory, 420 unit servers, Best-Fit over the first 64
  queued jobs at every arrival and completion) through ``clustergym`` and through
  the SimPy reference :mod:`clustergym.perf.simpy_bestfit`, each in its own process, one
  after the other: simulation wall and CPU time (trace loading excluded), peak RSS,
  the two metrics side by side, and the speed-up ratio.  Then the **whole process**
  (issue #22: interpreter start, imports, trace loading, simulation, output) of
  ``python -m clustergym run google-bf-replay --agent best-fit --set agent.scan=64 --json``,
  twice on a fresh, empty on-disk trace cache (:mod:`clustergym.traces.diskcache`): ``cold``
  (parses the CSV parts and writes the table) and ``warm`` (reads it), and of the SimPy
  reference's process (on the warm cache: it loads the trace through the same loader); wall
  time, user + system CPU time and peak RSS of each process (``os.wait4``), and the ratios.

* ``ppo`` -- the share of ``MaskablePPO.learn`` wall time spent inside the
  environment (``reset``, ``step``, ``action_masks``) on ``ec2``.

* ``memory`` and ``memory_bounded`` (opt-in, ``memory_events``) -- resident memory of a
  child process sampled over a run of that many events (Best-Fit, ``ec2``), with the
  default job table and with ``job_memory="bounded"``, one after the other.

* ``scale`` (``clustergym bench --scale``, :func:`bench_scale`) -- the same rates
  against the number of servers, L = 20, 200, 2,000, 20,000 on ``ec2`` (arrival
  rates scale with L): events per second of Best-Fit, First-Fit and RMS-BF (its
  clock at 30 ticks per 20 servers, the paper's density) through ``env.step``, and
  env steps per second of the masked random policy; measured over a window of
  events after a warm-up that brings the cluster to its working load; bytes per
  server of the per-server state; a log-log plot with ``--plot PATH``.

Every time is reported as wall-clock seconds and, beside it, CPU seconds of the
process that did the work (less sensitive to other load on the machine).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from clustergym.runner import run_episode
from clustergym.scenarios import make_preset

__all__ = [
    "REPLAY_SCAN",
    "SCALE_SERVERS",
    "bench_memory",
    "bench_ppo_share",
    "bench_replay",
    "bench_scale",
    "plot_scale",
    "replay_command",
    "run_benchmarks",
]

REPLAY_SCAN = 64
#: the SimPy reference, run as ``python -m clustergym.perf.simpy_bestfit`` (needs the ``bench`` extra)
SIMPY_MODULE = "clustergym.perf.simpy_bestfit"


def _random_steps(scenario, seed: int, max_steps: int) -> tuple[int, int, float, float]:
    from clustergym.envs import ClusterEnv

    env = ClusterEnv(scenario)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    c0 = time.process_time()
    t0 = time.perf_counter()
    steps = 0
    while steps < max_steps:
        valid = np.flatnonzero(obs["action_mask"])
        obs, _, term, trunc, _ = env.step(int(valid[rng.integers(valid.size)]))
        steps += 1
        if term or trunc:
            obs, _ = env.reset(seed=seed + steps)
    return steps, env.sim.n_events, time.perf_counter() - t0, time.process_time() - c0


def _row(bench: str, name: str, L: int, events: int, steps: int, wall: float, cpu: float) -> dict[str, Any]:
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


def _kernel_rows(quick: bool, log: Callable[[str], Any] | None) -> list[dict[str, Any]]:
    from clustergym.agent_api import make_agent
    from clustergym.core import accel

    cases = [("ec2", 20, 200.0 if quick else 1000.0), ("ec2", 1000, 4.0 if quick else 20.0)]
    rows = []
    for name, L, horizon in cases:
        sc = make_preset(name, num_servers=L, zeta=0.9, horizon=horizon)
        if log:
            log(f"kernel: best-fit on {name} L={L} horizon={horizon:g}")
        c0 = time.process_time()
        r = run_episode(sc, "best-fit", seed=0)
        rows.append(_row("kernel", name, L, r["events"], r["steps"], r["wall_seconds"], time.process_time() - c0))
        if accel.enabled():
            run_episode(sc.with_horizon(1.0), make_agent("best-fit", scan=REPLAY_SCAN), seed=0)  # compile / load cache
            if log:
                log(f"kernel-compiled: best-fit scan={REPLAY_SCAN} on {name} L={L} horizon={10 * horizon:g}")
            c0 = time.process_time()
            r = run_episode(sc.with_horizon(10 * horizon), make_agent("best-fit", scan=REPLAY_SCAN), seed=0)
            rows.append(
                _row("kernel-compiled", name, L, r["events"], r["steps"], r["wall_seconds"], time.process_time() - c0)
            )
        max_steps = 5_000 if quick else 50_000
        if log:
            log(f"env-random: masked random policy on {name} L={L}, {max_steps} steps")
        steps, events, wall, cpu = _random_steps(sc.with_horizon(1e9), 0, max_steps)
        rows.append(_row("env-random", name, L, events, steps, wall, cpu))
    return rows


# ---------------------------------------------------------------------------------------------- replay


def _child_json(cmd: list[str], timeout: float) -> dict[str, Any]:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout)


def _replay_child(first_n: int | None, servers: int) -> None:
    """In a child process: the replay through clustergym; prints one JSON line."""

    from clustergym.agent_api import make_agent
    from clustergym.core import accel
    from clustergym.scenarios import resolve_scenario

    t0 = time.perf_counter()
    sc = resolve_scenario("google-bf-replay", num_servers=servers, first_n=first_n)
    load_s = time.perf_counter() - t0
    rss_loaded = _rss_mb(os.getpid())
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


def _timed_process(cmd: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
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
    from clustergym.traces.paths import traces_available

    if not traces_available():
        from clustergym.traces.paths import default_trace_dir

        return {"status": "skipped", "reason": f"traces not found ({default_trace_dir()}): set CLUSTERGYM_TRACES"}
    what = "all" if first_n is None else f"the first {first_n:,}"
    if log:
        log(f"replay: clustergym best-fit scan={REPLAY_SCAN} on google-bf-replay ({what} tasks, L={servers})")
    code = f"from clustergym.perf import _replay_child; _replay_child({first_n!r}, {servers})"
    cg = _child_json([sys.executable, "-c", code], timeout)
    out: dict[str, Any] = {"status": "ok", "clustergym": cg}
    import shutil
    import tempfile

    from clustergym.traces.diskcache import ENV_VAR as CACHE_VAR

    cache = tempfile.mkdtemp(prefix="clustergym-bench-trace-cache-")
    env = dict(os.environ, **{CACHE_VAR: cache})
    try:
        if whole_process:
            runs = {}
            for phase in ("cold", "warm"):
                if log:
                    log(f"replay: the whole `clustergym run` process, {phase} trace cache")
                r = _timed_process(replay_command(first_n, servers), timeout, env)
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
            runs["trace_cache"] = "a fresh empty directory ($" + CACHE_VAR + "); numba's on-disk cache warm"
            out["whole_process"] = runs
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
        whole = _timed_process(cmd, timeout, env)
        sp = whole.pop("output")
        out["simpy"] = sp
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    out["identical_metrics"] = bool(
        cg["mean_wait"] == sp["mean_wait"] and cg["mean_queue_length"] == sp["mean_queue_length"]
    )
    out["relative_difference"] = {
        k: abs(cg[k] - sp[k]) / max(abs(sp[k]), 1e-300) for k in ("mean_wait", "mean_queue_length", "sim_time")
    }
    out["speedup_wall"] = sp["wall_seconds"] / cg["wall_seconds"]
    out["speedup_cpu"] = sp["cpu_seconds"] / cg["cpu_seconds"]
    if whole_process:
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
        # the figure of record: both processes read the parsed trace from the cache; beside it, the first
        # run's cost (parsing the trace into the cache), which a user pays once
        wp["ratio"] = wp["speedup"]["warm_wall"]
        wp["first_run_wall_seconds"] = wp["cold"]["wall_seconds"]
    return out


# ---------------------------------------------------------------------------------------------- PPO share


def bench_ppo_share(timesteps: int = 4096, log: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """Share of ``MaskablePPO.learn`` wall time spent in the environment on ``ec2`` (CPU torch, seed 0)."""
    import gymnasium as gym
    import torch
    from gymnasium.wrappers import FlattenObservation
    from sb3_contrib import MaskablePPO

    from clustergym.envs import ClusterEnv

    class Timed(gym.Wrapper):
        """Accumulates the wall time of reset, step and action_masks."""

        def __init__(self, env: gym.Env):
            super().__init__(env)
            self.seconds = 0.0
            self.steps = 0

        def reset(self, **kw: Any):
            t = time.perf_counter()
            r = self.env.reset(**kw)
            self.seconds += time.perf_counter() - t
            return r

        def step(self, action: Any):
            t = time.perf_counter()
            r = self.env.step(action)
            self.seconds += time.perf_counter() - t
            self.steps += 1
            return r

        def action_masks(self) -> np.ndarray:
            t = time.perf_counter()
            m = self.env.unwrapped.action_masks()
            self.seconds += time.perf_counter() - t
            return m

    if log:
        log(f"ppo: MaskablePPO on ec2 for {timesteps} steps, timing the env")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one core for the learner, as on CI; restored below
    try:
        env = Timed(FlattenObservation(ClusterEnv("ec2", horizon=200.0)))
        model = MaskablePPO(
            "MlpPolicy", env, seed=0, n_steps=min(2048, timesteps), batch_size=64, verbose=0, device="cpu"
        )
        c0 = time.process_time()
        t0 = time.perf_counter()
        model.learn(timesteps)
        wall = time.perf_counter() - t0
    finally:
        torch.set_num_threads(threads)
    return {
        "scenario": "ec2",
        "timesteps": timesteps,
        "env_steps": env.steps,
        "learn_wall_seconds": wall,
        "learn_cpu_seconds": time.process_time() - c0,
        "env_wall_seconds": env.seconds,
        "env_share": env.seconds / wall,
        "env_steps_per_second": env.steps / env.seconds,
    }


# ---------------------------------------------------------------------------------------------- memory


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _memory_child(events: int, scan: int | None, job_memory: str = "full") -> None:
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
    code = f"from clustergym.perf import _memory_child; _memory_child({events}, {scan!r}, {job_memory!r})"
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    samples: list[tuple[float, float]] = []
    while p.poll() is None:
        try:
            samples.append((time.time() - t0, _rss_mb(p.pid)))
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


# ---------------------------------------------------------------------------------------------- scale

SCALE_SERVERS = (20, 200, 2_000, 20_000)
#: kernel rows of the scale benchmark: (label, agent, parameters; "L" in a value is the number of servers)
SCALE_AGENTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("best-fit", "best-fit", {}),
    ("first-fit", "first-fit", {}),
    (
        "rms-bf",
        "rms-bf",
        {"total_rate": "1.5 L"},
    ),  # 30 ticks per time unit per 20 servers (docs/papers/rms.md, parameters the simulations do not state)
)


def _digest(sim: Any) -> str:
    """A fingerprint of the schedule so far (each job's server and start time): equal runs, equal digests."""
    import hashlib

    n = sim.jobs.size
    h = hashlib.sha256(np.ascontiguousarray(sim.jobs.server[:n]).tobytes())
    h.update(np.ascontiguousarray(sim.jobs.start[:n]).tobytes())
    return h.hexdigest()[:16]


def _per_server_bytes(env: Any) -> tuple[float, float]:
    """Bytes per server of the per-server state (cluster arrays, placement index, observation
    buffers, running sets), and of the placement index alone."""
    sim = env.sim
    c = sim.cluster
    L = sim.num_servers
    arrays = [v for v in vars(c).values() if isinstance(v, np.ndarray)]
    arrays += [sim.speed, sim.local_count]
    b = getattr(env, "obs_builder", None)
    if b is not None:  # its scratch arrays and its flat feature buffers (the environment's, the scaled one)
        arrays += [v for v in vars(b).values() if isinstance(v, np.ndarray)]
        arrays += list({id(x.buf): x.buf for x in (b._raw, b._out)}.values())
    index = c.placement.nbytes() if hasattr(c, "placement") else 0
    total = sum(a.nbytes for a in arrays) + index + sum(sys.getsizeof(r) for r in sim.running)
    return total / L, index / L


def _scale_kernel_row(
    label: str, agent_name: str, params: dict[str, Any], L: int, events: int, warmup: float, seed: int = 0
) -> dict[str, Any]:
    from clustergym.agent_api import make_agent, make_env_for

    p = {k: (float(v.split()[0]) * L if isinstance(v, str) and v.endswith(" L") else v) for k, v in params.items()}
    sc = make_preset("ec2", num_servers=L, zeta=0.9, horizon=1e9, queue_cap=None)
    agent = make_agent(agent_name, **p)
    env = make_env_for(sc, agent)
    sim = env.sim
    obs, _ = env.reset(seed=seed)
    agent.reset(env, seed=seed)
    while sim.now < warmup:
        action, _ = agent.predict(obs, deterministic=True)
        obs, *_ = env.step(action)
    e0, steps = sim.n_events, 0
    c0, t0 = time.process_time(), time.perf_counter()
    while sim.n_events - e0 < events:
        action, _ = agent.predict(obs, deterministic=True)
        obs, *_ = env.step(action)
        steps += 1
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    row = _row(label, "ec2", L, sim.n_events - e0, steps, wall, cpu)
    row.update(_end_state(env))
    return row


def _end_state(env: Any) -> dict[str, Any]:
    """The state a scale row ends in (queued and running jobs, time, a digest of the schedule) and
    the memory per server of the env and of the placement index."""
    sim = env.unwrapped.sim
    per_server, index = _per_server_bytes(env)
    return {
        "queued": sim.n_queued,
        "running": sim.n_running,
        "sim_time": sim.now,
        "digest": _digest(sim),
        "bytes_per_server": per_server,
        "index_bytes_per_server": index,
    }


def _scale_env_row(L: int, steps: int, warmup: float, seed: int = 0) -> dict[str, Any]:
    from clustergym.envs import ClusterEnv

    env = ClusterEnv(make_preset("ec2", num_servers=L, zeta=0.9, horizon=1e9, queue_cap=None))
    sim = env.sim
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)

    inside = [0.0, 0.0]  # wall and CPU seconds inside env.step
    clock, cpu_clock = time.perf_counter, time.process_time

    def step(obs: dict) -> dict:
        # the masked random policy of the "env-random" rows, reading the bool mask MaskablePPO reads
        # (action_masks(), equal to obs["action_mask"]: the same draws; np.flatnonzero over the int8
        # copy in the observation costs the policy itself about 40 us at L = 20,000)
        valid = np.flatnonzero(env.action_masks())
        action = int(valid[rng.integers(valid.size)])
        t, c = clock(), cpu_clock()
        obs = env.step(action)[0]
        inside[0] += clock() - t
        inside[1] += cpu_clock() - c
        return obs

    while sim.now < warmup:
        obs = step(obs)
    e0 = sim.n_events
    inside[:] = [0.0, 0.0]
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(steps):
        obs = step(obs)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    row = _row("env-random", "ec2", L, sim.n_events - e0, steps, wall, cpu)
    # the policy's own O(L) work (flatnonzero over the mask) is in the rates above; this is env.step alone
    row["env_steps_per_second"] = steps / inside[0]
    row["env_steps_per_cpu_second"] = steps / inside[1]
    row.update(_end_state(env))
    return row


def bench_scale(
    servers: tuple[int, ...] | None = None,
    events: int = 30_000,
    steps: int = 20_000,
    warmup: float = 1.0,
    log: Callable[[str], Any] | None = None,
    agents: tuple[tuple[str, str, dict[str, Any]], ...] = SCALE_AGENTS,
) -> dict[str, Any]:
    """Events/s and env steps/s against the number of servers (``ec2``, arrival rates scale with L).

    Each row starts a fresh episode (seed 0, queue cap off), runs it for ``warmup`` time
    units (1.0 = one mean service time: the cluster is at its working load) and then times
    ``events`` events (kernel rows: the agent through ``env.step``, commands one step each)
    or ``steps`` steps (the masked random policy through the Gymnasium API, observations
    built).  The compiled path is not used.  ``ratios`` divides each rate at the largest L
    by its rate at L = 200 (the issue's targets: >= 1/3 for Best-Fit and First-Fit, >= 1/2
    for the env).  ``digest`` fingerprints the schedule (job servers and start times), so
    two versions of the code can be checked to simulate the same run.  ``servers`` defaults
    to :data:`SCALE_SERVERS`.
    """
    servers = tuple(servers or SCALE_SERVERS)
    rows = []
    for L in servers:
        for label, agent, params in agents:
            if log:
                log(f"scale: {label} on ec2 L={L:,}: warm-up {warmup:g} time units, then {events:,} events")
            rows.append(_scale_kernel_row(label, agent, params, L, events, warmup))
        if log:
            log(f"scale: masked random policy on ec2 L={L:,}: warm-up {warmup:g} time units, then {steps:,} steps")
        rows.append(_scale_env_row(L, steps, warmup))
    ratios: dict[str, Any] = {}
    if 200 in servers and len(servers) > 1:
        top = max(servers)
        for label in [a[0] for a in agents] + ["env-random"]:
            at = {r["servers"]: r for r in rows if r["benchmark"] == label}
            key = "steps" if label == "env-random" else "events"
            ratios[label] = {
                "servers": top,
                "wall": at[top][f"{key}_per_second"] / at[200][f"{key}_per_second"],
                "cpu": at[top][f"{key}_per_cpu_second"] / at[200][f"{key}_per_cpu_second"],
            }
            if label == "env-random":
                ratios[label]["env_only"] = at[top]["env_steps_per_second"] / at[200]["env_steps_per_second"]
                ratios[label]["env_only_cpu"] = (
                    at[top]["env_steps_per_cpu_second"] / at[200]["env_steps_per_cpu_second"]
                )
    return {
        "servers": list(servers),
        "events": events,
        "steps": steps,
        "warmup": warmup,
        "rows": rows,
        "ratios_to_200": ratios,
    }


def plot_scale(result: dict[str, Any], path: str | Path) -> Path:
    """Log-log plot of the scale benchmark: events/s per kernel row and steps/s of the env, against L."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    labels = list(dict.fromkeys(r["benchmark"] for r in result["rows"]))
    for label in labels:
        rs = sorted((r for r in result["rows"] if r["benchmark"] == label), key=lambda r: r["servers"])
        key = "steps_per_cpu_second" if label == "env-random" else "events_per_cpu_second"
        ax.plot(
            [r["servers"] for r in rs],
            [r[key] for r in rs],
            marker="o",
            label=f"{label} ({'steps, policy included' if label == 'env-random' else 'events'} / CPU-s)",
        )
        if label == "env-random" and all("env_steps_per_cpu_second" in r for r in rs):
            ax.plot(
                [r["servers"] for r in rs],
                [r["env_steps_per_cpu_second"] for r in rs],
                marker="o",
                linestyle="--",
                label="env.step alone (steps / CPU-s)",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("servers L")
    ax.set_ylabel("rate per CPU second")
    ax.set_title("clustergym bench --scale (ec2)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------------------------- all


def run_benchmarks(
    quick: bool = False,
    log: Callable[[str], Any] | None = None,
    *,
    replay: bool = True,
    full_replay: bool = False,
    ppo: bool = True,
    memory_events: int = 0,
    env_steps: bool = True,
) -> dict[str, Any]:
    """Every section in one run (see the module docstring); ``--quick`` sizes for a smoke test.
    ``env_steps``: each suite task's steps/s against CartPole-v1's (:mod:`clustergym.perf.envspeed`)."""
    from clustergym.core import accel
    from clustergym.errors import ConfigError, require_extra
    from clustergym.validation import number

    number(memory_events, "--memory-events", lo=0, integer=True, error=ConfigError)
    if ppo:  # checked before anything runs
        require_extra(
            ("torch", "stable_baselines3", "sb3_contrib"), "train", "bench's PPO share (--ppo; --no-ppo skips it)"
        )
    out: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "processor": platform.machine(),
            "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()),
            "numba": accel.available() and accel.enabled(),
        },
        "benchmarks": _kernel_rows(quick, log),
    }
    if env_steps:
        from clustergym.perf.envspeed import bench_env_steps

        if quick:
            out["env_steps"] = bench_env_steps(["rms-trap", "mris-poisson"], steps=200, rounds=1, n_envs=4, log=log)
        else:
            out["env_steps"] = bench_env_steps(log=log)
    if replay:
        first_n = None if full_replay else (3_000 if quick else 50_000)
        out["replay"] = bench_replay(first_n=first_n, log=log)
    if ppo:
        out["ppo"] = bench_ppo_share(512 if quick else 8192, log=log)
    if memory_events:
        out["memory"] = bench_memory(memory_events, log=log)
        out["memory_bounded"] = bench_memory(memory_events, log=log, job_memory="bounded")
    out["machine"]["load_average_end"] = list(os.getloadavg())
    return out
