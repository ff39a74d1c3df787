"""The evaluation harness: a job list of cells, run serially, on local processes or on Ray.

A sweep is a list of :class:`Cell` s, one per (scenario, parameters, agent, seed).
Every cell is independent: it resolves its scenario, builds the agent the agent
spec names (a registered name or a path to a saved model) and runs one episode
with :func:`clustergym.runner.episode.run_episode`, with the cell's probes.  A seed fixes the arrival
stream whatever the agent does (common random numbers), and an episode depends
only on its cell, so the three executors give the same rows in the same order
(the cell order); only ``wall_seconds``, which measures the machine, differs::

    cells = plan("bf-trap", ["first-fit", "best-fit"], seeds=range(10), horizon=200)
    results = run_cells(cells, workers=2)             # or workers=1, or ray="auto"
    summary = summarize(results, reference="first-fit")
    write_results("out/", results, summary, metric="mean_queue_length")

Agents registered at run time (in a notebook, a script or a test) are shipped
to the workers with their cell: their factory is pickled by value with
cloudpickle, so worker processes and Ray workers can build them too.  A cell
may also carry the factory of an agent registered nowhere (see
:attr:`Cell.factory`).  ``memo`` (:func:`run_rows`) shares rows between
callers: a cell already run is not run again.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cloudpickle

from clustergym._cache import Cache
from clustergym.agent_api import AGENTS, agent_context, list_agents, make_agent, make_env_for
from clustergym.errors import ClusterGymError, ConfigError, ScenarioError
from clustergym.runner.episode import Probe, run_episode
from clustergym.scenarios import PRESETS, Scenario, resolve_scenario
from clustergym.validation import settings

if TYPE_CHECKING:  # pandas is imported where a frame is built: `clustergym run`'s one episode does not need it
    import pandas as pd

__all__ = [
    "Cell",
    "plan",
    "run_cell",
    "run_cells",
    "run_rows",
    "run_jobs",
    "compare",
    "sweep",
    "available_workers",
    "worker_count",
    "compatible_agents",
    "EvaluationError",
    "RayError",
    "RAY_MAX_RETRIES",
    "connect_ray",
]


class EvaluationError(ClusterGymError):
    """A cell of a sweep failed; the message names the cell (scenario, agent, seed)."""


class RayError(ClusterGymError):
    """Ray is not installed, or the ``--ray`` address is malformed or unreachable."""


# ================================================================================================ cells
@dataclass(frozen=True)
class Cell:
    """One episode of a sweep.

    Attributes:
        scenario: a preset name, a scenario file path, or a :class:`Scenario` object.
        agent: a registered agent name or a path to a saved model (``.zip``); passed
            to :func:`clustergym.agent_api.make_agent` unchanged.
        seed: the episode seed (it fixes the arrival stream).
        params: preset parameters as ``(name, value)`` pairs (preset names only).
        horizon: overrides the scenario's horizon (simulated time units), ``None`` keeps it.
        columns: names of ``params`` that become columns of the results (the swept ones).
        factory: the agent's factory, pickled (by value for agents registered outside
            clustergym's own modules): a process that does not know the name ``agent``
            builds the agent from it, without registering it.
        agent_params: the agent's parameters as ``(name, value)`` pairs.
        probes: named :class:`~clustergym.runner.episode.Probe` s as ``(name, probe)`` pairs; their
            values are columns of the cell's row (the functions must be importable by workers:
            module-level functions).
        env: a Gymnasium id that builds the episode's environment (a suite task,
            ``clustergym/<task>-v1``), ``None`` for the scenario's own; ``scenario``, ``params`` and
            ``horizon`` must then be the id's (see :func:`clustergym.make_env_for`).
    """

    scenario: str | Scenario
    agent: str
    seed: int
    params: tuple[tuple[str, Any], ...] = ()
    horizon: float | None = None
    columns: tuple[str, ...] = ()
    factory: bytes | None = field(default=None, repr=False, compare=False)
    agent_params: tuple[tuple[str, Any], ...] = ()
    probes: tuple[tuple[str, Probe], ...] = ()
    env: str | None = None


def _factory_blob(name: str) -> bytes | None:
    """The registered factory of ``name`` pickled by value, unless clustergym's own modules define it."""
    factory = AGENTS.get(name)
    if factory is None or isinstance(factory, str):
        return None  # a model path, or a built-in registered by import path: the worker makes it
    module = getattr(factory, "__module__", "") or ""
    if module == "clustergym" or module.startswith("clustergym."):
        return None  # a fresh process registers it on import
    mod = sys.modules.get(module)
    by_value = mod is not None and module != "__main__"
    if by_value:
        cloudpickle.register_pickle_by_value(mod)
    try:
        return cloudpickle.dumps(factory)
    finally:
        if by_value:
            cloudpickle.unregister_pickle_by_value(mod)


