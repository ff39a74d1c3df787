"""The report of a benchmark: the statistics a reviewer expects, with intervals that include every source of noise.

:func:`report` turns the episodes of :func:`clustergym.suite.scoring.evaluate` (its ``rows``) and the
reference of the same split into one JSON-ready document, the ``report`` of ``clustergym benchmark
--json`` (and of ``summary.json`` under ``--out``).  The specs benchmarked together are the runs
(training seeds) of one method.  For each task:

- the normalized score (mean over runs), its IQM, median and optimality gap over runs
  (Agarwal et al., "Deep reinforcement learning at the edge of the statistical precipice",
  NeurIPS 2021, Sec. 4-5: the IQM, the optimality gap ``1 - mean(min(x, 1))`` against the best
  non-oracle baseline);
- the paired difference with the best non-oracle baseline on the same seeds (score units, and
  normalized) and the verdict it supports: ``above``, ``below``, or ``at <baseline>'s level`` when
  the interval holds 0;
- the probability of improvement over every reference agent: the fraction of episodes (run, seed)
  in which the method beats the agent on the same seed (common random numbers), a tie a half;
- the headroom: the best oracle's normalized score and, where the paper gives one, a bound
  (:func:`task_bound`), with what is left between the method and each;
- each run on its own (one run: the interval over episodes).

Over tasks: IQM, mean, median and optimality gap, the probability of improvement over each task's
best baseline, best oracle and random, and the performance profile (the fraction of episodes whose
normalized score exceeds ``tau``, tasks weighing the same).  Every interval is the percentile
interval of :func:`clustergym.suite.intervals.bootstrap_task`'s two-level bootstrap (runs, and the
evaluation seeds shared by every run and baseline), stratified over tasks.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clustergym.suite.aggregate import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from clustergym.suite.intervals import TaskDraws, aggregate_draws, bootstrap_task, interval

__all__ = ["PROFILE_POINTS", "method_report", "refresh", "report", "task_bound", "verdict"]

#: thresholds of the performance profile
PROFILE_POINTS = 41
#: the key of a per-seed bound among the bootstrap's baselines
_BOUND = "bound (per seed)"


def verdict(paired: dict[str, float], baseline: str) -> str:
    """``above <baseline>``, ``below <baseline>`` or ``at <baseline>'s level`` (the paired interval holds 0)."""
    if math.isfinite(paired["low"]) and paired["low"] > 0:
        return f"above {baseline}"
    if math.isfinite(paired["high"]) and paired["high"] < 0:
        return f"below {baseline}"
    return f"at {baseline}'s level"


def task_bound(name: str, seeds: Sequence[int] | None = None) -> dict[str, Any] | None:
    """The paper's bound on a task's score, if its paper has one: ``{"name", "score", "source"}``, and
    ``"scores"`` (one per seed of ``seeds``, in order) when the bound is computed seed by seed.

    A paper with a bound on its objective gives it as ``score_bound(scenario, seeds)`` in its theory
    module (``clustergym.theory.<paper>``): the auto-scaling paper's LP (3.2) with finite-size caps
    ``U*_L`` times the servers (:func:`clustergym.theory.autoscale.score_bound`, one number), MRIS's
    no-wait bound on the weighted flow time (:func:`clustergym.theory.mris.score_bound`, per seed).
    The other papers' modules have none, so their tasks report only the best oracle.
    """
    import importlib

    from clustergym.suite.tasks import task as get_task

    t = get_task(name)
    try:
        module = importlib.import_module(f"clustergym.theory.{t.paper}")
    except ModuleNotFoundError:
        return None
    bound = getattr(module, "score_bound", None)
    return None if bound is None else bound(t.scenario(), seeds)


def _iv(draws: np.ndarray, level: float) -> dict[str, float]:
    return interval(draws, level)


