"""Real workload traces: loaders, preprocessing transforms, caches and summaries.

The trace-driven presets are in :mod:`clustergym.scenarios.presets` (each paper's trace setup in its
paper's module, the others in :mod:`clustergym.scenarios.presets.traces`), and ``kind: trace``
workloads of scenario files in :mod:`clustergym.scenarios.trace_spec`.

clustergym ships no trace data.  Download the public traces (``docs/traces.md``) and point
clustergym at them with ``trace_dir=...`` or ``$CLUSTERGYM_TRACES`` (:mod:`.paths`).

* loaders, one module per family, each returning a :class:`TraceTable` (jobs + filter report):
  :mod:`.google` (clusterdata-2011-2 task/job/machine events), :mod:`.alibaba` (v2017 batch tasks,
  CloudSimPy jobs, GPU v2023 pods and nodes, GPU v2025 instances), :mod:`.azure` (Azure V1
  flavour/duration traces);
* :mod:`.transforms` -- power-of-1/2 types, max of resources, k-means classes, priority maps,
  arrival scaling, windows;
* :mod:`.formats` -- :func:`load_trace` by format name (:data:`FORMATS`); :mod:`.pipeline` -- the
  named transforms of ``kind: trace`` scenario files (:func:`apply_transforms`); :mod:`.cache` --
  parsed tables kept per process;
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
from clustergym.traces.cache import clear_cache
from clustergym.traces.formats import FORMATS, load_trace
from clustergym.traces.google import (
    google_tasks,
    load_google,
    load_google_job_events,
    load_google_machines,
    machine_shape_counts,
    read_task_events,
)
from clustergym.traces.paths import (
    ENV_VAR,
    TraceNotFoundError,
    resolve_trace_dir,
    traces_available,
)
from clustergym.traces.pipeline import apply_transforms
from clustergym.traces.summary import plot_summary, summarize_trace, trace_data
from clustergym.traces.table import FilterReport, TraceTable

__all__ = [
    "TraceTable",
    "FilterReport",
    "TraceNotFoundError",
    "ENV_VAR",
    "resolve_trace_dir",
    "traces_available",
    "read_task_events",
    "google_tasks",
    "load_google",
    "load_google_job_events",
    "load_google_machines",
    "machine_shape_counts",
    "load_alibaba_v2017",
    "load_alibaba_v2017_machines",
    "load_cloudsimpy_jobs",
    "load_alibaba_gpu_v2023",
    "load_alibaba_gpu_v2023_nodes",
    "load_alibaba_gpu_v2025",
    "load_azure_v1",
    "FORMATS",
    "load_trace",
    "apply_transforms",
    "clear_cache",
    "summarize_trace",
    "plot_summary",
    "trace_data",
]