def plan(
    scenario: str | Scenario,
    agents: Sequence[str],
    *,
    seeds: Iterable[int] = range(5),
    horizon: float | None = None,
    params: dict[str, Any] | None = None,
    sweep: tuple[str, Sequence[Any]] | None = None,
) -> list[Cell]:
    """The job list: every agent on every seed (at every value of the swept parameter).

    Cells are ordered by swept value, then agent, then seed; results keep this order.

    Args:
        scenario: preset name, scenario file (made absolute; the workers must see the same path),
            or a :class:`Scenario` (then no ``params`` nor ``sweep``).
        agents: agent specs (registered names or model paths).
        seeds: episode seeds, the same for every agent (common random numbers).
        horizon: simulated time per episode (``None``: the scenario's).
        params: fixed preset parameters.
        sweep: ``(param, values)``: one preset parameter and the values it takes.
    """
    agents, seeds = list(agents), [int(s) for s in seeds]
    if not agents:
        raise ConfigError("agents", "no agent to run")
    twice = sorted({a for a in agents if agents.count(a) > 1})
    if twice:  # their runs would be pooled into one row, with an interval too narrow
        raise ConfigError("agents", f"{', '.join(twice)} listed twice: each agent is compared once")
    if not seeds:
        raise ConfigError("seeds", "no seed to run (expected at least one)")
    for s in seeds:
        settings.number(s, "seeds", lo=0, integer=True)
    if sweep is not None and not list(sweep[1]):
        raise ConfigError("sweep", f"no value to sweep {sweep[0]!r} over")
    if isinstance(scenario, Scenario) and (params or sweep):
        raise ScenarioError("params", "parameters apply to preset names only, not to a Scenario object")
    if isinstance(scenario, str) and scenario not in PRESETS and Path(scenario).exists():
        scenario = str(Path(scenario).resolve())  # a scenario file: workers may run in another directory
    blobs = {a: _factory_blob(a) for a in agents}
    param, values = sweep if sweep is not None else (None, [None])
    cells = []
    for value in values:
        p = dict(params or {})
        if param is not None:
            p[param] = value
        items = tuple(p.items())
        for agent in agents:
            for seed in seeds:
                cells.append(Cell(scenario, agent, seed, items, horizon, (param,) if param else (), blobs[agent]))
    return cells


#: repr((preset, parameters)) -> scenario; 8: the presets of a sweep a worker runs cells of
_SCENARIOS: Cache[Scenario] = Cache(8)


def _scenario_of(cell: Cell) -> Scenario:
    """The cell's scenario; presets are cached per process (files are read again, they may change)."""
    if isinstance(cell.scenario, Scenario):
        return cell.scenario
    if cell.scenario not in PRESETS:
        return resolve_scenario(cell.scenario, **dict(cell.params))
    key = repr((cell.scenario, cell.params))
    return _SCENARIOS.get(key, lambda: resolve_scenario(cell.scenario, **dict(cell.params)))


def _make_agent(cell: Cell) -> Any:
    """The cell's agent: by its registered name or, when this process does not know the name, from
    the factory the cell carries (called directly: it is not registered here)."""
    if cell.factory is not None and cell.agent not in AGENTS:
        return cloudpickle.loads(cell.factory)(**dict(cell.agent_params))
    return make_agent(cell.agent, **dict(cell.agent_params))


def run_cell(cell: Cell) -> dict[str, Any]:
    """Run one cell: the ``clustergym run`` metrics of its episode, plus its swept parameters."""
    try:
        agent = _make_agent(cell)
        row = run_episode(
            _scenario_of(cell),
            agent,
            seed=cell.seed,
            horizon=cell.horizon,
            agent_name=cell.agent,
            probes=dict(cell.probes),
            env_id=cell.env,
        )
    except ClusterGymError as e:
        raise EvaluationError(f"{cell.agent} on {_label(cell)}, seed {cell.seed}: {e}") from e
    if cell.columns:
        p = dict(cell.params)
        row = {
            "scenario": row["scenario"],
            **{c: p[c] for c in cell.columns},
            **{k: v for k, v in row.items() if k != "scenario"},
        }
    return row


