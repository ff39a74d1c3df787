"""DRA -- the Dynamic Reservation Algorithm (auto-scaling paper Sec. 4, Algorithm 2) and its variants.

DRA never uses the arrival or service rates.  At every update time (each
admission and each departure) it sets the workload reference to the current
occupancy plus a safety margin, ``Ŷ = Y + g(L) 1``, runs GPA (Algorithm 1) on
it and reconciles the servers' configurations with GPA's targets through CRA
(Classification and Reassignment).  Arrivals fill empty slots of Accept-Group
servers; a departure from an Accept-Group server pulls at most one job of its
type out of a Reject-Group server (migration).

Reservation slots are the kernel's: a server's configuration ``k`` is held as
``k_j`` RESERVE'd type-``j`` slots, so reserved capacity is real in the
simulation, and a server is reassigned (RELEASE old slots, RESERVE new ones)
only when it is empty.  The agent's bookkeeping (configuration and jobs per
server) mirrors the kernel's ``view.slots`` / ``view.slots_filled`` exactly;
``check=True`` asserts this and DRA's invariants (docs/papers/autoscale.md#invariants) at every epoch.

CRA follows the paper's prose where Algorithm 2's listing is off by one
(docs/papers/autoscale.md#cra).  Pinned choices where the paper says "any" or "arbitrarily"
(docs/papers/autoscale.md#tie-breaks):

* index 1 of a configuration = its most recently assigned server; initial
  indexing by server id;
* ``ℓ_e`` (the empty rank-``J+1`` server to reassign): first configurations that
  are not a later GPA configuration -- lowest in the Definition-2 order first
  (``0`` first), newest first; then later GPA configurations, the latest
  ``i'`` first, newest first;
* ``AG_j``: lowest rank, then the longest-assigned server (smallest assignment
  sequence number; within a configuration this is "largest index";
  across configurations of equal rank indices of different configurations are not
  comparable, so assignment times are compared), then smallest id;
* ``RG_j``: highest rank, then fewest jobs, then smallest id;
* ``g(L) = max(1, ceil((ln L)^(1+b)))``, ``b = 0.5`` (docs/papers/autoscale.md#g-factor), or a literal ``g``.

Variants (same module, same bookkeeping):

* ``dra-preemption`` (Sec. 7.2; details: docs/papers/autoscale.md#preemption): when a job of a higher priority level
  is rejected, preempt jobs of the lowest level on servers of rank ``> I*``,
  smallest first (then rank descending, then newest server), until their total
  size reaches ``g(L) s_j``; then run CRA once; the triggering job stays
  rejected.  Priority levels are the types' reward densities ``u_j / s_j``
  (``s_j`` = largest normalised demand): on the Google-trace setup these are the
  factors 1/3/9 of priorities 0/1/2.
* ``dra-no-migration`` (Sec. 8): no migrations; the Reject Group is extended
  to every server of rank ``J+1`` (plus the index-1 servers of rank ``> I*``).
"""

from __future__ import annotations

import math
from itertools import islice
from typing import Any, ClassVar

import numpy as np

from clustergym.agent_api import Agent, AgentContext, AgentRequirements
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.scores import best_mask, score_ranks
from clustergym.core.simulator import EpochConfig
from clustergym.theory.autoscale import Config, ConfigSpace, default_g, gpa, space_of
from clustergym.validation import settings

__all__ = ["DRA", "DRAPreemption", "DRANoMigration"]

_INF = math.inf


