"""Action modes: fixed discrete action spaces on top of the command set.

Each mode maps an integer action to a :class:`~clustergym.core.commands.Command`
and computes the mask of valid actions, so that ``sb3_contrib.MaskablePPO``
works out of the box.  Baselines may also pass a ``Command`` to ``step()``
directly in any mode.

========== ======================= =================================================
mode       space                   meaning
========== ======================= =================================================
``head``   ``Discrete(L + 1)``     ``a < L``: start the head (oldest) queued job on
                                   server ``a``; ``a = L``: WAIT
``slot``   ``Discrete(K * L + 1)`` ``a = k * L + l``: start the ``k``-th job of the
                                   queue window on server ``l``; last: WAIT
``admit``  ``Discrete(L + 1)``     loss mode: ``a < L``: admit the arriving job to
                                   server ``a``; ``a = L``: reject it (WAIT when no
                                   job is arriving)
``command`` ``MultiDiscrete``      ``(kind, arg, server)``: the command set with
           ``([12, A, L])``        ``arg`` a queue-window slot (PLACE, REPLACE,
                                   ROUTE, REJECT) or a type (DUMMY, RESERVE,
                                   RELEASE); its mask is per dimension (factorised)
``rule``   ``Discrete(N)``         ``a``: rule ``a`` of ``N`` injected rules
                                   (:class:`RuleSet`) acts at this decision epoch;
                                   every action is valid; an epoch at which every
                                   rule would WAIT is trivial (skipped)
========== ======================= =================================================

The ``rule`` mode's rules are injected (``make_action_mode("rule", sim, K, rules=...)``, the env's
``rules`` argument): :class:`~clustergym.learned.rule_select.RuleDriver` is the package's
:class:`RuleSet`, and :mod:`clustergym.learned.rule_select` builds the environment that lets a policy
choose a rule once per epoch.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from gymnasium import spaces

from clustergym.core.commands import Cmd, Command
from clustergym.core.simulator import Simulator
from clustergym.envs import kernels
from clustergym.errors import ConfigError
from clustergym.validation import settings

if TYPE_CHECKING:
    from clustergym.envs.context import AgentContext

__all__ = [
    "ActionMode",
    "HeadServerMode",
    "SlotServerMode",
    "AdmitMode",
    "CommandMode",
    "RuleMode",
    "RuleSet",
    "make_action_mode",
    "ACTION_MODES",
]


def _fit_matrix(sim: Simulator, jobs: list[int]) -> np.ndarray:
    """``(len(jobs), L)`` bool: where each queued job can start now."""
    if not jobs:
        return np.zeros((0, sim.num_servers), dtype=bool)
    c = sim.cluster
    if c.index_active():  # large clusters: each row from the kernel's placement index (the same test)
        return np.stack([c.fit_mask(int(sim.jobs.type[j]), sim.jobs.demand[j]) for j in jobs])
    d = sim.jobs.demand[jobs]  # (K, R)
    ok = np.logical_and.reduce(c.load[None, :, :] + d[:, None, :] <= c._limit[None, :, :], axis=2)  # .all(axis=2)
    if c.any_slots:
        for i, j in enumerate(jobs):
            ok[i] |= c.slot_usable(int(sim.jobs.type[j]), sim.jobs.demand[j])
    return ok


def _allowed_before_last(action: Any, mask: np.ndarray) -> bool:
    """Whether ``action`` is one of the mask's entries before the last (WAIT / reject) and allowed by it."""
    a = int(action)
    return 0 <= a < mask.size - 1 and bool(mask[a])


#: integer types whose membership in a ``Discrete`` space is a range test (``bool`` is not one of them)
_INTS = frozenset({int, np.int64, np.int32, np.intp})