def _label(cell: Cell) -> str:
    name = cell.scenario.name if isinstance(cell.scenario, Scenario) else str(cell.scenario)
    return name + "".join(f" {k}={v}" for k, v in cell.params)


# ============================================================================================ executors
def available_workers() -> int:
    """CPU cores this process may use (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def worker_count(workers: int | None, field: str = "workers") -> int:
    """A number of worker processes: ``workers`` (an integer >= 1), or the available cores for ``None``."""
    if workers is None:
        return available_workers()
    return settings.number(workers, field, lo=1, integer=True)


def run_cells(
    cells: Sequence[Cell],
    *,
    workers: int | None = 1,
    ray: str | None = None,
    progress: Callable[[str, int], None] | None = None,
    memo: dict[Cell, dict[str, Any]] | None = None,
    done: Mapping[int, dict[str, Any]] | None = None,
    on_row: Callable[[int, dict[str, Any]], None] | None = None,
) -> pd.DataFrame:
    """Run every cell and return one row per cell, in cell order.

    Args:
        cells: the job list (see :func:`plan`).
        workers: local worker processes (``None``: the available cores); 1 runs in this process.
            Ignored with ``ray``.
        ray: a Ray address (``"auto"``, ``"host:port"`` or ``"ray://host:port"``): one remote
            task per cell on that cluster.  When this process is already connected to Ray
            (``ray.is_initialized()``), that connection is used.
        progress: called with ``(agent, seed)`` as cells finish.
        memo: rows of cells already run (see :func:`run_rows`).
        done, on_row: rows already finished, and a callback of each row as it finishes (see
            :func:`run_rows`): a run that keeps its work.

    Returns:
        A DataFrame with the ``clustergym run`` fields and the kernel metrics as columns.
        The same cells give the same frame with every executor, except ``wall_seconds``.
    """
    import pandas as pd

    return pd.DataFrame(
        run_rows(cells, workers=workers, ray=ray, progress=progress, memo=memo, done=done, on_row=on_row)
    )


def run_rows(
    cells: Sequence[Cell],
    *,
    workers: int | None = 1,
    ray: str | None = None,
    progress: Callable[[str, int], None] | None = None,
    memo: dict[Cell, dict[str, Any]] | None = None,
    done: Mapping[int, dict[str, Any]] | None = None,
    on_row: Callable[[int, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """:func:`run_cells` as a list of row dicts, each value as its episode gave it (a DataFrame
    would turn a missing key into NaN and numbers into NumPy scalars).

    ``memo`` (a dict the caller keeps) makes runs shared between callers: a cell already in it is
    not run again, every cell run here is added to it, and a cell listed twice runs once.  Its key
    is the cell itself, so the cell's scenario, parameters, agent, seed, horizon and probes all
    have to match; cells that cannot be keys (a :class:`Scenario` object, unhashable parameter
    values) are simply run.  Rows come back as shallow copies of what the memo holds.

    ``done`` and ``on_row`` keep the work of a long run (:class:`clustergym.runner.journal.RunFolder`
    writes them to disk): ``done`` maps the index of a cell in ``cells`` to its row, already
    finished in an earlier, interrupted run, which is not run again; ``on_row(index, row)`` is
    called in this process as soon as each cell finishes (in any order with several workers), so
    an interruption or a failing cell loses only the cells still running.
    """
    cells = list(cells)
    workers = worker_count(workers)
    done = dict(done or {})
    keys = [_memo_key(cell) if memo is not None else None for cell in cells]
    memo_rows: dict[Any, dict[str, Any]] = memo if memo is not None else {}
    todo, seen = [], set()
    for i, key in enumerate(keys):
        if i in done:
            continue
        if key is None or (key not in memo_rows and key not in seen):
            todo.append(i)
            if key is not None:
                seen.add(key)
    rows: list[dict[str, Any] | None] = [done.get(i) for i in range(len(cells))]

    def finished(i: int, row: dict[str, Any]) -> None:
        rows[i] = row
        if keys[i] is not None:
            memo_rows[keys[i]] = row
        if on_row is not None:
            on_row(i, row)
        if progress is not None:
            progress(cells[i].agent, cells[i].seed)

    _execute([(i, cells[i]) for i in todo], workers, ray, finished)
    for i, (row, key) in enumerate(zip(rows, keys)):
        if row is None:  # a duplicate of a memoised cell
            rows[i] = memo_rows[key]
            if on_row is not None:
                on_row(i, rows[i])  # type: ignore[arg-type]
    return [dict(row) for row in rows]  # type: ignore[arg-type]


def _memo_key(cell: Cell) -> Cell | None:
    try:
        hash(cell)
    except TypeError:  # a Scenario object (arrays), or a list among the parameters
        return None
    return cell


def _execute(
    cells: list[tuple[int, Cell]], workers: int, ray: str | None, finished: Callable[[int, dict[str, Any]], None]
) -> None:
    """Run ``(index, cell)`` pairs; ``finished(index, row)`` as each one ends."""
    run_jobs(run_cell, cells, workers=workers, ray=ray, finished=finished)


def run_jobs(
    fn: Callable[[Any], Any],
    jobs: Sequence[tuple[int, Any]],
    *,
    workers: int = 1,
    ray: str | None = None,
    finished: Callable[[int, Any], None],
) -> None:
    """The one executor of the package: ``fn(job)`` for every ``(index, job)`` pair, in this process
    (``workers`` 1, or a single job), on ``workers`` local processes (joblib's loky) or, with ``ray``
    (an address, see :func:`run_cells`), one Ray task of 1 CPU per job (:func:`_run_ray`: retried
    when its node dies).  ``finished(index, result)`` is called in this process as each job ends, in
    any order with several workers; the first exception raised by ``fn`` stops the run and reaches
    the caller (a :class:`~clustergym.errors.ClusterGymError` from a Ray worker as itself).

    ``fn`` must be importable by the workers (a module-level function); :func:`run_rows` runs cells
    with it (``fn`` = :func:`run_cell`), :mod:`clustergym.training.sweep` training runs.
    """
    jobs = list(jobs)
    if not jobs:
        return
    if ray is not None:
        _run_ray(fn, jobs, ray, finished)
    elif workers == 1 or len(jobs) <= 1:
        for i, job in jobs:
            finished(i, fn(job))
    else:
        _run_processes(fn, jobs, min(workers, len(jobs)), finished)


def _indexed(fn: Callable[[Any], Any], i: int, job: Any) -> tuple[int, Any]:
    return i, fn(job)


def _run_processes(
    fn: Callable[[Any], Any], jobs: list[tuple[int, Any]], workers: int, finished: Callable[[int, Any], None]
) -> None:
    # joblib's loky workers: fresh interpreters that never re-run the caller's __main__ (so scripts
    # need no `if __name__ == "__main__"` guard), kept alive between calls; results are handed over
    # as they finish (the caller puts them back in order)
    from joblib import Parallel, delayed

    for i, result in Parallel(n_jobs=workers, backend="loky", return_as="generator_unordered")(
        delayed(_indexed)(fn, i, job) for i, job in jobs
    ):
        finished(i, result)


#: how many times Ray runs a task again when the worker process or the node running it dies (a
#: job's own error, e.g. a bad agent, is not retried: it is the same on every node)
RAY_MAX_RETRIES = 5

_ADDRESS = re.compile(r"^(?:ray://)?(?P<host>[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:]+\]):(?P<port>\d{1,5})$")


def connect_ray(address: str) -> Any:
    """``ray``, connected to ``address`` (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``; a connection
    this process already has is kept); a clear :class:`RayError` when that cannot be done.  Commands
    call it before they write anything, so a bad address fails first."""
    try:
        import ray
    except ImportError as e:
        raise RayError(
            f"--ray needs the optional dependency ray ({e}); install it with `pip install 'clustergym[ray]'`"
        ) from None
    m = _ADDRESS.match(address)
    if address != "auto" and (m is None or not 0 < int(m["port"]) < 65536):
        raise RayError(f"--ray {address!r}: expected 'auto', 'HOST:PORT' or 'ray://HOST:PORT'")
    if ray.is_initialized():
        return ray
    # fail fast: ray.init retries an unreachable address for minutes.  'auto' means $RAY_ADDRESS,
    # else the cluster `ray start` last started on this machine (the file it leaves behind)
    target = address
    if address == "auto":
        latest = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        target = os.environ.get("RAY_ADDRESS") or (latest.read_text().strip() if latest.is_file() else "")
    m = _ADDRESS.match(target)
    if m is not None:
        try:
            socket.create_connection((m["host"].strip("[]"), int(m["port"])), timeout=5).close()
        except OSError as e:
            where = f"{address!r}" if target == address else f"{address!r} (that is {target})"
            raise RayError(f"--ray {where}: no Ray cluster reachable there ({e})") from None
    try:
        ray.init(address=address, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise RayError(f"--ray {address!r}: could not connect to a Ray cluster: {e}") from None
    return ray


def _run_ray(
    fn: Callable[[Any], Any], jobs: list[tuple[int, Any]], address: str, finished: Callable[[int, Any], None]
) -> None:
    """One Ray task per job (1 CPU each), submitted at once; ``finished`` is called in this process
    (the driver) as each task's result arrives, in any order, so a caller keeping rows
    (:func:`clustergym.runner.journal.run_kept`) journals them on the driver.

    A task whose worker process or node dies (a lost node, an out-of-memory kill) is run again by
    Ray, up to :data:`RAY_MAX_RETRIES` times (``max_retries``), on any node left: an episode
    depends only on its cell, so the retried row is the one the first attempt would have given (a
    training run resumes from its last checkpoint).  Exceptions raised by ``fn`` itself are not
    retried (``retry_exceptions=False``: a bad agent fails the same way on every node); the first
    one reaches the caller (a :class:`~clustergym.errors.ClusterGymError` as itself)."""
    ray = connect_ray(address)
    remote = ray.remote(num_cpus=1, max_retries=RAY_MAX_RETRIES, retry_exceptions=False)(fn)
    refs = [remote.remote(job) for _, job in jobs]
    index = {ref: i for ref, (i, _) in zip(refs, jobs)}
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        for ref in ready:
            try:
                result = ray.get(ref)
            except Exception as e:  # RayTaskError wraps the worker's exception
                cause = getattr(e, "cause", None)
                raise (cause if isinstance(cause, ClusterGymError) else e) from None
            finished(index[ref], result)


# ========================================================================================= agents: all
def compatible_agents(scenario: Scenario, names: Iterable[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The agents that can run on ``scenario``, and the reason each other one cannot.

    An agent can run when it can be built with its defaults, its requirements
    (queueing mode, discrete types, ...) accept the scenario, and it resets on
    the scenario's environment (where agents check what else they need, e.g.
    arrival rates for oracles or identical servers).

    Args:
        scenario: the scenario.
        names: the candidates (default: every registered agent, sorted by name).
    Returns:
        ``(runnable, skipped)``: runnable names in order, and ``{name: reason}``.
    """
    ok, skipped = [], {}
    for name in list(list_agents()) if names is None else list(names):
        try:
            agent = make_agent(name)
            env = make_env_for(scenario, agent)
            env.reset(seed=0)
            agent.reset(agent_context(env, 0), seed=0)
        except ClusterGymError as e:
            skipped[name] = str(e)
            continue
        ok.append(name)
    return ok, skipped


# ========================================================================================= shortcuts
def compare(
    scenario: Scenario | str,
    agents: Iterable[str],
    *,
    seeds: Iterable[int] = range(5),
    horizon: float | None = None,
    progress: Callable[[str, int], None] | None = None,
    params: dict[str, Any] | None = None,
    workers: int = 1,
    ray: str | None = None,
) -> pd.DataFrame:
    """Every agent on every seed: one row per (agent, seed), the ``run`` metrics as columns.

    ``workers`` > 1 runs the episodes on that many local processes, ``ray`` on a Ray
    cluster (see :func:`run_cells`); the rows are the same.
    """
    return run_cells(
        plan(scenario, list(agents), seeds=seeds, horizon=horizon, params=params),
        workers=workers,
        ray=ray,
        progress=progress,
    )


def sweep(
    scenario: str,
    param: str,
    values: Iterable[Any],
    agents: Iterable[str],
    *,
    seeds: Iterable[int] = range(5),
    horizon: float | None = None,
    params: dict[str, Any] | None = None,
    progress: Callable[[str, int], None] | None = None,
    workers: int = 1,
    ray: str | None = None,
) -> pd.DataFrame:
    """:func:`compare` at each value of one preset parameter (e.g. ``zeta``); adds a column ``param``."""
    cells = plan(scenario, list(agents), seeds=seeds, horizon=horizon, params=params, sweep=(param, list(values)))
    return run_cells(cells, workers=workers, ray=ray, progress=progress)