class DRA(Agent):
    """DRA (Algorithm 2): GPA on occupancy + g(L), CRA, Accept/Reject groups, migration on departure."""

    description = "DRA: dynamic reservation (GPA on occupancy + g(L), corrected CRA, slots, migration; no rates)"
    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=True, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.ADMIT, Cmd.REJECT, Cmd.RESERVE, Cmd.RELEASE, Cmd.MIGRATE}),
        queueing=("loss",),
        needs_types=True,
    )

    migration: ClassVar[bool] = True
    preemption: ClassVar[bool] = False
    retry_after_preempt: bool = False
    extended_reject_group: ClassVar[bool] = False

    def __init__(
        self,
        g: int | str | None = None,
        b: float = 0.5,
        check: bool = False,
        track_from: float | None = None,
        **params: Any,
    ):
        super().__init__(**params)
        self.g_param: int | None = settings.number(g, "agent.g", lo=0, integer=True, allow_none=True)
        self.b = settings.number(b, "agent.b", lo=-1.0, lo_open=True)
        self.check = settings.boolean(check, "agent.check")
        #: with a time, ``config_mix()`` and the admitted/rejected counts cover [track_from, now] only
        self.track_from = settings.number(track_from, "agent.track_from", lo=0.0, allow_none=True)

    # ================================================================== episode state
    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        v = self.view
        sc = self.context.scenario
        self.L, self.J = v.num_servers, v.num_types
        self.space: ConfigSpace = space_of(sc)
        self.g = self.g_param if self.g_param is not None else default_g(self.L, self.b)
        L, J = self.L, self.J
        zero: Config = (0,) * J
        self.zero = zero
        self.cfg: list[Config] = [zero] * L
        self.seq: list[int] = list(range(L))  # assignment sequence number (index order)
        self._next_seq = L
        self.members: dict[Config, dict[int, None]] = {zero: dict.fromkeys(range(L))}
        self.empties: dict[Config, set[int]] = {zero: set(range(L))}
        self.jobs: list[list[int]] = [[0] * J for _ in range(L)]
        self.ntot: list[int] = [0] * L
        self.free: list[set[int]] = [set() for _ in range(J)]  # servers with an empty type-j slot
        self.Y: list[int] = [0] * J
        self.pos: dict[Config, int] = {}
        self.thr: dict[Config, float] = {}
        self.Istar = J
        self.RG: set[int] = set()
        self._key: dict[Config, tuple] = {}
        self._greedy_set = set(self.space.greedy_configurations()) if self.check and self.J <= 12 else None
        self._cmds: list[Command] = []
        self._ci = 0
        self._epoch = -1
        self.stats: dict[str, Any] = {  # counters, and per-type lists of counts
            "cra_runs": 0,
            "reassignments": 0,
            "migrations": 0,
            "preemptions": 0,
            "admitted": [0] * J,
            "rejected": [0] * J,
        }
        self._mix_area: dict[Config, float] = {}
        self._mix_t = None
        if self.preemption:
            d = np.asarray(v.types.demand, dtype=float)
            cap = np.asarray(v.capacity[0], dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                self.size = np.nanmax(np.where(cap > 0, d / cap, 0.0), axis=1)
            self._size_rank = score_ranks(self.size)  # the preemption order by size, ties up to SCORE_RTOL
            u = np.array([float(x) for x in self.space.rewards])
            dens = np.where(self.size > 0, u / np.where(self.size > 0, self.size, 1.0), np.inf)
            # priority levels = reward densities of the types that earn something; zero-reward types
            # (e.g. a trace's types without jobs) are preemptible and never trigger
            paid = u > 0
            low = np.zeros(self.J, dtype=bool)
            if paid.any():  # the lowest density, ties up to SCORE_RTOL
                low[np.flatnonzero(paid)[best_mask(dens[paid], largest=False)]] = True
            self.low_types = frozenset(int(j) for j in np.flatnonzero(~paid | low))
            self.trigger_types = frozenset(int(j) for j in np.flatnonzero(paid)) - self.low_types

    # ================================================================== protocol
    def act(self, observation: Any) -> Command:
        v = self.view
        if v.epoch != self._epoch:
            self._epoch = v.epoch
            self._cmds = []
            self._ci = 0
            if self.track_from is not None:
                self._track(v.now)
            ev = v.event
            if ev.kind == EventKind.START:
                self._cra()
            elif ev.kind == EventKind.ARRIVAL and v.pending >= 0:
                self._arrival(v.pending, ev.type)
            elif ev.kind == EventKind.COMPLETION:
                self._departure(ev.server, ev.type)
            if self.check:
                self._check_after()
        if self._ci < len(self._cmds):
            cmd = self._cmds[self._ci]
            self._ci += 1
            return cmd
        if self.check:  # every command of this epoch has been executed by now
            self.check_consistency()
        return Command.wait()

    # ================================================================== events
    def _arrival(self, job: int, j: int) -> None:
        s = self._choose_ag(j)
        count = self.track_from is None or self.view.now >= self.track_from
        if s < 0:
            if self.preemption and j in self.trigger_types and self.retry_after_preempt:
                if self._preempt(j):
                    self._cra()
                    s = self._choose_ag(j)
                if s >= 0:  # the freed capacity holds the triggering job after all
                    self._cmds.append(Command.admit(s))
                    self.stats["admitted"][j] += count
                    self._add_job(s, j)
                    self._cra()
                else:
                    self._cmds.append(Command.reject())
                    self.stats["rejected"][j] += count
                return
            self._cmds.append(Command.reject())
            self.stats["rejected"][j] += count
            if self.preemption and j in self.trigger_types:
                if self._preempt(j):
                    self._cra()
            return  # no CRA after a rejection (an update time is an admission or a departure)
        self._cmds.append(Command.admit(s))
        self.stats["admitted"][j] += count
        self._add_job(s, j)
        self._cra()

    def _departure(self, s: int, j: int) -> None:
        was_ag = not self._in_rg(s)
        self._remove_job(s, j)
        if self.migration and was_ag:
            src = self._choose_rg(j)
            if src >= 0:
                v = self.view
                job = next(x for x in v.running_on(src) if not v.is_dummy(x) and v.job_type(x) == j)
                self._cmds.append(Command.migrate(job, s))
                self._remove_job(src, j)
                self._add_job(s, j)
                self.stats["migrations"] += 1
        self._cra()

    def _choose_ag(self, j: int) -> int:
        """AG_j: an Accept-Group server with an empty type-j slot (lowest rank, oldest, smallest id)."""
        best, best_key = -1, None
        seq = self.seq
        for s in self.free[j]:
            if self._in_rg(s):
                continue
            key = (self._rank(s), seq[s], s)
            if best_key is None or key < best_key:
                best, best_key = s, key
        return best

    def _choose_rg(self, j: int) -> int:
        """RG_j: the Reject-Group server with type-j jobs of highest rank (then fewest jobs, smallest id)."""
        best, best_key = -1, None
        for s in self.RG:
            if self.jobs[s][j] > 0:
                key = (self._rank(s), -self.ntot[s], -s)
                if best_key is None or key > best_key:
                    best, best_key = s, key
        return best

    def _in_rg(self, s: int) -> bool:
        return s in self.RG

    # ================================================================== bookkeeping
    def _add_job(self, s: int, j: int) -> None:
        row = self.jobs[s]
        assert row[j] < self.cfg[s][j], f"no empty type-{j} slot on server {s}"
        row[j] += 1
        self.ntot[s] += 1
        self.Y[j] += 1
        if self.ntot[s] == 1:
            self.empties[self.cfg[s]].discard(s)
        if row[j] == self.cfg[s][j]:
            self.free[j].discard(s)

    def _remove_job(self, s: int, j: int) -> None:
        row = self.jobs[s]
        row[j] -= 1
        self.ntot[s] -= 1
        self.Y[j] -= 1
        if self.ntot[s] == 0:
            self.empties[self.cfg[s]].add(s)
        self.free[j].add(s)

    def _reassign(self, s: int, k: Config) -> None:
        old = self.cfg[s]
        if self.check:
            assert self.ntot[s] == 0, f"reassigning non-empty server {s}"
            assert self._greedy_set is None or k in self._greedy_set, f"reassigning to {k}, not in K^(g)"
        mem = self.members[old]
        del mem[s]
        self.empties[old].discard(s)
        if not mem:
            del self.members[old]
            del self.empties[old]
        for j in range(self.J):
            o, n = old[j], k[j]
            if o > n:
                self._cmds.extend([Command.release(j, s)] * (o - n))
            if o and not n:
                self.free[j].discard(s)
        for j in range(self.J):
            o, n = old[j], k[j]
            if n > o:
                self._cmds.extend([Command.reserve(j, s)] * (n - o))
            if n:
                self.free[j].add(s)
        self.cfg[s] = k
        self.seq[s] = self._next_seq
        self._next_seq += 1
        self.members.setdefault(k, {})[s] = None
        self.empties.setdefault(k, set()).add(s)
        self.stats["reassignments"] += 1

    # ================================================================== CRA
    def _rank(self, s: int) -> int:
        k = self.cfg[s]
        i = self.pos.get(k)
        if i is None:
            return self.J + 1
        return i if self.seq[s] <= self.thr[k] else self.J + 1

    def _kth_oldest_seq(self, mem: dict[int, None], r: int) -> float:
        """Assignment sequence number of the r-th oldest member (servers with seq <= it are the r oldest)."""
        n = len(mem)
        if r <= 0:
            return -1
        if r >= n:
            return _INF
        if r <= n - r:
            s = next(islice(iter(mem), r - 1, None))
        else:
            s = next(islice(reversed(mem), n - r, None))
        return self.seq[s]

    def _order_key(self, k: Config) -> tuple:
        key = self._key.get(k)
        if key is None:
            key = self._key[k] = self.space.order_key(k)
        return key

    def _cra(self) -> None:
        """Classification and Reassignment (CRA, Sec. 4, read as the prose says: docs/papers/autoscale.md#cra)."""
        self.stats["cra_runs"] += 1
        J = self.J
        plan = gpa([y + self.g for y in self.Y], self.L, self.space)
        self.plan = plan
        pos = {st.config: i for i, st in enumerate(plan, 1)}
        self.pos = pos
        thr: dict[Config, float] = {}
        self.thr = thr
        Istar = J
        exhausted = False
        for i, st in enumerate(plan, 1):
            k, Xh = st.config, st.count
            mem = self.members.get(k)
            X = len(mem) if mem else 0
            if X >= Xh:
                thr[k] = self._kth_oldest_seq(mem, Xh) if mem else -1
                continue
            if exhausted:
                Istar = min(Istar, i)
            else:
                need = Xh - X
                while need:
                    e = self._pick_empty(i)
                    if e < 0:
                        exhausted = True
                        Istar = min(Istar, i)
                        break
                    self._reassign(e, k)
                    need -= 1
            thr[k] = _INF  # every server of k[i] gets rank i
        self.Istar = Istar
        rg = set()
        zero = self.zero
        for k, mem in self.members.items():
            if k == zero or not mem:
                continue
            s = next(reversed(mem))  # index 1: the most recently assigned
            if self._rank(s) > Istar:
                rg.add(s)
        self.RG = rg

    def _pick_empty(self, i: int) -> int:
        """ℓ_e: an empty server of rank J+1 now (preference: docs/papers/autoscale.md#tie-breaks), or -1."""
        pos, thr, seq = self.pos, self.thr, self.seq
        first: list[tuple[tuple, Config]] = []
        later: list[tuple[int, Config]] = []
        for k, em in self.empties.items():
            if not em:
                continue
            p = pos.get(k)
            if p is None or p < i:
                first.append((self._order_key(k), k))
            elif p > i:
                later.append((p, k))
        first.sort()
        for _, k in first:
            p = pos.get(k)
            if p is None:
                s = self._newest_empty(k)
            else:  # an already ranked configuration: only its surplus (newest, beyond the X̂ oldest) is unranked
                t = thr[k]
                s = -1
                em = self.empties[k]
                for x in reversed(self.members[k]):
                    if seq[x] <= t:
                        break
                    if x in em:
                        s = x
                        break
            if s >= 0:
                return s
        later.sort(reverse=True)
        for _, k in later:
            s = self._newest_empty(k)
            if s >= 0:
                return s
        return -1

    def _newest_empty(self, k: Config) -> int:
        em = self.empties.get(k)
        if not em:
            return -1
        mem = self.members[k]
        if len(em) == len(mem):
            return next(reversed(mem))
        if len(em) <= 16:
            return max(em, key=self.seq.__getitem__)
        for x in reversed(mem):
            if x in em:
                return x
        return -1

    # ================================================================== preemption (DRA+Preemption)
    def _preempt(self, j: int) -> bool:
        return False

    # ================================================================== diagnostics
    def _track(self, now: float) -> None:
        t0 = self.track_from
        if self._mix_t is None:
            self._mix_t = max(now, t0)
            return
        if now <= t0:
            self._mix_t = t0
            return
        dt = now - self._mix_t
        if dt > 0:
            area = self._mix_area
            for k, mem in self.members.items():
                area[k] = area.get(k, 0.0) + len(mem) * dt
            self._mix_t = now

    def config_mix(self) -> dict[Config, float]:
        """Time-average share of servers per configuration since ``track_from`` (needs ``track_from``)."""
        if self._mix_t is None or self.track_from is None:
            return {}
        span = self._mix_t - self.track_from
        if span <= 0:
            return {}
        return {k: a / (span * self.L) for k, a in self._mix_area.items()}

    def classification(self) -> dict[str, Any]:
        """The state of the last CRA: plan, ranks, I*, Reject Group (for tests and notebooks)."""
        return {
            "plan": [(st.config, st.count) for st in self.plan],
            "Istar": self.Istar,
            "RG": sorted(self.RG),
            "rank": [self._rank(s) for s in range(self.L)],
        }

    def check_consistency(self) -> None:
        """The agent's configurations and job counts equal the kernel's slots and filled slots."""
        v = self.view
        cfg = np.array(self.cfg, dtype=np.int64).reshape(self.L, self.J)
        jobs = np.array(self.jobs, dtype=np.int64).reshape(self.L, self.J)
        assert np.array_equal(cfg, v.slots), "agent configurations differ from the kernel's reservation slots"
        assert np.array_equal(jobs, v.slots_filled), "agent job counts differ from the kernel's filled slots"
        assert np.array_equal(jobs, v.count_real), "a job runs outside a reservation slot"
        assert list(jobs.sum(axis=0)) == self.Y

    def _check_after(self) -> None:
        """Invariants 5, 7 and 10 (docs/papers/autoscale.md#invariants) on the agent's state after this epoch's decisions."""
        J = self.J
        for s in range(self.L):
            assert all(a <= b for a, b in zip(self.jobs[s], self.cfg[s])), f"server {s}: jobs exceed configuration"
            assert self.space.is_feasible(self.cfg[s]), f"server {s}: configuration {self.cfg[s]} not in K"
        per_cfg: dict[Config, int] = {}
        for s in self.RG:
            per_cfg[self.cfg[s]] = per_cfg.get(self.cfg[s], 0) + 1
            assert self._rank(s) > self.Istar, f"RG server {s} has rank <= I*"
            assert s == next(reversed(self.members[self.cfg[s]])), f"RG server {s} is not index 1"
        assert all(c <= 1 for c in per_cfg.values()), "two Reject-Group servers share a configuration"
        total = 0
        for i, st in enumerate(self.plan, 1):
            X = len(self.members.get(st.config, {}))
            ranked = sum(1 for s in self.members.get(st.config, {}) if self._rank(s) == i)
            assert ranked == min(X, st.count), (
                f"class {st.config}: {ranked} servers of rank {i}, expected {min(X, st.count)}"
            )
            total += min(X, st.count)
        assert total <= self.L
        assert 1 <= self.Istar <= J


class DRAPreemption(DRA):
    """DRA+Preemption (Sec. 7.2): a rejected higher-priority job triggers preemption of lowest-priority jobs."""

    description = (
        "DRA+Preemption: on a rejected higher-priority job, preempt lowest-priority jobs on servers of rank > I*"
    )
    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=True, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.ADMIT, Cmd.REJECT, Cmd.RESERVE, Cmd.RELEASE, Cmd.MIGRATE, Cmd.PREEMPT}),
        queueing=("loss",),
        needs_types=True,
    )
    preemption = True
    _SCOPES = ("rank_gt_istar", "rg_only", "all")

    def __init__(self, preempt_scope: str = "rank_gt_istar", retry_after_preempt: bool = False, **params: Any):
        super().__init__(**params)
        self.preempt_scope = settings.choice(preempt_scope, "agent.preempt_scope", self._SCOPES)
        #: after the preemptions and CRA, admit the triggering job if an Accept-Group slot now holds it
        self.retry_after_preempt = settings.boolean(retry_after_preempt, "agent.retry_after_preempt")

    def _preempt(self, j: int) -> bool:
        budget = self.g * float(self.size[j])
        low = self.low_types
        v = self.view
        cands = []
        for s in range(self.L):
            if not self.ntot[s] or not any(self.jobs[s][t] for t in low):
                continue
            r = self._rank(s)
            if self.preempt_scope == "rank_gt_istar" and r <= self.Istar:
                continue
            if self.preempt_scope == "rg_only" and s not in self.RG:
                continue
            for x in v.running_on(s):
                t = v.job_type(x)
                if t in low and not v.is_dummy(x):
                    cands.append((int(self._size_rank[t]), -r, -self.seq[s], x, s, t))
        if not cands:
            return False
        cands.sort()
        done = 0.0
        for _, _, _, x, s, t in cands:
            size = float(self.size[t])
            if done >= budget:
                break
            self._cmds.append(Command.preempt(x))
            self._remove_job(s, t)
            self.stats["preemptions"] += 1
            done += size
        return True


class DRANoMigration(DRA):
    """DRA without migration (Sec. 8): every rank-(J+1) server is in the Reject Group; no migrations."""

    description = "DRA without migration (auto-scaling Sec. 8): Reject Group = all rank-(J+1) servers + index-1 rank>I*; no migrations"
    requirements = AgentRequirements(
        epochs=EpochConfig(arrivals=True, completions=True, dummy_completions=False),
        commands=frozenset({Cmd.WAIT, Cmd.ADMIT, Cmd.REJECT, Cmd.RESERVE, Cmd.RELEASE}),
        queueing=("loss",),
        needs_types=True,
    )
    migration = False

    def _in_rg(self, s: int) -> bool:
        return s in self.RG or self._rank(s) == self.J + 1
