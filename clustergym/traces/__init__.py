"""Real workload traces: loaders, preprocessing transforms, trace-driven scenarios and summaries.

clustergym ships no trace data.  Download the public traces (``docs/traces.md``) and point
clustergym at them with ``trace_dir=...`` or ``$CLUSTERGYM_TRACES`` (:mod:`.paths`).

* loaders, one module per family, each returning a :class:`TraceTable` (jobs + filter report):
  :mod:`.google` (clusterdata-2011-2 task/job/machine events), :mod:`.alibaba` (v2017 batch tasks,
  CloudSimPy jobs, GPU v2023 pods and nodes, GPU v2025 instances), :mod:`.azure` (Azure V1
  flavour/duration traces);
* :mod:`.transforms` -- power-of-1/2 types, max of resources, k-means classes, priority maps,
  arrival scaling, windows;
* :mod:`.scenarios` -- the trace presets (:data:`TRACE_PRESETS`), :func:`load_trace` by format
  name, and :func:`trace_workload_from_spec` for ``kind: trace`` in scenario files;
* :mod:`.summary` -- a trace's summary table and plot (``clustergym trace``).
"""

from clustergym.traces.alibaba import (
    load_alibaba_gpu_v2023,
    load_alibaba_gpu_v2023_nodes,
    load_alibaba_gpu_v2025,
    load_alibaba_v2017,
    load_alibaba_v2017_machines,
    load_cloudsimpy_jobs,
)
from clustergym.traces.azure import load_azure_v1
from clustergym.traces.google import (
    google_tasks,
    load_google,
    load_google_job_events,
    load_google_machines,
    machine_configurations,
    read_task_events,
)
from clustergym.traces.paths import (
    ENV_VAR,
    TraceNotFoundError,
    resolve_trace_dir,
    traces_available,
)
from clustergym.traces.scenarios import (
    FORMATS,
    TRACE_PRESETS,
    alibaba_gpu,
    apply_transforms,
    autoscale_google,
    bfjs_google,
    clear_cache,
    load_trace,
    lotes_google,
    rms_google,
    trace_workload_from_spec,
)
from clustergym.traces.summary import plot_summary, summarize, trace_data
from clustergym.traces.table import FilterReport, TraceTable

__all__ = [
    "TraceTable", "FilterReport", "TraceNotFoundError", "ENV_VAR", "resolve_trace_dir", "traces_available",
    "read_task_events", "google_tasks", "load_google", "load_google_job_events", "load_google_machines",
    "machine_configurations", "load_alibaba_v2017", "load_alibaba_v2017_machines", "load_cloudsimpy_jobs",
    "load_alibaba_gpu_v2023", "load_alibaba_gpu_v2023_nodes", "load_alibaba_gpu_v2025", "load_azure_v1",
    "FORMATS", "TRACE_PRESETS", "load_trace", "apply_transforms", "trace_workload_from_spec", "clear_cache",
    "rms_google", "bfjs_google", "lotes_google", "autoscale_google", "alibaba_gpu",
    "summarize", "plot_summary", "trace_data",
]
