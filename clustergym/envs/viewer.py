"""Rendering of the cluster state (the environment's viewer): text, and RGB frames drawn with NumPy.

:func:`render_text` is the ``ansi``/``human`` render.  :func:`render_rgb` is the ``rgb_array``
render (what Gymnasium's ``RecordVideo`` and SB3's ``VecVideoRecorder`` record): a frame of fixed
size for an environment, from top to bottom

* a header: the time, the current event's kind and the number of waiting jobs (a 3x5 pixel font);
* the time as a bar over the horizon;
* the queue: one cell per queue-window row (``K`` cells, the first ``K`` waiting jobs in arrival
  order), each showing the job's demand per resource as a fraction of the largest capacity, then
  the count of waiting jobs as a bar (``log1p`` scale, full at 1,000 jobs);
* one row per server (the first :data:`MAX_ROWS`): per resource, the used fraction of the server's
  capacity (``load / capacity``), in the resource's colour; the event's server is marked in the
  left margin.

No drawing library is needed (the core install stays lean).
"""

from __future__ import annotations

import math

import numpy as np

from clustergym.core.simulator import Simulator
from clustergym.core.view import ClusterView

__all__ = ["render_text", "render_rgb", "frame_height", "MAX_ROWS", "FRAME_WIDTH"]

#: servers drawn in an RGB frame (the rest are summarised by the text render)
MAX_ROWS = 32
#: width of an RGB frame in pixels (its height depends on the number of servers drawn)
FRAME_WIDTH = 320

_BG = np.array([24, 24, 28], np.uint8)
_TRACK = np.array([56, 56, 64], np.uint8)
_FG = np.array([235, 235, 235], np.uint8)
_MARK = np.array([255, 200, 40], np.uint8)
#: one colour per resource (cycled beyond six)
_COLOURS = np.array(
    [[66, 165, 245], [102, 187, 106], [239, 83, 80], [171, 71, 188], [255, 167, 38], [38, 198, 218]], np.uint8
)

# a 3x5 pixel font: each glyph is five rows of three bits (the characters the header uses)
_GLYPHS = {
    "0": "111101101101111",
    "1": "010110010010111",
    "2": "111001111100111",
    "3": "111001111001111",
    "4": "101101111001001",
    "5": "111100111001111",
    "6": "111100111101111",
    "7": "111001001001001",
    "8": "111101111101111",
    "9": "111101111001111",
    ".": "000000000000010",
    " ": "000000000000000",
    "=": "000111000111000",
    "-": "000000111000000",
    "A": "010101111101101",
    "C": "011100100100011",
    "E": "111100111100111",
    "H": "101101111101101",
    "I": "111010010010111",
    "K": "101101110101101",
    "L": "100100100100111",
    "M": "101111111101101",
    "N": "110101101101101",
    "O": "010101101101010",
    "P": "110101110100100",
    "Q": "010101101110011",
    "R": "110101110101101",
    "S": "011100010001110",
    "T": "111010010010010",
    "U": "101101101101111",
    "V": "101101101101010",
    "W": "101101111111101",
    "Z": "111001010100111",
}
_SCALE = 2  # font pixels per glyph pixel
_PAD = 4


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


def _text(frame: np.ndarray, x: int, y: int, text: str) -> None:
    """Draw ``text`` (upper-cased; characters outside the font as blanks) at pixel ``(x, y)``."""
    for ch in text.upper():
        bits = _GLYPHS.get(ch, _GLYPHS[" "])
        glyph = np.array([b == "1" for b in bits]).reshape(5, 3)
        block = np.kron(glyph, np.ones((_SCALE, _SCALE), bool))
        h, w = block.shape
        if x + w > frame.shape[1]:
            return
        frame[y : y + h, x : x + w][block] = _FG
        x += (3 + 1) * _SCALE


def _fill(frame: np.ndarray, x: int, y: int, w: int, h: int, fraction: float, colour: np.ndarray) -> None:
    """A horizontal gauge: a track of ``w x h`` pixels filled to ``fraction`` (clipped to [0, 1])."""
    frame[y : y + h, x : x + w] = _TRACK
    n = int(round(max(0.0, min(1.0, fraction)) * w))
    frame[y : y + h, x : x + n] = colour


