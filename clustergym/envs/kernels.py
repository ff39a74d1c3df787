"""Compiled routines of the environment's step: the ``slot`` mode's mask and the observation's buffer.

A suite task's step used to cost some forty NumPy calls on arrays of 1 to 80 elements (the fit test
of the queue window against every server, the per-server rows, the queue window's job rows, the
event, the task's scaling), each paying NumPy's per-call overhead.  Here each is one loop compiled by
numba (:mod:`clustergym.core.accel`, the ``fast`` extra) over the kernel's own arrays, writing into
the builder's buffers.  Importing this module does not import numba (``import clustergym`` stays light):
:func:`ready` compiles the routines, or loads them from numba's disk cache, and puts the compiled
versions in this module's namespace, so callers use them as ``kernels.fill_raw(...)``.  Without numba (or with ``CLUSTERGYM_NO_NUMBA=1``) the callers keep their
NumPy path; both give bit-identical values: the same IEEE operations on the same types (``float64``
arithmetic cast to ``float32`` once, as NumPy's assignment casts; numba compiles without fast-math).
The one operation left to NumPy is the scaled observation's ``log1p``: NumPy's ``float32`` ``log1p``
may use a vectorised implementation whose last bit differs from the C library's, so the cells that go
through it are gathered here, passed to ``np.log1p`` and put back here.

Layout arguments are the start offsets of :class:`~clustergym.envs.observation._FlatLayout`'s keys in the
environment's own order (``free``, ``running``, ``dummies``, ``queue_counts``, ``queue_jobs``,
``queue_mask``, ``event``, ``event_server``, ``arrival_rates``, ``time``).
"""

from __future__ import annotations

__all__ = ["fill_raw", "ready", "scale_gather", "scale_scatter", "slot_fit_mask"]

_N_EVENT_KINDS = 5  # the event's one-hot kinds before its job's features (observation._EVENT_KINDS)


def slot_fit_mask(load, limit, demand, ids, out):  # pragma: no cover - compiled
    """``out[k * L + s] = True`` where window job ``ids[k]`` fits on server ``s``: ``load[s] + demand[j]
    <= limit[s]`` in every resource (``Cluster.fits`` without reservation slots; ``load``, ``limit``
    ``(L, R)`` float64, ``demand`` the job table's ``(N, R)``, ``ids`` ``(n,)`` int64, ``out`` bool of at
    least ``n * L``)."""
    L, R = load.shape
    for k in range(ids.shape[0]):
        j = ids[k]
        for s in range(L):
            ok = True
            for r in range(R):
                if not load[s, r] + demand[j, r] <= limit[s, r]:
                    ok = False
                    break
            out[k * L + s] = ok


def _job_row(buf, at, j, J, jobs_f, jtype, now, scale, clairvoyant, check_status):  # pragma: no cover - compiled
    """Job ``j``'s ``F = R + J + 3`` features at ``buf[at:]`` (zeroed before), as
    ``ObservationBuilder._job_features`` writes them: demand / ``scale`` (``R``), the one-hot type
    (``J``), weight, the time waited (``max(0, now - arrival)``; 0 unless queued when ``check_status``),
    work if ``clairvoyant`` else 0.  ``jobs_f`` is ``(demand, weight, arrival, work, status)``."""
    demand, weight, arrival, work, status = jobs_f
    R = scale.shape[0]
    for r in range(R):
        buf[at + r] = demand[j, r] / scale[r]
    buf[at + R + jtype[j]] = 1.0
    buf[at + R + J] = weight[j]
    waited = 0.0
    if not check_status or status[j] == 1:
        waited = max(0.0, now - arrival[j])
    buf[at + R + J + 1] = waited
    buf[at + R + J + 2] = work[j] if clairvoyant else 0.0


def _server_rows(buf, off, load, cap, count_real, count_dummy, slots, dummy_rows):  # pragma: no cover - compiled
    """``free``, ``running`` (and ``dummies`` when ``dummy_rows``) of every server (``_server_rows``)."""
    L, R = load.shape
    J = count_real.shape[1]
    for s in range(L):
        for r in range(R):
            buf[off[0] + s * R + r] = min(max(1.0 - load[s, r] / cap[s, r], 0.0), 1.0)
        for t in range(J):
            buf[off[1] + s * J + t] = count_real[s, t]
            if dummy_rows:
                buf[off[2] + s * J + t] = count_dummy[s, t] + slots[s, t]


