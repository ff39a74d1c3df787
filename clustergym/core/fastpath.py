"""A compiled whole-episode path for work-conserving greedy agents with a scan window.

Rule-based agents decide many placements per epoch; driving them one
``env.step`` per command costs Python overhead per event and per placement.
For First-Fit and Best-Fit with a scan window (``agent.scan=N``, see
:mod:`clustergym.baselines.greedy`) on a central queue the whole episode -- events,
the agent's scans and the env's reward bookkeeping -- runs here in one numba
function over the kernel's own arrays (job table columns, ``Cluster`` load,
``TimeIntegrals``, ``QueueTrace``).  The Python objects the kernel keeps beside
them (queues as dicts, per-server running sets, the heap) are rebuilt at the
end, so the :class:`~clustergym.core.simulator.Simulator` is left in exactly
the state the ordinary path leaves it in.

Exactness: the same floating-point operations in the same order as
``Simulator.advance``/``_start``/``_end_job``, ``Cluster`` and the env's
rewards (numba compiles without fast-math), so every metric, the return and
the step count are bit-identical; ``tests/test_golden.py`` and
``tests/core/test_fastpath.py`` check this against the ordinary path.

:func:`supported` says when the path applies; :func:`run_scan_episode` runs it.
It is used by :func:`clustergym.runner.episode.run_episode` when numba is
installed (:mod:`clustergym.core.accel`); otherwise the ordinary path runs.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

from clustergym.core import accel
from clustergym.core.cluster import SCORE_RTOL
from clustergym.core.commands import EventKind
from clustergym.core.jobs import JobStatus

if TYPE_CHECKING:  # pragma: no cover
    from clustergym.core.simulator import Simulator

__all__ = ["supported", "run_scan_episode"]

# return codes of the compiled loop
_NEED_CHUNK, _TRUNCATED, _TERMINATED, _IMPOSSIBLE, _BAD_TYPE = 0, 1, 2, 3, 4
# float state slots
(
    F_NOW,
    F_Q,
    F_SYS,
    F_WQ,
    F_WSYS,
    F_REW,
    F_WQUEUED,
    F_WRUN,
    F_RRUN,
    F_NEXT_ARR,
    F_RATE_T,
    F_TOTAL,
    F_APREV,
    F_TSTEP,
    F_TNEXT,
    F_HORIZON,
    F_SIGN,
    F_SCALE,
    F_WINDOW,
) = range(19)
# int state slots
(
    I_NQ,
    I_NRUN,
    I_NARR,
    I_NSTART,
    I_NCOMP,
    I_NREJ,
    I_IMPREJ,
    I_NEV,
    I_NEP,
    I_SEQ,
    I_HEAP,
    I_QHEAD,
    I_QTAIL,
    I_SIZE,
    I_CI,
    I_TCOUNT,
    I_STEPS,
    I_UNSTABLE,
    I_CHUNKS_DONE,
    I_QCAP,
    I_ERRJOB,
    I_OBJ,
) = range(22)
#: the TimeIntegrals attributes a reward can integrate on the compiled path -> their slot order
_INTEGRALS = {"queue": 0, "system": 1, "weighted_system": 2, "reward": 3}
_QUEUED, _RUNNING, _COMPLETED, _REJECTED = (
    int(JobStatus.QUEUED),
    int(JobStatus.RUNNING),
    int(JobStatus.COMPLETED),
    int(JobStatus.REJECTED),
)


def supported(sim: Simulator, server_rule: str, scan: int | None, integral: str) -> bool:
    """Whether the compiled path reproduces this run: numba on, a scan window, First-/Best-Fit,
    a central queue without agent clocks, reservation slots or dummies, no warm-up (its snapshot
    of the integrals is taken by the step loop only), and a fresh episode."""
    e = sim.epochs
    return (
        accel.enabled()
        and scan is not None
        and server_rule in ("first-fit", "best-fit")
        and sim.warmup == 0
        and sim.queueing == "central"
        and e.arrivals
        and e.completions
        and e.tick_rate == 0
        and e.tick_period == 0
        and not sim.validate
        and not sim.cluster.any_slots
        and sim.n_epochs == 0
        and not sim._heap
        and sim.n_queued == 0
        and sim.num_resources < 8
        and integral in _INTEGRALS
    )


@accel.njit
def _area(fs, ist):  # pragma: no cover - compiled
    o = ist[I_OBJ]
    if o == 0:
        v = fs[F_Q]
    elif o == 1:
        v = fs[F_SYS]
    elif o == 2:
        v = fs[F_WSYS]
    else:
        v = fs[F_REW]
    return (fs[F_SIGN] * v) * fs[F_SCALE]


@accel.njit
def _heap_less(ht, hs, a, b):  # pragma: no cover - compiled
    return ht[a] < ht[b] or (ht[a] == ht[b] and hs[a] < hs[b])


@accel.njit
def _heap_swap(ht, hs, hj, a, b):  # pragma: no cover - compiled
    ht[a], ht[b] = ht[b], ht[a]
    hs[a], hs[b] = hs[b], hs[a]
    hj[a], hj[b] = hj[b], hj[a]


@accel.njit
def _fits_at(load, demand, limit, s, job, R):  # pragma: no cover - compiled
    """Cluster.fits_free_at for one job and one server."""
    for r in range(R):
        if not (load[s, r] + demand[job, r] <= limit[s, r]):
            return False
    return True


@accel.njit
def _bf_score(load, demand, capacity, s, job, R):  # pragma: no cover - compiled
    """baselines.greedy's Best-Fit score: sum_r (d_r / C_r) (load_r / C_r), C_r = 1 where C_r <= 0."""
    score = 0.0
    for r in range(R):
        c = capacity[s, r]
        if not (c > 0):
            c = 1.0
        score += (demand[job, r] / c) * (load[s, r] / c)
    return score


