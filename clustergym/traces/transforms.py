"""Small preprocessing transforms used by the papers, each a pure function (tested one by one).

* :func:`pow_half_exponent`, :func:`round_up_pow_half`, :func:`rms_type` -- round demands up to the
  closest power 1/2^p with p <= p_max and take the maximum over resources (RMS paper §VII-B;
  auto-scaling paper Sec. 7.2): a task of type p has size 2^-p.
* :func:`max_demand`, :func:`clamp_min` -- the single-resource demand max(cpu, mem) of
  the BF-J/S paper (§VII-B) with the clamp of tiny demands (docs/papers/bfjs.md#google-trace).
* :func:`kmeans_classes`, :func:`class_table` -- k-means job classes fitted on a window
  (LoTES Sec. 5.3.2; docs/papers/lotes.md#classes) and their Table-2 statistics.
* :func:`priority_band`, :func:`map_priority`, :data:`PRIORITY_MAPS` -- priority -> band,
  weight or reward factor (docs/papers/autoscale.md#google-trace, docs/papers/mris.md#weights).
* :func:`scale_arrivals` -- arrival times times alpha = 1 / traffic scaling (RMS paper §VII-B).
* :func:`window`, :func:`first_n`, :func:`rebase` -- take a time window, the first N arrivals,
  or shift arrivals to start at 0.

Each returns new arrays/frames (inputs are not modified) and, where it drops or alters rows,
the count, so the loaders' :class:`~clustergym.traces.table.FilterReport` stays complete.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from clustergym.errors import ScenarioError
from clustergym.validation import number, positive

__all__ = [
    "pow_half_exponent",
    "pow_half_names",
    "round_up_pow_half",
    "rms_type",
    "pow_half_type_demand",
    "max_demand",
    "clamp_min",
    "kmeans_classes",
    "assign_classes",
    "class_table",
    "PRIORITY_BANDS",
    "PRIORITY_MAPS",
    "priority_band",
    "map_priority",
    "scale_arrivals",
    "window",
    "first_n",
    "rebase",
]


# ---------------------------------------------------------------------------------------------- power-of-1/2


def pow_half_exponent(x: Any, p_max: int = 9) -> np.ndarray:
    """The exponent p of the smallest power 1/2^p (0 <= p <= p_max) that is >= x.

    ``p(x) = min(p_max, floor(log2(1/x)))`` for x in (0, 1], computed exactly with
    ``frexp`` (no rounding error at the powers themselves: p(1/4) = 2, p(0.2500001) = 1).
    x <= 2^-p_max, including 0 and NaN (a missing request), gives p_max (RMS paper §VII-B: p from 0 to 9).

    Raises:
        ScenarioError: a value > 1 (it cannot be rounded to a size <= 1) or < 0.
    """
    p_max = number(p_max, "p_max", lo=0, integer=True)
    a = np.asarray(x, dtype=np.float64)
    if np.any(a > 1.0) or np.any(a < 0):
        bad = a[(a > 1.0) | (a < 0)].ravel()[0]
        raise ScenarioError("demand", f"power-of-1/2 rounding needs values in [0, 1], got {bad!r}")
    safe = np.where(np.isfinite(a) & (a > 0), a, 2.0 ** -(int(p_max) + 1))
    m, e = np.frexp(safe)  # safe = m * 2**e, m in [0.5, 1)
    p = np.where(m == 0.5, 1 - e, -e)  # exact power 2^(e-1) -> p = 1 - e; otherwise ceil to 2^e -> p = -e
    return np.clip(p, 0, int(p_max)).astype(np.int64)


def round_up_pow_half(x: Any, p_max: int = 9) -> np.ndarray:
    """``2.0 ** -pow_half_exponent(x, p_max)``: x rounded up to a power of 1/2 (at least 2^-p_max)."""
    return np.ldexp(1.0, -pow_half_exponent(x, p_max))


def rms_type(*demands: Any, p_max: int = 9) -> np.ndarray:
    """Type p = min over resources of p(demand): the size 2^-p is the max of the rounded-up demands.

    ``rms_type(cpu, mem)`` maps Google tasks to the 10 types of the RMS paper's §VII-B (p_max = 9).
    """
    if not demands:
        raise ScenarioError("demand", "rms_type needs at least one demand array")
    ps = [pow_half_exponent(d, p_max) for d in demands]
    return np.minimum.reduce(ps) if len(ps) > 1 else ps[0]


def pow_half_type_demand(p_max: int = 9, num_resources: int = 1) -> np.ndarray:
    """``(p_max + 1, R)`` nominal demands: row p is 2^-p in every resource."""
    return np.repeat(np.ldexp(1.0, -np.arange(int(p_max) + 1))[:, None], int(num_resources), axis=1)


# ---------------------------------------------------------------------------------------------- 1-D demand


def max_demand(*demands: Any) -> np.ndarray:
    """The elementwise maximum over resources (BF-J/S paper §VII-B: one resource = max(cpu, mem))."""
    if not demands:
        raise ScenarioError("demand", "max_demand needs at least one demand array")
    return np.maximum.reduce([np.asarray(d, dtype=np.float64) for d in demands])


def clamp_min(x: Any, minimum: float) -> tuple[np.ndarray, int]:
    """``max(x, minimum)`` and the number of values raised (``min_demand = 1e-3`` for the BF-J/S trace, docs/papers/bfjs.md#google-trace)."""
    a = np.asarray(x, dtype=np.float64)
    low = a < minimum
    return np.where(low, float(minimum), a), int(np.count_nonzero(low))


# ---------------------------------------------------------------------------------------------- k-means classes


def kmeans_classes(
    X: Any,
    k: int = 4,
    *,
    fit_mask: Any = None,
    n_init: int = 10,
    max_iter: int = 300,
    tol: float = 1e-4,
    seed: int = 0,
    standardize: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means with k-means++ starts (LoTES Sec. 5.3.2; docs/papers/lotes.md#classes), deterministic for a seed.

    Fits on the rows where ``fit_mask`` is true (e.g. the first day's jobs), runs Lloyd's
    iterations until no label changes or the centres move less than ``tol`` times the mean
    feature variance (squared, summed; scikit-learn's rule), keeps the best of ``n_init`` runs (lowest within-cluster sum of squares), then assigns *every* row to its
    nearest centroid.  Classes are renumbered by increasing first coordinate of the centroid,
    then the second, so labels do not depend on the run that won.

    Args:
        X: ``(n, d)`` features (e.g. CPU and memory requests).
        standardize: scale each feature by its standard deviation on the fit rows first
            (centroids are returned in the original units either way).

    Returns:
        ``(labels, centroids)``: ``(n,)`` int64 in ``[0, k)`` and ``(k, d)``.
    """
    A = np.asarray(X, dtype=np.float64)
    if A.ndim == 1:
        A = A[:, None]
    if not np.all(np.isfinite(A)):
        raise ScenarioError("kmeans", "features must be finite (drop or fill missing values first)")
    fit = A if fit_mask is None else A[np.asarray(fit_mask, dtype=bool)]
    k = int(k)
    if k < 1 or fit.shape[0] < k:
        raise ScenarioError("kmeans.k", f"need 1 <= k <= number of fitted rows ({fit.shape[0]}), got {k}")
    scale = fit.std(axis=0) if standardize else np.ones(A.shape[1])
    scale = np.where(scale > 0, scale, 1.0)
    F = fit / scale
    var = float(F.var(axis=0).mean())
    rng = np.random.default_rng(seed)
    best: tuple[float, np.ndarray] | None = None
    for _ in range(int(n_init)):
        C = _kmeanspp(F, k, rng)
        lab = _nearest(F, C)
        for _ in range(int(max_iter)):  # Lloyd: update, assign; stop on no change or a tiny centre shift
            cnt = np.bincount(lab, minlength=k)
            sums = np.column_stack([np.bincount(lab, weights=F[:, i], minlength=k) for i in range(F.shape[1])])
            newC = np.where(cnt[:, None] > 0, sums / np.maximum(cnt, 1)[:, None], C)
            shift = float(((newC - C) ** 2).sum())
            C = newC
            new = _nearest(F, C)
            if np.array_equal(new, lab) or shift <= tol * var:
                lab = new
                break
            lab = new
        inertia = float(((F - C[lab]) ** 2).sum())
        if best is None or inertia < best[0] - 1e-12:
            best = (inertia, C)
    assert best is not None
    C = best[1] * scale
    order = np.lexsort(tuple(C[:, i] for i in reversed(range(C.shape[1]))))
    C = C[order]
    return assign_classes(A, C), C


def _kmeanspp(F: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    n = F.shape[0]
    C = [F[rng.integers(n)]]
    d2 = ((F - C[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        total = d2.sum()
        i = int(rng.integers(n)) if total <= 0 else int(rng.choice(n, p=d2 / total))
        C.append(F[i])
        d2 = np.minimum(d2, ((F - F[i]) ** 2).sum(axis=1))
    return np.array(C)


def _nearest(F: np.ndarray, C: np.ndarray) -> np.ndarray:
    # squared distances up to the per-row constant |x|^2: |c|^2 - 2 x.c  (one (n, k) product)
    # (no BLAS: a tall-skinny matmul can be slow when BLAS threads compete for the cores)
    out = np.empty(F.shape[0], dtype=np.int64)
    cc = (C * C).sum(axis=1)
    for s in range(0, F.shape[0], 1 << 17):
        block = F[s : s + (1 << 17)]
        d = np.broadcast_to(cc, (block.shape[0], C.shape[0])).copy()
        for i in range(C.shape[1]):
            d -= 2.0 * block[:, i : i + 1] * C[None, :, i]
        out[s : s + block.shape[0]] = np.argmin(d, axis=1)
    return out


def assign_classes(X: Any, centroids: Any) -> np.ndarray:
    """The index of the nearest centroid (Euclidean) of every row of ``X``."""
    A = np.asarray(X, dtype=np.float64)
    return _nearest(A[:, None] if A.ndim == 1 else A, np.asarray(centroids, dtype=np.float64))


def class_table(labels: Any, duration: Any, demands: Mapping[str, Any], k: int | None = None) -> pd.DataFrame:
    """Per class: jobs, proportion, mean duration (s and h) and mean demand per resource (LoTES Table 2)."""
    lab = np.asarray(labels, dtype=np.int64)
    k = int(lab.max()) + 1 if k is None else int(k)
    cnt = np.bincount(lab, minlength=k).astype(float)
    den = np.maximum(cnt, 1)
    out = {
        "class": np.arange(k),
        "jobs": cnt.astype(np.int64),
        "proportion": cnt / max(cnt.sum(), 1),
        "mean_duration_s": np.bincount(lab, weights=np.asarray(duration, dtype=float), minlength=k) / den,
    }
    out["mean_duration_h"] = out["mean_duration_s"] / 3600.0
    for name, d in demands.items():
        out[f"mean_{name}"] = np.bincount(lab, weights=np.asarray(d, dtype=float), minlength=k) / den
    return pd.DataFrame(out)


# ---------------------------------------------------------------------------------------------- priorities

#: Google 2011 priority bands (trace schema: 0-1 "free", 9-11 "production"; 2-8 in between).
PRIORITY_BANDS: dict[str, tuple[int, ...]] = {
    "free": (0, 1),
    "middle": tuple(range(2, 9)),
    "non-production": tuple(range(9)),
    "production": (9, 10, 11),
    "all": tuple(range(12)),
}

#: Named priority -> value maps.
#: ``autoscale-band``: Google priority -> the paper's priority 0/1/2 (free / middle / production; a guess,
#: the paper does not give the map: docs/papers/autoscale.md#google-trace); ``autoscale-factor``: the reward factor 1/3/9 of those bands;
#: ``mris``: Azure 2020 priority (0 high, 1 low) -> weight priority + 1 (the authors' code);
#: ``mris-natural``: weight 2 - priority (high priority weighs more).
PRIORITY_MAPS: dict[str, dict[int, float]] = {
    "autoscale-band": {**{p: 0 for p in (0, 1)}, **{p: 1 for p in range(2, 9)}, **{p: 2 for p in (9, 10, 11)}},
    "autoscale-factor": {**{p: 1.0 for p in (0, 1)}, **{p: 3.0 for p in range(2, 9)}, **{p: 9.0 for p in (9, 10, 11)}},
    "mris": {0: 1.0, 1: 2.0},
    "mris-natural": {0: 2.0, 1: 1.0},
}


def priority_band(priorities: str | Sequence[int] | None) -> tuple[int, ...] | None:
    """A band name of :data:`PRIORITY_BANDS`, or explicit priorities, as a tuple (``None`` = all)."""
    if priorities is None:
        return None
    if isinstance(priorities, str):
        if priorities not in PRIORITY_BANDS:
            raise ScenarioError(
                "priorities",
                f"unknown band {priorities!r}; expected one of {sorted(PRIORITY_BANDS)} or a list of priorities",
            )
        return PRIORITY_BANDS[priorities]
    try:
        out = tuple(int(p) for p in priorities)
    except (TypeError, ValueError):
        raise ScenarioError("priorities", f"expected a band name or a list of integers, got {priorities!r}") from None
    if not out:
        raise ScenarioError("priorities", "the list of priorities is empty")
    return out


def map_priority(priority: Any, mapping: str | Mapping[Any, float]) -> np.ndarray:
    """Map each priority through ``mapping`` (a name of :data:`PRIORITY_MAPS` or a dict).

    Dict keys may be integers or ``"lo-hi"`` ranges (inclusive), e.g. ``{"0-1": 1, "2-8": 3, "9-11": 9}``.

    Raises:
        ScenarioError: an unknown map name, a bad key, or a priority the map does not cover.
    """
    if isinstance(mapping, str):
        if mapping not in PRIORITY_MAPS:
            raise ScenarioError(
                "priority_map", f"unknown map {mapping!r}; expected one of {sorted(PRIORITY_MAPS)} or a mapping"
            )
        table = PRIORITY_MAPS[mapping]
    else:
        table = {}
        for key, val in mapping.items():
            try:
                if isinstance(key, str) and "-" in key.strip("-"):
                    lo, hi = (int(v) for v in key.split("-", 1))
                    for p in range(lo, hi + 1):
                        table[p] = float(val)
                else:
                    table[int(key)] = float(val)
            except (TypeError, ValueError):
                raise ScenarioError(
                    f"priority_map.{key}", f"expected an integer or 'lo-hi' key and a number, got {key!r}: {val!r}"
                ) from None
    p = np.asarray(priority)
    if p.size and not np.all(np.isfinite(p.astype(float))):
        raise ScenarioError("priority", "missing priorities cannot be mapped")
    p = p.astype(np.int64)
    keys = np.array(sorted(table), dtype=np.int64)
    vals = np.array([table[k] for k in keys], dtype=np.float64)
    idx = np.searchsorted(keys, p)
    ok = (idx < keys.size) & (keys[np.minimum(idx, keys.size - 1)] == p)
    if not np.all(ok):
        missing = sorted(set(p[~ok].tolist()))
        raise ScenarioError("priority_map", f"no value for priorities {missing[:10]}")
    return vals[idx]


# ---------------------------------------------------------------------------------------------- time


def scale_arrivals(arrival: Any, traffic_scaling: float = 1.0) -> np.ndarray:
    """Arrival times times alpha = ``1 / traffic_scaling`` (RMS paper §VII-B; durations unchanged).

    Traffic scaling 1.25 means 25% more arrivals per unit time.
    """
    s = positive(traffic_scaling, "traffic_scaling")
    return np.asarray(arrival, dtype=np.float64) / s


def window(
    df: pd.DataFrame, start: float | None = None, end: float | None = None, *, column: str = "arrival"
) -> tuple[pd.DataFrame, int]:
    """Rows with ``start <= df[column] < end`` (either bound may be ``None``) and the number dropped."""
    from clustergym.traces.table import check_window

    start, end = check_window((start, end))
    v = df[column].to_numpy(dtype=np.float64)
    m = np.ones(len(df), dtype=bool)
    if start is not None:
        m &= v >= float(start)
    if end is not None:
        m &= v < float(end)
    return df.loc[m].reset_index(drop=True), int(len(df) - np.count_nonzero(m))


def first_n(df: pd.DataFrame, n: int | None, *, column: str = "arrival") -> tuple[pd.DataFrame, int]:
    """The first ``n`` rows by ``column`` (stable: ties keep table order) and the number dropped."""
    if n is None:
        return df, 0
    n = number(n, "first_n", lo=1, integer=True)
    if len(df) <= n:
        return df, 0
    order = np.argsort(df[column].to_numpy(), kind="stable")[:n]
    return df.iloc[np.sort(order)].reset_index(drop=True), len(df) - n


def rebase(arrival: Any, origin: float | None = None) -> tuple[np.ndarray, float]:
    """Arrivals minus ``origin`` (default: the first arrival), and the origin used."""
    a = np.asarray(arrival, dtype=np.float64)
    o = float(a.min()) if origin is None and a.size else float(origin or 0.0)
    return a - o, o


def pow_half_names(p_max: int = 9) -> tuple[str, ...]:
    """Type names ``"1", "1/2", ..., "1/512"`` for the power-of-1/2 sizes."""
    return tuple("1" if p == 0 else f"1/{2**p}" for p in range(int(p_max) + 1))