class ActionMode(ABC):
    """Maps integer actions to commands for one simulator."""

    name: str = ""
    #: True when an epoch whose only valid action is WAIT can be skipped automatically
    skippable: bool = True

    def __init__(self, sim: Simulator, queue_window: int):
        self.sim = sim
        self.queue_window = queue_window

    @classmethod
    def create(cls, sim: Simulator, queue_window: int, rules: RuleSet | None = None) -> ActionMode:
        """The mode on ``sim``; ``rules`` only for a mode that takes them (``rule``)."""
        if rules is not None:
            raise ConfigError(
                "rules", f"the {cls.name!r} action mode takes no rules (the 'rule' mode chooses among rules)"
            )
        return cls(sim, queue_window)

    @property
    @abstractmethod
    def space(self) -> spaces.Space: ...

    @property
    @abstractmethod
    def mask_size(self) -> int: ...

    @abstractmethod
    def mask(self) -> np.ndarray:
        """``(mask_size,)`` bool mask of valid actions (never all False: WAIT is valid)."""

    @abstractmethod
    def decode(self, action) -> Command: ...

    def malformed(self, action: Any) -> str | None:
        """Why ``action`` is not an element of :attr:`space` (``None`` when it is): the env never
        decodes such an action.  Booleans are refused although Python counts them as integers."""
        if type(action) in _INTS and isinstance(self.space, spaces.Discrete):  # the hot path: a plain integer
            return (
                None
                if 0 <= action - self.space.start < self.space.n
                else f"{action!r} is not an action of {self.space}"
            )
        if isinstance(action, (bool, np.bool_)) or (isinstance(action, np.ndarray) and action.dtype == bool):
            return f"{action!r} is a boolean, not an action of {self.space}"
        try:
            ok = bool(self.space.contains(action))
        except (TypeError, ValueError):
            ok = False
        return None if ok else f"{action!r} is not an action of {self.space}"

    def encode(self, command: Command) -> int | None:
        """The action that :meth:`decode` maps to ``command`` in the current state, or ``None``
        when this mode cannot express it (used to imitate rule-based agents)."""
        return None

    def window(self) -> list[int]:
        """Ids of the first ``queue_window`` jobs of the central queue."""
        return list(islice(self.sim.queue, self.queue_window))

    def only_wait(self, mask: np.ndarray) -> bool:
        # = mask[-1] and not mask[:-1].any(): the first True is the last entry (argmax has no Python wrapper)
        return bool(mask[-1]) and int(mask.argmax()) == mask.size - 1

    def nothing_to_decide(self) -> bool:
        """A cheap sufficient test that WAIT is the only valid action (False: build the mask)."""
        return False

    def mask_proves_valid(self, action, mask: np.ndarray) -> bool:
        """Whether ``mask`` (computed on the current state) alone shows that ``action`` decodes to
        a command ``Simulator.check`` accepts, so the env may skip the check (False: check it)."""
        return False

    def reset(self, context: AgentContext, seed: int | None) -> None:
        """Start an episode (called by the env after the kernel's reset; most modes keep no state)."""
        return None


class _OneJobMode(ActionMode):
    """``Discrete(L + 1)`` over the servers for one designated job, plus a last action."""

    queueing = ""

    def __init__(self, sim: Simulator, queue_window: int):
        super().__init__(sim, queue_window)
        if sim.queueing != self.queueing:
            raise ConfigError(
                "action_mode", f"{self.name!r} needs queueing={self.queueing!r}, the scenario has {sim.queueing!r}"
            )
        self._space = spaces.Discrete(sim.num_servers + 1)
        self._compiled = kernels.ready()  # the fit test compiled (numba on; decided once)

    @abstractmethod
    def job(self) -> int:
        """The job the server actions refer to, or -1."""

    def nothing_to_decide(self) -> bool:
        job = self.job()
        if job < 0:
            return True  # the mask is then WAIT alone
        c = self.sim.cluster
        if c.indexed and not c.any_slots:  # the placement index knows in O(1) whether the job fits anywhere
            return not c.placement.any_fit(int(self.sim.jobs.type[job]), self.sim.jobs.demand[job])
        return False

    def mask_proves_valid(self, action, mask: np.ndarray) -> bool:
        # a server action allowed by the mask: the job exists, waits (head of the central queue,
        # or the pending arrival) and fits on that server by Cluster.fits, the test check() repeats
        return _allowed_before_last(action, mask)

    @property
    def space(self) -> spaces.Space:
        return self._space

    @property
    def mask_size(self) -> int:
        return self.sim.num_servers + 1

    def mask(self) -> np.ndarray:
        m = np.zeros(self.mask_size, dtype=bool)
        m[-1] = True
        job = self.job()
        if job >= 0:  # one job: the cluster's own (L,) fit check (Cluster.fit_mask: from its placement
            sim = self.sim  # index on large clusters), as _fit_matrix computes it
            c = sim.cluster
            jt, d = int(sim.jobs.type[job]), sim.jobs.demand[job]
            if c.indexed and not c.any_slots:
                c.placement.fit_mask(jt, d, out=m[:-1])
            elif self._compiled and not c.any_slots:  # Cluster.fits_free's test, compiled
                kernels.slot_fit_mask(c.load, c._limit, sim.jobs.demand, np.array([job], dtype=np.int64), m)
            else:
                m[:-1] = c.fits(jt, d)
        return m


