"""Score ties: one tolerance for every score-based choice of the baselines.

Score ties (this module): the agents choose servers and jobs by computed scores
(Best-Fit tightness, Tetris alignment, priority keys, norms of free capacity)
and break ties by a documented rule (lowest server index, earliest release,
smallest id).  Scores that are equal in exact arithmetic may differ in the last
bits once demands are divided by capacities and summed, which would let the
rounding, not the rule, decide.  Every score-based choice therefore treats two
scores as tied when they differ by at most ``SCORE_RTOL`` relative to their
magnitude (or to a ``scale`` the caller gives when a score is a difference of
larger terms, such as a free capacity ``C - load``), and applies its tie rule
among the tied ones.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["SCORE_RTOL", "score_tol", "best_mask", "argbest", "argbest_rows", "score_ranks"]

#: two computed scores within this relative distance are a tie (the documented tie rule decides)
SCORE_RTOL = 1e-9


def score_tol(value: float, scale: float = 0.0) -> float:
    """The tie tolerance around a score ``value``: ``SCORE_RTOL * max(|value|, scale)``."""
    return SCORE_RTOL * max(abs(float(value)), float(scale))


def best_mask(scores: Any, *, largest: bool = True, scale: float = 0.0) -> np.ndarray:
    """``(n,)`` bool: the scores tied with the best one (the maximum, or the minimum if not
    ``largest``) up to :func:`score_tol` of the best.  NaN scores are never best."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0 or np.all(np.isnan(s)):
        return np.zeros(s.shape, dtype=bool)
    b = float(np.nanmax(s) if largest else np.nanmin(s))
    if not math.isfinite(b):
        return s == b
    tol = score_tol(b, scale)
    return s >= b - tol if largest else s <= b + tol


def argbest(scores: Any, *, largest: bool = True, scale: float = 0.0) -> int:
    """Index of the first score tied with the best (see :func:`best_mask`): the caller orders the
    candidates by its tie rule (server index, release, id), so the first tied one wins.
    -1 if there is no candidate."""
    m = best_mask(scores, largest=largest, scale=scale)
    return int(np.argmax(m)) if m.any() else -1


def argbest_rows(scores: Any, valid: Any, *, largest: bool = True) -> np.ndarray:
    """``(n,)`` int64: :func:`argbest` of each row of ``scores`` ``(n, m)`` among the entries where
    ``valid`` ``(n, m)`` is true (-1 for a row without one), in one vectorised pass: the first valid
    entry tied with the row's best up to :func:`score_tol` (scale 0).  NaN scores are never best."""
    s = np.asarray(scores, dtype=np.float64)
    ok = np.asarray(valid, dtype=bool) & ~np.isnan(s)
    m = np.where(ok, s, -np.inf if largest else np.inf)
    b = m.max(axis=1) if largest else m.min(axis=1)
    with np.errstate(invalid="ignore"):
        tol = np.where(np.isfinite(b), SCORE_RTOL * np.abs(b), 0.0)[:, None]
        hit = ok & ((m >= b[:, None] - tol) if largest else (m <= b[:, None] + tol))
    return np.where(hit.any(axis=1), hit.argmax(axis=1), -1).astype(np.int64)


def score_ranks(scores: Any, *, scale: float = 0.0) -> np.ndarray:
    """``(n,)`` int64 dense ranks of ``scores`` in ascending order, tied scores sharing a rank.

    Scores are grouped from the smallest: a score within :func:`score_tol` of the smallest score of
    its group joins it, the next one starts a new group.  Use the ranks in place of a computed score
    in a sort (``np.lexsort((ids, release, score_ranks(key)))``) so that tied scores are ordered by
    the tie rule.  NaN sorts last, in a group of its own.
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    n = s.size
    out = np.zeros(n, dtype=np.int64)
    if n < 2:
        return out
    o = np.argsort(s, kind="stable")
    v = s[o]
    a, b = v[:-1], v[1:]
    with np.errstate(invalid="ignore"):
        tol = SCORE_RTOL * np.maximum(np.maximum(np.abs(a), np.abs(b)), float(scale))
        brk = ~(((b - a) <= tol) & np.isfinite(a) & np.isfinite(b)) & ~(a == b)
    # within a chain of consecutive close scores, a new group starts once the distance to the
    # group's smallest score exceeds the tolerance (grouping against the leader, not the neighbour)
    chain = np.flatnonzero(~brk)
    if chain.size:
        lead = 0.0  # set at the first pair of every chain
        prev = -2
        for i in chain.tolist():  # pairs (i, i+1) that are close to each other
            if i != prev + 1:
                lead = v[i]
            x = v[i + 1]
            if not (x == lead or x - lead <= score_tol(x, scale) or x - lead <= score_tol(lead, scale)):
                brk[i] = True
                lead = x
            prev = i
    out[o] = np.concatenate([[0], np.cumsum(brk)])
    return out