@accel.njit
def _loop(
    fs,
    ist,
    best_fit,
    scan,
    capacity,
    limit,
    speed,
    load,
    items,
    count_real,
    real_usage,
    I_qbt,
    I_real,
    qbt,
    rate,
    ct,
    cdemand,
    ctype,
    cwork,
    cweight,
    creward,
    arrival,
    demand,
    jtype,
    work,
    weight,
    reward_rate,
    start,
    end,
    server,
    status,
    dummy,
    in_slot,
    qnext,
    qprev,
    ht,
    hs,
    hj,
    tr_t,
    tr_v,
    points,
    impossible_error,
    fail_at,
    comp_server,
    score_rtol,
):  # pragma: no cover - compiled
    """The whole event loop of one episode, compiled by numba: next event, arrival, completion, the
    greedy scan over the queue window, the time integrals and the queue trace, until the horizon, the
    end of the jobs or a step that would need the environment.

    Why one long function (the one function of the package over 80 lines by design): numba compiles
    a function with its state in local variables and typed arrays; splitting the loop into helpers
    means passing some 40 arrays and scalars across each call and returning the scalars it updates
    (numba cannot mutate a caller's scalar), which costs speed on the hot path and makes every
    helper's signature as long as this one.  Each section is marked by a ``# ----`` comment naming
    the :class:`~clustergym.core.simulator.Simulator` method it mirrors, and
    ``tests/core/test_fastpath.py`` checks the loop against that method, bit for bit.
    """
    L, R = load.shape
    J = qbt.shape[0]
    inf = np.inf
    window = np.empty(scan, np.int64)
    cand = np.empty(max(L, 16), np.int64)  # the servers a job fits (pruned scan: up to 16 completions)
    sc = np.empty(max(L, 16))  # and their Best-Fit scores
    nchunk = ct.shape[0]
    while True:
        # ------------------------------------------------------------ next event (Simulator.advance)
        if (
            fs[F_HORIZON] == inf
            and ist[I_CHUNKS_DONE] == 1
            and fs[F_NEXT_ARR] == inf
            and ist[I_NQ] == 0
            and ist[I_NRUN] == 0
        ):
            code = _TERMINATED
            break
        t = fs[F_HORIZON]
        kind = 4
        if ist[I_HEAP] > 0 and (ht[0] < t or (ht[0] == t and 0 < kind)):
            t = ht[0]
            kind = 0
        if fs[F_NEXT_ARR] < t or (fs[F_NEXT_ARR] == t and 1 < kind):
            t = fs[F_NEXT_ARR]
            kind = 1
        if t == inf:
            code = _TERMINATED
            break
        # ------------------------------------------------------------ integrate (Simulator._integrate)
        now = fs[F_NOW]
        dt = t - now
        if dt > 0:
            nq = ist[I_NQ]
            fs[F_Q] += nq * dt
            fs[F_SYS] += (nq + ist[I_NRUN]) * dt
            fs[F_WQ] += fs[F_WQUEUED] * dt
            fs[F_WSYS] += (fs[F_WQUEUED] + fs[F_WRUN]) * dt
            fs[F_REW] += fs[F_RRUN] * dt
            if nq:
                for k in range(J):
                    I_qbt[k] += qbt[k] * dt
            for r in range(R):
                I_real[r] += real_usage[r] * dt
            # QueueTrace.record(now, t, nq)
            while fs[F_TNEXT] < t:
                if fs[F_TNEXT] >= now:
                    c = ist[I_TCOUNT]
                    tr_t[c] = fs[F_TNEXT]
                    tr_v[c] = nq
                    c += 1
                    if c > 2 * points:
                        m = 0
                        for i in range(0, c, 2):
                            tr_t[m] = tr_t[i]
                            tr_v[m] = tr_v[i]
                            m += 1
                        c = m
                        fs[F_TSTEP] *= 2.0
                        fs[F_TNEXT] = tr_t[c - 1]
                    ist[I_TCOUNT] = c
                fs[F_TNEXT] += fs[F_TSTEP]
            fs[F_NOW] = t
        if kind == 4:
            code = _TRUNCATED
            break
        ist[I_NEV] += 1
        epoch = True
        if kind == 0:
            # ------------------------------------------------------------ completion (_end_job)
            job = hj[0]
            n = ist[I_HEAP] - 1
            ist[I_HEAP] = n
            if n > 0:
                _heap_swap(ht, hs, hj, 0, n)
                i = 0
                while True:
                    a = 2 * i + 1
                    if a >= n:
                        break
                    b = a + 1
                    m = b if (b < n and _heap_less(ht, hs, b, a)) else a
                    if _heap_less(ht, hs, m, i):
                        _heap_swap(ht, hs, hj, m, i)
                        i = m
                    else:
                        break
            s = server[job]
            tp = jtype[job]
            status[job] = _COMPLETED
            comp_server[ist[I_NCOMP] & 63] = s  # a ring: only the last 16 are ever read
            count_real[s, tp] -= 1
            items[s] -= 1
            for r in range(R):
                real_usage[r] -= demand[job, r]
            for r in range(R):
                load[s, r] -= demand[job, r]
            if items[s] == 0:
                for r in range(R):
                    load[s, r] = 0.0
            in_slot[job] = False
            ist[I_NRUN] -= 1
            fs[F_WRUN] -= weight[job]
            fs[F_RRUN] -= reward_rate[job]
            if ist[I_NRUN] == 0:
                fs[F_WRUN] = 0.0
                fs[F_RRUN] = 0.0
            ist[I_NCOMP] += 1
        else:
            # ------------------------------------------------------------ arrival (_arrive)
            ci = ist[I_CI]
            job = ist[I_SIZE]
            ist[I_SIZE] = job + 1
            tp = ctype[ci]
            arrival[job] = ct[ci]
            for r in range(R):
                demand[job, r] = cdemand[ci, r]
            jtype[job] = tp
            work[job] = cwork[ci]
            weight[job] = cweight[ci]
            reward_rate[job] = creward[ci]
            start[job] = np.nan
            end[job] = np.nan
            server[job] = -1
            status[job] = _QUEUED
            dummy[job] = False
            in_slot[job] = False
            ci += 1
            ist[I_CI] = ci
            fs[F_NEXT_ARR] = ct[ci] if ci < nchunk else inf
            ist[I_NARR] += 1
            if not (0 <= tp < J):
                ist[I_ERRJOB] = job
                code = _BAD_TYPE
                break
            decay = math.exp(-(t - fs[F_RATE_T]) / fs[F_WINDOW])
            for k in range(J):
                rate[k] *= decay
            rate[tp] += 1.0 / fs[F_WINDOW]
            fs[F_RATE_T] = t
            hold = False
            for s in range(L):
                ok = True
                for r in range(R):
                    if not (demand[job, r] <= limit[s, r]):
                        ok = False
                        break
                if ok:
                    hold = True
                    break
            if not hold:
                if impossible_error:
                    ist[I_ERRJOB] = job
                    code = _IMPOSSIBLE
                    break
                ist[I_IMPREJ] += 1
                status[job] = _REJECTED
                ist[I_NREJ] += 1
                epoch = False
            else:
                # _enqueue_central: linked-list FIFO
                qnext[job] = -1
                qprev[job] = ist[I_QTAIL]
                if ist[I_QTAIL] >= 0:
                    qnext[ist[I_QTAIL]] = job
                else:
                    ist[I_QHEAD] = job
                ist[I_QTAIL] = job
                ist[I_NQ] += 1
                qbt[tp] += 1
                fs[F_WQUEUED] += weight[job]
            if ist[I_QCAP] >= 0 and ist[I_NQ] > ist[I_QCAP]:
                ist[I_UNSTABLE] = 1
                code = _TERMINATED
                break
        need_chunk = kind == 1 and ist[I_CI] >= nchunk and ist[I_CHUNKS_DONE] == 0
        if not epoch:
            if need_chunk:
                code = _NEED_CHUNK
                break
            continue
        # ---------------------------------------------------------------- a decision epoch
        ist[I_NEP] += 1
        a_now = _area(fs, ist)
        fs[F_TOTAL] += a_now - fs[F_APREV]  # the WAIT step that led here
        ist[I_STEPS] += 1
        fs[F_APREV] = a_now
        # the agent: snapshot of the first `scan` queued jobs, each placed where the rule says
        nw = 0
        j = ist[I_QHEAD]
        while j >= 0 and nw < scan:
            window[nw] = j
            nw += 1
            j = qnext[j]
        nc = ist[I_NCOMP]
        for w in range(nw):
            job = window[w]
            # Exact pruning: loads only grow except at completions, and the fit test
            # fl(load + d) <= limit is monotone in load, so a job that fitted nowhere after the
            # c0-th completion can only fit on servers that completed a job since.
            c0 = fail_at[job]
            if c0 == nc:
                continue
            # Best-Fit as baselines.greedy.select_server: the largest score, and among the scores tied
            # with it up to SCORE_RTOL (clustergym.core.cluster.best_mask) the lowest index;
            # First-Fit: the lowest index that fits.
            best = -1
            top = -inf
            nfit = 0
            if c0 >= 0 and nc - c0 <= 16:
                for k in range(c0, nc):
                    s = comp_server[k & 63]
                    if not _fits_at(load, demand, limit, s, job, R):
                        continue
                    cand[nfit] = s
                    sc[nfit] = _bf_score(load, demand, capacity, s, job, R) if best_fit else 0.0
                    if sc[nfit] > top:
                        top = sc[nfit]
                    nfit += 1
            else:
                for s in range(L):
                    if not _fits_at(load, demand, limit, s, job, R):
                        continue
                    if not best_fit:
                        best = s
                        break
                    cand[nfit] = s
                    sc[nfit] = _bf_score(load, demand, capacity, s, job, R)
                    if sc[nfit] > top:
                        top = sc[nfit]
                    nfit += 1
            if nfit:
                low = top - score_rtol * abs(top)
                for k in range(nfit):
                    if sc[k] >= low and (best < 0 or cand[k] < best):
                        best = cand[k]
            if best < 0:
                fail_at[job] = nc
                continue
            # PLACE(job, best): _dequeue + _start + Cluster.add_real
            tp = jtype[job]
            p, nx = qprev[job], qnext[job]
            if p >= 0:
                qnext[p] = nx
            else:
                ist[I_QHEAD] = nx
            if nx >= 0:
                qprev[nx] = p
            else:
                ist[I_QTAIL] = p
            ist[I_NQ] -= 1
            qbt[tp] -= 1
            fs[F_WQUEUED] -= weight[job]
            if ist[I_NQ] == 0:
                fs[F_WQUEUED] = 0.0
            now = fs[F_NOW]
            status[job] = _RUNNING
            server[job] = best
            start[job] = now
            e = now + work[job] / speed[best, tp]
            end[job] = e
            count_real[best, tp] += 1
            items[best] += 1
            for r in range(R):
                real_usage[r] += demand[job, r]
            for r in range(R):
                load[best, r] += demand[job, r]
            in_slot[job] = False
            ist[I_NRUN] += 1
            fs[F_WRUN] += weight[job]
            fs[F_RRUN] += reward_rate[job]
            ist[I_NSTART] += 1
            ist[I_STEPS] += 1
            # push the completion (seq order breaks ties, as heapq on (t, kind, seq, job))
            ist[I_SEQ] += 1
            i = ist[I_HEAP]
            ist[I_HEAP] = i + 1
            ht[i] = e
            hs[i] = ist[I_SEQ]
            hj[i] = job
            while i > 0:
                p = (i - 1) // 2
                if _heap_less(ht, hs, i, p):
                    _heap_swap(ht, hs, hj, i, p)
                    i = p
                else:
                    break
        if need_chunk:
            code = _NEED_CHUNK
            break
    if code != _NEED_CHUNK and code != _IMPOSSIBLE and code != _BAD_TYPE:
        a_now = _area(fs, ist)
        fs[F_TOTAL] += a_now - fs[F_APREV]  # the final WAIT step
        ist[I_STEPS] += 1
    return code