class HeadServerMode(_OneJobMode):
    name = "head"
    queueing = "central"

    def job(self) -> int:
        return next(iter(self.sim.queue)) if self.sim.queue else -1

    def decode(self, action) -> Command:
        a = int(action)
        if a == self.sim.num_servers:
            return Command.wait()
        return Command.place(self.job(), a)

    def encode(self, command: Command) -> int | None:
        if command.kind == Cmd.WAIT:
            return self.sim.num_servers
        if command.kind == Cmd.PLACE and command.job == self.job() >= 0:
            return int(command.server)
        return None


class SlotServerMode(ActionMode):
    name = "slot"

    def __init__(self, sim: Simulator, queue_window: int):
        super().__init__(sim, queue_window)
        if sim.queueing != "central":
            raise ConfigError("action_mode", "'slot' needs a central queue (queueing='central')")
        self._space = spaces.Discrete(queue_window * sim.num_servers + 1)
        #: the window's fit test compiled (numba on; decided once): one loop instead of _fit_matrix's NumPy calls
        self._compiled = kernels.ready()

    def nothing_to_decide(self) -> bool:
        return not self.sim.queue  # an empty window: the mask is WAIT alone

    def mask_proves_valid(self, action, mask: np.ndarray) -> bool:
        # a (window job, server) pair allowed by the mask: the job is in the central queue (queued, not a
        # dummy, its row kept) and fits on the server by Cluster.fits, the tests check() repeats
        return _allowed_before_last(action, mask)

    @property
    def space(self) -> spaces.Space:
        return self._space

    @property
    def mask_size(self) -> int:
        return self.queue_window * self.sim.num_servers + 1

    def mask(self) -> np.ndarray:
        m = np.zeros(self.mask_size, dtype=bool)
        m[-1] = True
        sim = self.sim
        if not sim.queue:
            return m
        c = sim.cluster
        if self._compiled and not c.indexed and not c.any_slots:  # _fit_matrix's broadcast test, compiled
            ids = np.fromiter(islice(sim.queue, self.queue_window), dtype=np.int64)
            kernels.slot_fit_mask(c.load, c._limit, sim.jobs.demand, ids, m)
            return m
        win = self.window()
        m[: len(win) * sim.num_servers] = _fit_matrix(sim, win).ravel()
        return m

    def decode(self, action) -> Command:
        a = int(action)
        L = self.sim.num_servers
        if a == self.queue_window * L:
            return Command.wait()
        k, server = divmod(a, L)
        return Command.place(next(islice(self.sim.queue, k, None), -1), server)  # the window's k-th job, or -1

    def encode(self, command: Command) -> int | None:
        L = self.sim.num_servers
        if command.kind == Cmd.WAIT:
            return self.queue_window * L
        if command.kind == Cmd.PLACE:
            win = self.window()
            if command.job in win:
                return win.index(command.job) * L + int(command.server)
        return None


class AdmitMode(_OneJobMode):
    name = "admit"
    queueing = "loss"

    def job(self) -> int:
        return self.sim.pending

    def decode(self, action) -> Command:
        a = int(action)
        if a == self.sim.num_servers:
            return Command.reject() if self.sim.pending >= 0 else Command.wait()
        return Command.admit(a)

    def encode(self, command: Command) -> int | None:
        pending = self.sim.pending >= 0
        if command.kind == Cmd.ADMIT and pending:
            return int(command.server)
        if (command.kind == Cmd.REJECT and pending and command.job in (-1, self.sim.pending)) or (
            command.kind == Cmd.WAIT and not pending
        ):
            return self.sim.num_servers
        return None


