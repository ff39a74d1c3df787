"""The job table: every job of an episode (real and dummy) as columns of arrays.

A job's id is its row.  Real jobs get ids in arrival order; dummy jobs (RMS)
get ids as they are created, from the same counter.  Columns grow by doubling,
so adding a job is amortised O(1) and no per-job Python object exists.

Bounded job memory (``memory="bounded"``, opt-in): the columns are views of
anonymous memory maps reserving ``virtual_rows`` rows of address space
(``MAP_NORESERVE``: no memory is committed until a row is written), so ids stay
rows and no code that indexes the columns changes.  Every ``RELEASE_EVERY``
added jobs, the rows below the first job that is still queued or running
(rounded down to a multiple of ``RELEASE_BLOCK`` rows, so every column's range
is whole pages) are folded into :class:`StreamingJobStats` and returned to the
kernel with ``madvise(MADV_DONTNEED)``.  Resident memory is then bounded by the
span of ids between the oldest unfinished job and the newest one, not by the
episode length.  Ids below :attr:`JobTable.base` are released: :meth:`JobTable.check`
raises :class:`~clustergym.errors.ReleasedJobError` for them (their rows read as
zeros, status 0, which is no :class:`JobStatus`).
"""

from __future__ import annotations

import enum
import mmap

import numpy as np

from clustergym.core.metrics import summarize_jobs
from clustergym.errors import ReleasedJobError, ScenarioError
from clustergym.validation import choice

__all__ = ["JobStatus", "JobTable", "StreamingJobStats", "JOB_MEMORY_MODES"]

JOB_MEMORY_MODES = ("full", "bounded")
RELEASE_EVERY = 1 << 16   #: bounded mode: added jobs between two release passes
RELEASE_BLOCK = 1 << 12   #: bounded mode: rows are released in multiples of this (whole pages for 1-byte columns)
_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)  # Linux value; Python 3.11's mmap does not export it


class JobStatus(enum.IntEnum):
    """Life cycle of a job.  Every arrived job is in exactly one of these."""

    QUEUED = 1      #: waiting (central or local queue, or awaiting admission in loss mode)
    RUNNING = 2     #: in service on ``server``
    COMPLETED = 3   #: finished its service
    REJECTED = 4    #: dropped at arrival (loss mode), by an agent, or as impossible
    PREEMPTED = 5   #: ended early by a PREEMPT command (lost)
    CANCELLED = 6   #: a dummy job removed by REPLACE before its expiry


