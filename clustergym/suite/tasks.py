"""The tasks of the clustergym suite: fixed, versioned learning tasks, one Gymnasium id each.

A task pins down everything a score depends on: the scenario and its parameters, the start, the
scored window of simulated time, the action mode, the reward scale, the invalid-action policy,
the observation (:mod:`clustergym.suite.env`) and the step bound.  Changing any of it makes a new
version (``-v2``); the reference scores (:mod:`clustergym.suite.reference`) belong to one version.

The score of an episode is the paper's headline metric over the task's window, sign-adjusted so
that higher is better: ``sign x (time integral of the objective's rate) / window`` -- minus the mean
queue length, minus the mean weighted number of jobs in the system, or the reward rate
(:mod:`clustergym.core.objectives`).  The reward only shapes learning: its scale and timing change
nothing in the score.

Seeds come in two splits (:data:`SPLITS`), each with its own reference scores on its first
:data:`REFERENCE_SEEDS` seeds: ``validation`` (:data:`EVAL_SEEDS`, the seeds the recipes of
experiments/log.md were chosen on: develop, tune and select models there) and ``test``
(:data:`TEST_SEEDS`, drawn fresh and held out: report final claims there, once the choice is made).
Train on any other seed (``clustergym train`` seeds its environments with ``10_000 + 100 x seed + i``
and then with 63-bit draws of their generators).

Documentation of each task: ``docs/benchmark.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clustergym.errors import ConfigError

__all__ = [
    "DEFAULT_SPLIT",
    "EVAL_SEEDS",
    "REFERENCE_SEEDS",
    "SPLITS",
    "SUITE_VERSION",
    "TASKS",
    "TEST_SEEDS",
    "Task",
    "check_split",
    "eval_seeds",
    "find_task",
    "task",
    "task_names",
]

#: the version of the suite (the tasks' ``-v`` number)
SUITE_VERSION = 1
#: the validation split's evaluation seeds (never train on them; select models on them)
EVAL_SEEDS = range(1_000_000, 1_000_100)
#: the test split's evaluation seeds: held out, for final claims only (never train or select on them).
#: Drawn fresh when the splits were introduced: no recipe of experiments/log.md saw them.
TEST_SEEDS = range(2_000_000, 2_000_100)
#: the splits and their seeds
SPLITS: dict[str, range] = {"validation": EVAL_SEEDS, "test": TEST_SEEDS}
#: the split ``clustergym benchmark`` uses without ``--split`` (development happens on it)
DEFAULT_SPLIT = "validation"
#: how many seeds of each split the reference scores use
REFERENCE_SEEDS = 30


@dataclass(frozen=True)
class Task:
    """One task of the suite.

    Attributes:
        name: kebab-case name; the Gymnasium id is ``clustergym/<name>-v<version>``.
        paper: the paper's short name (``rms``, ``bfjs``, ``autoscale``, ``lotes``, ``mris``, or
            ``trace`` for the real-trace task).
        section: the paper's section (and figure) the scenario comes from.
        title: one line.
        preset: the scenario preset.
        params: the preset's parameters, as ``(name, value)`` pairs.
        horizon: the scored window of simulated time, from the start (the episode's end).
        time_unit: the observation's time scale (waiting times and durations are divided by it).
        action_mode: the action mode (``head``, ``slot`` or ``admit``).
        queue_window: ``K``, the queue jobs observed (and addressable in ``slot`` mode).
        reward_scale: multiplies every reward (about 1 per step for the random policy).
        reward_timing: ``integral`` or ``start`` (see :class:`~clustergym.envs.ClusterEnv`).
        invalid_penalty: the reward of an invalid action (which then acts as WAIT).
        max_episode_steps: the safety bound on steps through the action space (Gymnasium's
            ``TimeLimit`` reports it as truncation); the horizon ends the episode long before it.
        warm_start: ``None`` (the episode starts with empty servers and queues), or the registered
            agent that places the jobs arriving at time 0 before the first decision (the jobs in
            flight at the start of a trace window).
        start: what the start is and why, in words.
        why: what the task tests, and why the baselines differ on it.
        needs_traces: built from the real traces.
    """

    name: str
    paper: str
    section: str
    title: str
    preset: str
    params: tuple[tuple[str, Any], ...]
    horizon: float
    time_unit: float
    action_mode: str
    reward_scale: float
    max_episode_steps: int
    start: str
    why: str
    queue_window: int = 8
    reward_timing: str = "integral"
    invalid_penalty: float = -0.1
    warm_start: str | None = None
    needs_traces: bool = False
    version: int = SUITE_VERSION
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def id(self) -> str:
        """The Gymnasium id, ``clustergym/<name>-v<version>``."""
        return f"clustergym/{self.name}-v{self.version}"

    def scenario(self) -> Any:
        """The task's :class:`~clustergym.scenarios.Scenario` (the preset with its parameters, at the task's horizon)."""
        from clustergym.scenarios import resolve_scenario

        return resolve_scenario(self.preset, **dict(self.params)).with_horizon(self.horizon)

    def env_kwargs(self) -> dict[str, Any]:
        """The environment arguments the task fixes (defaults of :func:`clustergym.suite.make_task_env`)."""
        return {
            "action_mode": self.action_mode,
            "queue_window": self.queue_window,
            "reward_scale": self.reward_scale,
            "reward_timing": self.reward_timing,
            "invalid_action": "wait",
            "invalid_penalty": self.invalid_penalty,
        }


# The tasks.  Horizons give the random policy about 1,000-1,600 decisions per episode (a learner's
# work-conserving policy a few hundred more); reward scales make the random policy's mean reward per
# step about -1 (+1 for the reward objective).  See docs/benchmark.md for each task.
TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task(
            name="rms-trap",
            paper="rms",
            section="RMS §III, Fig. 1b",
            title="Sizes 2 and 5 on ten capacity-10 servers at 94% load: the instance where Best-Fit is trapped",
            preset="bf-trap",
            params=(("queue_cap", None),),
            horizon=25.0,
            time_unit=1.0,
            action_mode="slot",
            reward_scale=1.0,
            max_episode_steps=4000,
            start="empty servers and queues (the paper's runs start empty; the load builds up in about one mean "
            "service time, a twenty-fifth of the window)",
            why="work-conserving Best-Fit that refills a server with the largest fitting job drifts into the "
            "configuration (2 jobs of size 2, 1 of size 5) that wastes a unit per server; which job to start "
            "matters, so the action picks a (queue slot, server) pair",
        ),
        Task(
            name="bfjs-uniform",
            paper="bfjs",
            section="BF-J/S §VII-A (E3), Fig. 4",
            title="Uniform sizes U[0.1, 0.9] on five unit servers in slotted time, at 90% of the capacity bound",
            preset="uniform-sizes",
            params=(
                ("low", 0.1),
                ("high", 0.9),
                ("alpha", 0.9),
                ("num_servers", 5),
                ("mean_service", 20.0),
                ("queue_cap", None),
            ),
            horizon=1500.0,
            time_unit=20.0,
            action_mode="slot",
            reward_scale=0.01,
            max_episode_steps=4000,
            start="empty servers and queues, as the paper's simulations; the window is 75 mean service times",
            why="random sizes leave holes; Best-Fit-style packing (BF-J, BF-S) against FIFO packing and VQS's "
            "virtual queues; the decisions come at slot boundaries",
        ),
        Task(
            name="autoscale-syn4",
            paper="autoscale",
            section="Auto-scaling Sec. 7.1 (SYN4), Figs. 2-4",
            title="Admit or reject four VM types with rewards on ten (80 vCPU, 640 GB) servers",
            preset="autoscale-4vm",
            params=(("num_servers", 10),),
            horizon=30.0,
            time_unit=1.0,
            action_mode="admit",
            reward_scale=0.01,
            reward_timing="start",
            max_episode_steps=4000,
            start="empty servers (a loss system fills in about one mean service time, a thirtieth of the window)",
            why="the large VM (64, 512) earns most of the reward but needs an almost empty server: admitting "
            "every small VM (greedy) fragments the servers, reserving for the large one (GPA, DRA, the LP) "
            "wastes capacity when it does not come",
        ),
        Task(
            name="lotes-hetero",
            paper="lotes",
            section="LoTES Sec. 5.4.3 (Experiment 3), Figs. 12-13",
            title="Nine job classes on the ten machine configurations, machine-dependent speeds (Omega 0.5), 95% load",
            preset="lotes-omega",
            params=(("omega", 0.5), ("machines_per_config", 1), ("load", 0.95), ("queue_cap", None)),
            horizon=2.0,
            time_unit=1.0,
            action_mode="head",
            reward_scale=10.0,
            max_episode_steps=4000,
            start="empty machines and queue (the paper's runs start empty; mean service times are about half an "
            "hour, a quarter of the window)",
            why="machines differ in capacity and in speed per class: where a job runs sets how long it runs; "
            "LoTES and Tetris know the rates and speeds (oracles), greedy packing does not",
        ),
        Task(
            name="mris-poisson",
            paper="mris",
            section="MRIS Sec. 3 (model), Sec. 7 (scale)",
            title="Weighted flow time on four 3-resource machines, clairvoyant, log-normal processing times",
            preset="mris-poisson",
            params=(),
            horizon=80.0,
            time_unit=1.0,
            action_mode="slot",
            reward_scale=0.2,
            max_episode_steps=4000,
            start="empty machines and queue (each seed is a new instance released from time 0)",
            why="processing times and weights are visible at release: which job starts first (weighted "
            "shortest first, or MRIS's interval batches) decides the weighted flow time",
        ),
        Task(
            name="azure-vms",
            paper="trace",
            section="Azure Public Dataset V1 (2017 VMs); the RMS model §II",
            title="A random thinned day of Azure VM arrivals, six flavours, on eight (64 vCPU, 256 GB) hosts",
            preset="azure-vms",
            params=(),
            horizon=86_400.0,
            time_unit=3600.0,
            action_mode="slot",
            reward_scale=5e-4,
            max_episode_steps=4000,
            warm_start="first-fit",
            needs_traces=True,
            start="the VMs running at the window's start in the trace arrive at time 0 and first-fit places them "
            "(in arrival order) before the first decision: the cluster starts as loaded as the trace was, "
            "not empty (VMs live for hours to days, longer than a fill-up the window could afford)",
            why="real arrivals in bursts and real lifetimes; the CPU runs near capacity on most windows and the "
            "memory-heavy flavour packs badly with the small ones, so packing order and server choice build "
            "or avoid queues",
        ),
    )
}


def task_names() -> list[str]:
    """The task names, in the suite's order."""
    return list(TASKS)