class CommandMode(ActionMode):
    name = "command"
    skippable = False

    _ENCODABLE = (
        Cmd.WAIT,
        Cmd.PLACE,
        Cmd.DUMMY,
        Cmd.RESERVE,
        Cmd.RELEASE,
        Cmd.ADMIT,
        Cmd.REJECT,
        Cmd.REPLACE,
        Cmd.ROUTE,
    )

    def __init__(self, sim: Simulator, queue_window: int):
        super().__init__(sim, queue_window)
        self.num_args = max(queue_window, sim.num_types)
        self._space = spaces.MultiDiscrete([len(Cmd), self.num_args, sim.num_servers])

    @property
    def space(self) -> spaces.Space:
        return self._space

    @property
    def mask_size(self) -> int:
        return len(Cmd) + self.num_args + self.sim.num_servers

    def mask(self) -> np.ndarray:
        """Factorised mask: valid kinds, then valid args, then valid servers (a superset of
        the valid joint actions; an invalid combination gets the invalid-action response)."""
        sim = self.sim
        m = np.zeros(self.mask_size, dtype=bool)
        nk = len(Cmd)
        m[Cmd.WAIT] = True
        m[nk : nk + self.num_args] = True
        m[nk + self.num_args :] = True
        if sim.queueing == "loss":
            m[Cmd.ADMIT] = m[Cmd.REJECT] = sim.pending >= 0
        elif sim.n_queued:  # = sim.queue or sim.local_count.any(), without a pass over the servers
            m[Cmd.PLACE] = True
            m[Cmd.REJECT] = True
            m[Cmd.ROUTE] = sim.queueing == "local" and bool(sim.queue)
            m[Cmd.REPLACE] = any(sim.dummies_by_type)  # = count_dummy.any(): some dummy job runs
        if sim.types.exact:
            m[Cmd.DUMMY] = m[Cmd.RESERVE] = True
            m[Cmd.RELEASE] = bool(sim.cluster.any_slots)
        # the command set's last entry is WAIT for only_wait(); keep WAIT at index 0 here
        return m

    def only_wait(self, mask: np.ndarray) -> bool:
        return False

    def decode(self, action) -> Command:
        kind, arg, server = (int(x) for x in np.asarray(action).reshape(-1)[:3])
        kind = Cmd(kind)
        if kind not in self._ENCODABLE:
            return Command(kind, job=-2, server=server)  # not encodable: rejected by validation
        if kind in (Cmd.PLACE, Cmd.REPLACE, Cmd.ROUTE) or (kind == Cmd.REJECT and self.sim.queueing != "loss"):
            win = self.window() if kind != Cmd.PLACE or self.sim.queueing == "central" else self._local_window(server)
            job = win[arg] if arg < len(win) else -1
            return Command(kind, job=job, server=server)
        if kind in (Cmd.DUMMY, Cmd.RESERVE, Cmd.RELEASE):
            return Command(kind, type=arg, server=server)
        if kind == Cmd.ADMIT:
            return Command.admit(server)
        if kind == Cmd.REJECT:
            return Command.reject()
        return Command.wait()

    def _local_window(self, server: int) -> list[int]:
        sim = self.sim
        ids: list[int] = []
        for j in range(sim.num_types):
            ids.extend(sim.local_queue_of(server, j))
        ids.sort()
        return ids[: self.queue_window]


class RuleSet(Protocol):
    """The rules injected into the ``rule`` mode: rule-based agents issuing commands, asked for their
    first command at every epoch (so each sees every epoch, whichever acts).  They read the state
    through their :class:`~clustergym.envs.context.AgentContext`, never the observation."""

    @property
    def names(self) -> Sequence[str]:
        """The rules' names, one per action (``N``)."""
        ...

    def reset(self, context: AgentContext, seed: int | None) -> None:
        """Start an episode: every rule gets the context and seeds its own generator from ``seed``."""
        ...

    def first_commands(self) -> Sequence[Command]:
        """Every rule's first command at the current epoch: each rule is asked once per epoch, and the
        answers are kept until the epoch ends."""
        ...

    def next_command(self, i: int) -> Command:
        """Rule ``i``'s next command at the current epoch, after the first (:meth:`first_commands`)."""
        ...


