"""The on-disk cache of parsed traces (:mod:`clustergym.traces.diskcache`): a hit gives the identical
table and replay, the key follows the options and the files' contents, a bad file is rebuilt, and the
cache can be turned off."""

from __future__ import annotations

import gzip
import os
import shutil
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from clustergym.agent_api import make_agent
from clustergym.runner import run_episode
from clustergym.scenarios import make_preset
from clustergym.traces import cache as tcache
from clustergym.traces import diskcache as dc
from clustergym.traces.google import google_tasks, read_task_events

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh cache directory for the test (through the environment variable), nothing in memory."""
    d = tmp_path / "cache"
    monkeypatch.setenv(dc.ENV_VAR, str(d))
    tcache.clear_cache()
    yield d
    tcache.clear_cache()


def _tables(d: Path) -> list[Path]:
    return sorted(d.glob("google-tasks-*.parquet"))


def _fresh(trace_dir, **opts):
    """The table parsed from the files, without any cache."""
    return google_tasks(read_task_events(trace_dir=trace_dir), **opts)


def _same(a, b) -> None:
    pd.testing.assert_frame_equal(a.jobs, b.jobs, check_exact=True)
    assert list(a.jobs.dtypes) == list(b.jobs.dtypes) and type(a.jobs.index) is type(b.jobs.index)
    assert a.report == b.report and a.resources == b.resources and a.units == b.units
    assert a.format == b.format and repr(a.origin) == repr(b.origin)


def _metrics(trace_dir) -> dict:
    sc = make_preset("google-bf-replay", num_servers=4, trace_dir=trace_dir)
    m = run_episode(sc, make_agent("best-fit", scan=64), seed=0)
    m.pop("wall_seconds")
    return m


@pytest.mark.parametrize("lifecycle", ["strict", "finished", "attempts"])
def test_a_hit_gives_the_identical_table(cache_dir, monkeypatch, lifecycle):
    cold = tcache.google_table(FIX, lifecycle=lifecycle)
    assert len(_tables(cache_dir)) == 1
    _same(cold, _fresh(FIX, lifecycle=lifecycle))
    tcache.clear_cache()  # a new process: only the disk is left

    def no_parse(*a, **k):
        raise AssertionError("parsed although the cache holds the table")

    monkeypatch.setattr(tcache, "google_events", no_parse)
    monkeypatch.setattr(tcache, "read_task_events", no_parse)
    warm = tcache.google_table(FIX, lifecycle=lifecycle)
    _same(warm, cold)
    assert not list(cache_dir.glob(".*.tmp")), "a temporary file was left behind"


def test_a_hit_gives_the_identical_replay(cache_dir, monkeypatch):
    monkeypatch.setenv(dc.ENV_VAR, "off")
    reference = _metrics(FIX)
    monkeypatch.setenv(dc.ENV_VAR, str(cache_dir))
    tcache.clear_cache()
    cold = _metrics(FIX)  # parses and writes
    tcache.clear_cache()
    warm = _metrics(FIX)  # reads the file
    assert len(_tables(cache_dir)) == 1
    assert cold == reference and warm == reference


def test_the_options_make_the_key(cache_dir):
    assert tcache.google_options(lifecycle="finished") == tcache.google_options(lifecycle="finished", first_n=None)
    files = sorted((FIX / "google-clusterdata-2011-2" / "task_events").glob("part-*"))
    keys = {dc._key_hash(dc.table_key("google-tasks", files, tcache.google_options(**o)))
            for o in ({}, {"lifecycle": "finished"}, {"first_n": 10}, {"first_n": 11}, {"priorities": [0, 1]},
                      {"window": (1000, 3000)}, {"missing_requests": "zero"})}
    assert len(keys) == 7
    a = tcache.google_table(FIX, lifecycle="strict")
    b = tcache.google_table(FIX, lifecycle="strict", first_n=10)
    c = tcache.google_table(FIX, lifecycle="strict", first_n=None)  # the defaults filled in: a's file
    assert len(_tables(cache_dir)) == 2 and len(b) == 10 and len(a) > 10
    _same(c, a)
    # another directory of the same files (another path) is another key: the report names the files
    other = cache_dir.parent / "traces-copy"
    shutil.copytree(FIX / "google-clusterdata-2011-2", other / "google-clusterdata-2011-2")
    moved = tcache.google_table(other, lifecycle="strict")
    assert len(_tables(cache_dir)) == 3 and str(other) in moved.source
    pd.testing.assert_frame_equal(moved.jobs, a.jobs, check_exact=True)


def test_a_changed_file_changes_the_key(cache_dir):
    """Same size, same modification time, other contents: another key and the new table."""
    src = FIX / "google-clusterdata-2011-2" / "task_events"
    root = cache_dir.parent / "traces"
    d = root / "google-clusterdata-2011-2" / "task_events"
    d.mkdir(parents=True)
    for p in sorted(src.glob("part-*.csv.gz")):  # uncompressed copies: one digit can change in place
        (d / p.name[:-3]).write_bytes(gzip.decompress(p.read_bytes()))
    before = tcache.google_table(root, lifecycle="finished")
    files = sorted(d.glob("part-*.csv"))
    key1 = dc.table_key("google-tasks", files, tcache.google_options(lifecycle="finished"))
    # a kept task's SCHEDULE record: one digit of its CPU request changes, the file keeps its size
    job, task = str(before.jobs["job_id"].iloc[0]), str(before.jobs["task_index"].iloc[0])

    def schedules(line: str) -> bool:
        f = line.split(",")
        return f[2] == job and f[3] == task and f[5] == "1" and f[9] != ""

    for part in files:
        lines = part.read_text().splitlines(keepends=True)
        hits = [i for i, line in enumerate(lines) if schedules(line)]
        if hits:
            break
    f = lines[hits[-1]].split(",")
    f[9] = f[9][:-1] + ("1" if f[9][-1] != "1" else "2")
    lines[hits[-1]] = ",".join(f)
    st = part.stat()
    time.sleep(0.05)  # another clock tick for the status-change time
    part.write_text("".join(lines))
    os.utime(part, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert part.stat().st_size == st.st_size and part.stat().st_mtime_ns == st.st_mtime_ns
    key2 = dc.table_key("google-tasks", files, tcache.google_options(lifecycle="finished"))
    changed = files.index(part)
    assert key1["files"][changed][1] != key2["files"][changed][1] and dc._key_hash(key1) != dc._key_hash(key2)
    after = tcache.google_table(root, lifecycle="finished")  # also a new per-process key (ctime)
    assert len(_tables(cache_dir)) == 2
    _same(after, _fresh(root, lifecycle="finished"))
    assert not after.jobs.equals(before.jobs)


def _corruptions():
    def truncate(p: Path) -> None:
        data = p.read_bytes()
        p.write_bytes(data[: len(data) // 2])

    def flip(p: Path) -> None:  # inside a data page: caught by the page checksums
        data = bytearray(p.read_bytes())
        for k in range(200, 260):
            data[k] ^= 0x5A
        p.write_bytes(bytes(data))

    def garbage(p: Path) -> None:
        p.write_bytes(b"not a parquet file")

    def empty(p: Path) -> None:
        p.write_bytes(b"")

    return [truncate, flip, garbage, empty]


@pytest.mark.parametrize("corrupt", _corruptions(), ids=lambda f: f.__name__)
def test_a_corrupt_file_is_rebuilt(cache_dir, corrupt):
    good = tcache.google_table(FIX, lifecycle="strict")
    (path,) = _tables(cache_dir)
    corrupt(path)
    tcache.clear_cache()
    with pytest.warns(dc.TraceCacheWarning, match="unusable"):
        again = tcache.google_table(FIX, lifecycle="strict")
    _same(again, good)
    tcache.clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rewritten: read without complaint
        _same(tcache.google_table(FIX, lifecycle="strict"), good)


def test_a_file_under_the_wrong_key_is_not_trusted(cache_dir):
    """A valid table file of other options, renamed to this key's name (a stale or misplaced file)."""
    tcache.google_table(FIX, lifecycle="strict")
    (strict,) = _tables(cache_dir)
    fin = tcache.google_table(FIX, lifecycle="finished")
    (fin_path,) = set(_tables(cache_dir)) - {strict}
    shutil.copyfile(strict, fin_path)
    tcache.clear_cache()
    with pytest.warns(dc.TraceCacheWarning, match="key"):
        again = tcache.google_table(FIX, lifecycle="finished")
    _same(again, fin)


