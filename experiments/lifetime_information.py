"""What the duration oracles know, and whether a policy could learn it (``azure-vms``, ``bfjs-uniform``).

    CLUSTERGYM_TRACES=DIR python experiments/lifetime_information.py [--seeds 30] [--windows 40]

The oracles ``bf-exec`` and ``pq`` (SJF) read each job's duration -- on ``azure-vms`` a VM's lifetime --
which the observation lacks.  A policy sees the job's type (``azure-vms``: the VM's flavour, i.e. its
vCPU and memory) and every completion of the episode so far, so the lifetimes it could learn are the
flavours' ("service-time estimates from history").  Two measurements say whether that is worth learning:

1. **On the trace** (``azure-vms``'s split, the VMs from day 2 on, the six kept flavours): the share of
   the variance of log lifetime the flavour explains (eta squared), and inside episodes -- thinned
   24-hour windows as the task draws them -- the Spearman correlation between each VM's lifetime and
   the mean log lifetime of its flavour's VMs completed before it arrived (when at least 3 have),
   against the same correlation for its vCPU (what ``pq-sdf`` sorts by).  The batch (the VMs a
   deployment created together; not observable, and thinning by 100 leaves few batch-mates in an
   episode) is shown for scale.
2. **Rules on the suite's validation seeds** (each row against the task's best non-oracle baseline,
   as ``clustergym benchmark``; not registered, diagnostics only):

   * ``flavour-estimated SJF`` (non-oracle): the MRIS paper's PRIORITY-QUEUE (Sec. 4, first fit) with
     the queue sorted by the flavour's mean lifetime estimated from the episode's completions so far
     (the censored exponential estimate, exposure over completions pooled over the hosts, from
     :class:`~clustergym.core.estimates.SpeedEstimate`'s counts, one pseudo-observation at the pooled
     mean of all flavours), ties by size (``pq-sdf``'s key), then arrival;
   * ``flavour-mean SJF`` and ``flavour-mean SVF``: the same with each flavour's true mean lifetime
     over the whole trace split (the best any flavour-level estimate could know; SVF: mean x size);
   * ``bf-exec, flavour means``: ``bf-exec`` reading its flavour's true mean instead of each VM's
     lifetime;
   * on ``bfjs-uniform`` (geometric service, the same law for every job, BF-J/S Sec. VII-A):
     ``bf-exec, i.i.d. durations`` and ``pq-sjf, i.i.d. durations``: the oracles reading durations
     drawn from the task's own law, independent of the job's: what they gain from the law alone, which
     is all that history can teach when service is memoryless;
   * and what is left without durations on ``bfjs-uniform``, packing orders with the Best-Fit machine
     (``bf-exec``'s, :func:`~clustergym.baselines.mris.bf_exec.tightest_by_norm`): PRIORITY-QUEUE scans
     sorted ``largest first``, or ``smallest first`` with aging (the key ``size - aging x wait /
     mean service``: 0 is smallest first, larger values move toward FIFO).
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from clustergym.baselines.mris.bf_exec import BFExec, tightest_by_norm
from clustergym.baselines.mris.mris import JobCache
from clustergym.baselines.mris.priority_queue import PriorityQueue
from clustergym.core.cluster import score_ranks
from clustergym.core.estimates import SpeedEstimate
from clustergym.suite import task


def flavour_means(scenario: Any) -> np.ndarray:
    """``(J,)`` each job type's mean duration (time units) over the scenario's whole replayed table."""
    tab = scenario.source.table
    typ = np.asarray(tab.type, dtype=np.int64)
    return np.bincount(typ, weights=tab.work) / np.bincount(typ)


class FlavourSJF(PriorityQueue):
    """PRIORITY-QUEUE sorted by the job type's mean duration (``estimated`` from the episode, or the
    table's ``true`` means), times the size with ``volume``; ties by size, then arrival, then id."""

    description = "diagnostic: PRIORITY-QUEUE sorted by the type's mean duration, first fit"

    def __init__(self, means: str = "estimated", volume: bool = False, prior: float = 1.0, **params: Any):
        super().__init__(key="sdf", **params)
        self.means, self.volume, self.prior = means, bool(volume), float(prior)

    @property
    def needs_durations(self) -> bool:  # type: ignore[override]
        return False

    def reset(self, context: Any, seed: int | None = None) -> None:
        super().reset(context, seed)
        self._estimate = SpeedEstimate(self.view._sim)
        self._true = flavour_means(self.context.scenario) if self.means == "true" else None

    def type_means(self) -> np.ndarray:
        """``(J,)`` the mean duration of each type the rule sorts by."""
        if self._true is not None:
            return self._true
        n, exposure = self._estimate.counts()
        nt, et = n.sum(axis=0), exposure.sum(axis=0)
        pooled = et.sum() / nt.sum() if nt.sum() > 0 else 1.0
        return (et + self.prior * pooled) / (nt + self.prior)

    def order(self, cand: np.ndarray) -> np.ndarray:
        c = self.jobs
        m = self.type_means()[np.array([self.view.job_type(int(j)) for j in cand], dtype=np.int64)]
        key = m * c.u[cand] if self.volume else m
        return cand[np.lexsort((cand, c.arrival[cand], score_ranks(c.u[cand]), score_ranks(key)))]