class RuleMode(ActionMode):
    """``Discrete(N)``: action ``a`` lets rule ``a`` of the injected :class:`RuleSet` act.

    The first action of an epoch chooses the rule and executes its first command; later steps in
    the same epoch (with ``Command`` objects, or any action) continue the chosen rule until its WAIT.
    Every action is valid; an epoch at which every rule's first command is WAIT leaves nothing to
    choose, so the env skips it when ``skip_trivial`` (each rule has still been asked).
    """

    name = "rule"

    def __init__(self, sim: Simulator, queue_window: int, rules: RuleSet | None = None):
        super().__init__(sim, queue_window)
        if rules is None:
            raise ConfigError(
                "action_mode",
                "the 'rule' mode chooses among injected rules: pass rules "
                "(clustergym.learned.rule_select.make_rule_select_env builds them from names)",
            )
        if not all(hasattr(rules, m) for m in ("names", "reset", "first_commands", "next_command")):
            raise ConfigError(
                "rules",
                f"expected the rule mode's rules as a RuleSet (clustergym.learned.rule_select.RuleDriver), got "
                f"{rules!r}; rules named by text are chosen among by clustergym train --set action_mode=rule",
            )
        self.rules = rules
        n = len(rules.names)
        if n < 1:
            raise ConfigError("rules", "the 'rule' mode needs at least one rule")
        self._space = spaces.Discrete(n)
        self._chosen, self._chosen_epoch = -1, -1

    @classmethod
    def create(cls, sim: Simulator, queue_window: int, rules: RuleSet | None = None) -> ActionMode:
        return cls(sim, queue_window, rules)

    @property
    def space(self) -> spaces.Space:
        return self._space

    @property
    def mask_size(self) -> int:
        return int(self._space.n)

    def reset(self, context: AgentContext, seed: int | None) -> None:
        self.rules.reset(context, seed)
        self._chosen, self._chosen_epoch = -1, -1

    def mask(self) -> np.ndarray:
        return np.ones(self.mask_size, dtype=bool)

    def nothing_to_decide(self) -> bool:
        return all(c.kind == Cmd.WAIT for c in self.rules.first_commands())

    def only_wait(self, mask: np.ndarray) -> bool:
        return self.nothing_to_decide()

    def decode(self, action) -> Command:
        epoch = self.sim.n_epochs
        if epoch != self._chosen_epoch:  # the epoch's first action chooses the rule
            self._chosen, self._chosen_epoch = int(action), epoch
            return self.rules.first_commands()[self._chosen]
        return self.rules.next_command(self._chosen)


ACTION_MODES: dict[str, type[ActionMode]] = {
    m.name: m for m in (HeadServerMode, SlotServerMode, AdmitMode, CommandMode, RuleMode)
}


#: the action mode of each queueing mode when none is asked for
DEFAULT_ACTION_MODES = {"central": "head", "loss": "admit", "local": "command"}


def default_action_mode(queueing: str) -> str:
    """The natural action mode of a queueing mode: ``head`` (central queue), ``admit`` (loss system),
    ``command`` (local queues, whose routing and per-server starts need the full command set)."""
    return DEFAULT_ACTION_MODES[queueing]


def make_action_mode(name: str | None, sim: Simulator, queue_window: int, rules: RuleSet | None = None) -> ActionMode:
    """The action mode ``name`` (``None``: :func:`default_action_mode` of the simulator's queueing),
    with ``rules`` injected into a mode that takes them (``rule``).

    Raises:
        ConfigError: an unknown mode, rules for a mode without rules, or a rule mode without them.
    """
    if name is None:
        name = default_action_mode(sim.queueing)
    return ACTION_MODES[settings.choice(name, "action_mode", ACTION_MODES)].create(sim, queue_window, rules)
