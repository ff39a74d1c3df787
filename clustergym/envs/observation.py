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
``pair_scores``    (K + 1, L,  only with ``pair_features`` (``True`` or ``"speed"``): what the
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

With ``pair_features="speed"`` a sixth score follows (``P = 6``, :data:`SPEED_PAIR_FEATURES`):

* ``speed_estimate``: the server's speed for the job's type relative to the type's pooled rate,
  estimated from the episode's completions so far (:class:`clustergym.core.estimates.SpeedEstimate`:
  1 where nothing is known, dimensionless, capped at :data:`SCALED_CAP`).  On heterogeneous clusters
  (``lotes-hetero``) it is what the oracles' machine speeds become when learned from history.

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
are identical; below, recomputing them whole is cheaper (and skipped when the
journal shows no change).

Copy semantics: the builder keeps every float feature in one flat ``float32``
buffer, updated in place; each observation it hands out is one copy of that
buffer, its keys views of the copy (``action_mask`` and ``pair_scores`` are new
arrays of their own).  A caller may keep or change an observation (SB3's
buffers keep them): nothing later changes it, and it changes nothing later.
With :meth:`ObservationBuilder.use_scaling` (a suite task) the builder computes
the scaled observation from the same buffer with :class:`Scaler`, term for term
as :func:`scaled_observation`, so the values are identical.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from itertools import islice

import numpy as np
from gymnasium import spaces

from clustergym.core.commands import EventKind
from clustergym.core.estimates import SpeedEstimate
from clustergym.core.placement import scan_scores
from clustergym.core.scores import argbest_rows
from clustergym.core.simulator import Simulator
from clustergym.envs import kernels
from clustergym.errors import ScenarioError
from clustergym.validation import describe

__all__ = [
    "INCREMENTAL_MIN_SERVERS",
    "PAIR_FEATURES",
    "SPEED_PAIR_FEATURES",
    "SCALED_CAP",
    "SCALED_KEYS",
    "ObservationBuilder",
    "pair_feature_names",
    "scaled_observation",
    "scaled_observation_space",
]

#: from this many servers on, the per-server features are kept from the cluster's journal (measured: the
#: whole recomputation is cheaper below about 1,000 servers, equal at 1,000, 25% dearer at 4,000)
INCREMENTAL_MIN_SERVERS = 1024

#: the pair scores of ``obs["pair_scores"]`` (``pair_features=True``), in order (module docstring)
PAIR_FEATURES = ("fits", "best_fit_score", "best_fit_choice", "first_fit_choice", "tightest_left")
#: the pair scores with ``pair_features="speed"``: :data:`PAIR_FEATURES` and the estimated speed
SPEED_PAIR_FEATURES = (*PAIR_FEATURES, "speed_estimate")

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


def pair_feature_names(value: bool | str) -> tuple[str, ...]:
    """The pair scores of the env argument ``pair_features``: ``False`` none, ``True`` the baselines'
    five (:data:`PAIR_FEATURES`), ``"speed"`` those and the estimated speed (:data:`SPEED_PAIR_FEATURES`).

    Raises:
        ScenarioError: any other value (named, with the accepted ones).
    """
    if isinstance(value, (bool, np.bool_)):
        return PAIR_FEATURES if value else ()
    if value == "speed":
        return SPEED_PAIR_FEATURES
    raise ScenarioError("pair_features", f"expected true, false or 'speed', got {describe(value)}")