def test_the_cache_can_be_turned_off(cache_dir, monkeypatch):
    monkeypatch.setenv(dc.ENV_VAR, "off")
    assert dc.cache_dir() is None
    tcache.google_table(FIX, lifecycle="strict")
    assert not cache_dir.exists()
    monkeypatch.setenv(dc.ENV_VAR, str(cache_dir))
    prev = dc.set_trace_cache(False)
    try:
        tcache.clear_cache()
        tcache.google_table(FIX, lifecycle="strict")
        assert not cache_dir.exists()
    finally:
        dc.set_trace_cache(prev)
    # the command line's --no-trace-cache (it sets the variable for the command and its workers)
    from clustergym.cli import app

    tcache.clear_cache()
    r = CliRunner().invoke(app, ["--no-trace-cache", "trace", "google", "--trace-dir", str(FIX), "--json"])
    assert r.exit_code == 0, r.output
    assert os.environ[dc.ENV_VAR] == "off" and not cache_dir.exists()


def test_default_directory_and_an_unwritable_cache(tmp_path, monkeypatch):
    monkeypatch.delenv(dc.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert dc.cache_dir() == tmp_path / "xdg" / "clustergym" / "traces"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert dc.cache_dir() == Path.home() / ".cache" / "clustergym" / "traces"
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(dc.ENV_VAR, str(blocker / "cache"))  # cannot be created: a file is in the way
    tcache.clear_cache()
    try:
        with pytest.warns(dc.TraceCacheWarning, match="running without it"):
            t = tcache.google_table(FIX, lifecycle="strict")
        _same(t, _fresh(FIX, lifecycle="strict"))
        assert dc.cache_dir() is None  # given up for the rest of the process
    finally:
        dc.set_trace_cache(None)
        tcache.clear_cache()


def test_file_digests_are_remembered_only_for_settled_files(tmp_path, monkeypatch):
    import hashlib

    memo = tmp_path / "memo"
    f = tmp_path / "part-00000.csv"
    f.write_bytes(b"1,2,3\n")
    want = hashlib.sha256(b"1,2,3\n").hexdigest()
    assert dc.file_digest(f, memo) == want
    assert not (memo / "digests").exists()  # just written: too young to remember
    monkeypatch.setattr(dc, "RACY_SECONDS", 0.0)
    assert dc.file_digest(f, memo) == want
    (m,) = (memo / "digests").iterdir()
    assert m.read_text() == want
    time.sleep(0.05)
    f.write_bytes(b"1,2,4\n")  # a write changes the stamps: the remembered digest is not used
    assert dc.file_digest(f, memo) == hashlib.sha256(b"1,2,4\n").hexdigest()


def test_without_pyarrow_the_run_goes_on_without_the_cache(cache_dir, monkeypatch):
    """A broken install without pyarrow: one clear warning, the table parsed, no file touched."""
    import sys

    tcache.google_table(FIX, lifecycle="strict")  # a valid file, written while pyarrow is there
    written = _tables(cache_dir)
    assert len(written) == 1
    tcache.clear_cache()
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` now raises ImportError
    try:
        with pytest.warns(dc.TraceCacheWarning, match="pyarrow.*not installed"):
            t = tcache.google_table(FIX, lifecycle="strict")
        _same(t, _fresh(FIX, lifecycle="strict"))
        assert _tables(cache_dir) == written  # the file it cannot read is kept, not "rebuilt"
        assert dc.cache_dir() is None  # given up for the rest of the process: no second warning
    finally:
        dc.set_trace_cache(None)
        tcache.clear_cache()
