"""Diagnostic rules that show how much a task leaves to learn beyond its registered baselines.

    python experiments/headroom_rules.py [--seeds 30]

Rules of a few lines each, written for one suite task each. They are *not* registered baselines
and not from the papers: they only measure the headroom that a learned policy could find, using
what a learned policy observes (no oracle information; the ``fastest-machine`` rows read what a
policy could learn, the task instance's fixed speeds: below), on the suite's reference seeds:

* ``rms-trap``, **type segregation**: work-conserving; an arriving job goes to the fullest server
  that holds only jobs of its own type, else to an empty one, else to the fullest where it fits;
  a server freed by a completion takes the oldest job of a type it still runs, else the oldest
  fitting job.  Keeping sizes 2 and 5 on separate servers avoids the (2, 2, 5) configuration that
  wastes one unit of capacity (the Best-Fit trap of the RMS paper, §III, Fig. 1b); it is the
  configurations MaxWeight would choose, without MaxWeight's draining.
* ``autoscale-syn4``, **reservation for the large VM**: admit-all Best-Fit (``best-fit-admit``),
  except that a small VM is rejected when its Best-Fit server is one of the last ``k`` servers that
  can still host the (64, 512) VM and would no longer host it.  The large VM earns 1,024 per unit
  time, the small ones 18 to 96 (auto-scaling paper, Sec. 7.1).

* ``mris-poisson``, **priority queue with Best-Fit machines**: ``pq`` (the MRIS paper's
  PRIORITY-QUEUE with WSJF, Sec. 4, the best baseline) starts the same jobs in the same order, each
  on the machine it fills most (BF-EXEC's machine rule) instead of the first that fits.
* ``mris-poisson``, **priority queue with a softer key**: ``pq`` with the jobs sorted by
  ``p_j ** 0.8 / w_j`` instead of WSJF's ``p_j / w_j``: long heavy jobs move forward a little.
  How much the order of the list leaves to gain, within the family of WSJF-like keys.

The ``lotes-hetero`` rows measure a limit rather than a headroom: ``lotes-hetero``'s action mode, ``head``, can
only place the oldest waiting job.  ``random-fit`` (the best non-oracle baseline) restricted to the
oldest job (``scan=1``), to the first 8 (``scan=8``, what the ``slot`` mode can address) and to the
first 64 shows what that restriction costs any policy acting through the action space.
**Fastest machine**: the greedy rule of ``random-fit`` with another machine choice.  Without a scan
window, an arriving job starts on the fitting machine with the highest speed for its class, and a
machine freed by a completion takes the oldest waiting job that fits it; with ``scan=64``, each epoch
sweeps the first 64 waiting jobs, oldest first, each on its fastest fitting machine.  It reads the machines' speeds, which a learned policy does
not observe; but they are the task instance's, the same in every episode, so a policy with server
identities (``policy.server_ids``) could learn them.  It shows what knowing them is worth, and how
much of it a window keeps.  **Fastest estimated** (``FastestEstimatedFit``, the cloning teacher of
``experiments/round8.md``): the same rule on the speeds *estimated* from the episode's completions so
far (``ClusterView.speed_estimate``), which every policy may read: what learning them within an
episode keeps of the oracle's knowledge.

Prints, per rule, the mean score, the normalized score and the paired difference (mean ± 95% t
half-width) against the best non-oracle baseline on the same seeds, as ``clustergym benchmark``.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from clustergym.agent_api import AGENTS, make_agent, register_agent
from clustergym.baselines.greedy import BestFitAdmit, FastestEstimatedFit, GreedyAgent
from clustergym.baselines.mris.bf_exec import tightest_by_norm
from clustergym.baselines.mris.mris import priority_order
from clustergym.baselines.mris.priority_queue import PriorityQueue
from clustergym.core.commands import Command
from clustergym.suite.scoring import evaluate


class TypeSegregation(GreedyAgent):
    """Work-conserving placement that keeps each server to one job type when it can (``rms-trap``)."""

    description = "diagnostic: one job type per server when possible, fullest first"
    server_rule = "best-fit"
    default_job_rule = "fifo"

    def _server_for(self, job: int) -> int:
        v = self.view
        fits = np.flatnonzero(v.fits(job))
        if fits.size == 0:
            return -1
        counts = v.count_real  # (L, J) real jobs of each type per server
        t = v.job_type(job)
        others = counts.sum(axis=1) - counts[:, t]
        used = v.load.sum(axis=1)
        # own type only (0), empty (1), mixed (2); then the fullest; then the lowest index
        klass = np.where(others[fits] > 0, 2, np.where(counts[fits, t] > 0, 0, 1))
        order = np.lexsort((fits, -used[fits], klass))
        return int(fits[order[0]])

    def _job_for(self, server: int) -> int:
        v = self.view
        heads = np.array([h for t in range(v.num_types) if (h := v.head_of_type(t)) >= 0], dtype=np.int64)
        if heads.size == 0:
            return -1
        heads = heads[v.fits_on(heads, server)]
        if heads.size == 0:
            return -1
        running = v.count_real[server]
        same = np.array([running[v.job_type(int(j))] > 0 for j in heads])
        if same.any():
            heads = heads[same]
        return int(heads.min())  # the oldest


class LargeVMReservation(BestFitAdmit):
    """``best-fit-admit`` that keeps ``k`` servers able to host the largest VM type (``autoscale-syn4``)."""

    description = "diagnostic: admit-all Best-Fit keeping k servers free enough for the largest VM"

    def __init__(self, k: int = 4, **params: Any):
        super().__init__(**params)
        self.k = int(k)

    def act(self, observation: Any) -> Command:
        v = self.view
        job = v.pending
        if job < 0:
            return Command.wait()
        s = v.select_server(self.server_rule, job, self.rng)
        if s < 0:
            return Command.reject()
        demand = v.demand(job)
        largest = v.types.demand.max(axis=0)  # the largest demand of any type, per resource
        if np.all(demand >= largest):
            return Command.admit(s)
        free = v.free()
        can_host = np.all(free >= largest, axis=1)
        if can_host[s] and not np.all(free[s] - demand >= largest) and can_host.sum() <= self.k:
            return Command.reject()
        return Command.admit(s)


class PriorityQueueBestFit(PriorityQueue):
    """``pq`` that starts each job on the machine it fills most (``mris-poisson``)."""

    description = "diagnostic: PRIORITY-QUEUE (WSJF), each job on its Best-Fit machine"

    def machine_for(self, job: int, fits: np.ndarray) -> int:
        return tightest_by_norm(self.view.load, self.jobs.dem_abs[job], self.limit, self.capacity)


class PriorityQueuePower(PriorityQueue):
    """``pq`` sorted by ``p_j ** exponent / w_j`` instead of WSJF's ``p_j / w_j`` (``mris-poisson``)."""

    description = "diagnostic: PRIORITY-QUEUE sorted by p ** exponent / w, first fit"

    def __init__(self, exponent: float = 0.8, **params: Any):
        super().__init__(**params)
        self.exponent = float(exponent)

    def order(self, cand: np.ndarray) -> np.ndarray:
        c = self.jobs
        return priority_order("wsjf", cand, c.arrival, c.work**self.exponent, c.weight, c.u)


