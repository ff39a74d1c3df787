"""Replaying a fixed job table (traces), and time-scaling any source.

:class:`ReplaySource` holds a validated job table -- one row per job with its
arrival time, demand vector, work and optional type/weight/reward rate -- and
replays it in arrival order.  The trace loaders build one from their
preprocessed tables (often with :meth:`ReplaySource.from_frame`).  It is
finite: ``chunks`` ends after the last job.  It draws nothing from the ``rng``
except in :meth:`ReplaySource.sample_work` (dummy-job lifetimes).

:class:`TimeScaled` multiplies the arrival times of any source by ``alpha``
(RMS paper §VII-B: "traffic scaling" is ``1/alpha``); work is unchanged.

Errors in the table raise :class:`~clustergym.errors.TraceFormatError` whose
message reads ``"<source>: row <i>, column '<name>': <problem>"`` where ``i``
is the 0-based position of the row in the table as given (before sorting).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from clustergym.core.source import ArrivalChunk, ArrivalSource, TypeInfo
from clustergym.errors import ScenarioError, TraceFormatError
from clustergym.validation import matrix, number
from clustergym.workloads.poisson import check_job_type

if TYPE_CHECKING:  # pandas is imported where a frame is read (it takes ~0.5 s)
    import pandas as pd

__all__ = ["ReplaySource", "TimeScaled"]

ArrayLike = Sequence[Any] | np.ndarray

#: Without ``type_demand``/``names``, ``J = max(type) + 1`` must stay below this (guards against ids used as types).
MAX_IMPLICIT_TYPES = 100_000


class ReplaySource:
    """Replay a job table of ``n`` jobs over ``R`` resources.

    Args:
        time: ``(n,)`` arrival times (finite, >= 0, time units).  Rows need not be sorted: the
            table is sorted **stably** by time (ties keep table order); :attr:`reordered` says
            whether that moved anything, :attr:`rows` maps replay order to table rows.
        demand: ``(n, R)`` demands (finite, >= 0).  A 1-D ``(n,)`` array means ``R = 1``;
            a list of rows may be ragged only to be reported as an error.
        work: ``(n,)`` service requirements (finite, > 0, time units on a speed-1 server).
        type: ``(n,)`` job types (whole numbers >= 0), or ``None`` for one type.
        weight, reward_rate: ``(n,)`` (finite, >= 0), default 1.
        type_demand: ``(J, R)`` nominal demand per type (e.g. the rounded-up power-of-1/2 size,
            RMS paper §VII-B); default: the per-type maximum of the jobs' demands (with ``type``) or
            their mean (without).  When given it fixes ``J`` and types must be ``< J``.
        names: ``J`` type names (fixes ``J`` too); default ``type0, ...``.
        num_resources: expected ``R`` (checked against the demand width) or ``None``.
        columns: display names of the columns for error messages: keys ``time``, ``work``,
            ``type``, ``weight``, ``reward_rate`` (str) and ``demand`` (``R`` strs).
        source: the file or table name that starts every error message.
        chunk_size: jobs per chunk (>= 1).

    Types: ``J = len(type_demand)`` or ``len(names)`` if given, else ``max(type) + 1`` (1 without
    ``type``).  ``types.mean_work[j]`` is the empirical mean work of type ``j`` (the overall mean
    for a type with no jobs, whose default nominal demand is 0).  ``types.exact`` is true when
    every job's demand equals its type's nominal demand.

    Raises:
        TraceFormatError: naming the source, row and column.
    """

    def __init__(
        self,
        time: ArrayLike,
        demand: ArrayLike,
        work: ArrayLike,
        *,
        type: ArrayLike | None = None,
        weight: ArrayLike | None = None,
        reward_rate: ArrayLike | None = None,
        type_demand: ArrayLike | None = None,
        names: Sequence[str] | None = None,
        num_resources: int | None = None,
        columns: Mapping[str, str | Sequence[str]] | None = None,
        source: str = "<table>",
        chunk_size: int = 4096,
    ):
        self.source = str(source)
        self.chunk_size = number(chunk_size, "chunk_size", lo=1, integer=True)
        cols = dict(columns or {})

        def col(key: str) -> str:
            return str(cols.get(key, key))

        t = self._column(time, col("time"))
        n = t.shape[0]
        if n == 0:
            raise TraceFormatError(f"{self.source}: the job table is empty")
        w = self._column(work, col("work"), n)
        raw = cols.get("demand", "demand")
        label = raw if isinstance(raw, str) else ", ".join(map(str, raw))
        dem = self._demand(demand, n, num_resources, label)
        R = dem.shape[1]
        if isinstance(raw, str) or len(raw) != R:
            dem_names = [f"{label if isinstance(raw, str) else 'demand'}[{r}]" for r in range(R)]
        else:
            dem_names = [str(c) for c in raw]
        wt = np.ones(n) if weight is None else self._column(weight, col("weight"), n)
        rr = np.ones(n) if reward_rate is None else self._column(reward_rate, col("reward_rate"), n)
        self._check_ranges(t, w, dem, dem_names, wt, rr, col)
        td = self._type_demand(type_demand, R)
        typ, J = self._job_types(type, n, td, names, col)
        self._store_sorted(t, dem, w, typ, wt, rr)
        self.types = self._type_info(td, type is None, names, J, R)

    def _check_ranges(
        self,
        t: np.ndarray,
        w: np.ndarray,
        dem: np.ndarray,
        dem_names: list[str],
        wt: np.ndarray,
        rr: np.ndarray,
        col: Callable[[str], str],
    ) -> None:
        """Times finite >= 0, work finite > 0, demands, weights and reward rates finite >= 0."""
        self._check(t, col("time"), ~(np.isfinite(t) & (t >= 0)), "arrival time must be finite and >= 0")
        self._check(w, col("work"), ~(np.isfinite(w) & (w > 0)), "work (duration) must be finite and > 0")
        bad = ~(np.isfinite(dem) & (dem >= 0))
        if bad.any():
            i, r = (int(v) for v in np.argwhere(bad)[0])
            self._fail(
                i,
                str(dem_names[r]),
                f"demand must be finite and >= 0, got {float(dem[i, r])!r}",
                int(bad.any(axis=1).sum()),
            )
        self._check(wt, col("weight"), ~(np.isfinite(wt) & (wt >= 0)), "weight must be finite and >= 0")
        self._check(rr, col("reward_rate"), ~(np.isfinite(rr) & (rr >= 0)), "reward rate must be finite and >= 0")

    def _type_demand(self, type_demand: ArrayLike | None, R: int) -> np.ndarray | None:
        """The declared ``(J, R)`` nominal demands, checked, or ``None``."""
        if type_demand is None:
            return None
        try:
            td = matrix(type_demand, "type_demand", lo=0.0)
        except ScenarioError as err:
            raise TraceFormatError(f"{self.source}: {err}") from None
        if td.shape[1] != R:
            raise TraceFormatError(
                f"{self.source}: type_demand: expected {R} numbers per row (one per resource, as the demand "
                f"columns), got {td.shape[1]}"
            )
        return td

    def _job_types(
        self,
        type: ArrayLike | None,
        n: int,
        td: np.ndarray | None,
        names: Sequence[str] | None,
        col: Callable[[str], str],
    ) -> tuple[np.ndarray, int]:
        """The ``(n,)`` job types (int64) and the number of types ``J`` (fixed by ``td`` or ``names`` if given)."""
        fixed_J = None if td is None else int(td.shape[0])
        if names is not None:
            if isinstance(names, str) or len(names) == 0:
                raise TraceFormatError(f"{self.source}: names: expected a non-empty list of type names")
            if fixed_J is not None and len(names) != fixed_J:
                raise TraceFormatError(
                    f"{self.source}: names: expected {fixed_J} names (one per type_demand row), got {len(names)}"
                )
            fixed_J = len(names)
        if type is None:
            if fixed_J not in (None, 1):
                raise TraceFormatError(
                    f"{self.source}: without a type column there is one type, but {fixed_J} were declared"
                )
            return np.zeros(n, dtype=np.int64), 1
        tf = self._column(type, col("type"), n)
        self._check(
            tf,
            col("type"),
            ~(np.isfinite(tf) & (tf >= 0) & (np.floor(tf) == tf)),
            "type must be a whole number >= 0",
        )
        if fixed_J is not None:
            self._check(tf, col("type"), tf >= fixed_J, f"type out of range [0, {fixed_J})")
        if fixed_J is None:
            self._check(
                tf,
                col("type"),
                tf >= MAX_IMPLICIT_TYPES,
                f"type >= {MAX_IMPLICIT_TYPES} (remap the types to 0..J-1, or declare them with type_demand)",
            )
        typ = tf.astype(np.int64)
        return typ, fixed_J if fixed_J is not None else int(typ.max()) + 1

    def _store_sorted(
        self, t: np.ndarray, dem: np.ndarray, w: np.ndarray, typ: np.ndarray, wt: np.ndarray, rr: np.ndarray
    ) -> None:
        """Keep the columns sorted stably by arrival time, read-only."""
        self.reordered = bool(np.any(np.diff(t) < 0))
        order = np.argsort(t, kind="stable") if self.reordered else np.arange(t.shape[0])
        self.rows: np.ndarray = order.astype(np.int64)
        self.time = t[order]
        self.demand = dem[order]
        self.work = w[order]
        self.type = typ[order]
        self.weight = wt[order]
        self.reward_rate = rr[order]
        for a in (self.rows, self.time, self.demand, self.work, self.type, self.weight, self.reward_rate):
            a.setflags(write=False)
        self.num_resources = int(dem.shape[1])

    def _type_info(self, td: np.ndarray | None, untyped: bool, names: Sequence[str] | None, J: int, R: int) -> TypeInfo:
        """The types' nominal demands (``td``, or the jobs' mean without types, their per-type maximum with
        them), mean work per type and names (see the class docstring)."""
        counts = np.bincount(self.type, minlength=J).astype(np.float64)
        sums = np.bincount(self.type, weights=self.work, minlength=J)
        mean_work = np.where(counts > 0, sums / np.maximum(counts, 1), float(self.work.mean()))
        if td is None:
            if untyped:
                td = self.demand.mean(axis=0, keepdims=True)
                if np.all(self.demand == self.demand[0]):
                    td = self.demand[:1].copy()
            else:
                td = np.zeros((J, R))
                np.maximum.at(td, self.type, self.demand)
        exact = bool(np.all(self.demand == td[self.type]))
        return TypeInfo(
            demand=td,
            mean_work=mean_work,
            names=tuple(names) if names is not None else tuple(f"type{j}" for j in range(J)),
            exact=exact,
        )

    # ------------------------------------------------------------------ validation helpers

    def _fail(self, row: int, column: str, problem: str, count: int = 1) -> None:
        more = f" (and {count - 1} more rows)" if count > 1 else ""
        raise TraceFormatError(f"{self.source}: row {row}, column '{column}': {problem}{more}")

    def _check(self, values: np.ndarray, column: str, bad: np.ndarray, problem: str) -> None:
        if bad.any():
            idx = np.flatnonzero(bad)
            i = int(idx[0])
            self._fail(i, column, f"{problem}, got {float(values[i])!r}", idx.size)

    def _column(self, values: ArrayLike, column: str, n: int | None = None) -> np.ndarray:
        """``values`` as a 1-D float64 array; a non-numeric entry is reported by row."""
        try:
            arr = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            items = list(values)
            for i, v in enumerate(items):
                try:
                    float(v)
                except (TypeError, ValueError):
                    self._fail(i, column, f"not a number: {v!r}")
            raise TraceFormatError(f"{self.source}: column '{column}': not numeric") from None
        if arr.ndim != 1:
            raise TraceFormatError(
                f"{self.source}: column '{column}': expected one value per job, got shape {arr.shape}"
            )
        if n is not None and arr.shape[0] != n:
            raise TraceFormatError(
                f"{self.source}: column '{column}': has {arr.shape[0]} rows, expected {n} (one per job)"
            )
        return arr

    def _demand(self, values: ArrayLike, n: int, R: int | None, column: str) -> np.ndarray:
        if isinstance(values, (list, tuple)) and values and isinstance(values[0], (list, tuple, np.ndarray)):
            width = R if R is not None else len(values[0])
            for i, row in enumerate(values):
                if not isinstance(row, (list, tuple, np.ndarray)) or len(row) != width:
                    got = len(row) if isinstance(row, (list, tuple, np.ndarray)) else "a scalar"
                    self._fail(i, column, f"expected {width} demand values (one per resource), got {got}")
        try:
            arr = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise TraceFormatError(f"{self.source}: column '{column}': demands are not numeric") from None
        if arr.ndim == 1:
            arr = arr.reshape(-1, 1)
        if arr.ndim != 2:
            raise TraceFormatError(f"{self.source}: column '{column}': expected an (n, R) table, got shape {arr.shape}")
        if arr.shape[0] != n:
            raise TraceFormatError(
                f"{self.source}: column '{column}': has {arr.shape[0]} rows, expected {n} (one per job)"
            )
        if arr.shape[1] == 0:
            raise TraceFormatError(f"{self.source}: column '{column}': no demand columns")
        if R is not None and arr.shape[1] != R:
            self._fail(0, column, f"expected {R} demand values (one per resource), got {arr.shape[1]}", n)
        return arr

    # ------------------------------------------------------------------ construction from pandas

    @classmethod
    def from_frame(
        cls,
        df: pd.DataFrame,
        demand_columns: Sequence[str] | str,
        *,
        time: str = "arrival",
        work: str = "duration",
        type: str | None = None,
        weight: str | None = None,
        reward_rate: str | None = None,
        type_demand: ArrayLike | None = None,
        names: Sequence[str] | None = None,
        source: str = "<frame>",
        chunk_size: int = 4096,
    ) -> ReplaySource:
        """Build from a DataFrame: one row per job; ``demand_columns`` in resource order.

        Columns are numeric (or numeric strings); rows are reported by 0-based position.

        Raises:
            TraceFormatError: for a missing column or a non-numeric cell (row and column named), and
                every check of the constructor.
        """
        dcols = [demand_columns] if isinstance(demand_columns, str) else list(demand_columns)
        if not dcols:
            raise TraceFormatError(f"{source}: no demand columns given")
        wanted = {"time": time, "work": work, "type": type, "weight": weight, "reward_rate": reward_rate}
        for name in [*[c for c in wanted.values() if c is not None], *dcols]:
            if name not in df.columns:
                raise TraceFormatError(
                    f"{source}: missing column '{name}' (columns: {', '.join(map(str, df.columns))})"
                )

        def numeric(name: str) -> np.ndarray:
            s = df[name]
            try:
                return s.to_numpy(dtype=np.float64, na_value=np.nan)
            except (TypeError, ValueError):
                import pandas as pd

                coerced = pd.to_numeric(s, errors="coerce")
                bad = np.flatnonzero((coerced.isna() & s.notna()).to_numpy())
                i = int(bad[0])
                more = f" (and {bad.size - 1} more rows)" if bad.size > 1 else ""
                raise TraceFormatError(
                    f"{source}: row {i}, column '{name}': not a number: {s.iloc[i]!r}{more}"
                ) from None

        demand = np.column_stack([numeric(c) for c in dcols])
        arrays = {k: (numeric(v) if v is not None else None) for k, v in wanted.items()}
        columns: dict[str, str | Sequence[str]] = {k: v for k, v in wanted.items() if v is not None}
        columns["demand"] = dcols
        return cls(
            arrays["time"],  # type: ignore[arg-type]
            demand,
            arrays["work"],  # type: ignore[arg-type]
            type=arrays["type"],
            weight=arrays["weight"],
            reward_rate=arrays["reward_rate"],
            type_demand=type_demand,
            names=names,
            num_resources=len(dcols),
            columns=columns,
            source=source,
            chunk_size=chunk_size,
        )

    # ------------------------------------------------------------------ ArrivalSource

    def __len__(self) -> int:
        return int(self.time.shape[0])

    @property
    def num_jobs(self) -> int:
        """Number of jobs in the table."""
        return len(self)

    @property
    def horizon(self) -> float:
        """Arrival time of the last job."""
        return float(self.time[-1])

    def chunks(self, rng: np.random.Generator) -> Iterator[ArrivalChunk]:
        """The table in arrival order, ``chunk_size`` rows per chunk (fresh arrays); ``rng`` is unused."""
        for s in range(0, len(self), self.chunk_size):
            e = s + self.chunk_size
            yield ArrivalChunk(
                time=self.time[s:e].copy(),
                demand=self.demand[s:e].copy(),
                type=self.type[s:e].copy(),
                work=self.work[s:e].copy(),
                weight=self.weight[s:e].copy(),
                reward_rate=self.reward_rate[s:e].copy(),
            )

    def sample_work(self, job_type: int, rng: np.random.Generator) -> float:
        """Exponential with type ``job_type``'s empirical mean work (dummy jobs on traces: docs/papers/rms.md#dummies)."""
        return float(rng.exponential(self.types.mean_work[check_job_type(job_type, self.types.num_types)]))

    def arrival_rates(self) -> None:
        """Not defined for traces."""
        return None

    #: a job table drains: an infinite horizon ends when its last job has left
    finite = True


