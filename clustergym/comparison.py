"""Compare agents on a scenario, a sweep or a suite task: everything ``clustergym compare`` does, from Python.

:func:`run_comparison` checks every input before anything runs (the scenario or suite task, each swept
value, the agents, ``"all"``, the reference, the run folder), plans the episodes (the same seeds for
every agent: common random numbers), runs them -- keeping each finished episode in the run folder when
one is given, so an interrupted or failed run continues with ``resume=`` -- and summarizes them with
95% confidence intervals, paired differences against the reference and, on the auto-scaling
scenarios, the LP upper bound.  It returns a :class:`Comparison`::

    from clustergym.comparison import run_comparison
    res = run_comparison("rms-trap", ["best-fit", "all"], seeds=3, out="runs/trap")
    res.summary            # one row per agent (per swept value): means, CIs, paired differences
    run_comparison(resume="runs/trap")   # after Ctrl-C: only the missing episodes run

A run folder records the settings in the command line's words (``SCENARIO``, ``--agents``,
``--set``...), so ``clustergym compare --resume DIR`` continues a run started here and the reverse.
Errors name the command-line option they concern (``ConfigError.field``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clustergym.errors import ClusterGymError, ConfigError
from clustergym.keyvalue import parse_pairs, parse_value, split_prefix
from clustergym.validation import settings

if TYPE_CHECKING:
    import pandas as pd

    from clustergym.runner import Cell, RunFolder
    from clustergym.scenarios import Scenario
    from clustergym.suite.tasks import Task

__all__ = ["Comparison", "Reporter", "run_comparison", "settings_words", "with_warmup"]

#: the settings a run folder records, in the command line's words, and their defaults
_OPTIONS = ("SCENARIO", "--agents", "--seeds", "--set", "--horizon", "--sweep", "--reference", "--warmup", "--p-adjust")
DEFAULT_SEEDS = 5


@dataclass(frozen=True)
class Comparison:
    """What :func:`run_comparison` measured.

    ``summary`` has one row per agent (per swept value with a sweep): each metric's mean and 95% CI
    half-width (``<metric>_ci95``), the paired difference to the reference on the same seeds
    (``<metric>_diff``, ``_diff_ci95``, ``_diff_p``, ``_diff_p_adj``), ``unstable_runs``, and on the
    auto-scaling scenarios ``lp_bound_per_server`` and ``ratio_to_lp_bound``.  ``runs`` has one row per
    episode (agent, seed, every metric).  ``metric`` is the headline metric the agents are ranked on:
    the objective's headline, or a suite task's own metric.
    """

    scenario: str  #: the scenario's name (the first swept value's with a sweep)
    task: str | None  #: the suite task's id when the scenario was one, else None
    seeds: int  #: seeds 0..seeds-1, the same for every agent
    agents: list[str]  #: the compared agents, named ones first, then those "all" added
    reference: str  #: the agent paired differences are taken against
    metric: str
    p_adjust: str  #: holm, bh or none
    summary: pd.DataFrame
    runs: pd.DataFrame
    skipped: dict[str, str] = field(default_factory=dict)  #: agents "all" left out, and why
    sweep: str | None = None  #: the swept parameter
    values: list[Any] | None = None  #: its values
    out: Path | None = None  #: the run folder
    written: list[Path] = field(default_factory=list)  #: the tables and figures written to it

    def to_dict(self) -> dict[str, Any]:
        """The document ``clustergym compare --json`` prints (tables as lists of records)."""
        return {
            "scenario": self.scenario,
            "task": self.task,
            "seeds": list(range(self.seeds)),
            "agents": self.agents,
            "reference": self.reference,
            "out": str(self.out) if self.out is not None else None,
            "skipped": self.skipped,
            "sweep": self.sweep,
            "values": self.values if self.sweep else None,
            "metric": self.metric,
            "p_adjust": self.p_adjust,
            "summary": self.summary.to_dict("records"),
            "runs": self.runs.to_dict("records"),
        }


class Reporter:
    """What :func:`run_comparison` says while it runs; this one says nothing (override what you need)."""

    def note(self, message: str) -> None:
        """Before running: an agent "all" skipped, an output that needs an extra, what a resume keeps."""

    def start(self, total: int, kept: int) -> None:
        """Everything is checked: ``total`` episodes are planned, ``kept`` of them were kept earlier."""

    def episode(self, agent: str, seed: int) -> None:
        """An episode finished."""

    def failed(self, message: str) -> None:
        """An unexpected error stopped the run (it is raised next): what the run folder kept."""


def with_warmup(sparams: dict[str, Any], warmup: float | None) -> None:
    """Add the warm-up time ``warmup`` (``--warmup``) to the scenario parameters ``sparams`` (in place);
    a different ``warmup`` already there is an error."""
    if warmup is not None:
        if "warmup" in sparams and sparams["warmup"] != warmup:
            raise ConfigError("warmup", f"--warmup {warmup:g} and --set warmup={sparams['warmup']} disagree")
        sparams["warmup"] = warmup


def _word(v: Any) -> str:
    """A value as :func:`clustergym.keyvalue.parse_value` reads it back."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if not (isinstance(v, float) and math.isinf(v)) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_word(x) for x in v) + "]"
    text = str(v)
    return text if parse_value(text) == text and not any(c in text for c in ",[]'\"") else repr(text)


