"""Service-time and resource-demand distributions, and their scenario-file form.

Two families:

* :class:`ServiceDist` -- a positive scalar law for a job's *work* (its service
  time on a speed-1 server, in the scenario's time unit; for slotted workloads
  a whole number of slots).  ``sample(rng, n)`` returns a ``(n,)`` float64 array.
* :class:`DemandDist` -- a law over resource-demand vectors of length ``R``
  (in the units of the servers' capacities).  ``sample(rng, n)`` returns a
  ``(n, R)`` float64 array.  *Discrete* demand laws (:class:`FixedDemand`,
  :class:`DiscreteDemand`) also say which of their values a job drew, which
  becomes the job's type.

Every distribution has ``to_spec()``, a plain dict that
:func:`service_from_spec` / :func:`demand_from_spec` turn back into an equal
object.  Those parsers raise :class:`~clustergym.errors.ScenarioError` whose
field is the exact path of the offending entry (``workload.service.mean``,
``workload.demand.values[2][1]``, ...).  Nothing is clipped or renormalised
silently: a parameter outside its domain is an error.

All randomness comes from the ``numpy.random.Generator`` passed in; the same
generator state gives the same draws.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from clustergym import validation
from clustergym.errors import ScenarioError
from clustergym.validation import describe, is_number, matrix, number, vector

__all__ = [
    "DEMAND_DISTS",
    "SERVICE_DISTS",
    "DemandDist",
    "Deterministic",
    "DiscreteDemand",
    "Empirical",
    "Exponential",
    "FixedDemand",
    "Geometric",
    "IndependentDemand",
    "LogNormal",
    "ServiceDist",
    "TruncatedNormalDemand",
    "UniformDemand",
    "check_services",
    "demand_from_spec",
    "service_from_spec",
]

#: Absolute tolerance on ``sum(probs) == 1``.
PROB_SUM_TOL = 1e-6


def _check_probs(probs: Any, field: str, m: int) -> np.ndarray:
    p = vector(probs, field, m, lo=0.0, what="(one per value)")
    s = float(p.sum())
    if abs(s - 1.0) > PROB_SUM_TOL:
        raise ScenarioError(field, f"probabilities must sum to 1, got {s:.12g}")
    return p / s  # removes only float round-off (|s - 1| <= PROB_SUM_TOL)


def cdf_for(p: np.ndarray) -> np.ndarray:
    """CDF for ``searchsorted(cdf, u, 'right')`` sampling that never picks a zero-probability index."""
    cdf = np.cumsum(p)
    last = int(np.flatnonzero(p > 0)[-1])
    cdf[last:] = 1.0
    return cdf


def sample_index(cdf: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    """``(n,)`` int64 indices drawn i.i.d. from the law with CDF ``cdf`` (one uniform per draw)."""
    idx = np.searchsorted(cdf, rng.random(n), side="right")
    return np.minimum(idx, cdf.shape[0] - 1).astype(np.int64)


def _fmt_list(a: np.ndarray) -> list[Any]:
    return a.tolist()


# --------------------------------------------------------------------------
# Service distributions
# --------------------------------------------------------------------------


class ServiceDist(ABC):
    """A law of a job's work: positive, in the scenario's time unit (or in slots).

    Attributes:
        name: the ``dist`` key of its spec.
        integer_valued: every draw is a whole number >= 1 (usable as a number of slots).
    """

    name: str = ""
    integer_valued: bool = False

    @property
    @abstractmethod
    def mean(self) -> float:
        """Mean of the law (time units, or slots)."""

    @property
    @abstractmethod
    def variance(self) -> float:
        """Variance of the law."""

    @abstractmethod
    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Draw ``n`` i.i.d. values: ``(n,)`` float64, all > 0."""

    @abstractmethod
    def to_spec(self) -> dict[str, Any]:
        """The scenario-file form, e.g. ``{"dist": "exponential", "mean": 1.0}``."""

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.to_spec() == other.to_spec()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.to_spec().items() if k != "dist")
        return f"{type(self).__name__}({params})"


class Exponential(ServiceDist):
    """Exponential with the given ``mean`` (> 0); rate ``1/mean``."""

    name = "exponential"

    def __init__(self, mean: float):
        self._mean = number(mean, "mean", lo=0.0, lo_open=True)

    @property
    def mean(self) -> float:
        return self._mean

    @property
    def variance(self) -> float:
        return self._mean**2

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.exponential(self._mean, int(n))

    def to_spec(self) -> dict[str, Any]:
        return {"dist": self.name, "mean": self._mean}


