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
``pair_scores``    (K + 1, L,  only with ``pair_features=True``: what the
                   P)          baselines' server rules see of each (job, server)
                               pair, for the K window jobs (rows 0..K-1, zeros
                               below the queue) and the event's job (row K)
================== =========== ===================================================

The ``P = 5`` pair scores (:data:`PAIR_FEATURES`), computed with the kernel's own fit test and
Best-Fit score, so that a policy sees exactly what the rules decide by:

* ``fits``: 1 if the job can start on the server now (free capacity, or an empty reservation slot);
* ``best_fit_score``: Best-Fit's tightness ``sum_r (d_r / C_r) (u_r / C_r)`` of the server (``u`` its
  occupied capacity; :func:`clustergym.core.placement.scan_scores`), 0 where the job does not fit;
* ``best_fit_choice``: 1 at the server Best-Fit would choose for the job (the tightest fitting one,
  ties to the lowest index: the choice of :func:`clustergym.core.placement.scan_select`, taken for all
  rows at once with :func:`clustergym.core.scores.argbest_rows`);
* ``first_fit_choice``: 1 at First-Fit's choice, the lowest-index fitting server (which a policy
  that is equivariant over servers cannot otherwise tell apart);
* ``tightest_left``: ``min_r (C_r - u_r - d_r) / C_r``, the smallest free fraction the server would
  keep after the placement, clipped to ``[-1, 1]`` (negative: the job does not fit in free capacity).

The *scaled* observation (:func:`scaled_observation`; the observation of the suite tasks,
:mod:`clustergym.suite.env`) has the same keys but ``time``, with counts through ``log1p``, job
weights, waiting times and work through ``log1p`` (times in a time unit), arrival rates as
``log1p(rate x time_unit / L)``, every float feature clipped to ``[0, SCALED_CAP]``; ``pair_scores``
is kept as it is.  A trained model records which of the two it learned on and is fed that one
wherever it runs (:class:`clustergym.learned.model_agent.ModelAgent`).

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
from clustergym.core.placement import scan_scores
from clustergym.core.scores import argbest_rows
from clustergym.core.simulator import Simulator

__all__ = [
    "INCREMENTAL_MIN_SERVERS",
    "PAIR_FEATURES",
    "SCALED_CAP",
    "SCALED_KEYS",
    "ObservationBuilder",
    "scaled_observation",
    "scaled_observation_space",
]

#: from this many servers on, the per-server features are kept from the cluster's journal (measured: the
#: whole recomputation is cheaper below about 1,000 servers, equal at 1,000, 25% dearer at 4,000)
INCREMENTAL_MIN_SERVERS = 1024

#: the pair scores of ``obs["pair_scores"]`` (``pair_features=True``), in order (module docstring)
PAIR_FEATURES = ("fits", "best_fit_score", "best_fit_choice", "first_fit_choice", "tightest_left")

#: the keys of the scaled observation (:func:`scaled_observation`), in order (no ``time``; ``pair_scores``
#: follows when the observation has it)
SCALED_KEYS = (
    "free",
    "running",
    "dummies",
    "queue_counts",
    "queue_jobs",
    "queue_mask",
    "event",
    "event_server",
    "arrival_rates",
    "action_mask",
)
#: every float feature of the scaled observation is clipped to [0, SCALED_CAP] (``log1p`` reaches 10 at 22,025)
SCALED_CAP = 10.0

_EVENT_KINDS = (EventKind.COMPLETION, EventKind.ARRIVAL, EventKind.TICK, EventKind.WAKEUP, EventKind.START)
_EVENT_INDEX = {k: i for i, k in enumerate(_EVENT_KINDS)}