def _pack_state(sim: Simulator, sign: float, integral: str, scale: float) -> tuple[np.ndarray, ...]:
    """The loop's scalar state from the simulator: ``(fs, ist, tr_t, tr_v)`` -- 19 float slots (``F_*``),
    22 int slots (``I_*``) and the queue trace's times and values with room for the loop's points."""
    I = sim.integrals
    fs = np.zeros(19)
    ist = np.zeros(22, dtype=np.int64)
    fs[F_NOW] = sim.now
    fs[F_NEXT_ARR] = sim._next_arrival
    fs[F_RATE_T] = sim._rate_time
    fs[F_TSTEP], fs[F_TNEXT] = sim.trace.step, sim.trace._next
    fs[F_HORIZON] = sim.horizon
    fs[F_SIGN] = sign
    fs[F_SCALE] = scale
    fs[F_WINDOW] = sim.rate_window
    fs[F_APREV] = (fs[F_SIGN] * getattr(I, integral)) * scale  # the env's reward function, ObjectiveReward
    ist[I_OBJ] = _INTEGRALS[integral]
    ist[I_QHEAD] = ist[I_QTAIL] = -1
    ist[I_SIZE] = sim.jobs.size
    ist[I_CI] = sim._ci
    ist[I_QCAP] = -1 if sim.queue_cap is None else sim.queue_cap
    ist[I_SEQ] = sim._seq
    ist[I_CHUNKS_DONE] = 1 if sim._chunks is None else 0
    ist[I_STEPS] = 0
    points = sim.trace.points
    tr_t = np.empty(2 * points + 2)
    tr_v = np.empty(2 * points + 2, dtype=np.int64)
    tr_t[: len(sim.trace.times)] = sim.trace.times
    tr_v[: len(sim.trace.values)] = sim.trace.values
    ist[I_TCOUNT] = len(sim.trace.times)
    return fs, ist, tr_t, tr_v


