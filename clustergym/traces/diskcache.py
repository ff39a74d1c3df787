"""On-disk cache of parsed traces: one Parquet file per (source files' contents, loader, loader options).

Parsing the Google task events (2.6 M rows of gzipped CSV) and turning them into jobs takes
seconds; reading the resulting job table back from a Parquet file takes tens of milliseconds.  So a
parsed :class:`~clustergym.traces.table.TraceTable` is written once and reused by every later
process (runs, ``compare`` and ``reproduce`` workers, ``bench``, the SimPy reference).

Where
    ``$CLUSTERGYM_TRACE_CACHE`` if set (a directory; ``off``, ``0`` or ``none`` disables the cache),
    else ``$XDG_CACHE_HOME/clustergym/traces``, else ``~/.cache/clustergym/traces``.
    :func:`set_trace_cache` overrides it in one process (``clustergym --no-trace-cache ...`` sets
    the variable, so worker processes follow).  Delete the directory to empty the cache.

Key
    The SHA-256 of a canonical JSON document holding: the cache format version; the loader's name;
    the SHA-256 of the loader's source files (a changed loader never reads an old table); the numpy
    and pandas versions; every source file's resolved path and the **SHA-256 of its contents**; and
    the loader options with their defaults filled in (``lifecycle="finished"`` and
    ``lifecycle="finished", first_n=None`` are one key, ``first_n=1000`` another).

    Hashing the contents costs about 50 ms for the shared slice's 30 MB of task events, but would
    cost seconds per process on the whole month of the trace (hundreds of parts), so each file's
    digest is remembered in ``digests/`` under its path, size, inode, and modification and
    status-change times in nanoseconds.  Any write to a file changes its ``ctime``, which no user
    call can set back (``touch -d`` and ``os.utime`` set ``mtime`` and update ``ctime`` to now), so
    a remembered digest is never used for changed contents.  As in git's "racy" rule, a digest is
    not remembered while the file is younger than :data:`RACY_SECONDS` (a write in the same clock
    tick could leave the stamps equal); such files are hashed again by every process.

Files
    ``<loader>-<key>.parquet`` (snappy, page CRC checksums written and verified on read); the
    table's report, resources, units, format and origin, and the whole key, in the file's metadata.
    A table is written to a temporary file in the same directory, read back and compared with the
    table built (frame equality: values, dtypes, columns and index; and every other field); only
    then is it renamed into place (atomic on POSIX), so a reader never sees a partial file and a
    table that does not survive the round trip is not cached at all.

Trust
    A file is used only if it reads without error (page checksums included), its metadata holds
    exactly the expected key and format version, and its rows, columns and dtypes are those
    recorded.  Anything else (a truncated, overwritten or bit-flipped file, a file from another
    format version) is reported with a warning, deleted and rebuilt from the sources.  Errors of
    the cache itself (a read-only or full disk) never fail a run: the table is built and returned,
    and the cache is not used for the rest of the process.  So is an install without pyarrow (a
    core dependency, so only a broken install): one warning saying so, then every table is parsed.

Size
    After a write, the least recently used files (by modification time, refreshed on every hit) are
    deleted while the directory holds more than ``$CLUSTERGYM_TRACE_CACHE_MAX_MB`` (default
    4096 MB; a value that is not a number >= 0 is a :class:`ConfigError` naming the variable).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from clustergym._cache import Cache
from clustergym.traces.table import FilterReport, TraceTable

__all__ = [
    "ENV_VAR",
    "FORMAT_VERSION",
    "MAX_MB_VAR",
    "RACY_SECONDS",
    "TraceCacheWarning",
    "cache_dir",
    "cached_table",
    "code_digest",
    "file_digest",
    "set_trace_cache",
    "table_key",
]

ENV_VAR = "CLUSTERGYM_TRACE_CACHE"
MAX_MB_VAR = "CLUSTERGYM_TRACE_CACHE_MAX_MB"
#: bump when the file layout or the metadata changes (old files are then simply not found)
FORMAT_VERSION = 1
#: a file modified less than this many seconds before it was hashed gets no remembered digest
RACY_SECONDS = 2.0
_OFF = frozenset({"0", "off", "no", "none", "false", "disable", "disabled"})
_META = b"clustergym.trace_cache"
_DEFAULT_MAX_MB = 4096

#: None: follow the environment; False: off; a path: that directory (set_trace_cache)
_override: Any = None
#: set when the cache directory failed (read-only, full): the rest of the process does without
_broken: list[str] = []
#: (path, size, inode, mtime_ns, ctime_ns) -> SHA-256 of the contents; 1024: every part of a large trace
_DIGESTS: Cache[str] = Cache(1024)
#: source files of a loader -> SHA-256 of their contents; 16: a few loaders per process
_CODE: Cache[str] = Cache(16)


class TraceCacheWarning(UserWarning):
    """A cache file was unusable (and is rebuilt), or the cache directory cannot be written."""


def cache_dir() -> Path | None:
    """The cache directory, or ``None`` when the cache is off (see the module docstring)."""
    if _override is False or _broken:
        return None
    if _override is not None and _override is not True:
        return Path(_override)
    env = os.environ.get(ENV_VAR, "").strip()
    if env.lower() in _OFF and env:
        return None
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "clustergym" / "traces"


def set_trace_cache(value: bool | str | os.PathLike[str] | None) -> Any:
    """Turn the on-disk cache of this process off (``False``), back to the environment's choice
    (``True`` or ``None``), or to a directory; returns the previous setting (to restore it)."""
    global _override
    prev = _override
    _override = None if value is True else (os.fspath(value) if isinstance(value, os.PathLike) else value)
    _broken.clear()
    return prev


# ---------------------------------------------------------------------------------------------- keys


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_digest(path: str | os.PathLike[str], memo_dir: Path | None = None) -> str:
    """SHA-256 of a file's contents, remembered under its stamps (module docstring, "Key")."""
    p = Path(path).resolve()
    st = p.stat()
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_SECONDS * 1e9:
        return _sha256_file(p)  # too young to be remembered
    stamp = (str(p), st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    return _DIGESTS.get(stamp, lambda: _remembered_digest(p, stamp, memo_dir))


def _remembered_digest(p: Path, stamp: tuple, memo_dir: Path | None) -> str:
    if memo_dir is None:
        return _sha256_file(p)
    memo = memo_dir / "digests" / (hashlib.sha256(repr(stamp).encode()).hexdigest()[:40] + ".sha256")
    try:
        text = memo.read_text().strip()
        if len(text) == 64 and all(c in "0123456789abcdef" for c in text):
            return text
    except OSError:
        pass
    digest = _sha256_file(p)
    try:
        _atomic_write_bytes(memo, digest.encode())
    except OSError:
        pass
    return digest


def code_digest(files: Sequence[str | os.PathLike[str]]) -> str:
    """SHA-256 over the contents of a loader's source files (in order)."""
    key = tuple(os.fspath(f) for f in files)

    def build() -> str:
        h = hashlib.sha256()
        for f in key:
            h.update(Path(f).read_bytes())
            h.update(b"\0")
        return h.hexdigest()

    return _CODE.get(key, build)


def _canonical(x: Any) -> Any:
    """JSON-ready form of an option value; TypeError for values that have none."""
    import numpy as np

    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return repr(float(x))  # exact (and NaN/inf survive JSON)
    if isinstance(x, os.PathLike):
        return os.fspath(x)
    if isinstance(x, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_canonical(v) for v in x]
    raise TypeError(f"no canonical form for {type(x).__name__}")


def table_key(
    loader: str,
    files: Sequence[str | os.PathLike[str]],
    options: Mapping[str, Any],
    code: Sequence[str | os.PathLike[str]] = (),
    memo_dir: Path | None = None,
) -> dict[str, Any]:
    """The key document of a table (module docstring, "Key"); its SHA-256 names the file."""
    import numpy as np
    import pandas as pd

    return {
        "cache_format": FORMAT_VERSION,
        "loader": loader,
        "code": code_digest(code),
        "libraries": {"numpy": np.__version__, "pandas": pd.__version__},
        "files": [[str(Path(f).resolve()), file_digest(f, memo_dir)] for f in files],
        "options": _canonical(dict(options)),
    }


def _key_hash(key: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------------------------------------- files


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.time_ns()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _write_table(path: Path, table: TraceTable, key: Mapping[str, Any]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    jobs = table.jobs
    meta = {
        "key": key,
        "rows": len(jobs),
        "columns": [str(c) for c in jobs.columns],
        "dtypes": [str(t) for t in jobs.dtypes],
        "resources": list(table.resources),
        "units": dict(table.units),
        "format": table.format,
        "origin": repr(float(table.origin)),
        "report": table.report.to_dict(),
    }
    at = pa.Table.from_pandas(jobs, preserve_index=False)
    at = at.replace_schema_metadata({**(at.schema.metadata or {}), _META: json.dumps(meta).encode()})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.time_ns()}.tmp")
    try:
        pq.write_table(at, tmp, compression="snappy", write_page_checksum=True)
        back = _read_table(tmp, key)
        if not _same_table(back, table):
            warnings.warn(
                f"trace cache: the table of {table.source} does not survive a Parquet round trip; not cached",
                TraceCacheWarning,
                stacklevel=3,
            )
            return
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


class _Unusable(Exception):
    pass


def _read_table(path: Path, key: Mapping[str, Any]) -> TraceTable:
    import pyarrow.parquet as pq

    with pq.ParquetFile(path, page_checksum_verification=True) as pf:
        at = pf.read()
    raw = (at.schema.metadata or {}).get(_META)
    if raw is None:
        raise _Unusable("no clustergym metadata")
    meta = json.loads(raw)
    if meta.get("key") != key:
        raise _Unusable("its key is not the expected one")
    jobs = at.to_pandas()
    if (
        len(jobs) != meta["rows"]
        or [str(c) for c in jobs.columns] != meta["columns"]
        or [str(t) for t in jobs.dtypes] != meta["dtypes"]
    ):
        raise _Unusable("its rows, columns or dtypes are not those recorded")
    return TraceTable(
        jobs=jobs,
        resources=tuple(meta["resources"]),
        units=dict(meta["units"]),
        report=FilterReport(**meta["report"]),
        format=meta["format"],
        origin=float(meta["origin"]),
    )


def _same_table(a: TraceTable, b: TraceTable) -> bool:
    return (
        a.jobs.equals(b.jobs)
        and a.jobs.columns.equals(b.jobs.columns)
        and type(a.jobs.index) is type(b.jobs.index)
        and a.jobs.index.equals(b.jobs.index)
        and list(a.jobs.dtypes) == list(b.jobs.dtypes)
        and a.resources == b.resources
        and a.units == b.units
        and a.format == b.format
        and repr(a.origin) == repr(b.origin)
        and a.report == b.report
    )


def max_cache_bytes() -> float:
    """The cache's size limit in bytes (``$CLUSTERGYM_TRACE_CACHE_MAX_MB`` megabytes, default 4096).

    Raises:
        ConfigError: the variable is set to something other than a finite number >= 0 (the
            message names it).
    """
    import math

    from clustergym.errors import ConfigError

    raw = os.environ.get(MAX_MB_VAR, "").strip()
    if not raw:
        return _DEFAULT_MAX_MB * 2**20
    try:
        mb = float(raw)
    except ValueError:
        mb = math.nan
    if not math.isfinite(mb) or mb < 0:
        raise ConfigError(MAX_MB_VAR, f"expected a size in megabytes (a number >= 0), got {raw!r}")
    return mb * 2**20


def _prune(d: Path, keep: Path) -> None:
    limit = max_cache_bytes()
    files = []
    for p in d.glob("*.parquet"):
        try:
            st = p.stat()
        except OSError:
            continue
        files.append((st.st_mtime_ns, st.st_size, p))
    total = sum(s for _, s, _ in files)
    for _, size, p in sorted(files, key=lambda f: f[0]):
        if total <= limit:
            break
        if p != keep:
            try:
                p.unlink()
                total -= size
            except OSError:
                pass


def _parquet_available() -> bool:
    """pyarrow is a core dependency; a broken install without it runs without the cache (warned
    once, the run goes on) instead of failing, or deleting cache files it merely cannot read."""
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def _give_up(what: str, e: BaseException) -> None:
    _broken.append(what)
    warnings.warn(
        f"trace cache: cannot {what} ({e}); running without it in this process (set {ENV_VAR}=off to silence this)",
        TraceCacheWarning,
        stacklevel=3,
    )


def cached_table(
    loader: str,
    files: Sequence[str | os.PathLike[str]],
    options: Mapping[str, Any],
    build: Callable[[], TraceTable],
    code: Sequence[str | os.PathLike[str]] = (),
) -> TraceTable:
    """The table ``build()`` returns for ``files`` and ``options``, from the cache when a valid file
    is there, else built and written (see the module docstring).

    Args:
        loader: a short name (the file name's prefix).
        files: the source files the table is parsed from.
        options: every loader option that changes the table (defaults filled in).
        build: parses the files (called on a miss, or when the cache is off).
        code: the loader's source files.
    """
    d = cache_dir()
    if d is None:
        return build()
    max_cache_bytes()  # a malformed limit is named before anything is parsed or written
    if not _parquet_available():
        _give_up(
            f"use {d}",
            ImportError(
                "pyarrow, which reads and writes its Parquet files, is not installed; pip install 'pyarrow>=14'"
            ),
        )
        return build()
    try:
        key = table_key(loader, files, options, code, memo_dir=d)
    except TypeError:  # an option without a canonical form: not cacheable
        return build()
    path = d / f"{loader}-{_key_hash(key)[:40]}.parquet"
    if path.exists():
        try:
            table = _read_table(path, key)
            try:
                os.utime(path)  # most recently used
            except OSError:
                pass
            return table
        except Exception as e:
            warnings.warn(
                f"trace cache: {path} is unusable ({type(e).__name__}: {e}); rebuilding it",
                TraceCacheWarning,
                stacklevel=2,
            )
            try:
                path.unlink()
            except OSError:
                pass
    table = build()
    try:
        _write_table(path, table, key)
        _prune(d, path)
    except Exception as e:
        _give_up(f"write {path}", e)
    return table