def settings_words(
    scenario: str | None,
    agents: str | Sequence[str] | None,
    *,
    seeds: int | None = None,
    params: Mapping[str, Any] | Sequence[str] | None = None,
    horizon: float | None = None,
    sweep: str | tuple[str, Sequence[Any]] | None = None,
    reference: str | None = None,
    warmup: float | None = None,
    p_adjust: str | None = None,
) -> dict[str, Any]:
    """The settings of a comparison in the command line's words (``None``: not given), as run folders
    record them: ``--agents`` a comma-separated string, ``--set`` a list of ``key=value`` texts,
    ``--sweep`` ``key=v1,v2,...``.  Values are written so that :mod:`clustergym.keyvalue` reads them back."""
    if isinstance(params, Mapping):
        params = [f"{k}={_word(v)}" for k, v in params.items()]
    if isinstance(sweep, tuple):
        sweep = f"{sweep[0]}=" + ",".join(_word(v) for v in sweep[1])
    words = [scenario, agents if agents is None or isinstance(agents, str) else ",".join(agents), seeds]
    words += [list(params) or None if params is not None else None, horizon, sweep, reference, warmup, p_adjust]
    return dict(zip(_OPTIONS, words))


def _restore(
    given: dict[str, Any], resume: str | Path, out: str | Path | None, overwrite: bool
) -> tuple[RunFolder, dict[str, Any]]:
    """The run folder ``resume`` and the settings it recorded; a setting also given must be the same."""
    from clustergym.runner import RunFolder

    if out is not None and Path(out).resolve() != Path(resume).resolve():
        raise ConfigError("--out", f"--resume {resume} continues that folder; --out {out} is another one")
    if overwrite:
        raise ConfigError("--overwrite", "--resume continues a run; --overwrite starts a new one: choose one")
    folder = RunFolder.resume(resume)
    recorded = folder.config["compare"]["argv"]
    for opt, value in given.items():
        if value is not None and _read(opt, value) != _read(opt, recorded.get(opt)):
            raise ConfigError(
                opt,
                f"{resume} was run with {opt} {recorded.get(opt)!r}; --resume continues it "
                f"with its own settings (drop {opt}, or start a new run with --out)",
            )
    return folder, {opt: recorded.get(opt) for opt in _OPTIONS}


def _read(opt: str, words: Any) -> Any:
    """A recorded setting, read (so ``zeta=0.90`` and ``zeta=0.9`` are the same setting)."""
    if words is None:
        return None
    if opt == "--set":
        return parse_pairs(words)
    if opt == "--agents":
        return [a.strip() for a in str(words).split(",") if a.strip()]
    if opt == "--sweep":
        param, _, raw = str(words).partition("=")
        return param, [parse_value(v) for v in raw.split(",") if v.strip()]
    return words