def _chunk_arrays(chunk, R: int) -> tuple[np.ndarray, ...]:
    """A source chunk's ``(time, demand (n, R), type, work, weight, reward_rate)`` as contiguous arrays;
    empty ones when the source has no chunk left (``chunk is None``)."""
    if chunk is None:
        empty_f = np.empty(0)
        return empty_f, np.empty((0, R)), np.empty(0, np.int64), empty_f, empty_f, empty_f
    return (
        np.ascontiguousarray(chunk.time, dtype=np.float64),
        np.ascontiguousarray(chunk.demand, dtype=np.float64),
        np.ascontiguousarray(chunk.type, dtype=np.int64),
        np.ascontiguousarray(chunk.work, dtype=np.float64),
        np.ascontiguousarray(chunk.weight, dtype=np.float64),
        np.ascontiguousarray(chunk.reward_rate, dtype=np.float64),
    )


class _Buffers:
    """The loop's arrays beside the job table: the completion heap (``ht`` times, ``hs`` sequence numbers,
    ``hj`` jobs), the central queue as a linked list over job ids (``qnext``, ``qprev``), ``fail_at`` (the
    completion count when a job last fitted nowhere) and ``comp_server`` (server of the k-th completion, at
    k % 64).  With ``bounded`` job memory the per-job arrays are reserved like the table's columns and
    released with them; they are filled with -1 as rows come in."""

    def __init__(self, jobs) -> None:
        self.heap_cap = 1024
        self.ht, self.hs, self.hj = np.empty(1024), np.empty(1024, np.int64), np.empty(1024, np.int64)
        self.bounded = jobs.memory == "bounded"
        self.filled = 0
        if self.bounded:
            self.qnext, self.qprev, self.fail_at = (jobs.column(len(jobs.arrival), np.int64) for _ in range(3))
        else:
            self.qnext = np.empty(0, np.int64)
            self.qprev = np.empty(0, np.int64)
            self.fail_at = np.empty(0, np.int64)
        self.comp_server = np.empty(64, np.int64)

    def reserve(self, jobs, need: int, need_heap: int) -> None:
        """Room for ``need`` job rows and ``need_heap`` heap entries (one per running, queued or arriving job)."""
        while len(jobs.arrival) < need:
            jobs._grow()
        if self.bounded:
            if need > len(jobs.arrival):
                jobs._grow()  # raises: the reserved id range is exhausted
            for a in (self.qnext, self.qprev, self.fail_at):
                a[self.filled : need] = -1
            self.filled = max(self.filled, need)
        elif len(self.qnext) < len(jobs.arrival):
            more = len(jobs.arrival) - len(self.qnext)
            self.qnext = np.concatenate([self.qnext, np.full(more, -1, np.int64)])
            self.qprev = np.concatenate([self.qprev, np.full(more, -1, np.int64)])
            self.fail_at = np.concatenate([self.fail_at, np.full(more, -1, np.int64)])
        if self.heap_cap < need_heap:
            self.heap_cap = max(2 * self.heap_cap, need_heap)
            self.ht = np.resize(self.ht, self.heap_cap)
            self.hs = np.resize(self.hs, self.heap_cap)
            self.hj = np.resize(self.hj, self.heap_cap)