def fill_raw(buf, off, servers, queue, event, counts):  # pragma: no cover - compiled
    """The environment's features in ``buf`` (``ObservationBuilder._fill_raw`` on a small cluster).

    Args:
        buf: the flat ``float32`` buffer; ``off`` the start of each key in it (int64, module docstring).
        servers: ``(changed, load, cap, count_real, count_dummy, slots, dummy_rows)``: the per-server rows
            are recomputed when ``changed``.
        queue: ``(ids, prev_rows, jobs_f, jtype, now, scale, clairvoyant)``: the window's job ids (int64),
            the rows the last observation filled, the job table's columns (:func:`_job_row`).
        event: ``(kind, job, server, prev_server)``: the event kind's index (-1: none), its job and server
            (-1: none), the server flagged last time.
        counts: ``(queued_by_type, rates, t)``: waiting jobs per type (int64), the arrival-rate estimate
            (float64), the elapsed fraction of the horizon.
    """
    changed, load, cap, count_real, count_dummy, slots, dummy_rows = servers
    if changed:
        _server_rows(buf, off, load, cap, count_real, count_dummy, slots, dummy_rows)
    ids, prev_rows, jobs_f, jtype, now, scale, clairvoyant = queue
    J = count_real.shape[1]
    F = scale.shape[0] + J + 3
    n = ids.shape[0]
    q0, m0 = off[4], off[5]
    for i in range(max(n, prev_rows)):
        for f in range(F):
            buf[q0 + i * F + f] = 0.0
        buf[m0 + i] = 0.0
    for i in range(n):  # a short window row by row with the status test, a longer one without (as _fill_queue)
        _job_row(buf, q0 + i * F, ids[i], J, jobs_f, jtype, now, scale, clairvoyant, n <= 4)
        buf[m0 + i] = 1.0
    kind, job, server, prev_server = event
    e0 = off[6]
    for f in range(_N_EVENT_KINDS + F):
        buf[e0 + f] = 0.0
    if kind >= 0:
        buf[e0 + kind] = 1.0
    if job >= 0:
        _job_row(buf, e0 + _N_EVENT_KINDS, job, J, jobs_f, jtype, now, scale, clairvoyant, True)
    if prev_server >= 0:
        buf[off[7] + prev_server] = 0.0
    if server >= 0:
        buf[off[7] + server] = 1.0
    queued_by_type, rates, t = counts
    for k in range(J):
        buf[off[3] + k] = queued_by_type[k]
        buf[off[8] + k] = rates[k]
    buf[off[9]] = min(t, 1.0)


def scale_gather(raw, out, idx, t0, t1, time_unit, rate_factor, g):  # pragma: no cover - compiled
    """The first half of ``Scaler``: ``out[:] = raw[:size]`` and ``g = out[idx]`` with the times
    (``g[t0:t1]``) divided by ``time_unit`` and the rates (``g[t1:]``) multiplied by ``rate_factor``,
    both ``float32`` as NumPy computes them; the caller takes ``np.log1p(g, out=g)``."""
    for i in range(out.shape[0]):
        out[i] = raw[i]
    for i in range(idx.shape[0]):
        v = out[idx[i]]
        if t0 <= i < t1:
            v = v / time_unit
        elif i >= t1:
            v = v * rate_factor
        g[i] = v


def scale_scatter(out, idx, g, lo, hi, cap):  # pragma: no cover - compiled
    """The second half of ``Scaler``: ``out[idx] = g``, then ``out[lo:hi] = min(out[lo:hi], cap)``."""
    for i in range(idx.shape[0]):
        out[idx[i]] = g[i]
    for i in range(lo, hi):
        if out[i] > cap:
            out[i] = cap


_ROUTINES = ("slot_fit_mask", "_job_row", "_server_rows", "fill_raw", "scale_gather", "scale_scatter")
_loaded = False


def ready() -> bool:
    """Whether the compiled routines serve an environment made now (:func:`clustergym.core.accel.enabled`:
    numba installed and not switched off); if so, replace this module's routines by their compiled
    versions first (``numba.njit(cache=True)`` through :func:`clustergym.core.accel.njit`, compiled or
    loaded from numba's disk cache at the first call; the helpers before the routines calling them).
    numba is imported here, not when ``clustergym`` is."""
    global _loaded
    from clustergym.core import accel

    if not accel.enabled():
        return False
    if not _loaded:
        g = globals()
        for name in _ROUTINES:
            g[name] = accel.njit(g[name])
        _loaded = True
    return True
