"""Caches of parsed traces: per process, and on disk for the Google job tables.

Building a trace preset twice, or a sweep over its parameters, reads the trace files once: a parsed
table is kept under a key made of the files' paths, sizes, inodes and modification and status-change
times (:func:`file_stamp`) and the loader's options (:func:`freeze`).  At most 16 tables are kept
(least recently used out first), and one set of Google task events (about 110 MB for the 2.6 M-row slice);
:func:`clear_cache` empties both.

Across processes, :func:`google_table` goes through the on-disk cache of
:mod:`clustergym.traces.diskcache` (keyed by the task event files' contents and the options of
:func:`~clustergym.traces.google.google_tasks`): a later process reads the job table from one
Parquet file instead of parsing the CSV parts.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from clustergym._cache import Cache
from clustergym.traces import _csv, google, table, transforms
from clustergym.traces.diskcache import cached_table
from clustergym.traces.google import (
    GoogleTaskEvents,
    _as_files,
    google_tasks,
    read_task_events,
    task_event_files,
)
from clustergym.traces.table import TraceTable

PathLike = str | os.PathLike[str]

__all__ = ["cached", "clear_cache", "file_stamp", "freeze", "google_events", "google_options", "google_table"]

# ---------------------------------------------------------------------------------------------- caching

#: (loader name, file stamps, frozen options) -> parsed table; 16: a sweep over a preset's parameters
_TABLES: Cache[Any] = Cache(16)
#: file stamps -> Google task events; 1: about 110 MB each
_EVENTS: Cache[GoogleTaskEvents] = Cache(1)


def clear_cache() -> None:
    """Forget every cached trace table and the cached Google task events."""
    _TABLES.clear()
    _EVENTS.clear()


def file_stamp(paths: list[Path]) -> tuple:
    """Path, size, inode, modification and status-change times of each file: any write changes the
    ctime, which no user call can set back (``touch -d`` sets only the mtime)."""
    out = []
    for p in paths:
        try:
            st = p.stat()
            out.append((str(p.resolve()), st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns))
        except OSError:
            out.append((str(p), -1, -1, -1, -1))
    return tuple(out)


def freeze(x: Any) -> Any:
    if isinstance(x, Mapping):
        return tuple(sorted((k, freeze(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(freeze(v) for v in x)
    if isinstance(x, os.PathLike):
        return os.fspath(x)
    return x


def cached(key: Any, build: Callable[[], Any]) -> Any:
    """The parsed table under ``key`` (file stamps and options), built by ``build()`` on a miss."""
    return _TABLES.get(key, build)


def google_events(trace_dir: PathLike | None, task_events: Any = None) -> GoogleTaskEvents:
    files = task_event_files(trace_dir) if task_events is None else None
    if files is None:
        ev = read_task_events(task_events)
        return ev
    return _EVENTS.get(file_stamp(files), lambda: read_task_events(files))


#: the modules whose code makes a Google job table (part of the on-disk key)
_GOOGLE_CODE = tuple(m.__file__ for m in (google, _csv, table, transforms))


def google_options(**opts: Any) -> dict[str, Any]:
    """The options of :func:`~clustergym.traces.google.google_tasks` with every default filled in."""
    bound = inspect.signature(google_tasks).bind(None, **opts)
    bound.apply_defaults()
    return {k: v for k, v in bound.arguments.items() if k != "events"}


def google_table(trace_dir: PathLike | None, task_events: PathLike | Sequence[PathLike] | None = None,
                 **opts: Any) -> TraceTable:
    """The Google job table of :func:`~clustergym.traces.google.google_tasks` with ``opts``, over the
    task event parts of ``trace_dir`` (or the files or directory ``task_events``): from this
    process's cache, else from the on-disk cache, else parsed (and cached in both)."""
    files = task_event_files(trace_dir) if task_events is None else _as_files(task_events)
    full = google_options(**opts)

    def parse() -> TraceTable:
        events = google_events(trace_dir) if task_events is None else read_task_events(files)
        return google_tasks(events, **opts)

    return cached(("google", file_stamp(files), freeze(full)),
                  lambda: cached_table("google-tasks", files, full, parse, code=_GOOGLE_CODE))


