"""RMS: randomized multi-resource scheduling (Psychas & Ghaderi, ToN 2018, §IV and §VI).

Every algorithm of the paper's family is one configurable agent that runs
through the same environment and command set as every other agent:

========================  ==========  ===================  ===========  ================  ===========
name                      queues      server at a tick     clock        dummy -> real     rate (def.)
========================  ==========  ===================  ===========  ================  ===========
``rms`` (Algorithm 1)     central     uniform over all L   fixed r_j    no                30 (r_j=10)
``rms-less-wasteful``     central     uniform              fixed        yes (Remark 2)    30
``rms-rf``                central     RF                   fixed        no                30
``rms-bf``                central     BF                   fixed        no                30
``rms-ad``                central     uniform              AD           no                30
``rms-rf-ad``             central     RF                   AD           no                30
``rms-bf-ad``             central     BF                   AD           no                30
``rms-rf-ad-plus``        central     RF                   AD           yes               5 x 30
``rms-jsq`` (Algorithm 2) per server  the queue's server   fixed r_j^l  optional (Rem.3)  30 (0.5 each)
========================  ==========  ===================  ===========  ================  ===========

(the variants of §VI; "rate" is the sum of all clock rates in ticks per time
unit, the paper's "sum of the clock rates is fixed at 30 ticks per sec", §VII-A).

How the algorithm maps onto the decision model
----------------------------------------------
* **Poisson clocks (§IV-A).**  The agent declares ONE Poisson clock of rate
  ``sum_j r_j`` (``AgentRequirements.epochs.tick_rate``); at each tick it draws
  the type ``j`` with probability ``r_j / sum r`` from its own generator.  The
  superposition of independent Poisson clocks of rates ``r_j`` is exactly this
  (thinning), so the law is Algorithm 1's.  The AD clock (RMS-AD, §VI) is
  one common clock of rate ``r`` whose tick picks ``j`` with probability
  ``p_j ∝ exp(w_j(t))``; RMS+JSQ's J x L clocks (§IV-B) are one clock that picks
  the queue ``(l, j)`` with probability ``r_j^l / sum r``.
* **Tick (Algorithm 1, clock instances).**  The selected server (uniform over ALL L
  servers for RMS, the full ones included, so the tick may be wasted; uniform
  over the servers where a type-``j`` job fits for RF; Best-Fit among them for
  BF, §VI) gets the head-of-line type-``j`` job (``PLACE``) or, when
  ``Q_j = 0``, a dummy type-``j`` job (``DUMMY``).  RF/BF still place dummies
  (the paper only changes the sampling; docs/papers/rms.md#variants).
* **Departure (Algorithm 1, job departure instances).**  Every completion, of a real or a dummy job
  (``dummy_completions=True``), is an epoch: with probability
  ``1 - exp(-w_j(t))`` the same server gets another type-``j`` job — the
  head of ``Q_j`` or a dummy.  The departing job has left already, so the
  replacement always fits (monotone ``K_l``).  Weights are eq. (4):
  ``w_j = max(f(Q_j), eps / (8 M) f(Q_max))``, computed from the queues at
  the event instant (docs/papers/rms.md#weights); RMS+JSQ uses eq. (5), the same with the
  server's local queues.
* **Dummy jobs (Algorithm 1, Remark 2).**  ``DUMMY(j, l)``: the kernel draws the dummy's
  lifetime from type ``j``'s service law (its own random stream; for traces an
  exponential with the type's empirical mean, docs/papers/rms.md#dummies).  Dummies count in the
  configuration (fit checks, BF score) but never in ``Q``.
* **Less wasteful (Remark 2, §IV-A).**  At a type-``j`` arrival, if some server
  holds a type-``j`` dummy, the new job takes the place of one of them chosen
  uniformly among all type-``j`` dummies (``REPLACE``; the real job starts a
  fresh service time).  Invariant: ``Q_j > 0`` implies no type-``j`` dummy.
  Arrivals are epochs for every RMS agent (they are no-ops without this flag).
* **RMS+JSQ (Algorithm 2, §IV-B).**  Needs per-server queues
  (``queueing="local"``).  The kernel routes arrivals: ``routing="jsq"``
  (Algorithm 2, ties uniformly at random) or ``routing="power-of-two"``
  (Remark 4: the shorter of two distinct random servers, ties at random).
  With ``routing="agent"`` this agent routes itself by JSQ with ties broken
  towards servers that hold a type-``j`` dummy (our reading of Remark 3,
  docs/papers/rms.md#dummies) and, if ``less_wasteful``, replaces that dummy.  On the RMS presets::

      clustergym run ec2 --agent rms-jsq --set queueing=local
      clustergym run ec2 --agent rms-jsq --set queueing=local --set routing=power-of-two

Parameters (§VII-A; defaults: docs/papers/rms.md#parameters)
-------------------------------------------------------------
``selection``  ``uniform`` | ``rf`` | ``bf`` (Best-Fit score of docs/papers/rms.md#best-fit: normalised
               inner product of the job's demand with the server's occupancy; ties to the
               lowest index, as :func:`clustergym.baselines.greedy.select_server`).
``clock``      ``fixed`` | ``ad``.
``less_wasteful``  Remark 2 (Remark 3 for RMS+JSQ).
``rates``      fixed clocks: per-type rates ``r_j`` (RMS+JSQ: per-queue ``r_j^l``, a
               ``J`` list used at every server or an ``L x J`` matrix).
``total_rate`` default 30: the sum of the clock rates when ``rates`` is not given, split
               equally (``r_j = 30 / J``; RMS+JSQ ``r_j^l = 30 / (J L)``); the AD common rate ``r``.
``speedup``    multiplies every clock rate ("+" of RMS-RF-AD+: 5).
``b``          ``f(x) = log(1 + x)^(1 - b)``; the simulations' ``log(1 + x)`` is ``b = 0``
               (default), Theorems 1–2 need ``b`` in (0, 1).
``eps``        default 0.01 (the paper does not state it).
``M``          default: computed, ``clustergym.theory.rms.max_jobs_per_server`` (EC2 5, Fig. 1b 5,
               Google 512).
``frozen_weights``  test hook of Definition 2 (§V, Lemma 1): fixed ``w`` instead of eq. (4)/(5).

The agent keeps counters in ``agent.stats`` (ticks, wasted ticks, placements,
dummies, replacements) — proxies of the per-unit-time work the paper counts (§VI).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from clustergym._cache import Cache
from clustergym.agent_api import Agent, AgentContext, AgentRequirements
from clustergym.core.cluster import fit_limit
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.simulator import EpochConfig
from clustergym.errors import ConfigError
from clustergym.theory.rms import max_jobs_per_server
from clustergym.validation import settings

__all__ = [
    "weight_function",
    "rms_weights",
    "replacement_probability",
    "ad_probabilities",
    "server_bound",
    "RMS",
    "RMSJSQ",
]

SELECTIONS = ("uniform", "rf", "bf")
CLOCKS = ("fixed", "ad")
DEFAULT_TOTAL_RATE = 30.0  #: §VII-A: "the sum of the clock rates is fixed at 30 ticks per sec"
_WAIT = Command.wait()


# ============================================================================ formulas (§IV-A)
def weight_function(x: Any, b: float = 0.0) -> Any:
    """``f(x) = log(1 + x)^(1 - b)`` (Theorem 1; b = 0 in §VII-A): increasing, concave, ``f(0) = 0``."""
    return np.log1p(x) ** (1.0 - b)


def rms_weights(queue: Any, eps: float, M: int, b: float = 0.0) -> np.ndarray:
    """Eq. (4): ``w_j = max(f(Q_j), eps / (8 M) f(Q_max))`` along the last axis.

    For RMS+JSQ (eq. 5) pass the ``(L, J)`` local queue lengths: each row is one
    server's weights.  An empty system has ``w = 0``.
    """
    q = np.asarray(queue, dtype=np.float64)
    f = weight_function(q, b)
    fmax = weight_function(q.max(axis=-1, keepdims=True), b)
    return np.maximum(f, eps / (8.0 * M) * fmax)


def replacement_probability(w: Any) -> Any:
    """``1 - exp(-w)``: the chance that a departing type-``j`` job is replaced (Algorithm 1)."""
    return -np.expm1(-np.asarray(w, dtype=np.float64))


def ad_probabilities(w: Any) -> np.ndarray:
    """AD clock (RMS-AD, §VI): ``p_j ∝ exp(w_j)`` (a softmax; stable for large ``w``)."""
    w = np.asarray(w, dtype=np.float64)
    e = np.exp(w - w.max())
    return e / e.sum()


#: (type demands, capacities) as bytes -> M; 64: the instances of a sweep
_SERVER_BOUNDS: Cache[int] = Cache(64)


def server_bound(type_demand: np.ndarray, capacity: np.ndarray) -> int:
    """``M`` = the most jobs any server can hold (§II), cached per instance."""
    key = (
        np.ascontiguousarray(type_demand, dtype=np.float64).tobytes()
        + b"|"
        + np.ascontiguousarray(capacity, dtype=np.float64).tobytes()
    )
    return _SERVER_BOUNDS.get(key, lambda: int(max_jobs_per_server(type_demand, capacity)))


def _per_type(value: Any, field: str) -> np.ndarray:
    """Clock rates or weights: numbers >= 0, a list (one per job type) or rows (one per queue)."""
    if (isinstance(value, np.ndarray) and value.ndim == 2) or (
        isinstance(value, (list, tuple)) and len(value) > 0 and isinstance(value[0], (list, tuple, np.ndarray))
    ):
        return settings.matrix(value, field, lo=0.0)
    return settings.vector(value, field, lo=0.0, what="(one per job type)")


def _check_rates(value: Any) -> np.ndarray:
    r = _per_type(value, "agent.rates")
    if not r.sum() > 0:
        raise ConfigError("agent.rates", f"expected clock rates >= 0 with a positive sum, got {value!r}")
    return r


# ============================================================================ the agents
class _RMSBase(Agent):
    """What Algorithms 1 and 2 share: parameters, weights, dummies, the epoch loop."""

    default_selection: ClassVar[str] = "uniform"
    default_clock: ClassVar[str] = "fixed"
    default_less_wasteful: ClassVar[bool] = False
    default_speedup: ClassVar[float] = 1.0
    _queueing: ClassVar[tuple[str, ...]] = ("central",)

    def __init__(
        self,
        *,
        less_wasteful: bool | None = None,
        rates: Any = None,
        total_rate: float = DEFAULT_TOTAL_RATE,
        speedup: float | None = None,
        b: float = 0.0,
        eps: float = 0.01,
        M: int | None = None,
        frozen_weights: Any = None,
        **params: Any,
    ):
        super().__init__(**params)
        self.less_wasteful = settings.boolean(
            self.default_less_wasteful if less_wasteful is None else less_wasteful,
            "agent.less_wasteful",
        )
        self.rates = None if rates is None else _check_rates(rates)
        self.total_rate = settings.positive(total_rate, "agent.total_rate")
        self.speedup = settings.positive(self.default_speedup if speedup is None else speedup, "agent.speedup")
        self.b = settings.number(b, "agent.b", lo=0.0, hi=1.0, hi_open=True)
        self.eps = settings.number(eps, "agent.eps", lo=0.0, lo_open=True, hi=1.0, hi_open=True)
        self.M_param = settings.number(M, "agent.M", lo=1, integer=True, allow_none=True)
        self.frozen_weights = None if frozen_weights is None else _per_type(frozen_weights, "agent.frozen_weights")
        self._last_epoch = -1
        self.stats: dict[str, int] = {}

    # ------------------------------------------------------------------ requirements
    def _tick_rate(self, num_servers: int) -> float:
        raise NotImplementedError

    def _requirements(self, tick_rate: float) -> AgentRequirements:
        return AgentRequirements(
            epochs=EpochConfig(arrivals=True, completions=True, dummy_completions=True, tick_rate=tick_rate),
            commands=frozenset({Cmd.WAIT, Cmd.PLACE, Cmd.DUMMY, Cmd.REPLACE, Cmd.ROUTE}),
            queueing=self._queueing,
            needs_types=True,
        )

    def requirements_for(self, scenario: Any) -> AgentRequirements:
        if scenario.queueing not in self._queueing:
            hint = (
                " (on the RMS presets: --set queueing=local)"
                if "local" in self._queueing
                else " (use rms-jsq for per-server queues)"
            )
            raise ConfigError(
                "agent",
                f"agent {self.name!r} works with queueing {list(self._queueing)}, "
                f"scenario {scenario.name!r} is {scenario.queueing!r}{hint}",
            )
        types = scenario.source.types
        if not types.exact:
            raise ConfigError(
                "agent",
                f"agent {self.name!r} needs discrete job types (every job of a type has "
                f"the type's demand); scenario {scenario.name!r} has not",
            )
        self._check_shapes(types.num_types, scenario.num_servers)
        self.requirements = self._requirements(self._tick_rate(scenario.num_servers))
        return self.requirements

    def _check_shapes(self, J: int, L: int) -> None:
        if self.frozen_weights is not None and self.frozen_weights.shape not in ((J,), (L, J)):
            raise ConfigError(
                "agent.frozen_weights",
                f"expected {J} weights (or an {L} x {J} matrix), got shape {self.frozen_weights.shape}",
            )

    # ------------------------------------------------------------------ episode
    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        v = self.view
        if not v.types.exact:
            raise ConfigError("agent", f"agent {self.name!r} needs discrete job types")
        L, J = v.num_servers, v.num_types
        self._check_shapes(J, L)
        self.L, self.J = L, J
        self.type_demand = np.array(v.types.demand, dtype=np.float64)
        self.capacity = np.array(v.capacity, dtype=np.float64)
        self.limit = fit_limit(self.capacity)
        self.M = self.M_param if self.M_param is not None else server_bound(self.type_demand, self.capacity)
        self.coef = self.eps / (8.0 * self.M)
        self._last_epoch = -1
        self._pending: Command | None = None
        self.stats = {
            "ticks": 0,
            "wasted_ticks": 0,
            "placements": 0,
            "dummies": 0,
            "replacements": 0,
            "departure_refills": 0,
        }

    def _f(self, x: float) -> float:
        return math.log1p(x) ** (1.0 - self.b) if x > 0 else 0.0

    def _weight(self, q: np.ndarray, j: int, server: int = -1) -> float:
        """``w_j`` of eq. (4) (eq. (5) with ``q`` the server's local row), or the frozen weight."""
        fw = self.frozen_weights
        if fw is not None:
            return float(fw[j] if fw.ndim == 1 else fw[server, j])
        qj = int(q[j])
        qmax = int(q.max())
        return max(self._f(qj), self.coef * self._f(qmax))

    def _weights(self, q: np.ndarray, server: int = -1) -> np.ndarray:
        fw = self.frozen_weights
        if fw is not None:
            return fw if fw.ndim == 1 else fw[server]
        return rms_weights(q, self.eps, self.M, self.b)

    # ------------------------------------------------------------------ decisions
    def act(self, observation: Any) -> Command:
        v = self.view
        if v.epoch != self._last_epoch:
            self._last_epoch = v.epoch
            self._pending = None
            ev = v.event
            kind = ev.kind
            if kind == EventKind.TICK:
                cmd = self._on_tick()
            elif kind == EventKind.COMPLETION:
                cmd = self._on_departure(ev.type, ev.server)
            elif kind == EventKind.ARRIVAL:
                cmd = self._on_arrival(ev.job, ev.type, ev.server)
            else:
                cmd = None
            return _WAIT if cmd is None else cmd
        if self._pending is not None:  # a second command at this epoch (route, then replace)
            cmd, self._pending = self._pending, None
            return cmd
        return _WAIT

    def _on_tick(self) -> Command | None:
        raise NotImplementedError

    def _on_departure(self, j: int, server: int) -> Command | None:
        raise NotImplementedError

    def _on_arrival(self, job: int, j: int, server: int) -> Command | None:
        return None


class RMS(_RMSBase):
    """RMS, Algorithm 1 (§IV-A) and its centralised variants (Remark 2, §VI).

    Args:
        selection: server chosen at a type-``j`` tick: ``uniform`` (all L servers; Algorithm 1),
            ``rf`` (uniform among the servers where a type-``j`` job fits), ``bf`` (Best-Fit
            among them; score of docs/papers/rms.md#best-fit).
        clock: ``fixed`` (per-type Poisson clocks ``r_j``) or ``ad`` (one common clock of rate
            ``r`` picking type ``j`` with probability ``∝ exp(w_j)``).
        less_wasteful: Remark 2 — an arrival takes the place of a dummy of its type.
        rates: fixed clocks, ``(J,)`` per-type rates (default ``total_rate / J`` each).
        total_rate: sum of the fixed clock rates when ``rates`` is not given; the AD rate ``r``
            (default 30, §VII-A).  With ``clock="ad"`` and ``rates`` given, ``r = sum(rates)``.
        speedup: multiplies all clock rates (RMS-RF-AD+: 5).
        b, eps, M, frozen_weights: see the module docstring.
    """

    description = "RMS (Algorithm 1): Poisson clocks, uniform server sampling, dummy jobs (RMS §IV-A)"

    def __init__(self, selection: str | None = None, clock: str | None = None, **params: Any):
        super().__init__(**params)
        self.selection = settings.choice(
            self.default_selection if selection is None else selection, "agent.selection", SELECTIONS
        )
        self.clock = settings.choice(self.default_clock if clock is None else clock, "agent.clock", CLOCKS)
        if self.rates is not None and self.rates.ndim != 1:
            raise ConfigError("agent.rates", f"expected one rate per job type, got shape {self.rates.shape}")
        self.requirements = self._requirements(self._tick_rate(0))

    def _tick_rate(self, num_servers: int) -> float:
        base = float(self.rates.sum()) if self.rates is not None else self.total_rate
        return base * self.speedup

    def _check_shapes(self, J: int, L: int) -> None:
        super()._check_shapes(J, L)
        if self.rates is not None and self.rates.shape != (J,):
            raise ConfigError("agent.rates", f"expected {J} clock rates (one per job type), got {self.rates.tolist()}")
        if self.frozen_weights is not None and self.frozen_weights.ndim != 1:
            raise ConfigError("agent.frozen_weights", f"expected {J} weights (one per job type)")

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        J = self.J
        rates = self.rates if self.rates is not None else np.full(J, self.total_rate / J)
        self.clock_rates = rates * self.speedup  #: per-type rates r_j (fixed clocks)
        self._cdf = np.cumsum(self.clock_rates / self.clock_rates.sum())
        self._cdf[-1] = 1.0

    # ------------------------------------------------------------------ Algorithm 1
    def tick_type(self, queue: np.ndarray) -> int:
        """The type whose clock ticks: ``r_j / sum r`` (fixed), ``∝ exp(w_j)`` (AD, §VI)."""
        if self.clock == "ad":
            p = ad_probabilities(self._weights(queue))
            cdf = np.cumsum(p)
            cdf[-1] = 1.0
            return int(np.searchsorted(cdf, self.rng.random(), side="right"))
        return int(np.searchsorted(self._cdf, self.rng.random(), side="right"))

    def select(self, j: int) -> int:
        """The server sampled at a type-``j`` tick, or -1 if the tick is wasted (uniform: Algorithm 1; RF, BF: §VI)."""
        v = self.view
        if self.selection == "uniform":
            s = int(self.rng.integers(self.L))
            return s if self.view.type_fits_at(j, s) else -1
        # among fits_type(j): RF a uniform draw over the fitting servers in index order, BF
        # select_server("best-fit", ...); from the kernel's placement index on large clusters
        return v.select_server_for_type("random-fit" if self.selection == "rf" else "best-fit", j, self.rng)

    def _start(self, j: int, server: int) -> Command:
        """Head-of-line type-``j`` job on ``server``, or a dummy if ``Q_j = 0`` (Algorithm 1)."""
        head = self.view.head_of_type(j)
        if head >= 0:
            self.stats["placements"] += 1
            return Command.place(head, server)
        self.stats["dummies"] += 1
        return Command.dummy(j, server)

    def _on_tick(self) -> Command | None:
        self.stats["ticks"] += 1
        j = self.tick_type(self.view.queued_by_type)
        s = self.select(j)
        if s < 0:
            self.stats["wasted_ticks"] += 1
            return None
        return self._start(j, s)

    def _on_departure(self, j: int, server: int) -> Command | None:
        w = self._weight(self.view.queued_by_type, j)
        if w > 0.0 and self.rng.random() < -math.expm1(-w):
            if not self.view.type_fits_at(j, server):  # cannot happen with monotone K (kept as a guard)
                return None
            self.stats["departure_refills"] += 1
            return self._start(j, server)
        return None

    def _on_arrival(self, job: int, j: int, server: int) -> Command | None:
        if not self.less_wasteful:
            return None
        dummies = self.view.dummies_of_type(j)
        if not dummies:
            return None
        victim = dummies[
            int(self.rng.integers(len(dummies)))
        ]  # uniform among all type-j dummies (Remark 2 leaves it open)
        self.stats["replacements"] += 1
        return Command.replace(job, self.view.server_of(victim))


class RMSLessWasteful(RMS):
    """RMS with Remark 2: an arriving job replaces a dummy of its type (§IV-A)."""

    description = "RMS, less wasteful (Remark 2): arrivals take the place of dummies of their type (RMS Remark 2)"
    default_less_wasteful = True


class RMSRF(RMS):
    """RMS-RF: at a tick, a uniformly random server where the type fits (§VI)."""

    description = "RMS-RF: ticks sample a random server with room for the type (RMS §VI)"
    default_selection = "rf"


class RMSBF(RMS):
    """RMS-BF: at a tick, the Best-Fit server where the type fits (§VI; score: docs/papers/rms.md#best-fit)."""

    description = "RMS-BF: ticks pick the Best-Fit server with room for the type (RMS §VI)"
    default_selection = "bf"


class RMSAD(RMS):
    """RMS-AD: one common clock of rate r; a tick picks type j w.p. ∝ exp(w_j) (§VI)."""

    description = "RMS-AD: adaptive common clock, type j w.p. ∝ exp(w_j) (RMS §VI)"
    default_clock = "ad"


class RMSRFAD(RMS):
    """RMS-RF-AD: RF server selection and the adaptive clock (§VI)."""

    description = "RMS-RF-AD: random fitting server + adaptive clock (RMS §VI)"
    default_selection = "rf"
    default_clock = "ad"


class RMSBFAD(RMS):
    """RMS-BF-AD: Best-Fit server selection and the adaptive clock (§VI)."""

    description = "RMS-BF-AD: Best-Fit server + adaptive clock (RMS §VI)"
    default_selection = "bf"
    default_clock = "ad"


class RMSRFADPlus(RMS):
    """RMS-RF-AD+: RMS-RF-AD with Remark 2 and a 5x faster clock (§VII-A, Fig. 5)."""

    description = "RMS-RF-AD+: RMS-RF-AD, arrivals replace dummies, clock 5x faster (RMS §VII-A)"
    default_selection = "rf"
    default_clock = "ad"
    default_less_wasteful = True
    default_speedup = 5.0


class RMSJSQ(_RMSBase):
    """RMS + JSQ, Algorithm 2 (§IV-B): per-server queues, per-queue Poisson clocks.

    Needs ``queueing="local"`` (``--set queueing=local`` on ``ec2``/``bf-trap``).  The
    kernel routes arrivals (``routing="jsq"``: Algorithm 2; ``"power-of-two"``: Remark 4);
    with ``routing="agent"`` the agent routes by JSQ with ties towards servers holding
    a dummy of the type (our reading of Remark 3, docs/papers/rms.md#dummies).

    Args:
        less_wasteful: Remark 3 — an arrival routed to a server that holds a dummy of its
            type takes the dummy's place.
        rates: per-queue rates ``r_j^l``: ``(J,)`` (the same at every server) or ``(L, J)``;
            default ``total_rate / (J L)`` each (Fig. 4: 30 / 60 = 0.5).
        total_rate, speedup, b, eps, M: as for :class:`RMS`; ``frozen_weights`` may be
            ``(J,)`` or per server ``(L, J)`` (eq. 14).
    """

    description = "RMS+JSQ (Algorithm 2): per-server queues, JSQ or power-of-two routing (RMS §IV-B)"
    _queueing = ("local",)

    def __init__(self, **params: Any):
        super().__init__(**params)
        # with per-type rates the total clock rate is L * sum(rates): requirements_for(scenario) sets it
        L = self.rates.shape[0] if self.rates is not None and self.rates.ndim == 2 else 1
        self.requirements = self._requirements(self._tick_rate(L))

    def _tick_rate(self, num_servers: int) -> float:
        if self.rates is None:
            return self.total_rate * self.speedup
        if self.rates.ndim == 1:
            return float(self.rates.sum()) * num_servers * self.speedup
        return float(self.rates.sum()) * self.speedup

    def _check_shapes(self, J: int, L: int) -> None:
        super()._check_shapes(J, L)
        if self.rates is not None and self.rates.shape not in ((J,), (L, J)):
            raise ConfigError(
                "agent.rates", f"expected {J} per-queue rates or an {L} x {J} matrix, got shape {self.rates.shape}"
            )

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        L, J = self.L, self.J
        if self.view.queueing != "local":
            raise ConfigError("agent", "rms-jsq needs per-server queues (queueing='local')")
        if self.rates is None:
            rates = np.full((L, J), self.total_rate / (J * L))
        elif self.rates.ndim == 1:
            rates = np.tile(self.rates, (L, 1))
        else:
            rates = self.rates
        self.clock_rates = rates * self.speedup  #: (L, J) per-queue rates r_j^l
        self._cdf = np.cumsum(self.clock_rates.ravel() / self.clock_rates.sum())
        self._cdf[-1] = 1.0
        self._agent_routing = self.context.scenario.routing == "agent"

    # ------------------------------------------------------------------ Algorithm 2
    def tick_queue(self) -> tuple[int, int]:
        """The queue ``(l, j)`` whose clock ticks (probability ``r_j^l / sum r``)."""
        i = int(np.searchsorted(self._cdf, self.rng.random(), side="right"))
        return divmod(i, self.J)

    def _start(self, j: int, server: int) -> Command:
        q = self.view.local_queue(server, j)
        if q:
            self.stats["placements"] += 1
            return Command.place(q[0], server)
        self.stats["dummies"] += 1
        return Command.dummy(j, server)

    def _on_tick(self) -> Command | None:
        self.stats["ticks"] += 1
        s, j = self.tick_queue()
        if not self.view.type_fits_at(j, s):
            self.stats["wasted_ticks"] += 1
            return None
        return self._start(j, s)

    def _on_departure(self, j: int, server: int) -> Command | None:
        w = self._weight(self.view.local_count[server], j, server)  # eq. (5)
        if w > 0.0 and self.rng.random() < -math.expm1(-w):
            if not self.view.type_fits_at(j, server):
                return None
            self.stats["departure_refills"] += 1
            return self._start(j, server)
        return None

    def jsq_route(self, j: int) -> int:
        """JSQ among the servers a type-``j`` job fits when empty; ties towards servers that hold a
        type-``j`` dummy (Remark 3, §IV-B), then uniformly at random."""
        v = self.view
        q = v.local_count[:, j]
        ok = np.all(self.type_demand[j] <= self.limit, axis=1)
        cand = np.flatnonzero(ok)
        qc = q[cand]
        best = cand[qc == qc.min()]
        if self.less_wasteful:
            with_dummy = best[v.count_dummy[best, j] > 0]
            if with_dummy.size:
                best = with_dummy
        return int(best[self.rng.integers(best.size)])

    def _on_arrival(self, job: int, j: int, server: int) -> Command | None:
        v = self.view
        if self._agent_routing:
            server = self.jsq_route(j)
            replace = self.less_wasteful and v.count_dummy[server, j] > 0
            if replace:
                self.stats["replacements"] += 1
                self._pending = Command.replace(job, server)
            return Command.route(job, server)
        if self.less_wasteful and server >= 0 and v.count_dummy[server, j] > 0:
            self.stats["replacements"] += 1
            return Command.replace(job, server)
        return None