class _FilledDurations(JobCache):
    """The job cache of an oracle agent with each job's duration replaced by ``fill(job)``."""

    def __init__(self, view: Any, scale: np.ndarray, fill: Any):
        super().__init__(view, scale, durations=False)
        self.fill = fill

    def ensure(self, ids: Any) -> None:
        a = self.n
        super().ensure(ids)
        if self.n > a:
            self.work[a : self.n] = [self.fill(j) for j in range(a, self.n)]
            self._derive(a, self.n)


def blind(base: type) -> type:
    """``base`` (an oracle reading durations) reading ``durations="flavour"`` (its type's true mean) or
    ``"iid"`` (a draw from the task's geometric law, ``params.mean_service``) instead."""

    class Blind(base):  # type: ignore[misc, valid-type]
        def __init__(self, durations: str = "iid", **params: Any):
            super().__init__(**params)
            self.durations = durations

        def reset(self, context: Any, seed: int | None = None) -> None:
            super().reset(context, seed)
            sc = self.context.scenario
            if self.durations == "flavour":
                means = flavour_means(sc)
                fill = lambda j: float(means[self.view.job_type(j)])  # noqa: E731
            else:
                draws = np.random.default_rng(None if seed is None else seed + 7)
                p = 1.0 / float(sc.params["mean_service"])
                fill = lambda j: float(draws.geometric(p))  # noqa: E731
            self.jobs = _FilledDurations(self.view, self.capacity[0], fill)

    Blind.__name__ = f"Blind{base.__name__}"
    return Blind


class SizeOrderBestFit(PriorityQueue):
    """PRIORITY-QUEUE on Best-Fit machines, sorted by size: ``largest`` first, or smallest first with
    ``aging`` (key ``u - aging * wait / mean_service``, ``params.mean_service`` of the task); ties by
    arrival, then id.  Reads no durations."""

    description = "diagnostic: PRIORITY-QUEUE sorted by size (largest first, or smallest first with aging), best fit"

    def __init__(self, largest: bool = False, aging: float = 0.0, **params: Any):
        super().__init__(key="sdf", **params)
        self.largest, self.aging = bool(largest), float(aging)

    def size_key(self, cand: np.ndarray) -> np.ndarray:
        """``(n,)`` the sort key of the job ids ``cand`` now (smaller first)."""
        c = self.jobs
        if self.largest:
            return -c.u[cand]
        mean = float(self.context.scenario.params["mean_service"])
        return c.u[cand] - self.aging * (self.view.now - c.arrival[cand]) / mean

    def order(self, cand: np.ndarray) -> np.ndarray:
        return cand[np.lexsort((cand, self.jobs.arrival[cand], score_ranks(self.size_key(cand))))]

    def machine_for(self, job: int, fits: np.ndarray) -> int:
        return tightest_by_norm(self.view.load, self.jobs.dem_abs[job], self.limit, self.capacity)