class FastestMachine(FastestEstimatedFit):
    """Greedy placement (``random-fit``'s) on the fitting machine fastest for the job's class (``lotes-hetero``).

    A machine freed by a completion takes the oldest job that fits it (the job rule), as in every
    :class:`GreedyAgent`; the speed chooses the machine wherever a job is placed.  The true speeds
    (an oracle's): :class:`FastestEstimatedFit` is the same rule on the speeds estimated from history.
    """

    description = "diagnostic: each job on the fitting machine with the highest speed for its class"

    def speeds(self) -> np.ndarray:
        return self.view.speed  # the instance's speeds: the same in every episode


def _random_fit(**params: Any) -> Any:
    return make_agent("random-fit", **params)


#: (task, the name it is reported under, factory, parameters)
RULES = [
    ("rms-trap", "type-segregation", TypeSegregation, {}),
    ("autoscale-syn4", "large-vm-reservation", LargeVMReservation, {"k": 4}),
    ("mris-poisson", "pq-best-fit-machine", PriorityQueueBestFit, {}),
    ("mris-poisson", "pq p^0.8/w", PriorityQueuePower, {"exponent": 0.8}),
    ("lotes-hetero", "random-fit scan=1", _random_fit, {"scan": 1}),
    ("lotes-hetero", "random-fit scan=8", _random_fit, {"scan": 8}),
    ("lotes-hetero", "random-fit scan=64", _random_fit, {"scan": 64}),
    ("lotes-hetero", "fastest-machine scan=64", FastestMachine, {"scan": 64}),
    ("lotes-hetero", "fastest-machine", FastestMachine, {}),
    ("lotes-hetero", "fastest-estimated scan=32", FastestEstimatedFit, {"scan": 32}),
    ("lotes-hetero", "fastest-estimated", FastestEstimatedFit, {}),
]


def print_rows(rules: list[tuple[str, str, Any, dict[str, Any]]], seeds: int) -> None:
    """Print the Markdown table of ``rules`` (task, name, factory, parameters): each rule's mean score,
    normalized score and paired difference against the task's best non-oracle baseline, on the first
    ``seeds`` reference seeds; each rule is registered for its own evaluation only."""
    print("| task | rule | score | normalized | paired Δ vs best non-oracle | best non-oracle |")
    print("|---|---|---|---|---|---|")
    for task, name, cls, params in rules:
        register_agent(name, lambda cls=cls, params=params, **p: cls(**params, **p))
        try:
            out = evaluate([name], [task], seeds=seeds, workers=1)
        finally:  # registered for this evaluation only: a diagnostic, not a baseline of the registry
            AGENTS.pop(name, None)
        entry = out["tasks"][task]
        r = entry["runs"][name]
        print(
            f"| `{task}` | {name} | {r['mean']:.4g} | {r['normalized']:.3f} | "
            f"{r['paired_vs_best']:+.3g} ± {r['paired_vs_best_ci95']:.2g} | `{entry['best']}` {entry['best_score']:.4g} |"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30, help="the first N reference evaluation seeds")
    args = ap.parse_args(argv)
    print_rows(RULES, args.seeds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
