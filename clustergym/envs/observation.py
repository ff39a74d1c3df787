"""Observations: a ``gymnasium.spaces.Dict`` of fixed shapes.

With ``L`` servers, ``R`` resources, ``J`` job types and a queue window of ``K``
jobs, and ``F = R + J + 3`` job features (demand / largest capacity per
resource, one-hot type, weight, time waited, work if clairvoyant else 0):

================== =========== ===================================================
key                shape       content
================== =========== ===================================================
``free``           (L, R)      free capacity / capacity, in [0, 1]
``running``        (L, J)      real jobs of each type running on each server
``dummies``        (L, J)      dummy jobs (and reservation slots) of each type
``queue_counts``   (J,)        waiting jobs per type (all queues)
``queue_jobs``     (K, F)      features of the first K waiting jobs (arrival order)
``queue_mask``     (K,)        1 where a queue-window row holds a job
``event``          (5 + F,)    one-hot event kind (completion, arrival, tick,
                               wake-up, start) + features of the event's job
``event_server``   (L,)        one-hot server of the event (zeros if none)
``arrival_rates``  (J,)        exponentially weighted arrival rate per type, corrected
                               for the start (it does not grow with elapsed time)
``time``           (1,)        elapsed time / horizon (0 for an infinite horizon)
``action_mask``    (M,)        1 for valid actions of the action mode
================== =========== ===================================================

On large clusters (``L >= INCREMENTAL_MIN_SERVERS``) the per-server arrays
(``free``, ``running``, ``dummies``) are kept up to date incrementally: the
builder reads the cluster's journal of changed servers
(:meth:`~clustergym.core.cluster.Cluster.changes_since`) and recomputes only
their rows, with the same expressions as a whole recomputation, so the values
are identical; below, recomputing them whole is cheaper.  Every observation
holds fresh arrays: a caller may keep or change one without affecting the next.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from itertools import islice

import numpy as np
from gymnasium import spaces

from clustergym.core.commands import EventKind
from clustergym.core.simulator import Simulator

__all__ = ["INCREMENTAL_MIN_SERVERS", "ObservationBuilder"]

#: from this many servers on, the per-server features are kept from the cluster's journal (measured: the
#: whole recomputation is cheaper below about 1,000 servers, equal at 1,000, 25% dearer at 4,000)
INCREMENTAL_MIN_SERVERS = 1024

_EVENT_KINDS = (EventKind.COMPLETION, EventKind.ARRIVAL, EventKind.TICK, EventKind.WAKEUP, EventKind.START)
_EVENT_INDEX = {k: i for i, k in enumerate(_EVENT_KINDS)}


class ObservationBuilder:
    """Builds observations of one simulator (the dynamics) for the env."""

    def __init__(self, sim: Simulator, queue_window: int, mask_size: int, clairvoyant: bool):
        self.sim = sim
        self.K = queue_window
        self.clairvoyant = clairvoyant
        L, R, J = sim.num_servers, sim.num_resources, sim.num_types
        self.F = R + J + 3
        cap = sim.cluster.capacity
        self._cap = np.where(cap > 0, cap, 1.0)
        self._cap_rows = self._cap.tolist()
        # per-server features, maintained from the cluster's journal of changed servers (large clusters)
        self._incremental = L >= INCREMENTAL_MIN_SERVERS
        n = L if self._incremental else 0
        self._free = np.zeros((n, R), dtype=np.float32)
        self._running = np.zeros((n, J), dtype=np.float32)
        self._dummies = np.zeros((n, J), dtype=np.float32)
        self._cursor = -1
        self._full_at = max(8, L // 4)  # from this many changes on, recompute every row
        self._dummy_rows = False
        self._scale = np.where(cap.max(axis=0) > 0, cap.max(axis=0), 1.0)  # (R,)
        inf = np.inf
        f32 = np.float32
        # an OrderedDict keeps the keys in this table's order (a plain dict would be sorted by Gymnasium):
        # observations come back in the same order as the space, so flattening either gives one layout
        self.space = spaces.Dict(
            OrderedDict(
                {
                    "free": spaces.Box(0.0, 1.0, (L, R), f32),
                    "running": spaces.Box(0.0, inf, (L, J), f32),
                    "dummies": spaces.Box(0.0, inf, (L, J), f32),
                    "queue_counts": spaces.Box(0.0, inf, (J,), f32),
                    "queue_jobs": spaces.Box(0.0, inf, (self.K, self.F), f32),
                    "queue_mask": spaces.Box(0.0, 1.0, (self.K,), f32),
                    "event": spaces.Box(0.0, inf, (len(_EVENT_KINDS) + self.F,), f32),
                    "event_server": spaces.Box(0.0, 1.0, (L,), f32),
                    "arrival_rates": spaces.Box(0.0, inf, (J,), f32),
                    "time": spaces.Box(0.0, 1.0, (1,), f32),
                    "action_mask": spaces.Box(0, 1, (mask_size,), np.int8),
                }
            )
        )

    def _job_features(self, job: int, out: np.ndarray) -> None:
        sim = self.sim
        jobs = sim.jobs
        R, J = sim.num_resources, sim.num_types
        out[:R] = jobs.demand[job] / self._scale
        out[R + int(jobs.type[job])] = 1.0
        out[R + J] = jobs.weight[job]
        out[R + J + 1] = max(0.0, sim.now - jobs.arrival[job]) if jobs.status[job] == 1 else 0.0
        out[R + J + 2] = jobs.work[job] if self.clairvoyant else 0.0

    def _server_rows(self, rows) -> None:
        """Recompute the per-server features of ``rows`` (a list of servers, or every one)."""
        c = self.sim.cluster
        free = c.load[rows] / self._cap[rows]  # 1 - load/cap clipped to [0, 1], in place (np.clip's
        np.subtract(1.0, free, out=free)  # overhead is per call)
        np.maximum(free, 0.0, out=free)
        np.minimum(free, 1.0, out=free)
        self._free[rows] = free  # cast to float32 as astype would
        self._running[rows] = c.count_real[rows]
        # slot counts are all zero while the cluster has never had reservation slots
        self._dummies[rows] = c.count_dummy[rows] + c.slots[rows]
        if isinstance(rows, slice):
            # the dummy rows stay all zero until a dummy or a slot appears (then they are kept, sticky)
            self._dummy_rows = bool(c.had_dummies or c.any_slots)

    def _server_row(self, s: int) -> None:
        """:meth:`_server_rows` for one server, in Python floats (the same IEEE operations)."""
        c = self.sim.cluster
        self._free[s] = [min(max(1.0 - a / b, 0.0), 1.0) for a, b in zip(c.load[s].tolist(), self._cap_rows[s])]
        self._running[s] = c.count_real[s]
        if self._dummy_rows or c.had_dummies or c.any_slots:  # else count_dummy and slots are all zero
            self._dummy_rows = True
            self._dummies[s] = c.count_dummy[s] + c.slots[s]

    def _sync_servers(self) -> None:
        servers, self._cursor = self.sim.cluster.changes_since(self._cursor)
        if servers is None or len(servers) >= self._full_at:
            self._server_rows(slice(None))
        elif len(servers) <= 4:  # the usual one or two servers per step
            for s in set(servers):
                self._server_row(s)
        elif servers:
            self._server_rows(list(set(servers)))

    def build(self, mask: np.ndarray) -> dict[str, np.ndarray]:
        sim = self.sim
        L = sim.num_servers
        free: np.ndarray
        if self._incremental:  # copies of the kept rows: a later step never changes them
            self._sync_servers()
            free, running, dummies = self._free.copy(), self._running.copy(), self._dummies.copy()
        else:  # small clusters: the same values, computed whole into new arrays
            c = sim.cluster
            free = c.load / self._cap  # 1 - load/cap clipped to [0, 1], in place (np.clip's overhead is per call)
            np.subtract(1.0, free, out=free)
            np.maximum(free, 0.0, out=free)
            np.minimum(free, 1.0, out=free)
            free = free.astype(np.float32)
            running = c.count_real.astype(np.float32)
            # without reservation slots (any_slots False) the slot counts are all zero
            dummies = (c.count_dummy + c.slots if c.any_slots else c.count_dummy).astype(np.float32)
        qjobs = np.zeros((self.K, self.F), dtype=np.float32)
        qmask = np.zeros(self.K, dtype=np.float32)
        ids = list(islice(sim.queue, self.K))
        n = len(ids)
        if n <= 4:  # short queues: row by row is cheaper than fancy indexing
            for i, j in enumerate(ids):
                self._job_features(j, qjobs[i])
            qmask[:n] = 1.0
        else:  # the rows _job_features writes, for all window jobs at once (all are queued)
            jobs = sim.jobs
            R, J = sim.num_resources, sim.num_types
            qjobs[:n, :R] = jobs.demand[ids] / self._scale
            qjobs[np.arange(n), R + jobs.type[ids]] = 1.0
            qjobs[:n, R + J] = jobs.weight[ids]
            qjobs[:n, R + J + 1] = np.maximum(0.0, sim.now - jobs.arrival[ids])
            if self.clairvoyant:
                qjobs[:n, R + J + 2] = jobs.work[ids]
            qmask[:n] = 1.0
        event = np.zeros(len(_EVENT_KINDS) + self.F, dtype=np.float32)
        ev = sim.event
        k = _EVENT_INDEX.get(ev.kind)
        if k is not None:
            event[k] = 1.0
        if ev.job >= 0:
            self._job_features(ev.job, event[len(_EVENT_KINDS) :])
        event_server = np.zeros(L, dtype=np.float32)
        if ev.server >= 0:
            event_server[ev.server] = 1.0
        horizon = sim.horizon
        t = sim.now / horizon if math.isfinite(horizon) else 0.0
        return {
            "free": free,
            "running": running,
            "dummies": dummies,
            "queue_counts": sim.queued_by_type.astype(np.float32),
            "queue_jobs": qjobs,
            "queue_mask": qmask,
            "event": event,
            "event_server": event_server,
            "arrival_rates": sim.arrival_rate_estimate().astype(np.float32),
            "time": np.array([min(t, 1.0)], dtype=np.float32),
            "action_mask": mask.astype(np.int8),
        }