#: (task, the name it is reported under, factory, parameters)
RULES = [
    ("azure-vms", "flavour-estimated SJF", FlavourSJF, {"means": "estimated"}),
    ("azure-vms", "flavour-mean SJF", FlavourSJF, {"means": "true"}),
    ("azure-vms", "flavour-mean SVF", FlavourSJF, {"means": "true", "volume": True}),
    ("azure-vms", "bf-exec, flavour means", blind(BFExec), {"durations": "flavour"}),
    ("bfjs-uniform", "bf-exec, i.i.d. durations", blind(BFExec), {"durations": "iid"}),
    ("bfjs-uniform", "pq-sjf, i.i.d. durations", blind(PriorityQueue), {"durations": "iid", "key": "sjf"}),
    ("bfjs-uniform", "largest first, best fit", SizeOrderBestFit, {"largest": True}),
    ("bfjs-uniform", "smallest first, best fit", SizeOrderBestFit, {}),
    ("bfjs-uniform", "smallest first aged 0.2, best fit", SizeOrderBestFit, {"aging": 0.2}),
    ("bfjs-uniform", "smallest first aged 1, best fit", SizeOrderBestFit, {"aging": 1.0}),
]


def trace_correlations(windows: int = 40, seed: int = 0) -> dict[str, float]:
    """Measurement 1 (module docstring) on ``azure-vms``'s trace: eta squared of log lifetime on the
    flavour and on the batch, and the mean within-window Spearman correlations."""
    from scipy import stats

    sc = task("azure-vms").scenario()
    from clustergym.traces.azure import load_azure_v1

    j = load_azure_v1(split=sc.params["split"], arrival="spread").jobs
    j = j[j["flavor"].isin(sc.params["flavors"]) & (j["arrival"] >= sc.params["start_day"] * 86400.0)]
    logd = np.log(j["duration"].to_numpy())

    def eta2(by: str) -> float:
        m = j.assign(ld=logd).groupby(by)["ld"].transform("mean").to_numpy()
        return float(1 - ((logd - m) ** 2).sum() / ((logd - logd.mean()) ** 2).sum())

    rng, rows = np.random.default_rng(seed), []
    arrival = j["arrival"].to_numpy()
    for _ in range(windows):
        s0 = rng.uniform(arrival.min(), arrival.max() - 86400.0)
        w = j[(arrival >= s0) & (arrival < s0 + 86400.0)].iloc[int(rng.integers(100)) :: 100]
        arr, dur, fl = w["arrival"].to_numpy(), w["duration"].to_numpy(), w["flavor"].to_numpy()
        est = np.full(len(w), np.nan)
        for i in range(len(w)):
            seen = (arr + dur < arr[i]) & (fl == fl[i])
            if seen.sum() >= 3:
                est[i] = np.log(dur[seen]).mean()
        ok = ~np.isnan(est)
        rows.append((stats.spearmanr(est[ok], dur[ok])[0], stats.spearmanr(w["vcpu"].to_numpy()[ok], dur[ok])[0]))
    r = np.array(rows)
    return {
        "vms": float(len(j)),
        "eta2_flavour": eta2("flavor"),
        "eta2_batch": eta2("batch"),
        "spearman_history": float(np.nanmean(r[:, 0])),
        "spearman_history_sd": float(np.nanstd(r[:, 0])),
        "spearman_vcpu": float(np.nanmean(r[:, 1])),
    }


def headroom_rules() -> Any:
    """``experiments/headroom_rules.py`` (its table printer), loaded from beside this script."""
    path = Path(__file__).resolve().with_name("headroom_rules.py")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30, help="the first N validation seeds")
    ap.add_argument("--windows", type=int, default=40, help="24-hour windows for the within-episode correlation")
    ap.add_argument("--tasks", default="azure-vms,bfjs-uniform", help="comma-separated: the rules' tasks to run")
    args = ap.parse_args(argv)
    tasks = args.tasks.split(",")
    if "azure-vms" in tasks:
        c = trace_correlations(args.windows)
        print(
            f"azure-vms trace, {c['vms']:.0f} VMs: eta^2 of log lifetime on the flavour {c['eta2_flavour']:.3f}, on the "
            f"batch {c['eta2_batch']:.3f}; within {args.windows} thinned day windows, Spearman(lifetime, flavour mean "
            f"of the completions seen) {c['spearman_history']:.3f} (sd {c['spearman_history_sd']:.3f}), "
            f"Spearman(lifetime, vCPU) {c['spearman_vcpu']:.3f}\n"
        )
    headroom_rules().print_rows([r for r in RULES if r[0] in tasks], args.seeds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