class Deterministic(ServiceDist):
    """Always ``value`` (> 0).  Consumes no randomness.  Integer-valued if ``value`` is a whole number."""

    name = "deterministic"

    def __init__(self, value: float):
        self.value = number(value, "value", lo=0.0, lo_open=True)
        self.integer_valued = self.value.is_integer()

    @property
    def mean(self) -> float:
        return self.value

    @property
    def variance(self) -> float:
        return 0.0

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(int(n), self.value, dtype=np.float64)

    def to_spec(self) -> dict[str, Any]:
        return {"dist": self.name, "value": self.value}


class LogNormal(ServiceDist):
    """Log-normal parameterised by its **mean** (> 0) and ``sigma`` (>= 0) of the underlying normal.

    ``S = exp(N(mu, sigma^2))`` with ``mu = log(mean) - sigma^2 / 2``, so ``E[S] = mean``
    and ``Var[S] = (exp(sigma^2) - 1) mean^2``.
    """

    name = "lognormal"

    def __init__(self, mean: float, sigma: float):
        self._mean = number(mean, "mean", lo=0.0, lo_open=True)
        self.sigma = number(sigma, "sigma", lo=0.0)
        self.mu = math.log(self._mean) - 0.5 * self.sigma**2

    @property
    def mean(self) -> float:
        return self._mean

    @property
    def variance(self) -> float:
        return math.expm1(self.sigma**2) * self._mean**2

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.lognormal(self.mu, self.sigma, int(n))

    def to_spec(self) -> dict[str, Any]:
        return {"dist": self.name, "mean": self._mean, "sigma": self.sigma}


class Empirical(ServiceDist):
    """Resample uniformly (with replacement) from ``values`` (``(m,)``, all finite and > 0)."""

    name = "empirical"

    def __init__(self, values: Sequence[float] | np.ndarray):
        self.values = vector(values, "values", lo=0.0, lo_open=True, what="")
        self.values.setflags(write=False)
        self.integer_valued = bool(np.all(np.floor(self.values) == self.values))

    @property
    def mean(self) -> float:
        return float(self.values.mean())

    @property
    def variance(self) -> float:
        return float(self.values.var())

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.values[rng.integers(0, self.values.shape[0], int(n))]

    def to_spec(self) -> dict[str, Any]:
        return {"dist": self.name, "values": _fmt_list(self.values)}


class Geometric(ServiceDist):
    """Whole number of slots ``S >= 1``: ``P(S = k) = p (1 - p)^(k - 1)``, mean ``1/p``, ``0 < p <= 1``.

    Drawn with ``numpy.random.Generator.geometric(p)``; returned as float64.
    """

    name = "geometric"
    integer_valued = True

    def __init__(self, p: float):
        self.p = number(p, "p", lo=0.0, lo_open=True, hi=1.0)

    @property
    def mean(self) -> float:
        return 1.0 / self.p

    @property
    def variance(self) -> float:
        return (1.0 - self.p) / self.p**2

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.geometric(self.p, int(n)).astype(np.float64)

    def to_spec(self) -> dict[str, Any]:
        return {"dist": self.name, "p": self.p}


def check_services(service: Any, n: int, what: str) -> tuple[tuple[ServiceDist, ...], ServiceDist | None]:
    """``service`` as one law per ``what`` (type or class): ``(laws, shared)``, where ``shared`` is
    the single law when one was given for all ``n`` (so sampling can be vectorised), else ``None``."""
    if isinstance(service, ServiceDist):
        return (service,) * n, service
    if not isinstance(service, Sequence) or len(service) != n:
        raise ScenarioError("service", f"expected one ServiceDist or a list of {n} (one per {what}), got {service!r}")
    for i, sv in enumerate(service):
        if not isinstance(sv, ServiceDist):
            raise ScenarioError(f"service[{i}]", f"expected a ServiceDist, got {sv!r}")
    return tuple(service), None


# --------------------------------------------------------------------------
# Demand distributions
# --------------------------------------------------------------------------