def _run_chunk(sim: Simulator, fs, ist, tr_t, tr_v, buf: _Buffers, arrays, best_fit: bool, scan: int) -> int:
    """One call of the compiled loop over the current chunk's ``arrays``; its return code."""
    c, I, jobs = sim.cluster, sim.integrals, sim.jobs
    ct, cd, cty, cw, cwe, cr = arrays
    return _loop(
        fs,
        ist,
        best_fit,
        scan,
        c.capacity,
        c._limit,
        sim.speed,
        c.load,
        c.items,
        c.count_real,
        c.real_usage,
        I.queue_by_type,
        I.real_usage,
        sim.queued_by_type,
        sim.rate_estimate,
        ct,
        cd,
        cty,
        cw,
        cwe,
        cr,
        jobs.arrival,
        jobs.demand,
        jobs.type,
        jobs.work,
        jobs.weight,
        jobs.reward_rate,
        jobs.start,
        jobs.end,
        jobs.server,
        jobs.status,
        jobs.dummy,
        jobs.in_slot,
        buf.qnext,
        buf.qprev,
        buf.ht,
        buf.hs,
        buf.hj,
        tr_t,
        tr_v,
        sim.trace.points,
        sim.impossible == "error",
        buf.fail_at,
        buf.comp_server,
        SCORE_RTOL,
    )