def _suite_task(scenario: str, given: dict[str, Any]) -> Task | None:
    """The suite task ``scenario`` names (not a preset nor a file), whose scenario and window are fixed."""
    from clustergym.scenarios import PRESETS
    from clustergym.suite import find_task

    task = find_task(scenario) if scenario not in PRESETS and not Path(scenario).exists() else None
    if task is not None:
        for opt in ("--set", "--sweep", "--horizon", "--warmup"):
            if given[opt] is not None and given[opt] != []:
                raise ConfigError(
                    opt,
                    f"suite task {task.name!r} fixes its scenario, parameters and window; {opt} cannot "
                    f"be given (compare on the preset {task.preset!r} to change them)",
                )
    return task


def _sweep(text: str | None, sparams: dict[str, Any]) -> tuple[str | None, list[Any]]:
    """``key=v1,v2,...`` -> the swept parameter and its values (``None, [None]`` without a sweep)."""
    if text is None:
        return None, [None]
    param, _, raw = text.partition("=")
    values = [parse_value(v) for v in raw.split(",") if v.strip()]
    if not param or not values:
        raise ConfigError("--sweep", f"{text!r}: expected key=v1,v2,...")
    if len(set(map(repr, values))) < len(values):
        raise ConfigError("--sweep", f"{text!r}: a value is listed twice")
    if param in sparams:
        raise ConfigError("--sweep", f"{param} is also given with --set: sweep it or set it, not both")
    return param, values


def _scenarios(
    name: str, sparams: dict[str, Any], horizon: float | None, param: str | None, values: list[Any]
) -> list[Scenario]:
    """The scenario at each swept value (one without a sweep), each checked for its size."""
    from clustergym.scenarios import resolve_scenario

    scenarios = []
    for v in values:
        try:
            sc_v = resolve_scenario(name, **sparams, **({param: v} if param else {}))
            scenarios.append(sc_v.with_horizon(horizon).check_run_size())
        except ClusterGymError as e:
            if param is None:
                raise
            raise ConfigError("--sweep", f"{param}={v}: {e}") from None
    return scenarios


def _agents(
    text: str, scenarios: list[Scenario], param: str | None, values: list[Any], task: Task | None = None
) -> tuple[list[str], dict[str, str]]:
    """The agents to compare (named ones, then every other one "all" adds) and those "all" skipped."""
    from clustergym.runner import compatible_agents

    requested = [a.strip() for a in text.split(",") if a.strip()]
    if not requested:
        raise ConfigError("--agents", f"{text!r}: expected agent names, model paths or 'all'")
    twice = sorted({a for a in requested if requested.count(a) > 1})
    if twice:
        raise ConfigError(
            "--agents",
            f"{', '.join(twice)} listed twice: each agent is compared once (the runs "
            "of a name listed twice would be pooled into one row)",
        )
    named, skipped = [a for a in requested if a != "all"], {}
    for sc_v, v in zip(scenarios, values):
        names, bad = _runnable(named, sc_v, task)
        if bad:
            where = f" at {param}={v}" if param else ""
            raise ClusterGymError("; ".join(f"{a}: {why}" for a, why in bad.items()) + where)
    if "all" in requested:  # every other registered agent that runs here, after the named ones
        others, skipped = compatible_agents(scenarios[0])
        names += [a for a in others if a not in names]
        if not others:
            raise ClusterGymError(f"--agents all: no registered agent can run on {scenarios[0].name!r}")
    return names, skipped


def _runnable(named: list[str], sc: Scenario, task: Task | None) -> tuple[list[str], dict[str, str]]:
    """The named agents that run, and why the others do not: on a suite task, in the task's own
    environment (its action mode and observation: a model trained on the task is checked there)."""
    if task is None:
        from clustergym.runner import compatible_agents

        return compatible_agents(sc, named)
    from clustergym.suite.scoring import check_agent

    bad = {a: why for a in named if (why := check_agent(a, task)) is not None}
    return [a for a in named if a not in bad], bad


@dataclass
class _Plan:
    """A checked comparison, ready to run."""

    given: dict[str, Any]
    scenario: Scenario
    task: Task | None
    names: list[str]
    skipped: dict[str, str]
    reference: str
    seeds: int
    param: str | None
    values: list[Any]
    cells: list[Cell]
    p_adjust: str