class DemandDist(ABC):
    """A law over demand vectors ``(R,)``, non-negative, in capacity units.

    Attributes:
        num_resources: ``R``.
        discrete: ``True`` when every draw equals one row of :attr:`type_values`
            exactly, so the drawn row index is a meaningful job type.
    """

    name: str = ""
    num_resources: int
    discrete: bool = False

    @property
    @abstractmethod
    def mean(self) -> np.ndarray:
        """``(R,)`` mean demand."""

    @abstractmethod
    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Draw ``n`` i.i.d. vectors: ``(n, R)`` float64."""

    @abstractmethod
    def to_spec(self) -> dict[str, Any]:
        """The scenario-file form, e.g. ``{"dist": "uniform", "low": [0.1], "high": [0.9]}``."""

    @property
    def num_types(self) -> int:
        """Number of job types this law defines: its number of values if discrete, else 1."""
        return 1

    @property
    def type_values(self) -> np.ndarray:
        """``(num_types, R)``: the values of a discrete law, else ``mean[None, :]``."""
        return self.mean.reshape(1, -1)

    @property
    def type_probs(self) -> np.ndarray:
        """``(num_types,)`` probability of each type (``[1.0]`` for continuous laws)."""
        return np.ones(1)

    def sample_typed(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` vectors and their types: ``((n, R) float64, (n,) int64)``.

        Same draws from ``rng`` as :meth:`sample`; the type is 0 for continuous laws.
        """
        return self.sample(rng, n), np.zeros(int(n), dtype=np.int64)

    def type_of(self, demand: np.ndarray) -> np.ndarray:
        """``(n,)`` int64 type of each row of ``demand`` ``(n, R)``: the index of the first equal value
        for discrete laws (ValueError if a row is not one of the values), 0 for continuous laws."""
        demand = np.asarray(demand, dtype=np.float64).reshape(-1, self.num_resources)
        if not self.discrete:
            return np.zeros(demand.shape[0], dtype=np.int64)
        eq = np.all(demand[:, None, :] == self.type_values[None, :, :], axis=2)
        found = eq.any(axis=1)
        if not found.all():
            i = int(np.flatnonzero(~found)[0])
            raise ValueError(f"row {i} {demand[i].tolist()} is not a value of {self!r}")
        return eq.argmax(axis=1).astype(np.int64)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.to_spec() == other.to_spec()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.to_spec().items() if k != "dist")
        return f"{type(self).__name__}({params})"


class FixedDemand(DemandDist):
    """Every job demands ``vector`` ``(R,)`` (>= 0).  One exact type; consumes no randomness."""

    name = "fixed"
    discrete = True

    def __init__(self, vector: Sequence[float] | np.ndarray):
        self.vector = validation.vector(vector, "vector", lo=0.0, what="(one per resource)")
        self.vector.setflags(write=False)
        self.num_resources = int(self.vector.shape[0])

    @property
    def mean(self) -> np.ndarray:
        return self.vector.copy()

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.tile(self.vector, (int(n), 1))

    def to_spec(self) -> dict[str, Any]:
        return {"dist": self.name, "vector": _fmt_list(self.vector)}


class UniformDemand(DemandDist):
    """Independent ``U[low_r, high_r]`` per resource; ``low``, ``high`` are ``(R,)`` with ``0 <= low <= high``."""

    name = "uniform"

    def __init__(self, low: Sequence[float] | np.ndarray, high: Sequence[float] | np.ndarray):
        self.low = vector(low, "low", lo=0.0)
        self.num_resources = int(self.low.shape[0])
        self.high = vector(high, "high", self.num_resources, lo=0.0)
        bad = np.flatnonzero(self.high < self.low)
        if bad.size:
            r = int(bad[0])
            raise ScenarioError(f"high[{r}]", f"must be >= low[{r}] = {self.low[r]:g}, got {self.high[r]:g}")

    @property
    def mean(self) -> np.ndarray:
        return 0.5 * (self.low + self.high)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        u = rng.random((int(n), self.num_resources))
        return self.low + (self.high - self.low) * u

    def to_spec(self) -> dict[str, Any]:
        return {"dist": self.name, "low": _fmt_list(self.low), "high": _fmt_list(self.high)}


