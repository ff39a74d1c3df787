"""A scenario: cluster + workload + decision epochs + objective + horizon.

This is the *instance generator* of an environment: it owns everything that
defines a problem instance and nothing of the dynamics.  Presets build
scenarios from a few documented parameters (:mod:`clustergym.scenarios.registry`);
files build them from YAML or JSON (:mod:`clustergym.scenarios.files`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from clustergym.core.cluster import fit_limit
from clustergym.core.jobs import JOB_MEMORY_MODES
from clustergym.core.objectives import objective
from clustergym.core.simulator import EpochConfig, Simulator
from clustergym.core.source import ArrivalSource, is_finite
from clustergym.errors import ScenarioError
from clustergym.validation import choice, number

__all__ = [
    "Scenario",
    "MAX_SERVERS",
    "MAX_EXPECTED_ARRIVALS",
    "LONG_RUN_ARRIVALS",
    "DEFAULT_QUEUE_CAP",
    "LongRunWarning",
]


class LongRunWarning(UserWarning):
    """A whole episode will see many arrivals with nothing to stop it early (no queue cap)."""


#: servers in one scenario at most (the kernel keeps (L, R) arrays; 10^6 servers already take seconds per event)
MAX_SERVERS = 1_000_000
#: expected arrivals of one whole episode (total arrival rate x horizon) at most, for the runner
#: (:meth:`Scenario.check_run_size`): beyond it a run would take days and its job table would not fit in memory
MAX_EXPECTED_ARRIVALS = 1e9
#: expected arrivals of a whole episode above which a run without a queue cap is warned about
#: (:meth:`Scenario.check_run_size`): minutes of simulation, and an overloaded cluster's queue grows unbounded
LONG_RUN_ARRIVALS = 1e6
#: the queue cap of the presets, also the default of scenario files with an endless workload
DEFAULT_QUEUE_CAP = 100_000


@dataclass(frozen=True)
class Scenario:
    """A complete problem instance.

    Attributes:
        name: preset name or file name.
        capacity: ``(L, R)`` server capacities.
        source: the job stream.
        resources: resource names, e.g. ``("cpu", "memory", "disk")``.
        horizon: simulated time of an episode (``inf``: until a trace drains).
        objective: ``queue``, ``system``, ``weighted-system`` or ``reward``
            (see :mod:`clustergym.core.objectives`).
        queueing: ``central``, ``local`` or ``loss``.
        routing: local-queue routing (``jsq``, ``power-of-two``, ``random``, ``agent``).
        epochs: the scenario's decision epochs; an agent's needs are added on top.
        queue_cap: waiting jobs beyond which a run stops and is flagged unstable.
        impossible: ``reject`` or ``error`` for jobs larger than every server.
        speed: ``(L, J)`` service speeds, or ``None`` for all ones.
        clairvoyant: whether agents may see job durations (work) before they start.
        job_memory: ``full`` (default: every job's row kept, exact per-job statistics) or
            ``bounded`` (rows of finished jobs released, streaming statistics; see
            :mod:`clustergym.core.jobs`).  ``--set job_memory=bounded`` on any preset.
        warmup: warm-up deletion (simulated time, default 0): the run's time averages cover
            ``[warmup, horizon]`` and its per-job statistics the jobs arriving at or after
            ``warmup`` (see :class:`~clustergym.core.simulator.Simulator`; docs/metrics.md).
            ``--set warmup=T`` on any preset, ``warmup: T`` in a scenario file.
        description: one line for ``clustergym list``.
        params: the parameters the scenario was built from (for reports).
    """

    name: str
    capacity: np.ndarray
    source: ArrivalSource
    resources: tuple[str, ...]
    horizon: float
    objective: str = "queue"
    queueing: str = "central"
    routing: str = "jsq"
    epochs: EpochConfig = field(default_factory=EpochConfig)
    queue_cap: int | None = None
    impossible: str = "reject"
    speed: np.ndarray | None = None
    clairvoyant: bool = False
    job_memory: str = "full"
    warmup: float = 0.0
    description: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cap = np.asarray(self.capacity, dtype=np.float64)
        object.__setattr__(self, "capacity", cap)
        if cap.ndim != 2:
            raise ScenarioError("cluster.capacity", f"expected an (L, R) array, got shape {cap.shape}")
        if len(self.resources) != cap.shape[1]:
            raise ScenarioError("cluster.resources", f"{len(self.resources)} names for {cap.shape[1]} resources")
        twice = sorted({r for r in self.resources if self.resources.count(r) > 1})
        if twice:
            raise ScenarioError("resources", f"{', '.join(map(repr, twice))} named twice (each resource once)")
        objective(self.objective)  # a ScenarioError naming the options
        choice(self.job_memory, "job_memory", JOB_MEMORY_MODES)
        number(self.horizon, "horizon", lo=0.0, lo_open=True, allow_inf=True)
        object.__setattr__(self, "warmup", number(self.warmup, "warmup", lo=0.0))
        if not self.warmup < self.horizon:
            raise ScenarioError("warmup", f"must be shorter than the horizon ({self.horizon:g}), got {self.warmup:g}")
        if cap.shape[0] > MAX_SERVERS:
            raise ScenarioError("servers", f"{cap.shape[0]} servers exceed the limit of {MAX_SERVERS:,}")
        self._check_episode_ends()
        # every job type must fit at least one empty server (the RMS paper's assumption, §II)
        types = self.source.types
        if types.exact:
            limit = fit_limit(cap)
            for j, d in enumerate(types.demand):
                if not np.any(np.all(d <= limit, axis=1)):
                    raise ScenarioError(
                        f"workload.types[{j}].demand",
                        f"{d.tolist()} exceeds the capacity of every server (largest {cap.max(axis=0).tolist()})",
                    )

    def _check_episode_ends(self) -> None:
        """Refuse an episode that would never end: an infinite horizon on an endless workload."""
        if math.isinf(self.horizon) and not is_finite(self.source):
            raise ScenarioError(
                "horizon",
                "inf is only allowed for a workload that ends (a trace or a replayed "
                "job table); this workload is an endless stochastic stream, so the "
                "episode would never end: give a finite horizon",
            )

    def check_run_size(self) -> Scenario:
        """Refuse a whole episode (``run``, ``compare``: to the horizon) of more than
        :data:`MAX_EXPECTED_ARRIVALS` expected arrivals (total arrival rate x horizon): it would take
        days and its job table would not fit in memory.  Above :data:`LONG_RUN_ARRIVALS` without a
        queue cap, a :class:`LongRunWarning` says so before the run starts.  An environment stepped for a bounded number
        of steps may have a longer horizon.  Returns the scenario."""
        rates = self.source.arrival_rates()
        if rates is None or math.isinf(self.horizon):
            return self
        total = float(np.sum(rates))
        if not math.isfinite(total) or total * self.horizon > MAX_EXPECTED_ARRIVALS:
            raise ScenarioError(
                "horizon",
                f"an episode would see {total * self.horizon:.3g} arrivals on average "
                f"(total arrival rate {total:.3g} x horizon {self.horizon:g}), more than "
                f"the limit of {MAX_EXPECTED_ARRIVALS:.0e} for a whole run: lower the "
                "rate or the horizon",
            )
        if total * self.horizon > LONG_RUN_ARRIVALS and self.queue_cap is None:
            import warnings

            warnings.warn(
                f"{self.name}: an episode will see {total * self.horizon:.3g} arrivals on average (total "
                f"arrival rate {total:.3g} x horizon {self.horizon:g}) and has no queue cap: it may run for "
                "minutes per episode; set queue_cap (an overloaded run then stops at it) or a shorter horizon",
                LongRunWarning,
                stacklevel=2,
            )
        return self

    @property
    def num_servers(self) -> int:
        return int(self.capacity.shape[0])

    @property
    def num_resources(self) -> int:
        return int(self.capacity.shape[1])

    @property
    def num_types(self) -> int:
        return self.source.types.num_types

    def with_horizon(self, horizon: float | None) -> Scenario:
        """The same scenario with another horizon (``None`` keeps it)."""
        if horizon is None:
            return self
        horizon = number(horizon, "horizon", lo=0.0, lo_open=True, allow_inf=True)
        if not self.warmup < horizon:
            raise ScenarioError("horizon", f"{horizon:g} is not longer than the warm-up ({self.warmup:g})")
        return replace(self, horizon=horizon)

    def make_simulator(
        self, epochs: EpochConfig | None = None, *, validate: bool = False, rate_window: float | None = None
    ) -> Simulator:
        """A fresh kernel for this scenario; ``epochs`` (an agent's needs) is merged in."""
        ep = self.epochs if epochs is None else self.epochs.merged(epochs)
        return Simulator(
            self.capacity,
            self.source,
            queueing=self.queueing,  # type: ignore[arg-type]
            routing=self.routing,  # type: ignore[arg-type]
            epochs=ep,
            horizon=self.horizon,
            queue_cap=self.queue_cap,
            impossible=self.impossible,  # type: ignore[arg-type]
            speed=self.speed,
            rate_window=rate_window if rate_window is not None else self._rate_window(),
            validate=validate,
            job_memory=self.job_memory,
            warmup=self.warmup,
        )

    def _rate_window(self) -> float:
        mw = float(np.mean(self.source.types.mean_work)) if self.source.types.num_types else 1.0
        return max(mw, 1e-9) * 10.0

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary of the instance."""
        return {
            "name": self.name,
            "description": self.description,
            "servers": self.num_servers,
            "resources": list(self.resources),
            "types": self.num_types,
            "horizon": self.horizon,
            "objective": self.objective,
            "queueing": self.queueing,
            "params": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in self.params.items()},
        }