def _plan(given: dict[str, Any]) -> _Plan:
    """Check every setting (in the command line's words) and plan the episodes."""
    from clustergym.runner import plan
    from clustergym.runner.stats import P_ADJUST_METHODS
    from clustergym.suite.reference import task_cells

    scenario, agents = given["SCENARIO"], given["--agents"]
    if scenario is None or agents is None:
        raise ConfigError(
            "SCENARIO" if scenario is None else "--agents",
            "a scenario and --agents are required (or --resume DIR of an earlier run)",
        )
    seeds = DEFAULT_SEEDS if given["--seeds"] is None else given["--seeds"]
    p_adjust = settings.choice(
        "holm" if given["--p-adjust"] is None else given["--p-adjust"], "--p-adjust", P_ADJUST_METHODS
    )
    task = _suite_task(scenario, given)
    sparams, aparams = split_prefix(parse_pairs(given["--set"] or []), "agent.")
    horizon = given["--horizon"]
    if task is not None:
        sparams, horizon = dict(task.params), task.horizon
    with_warmup(sparams, given["--warmup"])
    if aparams:
        raise ConfigError("--set", "compare takes scenario parameters only (agent.* is for `run`)")
    settings.number(seeds, "--seeds", lo=1, integer=True)
    param, values = _sweep(given["--sweep"], sparams)
    scenarios = _scenarios(task.preset if task is not None else scenario, sparams, horizon, param, values)
    names, skipped = _agents(agents, scenarios, param, values, task)
    reference = given["--reference"] or names[0]
    if reference not in names:
        raise ClusterGymError(f"--reference {reference!r} is not among the compared agents {names}")
    if task is not None:  # the task's episodes: its env id (start, window), scored by the task probe
        cells = task_cells(task, names, range(seeds))
    else:
        sweep = (param, values) if param else None
        cells = plan(scenario, names, seeds=range(seeds), horizon=horizon, params=sparams, sweep=sweep)
    return _Plan(given, scenarios[0], task, names, skipped, reference, seeds, param, values, cells, p_adjust)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("clustergym")
    except PackageNotFoundError:
        return "0+unknown"


def _run(
    p: _Plan,
    folder: RunFolder | None,
    workers: int,
    ray: str | None,
    report: Reporter,
) -> list[dict[str, Any]]:
    """Run the planned episodes, keeping each finished one in ``folder``; the rows in plan order
    (:func:`clustergym.runner.journal.run_kept`: Ctrl-C and failures keep the work done)."""
    from clustergym.runner.journal import run_kept

    try:
        return run_kept(p.cells, folder, "compare", workers=workers, ray=ray, progress=report.episode)
    except Exception as e:  # a bug, not a bad input: say what was kept before the traceback
        if folder is not None and not isinstance(e, ClusterGymError):
            report.failed(f"{len(folder.rows)} of {len(p.cells)} episodes kept in {folder.path}")
        raise


def _summarize(p: _Plan, rows: list[dict[str, Any]], folder: RunFolder | None) -> Comparison:
    """The tables of the finished episodes (written to ``folder`` when there is one)."""
    import pandas as pd

    from clustergym.core.objectives import objective
    from clustergym.runner import headline_metric, summarize, write_results
    from clustergym.runner.metric_info import metric_info
    from clustergym.runner.stats import SUMMARY_METRICS
    from clustergym.theory.autoscale import add_lp_bound

    sc, param = p.scenario, p.param
    runs = pd.DataFrame(rows)
    # a task's episodes share its window, so agents are compared on the task's own metric (its
    # score's, as `clustergym benchmark`); an episode run to the end of its jobs has the objective's headline
    metric = objective(sc.objective).metric if p.task is not None else headline_metric(sc.objective)
    metrics = tuple(dict.fromkeys((*SUMMARY_METRICS, metric)))
    summary = summarize(runs, metrics, reference=p.reference, by=param, p_adjust=p.p_adjust)
    if param is None:
        add_lp_bound(summary, sc)
    written: list[Path] = []
    if folder is not None:
        title = f"{sc.name}: {metric_info(metric).label.lower()} (mean ± 95% CI, {p.seeds} seeds)"
        written = write_results(folder.path, runs, summary, metric=metric, param=param, title=title)
        folder.add_files([q.name for q in written])
        folder.set_status("complete")
    return Comparison(
        scenario=sc.name,
        task=p.task.id if p.task is not None else None,
        seeds=p.seeds,
        agents=p.names,
        reference=p.reference,
        metric=metric,
        p_adjust=p.p_adjust,
        summary=summary,
        runs=runs,
        skipped=p.skipped,
        sweep=param,
        values=p.values if param else None,
        out=folder.path if folder is not None else None,
        written=written,
    )