def _task_scores(result: dict[str, Any], name: str, entry: dict[str, Any], ref_seeds: Sequence[int]):
    """``(specs, (R, n) scores, {agent: (n,) scores}, n)`` on the seeds the result and reference share."""
    by_spec: dict[str, dict[int, float]] = {}
    for r in result["rows"]:
        if r["task"] == name:
            by_spec.setdefault(r["agent"], {})[int(r["seed"])] = float(r["score"])
    seeds = [s for s in result["seeds"] if s in set(ref_seeds)]
    pos = {s: i for i, s in enumerate(ref_seeds)}
    specs = [s for s in result["specs"] if s in by_spec and all(x in by_spec[s] for x in seeds)]
    runs = np.array([[by_spec[s][x] for x in seeds] for s in specs], dtype=np.float64)
    base = {a: np.array([v["scores"][pos[x]] for x in seeds], dtype=np.float64) for a, v in entry["agents"].items()}
    return specs, runs, base, len(seeds)


def _headroom(d: TaskDraws, entry: dict[str, Any], bound: dict[str, Any] | None, level: float) -> dict[str, Any]:
    method = d.normalized.mean(axis=1)
    lo, hi = d.baselines["random"], d.baselines[entry["best"]]
    out: dict[str, Any] = {"best_oracle": entry.get("best_oracle"), "bound": None}
    if entry.get("best_oracle"):
        orc = (d.baselines[entry["best_oracle"]] - lo) / (hi - lo)
        out["oracle_normalized"] = _iv(orc, level)
        out["left_to_oracle"] = _iv(orc - method, level)
    if bound is not None:
        # a bound given seed by seed is resampled with the seeds (a baseline of the bootstrap)
        score = d.baselines.get(_BOUND, bound["score"])
        b = (score - lo) / (hi - lo)
        out["bound"] = {
            **{k: v for k, v in bound.items() if k != "scores"},
            "normalized": _iv(b, level),
            "left_to_bound": _iv(b - method, level),
        }
    return out


def _task_report(
    name: str, result: dict[str, Any], reference: dict[str, Any], level: float, resamples: int, seed: int
) -> tuple[dict[str, Any], TaskDraws] | None:
    bound = task_bound(name, [s for s in result["seeds"] if s in set(reference["seeds"])])
    return method_report(name, result, reference["tasks"][name], reference["seeds"], bound, level, resamples, seed)