def run_scan_episode(
    sim: Simulator, server_rule: str, scan: int, *, sign: float, integral: str, scale: float
) -> tuple[float, int]:
    """Run a freshly reset episode to its end with greedy ``server_rule`` over a ``scan`` window.

    Equivalent, bit for bit, to driving :class:`~clustergym.baselines.greedy.GreedyAgent` with
    ``scan`` through ``ClusterEnv.step`` (``observe=False``, ``skip_trivial=False``).  Steps: pack the
    simulator's state into the loop's arrays (:func:`_pack_state`), run the compiled loop chunk by chunk
    of the source (:func:`_run_chunk`), write the state back (:func:`_write_back`).

    Returns:
        ``(return, steps)``: the sum of the rewards the env would have paid and the number of
        ``step`` calls it would have taken.  The simulator ends ``done`` with its metrics.
    """
    jobs = sim.jobs
    fs, ist, tr_t, tr_v = _pack_state(sim, sign, integral, scale)
    buf = _Buffers(jobs)
    while True:
        arrays = _chunk_arrays(sim._chunk, sim.num_resources)
        if sim._chunk is None:
            ist[I_CHUNKS_DONE] = 1
        n_chunk = len(arrays[0])
        need = int(ist[I_SIZE]) + (n_chunk - int(ist[I_CI]))
        buf.reserve(jobs, need, int(ist[I_NRUN]) + int(ist[I_NQ]) + (n_chunk - int(ist[I_CI])))
        code = _run_chunk(sim, fs, ist, tr_t, tr_v, buf, arrays, server_rule == "best-fit", int(scan))
        jobs.size = int(ist[I_SIZE])
        if buf.bounded:
            jobs.release()
        if code != _NEED_CHUNK:
            break
        sim._pull_chunk()
        ist[I_CI] = 0
        fs[F_NEXT_ARR] = sim._next_arrival
        if sim._chunks is None and sim._chunk is None:
            ist[I_CHUNKS_DONE] = 1
    _write_back(sim, fs, ist, tr_t, tr_v, buf, code, n_chunk)
    return float(fs[F_TOTAL]), int(ist[I_STEPS])