def run_comparison(
    scenario: str | None = None,
    agents: str | Sequence[str] | None = None,
    *,
    seeds: int | None = None,
    params: Mapping[str, Any] | Sequence[str] | None = None,
    horizon: float | None = None,
    sweep: str | tuple[str, Sequence[Any]] | None = None,
    reference: str | None = None,
    warmup: float | None = None,
    p_adjust: str | None = None,
    workers: int | None = None,
    ray: str | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    resume: str | Path | None = None,
    report: Reporter | None = None,
) -> Comparison:
    """Compare ``agents`` on ``scenario`` over seeds ``0..seeds-1`` (default 5), the same for every agent.

    Args:
        scenario: a preset name, a scenario file (.yaml/.json) or a suite task (``rms-trap``,
            ``clustergym/mris-poisson-v1``: the task's episodes, scored on its metric; a preset of the
            same name wins).  A suite task fixes its parameters and window: ``params``, ``sweep``,
            ``horizon`` and ``warmup`` cannot be given with one.
        agents: agent names or model paths (a list, or one comma-separated string); ``"all"`` (alone or
            in the list) adds every other registered agent that can run on the scenario.
        params: scenario parameters (``{"zeta": 0.9}``, or ``["zeta=0.9"]`` as ``--set`` takes them).
        horizon: the simulated horizon (time units), overriding the scenario's.
        sweep: one parameter and its values, ``("zeta", [0.8, 0.9])`` or ``"zeta=0.8,0.9"``.
        reference: the agent paired differences are taken against (default: the first).
        warmup: warm-up deletion time (time units), the scenario parameter ``warmup``.
        p_adjust: correction of the paired tests' p-values: ``holm`` (default), ``bh`` or ``none``.
        workers: local worker processes (default: the available cores; 1 runs in this process).
        ray: run the episodes on a Ray cluster (``"auto"``, ``HOST:PORT`` or ``ray://HOST:PORT``).
        out: a new or empty folder: ``run.json`` and ``cells.jsonl`` (every episode as it finishes), then
            the tables and figures (``overwrite=True``: an earlier run's files are replaced).
        resume: continue the run in this folder with its own settings (a setting also given must be the
            same): only the missing episodes run, and the tables are those of an uninterrupted run.
        report: told the notes, the start, each finished episode (a progress bar) and an unexpected
            failure (:class:`Reporter`; default: nothing is said).

    Raises:
        ConfigError / ClusterGymError: a bad setting, named by its command-line option, before anything
            runs.  KeyboardInterrupt: its message says what was kept and how to continue.
    """
    from clustergym.runner import RunFolder, missing_outputs, worker_count

    workers = worker_count(workers, "--workers")
    words = dict(scenario=scenario, agents=agents, seeds=seeds, params=params, horizon=horizon)
    given = settings_words(**words, sweep=sweep, reference=reference, warmup=warmup, p_adjust=p_adjust)
    folder = None
    if resume is not None:
        folder, given = _restore(given, resume, out, overwrite)
    p = _plan(given)
    if folder is not None:
        folder.check_plan(p.cells)
    elif out is not None:
        record = {"argv": given, "scenario": p.scenario.name, "agents": p.names, "seeds": p.seeds}
        config = {"compare": {**record, "cells": len(p.cells)}, "clustergym": _version()}
        folder = RunFolder.create(out, config, overwrite=overwrite)
    report = report or Reporter()
    for name, why in (missing_outputs() if folder is not None else {}).items():
        report.note(f"note: {name} will not be written ({why})")
    for a, why in p.skipped.items():
        report.note(f"skipped {a}: {why}")
    kept = len(folder.rows) if folder is not None else 0
    if kept:
        report.note(f"resuming {folder.path}: {kept} of {len(p.cells)} episodes kept, {len(p.cells) - kept} to run")
    report.start(len(p.cells), kept)
    rows = _run(p, folder, workers, ray, report)
    return _summarize(p, rows, folder)