def method_report(
    name: str,
    result: dict[str, Any],
    entry: dict[str, Any],
    ref_seeds: Sequence[int],
    bound: dict[str, Any] | None,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[dict[str, Any], TaskDraws] | None:
    """One task's report of a method (the result's specs, its runs) against the task's reference
    ``entry`` on the seeds ``ref_seeds`` (in the order of the entry's per-seed scores), with ``bound``
    (:func:`task_bound`'s document, or ``None``) as its headroom; ``None`` when no spec has every
    shared seed or fewer than two seeds are shared.  The generalization track calls it per test point."""
    specs, runs, base, n = _task_scores(result, name, entry, ref_seeds)
    if not specs or n < 2:
        return None
    best = entry["best"]
    if bound is not None and "scores" in bound:
        base[_BOUND] = np.asarray(bound["scores"], dtype=np.float64)
    rng = np.random.default_rng([seed, *name.encode()])
    d = bootstrap_task(runs, base, best=best, resamples=resamples, rng=rng, keep_episodes=True)
    scale = entry["best_score"] - entry["random"]
    paired = _iv(d.paired, level)
    stats = aggregate_draws([d])
    per_run = {}
    for i, spec in enumerate(specs):
        one = bootstrap_task(runs[i : i + 1], base, best=best, resamples=resamples, rng=rng)
        p = _iv(one.paired, level)
        per_run[spec] = {
            "normalized": _iv(one.normalized[:, 0], level),
            "paired_vs_best": p,
            "verdict": verdict(p, best),
        }
    out = {
        "id": entry["id"],
        "metric": entry["metric"],
        "seeds": n,
        "runs": specs,
        "best": best,
        "score": _iv(d.run_scores.mean(axis=1), level),
        "normalized": _iv(d.normalized.mean(axis=1), level),
        **{k: _iv(v, level) for k, v in stats.items() if k != "mean"},
        "paired_vs_best": {
            **paired,
            "baseline": best,
            "units": ("−" if entry.get("sign", 1) < 0 else "") + entry["metric"],
        },
        "paired_vs_best_normalized": _iv(d.paired / scale, level),
        "verdict": verdict(paired, best),
        "probability_of_improvement": {
            a: {**_iv(w, level), "oracle": bool(entry["agents"][a]["oracle"])} for a, w in d.wins.items() if a != _BOUND
        },
        "headroom": _headroom(d, entry, bound, level),
        "per_run": per_run,
    }
    return out, d


def _profile(draws: Sequence[TaskDraws], level: float) -> dict[str, Any]:
    episodes = [d.episodes_normalized for d in draws if d.episodes_normalized is not None]
    point = np.concatenate([e[0].ravel() for e in episodes])
    point = point[np.isfinite(point)]
    lo, hi = min(0.0, float(point.min(initial=0.0))), max(1.0, float(point.max(initial=1.0)))
    taus = np.linspace(lo, hi, PROFILE_POINTS)
    frac = np.mean([np.mean(e[..., None] > taus, axis=(1, 2)) for e in episodes], axis=0)
    ivs = [_iv(frac[:, k], level) for k in range(taus.size)]
    return {
        "taus": taus.tolist(),
        "fraction": [iv["value"] for iv in ivs],
        "low": [iv["low"] for iv in ivs],
        "high": [iv["high"] for iv in ivs],
    }


def report(
    result: dict[str, Any],
    reference: dict[str, Any] | None = None,
    *,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, Any]:
    """The report of a benchmark (see the module docstring).

    Args:
        result: :func:`clustergym.suite.scoring.evaluate`'s document (``split``, ``seeds``, ``specs``,
            ``rows``); its specs are the runs of one method.
        reference: the reference of the result's split (default: the shipped one).
        level: the intervals' confidence level; resamples, seed: the bootstrap's.

    Returns:
        ``{"split", "suite_version", "level", "resamples", "runs", "tasks": {task: {...}},
        "aggregate": {...}, "performance_profile": {...}}``; every statistic is ``{"value", "low",
        "high"}``.  Tasks whose seeds the reference does not cover (fewer than two shared) are left out.
    """
    from clustergym.suite.reference import load_reference

    split = result.get("split", "validation")
    ref = reference if reference is not None else load_reference(split=split)
    if ref.get("split", "validation") != split:
        raise ValueError(f"the result is on the {split} split, the reference on the {ref.get('split')} split")
    out: dict[str, Any] = {
        "split": split,
        "suite_version": ref.get("suite_version"),
        "level": level,
        "resamples": resamples,
        "bootstrap": "two-level percentile bootstrap: runs and evaluation seeds (shared by runs and baselines), "
        "stratified over tasks",
        "runs": list(result["specs"]),
        "tasks": {},
    }
    draws: list[TaskDraws] = []
    roles: dict[str, list[np.ndarray]] = {"best baseline": [], "best oracle": [], "random": []}
    for name in result["tasks"]:
        one = _task_report(name, result, ref, level, resamples, seed)
        if one is None:
            continue
        out["tasks"][name], d = one
        draws.append(d)
        entry = ref["tasks"][name]
        for role, agent in (
            ("best baseline", entry["best"]),
            ("best oracle", entry.get("best_oracle")),
            ("random", "random"),
        ):
            if agent:
                roles[role].append(d.wins[agent])
    if draws:
        stats = aggregate_draws(draws)
        out["aggregate"] = {
            "tasks": len(draws),
            **{k: _iv(v, level) for k, v in stats.items()},
            "probability_of_improvement": {r: _iv(np.mean(w, axis=0), level) for r, w in roles.items() if w},
        }
        out["performance_profile"] = _profile(draws, level)
    return out


def refresh(path: str | Path) -> dict[str, Any]:
    """Recompute the ``report`` of a ``clustergym benchmark --json`` document from its ``rows`` and the
    shipped reference of its split (a document without ``split`` predates the splits: its seeds are
    the validation split's); write it back and return it."""
    from clustergym._json import jsonable

    p = Path(path)
    doc = json.loads(p.read_text())
    doc["report"] = report(doc)
    doc.setdefault("split", doc["report"]["split"])  # a document written before the splits: validation
    p.write_text(json.dumps(jsonable(doc), indent=1) + "\n")
    return doc


if __name__ == "__main__":  # python -m clustergym.suite.report FILE...: refresh the reports of benchmark documents
    for f in sys.argv[1:]:
        refresh(f)
        print(f"refreshed {f}")