class ObservationBuilder:
    """Builds observations of one simulator (the dynamics) for the env."""

    def __init__(
        self, sim: Simulator, queue_window: int, mask_size: int, clairvoyant: bool, pair_features: bool = False
    ):
        self.sim = sim
        self.K = queue_window
        self.clairvoyant = clairvoyant
        self.pair_features = pair_features
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
        keys: OrderedDict[str, spaces.Space] = OrderedDict(
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
        if pair_features:
            high = np.broadcast_to(np.array([1.0, inf, 1.0, 1.0, 1.0], dtype=f32), (self.K + 1, L, len(PAIR_FEATURES)))
            keys["pair_scores"] = spaces.Box(np.full_like(high, -1.0), high, dtype=f32)
        self.space = spaces.Dict(keys)

    def _job_features(self, job: int, out: np.ndarray) -> None:
        sim = self.sim
        jobs = sim.jobs
        R, J = sim.num_resources, sim.num_types
        out[:R] = jobs.demand[job] / self._scale
        out[R + int(jobs.type[job])] = 1.0
        out[R + J] = jobs.weight[job]
        out[R + J + 1] = max(0.0, sim.now - jobs.arrival[job]) if jobs.status[job] == 1 else 0.0
        out[R + J + 2] = jobs.work[job] if self.clairvoyant else 0.0

    def _pair_scores(self, ids: list[int]) -> np.ndarray:
        """``(K + 1, L, P)``: :data:`PAIR_FEATURES` of the window jobs ``ids`` (rows 0..) and the event's job (row K)."""
        sim = self.sim
        c, jobs = sim.cluster, sim.jobs
        out = np.zeros((self.K + 1, sim.num_servers, len(PAIR_FEATURES)), dtype=np.float32)
        at = list(range(len(ids)))
        who = list(ids)
        if sim.event.job >= 0:
            at.append(self.K)
            who.append(sim.event.job)
        if not who:
            return out
        d = jobs.demand[who]  # (n, R)
        fits = c.fit_rows(jobs.type[who], d)  # (n, L): the kernel's fit test
        score = scan_scores(d[:, None, :], c.load, c.capacity)  # (n, L): Best-Fit's score, as scan_select's
        left = ((c.capacity - c.load)[None] - d[:, None]) / self._cap[None]  # (n, L, R)
        rows = np.asarray(at)
        out[rows, :, 0] = fits
        out[rows, :, 1] = np.where(fits, score, 0.0)
        bf = argbest_rows(score, fits)  # Best-Fit: the tightest fitting server, ties to the lowest index
        ff = np.where(fits.any(axis=1), fits.argmax(axis=1), -1)  # First-Fit: the lowest-index fitting server
        out[rows[bf >= 0], bf[bf >= 0], 2] = 1.0
        out[rows[ff >= 0], ff[ff >= 0], 3] = 1.0
        out[rows, :, 4] = np.clip(left.min(axis=2), -1.0, 1.0)
        return out

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
        obs = {
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
        if self.pair_features:
            obs["pair_scores"] = self._pair_scores(ids)
        return obs


def scaled_observation_space(base: spaces.Dict) -> spaces.Dict:
    """The space of :func:`scaled_observation` for an environment's observation space ``base``."""
    cap = SCALED_CAP
    keys: OrderedDict[str, spaces.Space] = OrderedDict(
        (
            k,
            base[k]
            if k == "action_mask"
            else spaces.Box(
                0.0, 1.0 if k in ("free", "queue_mask", "event_server") else cap, base[k].shape, np.float32
            ),
        )
        for k in SCALED_KEYS
    )
    if "pair_scores" in base.spaces:  # pair_features=True: scores already on [-1, 1] or [0, R]
        keys["pair_scores"] = base["pair_scores"]
    return spaces.Dict(keys)


def scaled_observation(obs: dict[str, np.ndarray], R: int, J: int, time_unit: float) -> dict[str, np.ndarray]:
    """The scaled observation of an environment's observation ``obs`` (``R`` resources, ``J`` job
    types; waiting times, work and arrival rates in ``time_unit``): the module docstring's second
    table, the observation of the suite tasks."""
    cap = SCALED_CAP
    L = obs["free"].shape[0]

    def counts(x: np.ndarray) -> np.ndarray:
        return np.minimum(np.log1p(x), cap).astype(np.float32)

    def jobs(x: np.ndarray) -> np.ndarray:
        """Job feature rows (..., F): weight, waited time and work through log1p (times in time units)."""
        a = R + J
        out = x.copy()
        out[..., a] = np.log1p(x[..., a])
        out[..., a + 1 : a + 3] = np.log1p(x[..., a + 1 : a + 3] / time_unit)
        return np.minimum(out, cap, out=out)

    event = obs["event"].copy()
    event[len(_EVENT_KINDS) :] = jobs(event[len(_EVENT_KINDS) :])
    rates = np.log1p(obs["arrival_rates"] * (time_unit / L))
    out = OrderedDict(
        (
            ("free", obs["free"]),
            ("running", counts(obs["running"])),
            ("dummies", counts(obs["dummies"])),
            ("queue_counts", counts(obs["queue_counts"])),
            ("queue_jobs", jobs(obs["queue_jobs"])),
            ("queue_mask", obs["queue_mask"]),
            ("event", event),
            ("event_server", obs["event_server"]),
            ("arrival_rates", np.minimum(rates, cap).astype(np.float32)),
            ("action_mask", obs["action_mask"]),
        )
    )
    if "pair_scores" in obs:
        out["pair_scores"] = obs["pair_scores"]
    return out