class TimeScaled:
    """``source`` with every arrival time multiplied by ``factor`` (alpha > 0).

    ``factor > 1`` spreads arrivals out (less traffic); the *traffic scaling* of the RMS paper (§VII-B) is
    ``1/factor``.  Work, demands and types are unchanged; ``arrival_rates()`` is divided by
    ``factor``; ``sample_work`` is the wrapped source's.

    Raises:
        ScenarioError: ``factor`` is not a finite number > 0.
    """

    def __init__(self, source: ArrivalSource, factor: float):
        self.source = source
        self.factor = number(factor, "factor", lo=0.0, lo_open=True)

    @property
    def num_resources(self) -> int:  # type: ignore[override]
        return self.source.num_resources

    @property
    def types(self) -> TypeInfo:  # type: ignore[override]
        return self.source.types

    @property
    def finite(self) -> bool:
        """Finite when the wrapped source is."""
        return bool(getattr(self.source, "finite", False))

    def chunks(self, rng: np.random.Generator) -> Iterator[ArrivalChunk]:
        """The wrapped chunks with ``time * factor``."""
        for chunk in self.source.chunks(rng):
            yield dataclasses.replace(chunk, time=chunk.time * self.factor)

    def sample_work(self, job_type: int, rng: np.random.Generator) -> float:
        return self.source.sample_work(job_type, rng)

    def arrival_rates(self) -> np.ndarray | None:
        rates = self.source.arrival_rates()
        return None if rates is None else np.asarray(rates, dtype=np.float64) / self.factor
