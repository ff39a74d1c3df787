"""Composing sources: a fixed job table merged into another stream.

:class:`PrefixedSource` puts the jobs of a :class:`~clustergym.workloads.replay.ReplaySource`
(the *prefix*) into the stream of another source (*then*), in time order.  Its
main use is a prescribed initial state: a prefix of jobs at time 0 is a
backlog (or, placed by a small setup agent, a given packing of the servers)
from which the ordinary stochastic stream continues -- e.g. the Best-Fit trap
of RMS Fig. 1b (§III) started in its trap state: every server in configuration (2, 1) and ``Q = (1000, 1000)``
at time 0, then Poisson arrivals.

Order: the merged stream is sorted by arrival time; at equal times the prefix
job comes first (and prefix jobs keep their table order, ``then`` jobs theirs).
With a prefix at time 0 and a Poisson ``then``, the prefix jobs get ids
``0 .. len(prefix) - 1``.

Randomness: the prefix draws nothing; ``then`` gets the episode's generator
untouched, so on a given seed the ``then`` part is exactly the stream that
``then`` alone would produce (common random numbers with the plain scenario).

Types: the two sources must have the same number of resources and of job
types, with the same nominal demands.  ``types``, ``sample_work`` (dummy
lifetimes) and ``arrival_rates`` are those of ``then`` (the long-run stream).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from clustergym.core.source import ArrivalChunk, ArrivalSource, TypeInfo
from clustergym.errors import ScenarioError
from clustergym.workloads.replay import ReplaySource

__all__ = ["PrefixedSource"]

_COLUMNS = ("time", "demand", "type", "work", "weight", "reward_rate")


class PrefixedSource:
    """``prefix`` (a finite job table) merged, in time order, into the stream of ``then``.

    Args:
        prefix: the fixed jobs (any arrival times; typically all at 0).
        then: the source that continues (Poisson, slotted, a trace, ...).

    Raises:
        ScenarioError: the two sources disagree on resources, types or type demands.
    """

    def __init__(self, prefix: ReplaySource, then: ArrivalSource):
        if not isinstance(prefix, ReplaySource):
            raise ScenarioError("prefix", f"expected a ReplaySource (a fixed job table), got {type(prefix).__name__}")
        if prefix.num_resources != then.num_resources:
            raise ScenarioError(
                "prefix",
                f"prefix jobs have {prefix.num_resources} resources, the continuing source {then.num_resources}",
            )
        pt, tt = prefix.types, then.types
        if pt.num_types != tt.num_types:
            raise ScenarioError(
                "prefix",
                f"prefix has {pt.num_types} job types, the continuing source {tt.num_types} "
                "(declare them with ReplaySource(type_demand=...))",
            )
        if not np.allclose(pt.demand, tt.demand, rtol=1e-12, atol=0.0):
            raise ScenarioError(
                "prefix", f"type demands differ: prefix {pt.demand.tolist()}, continuing source {tt.demand.tolist()}"
            )
        self.prefix = prefix
        self.then = then
        self.num_resources = int(then.num_resources)
        self._cols = {c: np.asarray(getattr(prefix, c)) for c in _COLUMNS}

    @property
    def finite(self) -> bool:
        """Finite when the continuing source is (the prefix is a finite table)."""
        return bool(getattr(self.then, "finite", False))

    @property
    def types(self) -> TypeInfo:  # type: ignore[override]
        t = self.then.types
        if t.exact and not self.prefix.types.exact:
            return TypeInfo(demand=t.demand, mean_work=t.mean_work, names=t.names, exact=False)
        return t

    def __len__(self) -> int:
        """Number of prefix jobs."""
        return len(self.prefix)

    def chunks(self, rng: np.random.Generator) -> Iterator[ArrivalChunk]:
        """The merged stream: each chunk of ``then`` with the prefix jobs up to its last time merged in."""
        cols = self._cols
        n = len(self.prefix)
        pos = 0  # next prefix row to emit
        for chunk in self.then.chunks(rng):
            if len(chunk) == 0:
                continue
            if pos >= n:
                yield chunk
                continue
            # prefix rows at or before the chunk's last time (ties: prefix first)
            end = int(np.searchsorted(cols["time"], chunk.time[-1], side="right"))
            if end <= pos:
                yield chunk
                continue
            merged = {c: np.concatenate([cols[c][pos:end], getattr(chunk, c)]) for c in _COLUMNS}
            src = np.concatenate([np.zeros(end - pos, dtype=np.int8), np.ones(len(chunk), dtype=np.int8)])
            order = np.lexsort((src, merged["time"]))  # by time, then prefix before then; stable
            pos = end
            yield ArrivalChunk(**{c: merged[c][order] for c in _COLUMNS})
        if pos < n:  # ``then`` ended (finite, or rate 0): the rest of the prefix
            yield ArrivalChunk(**{c: cols[c][pos:].copy() for c in _COLUMNS})

    def sample_work(self, job_type: int, rng: np.random.Generator) -> float:
        """Dummy lifetimes: the continuing source's law."""
        return self.then.sample_work(job_type, rng)

    def arrival_rates(self) -> np.ndarray | None:
        """The continuing source's long-run rates (a finite prefix does not change them)."""
        return self.then.arrival_rates()
