"""Text rendering of the cluster state (the environment's viewer)."""

from __future__ import annotations

import numpy as np

from clustergym.core.simulator import Simulator

__all__ = ["render_text"]


def _bar(fraction: float, width: int = 20) -> str:
    n = int(round(max(0.0, min(1.0, fraction)) * width))
    return "#" * n + "." * (width - n)


def render_text(sim: Simulator, max_servers: int = 20) -> str:
    """A few lines: time, queue, and per-server utilisation bars of the busiest resource."""
    c = sim.cluster
    cap = np.where(c.capacity > 0, c.capacity, 1.0)
    used = (c.load / cap).max(axis=1)
    lines = [
        f"t={sim.now:.3f}  event={sim.event.kind.name.lower()}  queued={sim.n_queued}  "
        f"running={sim.n_running}  completed={sim.n_completed}  rejected={sim.n_rejected}",
    ]
    shown = min(sim.num_servers, max_servers)
    for s in range(shown):
        lines.append(
            f"  server {s:4d} [{_bar(used[s])}] jobs={int(c.count_real[s].sum())}"
            f" dummies={int(c.count_dummy[s].sum())} slots={int(c.slots[s].sum())}"
        )
    if sim.num_servers > shown:
        lines.append(f"  ... {sim.num_servers - shown} more servers, mean load {used.mean():.2f}")
    return "\n".join(lines)