class JobTable:
    """Columns of all jobs of an episode.

    Attributes (each indexed by job id, valid for ids ``< size``):
        arrival: arrival time (dummy: creation time).
        demand: ``(n, R)`` resource demand.
        type: job type (class) index.
        work: service requirement on a speed-1 server.
        weight, reward_rate: objective coefficients.
        start, end: service start and (scheduled) end time; NaN until started.
        server: the server running it (or whose local queue holds it); -1 if none.
        status: :class:`JobStatus` value.
        dummy: True for dummy jobs.
        in_slot: True while the job fills a reservation slot.

    ``memory``: ``"full"`` (default: columns grow by doubling, every row is kept) or
    ``"bounded"`` (see the module docstring): ``virtual_rows`` ids are reserved, rows below
    :attr:`base` are released and summarised in :attr:`stats`; ``size - base`` rows are kept.
    """

    def __init__(self, num_resources: int, capacity: int = 1024, memory: str = "full",
                 virtual_rows: int = 1 << 31, warmup: float = 0.0):
        choice(memory, "job_memory", JOB_MEMORY_MODES)
        self.num_resources = num_resources
        self.memory = memory
        self.warmup = float(warmup)  #: per-job statistics cover the jobs arriving at or after this time
        self.size = 0
        self.base = 0  #: ids below this are released (always 0 in full mode)
        self.stats: StreamingJobStats | None = None
        self._maps: list[tuple[mmap.mmap, np.ndarray]] = []
        if memory == "bounded":
            self.stats = StreamingJobStats(since=self.warmup)
            self._alloc(virtual_rows, self.column)
        else:
            self._alloc(capacity, np.empty)

    def __getstate__(self) -> dict:
        if self.memory == "bounded":  # copying would materialise every reserved row
            raise TypeError("a JobTable with job_memory='bounded' cannot be copied or pickled")
        return self.__dict__

    def column(self, shape: int | tuple[int, ...], dtype=np.float64) -> np.ndarray:
        """Bounded mode: a zero-filled column of ``shape`` (rows first) backed by a reserved,
        uncommitted memory map; its rows are released together with the table's."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        try:
            m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE)
        except OSError as e:  # e.g. vm.overcommit_memory=2, which ignores MAP_NORESERVE
            raise ScenarioError("job_memory", f"bounded job memory could not reserve {nbytes / 2**30:.0f} GiB of "
                                              f"address space for {shape[0]:,} job ids: {e}") from e
        arr = np.frombuffer(m, dtype=dtype).reshape(shape)
        self._maps.append((m, arr))
        return arr

    def _alloc(self, cap: int, make) -> None:
        r = self.num_resources
        self.arrival = make(cap)
        self.demand = make((cap, r))
        self.type = make(cap, dtype=np.int64)
        self.work = make(cap)
        self.weight = make(cap)
        self.reward_rate = make(cap)
        self.start = make(cap)
        self.end = make(cap)
        self.server = make(cap, dtype=np.int64)
        self.status = make(cap, dtype=np.int8)
        self.dummy = make(cap, dtype=bool)
        self.in_slot = make(cap, dtype=bool)

    def _grow(self) -> None:
        if self.memory == "bounded":
            raise ScenarioError("job_memory", f"bounded job table is full ({len(self.arrival):,} job ids reserved)")
        old = {name: getattr(self, name) for name in self._COLUMNS}
        self._alloc(2 * len(self.arrival), np.empty)
        for name, arr in old.items():
            getattr(self, name)[: self.size] = arr[: self.size]

    _COLUMNS = (
        "arrival", "demand", "type", "work", "weight", "reward_rate",
        "start", "end", "server", "status", "dummy", "in_slot",
    )

    def add(
        self,
        arrival: float,
        demand: np.ndarray,
        job_type: int,
        work: float,
        weight: float,
        reward_rate: float,
        dummy: bool = False,
    ) -> int:
        """Append a job in status QUEUED and return its id."""
        if self.size == len(self.arrival):
            self._grow()
        i = self.size
        self.size += 1
        self.arrival[i] = arrival
        self.demand[i] = demand
        self.type[i] = job_type
        self.work[i] = work
        self.weight[i] = weight
        self.reward_rate[i] = reward_rate
        self.start[i] = np.nan
        self.end[i] = np.nan
        self.server[i] = -1
        self.status[i] = JobStatus.QUEUED
        self.dummy[i] = dummy
        self.in_slot[i] = False
        if self.stats is not None and self.size % RELEASE_EVERY == 0:
            self.release()
        return i

    def real(self) -> np.ndarray:
        """Boolean mask of real (non-dummy) jobs among ids ``< size`` (full mode; bounded: ``base..size``)."""
        return ~self.dummy[self.base: self.size]

    def check(self, job: int) -> None:
        """Raise a clear error if ``job`` is not a row of this table (unknown or released)."""
        if not 0 <= job < self.size:
            raise ReleasedJobError(f"job {job} does not exist (ids 0..{self.size - 1})")
        if job < self.base:
            raise ReleasedJobError(
                f"job {job} has finished and its row was released (job_memory='bounded' keeps ids "
                f">= {self.base}, the oldest unfinished jobs and after)")

    def require_all_rows(self, what: str) -> None:
        """Raise a clear error if rows were released: ``what`` reads every job of the episode."""
        if self.base:
            raise ReleasedJobError(f"{what} reads every job's row, but job_memory='bounded' released jobs "
                                   f"0..{self.base - 1}; run it with job_memory='full'")

    def release(self) -> int:
        """Bounded mode: fold finished rows below the oldest unfinished job into :attr:`stats`
        and release their memory.  Returns the new :attr:`base`."""
        if self.stats is None:
            return 0
        lo, n = self.base, self.size
        st = self.status[lo:n]
        live = np.flatnonzero((st == JobStatus.QUEUED) | (st == JobStatus.RUNNING))
        first = lo + int(live[0]) if live.size else n
        new = (first // RELEASE_BLOCK) * RELEASE_BLOCK
        if new <= lo:
            return lo
        self.stats.add_rows(self, lo, new)
        page = mmap.PAGESIZE
        for m, arr in self._maps:
            row = arr.strides[0]
            a, b = lo * row, new * row
            a, b = -(-a // page) * page, (b // page) * page
            if b > a:
                m.madvise(mmap.MADV_DONTNEED, a, b - a)
        self.base = new
        return new

    def job_stats(self) -> dict:
        """``mean_wait``, ``p99_wait``, ``mean_weighted_completion`` of real jobs (see
        :func:`~clustergym.core.metrics.summarize_jobs`); bounded mode also says how p99 was estimated.

        With a warm-up ``w > 0`` only the jobs arriving at or after ``w`` count (a job arriving
        before ``w`` belongs to the transient even if it waits or completes after ``w``)."""
        n = self.size
        if self.stats is None:
            real = ~self.dummy[:n]
            if self.warmup > 0:
                real &= self.arrival[:n] >= self.warmup
            completed = real & (self.status[:n] == JobStatus.COMPLETED)
            return summarize_jobs(self.arrival[:n][real], self.start[:n][real], self.end[:n][real],
                                  self.weight[:n][real], completed[real])
        live = StreamingJobStats(self.stats)
        live.add_rows(self, self.base, n)
        return live.summary()


class StreamingJobStats:
    """Per-job statistics of released rows in fixed memory (bounded job memory).

    Sums and counts give ``mean_wait`` and ``mean_weighted_completion`` exactly up to
    floating-point summation order (block sums instead of NumPy's pairwise sum over
    all jobs: relative differences of order 1e-15).  ``p99_wait`` comes from a
    log-bucketed histogram of waits: buckets ``[g^k, g^(k+1))`` with ``g = 1 + 2e-3``,
    each represented by ``2 g^(k+1) / (1 + g)``, so every order statistic -- and the
    linear interpolation between two of them that ``np.percentile`` does -- is within
    relative error ``(g - 1) / (g + 1) < 1e-3``; waits below ``1e-12`` (zero, in
    practice) count as 0.  Memory: one count per bucket between the smallest and
    largest positive wait (about 1,150 per decade).
    """

    GAMMA = 1.0 + 2e-3
    TINY = 1e-12
    METHOD = "histogram (rel. err <= 1e-3; waits < 1e-12 as 0)"

    def __init__(self, other: StreamingJobStats | None = None, since: float = 0.0):
        #: the waits and weighted completions of jobs arriving before ``since`` (a warm-up) are left out;
        #: ``counts_by`` counts every job
        self.since: float = float(since) if other is None else other.since
        if other is None:
            self.wait_sum = self.wc_sum = 0.0
            self.n_wait = self.n_wc = 0
            self.zero = 0
            self.k0 = 0  # bucket index of counts[0]
            self.counts = np.zeros(0, dtype=np.int64)
            self.counts_by = {"real": 0, "started": 0, **{s.name: 0 for s in JobStatus}}
        else:
            self.wait_sum, self.wc_sum = other.wait_sum, other.wc_sum
            self.n_wait, self.n_wc, self.zero, self.k0 = other.n_wait, other.n_wc, other.zero, other.k0
            self.counts = other.counts.copy()
            self.counts_by = dict(other.counts_by)

    def add_rows(self, jobs: JobTable, lo: int, hi: int) -> None:
        """Fold rows ``lo..hi-1`` of ``jobs`` in."""
        real = ~jobs.dummy[lo:hi]
        status = jobs.status[lo:hi][real]
        start = jobs.start[lo:hi][real]
        arrival = jobs.arrival[lo:hi][real]
        started = ~np.isnan(start)
        self.counts_by["real"] += int(real.sum())
        self.counts_by["started"] += int(started.sum())
        for s in JobStatus:
            self.counts_by[s.name] += int((status == s).sum())
        weight, end = jobs.weight[lo:hi][real], jobs.end[lo:hi][real]
        if self.since > 0:  # a warm-up: the statistics below cover the jobs arriving from `since` on
            keep = arrival >= self.since
            status, start, arrival, started = status[keep], start[keep], arrival[keep], started[keep]
            weight, end = weight[keep], end[keep]
        waits = start[started] - arrival[started]
        self.wait_sum += float(waits.sum())
        self.n_wait += waits.size
        done = status == JobStatus.COMPLETED
        self.wc_sum += float((weight[done] * (end[done] - arrival[done])).sum())
        self.n_wc += int(done.sum())
        pos = waits[waits >= self.TINY]
        self.zero += waits.size - pos.size
        if pos.size:
            k = np.floor(np.log(pos) / np.log(self.GAMMA)).astype(np.int64)
            kmin, kmax = int(k.min()), int(k.max())
            if self.counts.size == 0:
                self.k0 = kmin
            lo_k, hi_k = min(self.k0, kmin), max(self.k0 + self.counts.size - 1, kmax)
            if lo_k < self.k0 or hi_k >= self.k0 + self.counts.size:
                grown = np.zeros(hi_k - lo_k + 1, dtype=np.int64)
                grown[self.k0 - lo_k: self.k0 - lo_k + self.counts.size] = self.counts
                self.counts, self.k0 = grown, lo_k
            self.counts += np.bincount(k - self.k0, minlength=self.counts.size)

    def quantile(self, q: float) -> float:
        """The ``q``-quantile (0..1) of the waits, interpolated as ``np.percentile`` does."""
        n = self.n_wait
        if n == 0:
            return float("nan")
        g = self.GAMMA
        cum = np.cumsum(self.counts)
        pos = q * (n - 1)
        lo = int(np.floor(pos))
        frac = pos - lo

        def value(rank: int) -> float:
            if rank < self.zero:
                return 0.0
            b = int(np.searchsorted(cum, rank - self.zero, side="right"))
            return float(2.0 * g ** (self.k0 + b + 1) / (1.0 + g))

        v_lo = value(lo)
        return v_lo if frac == 0 else v_lo + frac * (value(min(lo + 1, n - 1)) - v_lo)

    def summary(self) -> dict:
        nan = float("nan")
        return {
            "mean_wait": self.wait_sum / self.n_wait if self.n_wait else nan,
            "p99_wait": self.quantile(0.99),
            "mean_weighted_completion": self.wc_sum / self.n_wc if self.n_wc else nan,
            "p99_wait_method": self.METHOD,
        }
