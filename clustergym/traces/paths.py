"""Where the trace files are: an explicit directory, ``$CLUSTERGYM_TRACES``, or the user data folder.

clustergym never ships trace data.  A user downloads the public traces (see
``docs/traces.md``) into one directory laid out like this::

    <traces>/google-clusterdata-2011-2/{task_events,job_events,machine_events}/part-*.csv.gz
    <traces>/alibaba-v2017/{batch_task.csv.gz, server_event.csv}
    <traces>/cloudsimpy-alibaba-v2017-jobs/jobs.csv.gz
    <traces>/alibaba-gpu-v2023/{openb_pod_list_default.csv, openb_node_list_all_node.csv}
    <traces>/alibaba-gpu-v2025-dlrm/disaggregated_DLRM_trace.csv.gz
    <traces>/azure-v1-tracegen-rnn/{v1.test.txt.gz, v1.test.c2591400.txt.gz, flav_map.txt, ...}

and points clustergym at it, in this order of precedence:

1. the ``trace_dir`` argument of a loader, preset or ``clustergym trace --trace-dir``;
2. the environment variable ``CLUSTERGYM_TRACES``;
3. the user data folder ``$XDG_DATA_HOME/clustergym/traces`` (``~/.local/share/clustergym/traces``
   when ``XDG_DATA_HOME`` is unset), :func:`default_trace_dir`.

Every loader also accepts explicit file paths, which bypass the directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from clustergym.errors import ScenarioError

__all__ = [
    "ENV_VAR",
    "DATASETS",
    "TraceNotFoundError",
    "default_trace_dir",
    "resolve_trace_dir",
    "trace_path",
    "traces_available",
]

ENV_VAR = "CLUSTERGYM_TRACES"

#: family -> (subdirectory, where to download it)
DATASETS: dict[str, tuple[str, str]] = {
    "google": (
        "google-clusterdata-2011-2",
        "the Google clusterdata-2011-2 trace (gs://clusterdata-2011-2, "
        "https://github.com/google/cluster-data/blob/master/ClusterData2011_2.md): "
        "task_events/, job_events/, machine_events/ part-*.csv.gz files",
    ),
    "alibaba-v2017": (
        "alibaba-v2017",
        "Alibaba cluster-trace-v2017 (https://github.com/alibaba/clusterdata, "
        "cluster-trace-v2017): batch_task.csv(.gz) and server_event.csv",
    ),
    "cloudsimpy": (
        "cloudsimpy-alibaba-v2017-jobs",
        "CloudSimPy's preprocessed Alibaba v2017 jobs (https://github.com/RobertLexis/CloudSimPy, "
        "playground/Non_DAG/jobs_files/jobs.csv), saved as jobs.csv or jobs.csv.gz",
    ),
    "alibaba-gpu-v2023": (
        "alibaba-gpu-v2023",
        "Alibaba cluster-trace-gpu-v2023 (https://github.com/alibaba/clusterdata, "
        "cluster-trace-gpu-v2023/csv): openb_pod_list_default.csv and openb_node_list_all_node.csv",
    ),
    "alibaba-gpu-v2025": (
        "alibaba-gpu-v2025-dlrm",
        "Alibaba cluster-trace-gpu-v2025 (https://github.com/alibaba/clusterdata, "
        "cluster-trace-gpu-v2025/disaggregated_DLRM_trace.csv), as .csv or .csv.gz",
    ),
    "azure": (
        "azure-v1-tracegen-rnn",
        "the Azure V1 flavour/duration traces of huaweicloud/trace_generation_rnn "
        "(resources/traces/v1.*.txt(.gz), resources/maps/flav_map.txt, v1.interval_map.txt(.gz))",
    ),
}


class TraceNotFoundError(ScenarioError):
    """The trace directory or a trace file is missing; the message says what to download and where."""

    def __init__(self, problem: str):
        super().__init__("trace_dir", problem)


def default_trace_dir() -> Path:
    """The user data folder of the traces, ``$XDG_DATA_HOME/clustergym/traces`` (``XDG_DATA_HOME``
    defaults to ``~/.local/share``, as the XDG base directory specification says); it may not exist."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base).expanduser() / "clustergym" / "traces"


def _hint() -> str:
    return (
        f"download the public traces (see docs/traces.md) into {default_trace_dir()}, or pass trace_dir=... "
        f"(--trace-dir on the command line), or set the environment variable {ENV_VAR} to their directory"
    )


def resolve_trace_dir(trace_dir: str | os.PathLike[str] | None = None) -> Path:
    """The trace directory: ``trace_dir``, else ``$CLUSTERGYM_TRACES``, else :func:`default_trace_dir`.

    Raises:
        TraceNotFoundError: the chosen directory does not exist.
    """
    if trace_dir is not None:
        path, how = Path(trace_dir).expanduser(), "trace_dir"
    elif os.environ.get(ENV_VAR):
        path, how = Path(os.environ[ENV_VAR]).expanduser(), f"${ENV_VAR}"
    else:
        path, how = default_trace_dir(), "the default user data folder"
    if not path.is_dir():
        raise TraceNotFoundError(f"trace directory {path} (from {how}) does not exist: {_hint()}")
    return path


def traces_available(trace_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether a trace directory resolves (no error)."""
    try:
        resolve_trace_dir(trace_dir)
    except TraceNotFoundError:
        return False
    return True


def trace_path(
    family: str, *names: str, trace_dir: str | os.PathLike[str] | None = None, alternatives: tuple[str, ...] = ()
) -> Path:
    """``<trace dir>/<family's subdirectory>/<names...>``, which must exist.

    ``alternatives`` are other file names tried in order (e.g. ``jobs.csv`` for ``jobs.csv.gz``).

    Raises:
        TraceNotFoundError: naming the missing path and what to download.
    """
    sub, what = DATASETS[family]
    base = resolve_trace_dir(trace_dir) / sub
    candidates = [base.joinpath(*names)] + [base.joinpath(*names[:-1], alt) for alt in alternatives]
    for c in candidates:
        if c.exists():
            return c
    raise TraceNotFoundError(f"{candidates[0]} not found; it should hold {what}. {_hint()[0].upper()}{_hint()[1:]}")