class ObservationBuilder:
    """Builds observations of one simulator (the dynamics) for the env.

    The float features are written in place into one flat ``float32`` buffer per layout (the
    environment's, and with :meth:`use_scaling` the scaled one), views of which are the per-key
    arrays; each observation handed out is one copy of that buffer (:meth:`build`), so a caller may
    keep or change it: nothing the builder does later touches it.  :meth:`bind` keeps the features in a
    row of a batch instead (the batched environment scales and copies the whole batch at once).
    """

    def __init__(
        self, sim: Simulator, queue_window: int, mask_size: int, clairvoyant: bool, pair_features: bool | str = False
    ):
        self.sim = sim
        self.K = queue_window
        self.clairvoyant = clairvoyant
        #: the pair scores shown, in order (:func:`pair_feature_names`); empty: no ``pair_scores`` key
        self.pair_names = pair_feature_names(pair_features)
        self.pair_features = bool(self.pair_names)
        self._speed = SpeedEstimate(sim) if "speed_estimate" in self.pair_names else None
        L, R, J = sim.num_servers, sim.num_resources, sim.num_types
        self.F = R + J + 3
        cap = sim.cluster.capacity
        self._cap = np.where(cap > 0, cap, 1.0)
        self._cap_rows = self._cap.tolist()
        self._incremental = L >= INCREMENTAL_MIN_SERVERS
        self._cursor = -1
        self._full_at = max(8, L // 4)  # from this many changes on, recompute every row
        self._dummy_rows = False
        self._scale = np.where(cap.max(axis=0) > 0, cap.max(axis=0), 1.0)  # (R,)
        self._load_frac = np.zeros((L, R))  # scratch of the whole recomputation of ``free`` (float64)
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
        if self.pair_features:
            top = [1.0, inf, 1.0, 1.0, 1.0, SCALED_CAP][: len(self.pair_names)]
            high = np.broadcast_to(np.array(top, dtype=f32), (self.K + 1, L, len(self.pair_names)))
            keys["pair_scores"] = spaces.Box(np.full_like(high, -1.0), high, dtype=f32)
        self.space = spaces.Dict(keys)
        #: the environment's own observation space (:attr:`space` is the scaled one after :meth:`use_scaling`)
        self.raw_space = self.space
        self._raw = _FlatLayout(self.space)
        self._q_rows = 0  # queue-window rows holding a job in the buffer
        self._rows = np.arange(queue_window)  # row indices of the queue window (fancy indexing)
        self._ev_server = -1  # the server flagged in event_server
        self._out = self._raw  # the layout handed out (the scaled one after use_scaling)
        self._time_unit = 0.0
        self._scaler: Scaler | None = None
        #: the compiled fill (:mod:`clustergym.envs.kernels`) when numba is on: small clusters (a large one
        #: keeps its rows from the journal), decided once, as :func:`clustergym.core.accel.enabled` is now
        self._compiled = not self._incremental and kernels.ready()
        self._offsets = np.array([a for a, _, _ in self._raw.slices.values()], dtype=np.int64)  # in the table's order

    # per-server features (views of the buffer): kept from the cluster's journal of changed servers on large clusters
    @property
    def _free(self) -> np.ndarray:
        return self._raw.views["free"]

    @property
    def _running(self) -> np.ndarray:
        return self._raw.views["running"]

    @property
    def _dummies(self) -> np.ndarray:
        return self._raw.views["dummies"]

    def use_scaling(self, time_unit: float) -> spaces.Dict:
        """From now on build the *scaled* observation (:func:`scaled_observation`, waiting times, work
        and rates in ``time_unit``) instead of the environment's, computed from the same buffers with the
        same operations; returns its space."""
        self.space = scaled_observation_space(self.raw_space)
        self._time_unit = float(time_unit)
        self._out = _FlatLayout(self.space)
        self._scaler = Scaler(self.sim, self.K, self._time_unit, compiled=self._compiled)
        return self.space

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
        """``(K + 1, L, P)``: :attr:`pair_names` of the window jobs ``ids`` (rows 0..) and the event's job (row K)."""
        sim = self.sim
        c, jobs = sim.cluster, sim.jobs
        out = np.zeros((self.K + 1, sim.num_servers, len(self.pair_names)), dtype=np.float32)
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
        if self._speed is not None:  # (L, J) -> each row's job type's column, (n, L)
            out[rows, :, 5] = np.minimum(self._speed.relative()[:, jobs.type[who]].T, SCALED_CAP)
        return out

    def _server_rows(self, rows) -> None:
        """Recompute the per-server features of ``rows`` (a list of servers, or every one)."""
        c = self.sim.cluster
        if isinstance(rows, slice):  # every row: into the scratch array, without allocating
            free = np.divide(c.load, self._cap, out=self._load_frac)
        else:
            free = c.load[rows] / self._cap[rows]
        np.subtract(1.0, free, out=free)  # 1 - load/cap clipped to [0, 1], in place (np.clip's
        np.maximum(free, 0.0, out=free)  # overhead is per call)
        np.minimum(free, 1.0, out=free)
        self._free[rows] = free  # cast to float32 as astype would
        self._running[rows] = c.count_real[rows]
        # the dummy rows stay all zero until a dummy or a slot appears (then they are kept, sticky)
        self._dummy_rows = self._dummy_rows or bool(c.had_dummies or c.any_slots)
        if self._dummy_rows:  # slot counts are all zero while the cluster has never had reservation slots
            self._dummies[rows] = c.count_dummy[rows] + c.slots[rows]

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

    def _fill_queue(self, v: dict[str, np.ndarray], ids: list[int]) -> None:
        """The queue window's rows (``queue_jobs``, ``queue_mask``) of the jobs ``ids``."""
        sim = self.sim
        qjobs, qmask = v["queue_jobs"], v["queue_mask"]
        n = len(ids)
        if self._q_rows:  # clear the rows the last observation filled
            qjobs[: self._q_rows] = 0.0
            qmask[: self._q_rows] = 0.0
        self._q_rows = n
        if n <= 4:  # short queues: row by row is cheaper than fancy indexing
            for i, j in enumerate(ids):
                self._job_features(j, qjobs[i])
        else:  # the rows _job_features writes, for all window jobs at once (all are queued)
            jobs = sim.jobs
            R, J = sim.num_resources, sim.num_types
            at = np.array(ids)  # once, not at every fancy index below
            qjobs[:n, :R] = jobs.demand[at] / self._scale
            qjobs[self._rows[:n], R + jobs.type[at]] = 1.0
            qjobs[:n, R + J] = jobs.weight[at]
            qjobs[:n, R + J + 1] = np.maximum(0.0, sim.now - jobs.arrival[at])
            if self.clairvoyant:
                qjobs[:n, R + J + 2] = jobs.work[at]
        if n:
            qmask[:n] = 1.0

    def _fill_raw(self) -> list[int]:
        """Bring the environment's observation buffer up to the current state; returns the window's ids."""
        if self._compiled:
            return self._fill_raw_compiled()
        sim = self.sim
        v = self._raw.views
        if self._incremental:
            self._sync_servers()
        else:  # small clusters: every row, the same values, when a server changed since the last observation
            servers, self._cursor = sim.cluster.changes_since(self._cursor)
            if servers is None or servers:
                self._server_rows(slice(None))
        ids = list(islice(sim.queue, self.K))
        self._fill_queue(v, ids)
        event = v["event"]
        event.fill(0.0)
        ev = sim.event
        k = _EVENT_INDEX.get(ev.kind)
        if k is not None:
            event[k] = 1.0
        if ev.job >= 0:
            self._job_features(ev.job, event[len(_EVENT_KINDS) :])
        es = v["event_server"]
        if self._ev_server >= 0:
            es[self._ev_server] = 0.0
        self._ev_server = ev.server
        if ev.server >= 0:
            es[ev.server] = 1.0
        v["queue_counts"][:] = sim.queued_by_type
        v["arrival_rates"][:] = sim.arrival_rate_estimate()
        horizon = sim.horizon
        t = sim.now / horizon if math.isfinite(horizon) else 0.0
        v["time"][0] = min(t, 1.0)
        return ids

    def _fill_raw_compiled(self) -> list[int]:
        """:meth:`_fill_raw` of a small cluster in one compiled call (:func:`clustergym.envs.kernels.fill_raw`:
        the same values, bit for bit)."""
        sim = self.sim
        c, jobs, ev = sim.cluster, sim.jobs, sim.event
        servers, self._cursor = c.changes_since(self._cursor)
        changed = servers is None or len(servers) > 0
        if changed:  # the dummy rows stay all zero until a dummy or a slot appears (then kept, sticky)
            self._dummy_rows = self._dummy_rows or bool(c.had_dummies or c.any_slots)
        ids = list(islice(sim.queue, self.K))
        now, horizon = float(sim.now), sim.horizon
        kernels.fill_raw(
            self._raw.buf,
            self._offsets,
            (changed, c.load, self._cap, c.count_real, c.count_dummy, c.slots, self._dummy_rows),
            (
                np.array(ids, dtype=np.int64),
                self._q_rows,
                (jobs.demand, jobs.weight, jobs.arrival, jobs.work, jobs.status),
                jobs.type,
                now,
                self._scale,
                self.clairvoyant,
            ),
            (_EVENT_INDEX.get(ev.kind, -1), int(ev.job), int(ev.server), self._ev_server),
            (sim.queued_by_type, sim.arrival_rate_estimate(), now / horizon if math.isfinite(horizon) else 0.0),
        )
        self._q_rows = len(ids)
        self._ev_server = int(ev.server)
        return ids

    def bind(self, row: np.ndarray) -> None:
        """Keep the environment's features in ``row``, ``(raw_size,)`` (a row of a batch), from now on."""
        self._raw.rebind(row)

    @property
    def raw_size(self) -> int:
        """The length of the environment's flat features (every float key but ``pair_scores``)."""
        return self._raw.size

    def refresh(self) -> list[int]:
        """Bring the environment's features up to the current state (in place); returns the window's ids."""
        return self._fill_raw()

    def _fill_scaled(self) -> None:
        assert self._scaler is not None
        self._scaler(self._raw, self._out)

    def _fill(self) -> list[int]:
        ids = self._fill_raw()
        if self._out is not self._raw:
            self._fill_scaled()
        return ids

    def build(self, mask: np.ndarray) -> dict[str, np.ndarray]:
        """The observation now (the scaled one after :meth:`use_scaling`), with the action mask ``mask``:
        fresh arrays, views of one new copy of the buffer (and a new ``action_mask``, ``pair_scores``)."""
        ids = self._fill()
        obs = self._out.emit(mask)
        if self.pair_features:
            obs["pair_scores"] = self._pair_scores(ids)
        return obs

    def build_raw(self, mask: np.ndarray) -> dict[str, np.ndarray]:
        """The environment's own observation now (as :meth:`build` before :meth:`use_scaling`)."""
        ids = self._fill_raw()
        obs = self._raw.emit(mask)
        if self.pair_features:
            obs["pair_scores"] = self._pair_scores(ids)
        return obs


class Scaler:
    """Scales environment observations into scaled ones (:func:`scaled_observation`'s operations, term for
    term, so the values are identical) in place, for one observation or a batch of ``batch`` of them.

    The cells that go through ``log1p`` (the counts, each job row's weight, waited time and work, the rates)
    are gathered into one array, divided or multiplied by their unit, passed through ``log1p`` and put back;
    then one ``minimum`` with the cap runs over the range from ``running`` to ``arrival_rates``: seven NumPy
    calls per observation (or batch) instead of seventeen.  The cap is the identity on the other cells of
    that range (queue mask, event kind, event server: 0 or 1), as :func:`scaled_observation` leaves them.

    Args:
        sim: a simulator of the environment (its sizes).
        queue_window: ``K`` (the layout itself is read from the first observation it scales).
        time_unit: waiting times, work and rates are in this unit.
        batch: the leading dimensions of the views it is given (``()``: one observation).
    """

    def __init__(
        self,
        sim: Simulator,
        queue_window: int,
        time_unit: float,
        batch: tuple[int, ...] = (),
        compiled: bool = False,
    ):
        self.time_unit = float(time_unit)
        self.a = sim.num_resources + sim.num_types  # the weight column; waited time and work follow
        self.rate_factor = self.time_unit / sim.num_servers
        self._plan: tuple[np.ndarray, int, int, int, int] | None = None
        #: one observation through :func:`~clustergym.envs.kernels.scale_gather` / ``scale_scatter`` (numba on)
        self.compiled = compiled and not batch
        self._g = np.zeros(0, dtype=np.float32)  # the gathered log1p cells (the compiled path's scratch)
        self._units = (np.float32(self.time_unit), np.float32(self.rate_factor), np.float32(SCALED_CAP))

    def _make_plan(self, out: _FlatLayout) -> tuple[np.ndarray, int, int, int, int]:
        """``(idx, t0, t1, lo, hi)``: the flat positions of the ``log1p`` cells (counts, weights, then times
        ``[t0, t1)``, then rates ``[t1, end)``) and the range ``[lo, hi)`` the cap applies to."""
        sl, a = out.slices, self.a
        lo, counts_end = sl["running"][0], sl["queue_counts"][1]
        q0, _, (K, F) = sl["queue_jobs"]
        rows = [q0 + k * F for k in range(K)] + [sl["event"][0] + len(_EVENT_KINDS)]  # each job row's start
        r0, hi = sl["arrival_rates"][:2]
        weights = [r + a for r in rows]
        times = [r + a + j for r in rows for j in (1, 2)]
        idx = np.array([*range(lo, counts_end), *weights, *times, *range(r0, hi)], dtype=np.intp)
        t0 = counts_end - lo + len(weights)
        return idx, t0, t0 + len(times), lo, hi

    def __call__(self, raw: _FlatLayout, out: _FlatLayout) -> None:
        """Write the scaled features ``out`` from the environment's ``raw`` (the scaled layout is a prefix
        of the environment's: the same keys in the same order, without ``time``)."""
        if self._plan is None:
            self._plan = self._make_plan(out)
        idx, t0, t1, lo, hi = self._plan
        buf = out.buf
        if self.compiled:  # the same operations: float32 division and product, NumPy's log1p, the cap
            if self._g.size != idx.size:
                self._g = np.zeros(idx.size, dtype=np.float32)
            g, (unit, factor, cap) = self._g, self._units
            kernels.scale_gather(raw.buf, buf, idx, t0, t1, unit, factor, g)
            np.log1p(g, out=g)
            kernels.scale_scatter(buf, idx, g, lo, hi, cap)
            return
        buf[...] = raw.buf[..., : out.size]  # free, queue_mask, event_server, demands and one-hots as they are
        g = buf[..., idx]
        np.divide(g[..., t0:t1], self.time_unit, out=g[..., t0:t1])
        np.multiply(g[..., t1:], self.rate_factor, out=g[..., t1:])
        np.log1p(g, out=g)
        buf[..., idx] = g
        np.minimum(buf[..., lo:hi], SCALED_CAP, out=buf[..., lo:hi])


class _FlatLayout:
    """The float keys of an observation space (all but ``action_mask`` and ``pair_scores``) laid out
    one after another, flattened, in the space's order, in one ``float32`` buffer ``buf``;
    ``views[key]`` is the key's array, a view of ``buf``."""

    def __init__(self, space: spaces.Dict, batch: tuple[int, ...] = ()):
        self.keys = list(space.spaces)
        self.batch = batch
        self.slices: dict[str, tuple[int, int, tuple[int, ...]]] = {}
        off = 0
        for k in self.keys:
            if k in ("action_mask", "pair_scores"):
                continue
            shape = space[k].shape
            assert shape is not None
            n = math.prod(shape)
            self.slices[k] = (off, off + n, shape)
            off += n
        self.size = off
        self.buf = np.zeros((*batch, off), dtype=np.float32)
        self._bind()
        #: ``(key, start, end, shape)`` per handed-out key in order (``start = -1``: the mask; ``shape=None``:
        #: a 1-D key, the slice as it is)
        self._emit_plan: list[tuple[str, int, int, tuple[int, ...] | None]] = [
            (k, -1, -1, None)
            if k == "action_mask"
            else (k, *self.slices[k][:2], None if len(self.slices[k][2]) == 1 else (*batch, *self.slices[k][2]))
            for k in self.keys
            if k != "pair_scores"
        ]

    def _bind(self) -> None:
        self.views = self.split(self.buf)

    def split(self, buf: np.ndarray) -> dict[str, np.ndarray]:
        """Views of ``buf`` (laid out as :attr:`buf`), one per key."""
        return {k: buf[..., a:b].reshape(*self.batch, *shape) for k, (a, b, shape) in self.slices.items()}

    def rebind(self, buf: np.ndarray) -> None:
        """Keep the features in ``buf`` (one row of a batch) from now on, starting from the current ones."""
        buf[...] = self.buf
        self.buf = buf
        self._bind()

    def __getstate__(self) -> dict:  # copies (deepcopy, pickle) keep the views views of their own buffer
        return {k: v for k, v in self.__dict__.items() if k != "views"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._bind()

    def emit(self, mask: np.ndarray) -> dict[str, np.ndarray]:
        """The observation: views of one copy of ``buf``, in the space's order, and ``mask`` as int8."""
        out = self.buf.copy()
        obs: dict[str, np.ndarray] = {}
        for k, a, b, shape in self._emit_plan:
            if a < 0:
                obs[k] = mask.astype(np.int8)
            else:
                obs[k] = out[..., a:b] if shape is None else out[..., a:b].reshape(shape)
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