def find_task(name: str) -> Task | None:
    """The task called ``name`` (a name, ``<name>-v<version>`` or the Gymnasium id), or ``None``."""
    key = name.strip()
    key = key.removeprefix("clustergym/")
    if key in TASKS:
        return TASKS[key]
    base, sep, ver = key.rpartition("-v")
    if sep and base in TASKS and ver == str(TASKS[base].version):
        return TASKS[base]
    return None


def task(name: str) -> Task:
    """The task called ``name`` (see :func:`find_task`); a :class:`ConfigError` names the tasks otherwise."""
    t = find_task(name)
    if t is None:
        raise ConfigError(
            "task",
            f"unknown suite task {name!r}; the tasks are {', '.join(TASKS)} (ids clustergym/<task>-v{SUITE_VERSION})",
        )
    return t


def check_split(split: str) -> str:
    """``split`` if it names a split (``validation`` or ``test``); a :class:`ConfigError` otherwise."""
    if split not in SPLITS:
        raise ConfigError("--split", f"unknown split {split!r}; the splits are {', '.join(SPLITS)}")
    return split


def eval_seeds(n: int | None = None, split: str = DEFAULT_SPLIT) -> list[int]:
    """The first ``n`` evaluation seeds of ``split`` (default: the reference's :data:`REFERENCE_SEEDS`)."""
    from clustergym.validation import settings

    seeds = SPLITS[check_split(split)]
    n = REFERENCE_SEEDS if n is None else settings.number(n, "seeds", lo=1, hi=len(seeds), integer=True)
    return list(seeds[:n])