def _write_back(sim: Simulator, fs, ist, tr_t, tr_v, buf: _Buffers, code: int, n_chunk: int) -> None:
    """Copy the loop's state back into the simulator (``n_chunk``: jobs of the last chunk), rebuild its
    Python-side structures (:func:`_rebuild_queues`) and raise the loop's error codes as the kernel would."""
    from clustergym.core.simulator import Event, ImpossibleJobError
    from clustergym.errors import ScenarioError

    c, I, jobs = sim.cluster, sim.integrals, sim.jobs
    c.invalidate()  # load and counts were written directly: journal consumers recompute every server
    sim.now = float(fs[F_NOW])
    I.elapsed = sim.now if sim.now > 0 else I.elapsed
    I.queue, I.system, I.weighted_queue = float(fs[F_Q]), float(fs[F_SYS]), float(fs[F_WQ])
    I.weighted_system, I.reward = float(fs[F_WSYS]), float(fs[F_REW])
    sim.w_queued, sim.w_running, sim.r_running = float(fs[F_WQUEUED]), float(fs[F_WRUN]), float(fs[F_RRUN])
    sim._rate_time = float(fs[F_RATE_T])
    sim.n_queued, sim.n_running = int(ist[I_NQ]), int(ist[I_NRUN])
    sim.n_arrivals, sim.n_started, sim.n_completed = int(ist[I_NARR]), int(ist[I_NSTART]), int(ist[I_NCOMP])
    sim.n_rejected, sim.impossible_rejected = int(ist[I_NREJ]), int(ist[I_IMPREJ])
    sim.n_events, sim.n_epochs, sim._seq = int(ist[I_NEV]), int(ist[I_NEP]), int(ist[I_SEQ])
    n = int(ist[I_TCOUNT])
    sim.trace.times, sim.trace.values = tr_t[:n].tolist(), tr_v[:n].tolist()
    sim.trace.step, sim.trace._next = float(fs[F_TSTEP]), float(fs[F_TNEXT])
    if code == _NEED_CHUNK or ist[I_CI] < n_chunk:
        sim._ci = int(ist[I_CI])
        sim._next_arrival = float(fs[F_NEXT_ARR])
    ht, hs, hj = buf.ht, buf.hs, buf.hj
    sim._heap = sorted((float(ht[i]), int(EventKind.COMPLETION), int(hs[i]), int(hj[i])) for i in range(ist[I_HEAP]))
    _rebuild_queues(sim, buf.qnext, int(ist[I_QHEAD]))
    if code == _IMPOSSIBLE:
        job = int(ist[I_ERRJOB])
        raise ImpossibleJobError(
            f"job {job} (arrival t={jobs.arrival[job]:g}, type {int(jobs.type[job])}) demands "
            f"{jobs.demand[job].tolist()}, more than the capacity of every server"
        )
    if code == _BAD_TYPE:
        job = int(ist[I_ERRJOB])
        raise ScenarioError("workload", f"job {job} has type {int(jobs.type[job])}, outside [0, {sim.num_types})")
    sim.done = True
    sim.truncated = code == _TRUNCATED
    sim.terminated = code == _TERMINATED
    sim.unstable = bool(ist[I_UNSTABLE])
    sim.event = Event(EventKind.HORIZON, sim.now)


def _rebuild_queues(sim: Simulator, qnext: np.ndarray, head: int) -> None:
    """The simulator's queues (central and per type) from the loop's linked list starting at ``head``, and
    its per-server running sets from the job table."""
    jobs = sim.jobs
    sim.queue = OrderedDict()
    for q in sim.type_queue:
        q.clear()
    j = head
    while j >= 0:
        sim.queue[j] = None
        sim.type_queue[int(jobs.type[j])][j] = None
        j = int(qnext[j])
    for r in sim.running:
        r.clear()
    for j in (jobs.base + np.flatnonzero(jobs.status[jobs.base : jobs.size] == _RUNNING)).tolist():
        sim.running[int(jobs.server[j])][j] = None
