"""Poisson arrivals of job *classes* whose actual demands vary around the class profile.

LoTES (Tran et al. 2018, Sec. 2 and Sec. 5.4) distinguishes a job's class from its exact
demand: class ``k`` has an *expected* resource profile ``r_k`` (what the
offline LPs use), and each arriving class-``k`` job draws its actual demand
vector from a per-class law around ``r_k`` (in the generated experiments a
truncated Gaussian with location ``r_kl``, coefficient of variation 0.5,
truncated to ``[0, 1]``, independently per resource).

:class:`PoissonClassSource` is one Poisson stream of total rate ``rate``;
each arrival is of class ``k`` with probability ``alpha_k`` (i.i.d.), draws its
demand from ``demand_laws[k]`` and its work from ``service`` (one shared law,
or one per class).  The class is the job's type; ``types.demand`` holds the
nominal class profiles ``r_k`` and ``types.exact`` is ``False`` (a job's demand
is not its class profile).  :class:`~clustergym.workloads.poisson.PoissonTypedSource`
cannot express this: its type-``j`` jobs all demand exactly row ``j``.

Draws per chunk of ``n`` jobs, always in this order from the episode's
generator: ``n`` exponential gaps, ``n`` uniforms for the classes, then the
demands class by class (``demand_laws[k].sample(rng, n_k)`` for ``k = 0..K-1``),
then the work (one shared ``sample(n)``, or one per class in class order).
A seed therefore fixes the whole stream, whatever the agent does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from clustergym.core.source import ArrivalChunk, TypeInfo
from clustergym.errors import ScenarioError
from clustergym.validation import matrix, number, vector
from clustergym.workloads.distributions import (
    PROB_SUM_TOL,
    DemandDist,
    ServiceDist,
    TruncatedNormalDemand,
    cdf_for,
    check_services,
    sample_index,
)

__all__ = ["PoissonClassSource"]


class PoissonClassSource:
    """Poisson arrivals of ``K`` job classes with per-class demand laws.

    Args:
        rate: total arrival rate ``lambda`` (jobs per time unit, >= 0).
        alpha: ``(K,)`` class probabilities (>= 0, summing to 1 within 1e-6).
        profile: ``(K, R)`` expected class profiles ``r_k`` (>= 0): the nominal
            demand of each type (``types.demand``).
        service: the work law, one for all classes or a sequence of ``K``.
        demand_laws: ``K`` demand laws (each over ``R`` resources); default:
            :class:`~clustergym.workloads.distributions.TruncatedNormalDemand`
            with location ``r_k``, coefficient of variation ``cv``, truncated to
            ``[0, high]`` (LoTES Sec. 5.4).  ``cv = 0`` gives every job exactly its
            class profile.
        cv: coefficient of variation of the default laws.
        high: upper truncation bound of the default laws (the largest machine
            capacity in normalised units: 1).
        names: ``K`` display names (default ``class1, class2, ...``).
        weights: ``(K,)`` job weight per class (>= 0; weighted completion time), default 1.
        chunk_size: jobs per chunk (>= 1).

    Raises:
        ScenarioError: naming the argument (``alpha``, ``profile[2][1]``, ``demand_laws[3]``, ...).
    """

    def __init__(
        self,
        rate: float,
        alpha: Sequence[float] | np.ndarray,
        profile: Sequence[Sequence[float]] | np.ndarray,
        service: ServiceDist | Sequence[ServiceDist],
        *,
        demand_laws: Sequence[DemandDist] | None = None,
        cv: float = 0.5,
        high: float = 1.0,
        names: Sequence[str] | None = None,
        weights: Sequence[float] | np.ndarray | None = None,
        chunk_size: int = 4096,
    ):
        self.rate = number(rate, "rate", lo=0.0)
        self.alpha = vector(alpha, "alpha", lo=0.0, what="(one per class)")
        K = int(self.alpha.shape[0])
        s = float(self.alpha.sum())
        if abs(s - 1.0) > PROB_SUM_TOL:
            raise ScenarioError("alpha", f"class probabilities must sum to 1, got {s:.12g}")
        self.alpha = self.alpha / s
        self.profile = matrix(profile, "profile", lo=0.0)
        if self.profile.shape[0] != K:
            raise ScenarioError("profile", f"expected {K} rows (one per class, as alpha), got {self.profile.shape[0]}")
        R = self.num_resources = int(self.profile.shape[1])
        self.services, self._shared = check_services(service, K, "class")
        if demand_laws is None:
            cv = number(cv, "cv", lo=0.0)
            high = number(high, "high", lo=0.0, lo_open=True)
            bad = np.argwhere(self.profile > high)
            if bad.size:
                k, r = (int(v) for v in bad[0])
                raise ScenarioError(f"profile[{k}][{r}]", f"must be <= high = {high:g}, got {self.profile[k, r]:g}")
            self.demand_laws: tuple[DemandDist, ...] = tuple(
                TruncatedNormalDemand(self.profile[k], cv=cv, low=0.0, high=high) for k in range(K))
        else:
            if not isinstance(demand_laws, Sequence) or len(demand_laws) != K:
                raise ScenarioError("demand_laws", f"expected a list of {K} demand laws (one per class)")
            for k, law in enumerate(demand_laws):
                if not isinstance(law, DemandDist):
                    raise ScenarioError(f"demand_laws[{k}]", f"expected a DemandDist, got {law!r}")
                if law.num_resources != R:
                    raise ScenarioError(f"demand_laws[{k}]", f"has {law.num_resources} resources, profile has {R}")
            self.demand_laws = tuple(demand_laws)
        self.cv = float(cv)
        self.weights = np.ones(K) if weights is None else vector(weights, "weights", K, lo=0.0, what="(one per class)")
        self.chunk_size = number(chunk_size, "chunk_size", lo=1, integer=True)
        if names is None:
            names = tuple(f"class{k + 1}" for k in range(K))
        elif len(names) != K:
            raise ScenarioError("names", f"expected {K} names (one per class), got {len(names)}")
        self.types = TypeInfo(
            demand=self.profile.copy(),
            mean_work=np.array([sv.mean for sv in self.services], dtype=np.float64),
            names=tuple(str(n) for n in names),
            exact=False,
        )
        self._cdf = cdf_for(self.alpha) if self.rate > 0 else None

    @property
    def num_types(self) -> int:
        return self.types.num_types

    def realised_mean(self) -> np.ndarray:
        """``(K, R)`` mean demand of each class's law (about ``1.0276 r`` for cv 0.5: docs/papers/lotes.md#truncated-gaussian)."""
        return np.stack([np.asarray(law.mean, dtype=float) for law in self.demand_laws])

    def chunks(self, rng: np.random.Generator) -> Iterator[ArrivalChunk]:
        """Infinite stream of ``chunk_size``-job chunks (nothing if ``rate == 0``)."""
        if self._cdf is None:
            return
        n, K, t = self.chunk_size, self.num_types, 0.0
        ones = np.ones(n)
        while True:
            time = t + np.cumsum(rng.exponential(1.0 / self.rate, n))
            typ = sample_index(self._cdf, rng, n)
            demand = np.empty((n, self.num_resources), dtype=np.float64)
            masks = [typ == k for k in range(K)]
            for k in range(K):
                m = int(masks[k].sum())
                if m:
                    demand[masks[k]] = self.demand_laws[k].sample(rng, m)
            if self._shared is not None:
                work = self._shared.sample(rng, n)
            else:
                work = np.empty(n, dtype=np.float64)
                for k in range(K):
                    m = int(masks[k].sum())
                    if m:
                        work[masks[k]] = self.services[k].sample(rng, m)
            t = float(time[-1])
            yield ArrivalChunk(time=time, demand=demand, type=typ, work=work, weight=self.weights[typ],
                               reward_rate=ones.copy())

    def sample_work(self, job_type: int, rng: np.random.Generator) -> float:
        """One draw from class ``job_type``'s work law."""
        k = int(job_type)
        if not 0 <= k < self.num_types:
            raise ValueError(f"job_type {job_type} out of range [0, {self.num_types})")
        return float(self.services[k].sample(rng, 1)[0])

    def arrival_rates(self) -> np.ndarray:
        """``(K,)``: ``rate * alpha_k``."""
        return self.rate * self.alpha
