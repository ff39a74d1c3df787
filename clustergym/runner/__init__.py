"""Running agents on scenarios and comparing them fairly.

One direction: an :mod:`.episode` (one agent, one scenario, one seed, with named probes) <- the
:mod:`.cells` of a comparison, run serially, on local processes or on Ray <- the :mod:`.stats` of
their rows (confidence intervals, paired differences, bounds) <- the :mod:`.outputs` (tables and
figures).  Every agent runs on the same seeds and a seed fixes the arrival stream whatever the
agent does (common random numbers), so differences between agents are paired::

    from clustergym.runner import compare, summarize
    rows = compare("bf-trap", ["first-fit", "best-fit"], seeds=range(10), horizon=200, workers=2)
    print(summarize(rows, reference="first-fit"))
"""

from clustergym.runner.cells import (
    RAY_MAX_RETRIES,
    Cell,
    EvaluationError,
    RayError,
    available_workers,
    compare,
    compatible_agents,
    connect_ray,
    plan,
    run_cell,
    run_cells,
    run_jobs,
    run_rows,
    sweep,
    worker_count,
)
from clustergym.runner.episode import RUN_FIELDS, Probe, run_episode
from clustergym.runner.journal import RunFolder
from clustergym.runner.outputs import (
    flat_results,
    missing_outputs,
    plot_agents,
    plot_paired,
    plot_sweep,
    write_results,
)
from clustergym.runner.stats import (
    adjust_p_values,
    bounded_ci,
    headline_metric,
    mean_ci,
    summarize,
    summary_long,
)

__all__ = [
    "Cell",
    "EvaluationError",
    "RayError",
    "available_workers",
    "compare",
    "compatible_agents",
    "connect_ray",
    "plan",
    "run_cell",
    "run_cells",
    "run_jobs",
    "run_rows",
    "RAY_MAX_RETRIES",
    "sweep",
    "worker_count",
    "RUN_FIELDS",
    "Probe",
    "run_episode",
    "flat_results",
    "missing_outputs",
    "RunFolder",
    "plot_agents",
    "plot_paired",
    "plot_sweep",
    "write_results",
    "headline_metric",
    "mean_ci",
    "bounded_ci",
    "adjust_p_values",
    "summarize",
    "summary_long",
]