def frame_height(num_servers: int, num_resources: int) -> int:
    """The height of the frames of an environment with these sizes in pixels (constant over its
    episodes), rounded up to an even number: video encoders' 4:2:0 pixel format (``yuv420p``, what
    players expect of an MP4) needs even sides, and moviepy, which ``RecordVideo`` and
    ``VecVideoRecorder`` write with, falls back to another format for odd ones."""
    header = _PAD + 5 * _SCALE + _PAD + 4 + _PAD
    rows = _row_height(num_resources) * min(num_servers, MAX_ROWS)
    height = header + _queue_height(num_resources) + _PAD + rows + _PAD
    return height + height % 2


def _bar_height(num_resources: int) -> int:
    return max(2, 6 // num_resources)


def _row_height(num_resources: int) -> int:
    return 2 + (_bar_height(num_resources) + 1) * num_resources


def _queue_height(num_resources: int) -> int:
    return max(12, (_bar_height(num_resources) + 1) * num_resources + 2)


def render_rgb(view: ClusterView, queue_window: int) -> np.ndarray:
    """An RGB frame of the state, ``(H, FRAME_WIDTH, 3)`` ``uint8``, ``H`` from :func:`frame_height`.

    Args:
        view: the environment's read-only view of the simulator.
        queue_window: ``K``, the queue cells drawn (the environment's queue window).
    """
    L, R = view.num_servers, view.num_resources
    W = FRAME_WIDTH
    frame = np.empty((frame_height(L, R), W, 3), np.uint8)
    frame[:] = _BG
    ev = view.event
    horizon = view.horizon
    _text(frame, _PAD, _PAD, f"T={view.now:.1f} {ev.kind.name} Q={view.num_queued}")
    y = _PAD + 5 * _SCALE + _PAD
    _fill(frame, _PAD, y, W - 2 * _PAD, 4, view.now / horizon if math.isfinite(horizon) and horizon > 0 else 0.0, _FG)
    y += 4 + _PAD
    _draw_queue(frame, view, queue_window, y)
    y += _queue_height(R) + _PAD
    _draw_servers(frame, view, y, ev.server)
    return frame


def _draw_queue(frame: np.ndarray, view: ClusterView, queue_window: int, y: int) -> None:
    """The window's cells (demand per resource / largest capacity) and the count of waiting jobs."""
    R = view.num_resources
    h = _queue_height(R)
    big = np.maximum(view.capacity.max(axis=0), 1e-12)
    cells_w = (FRAME_WIDTH - 2 * _PAD) * 2 // 3
    cell = max(4, cells_w // max(queue_window, 1))
    jobs = view.queue(queue_window) if view.queueing == "central" else ()
    if view.pending >= 0:  # a loss system's arriving job
        jobs = (view.pending,)
    for i in range(queue_window):
        x = _PAD + i * cell
        if x + cell > _PAD + cells_w:
            break
        frame[y : y + h, x : x + cell - 1] = _TRACK
        if i < len(jobs):
            demand = view.demand(jobs[i]) / big
            bh = _bar_height(R)
            for r in range(R):
                colour = _COLOURS[r % len(_COLOURS)]
                _fill(frame, x + 1, y + 1 + (bh + 1) * r, cell - 3, bh, float(demand[r]), colour)
    x0 = _PAD + cells_w + _PAD
    _fill(frame, x0, y, FRAME_WIDTH - _PAD - x0, h, math.log1p(view.num_queued) / math.log1p(1000), _MARK)


def _draw_servers(frame: np.ndarray, view: ClusterView, y: int, event_server: int) -> None:
    """One row per server: the used fraction of each resource, the event's server marked."""
    R = view.num_resources
    cap = np.where(view.capacity > 0, view.capacity, 1.0)
    used = np.asarray(view.load) / cap
    rh, bh = _row_height(R), _bar_height(R)
    x0 = _PAD + 4
    for s in range(min(view.num_servers, MAX_ROWS)):
        top = y + s * rh
        if s == event_server:
            frame[top : top + rh - 2, _PAD : _PAD + 2] = _MARK
        for r in range(R):
            colour = _COLOURS[r % len(_COLOURS)]
            _fill(frame, x0, top + (bh + 1) * r, FRAME_WIDTH - _PAD - x0, bh, float(used[s, r]), colour)
