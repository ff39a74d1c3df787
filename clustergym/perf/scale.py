"""``clustergym bench --scale``: events/s and env steps/s against the number of servers, and their plot."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from clustergym.perf.measure import rate_row
from clustergym.scenarios import make_preset

__all__ = ["QUICK_SCALE", "SCALE_AGENTS", "SCALE_SERVERS", "bench_scale", "plot_scale"]


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
    from clustergym.agent_api import agent_context, make_agent, make_env_for

    p = {k: (float(v.split()[0]) * L if isinstance(v, str) and v.endswith(" L") else v) for k, v in params.items()}
    sc = make_preset("ec2", num_servers=L, zeta=0.9, horizon=1e9, queue_cap=None)
    agent = make_agent(agent_name, **p)
    env = make_env_for(sc, agent)
    sim = env.sim
    obs, _ = env.reset(seed=seed)
    agent.reset(agent_context(env, seed), seed=seed)
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
    row = rate_row(label, "ec2", L, sim.n_events - e0, steps, wall, cpu)
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
    row = rate_row("env-random", "ec2", L, sim.n_events - e0, steps, wall, cpu)
    # the policy's own O(L) work (flatnonzero over the mask) is in the rates above; this is env.step alone
    row["env_steps_per_second"] = steps / inside[0]
    row["env_steps_per_cpu_second"] = steps / inside[1]
    row.update(_end_state(env))
    return row


#: ``quick=True``: sizes for a smoke test of the scale benchmark
QUICK_SCALE: dict[str, Any] = {"events": 2_000, "steps": 1_000, "warmup": 0.05}


def bench_scale(
    servers: tuple[int, ...] | None = None,
    events: int = 30_000,
    steps: int = 20_000,
    warmup: float = 1.0,
    log: Callable[[str], Any] | None = None,
    agents: tuple[tuple[str, str, dict[str, Any]], ...] = SCALE_AGENTS,
    *,
    quick: bool = False,
    plot: str | Path | None = None,
) -> dict[str, Any]:
    """Events/s and env steps/s against the number of servers (``ec2``, arrival rates scale with L).

    Each row starts a fresh episode (seed 0, queue cap off), runs it for ``warmup`` time
    units (1.0 = one mean service time: the cluster is at its working load) and then times
    ``events`` events (kernel rows: the agent through ``env.step``, commands one step each)
    or ``steps`` steps (the masked random policy through the Gymnasium API, observations
    built).  The compiled path is not used.  ``ratios`` divides each rate at the largest L
    by its rate at L = 200 (the targets: >= 1/3 for Best-Fit and First-Fit, >= 1/2
    for the env).  ``digest`` fingerprints the schedule (job servers and start times), so
    two versions of the code can be checked to simulate the same run.  ``servers`` defaults
    to :data:`SCALE_SERVERS`.  ``quick``: the sizes of :data:`QUICK_SCALE` in place of ``events``,
    ``steps`` and ``warmup``.  ``plot``: an image file for :func:`plot_scale`, checked before anything
    runs (its path is returned as ``"plot"``).
    """
    if quick:
        events, steps, warmup = QUICK_SCALE["events"], QUICK_SCALE["steps"], QUICK_SCALE["warmup"]
    if plot is not None:
        from clustergym.runner.figures import check_image_target

        check_image_target(Path(plot), "bench --scale --plot")
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
    res = {
        "servers": list(servers),
        "events": events,
        "steps": steps,
        "warmup": warmup,
        "rows": rows,
        "ratios_to_200": _ratios(rows, servers, [a[0] for a in agents]),
    }
    if plot is not None:
        res["plot"] = str(plot_scale(res, plot))
    return res


def _ratios(rows: list[dict[str, Any]], servers: tuple[int, ...], labels: list[str]) -> dict[str, Any]:
    """Each row's rates at the largest L divided by its rates at L = 200 (empty without L = 200)."""
    ratios: dict[str, Any] = {}
    if 200 in servers and len(servers) > 1:
        top = max(servers)
        for label in labels + ["env-random"]:
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
    return ratios


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
