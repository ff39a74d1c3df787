"""Indexed server selection: "where does this demand fit" without touching every server.

The reference of every answer here is a scan over all ``L`` servers
(:func:`scan_select`, which is ``baselines.greedy.select_server``): the servers
where the demand fits, ``fl(load + demand) <= limit`` in every resource, and
among them

* ``first-fit``: the lowest index;
* ``best-fit``: the largest score ``sum_r (d_r / C_r) (load_r / C_r)`` (``C_r``
  taken as 1 where it is <= 0), ties to the lowest index;
* ``worst-fit``: the smallest such score, ties to the lowest index;
* ``random-fit``: ``idx[rng.integers(idx.size)]`` over the fitting indices in
  increasing order (one draw, none when nothing fits).

:class:`PlacementIndex` gives the same answers, bit for bit, from state that
:class:`~clustergym.core.cluster.Cluster` keeps up to date incrementally.  The
cluster appends the index of every server whose state changes to a journal
(:meth:`Cluster.changes_since`); the index reads it when it is queried, so an
index nobody queries costs one list append per change.

Servers are split into blocks of ``B`` consecutive indices.

* **Discrete job types** (the demand is exactly one of the ``J`` type rows; the
  ec2, bf-trap and RMS presets).  For every type and server the index keeps
  the fit flag and the Best-Fit score, computed by the same NumPy expressions
  as the scan on the same operands, so with the same results; a changed
  server is recomputed for all types at once.  Per (type, block) it keeps the
  number of fitting servers, the first one, and the largest and smallest score
  among them with the lowest index that has it.  A query reads ``L / B``
  block summaries and at most one block: first-fit is the smallest block
  "first", best-fit the first block whose maximum is the largest (blocks are
  in index order and a block's maximum names its lowest index), random-fit
  finds the block of the k-th fitting server from the running counts and the
  server inside it.  Block summaries are refreshed lazily, per kind, for the
  blocks whose servers changed.
* **Any other demand** (continuous demands, a job whose demand differs from its
  type's).  Per block the index keeps the smallest load and the largest limit
  per resource, and the largest and smallest ``load_r / C_r^2``.  A block can
  hold the demand only if ``fl(min load + d) <= max limit`` in every resource
  (the fit test is monotone in the load: an exact necessary condition).
  First-fit scans candidate blocks in index order and stops at the first fit;
  best-fit (worst-fit) visits candidate blocks by decreasing upper (increasing
  lower) bound of the score, ``sum_r d_r max(load_r / C_r^2)`` widened by a
  relative 1e-9 (far above the rounding of either side), and stops when no
  remaining block can reach (or tie) the best found.  Inside a visited block
  fits and scores are the scan's own expressions.  Random-fit needs every
  fitting server, so it scans the candidate blocks.

:class:`ResidualIndex` does the same for a *scalar* residual capacity per server
that its owner keeps (the bin-packing agents' own bookkeeping): the tightest
server and the first server where a scalar size fits.

Only the servers' *free* capacity is indexed.  A real job can also start in an
empty reservation slot of its type; while a cluster has slots,
:meth:`Cluster.select` uses the scan (DRA's and GPA's loss systems, where
``L`` is small).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from clustergym.core.scores import argbest, score_tol

if TYPE_CHECKING:  # pragma: no cover
    from clustergym.core.cluster import Cluster

__all__ = ["RULES", "PlacementIndex", "ResidualIndex", "block_size", "scan_scores", "scan_select"]

#: server rules: lowest index, largest score, smallest score, uniformly random (all among fitting servers)
RULES = ("first-fit", "best-fit", "worst-fit", "random-fit")

_NEG, _POS = -math.inf, math.inf
_MARGIN = 1e-9  # relative widening of the continuous engine's score bounds


def scan_scores(demand: np.ndarray, load: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Best-Fit scores ``sum_r (d_r / C_r) (load_r / C_r)`` of the given rows (``C_r <= 0`` counts as 1),
    summed over the last (resource) axis: ``demand`` ``(R,)`` against ``(L, R)`` rows gives ``(L,)``;
    ``(n, 1, R)`` demands give ``(n, L)``."""
    cap = np.where(capacity > 0, capacity, 1.0)
    return ((demand / cap) * (load / cap)).sum(axis=-1)