class DiscreteDemand(DemandDist):
    """One of ``m`` demand vectors ``values`` ``(m, R)`` with probabilities ``probs`` ``(m,)``.

    ``probs`` defaults to uniform and must sum to 1 (within 1e-6).  A job's type is the
    index of the value drawn (one uniform per job).
    """

    name = "discrete"
    discrete = True

    def __init__(self, values: Sequence[Sequence[float]] | np.ndarray, probs: Sequence[float] | np.ndarray | None = None):
        self.values = matrix(values, "values", lo=0.0)
        self.values.setflags(write=False)
        m, self.num_resources = (int(s) for s in self.values.shape)
        self.probs = np.full(m, 1.0 / m) if probs is None else _check_probs(probs, "probs", m)
        self.probs.setflags(write=False)
        self._cdf = cdf_for(self.probs)

    @property
    def mean(self) -> np.ndarray:
        return self.probs @ self.values

    @property
    def num_types(self) -> int:
        return int(self.values.shape[0])

    @property
    def type_values(self) -> np.ndarray:
        return self.values.copy()

    @property
    def type_probs(self) -> np.ndarray:
        return self.probs.copy()

    def sample_typed(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        idx = sample_index(self._cdf, rng, int(n))
        return self.values[idx], idx

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.sample_typed(rng, n)[0]

    def to_spec(self) -> dict[str, Any]:
        return {"dist": self.name, "values": _fmt_list(self.values), "probs": _fmt_list(self.probs)}


class TruncatedNormalDemand(DemandDist):
    """LoTES demands (Tran et al. 2018, Sec. 5.4): per resource independently, ``N(mean_r, (cv * mean_r)^2)``
    truncated to ``[low_r, high_r]``.

    ``mean`` is the *nominal* mean ``r`` (the location of the untruncated Gaussian, what the
    paper and its LPs call ``r_kl``); it is kept as :attr:`loc`.  The :attr:`mean` property is the
    realised mean of the truncated law (about ``1.0276 r`` for ``cv = 0.5`` and ``low = 0``).
    Resources with ``mean_r = 0`` or ``cv = 0`` always demand ``mean_r``.  Sampling is by inverse
    CDF (``scipy.stats.truncnorm.ppf``) of ``n * R`` uniforms.

    Args:
        mean: ``(R,)`` nominal means, each in ``[low_r, high_r]``.
        cv: coefficient of variation (>= 0) of the untruncated Gaussian.
        low, high: truncation bounds, scalars or ``(R,)``; ``0 <= low < high``.
    """

    name = "truncated_normal"

    def __init__(
        self,
        mean: Sequence[float] | np.ndarray,
        cv: float = 0.5,
        low: float | Sequence[float] | np.ndarray = 0.0,
        high: float | Sequence[float] | np.ndarray = 1.0,
    ):
        self.loc = vector(mean, "mean", lo=0.0)
        R = self.num_resources = int(self.loc.shape[0])
        self.cv = number(cv, "cv", lo=0.0)
        self.low = self._bound(low, "low", R)
        self.high = self._bound(high, "high", R)
        for r in range(R):
            if not self.high[r] > self.low[r]:
                raise ScenarioError(f"high[{r}]" if np.ndim(high) else "high", f"must be > low = {self.low[r]:g}, got {self.high[r]:g}")
            if not self.low[r] <= self.loc[r] <= self.high[r]:
                raise ScenarioError(f"mean[{r}]", f"must lie in [low, high] = [{self.low[r]:g}, {self.high[r]:g}], got {self.loc[r]:g}")
        self._scale = self.cv * self.loc
        self._pos = self._scale > 0
        safe = np.where(self._pos, self._scale, 1.0)
        self._a = (self.low - self.loc) / safe
        self._b = (self.high - self.loc) / safe
        self._safe_scale = safe
        from scipy.stats import (
            truncnorm,  # here, not at the top: scipy.stats costs ~1 s of import time
        )

        realised = self.loc + safe * truncnorm.mean(self._a, self._b)
        self._mean = np.where(self._pos, realised, self.loc)

    @staticmethod
    def _bound(x: Any, field: str, R: int) -> np.ndarray:
        if is_number(x):
            v = number(x, field, lo=0.0)
            return np.full(R, v)
        return vector(x, field, R, lo=0.0)

    @property
    def mean(self) -> np.ndarray:
        return self._mean.copy()

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        from scipy.stats import truncnorm

        u = rng.random((int(n), self.num_resources))
        x = truncnorm.ppf(u, self._a, self._b, loc=self.loc, scale=self._safe_scale)
        x = np.where(self._pos, x, self.loc)
        # Float guard only: the law's support is [low, high]; ppf may overshoot by an ulp.
        return np.clip(x, self.low, self.high)

    def to_spec(self) -> dict[str, Any]:
        return {
            "dist": self.name,
            "mean": _fmt_list(self.loc),
            "cv": self.cv,
            "low": _fmt_list(self.low),
            "high": _fmt_list(self.high),
        }


class IndependentDemand(DemandDist):
    """Resource ``r`` drawn from ``components[r]``, independently across resources.

    Each component is a 1-D law: a :class:`ServiceDist` (any positive scalar law) or a
    :class:`DemandDist` with ``num_resources == 1``.  Columns are drawn in resource order,
    ``n`` draws each.  Not typed (one type), even if the components are discrete.
    """

    name = "independent"

    def __init__(self, components: Sequence[ServiceDist | DemandDist]):
        if not isinstance(components, (list, tuple)) or len(components) == 0:
            raise ScenarioError("components", "expected a non-empty list of 1-D distributions (one per resource)")
        for r, c in enumerate(components):
            if isinstance(c, DemandDist):
                if c.num_resources != 1:
                    raise ScenarioError(f"components[{r}]", f"expected a 1-D distribution, got one over {c.num_resources} resources")
            elif not isinstance(c, ServiceDist):
                raise ScenarioError(f"components[{r}]", f"expected a distribution, got {describe(c)}")
        self.components: tuple[ServiceDist | DemandDist, ...] = tuple(components)
        self.num_resources = len(self.components)

    @property
    def mean(self) -> np.ndarray:
        return np.array(
            [float(np.ravel(c.mean)[0]) if isinstance(c, DemandDist) else c.mean for c in self.components],
            dtype=np.float64,
        )

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        n = int(n)
        out = np.empty((n, self.num_resources), dtype=np.float64)
        for r, c in enumerate(self.components):
            out[:, r] = c.sample(rng, n).reshape(n)
        return out

    def to_spec(self) -> dict[str, Any]:
        return {"dist": self.name, "components": [c.to_spec() for c in self.components]}


# --------------------------------------------------------------------------
# Scenario-file parsers
# --------------------------------------------------------------------------

#: ``dist`` name -> (class, required keys, optional keys)
SERVICE_DISTS: dict[str, tuple[type[ServiceDist], tuple[str, ...], tuple[str, ...]]] = {
    "exponential": (Exponential, ("mean",), ()),
    "deterministic": (Deterministic, ("value",), ()),
    "lognormal": (LogNormal, ("mean", "sigma"), ()),
    "empirical": (Empirical, ("values",), ()),
    "geometric": (Geometric, (), ("p", "mean")),
}

DEMAND_DISTS: dict[str, tuple[type[DemandDist], tuple[str, ...], tuple[str, ...]]] = {
    "fixed": (FixedDemand, ("vector",), ()),
    "uniform": (UniformDemand, ("low", "high"), ()),
    "discrete": (DiscreteDemand, ("values",), ("probs",)),
    "truncated_normal": (TruncatedNormalDemand, ("mean",), ("cv", "low", "high")),
    "independent": (IndependentDemand, ("components",), ()),
}


def _dist_name(spec: Any, field: str, table: Mapping[str, Any], extra: Sequence[str] = ()) -> str:
    if not isinstance(spec, Mapping):
        raise ScenarioError(field, f"expected a mapping with a 'dist' key, got {describe(spec)}")
    if "dist" not in spec:
        raise ScenarioError(f"{field}.dist", f"missing; expected one of {', '.join(list(table) + list(extra))}")
    name = spec["dist"]
    if not isinstance(name, str) or (name not in table and name not in extra):
        raise ScenarioError(
            f"{field}.dist",
            f"unknown distribution {name!r}; expected one of {', '.join(list(table) + list(extra))}",
        )
    return name


def _check_keys(spec: Mapping[str, Any], field: str, name: str, required: Sequence[str], optional: Sequence[str]) -> None:
    allowed = ("dist", *required, *optional)
    for key in spec:
        if key not in allowed:
            raise ScenarioError(
                f"{field}.{key}",
                f"unknown parameter for '{name}'; expected {', '.join(k for k in allowed if k != 'dist')}",
            )
    for key in required:
        if key not in spec:
            raise ScenarioError(f"{field}.{key}", f"missing (required by '{name}')")


def _prefixed(field: str, err: ScenarioError) -> ScenarioError:
    return ScenarioError(f"{field}.{err.field}" if err.field else field, err.problem)


def service_from_spec(spec: Mapping[str, Any], field: str) -> ServiceDist:
    """Parse a service-time law, e.g. ``{"dist": "exponential", "mean": 1.0}``.

    Forms: ``exponential{mean}``, ``deterministic{value}``, ``lognormal{mean, sigma}``,
    ``empirical{values}``, ``geometric{p}`` or ``geometric{mean}`` (``p = 1/mean``).

    Raises:
        ScenarioError: whose field is ``field`` + the path of the offending entry.
    """
    name = _dist_name(spec, field, SERVICE_DISTS)
    cls, required, optional = SERVICE_DISTS[name]
    _check_keys(spec, field, name, required, optional)
    if cls is Geometric:
        if ("p" in spec) == ("mean" in spec):
            raise ScenarioError(f"{field}.p", "give exactly one of p or mean for 'geometric'")
        if "mean" in spec:
            mean = number(spec["mean"], f"{field}.mean", lo=1.0)
            return Geometric(1.0 / mean)
    kwargs = {k: spec[k] for k in (*required, *optional) if k in spec}
    try:
        return cls(**kwargs)
    except ScenarioError as err:
        raise _prefixed(field, err) from None


def demand_from_spec(spec: Mapping[str, Any], field: str, num_resources: int) -> DemandDist:
    """Parse a demand law over ``num_resources`` resources, e.g.
    ``{"dist": "uniform", "low": [0.1], "high": [0.9]}``.

    Forms: ``fixed{vector}``, ``uniform{low, high}``, ``discrete{values, probs?}``,
    ``truncated_normal{mean, cv?, low?, high?}``, ``independent{components}`` where each
    component is a 1-resource demand spec or a service-time spec (e.g. ``exponential``).
    Vectors must have exactly ``num_resources`` entries (a bare number is accepted when it is 1;
    ``values`` of a 1-resource ``discrete`` law may be a flat list).

    Raises:
        ScenarioError: whose field is ``field`` + the path of the offending entry.
    """
    R = num_resources
    if isinstance(R, bool) or not isinstance(R, (int, np.integer)) or R < 1:
        raise ValueError(f"num_resources must be an integer >= 1, got {R!r}")
    name = _dist_name(spec, field, DEMAND_DISTS)
    cls, required, optional = DEMAND_DISTS[name]
    _check_keys(spec, field, name, required, optional)
    kwargs: dict[str, Any] = {}
    if cls is FixedDemand:
        kwargs["vector"] = vector(spec["vector"], f"{field}.vector", R, lo=0.0)
    elif cls is UniformDemand:
        kwargs["low"] = vector(spec["low"], f"{field}.low", R, lo=0.0)
        kwargs["high"] = vector(spec["high"], f"{field}.high", R, lo=0.0)
    elif cls is DiscreteDemand:
        values = spec["values"]
        if R == 1 and isinstance(values, (list, tuple)) and values and all(is_number(v) for v in values):
            values = [[v] for v in values]
        kwargs["values"] = matrix(values, f"{field}.values", R, lo=0.0)
        if "probs" in spec:
            kwargs["probs"] = spec["probs"]
    elif cls is TruncatedNormalDemand:
        kwargs["mean"] = vector(spec["mean"], f"{field}.mean", R, lo=0.0)
        for key in ("cv", "low", "high"):
            if key in spec:
                v = spec[key]
                kwargs[key] = v if is_number(v) or key == "cv" else vector(v, f"{field}.{key}", R, lo=0.0)
    elif cls is IndependentDemand:
        comps = spec["components"]
        if not isinstance(comps, (list, tuple)):
            raise ScenarioError(f"{field}.components", f"expected a list (one 1-D distribution per resource), got {describe(comps)}")
        if len(comps) != R:
            raise ScenarioError(f"{field}.components", f"expected {R} distributions (one per resource), got {len(comps)}")
        parsed: list[ServiceDist | DemandDist] = []
        for r, c in enumerate(comps):
            cf = f"{field}.components[{r}]"
            cname = _dist_name(c, cf, DEMAND_DISTS, extra=tuple(SERVICE_DISTS))
            if cname in SERVICE_DISTS:
                parsed.append(service_from_spec(c, cf))
            elif cname == "independent":
                raise ScenarioError(f"{cf}.dist", "'independent' cannot be nested")
            else:
                parsed.append(demand_from_spec(c, cf, 1))
        kwargs["components"] = parsed
    try:
        return cls(**kwargs)
    except ScenarioError as err:
        raise _prefixed(field, err) from None