def scan_select(
    rule: str,
    fits: np.ndarray,
    demand: np.ndarray,
    load: np.ndarray,
    capacity: np.ndarray,
    rng: np.random.Generator | None,
) -> int:
    """The server chosen by ``rule`` among those where ``fits`` (``(L,)`` bool), or -1: the reference scan.

    Args:
        demand: ``(R,)`` the job's demand.
        load, capacity: ``(L, R)`` occupied and total capacity.
        rng: the generator of ``random-fit`` (one ``integers`` draw when some server fits).
    """
    idx = np.flatnonzero(fits)
    if idx.size == 0:
        return -1
    if rule == "first-fit":
        return int(idx[0])
    if rule == "random-fit":
        return int(idx[rng.integers(idx.size)])  # type: ignore[union-attr]
    score = scan_scores(demand, load[idx], capacity[idx])
    # the tightest (the loosest for worst-fit); scores within SCORE_RTOL of it are ties, to the lowest index
    return int(idx[argbest(score, largest=rule != "worst-fit")])


def block_size(num_servers: int) -> int:
    """Servers per block: about ``sqrt(L)``, a power of two in [16, 256]."""
    b = 16
    while b < 256 and b * b < num_servers:
        b *= 2
    return b


class PlacementIndex:
    """Incremental fit sets and server choices of one :class:`~clustergym.core.cluster.Cluster`.

    Built lazily: nothing is allocated until the first query.  Every query first
    reads the cluster's journal of changed servers (:meth:`sync`).

    Args:
        cluster: the cluster whose ``load`` (and limits, capacities, type demands) it indexes.
        block: servers per block (default :func:`block_size`).
        typed: keep the per-type engine (for clusters whose jobs demand exactly their type's row).
    """

    def __init__(self, cluster: Cluster, block: int | None = None, typed: bool = True):
        self.cluster = cluster
        L = cluster.num_servers
        self.B = int(block) if block is not None else block_size(L)
        if self.B < 1:
            raise ValueError(f"block size must be >= 1, got {block}")
        self.nb = -(-L // self.B)
        self.typed = bool(typed) and cluster.num_types > 0
        self._ready = False
        self._cursor = -1

    # ------------------------------------------------------------------ state
    def _setup(self) -> None:
        c = self.cluster
        L, R, J, B, nb = c.num_servers, c.num_resources, c.num_types, self.B, self.nb
        self.L, self.R, self.J = L, R, J
        self.capn = np.where(c.capacity > 0, c.capacity, 1.0)
        self.limit = c._limit
        self.D = np.ascontiguousarray(c.type_demand, dtype=np.float64)
        self._dbytes = [self.D[j].tobytes() for j in range(J)]
        self.starts = np.arange(nb, dtype=np.int64) * B
        self.ends = np.minimum(self.starts + B, L)
        if self.typed:
            self.fit3 = np.zeros((J, nb, B), dtype=bool)  # padding servers never fit
            self.fit = self.fit3.reshape(J, nb * B)
            self.score3: np.ndarray | None = None  # allocated at the first best/worst-fit query
            self.cnt = np.zeros((J, nb), dtype=np.int64)
            self.total = [0] * J  # fitting servers per type (cnt summed)
            # few types and resources: a changed server is recomputed in Python floats (the same IEEE
            # operations; sums in resource order as NumPy's for fewer than 8 terms), cheaper than NumPy calls
            self._py_rows = R < 8 and J * R <= 48
            self._Dl = self.D.tolist()
            self.first = np.zeros((J, nb), dtype=np.int64)
            self.best = np.zeros((J, nb))  # per block: the largest score of a fitting server
            self.worst = np.zeros((J, nb))  # and the smallest
            # blocks whose summaries of each kind ("first", "best", "worst") are out of date, for the
            # kinds queried so far (a kind's first query summarises every block)
            self._stale: dict[str, set[int]] = {}
        # continuous engine (allocated at its first query)
        self._cont = False
        self._cont_stale: set[int] = set()
        self._ready = True

    def sync(self) -> None:
        """Bring the index up to date with the cluster (reads its journal of changed servers)."""
        if not self._ready:
            self._setup()
        servers, self._cursor = self.cluster.changes_since(self._cursor)
        if servers is None:  # first use, a reset, or more changes than the journal keeps
            self._refresh(None)
        elif servers:
            self._refresh(servers)

    def _refresh(self, servers: list[int] | None) -> None:
        B = self.B
        if servers is None:
            us: set[int] | range = range(self.L)
        else:
            us = set(servers)
        if self.typed and len(us) <= 4 and self._py_rows:  # the usual few servers per event, few types
            for s in us:
                self._row(s)
            if self._stale or self._cont:
                blocks = {s // B for s in us}
                for k in self._stale.values():
                    k.update(blocks)
                if self._cont:
                    self._cont_stale.update(blocks)
            return
        blocks = set(range(self.nb)) if servers is None else {s // B for s in us}
        if self.typed:
            if len(us) <= 4:  # one row at a time, basic indexing
                load, lim, D, fit = self.cluster.load, self.limit, self.D, self.fit
                score = self.score3.reshape(self.J, -1) if self.score3 is not None else None
                for s in us:
                    ld = load[s]
                    # the scan's fit test for every type: fl(load + d) <= limit in every resource
                    fit[:, s] = (ld + D <= lim[s]).all(axis=1)
                    if score is not None:
                        cap = self.capn[s]
                        score[:, s] = ((D / cap) * (ld / cap)).sum(axis=1)
                for b in blocks:
                    self.cnt[:, b] = self.fit3[:, b, :].sum(axis=1)
                self.total = self.cnt.sum(axis=1).tolist()
            else:
                idx = np.fromiter(us, dtype=np.int64, count=len(us))
                load = self.cluster.load[idx]
                D = self.D
                self.fit[:, idx] = (load[None, :, :] + D[:, None, :] <= self.limit[idx][None, :, :]).all(axis=2)
                if self.score3 is not None:
                    self._scores(idx, load)
                bl = np.fromiter(blocks, dtype=np.int64, count=len(blocks))
                self.cnt[:, bl] = self.fit3[:, bl, :].sum(axis=2)
                self.total = self.cnt.sum(axis=1).tolist()
            for k in self._stale.values():
                k.update(blocks)
        if self._cont:
            self._cont_stale.update(blocks)

    def _row(self, s: int) -> None:
        """Recompute server ``s`` for every type in Python floats: the scan's operations, in its order."""
        ld = self.cluster.load[s].tolist()
        li = self.limit[s].tolist()
        Dl = self._Dl
        # fit: fl(load + d) <= limit in every resource
        new = []
        for dj in Dl:
            ok = True
            for x, d, m in zip(ld, dj, li):
                if not x + d <= m:
                    ok = False
                    break
            new.append(ok)
        old = self.fit[:, s].tolist()
        if new != old:
            self.fit[:, s] = new
            b = s // self.B
            cnt, total = self.cnt, self.total
            for j, (n, o) in enumerate(zip(new, old)):
                if n != o:
                    step = 1 if n else -1
                    cnt[j, b] += step
                    total[j] += step
        if self.score3 is not None:
            cap = self.capn[s].tolist()
            u = [x / c for x, c in zip(ld, cap)]
            row = []
            for dj in Dl:  # (d / cap) * (load / cap), summed in resource order (not sum(): no compensation)
                acc = (dj[0] / cap[0]) * u[0]
                for r in range(1, len(u)):
                    acc += (dj[r] / cap[r]) * u[r]
                row.append(acc)
            self.score3.reshape(self.J, -1)[:, s] = row

    def _scores(self, idx: np.ndarray, load: np.ndarray) -> None:
        cap = self.capn[idx]
        # the scan's expression, element for element: (demand / cap) * (load / cap), summed over
        # resources (a row's sum does not depend on how many rows are summed at once)
        self.score3.reshape(self.J, -1)[:, idx] = (  # type: ignore[union-attr]
            (self.D[:, None, :] / cap[None, :, :]) * (load / cap)[None, :, :]
        ).sum(axis=2)

    def _summaries(self, kind: str) -> None:
        stale = self._stale.get(kind)
        if stale is None:  # the first query of this kind: summarise every block
            stale = self._stale[kind] = set(range(self.nb))
        if not stale:
            return
        if kind != "first" and self.score3 is None:
            self.score3 = np.zeros((self.J, self.nb, self.B))
            idx = np.arange(self.L, dtype=np.int64)
            self._scores(idx, self.cluster.load[idx])
            stale.update(range(self.nb))
        if len(stale) <= 2:  # the usual case: basic indexing, one block at a time
            for b in stale:
                self._summarise(kind, b, b * self.B)
        else:
            bl = np.fromiter(stale, dtype=np.int64, count=len(stale))
            self._summarise(kind, bl, (bl * self.B)[None, :])
        stale.clear()

    def _summarise(self, kind: str, bl, base) -> None:
        """Recompute the ``kind`` summaries of block(s) ``bl`` (an int or an index array)."""
        F = self.fit3[:, bl]
        ax = F.ndim - 1
        if kind == "first":
            # the first fitting server of each block (a sentinel past every index where none fits)
            self.first[:, bl] = np.where(F.any(axis=ax), base + F.argmax(axis=ax), self.nb * self.B)
            return
        S = self.score3[:, bl]  # type: ignore[index]
        if kind == "best":
            self.best[:, bl] = np.where(F, S, _NEG).max(axis=ax)
        else:
            self.worst[:, bl] = np.where(F, S, _POS).min(axis=ax)

    # ------------------------------------------------------------------ queries
    def _type_of(self, job_type: int, demand: np.ndarray | None) -> int:
        """``job_type`` when the per-type engine answers for this demand, else -1."""
        if not self.typed or not 0 <= job_type < self.J:
            return -1
        if demand is not None and np.asarray(demand, dtype=np.float64).tobytes() != self._dbytes[job_type]:
            return -1
        return job_type

    def count(self, job_type: int, demand: np.ndarray | None = None) -> int:
        """Number of servers whose free capacity holds ``demand`` (default: the type's own demand)."""
        self.sync()
        j = self._type_of(job_type, demand)
        if j < 0:
            return int(self._cont_fits(self._demand(job_type, demand)).size)
        return self.total[j]

    def any_fit(self, job_type: int, demand: np.ndarray | None = None) -> bool:
        """Whether some server's free capacity holds ``demand`` (default: the type's own demand)."""
        self.sync()
        j = self._type_of(job_type, demand)
        if j < 0:
            return self._select_cont("first-fit", self._demand(job_type, demand), None) >= 0
        return self.total[j] > 0

    def fit_mask(self, job_type: int, demand: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """``(L,)`` bool: the servers whose free capacity holds ``demand``; a new array, or ``out``."""
        self.sync()
        j = self._type_of(job_type, demand)
        if j < 0:
            d = self._demand(job_type, demand)
            mask = (self.cluster.load + d <= self.limit).all(axis=1)
            if out is None:
                return mask
            out[...] = mask
            return out
        if out is None:
            return self.fit[j, : self.L].copy()
        out[...] = self.fit[j, : self.L]
        return out

    def _demand(self, job_type: int, demand: np.ndarray | None) -> np.ndarray:
        if demand is None:
            return self.cluster.type_demand[job_type]
        return np.asarray(demand, dtype=np.float64)

    def select(
        self, rule: str, job_type: int, demand: np.ndarray | None = None, rng: np.random.Generator | None = None
    ) -> int:
        """The server ``rule`` chooses among those whose free capacity holds ``demand``, or -1.

        Equal to ``scan_select(rule, cluster.fits_free(demand), demand, load, capacity, rng)``,
        including the random draw of ``random-fit``.  ``demand`` defaults to the type's own.
        """
        self.sync()
        j = self._type_of(job_type, demand)
        if j < 0:
            return self._select_cont(rule, self._demand(job_type, demand), rng)
        if self.total[j] == 0:
            if rule not in RULES:
                raise ValueError(f"unknown server rule {rule!r}; expected one of {list(RULES)}")
            return -1
        if rule == "best-fit":
            self._summaries("best")
            row = self.best[j]
            b = int(row.argmax())  # a block holding the largest score
            if row[b] == _NEG:
                return -1
            # scores within SCORE_RTOL of the best are ties, to the lowest index (scan_select's argbest):
            # the first block whose maximum reaches the threshold, then its first server that does
            thr = row[b] - score_tol(row[b])
            b = int(np.argmax(row >= thr))
            s = self.score3[j, b]  # type: ignore[index]
            return b * self.B + int(np.argmax(self.fit3[j, b] & (s >= thr)))
        if rule == "first-fit":
            self._summaries("first")
            f = int(self.first[j].min())
            return f if f < self.L else -1
        if rule == "worst-fit":
            self._summaries("worst")
            row = self.worst[j]
            b = int(row.argmin())
            if row[b] == _POS:
                return -1
            thr = row[b] + score_tol(row[b])
            b = int(np.argmax(row <= thr))
            s = self.score3[j, b]  # type: ignore[index]
            return b * self.B + int(np.argmax(self.fit3[j, b] & (s <= thr)))
        if rule == "random-fit":
            n = self.total[j]
            if n == 0:
                return -1
            cs = np.cumsum(self.cnt[j])
            k = int(rng.integers(n))  # type: ignore[union-attr]
            b = int(np.searchsorted(cs, k, side="right"))
            k -= int(cs[b - 1]) if b else 0
            return b * self.B + int(np.flatnonzero(self.fit3[j, b])[k])
        raise ValueError(f"unknown server rule {rule!r}; expected one of {list(RULES)}")

    # ------------------------------------------------------------------ continuous engine
    def _cont_setup(self) -> None:
        nb, R = self.nb, self.R
        self.c_minload = np.zeros((nb, R))
        self.c_maxv = np.zeros((nb, R))
        self.c_minv = np.zeros((nb, R))
        self.c_maxabs = np.zeros((nb, R))
        self.c_maxlim = np.array([self.limit[a:b].max(axis=0) for a, b in zip(self.starts, self.ends)])
        self._cont = True
        self._cont_stale = set(range(nb))

    def _cont_sync(self) -> None:
        if not self._cont:
            self._cont_setup()
        if not self._cont_stale:
            return
        load = self.cluster.load
        for b in self._cont_stale:
            a, e = self.starts[b], self.ends[b]
            ld = load[a:e]
            cap = self.capn[a:e]
            v = (ld / cap) / cap
            self.c_minload[b] = ld.min(axis=0)
            self.c_maxv[b] = v.max(axis=0)
            self.c_minv[b] = v.min(axis=0)
            self.c_maxabs[b] = np.abs(v).max(axis=0)
        self._cont_stale.clear()

    def _cont_candidates(self, demand: np.ndarray) -> np.ndarray:
        self._cont_sync()
        # a block holds a fitting server only if fl(min load + d) <= max limit in every resource
        return np.flatnonzero((self.c_minload + demand <= self.c_maxlim).all(axis=1))

    def _block_fits(self, b: int, demand: np.ndarray) -> np.ndarray:
        a, e = self.starts[b], self.ends[b]
        return (self.cluster.load[a:e] + demand <= self.limit[a:e]).all(axis=1)

    def _cont_fits(self, demand: np.ndarray) -> np.ndarray:
        parts = [self.starts[b] + np.flatnonzero(self._block_fits(b, demand)) for b in self._cont_candidates(demand)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def _select_cont(self, rule: str, demand: np.ndarray, rng: np.random.Generator | None) -> int:
        if rule not in RULES:
            raise ValueError(f"unknown server rule {rule!r}; expected one of {list(RULES)}")
        cand = self._cont_candidates(demand)
        if rule == "first-fit":
            for b in cand.tolist():
                ok = self._block_fits(b, demand)
                if ok.any():
                    return int(self.starts[b] + ok.argmax())
            return -1
        if rule == "random-fit":
            idx = self._cont_fits(demand)
            return int(idx[rng.integers(idx.size)]) if idx.size else -1  # type: ignore[union-attr]
        if cand.size == 0:
            return -1
        widen = _MARGIN * (demand * self.c_maxabs[cand]).sum(axis=1) + 1e-300
        if rule == "best-fit":
            bound = (demand * self.c_maxv[cand]).sum(axis=1) + widen
            order = np.argsort(-bound, kind="stable")
        else:
            bound = (demand * self.c_minv[cand]).sum(axis=1) - widen
            order = np.argsort(bound, kind="stable")
        load = self.cluster.load
        best, best_score = -1, 0.0
        worst = rule == "worst-fit"
        for o in order.tolist():
            bnd = bound[o]
            if best >= 0 and (bnd > best_score if worst else bnd < best_score):
                break  # no server of this block, nor of the later ones, reaches the best score
            b = int(cand[o])
            a, e = self.starts[b], self.ends[b]
            ok = (load[a:e] + demand <= self.limit[a:e]).all(axis=1)
            if not ok.any():
                continue
            i = np.flatnonzero(ok)
            cap = self.capn[a:e][i]
            sc = ((demand / cap) * (load[a:e][i] / cap)).sum(axis=1)
            k = int(sc.argmin() if worst else sc.argmax())
            s, v = int(a + i[k]), sc[k]
            if best < 0 or (v < best_score if worst else v > best_score) or (v == best_score and s < best):
                best, best_score = s, v
        if best < 0:
            return -1
        # scores within SCORE_RTOL of the best are ties, to the lowest index (scan_select's argbest): the
        # first server, in index order over the blocks whose bound reaches the threshold, that does
        tol = score_tol(best_score)
        thr = best_score + tol if worst else best_score - tol
        for o in np.argsort(cand, kind="stable").tolist():
            if (bound[o] > thr) if worst else (bound[o] < thr):
                continue
            b = int(cand[o])
            a, e = self.starts[b], self.ends[b]
            ok = (load[a:e] + demand <= self.limit[a:e]).all(axis=1)
            i = np.flatnonzero(ok)
            if i.size == 0:
                continue
            cap = self.capn[a:e][i]
            sc = ((demand / cap) * (load[a:e][i] / cap)).sum(axis=1)
            hit = np.flatnonzero(sc <= thr if worst else sc >= thr)
            if hit.size:
                return int(a + i[hit[0]])
        return best  # not reached: the best server itself meets the threshold

    # ------------------------------------------------------------------ introspection
    def nbytes(self) -> int:
        """Bytes held by the index's arrays (0 before the first query)."""
        if not self._ready:
            return 0
        names = (
            "fit3",
            "score3",
            "cnt",
            "first",
            "best",
            "worst",
            "c_minload",
            "c_maxv",
            "c_minv",
            "c_maxabs",
            "c_maxlim",
            "capn",
            "starts",
            "ends",
        )
        return int(sum(a.nbytes for n in names if isinstance(a := getattr(self, n, None), np.ndarray)))

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"PlacementIndex(L={self.cluster.num_servers}, B={self.B}, typed={self.typed})"


class ResidualIndex:
    """Exact "tightest server" and "first fit" queries over a scalar residual per server.

    The owner keeps ``residual`` (an ``(L,)`` float array, changed in place) and calls
    :meth:`touch` for every server it changes; the index catches up when queried.  Server
    ``l`` fits a size ``x`` when ``fl(residual_l + tol_l) >= x``.  The answers are those
    of the NumPy scans (``baselines/bfjs.py``):

    * :meth:`tightest`: among the fitting servers, with ``m`` their smallest residual, the
      lowest index whose residual is ``<= fl(m + tie)``;
    * :meth:`first`: the lowest fitting index.

    Per distinct ``tol`` value (one for identical servers), a sorted list of ``(key,
    residual, l)`` with ``key = fl(residual + tol)``: the fitting servers are a suffix, and
    along it the residual does not decrease (``key`` is monotone in the residual), so the
    tightest window is read from the suffix's start, one distinct residual at a time.
    :meth:`first` reads per-block maxima of the key.
    """

    def __init__(self, residual: np.ndarray, tol: np.ndarray, block: int | None = None):
        from sortedcontainers import SortedList

        self.residual = residual
        self.tol = np.asarray(tol, dtype=np.float64)
        L = self.tol.shape[0]
        self.L = L
        self.B = int(block) if block is not None else block_size(L)
        self.nb = -(-L // self.B)
        values, self.group = np.unique(self.tol, return_inverse=True)
        self._tol = self.tol.tolist()
        self._group = self.group.tolist()
        self._lists = [SortedList() for _ in values]
        self.key = np.full(self.nb * self.B, _NEG)  # padding never fits
        self.bmax = np.full(self.nb, _NEG)
        self._entry: list[tuple[float, float, int] | None] = [None] * L
        self._dirty: set[int] = set(range(L))

    def touch(self, server: int) -> None:
        """``residual[server]`` changed."""
        self._dirty.add(server)

    def _sync(self) -> None:
        dirty = self._dirty
        if not dirty:
            return
        res = self.residual
        if len(dirty) > max(64, self.L // 8):  # rebuild from scratch
            r = np.asarray(res, dtype=np.float64)
            k = r + self.tol  # the scans' fl(residual + tol)
            self.key[: self.L] = k
            for sl in self._lists:
                sl.clear()
            entries = list(zip(k.tolist(), r.tolist(), range(self.L)))
            self._entry = entries  # type: ignore[assignment]
            for entry in entries:
                self._lists[self._group[entry[2]]].add(entry)
            self.bmax[:] = self.key.reshape(self.nb, self.B).max(axis=1)
        else:
            blocks = set()
            for l in dirty:
                rl = float(res[l])
                e = (rl + self._tol[l], rl, l)
                old = self._entry[l]
                if old != e:
                    sl = self._lists[self._group[l]]
                    if old is not None:
                        sl.remove(old)
                    sl.add(e)
                    self._entry[l] = e
                    self.key[l] = e[0]
                    blocks.add(l // self.B)
            B = self.B
            for b in blocks:
                self.bmax[b] = self.key[b * B : (b + 1) * B].max()
        dirty.clear()

    def first(self, x: float) -> int:
        """The lowest index ``l`` with ``fl(residual_l + tol_l) >= x``, or -1."""
        self._sync()
        hit = self.bmax >= x
        b = int(hit.argmax())
        if not hit[b]:
            return -1
        return b * self.B + int((self.key[b * self.B : (b + 1) * self.B] >= x).argmax())

    def tightest(self, x: float, scale: float = 0.0) -> int:
        """Among the servers where ``x`` fits, the lowest index with residual ``<= fl(m + tol)``,
        ``m`` the smallest residual among them and ``tol = score_tol(m, scale)`` (ties as
        ``argbest(largest=False, scale=scale)``); -1 if ``x`` fits nowhere."""
        self._sync()
        starts = []
        m = _POS
        for sl in self._lists:
            p = sl.bisect_left((x,))  # the first key >= x
            if p < len(sl):
                starts.append((sl, p))
                m = min(m, sl[p][1])
        if not starts:
            return -1
        thr = m + score_tol(m, scale)
        best = self.L
        for sl, p in starts:
            n = len(sl)
            while p < n:
                k, r, l = sl[p]
                if r > thr:
                    break
                best = min(best, l)  # the first entry of a residual value has its lowest index
                p = sl.bisect_right((k, r, self.L))
        return best
