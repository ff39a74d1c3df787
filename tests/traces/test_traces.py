"""Tests of clustergym.traces: loaders, filters, transforms, trace scenarios, summaries, ``clustergym trace``.

Two layers:

* generated fixtures in every format (``tests/fixtures/traces``, written by
  ``tests/fixtures/make_trace_fixtures.py`` from a seeded generator, no real rows): exact
  filter counts, units, malformed input (truncated gzip, missing column, non-numeric field,
  negative duration), presets and replays with every kernel invariant checked;
* the real trace subsets found by :func:`~clustergym.traces.paths.resolve_trace_dir` (``$CLUSTERGYM_TRACES``
  or the user data folder; ``@pytest.mark.traces``, skipped when absent):
  record counts against the traces README, the filters' effect, and First-Fit / Best-Fit
  replays of trace-driven scenarios.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clustergym.errors import ScenarioError, TraceFormatError
from clustergym.runner import Probe, run_episode
from clustergym.scenarios.presets.autoscale import autoscale_google
from clustergym.scenarios.presets.bfjs import bfjs_google
from clustergym.scenarios.presets.lotes import lotes_google
from clustergym.scenarios.presets.rms import rms_google
from clustergym.scenarios.presets.traces import alibaba_gpu
from clustergym.scenarios.trace_spec import trace_workload_from_spec
from clustergym.traces import (
    FORMATS,
    TraceNotFoundError,
    google_tasks,
    load_alibaba_gpu_v2023,
    load_alibaba_gpu_v2023_nodes,
    load_alibaba_gpu_v2025,
    load_alibaba_v2017,
    load_alibaba_v2017_machines,
    load_azure_v1,
    load_cloudsimpy_jobs,
    load_google,
    load_google_job_events,
    load_google_machines,
    load_trace,
    machine_shape_counts,
    plot_summary,
    read_task_events,
    resolve_trace_dir,
    summarize_trace,
    trace_data,
    traces_available,
)
from clustergym.traces import transforms as T
from clustergym.traces.azure import BIN_INTERVALS, bin_durations, read_interval_map
from clustergym.traces.cache import google_events as _google_events
from clustergym.traces.paths import default_trace_dir

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
EXPECTED = json.loads((FIX / "EXPECTED.json").read_text())
G = FIX / "google-clusterdata-2011-2"


def _shared_dir() -> Path | None:
    """The directory of the real trace subsets ($CLUSTERGYM_TRACES, else the user data folder), if present."""
    try:
        d = resolve_trace_dir()
    except TraceNotFoundError:
        return None
    return d if (d / "google-clusterdata-2011-2" / "task_events").is_dir() else None


SHARED = _shared_dir()
shared = pytest.mark.skipif(
    SHARED is None,
    reason=f"the real traces were not found ($CLUSTERGYM_TRACES unset, nothing in {default_trace_dir()}): "
    "set CLUSTERGYM_TRACES to the directory of the trace subsets (see docs/traces.md) to run these",
)


def _check_at_quarters(sc):
    """A probe that asserts the kernel invariants at 100 times spread over the trace's span."""
    span = float(sc.source.time.max()) if math.isinf(sc.horizon) else sc.horizon
    return Probe(lambda env: env.sim.check_invariants(), at=tuple(np.linspace(0.0, span, 100)))


def _run_ff_bf(sc, *, validate: bool = True, every: int | None = None):
    out = {}
    agents = ("first-fit-admit", "best-fit-admit") if sc.queueing == "loss" else ("first-fit", "best-fit")
    for a in agents:
        probes = {"_": _check_at_quarters(sc)} if every else {}
        r = run_episode(sc, a, seed=0, validate=validate, probes=probes)
        assert r["arrivals"] == int(np.sum(sc.source.time <= sc.horizon))
        if math.isinf(sc.horizon):
            assert r["completed"] + r["rejected"] == r["arrivals"]
        assert np.all(np.asarray(r["utilization"]) <= 1 + 1e-9)
        out[a] = r
    return out


# ====================================================================================== fixtures: files


def test_fixture_files_small_and_regenerable(tmp_path):
    """Each fixture file is < 50 KB and the generator rewrites them byte for byte."""
    spec = importlib.util.spec_from_file_location("make_trace_fixtures", FIX.parent / "make_trace_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    exp = mod.main(tmp_path)
    assert exp == EXPECTED
    files = [p for p in FIX.rglob("*") if p.is_file()]
    assert len(files) >= 14
    for p in files:
        assert p.stat().st_size < 50_000, p
        assert (tmp_path / p.relative_to(FIX)).read_bytes() == p.read_bytes(), p


# ====================================================================================== paths


def test_trace_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.delenv("CLUSTERGYM_TRACES", raising=False)
    assert resolve_trace_dir(FIX) == FIX
    monkeypatch.setenv("CLUSTERGYM_TRACES", str(FIX))
    assert resolve_trace_dir() == FIX
    assert traces_available()
    monkeypatch.setenv("CLUSTERGYM_TRACES", str(tmp_path / "nope"))
    with pytest.raises(TraceNotFoundError, match="CLUSTERGYM_TRACES") as e:
        resolve_trace_dir()
    assert isinstance(e.value, ScenarioError) and "download" in str(e.value)
    assert not traces_available()
    # an existing directory without the family's files: the message says what to download
    with pytest.raises(TraceNotFoundError, match="clusterdata-2011-2"):
        load_google(tmp_path)
    with pytest.raises(TraceNotFoundError, match="batch_task"):
        load_alibaba_v2017(tmp_path)


def test_without_argument_or_variable_the_traces_are_in_the_user_data_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("CLUSTERGYM_TRACES", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_trace_dir() == tmp_path / "data" / "clustergym" / "traces"
    with pytest.raises(TraceNotFoundError, match="user data folder") as e:
        resolve_trace_dir()
    assert str(tmp_path / "data" / "clustergym" / "traces") in str(e.value)
    (tmp_path / "data" / "clustergym" / "traces").mkdir(parents=True)
    assert resolve_trace_dir() == tmp_path / "data" / "clustergym" / "traces"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_trace_dir() == tmp_path / "home" / ".local" / "share" / "clustergym" / "traces"
    # never a folder beside the checkout
    assert "shared" not in default_trace_dir().parts


# ====================================================================================== Google (fixtures)


@pytest.fixture(scope="module")
def gev():
    return read_task_events(trace_dir=FIX)


def test_google_read_counts_and_units(gev):
    e = EXPECTED["google"]
    assert len(gev) == e["rows"] and gev.rows == (e["rows_part0"], e["rows"] - e["rows_part0"])
    assert gev.events["time"].dtype == np.int64 and gev.events["cpu"].dtype == np.float64
    f, line = gev.where(e["rows_part0"])  # first row of the second part
    assert f.name.startswith("part-00001") and line == 1
    assert read_task_events(G / "task_events", threads=1).events.equals(gev.events)


def test_google_strict_filter_counts(gev):
    e = EXPECTED["google"]
    t = google_tasks(gev, lifecycle="strict")
    r = t.report
    assert r.records == e["tasks"]
    assert (
        r.dropped["submitted before the window (first SUBMIT at t=0 or none in the slice)"]
        == e["strict_dropped_pre_window"]
    )
    assert r.dropped["interrupted (EVICT/FAIL/KILL/LOST)"] == e["strict_dropped_interrupted"]
    assert (
        r.dropped["not finished in the slice (pending or running at its end: right-censored)"]
        == e["strict_dropped_not_finished"]
    )
    assert r.dropped["missing CPU or memory request"] == e["strict_dropped_missing"]
    assert r.kept == len(t) == e["strict_kept"]
    r.check()  # records == kept + dropped
    j = t.jobs
    # units: seconds from the first kept SUBMIT; normalised requests; positive durations
    assert j["arrival"].iloc[0] == 0 and j["arrival"].is_monotonic_increasing
    assert np.allclose(j["submit_time"] - t.origin, j["arrival"])
    assert t.origin >= 600 and j["submit_time"].max() <= 7200
    assert (j["duration"] > 0).all() and (j["duration"] < 7200).all()
    assert j[["cpu", "memory", "disk"]].le(1).all().all() and j[["cpu", "memory"]].gt(0).all().all()
    np_ = google_tasks(gev, lifecycle="strict", priorities="non-production")
    assert len(np_) == e["strict_non_production_kept"] and np_.jobs["priority"].le(8).all()
    assert np_.report.dropped["priority not in [0, 1, 2, 3, 4, 5, 6, 7, 8]"] == e["strict_kept"] - len(np_)
    prod = google_tasks(gev, lifecycle="strict", priorities=[9, 10, 11])
    assert len(prod) + len(np_) == e["strict_kept"]


def test_google_other_lifecycles_and_options(gev):
    e = EXPECTED["google"]
    fin = google_tasks(gev, lifecycle="finished")
    assert len(fin) == e["finished_kept"]
    att = google_tasks(gev, lifecycle="attempts")
    assert len(att) == e["attempts_kept"]
    assert int(att.jobs["censored"].sum()) == e["attempts_censored"]
    assert (
        att.report.dropped["never scheduled (killed while pending, or pending at the end of the slice)"]
        == e["attempts_never_scheduled"]
    )
    assert (
        att.report.modified["running at the end of the slice: duration truncated there (right-censored)"]
        == e["attempts_censored"]
    )
    assert att.origin == 0 and (att.jobs["arrival"] == 0).sum() == EXPECTED["google"]["strict_dropped_pre_window"]
    # censored attempts end exactly at the end of the slice (7200 s)
    c = att.jobs[att.jobs["censored"]]
    assert np.allclose(c["arrival"] + c["duration"], 7200, atol=60)
    # missing requests kept as zero; min_duration
    z = google_tasks(gev, lifecycle="strict", missing_requests="zero")
    assert len(z) == e["strict_kept"] + e["strict_dropped_missing"]
    assert z.report.modified["missing CPU/memory/disk request read as 0"] == e["strict_dropped_missing"]
    # window (trace seconds) and first_n
    w = google_tasks(gev, lifecycle="strict", window=(1000, 3000))
    st_ = google_tasks(gev, lifecycle="strict")
    inside = ((st_.jobs["submit_time"] >= 1000) & (st_.jobs["submit_time"] < 3000)).sum()
    assert len(w) == inside and w.report.dropped["outside the window [1000, 3000) s"] == len(st_) - inside
    f = google_tasks(gev, lifecycle="strict", first_n=10)
    assert len(f) == 10 and f.report.dropped["after the first 10 arrivals"] == len(st_) - 10
    assert np.allclose(f.jobs["submit_time"], st_.jobs["submit_time"].iloc[:10])
    with pytest.raises(ScenarioError, match="lifecycle"):
        google_tasks(gev, lifecycle="bogus")
    with pytest.raises(ScenarioError, match="priorities"):
        google_tasks(gev, priorities="vip")


def test_google_job_and_machine_events():
    ev, rep = load_google_job_events(FIX)
    assert len(ev) == EXPECTED["google_job_events"]["rows"] == rep.rows
    assert sum(rep.counts["events"].values()) == len(ev)
    m, rep = load_google_machines(FIX)
    assert len(m) == EXPECTED["google_machines"]["at0"] and rep.rows == EXPECTED["google_machines"]["rows"]
    conf = machine_shape_counts(m)
    assert conf["count"].tolist() == [12, 7, 3, 2] and conf.iloc[0][["cpu", "memory"]].tolist() == [0.5, 0.4995]
    assert machine_shape_counts(m, decimals=2).iloc[0]["memory"] == 0.5
    later, rep = load_google_machines(FIX, at=2500.0)  # machine 100 removed at 1000 s, 101 updated at 2000 s
    assert len(later) == EXPECTED["google_machines"]["at0"] - 1 and rep.dropped["removed at or before t=2500 s"] == 1
    assert later.set_index("machine_id").loc[101, "memory"] == 0.749
    ever, _ = load_google_machines(FIX, at=None)
    assert len(ever) == EXPECTED["google_machines"]["ever"]
    first, _ = load_google_machines(FIX, at=None, capacity="first")
    assert first.set_index("machine_id").loc[101, "memory"] == 0.4995


# ====================================================================================== Alibaba, Azure (fixtures)


def test_alibaba_v2017_fixture(tmp_path):
    e = EXPECTED["alibaba_v2017"]
    t = load_alibaba_v2017(FIX)
    assert t.report.rows == e["rows"] and len(t) == e["kept_default"]
    assert t.report.dropped["status not in ['Terminated'] (not ended: censored)"] == e["status_dropped"]
    assert t.report.dropped["created at or before 0 (before the window)"] == e["pre_window"]
    assert t.report.dropped["zero duration"] == e["zero"]
    assert set(t.jobs["cpu"]) <= {0.5, 1.0, 2.0}  # plan_cpu / 100 = cores
    pre = load_alibaba_v2017(FIX, include_pre_window=True)
    assert len(pre) == e["kept_default"] + e["pre_window"] and pre.origin < 0
    both = load_alibaba_v2017(FIX, statuses=["Terminated", "Failed"])
    assert len(both) == e["kept_default"] + 6
    # the official file has no header line: same rows
    src = FIX / "alibaba-v2017" / "batch_task.csv.gz"
    lines = gzip.decompress(src.read_bytes()).decode().splitlines(keepends=True)
    (tmp_path / "bt.csv").write_text("".join(lines[1:]))
    nh = load_alibaba_v2017(path=tmp_path / "bt.csv")
    assert nh.jobs.equals(t.jobs)
    m, rep = load_alibaba_v2017_machines(FIX)
    assert len(m) == e["machines"] and rep.counts["events"] == {"add": 20, "softerror": 1}
    with pytest.raises(ScenarioError, match="statuses"):
        load_alibaba_v2017(FIX, statuses=["Done"])


def test_cloudsimpy_fixture():
    t = load_cloudsimpy_jobs(FIX)
    assert len(t) == EXPECTED["cloudsimpy"]["rows"] and t.resources == ("cpu", "memory", "disk")
    assert t.jobs["arrival"].is_monotonic_increasing and (t.jobs["duration"] > 0).all()
    assert load_trace("cloudsimpy", trace_dir=FIX, first_n=7).report.kept == 7


def test_alibaba_gpu_v2023_fixture():
    e = EXPECTED["alibaba_gpu_v2023"]
    t = load_alibaba_gpu_v2023(FIX)
    assert t.report.dropped["phase not in ['Running', 'Succeeded', 'Failed']"] == e["pending"]
    assert len(t) == e["rows"] - e["pending"]
    j = t.jobs
    assert np.allclose(j["gpu"], j["num_gpu"] * j["gpu_milli"] / 1000)
    assert j["cpu"].isin([1, 4, 8, 16]).all() and j["memory"].isin([1, 4, 16, 64]).all()  # vCPU, GiB
    c = load_alibaba_gpu_v2023(FIX, clip_before=10_000_000)
    early = (t.jobs["creation_time"] < 10_000_000).sum()
    gone = c.report.dropped["deleted by clip_before=1e+07 s"]
    assert len(c) == len(t) - gone
    assert (
        c.report.modified["created before clip_before=1e+07 s: arrive then with the remaining lifetime (left-censored)"]
        == early - gone
    )
    assert c.jobs["creation_time"].min() == 10_000_000
    nodes, rep = load_alibaba_gpu_v2023_nodes(FIX)
    assert len(nodes) == e["nodes"] and rep.counts["gpus"] == 40 and nodes["cpu"].max() == 104


def test_alibaba_gpu_v2025_fixture():
    e = EXPECTED["alibaba_gpu_v2025"]
    t = load_alibaba_gpu_v2025(FIX)
    r = t.report
    assert r.counts["no_creation_time (left-censored)"] == e["left"] + e["none"]
    assert r.counts["no_deletion_time (right-censored)"] == e["right"] + e["none"]
    assert r.dropped["no creation time (existed before the trace: left-censored)"] == e["left"] + e["none"]
    assert r.dropped["zero duration"] == e["zero"]
    assert len(t) == e["both"] + e["right"] and int(t.jobs["censored"].sum()) == e["right"]
    cens = t.jobs[t.jobs["censored"]]
    assert np.allclose(cens["creation_time"] + cens["duration"], e["end"])  # truncated at the trace end
    a = load_alibaba_gpu_v2025(FIX, left_censored="at_start", right_censored="drop")
    assert len(a) == e["both"] + e["left"] and a.jobs["creation_time"].min() == 0
    hn = load_alibaba_gpu_v2025(FIX, roles=["HN"])
    assert (hn.jobs["role"] == "HN").all() and (hn.jobs["gpu"] == 1).all()
    assert t.resources == ("cpu", "gpu", "rdma", "memory", "disk")


def test_azure_fixture(tmp_path):
    e = EXPECTED["azure"]
    t = load_azure_v1(FIX, split="dev")
    assert t.report.rows == e["lines"] and t.report.records == e["vms"] == len(t)
    assert t.report.counts["censored"] == e["censored"] and int(t.jobs["censored"].sum()) == e["censored"]
    c = t.jobs[t.jobs["censored"]]
    assert np.allclose(c["time"] + c["duration"], e["censor_time"])  # truncated at the censoring time
    u = t.jobs[~t.jobs["censored"]]
    assert np.allclose(u["duration"], bin_durations(u["duration_bin"].to_numpy()))
    assert set(zip(t.jobs["vcpu"], t.jobs["memory"])) <= {(1, 0.75), (1, 1.75), (2, 3.5), (4, 7), (8, 14)}
    d = load_azure_v1(FIX, split="dev", censored="drop")
    assert len(d) == e["vms"] - e["censored"]
    s = load_azure_v1(FIX, split="dev", arrival="spread")
    assert s.jobs["arrival"].is_monotonic_increasing and not np.allclose(s.jobs["arrival"] % 300, 0)
    assert (t.jobs.groupby("batch")["time"].nunique() == 1).all()
    with pytest.raises(TraceNotFoundError, match="v1.test.txt.gz not found"):
        load_azure_v1(FIX, split="test")
    z = tmp_path / "azure-v1-tracegen-rnn"
    z.mkdir()
    shutil.copy(FIX / "azure-v1-tracegen-rnn" / "v1.dev.txt.gz", z / "v1.train.txt.gz")
    with pytest.raises(TraceNotFoundError, match="durations for the dev and test splits only"):
        load_azure_v1(tmp_path, split="train")
    tr = load_azure_v1(tmp_path, split="train", durations=False)
    assert len(tr) == e["vms"] and tr.jobs["duration"].isna().all()
    with pytest.raises(TraceFormatError, match="have no duration"):
        tr.to_source()
    assert np.array_equal(read_interval_map(FIX / "azure-v1-tracegen-rnn" / "v1.interval_map.txt.gz"), BIN_INTERVALS)
    assert bin_durations([0, 1, 12, 13, 36, 45]).tolist() == [150, 300, 3600, 5400, 86400 * 1.5, 86400 * 15]
    assert bin_durations([13], "upper")[0] == 7200 and bin_durations([13], "lower")[0] == 3600


# ====================================================================================== malformed input


def _part0_lines() -> list[str]:
    return gzip.decompress((G / "task_events" / "part-00000-of-00500.csv.gz").read_bytes()).decode().splitlines()


def _write_gz(path: Path, lines: list[str]) -> Path:
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return path


def test_malformed_truncated_gzip(tmp_path):
    data = (G / "task_events" / "part-00000-of-00500.csv.gz").read_bytes()
    bad = tmp_path / "part-00000-of-00500.csv.gz"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(
        TraceFormatError,
        match=r"part-00000-of-00500\.csv\.gz: truncated or corrupt gzip stream "
        r"after line \d+",
    ):
        read_task_events(bad)
    pods = tmp_path / "jobs.csv.gz"
    pods.write_bytes((FIX / "cloudsimpy-alibaba-v2017-jobs" / "jobs.csv.gz").read_bytes()[:900])
    with pytest.raises(TraceFormatError, match="truncated or corrupt gzip"):
        load_cloudsimpy_jobs(path=pods)


def test_malformed_missing_column(tmp_path):
    # a header CSV without a needed column: line 1 (header), the column named
    pods = (FIX / "alibaba-gpu-v2023" / "openb_pod_list_default.csv").read_text().splitlines()
    df = pd.read_csv(FIX / "alibaba-gpu-v2023" / "openb_pod_list_default.csv").drop(columns=["cpu_milli"])
    df.to_csv(tmp_path / "pods.csv", index=False)
    with pytest.raises(TraceFormatError, match=r"pods\.csv: line 1 \(header\): missing column 'cpu_milli'"):
        load_alibaba_gpu_v2023(path=tmp_path / "pods.csv")
    # a headerless Google line cut short: the missing field is named with its line
    lines = _part0_lines()
    lines[41] = ",".join(lines[41].split(",")[:7])
    with pytest.raises(
        TraceFormatError,
        match=r"line 42, field 'priority' \(column 9\): missing \(the line has 7 "
        r"fields, expected 13\)",
    ):
        read_task_events(_write_gz(tmp_path / "part-00000-of-00500.csv.gz", lines))
    # a mandatory value left empty in a header file
    pods[5] = pods[5].replace("Running", "").replace("Failed", "").replace("Succeeded", "").replace("Pending", "")
    (tmp_path / "pods2.csv").write_text("\n".join(pods) + "\n")
    with pytest.raises(TraceFormatError, match=r"line 6, field 'pod_phase' \(column 8\): missing value"):
        load_alibaba_gpu_v2023(path=tmp_path / "pods2.csv")


def test_malformed_non_numeric(tmp_path):
    lines = _part0_lines()
    f = lines[99].split(",")
    f[9] = "abc"
    lines[99] = ",".join(f)
    with pytest.raises(TraceFormatError, match=r"line 100, field 'CPU request' \(column 10\): not a number: 'abc'"):
        read_task_events(_write_gz(tmp_path / "part-00000-of-00500.csv.gz", lines))
    lines = _part0_lines()
    f = lines[4].split(",")
    f[2] = "12x"
    lines[4] = ",".join(f)
    with pytest.raises(TraceFormatError, match=r"line 5, field 'job ID' \(column 3\): not an integer: '12x'"):
        read_task_events(_write_gz(tmp_path / "y.csv.gz", lines))
    pods = (FIX / "alibaba-gpu-v2023" / "openb_pod_list_default.csv").read_text().splitlines()
    row = pods[3].split(",")
    row[9] = "soon"
    pods[3] = ",".join(row)
    (tmp_path / "pods.csv").write_text("\n".join(pods) + "\n")
    with pytest.raises(TraceFormatError, match=r"pods\.csv: line 4, field 'deletion_time' \(column 10\): not a number"):
        load_alibaba_gpu_v2023(path=tmp_path / "pods.csv")
    azure = gzip.decompress((FIX / "azure-v1-tracegen-rnn" / "v1.dev.txt.gz").read_bytes()).decode().splitlines()
    azure[2] = azure[2].replace(",|", ",z,|", 1)
    _write_gz(tmp_path / "v1.dev.txt.gz", azure)
    with pytest.raises(TraceFormatError, match=r"v1\.dev\.txt\.gz: line 3, field 'token \d+': unknown flavour 'z'"):
        load_azure_v1(FIX, split="dev", flavors_path=tmp_path / "v1.dev.txt.gz", durations=False)


def test_malformed_nan_field_and_header_only_csv(tmp_path):
    """A nan or inf where a number belongs names its line and 1-based column; a CSV with a header
    and no data line says it holds no job."""
    lines = _part0_lines()
    f = lines[99].split(",")
    f[9] = "nan"
    lines[99] = ",".join(f)
    with pytest.raises(
        TraceFormatError,
        match=r"line 100, field 'CPU request' \(column 10\): not a finite number: "
        r"'nan'",
    ):
        read_task_events(_write_gz(tmp_path / "part-00000-of-00500.csv.gz", lines))
    pods = (FIX / "alibaba-gpu-v2023" / "openb_pod_list_default.csv").read_text().splitlines()
    (tmp_path / "pods.csv").write_text(pods[0] + "\n")
    with pytest.raises(TraceFormatError, match=r"pods\.csv: no data line after the header: the file holds no job"):
        load_alibaba_gpu_v2023(path=tmp_path / "pods.csv")


def test_malformed_negative_duration(tmp_path):
    # Google: a FINISH stamped before its SCHEDULE
    ev = read_task_events(G / "task_events" / "part-00000-of-00500.csv.gz")
    e = ev.events
    lines = _part0_lines()
    sched = e[e["event"] == 1].set_index(["job", "task"])["time"]
    fin = int(
        next(i for i in e[e["event"] == 4].index if sched.get((e["job"].iloc[i], e["task"].iloc[i]), 0) > 10_000_000)
    )
    sch = int(e[(e["job"] == e["job"].iloc[fin]) & (e["task"] == e["task"].iloc[fin]) & (e["event"] == 1)].index[0])
    f = lines[fin].split(",")
    f[0] = str(int(e["time"].iloc[sch]) - 5_000_000)
    lines[fin] = ",".join(f)
    with pytest.raises(TraceFormatError, match=rf"line {fin + 1}, field 'time': negative duration"):
        load_google(task_events=_write_gz(tmp_path / "part-00000-of-00500.csv.gz", lines))
    # v2017: an ended task whose end precedes its creation
    bt = gzip.decompress((FIX / "alibaba-v2017" / "batch_task.csv.gz").read_bytes()).decode().splitlines()
    row = bt[3].split(",")
    row[1] = str(int(row[0]) - 10)
    bt[3] = ",".join(row)
    p = _write_gz(tmp_path / "batch_task.csv.gz", bt)
    with pytest.raises(
        TraceFormatError, match=r"batch_task\.csv\.gz: line 4, field 'task_end_time': negative duration"
    ):
        load_alibaba_v2017(path=p)
    dropped = load_alibaba_v2017(path=p, invalid="drop")  # counted, not silent
    assert dropped.report.dropped["negative duration (end before start)"] == 1
    assert len(dropped) == EXPECTED["alibaba_v2017"]["kept_default"] - 1
    # CloudSimPy: a negative duration column
    js = pd.read_csv(FIX / "cloudsimpy-alibaba-v2017-jobs" / "jobs.csv.gz", index_col=0)
    js.iloc[7, js.columns.get_loc("duration")] = -3.0
    js.to_csv(tmp_path / "jobs.csv")
    with pytest.raises(TraceFormatError, match=r"jobs\.csv: line 9, field 'duration': negative duration -3"):
        load_cloudsimpy_jobs(path=tmp_path / "jobs.csv")


# ====================================================================================== transforms


def test_pow_half_rounding_exact():
    x = np.array([1.0, 0.5, 0.5000001, 0.3, 0.25, 0.2500001, 0.125, 0.001, 2.0**-9, 2.0**-10, 0.0, np.nan])
    assert T.pow_half_exponent(x).tolist() == [0, 1, 0, 1, 2, 1, 3, 9, 9, 9, 9, 9]
    assert T.round_up_pow_half([0.3, 0.0]).tolist() == [0.5, 2.0**-9]
    # the type is the max of the rounded-up demands: (0.3 -> 1/2, 0.05 -> 1/16) gives 1/2
    assert T.rms_type([0.3, 0.01], [0.05, 0.2]).tolist() == [1, 2]
    assert T.pow_half_type_demand(2, 2).tolist() == [[1, 1], [0.5, 0.5], [0.25, 0.25]]
    with pytest.raises(ScenarioError, match="in \\[0, 1\\]"):
        T.pow_half_exponent([1.5])


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-12, max_value=1.0, allow_nan=False), st.integers(0, 20))
def test_pow_half_property(x, p_max):
    p = int(T.pow_half_exponent(x, p_max))
    size = 2.0**-p
    assert 0 <= p <= p_max and size >= x
    assert p == p_max or size / 2 < x  # the smallest power of 1/2 that is >= x


def test_max_clamp_priority_time_transforms():
    assert T.max_demand([0.1, 0.5], [0.3, 0.2]).tolist() == [0.3, 0.5]
    v, n = T.clamp_min([0.0, 0.0005, 0.2], 1e-3)
    assert v.tolist() == [1e-3, 1e-3, 0.2] and n == 2
    assert T.map_priority([0, 1, 5, 9, 11], "autoscale-factor").tolist() == [1, 1, 3, 9, 9]
    assert T.map_priority([0, 1, 5, 9], "autoscale-band").tolist() == [0, 0, 1, 2]
    assert T.map_priority([0, 1], "mris").tolist() == [1, 2]
    assert T.map_priority([0, 1], "mris-natural").tolist() == [2, 1]
    assert T.map_priority([0, 3, 10], {"0-1": 1, "2-8": 3, "9-11": 9}).tolist() == [1, 3, 9]
    with pytest.raises(ScenarioError, match="no value for priorities \\[7\\]"):
        T.map_priority([7], {0: 1})
    assert T.priority_band("non-production") == tuple(range(9)) and T.priority_band(None) is None
    assert T.scale_arrivals([0, 10, 20], 2.0).tolist() == [0, 5, 10]  # traffic scaling 2 = arrivals twice as fast
    with pytest.raises(ScenarioError, match="traffic_scaling"):
        T.scale_arrivals([1], 0)
    df = pd.DataFrame({"arrival": [5.0, 1.0, 3.0, 8.0]})
    w, n = T.window(df, 2, 6)
    assert w["arrival"].tolist() == [5.0, 3.0] and n == 2
    f, n = T.first_n(df, 2)
    assert f["arrival"].tolist() == [1.0, 3.0] and n == 2
    a, o = T.rebase([4.0, 6.0])
    assert a.tolist() == [0, 2] and o == 4


def test_kmeans_classes():
    rng = np.random.default_rng(1)
    centers = np.array([[0.02, 0.01], [0.02, 0.03], [0.07, 0.03], [0.2, 0.06]])
    X = np.vstack([c + rng.normal(0, 0.002, (200, 2)) for c in centers])
    lab, C = T.kmeans_classes(X, 4, seed=3)
    assert np.allclose(np.sort(C, axis=0), np.sort(centers, axis=0), atol=0.002)
    assert np.array_equal(np.bincount(lab), [200, 200, 200, 200])
    lab2, C2 = T.kmeans_classes(X, 4, seed=3)
    assert np.array_equal(lab, lab2) and np.array_equal(C, C2)  # deterministic
    fit = np.zeros(len(X), bool)
    fit[::2] = True  # fit on half, assign all
    lab3, _ = T.kmeans_classes(X, 4, fit_mask=fit, seed=0)
    assert len(set(zip(lab3.tolist(), lab.tolist()))) == 4  # the same partition (labels may be permuted)
    tab = T.class_table(lab, np.ones(len(X)) * 3600, {"cpu": X[:, 0]})
    assert tab["proportion"].tolist() == [0.25] * 4 and tab["mean_duration_h"].tolist() == [1.0] * 4
    with pytest.raises(ScenarioError, match="k"):
        T.kmeans_classes(X[:3], 4)


# ====================================================================================== presets and replays (fixtures)


def test_rms_google_preset_on_fixtures():
    sc = rms_google(num_servers=3, trace_dir=str(FIX))
    e = EXPECTED["google"]
    assert sc.num_types == 10 and sc.source.types.exact
    assert sc.params["jobs"] == e["strict_non_production_kept"] == len(sc.source.time)
    assert np.allclose(sc.source.types.demand[:, 0], 2.0 ** -np.arange(10))
    assert sc.source.types.names[:3] == ("1", "1/2", "1/4")
    assert sc.params["trace_report"]["kept"] == sc.params["jobs"]
    fast = rms_google(num_servers=3, traffic_scaling=2.0, trace_dir=str(FIX))
    assert np.allclose(fast.source.time * 2, sc.source.time) and np.array_equal(fast.source.work, sc.source.work)
    res = _run_ff_bf(sc)
    assert res["best-fit"]["mean_queue_length"] > 0  # 3 servers: the trace queues
    # dummy-job lifetimes use the per-type empirical mean
    t = sc.source.type
    j = int(np.bincount(t).argmax())
    assert sc.source.types.mean_work[j] == pytest.approx(sc.source.work[t == j].mean())


def test_other_presets_on_fixtures():
    b = bfjs_google(num_servers=2, trace_dir=str(FIX))
    assert b.epochs.tick_period == 1.0 and not b.source.types.exact
    assert np.all(b.source.time == np.floor(b.source.time)) and np.all(b.source.work >= 1)
    assert b.source.demand.min() >= 1e-3
    _run_ff_bf(b.with_horizon(20_000.0), validate=False, every=50)
    lo = lotes_google(k=2, trace_dir=str(FIX))
    assert lo.num_resources == 2 and lo.num_types == 2 and lo.num_servers == EXPECTED["google_machines"]["ever"]
    confs = lo.params["machine_configurations"]
    assert sum(c["count"] for c in confs) == lo.num_servers and confs[0] == {"cpu": 0.5, "memory": 0.5, "count": 11}
    assert lo.params["jobs"] == EXPECTED["google"]["attempts_kept"]
    _run_ff_bf(lo)
    a = autoscale_google(num_servers=2, trace_dir=str(FIX))
    assert a.queueing == "loss" and a.num_types == 30 and a.source.types.exact
    res = _run_ff_bf(a)
    assert res["first-fit-admit"]["rejected"] > 0
    g = alibaba_gpu(trace_dir=str(FIX), clip_before=None)
    assert g.resources == ("cpu", "memory", "gpu") and g.num_servers == EXPECTED["alibaba_gpu_v2023"]["nodes"]
    _run_ff_bf(g)
    from clustergym.scenarios import PRESETS

    trace_presets = {name: p for name, p in PRESETS.items() if p.needs_traces}
    # azure-vms (the suite's trace task) is covered by tests/workloads/test_windows.py and tests/suite
    assert set(trace_presets) == {
        "rms-google",
        "bfjs-google",
        "lotes-google",
        "autoscale-google",
        "alibaba-gpu",
        "google-bf-replay",
        "mris-alibaba",
        "azure-vms",
        "google-tasks",
    }
    for p in trace_presets.values():
        assert callable(p.build) and p.description and "\n" not in p.description
        assert "trace_dir" in p.defaults()


TRACE_PRESET_ARGS = {  # arguments that fit the small fixture traces
    "rms-google": {"num_servers": 3},
    "bfjs-google": {"num_servers": 2},
    "lotes-google": {"k": 2},
    "autoscale-google": {"num_servers": 2},
    "alibaba-gpu": {"clip_before": None},
    "google-bf-replay": {"num_servers": 2},
    "google-tasks": {"num_servers": 2, "window_hours": 0.5, "start_hour": 0},
}


@pytest.mark.parametrize("name", list(TRACE_PRESET_ARGS))
def test_trace_preset_params_hold_its_arguments_and_are_json_ready(name):
    """``params`` starts with the preset's own arguments (nothing the preset imported while building) and
    ``describe()`` is plain JSON."""
    from clustergym.scenarios import PRESETS, make_preset

    sc = make_preset(name, trace_dir=str(FIX), **TRACE_PRESET_ARGS[name])
    args = set(PRESETS[name].defaults())
    assert args <= set(sc.params)
    assert not [k for k, v in sc.params.items() if callable(v) or isinstance(v, type(json))], name
    assert json.loads(json.dumps(sc.describe()))["params"]["trace_dir"] == str(FIX)


def test_preset_parameter_errors():
    with pytest.raises(ScenarioError, match="params.num_servers"):
        rms_google(num_servers=0, trace_dir=str(FIX))
    with pytest.raises(ScenarioError, match="params.traffic_scaling"):
        rms_google(traffic_scaling=-1, trace_dir=str(FIX))
    with pytest.raises(TraceNotFoundError):
        rms_google(trace_dir="/nonexistent/traces")


# ====================================================================================== scenario-file workloads


def test_trace_workload_from_spec(tmp_path):
    spec = {
        "kind": "trace",
        "format": "google",
        "trace_dir": str(FIX),
        "filters": {"lifecycle": "strict", "priorities": "non-production", "first_n": 50},
        "transforms": [{"rms_type": {"p_max": 9}}, {"scale_arrivals": {"traffic_scaling": 2}}],
    }
    src = trace_workload_from_spec(spec, "workload", 1, tmp_path)
    assert len(src.time) == 50 and src.types.exact and src.types.num_types == 10
    # path relative to the scenario file's directory
    rel = {
        "kind": "trace",
        "format": "cloudsimpy",
        "path": "jobs.csv.gz",
        "transforms": [{"max_of": {"columns": ["cpu", "memory"], "as": "size"}}, {"first_n": 10}],
        "demand": ["size"],
    }
    shutil.copy(FIX / "cloudsimpy-alibaba-v2017-jobs" / "jobs.csv.gz", tmp_path / "jobs.csv.gz")
    assert len(trace_workload_from_spec(rel, "workload", 1, tmp_path).time) == 10
    multi = {"format": "alibaba-gpu-v2023", "trace_dir": str(FIX), "filters": {"phases": ["Running"]}}
    assert trace_workload_from_spec(multi, "workload", 3, tmp_path).num_resources == 3
    km = {
        "format": "azure",
        "trace_dir": str(FIX),
        "filters": {"split": "dev", "window": [0, 1_803_000]},
        "transforms": [{"scale": {"column": "memory", "factor": 0.5}}, {"kmeans": {"k": 2, "seed": 1}}, {"rebase": {}}],
        "type": "class",
    }
    k2 = trace_workload_from_spec(km, "workload", 2, tmp_path)
    assert k2.types.num_types == 2 and k2.time[0] == 0
    w = {
        "format": "google",
        "trace_dir": str(FIX),
        "filters": {"lifecycle": "finished"},
        "transforms": [
            {"rms_type": {}},
            {"priority_map": {"map": "autoscale-factor", "as": "reward", "times": "size"}},
        ],
        "reward_rate": "reward",
    }
    assert trace_workload_from_spec(w, "w", 1, tmp_path).reward_rate.max() <= 9


@pytest.mark.parametrize(
    "spec, field, match",
    [
        ({"format": "gcp"}, "workload.format", "expected one of"),
        ({"format": "google", "trace_dir": str(FIX), "filters": {"prio": 1}}, "workload.filters.prio", "has no filter"),
        (
            {"format": "google", "trace_dir": str(FIX), "filters": {"lifecycle": "x"}},
            "workload.filters.lifecycle",
            "expected one of",
        ),
        (
            {"format": "google", "trace_dir": str(FIX), "transforms": [{"rms_type": {"pmax": 9}}]},
            "workload.transforms[0].rms_type.pmax",
            "unknown argument",
        ),
        (
            {"format": "google", "trace_dir": str(FIX), "transforms": [{"explode": {}}]},
            "workload.transforms[0].explode",
            "unknown transform",
        ),
        (
            {"format": "google", "trace_dir": str(FIX), "transforms": [{"max_of": {"columns": ["cpu", "gpu"]}}]},
            "workload.transforms[0].max_of.columns",
            "no column 'gpu'",
        ),
        ({"format": "google", "trace_dir": str(FIX), "demand": ["cpu"]}, "workload.demand", "expected 2 columns"),
        ({"format": "cloudsimpy", "path": "missing.csv"}, "workload.path", "not found"),
        ({"format": "google", "trace_dir": str(FIX), "bogus": 1}, "workload.bogus", "unknown field"),
        ({"format": "google", "trace_dir": "/no/such/dir"}, "workload.trace_dir", "does not exist"),
    ],
)
def test_trace_workload_errors(tmp_path, spec, field, match):
    with pytest.raises(ScenarioError, match=match) as e:
        trace_workload_from_spec(spec, "workload", 2, tmp_path)
    assert e.value.field == field


def test_trace_workload_malformed_file_names_line(tmp_path):
    lines = _part0_lines()
    lines[2] = (
        lines[2].replace(lines[2].split(",")[8], "high", 1)
        if False
        else ",".join(lines[2].split(",")[:8] + ["high"] + lines[2].split(",")[9:])
    )
    _write_gz(tmp_path / "part-00000-of-00500.csv.gz", lines)
    with pytest.raises(ScenarioError, match=r"line 3, field 'priority' \(column 9\): not an integer: 'high'") as e:
        trace_workload_from_spec({"format": "google", "path": "."}, "workload", 3, tmp_path)
    assert e.value.field == "workload.path"


# ====================================================================================== summary and CLI


def test_summary_and_plot(tmp_path):
    t = load_google(FIX, lifecycle="strict")
    s = summarize_trace(trace_data(t))
    assert s["jobs"] == len(t) and s["span"]["first_s"] == 0
    assert sum(s["arrival_rate"]["counts"]) == len(t) and s["arrival_rate"]["bin_width_s"] == 1200
    assert set(s["demand"]) == {"cpu", "memory", "disk"} and s["demand"]["cpu"]["max"] <= 1
    assert s["duration"]["p50"] == pytest.approx(float(np.median(t.jobs["duration"])))
    assert s["filter_report"]["kept"] == len(t)
    sc = bfjs_google(trace_dir=str(FIX))
    sd = summarize_trace(trace_data(sc))
    assert sd["jobs"] == sc.params["jobs"] and sd["span"]["length_s"] == pytest.approx(
        (sc.source.time[-1] - sc.source.time[0]) * 0.1
    )
    assert summarize_trace(trace_data(rms_google(trace_dir=str(FIX))))["types"]["1/512"] >= 0
    out = plot_summary(trace_data(t), tmp_path / "g.png")
    assert out.stat().st_size > 5000


def _cli(*args: str):
    from clustergym.cli import app  # the command line's one error path (exit 2, a JSON error document)

    r = CliRunner().invoke(app, ["trace", *args])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


def test_cli_trace_json_and_table(tmp_path):
    code, out, err = _cli(
        "google",
        "--trace-dir",
        str(FIX),
        "--lifecycle",
        "strict",
        "--priorities",
        "non-production",
        "--json",
        "--plot",
        str(tmp_path / "p.png"),
    )
    assert code == 0, err
    doc = json.loads(out)  # exactly one JSON document on stdout
    assert doc["jobs"] == EXPECTED["google"]["strict_non_production_kept"] and (tmp_path / "p.png").exists()
    code, out, err = _cli("rms-google", "--trace-dir", str(FIX), "--set", "num_servers=10", "--first-n", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["jobs"] == 20
    code, out, err = _cli("azure", "--trace-dir", str(FIX), "--filter", "split=dev", "--window", "1800000:1803000")
    assert code == 0, err
    assert "demand quantiles per resource" in out and "vcpu" in out and "arrival rate over time" in out
    code, out, err = _cli("nonsense", "--json")
    assert code == 2 and "unknown trace" in json.loads(out)["error"]["message"] and "unknown trace" in err
    code, out, err = _cli("google", "--trace-dir", str(FIX), "--filter", "prio=1", "--json")
    assert code == 2 and "has no filter" in json.loads(out)["error"]["message"] and "has no filter" in err


def test_formats_registry():
    assert set(FORMATS) == {"google", "alibaba-v2017", "cloudsimpy", "alibaba-gpu-v2023", "alibaba-gpu-v2025", "azure"}
    for fmt in FORMATS:
        if fmt != "azure":
            assert len(load_trace(fmt, trace_dir=FIX)) > 0, fmt
    assert len(load_trace("azure", trace_dir=FIX, split="dev")) == EXPECTED["azure"]["vms"]


# ====================================================================================== the shared real traces


@pytest.fixture(scope="module")
def real_events():
    return _google_events(None)  # shared with the presets' cache: read once per session


@shared
@pytest.mark.traces
def test_real_google_counts(real_events):
    """Record counts documented with the Google trace slice: rows per part, events per type, tasks, t=0 rows, missing requests."""
    ev = real_events
    assert len(ev) == 2_609_335
    assert ev.rows == (
        450_146,
        77_776,
        160_642,
        115_400,
        115_555,
        167_471,
        154_001,
        188_349,
        132_651,
        265_865,
        220_704,
        163_282,
        216_156,
        181_337,
    )
    e = ev.events
    assert np.bincount(e["event"], minlength=9).tolist() == [
        936_182,
        890_517,
        219_839,
        18_604,
        330_742,
        213_308,
        0,
        3,
        140,
    ]
    assert e["job"].nunique() == 19_146 and len(e.groupby(["job", "task"]).size()) == 614_019
    assert int((e["time"] == 0).sum()) == 277_321 and int(e["time"].max()) == 70_756_165_077
    assert int(e["cpu"].isna().sum()) == 291


@shared
@pytest.mark.traces
def test_real_google_filters(real_events):
    t = google_tasks(real_events, lifecycle="strict", priorities="non-production")
    r = t.report
    r.check()
    assert r.records == 614_019
    # measured on the shared slice (docs/traces.md): the RMS filter keeps 288,424 tasks
    assert r.dropped["submitted before the window (first SUBMIT at t=0 or none in the slice)"] == 144_339
    assert r.dropped["interrupted (EVICT/FAIL/KILL/LOST)"] == 149_234
    assert r.dropped["scheduled more than once"] == 2_279
    assert r.dropped["not finished in the slice (pending or running at its end: right-censored)"] == 28_088
    assert r.dropped["priority not in [0, 1, 2, 3, 4, 5, 6, 7, 8]"] == 1_655
    assert len(t) == 288_424
    j = t.jobs
    # units: seconds; the slice is 70,756 s long and starts at 600 s; run times at most the README's 48,534 s
    assert 600 < t.origin < 700 and j["arrival"].max() < 70_756 - 600
    assert 0 < j["duration"].min() and j["duration"].max() <= 48_534
    assert j[["cpu", "memory"]].le(1).all().all() and j["priority"].le(8).all()
    first = google_tasks(real_events, lifecycle="strict", priorities="non-production", first_n=20_000)
    assert len(first) == 20_000 and first.report.dropped["after the first 20000 arrivals"] == 288_424 - 20_000
    assert first.jobs["arrival"].max() <= j["arrival"].iloc[20_000]


@shared
@pytest.mark.traces
def test_real_google_job_and_machine_events():
    ev, rep = load_google_job_events()
    assert len(ev) == 53_410 and ev["time"].max() == 70_754_898_419
    assert rep.counts["events"] == {
        "SUBMIT": 19_152,
        "SCHEDULE": 19_149,
        "EVICT": 1,
        "FAIL": 186,
        "FINISH": 9_644,
        "KILL": 5_278,
        "LOST": 0,
        "UPDATE_PENDING": 0,
        "UPDATE_RUNNING": 0,
    }
    m, rep = load_google_machines()
    assert rep.rows == 37_780 and rep.counts["machines_ever"] == 12_583
    assert rep.counts["events"] == {"ADD": 21_443, "REMOVE": 8_957, "UPDATE": 7_380}
    assert len(m) == 12_477
    conf = machine_shape_counts(m)
    assert conf["count"].tolist()[:5] == [6_672, 3_835, 992, 788, 123]
    assert conf[["cpu", "memory"]].iloc[0].tolist() == [0.5, 0.4995]
    # every machine with its last known capacity, rounded to 2 decimals: LoTES Table 1 exactly
    ever, _ = load_google_machines(at=None)
    t1 = machine_shape_counts(ever, decimals=2)
    assert t1["count"].tolist() == [6732, 3863, 1001, 795, 126, 52, 5, 5, 3, 1]


@shared
@pytest.mark.traces
def test_real_alibaba_and_azure_counts():
    v = load_alibaba_v2017()
    assert v.report.rows == 80_553 and v.report.counts["jobs"] == 12_951
    assert v.report.counts["instances"] == 11_909_321
    assert v.report.counts["status"] == {"Terminated": 67_013, "Waiting": 8_847, "Running": 3_567, "Failed": 1_126}
    every = load_alibaba_v2017(
        statuses=["Terminated", "Failed", "Running", "Waiting"], include_pre_window=True, invalid="drop"
    )
    assert every.report.dropped["no CPU/memory plan"] == 9_017
    m, rep = load_alibaba_v2017_machines()
    assert rep.rows == 1_352 and rep.counts["events"] == {"add": 1_313, "softerror": 39} and m["cpu"].eq(64).all()
    c = load_cloudsimpy_jobs()
    assert len(c) == 31_756 and c.report.counts == {"jobs": 5_216, "instances": 2_551_075}
    assert c.jobs["submit_time"].max() == 59_829 and c.jobs["cpu"].between(0.4, 3.0).all()
    assert c.jobs["duration"].between(1, 3_628.9).all()
    p = load_alibaba_gpu_v2023()
    assert p.report.rows == 8_152 and p.report.counts["num_gpu"] == {0: 1_088, 1: 6_989, 2: 16, 4: 15, 8: 44}
    assert p.report.counts["phase"] == {"Running": 5_193, "Failed": 1_870, "Pending": 897, "Succeeded": 192}
    assert len(p) == 8_152 - 897 and p.jobs["cpu"].between(1, 120.2).all()
    n, nrep = load_alibaba_gpu_v2023_nodes()
    assert len(n) == 1_523 and nrep.counts["gpus"] == 6_212
    w = load_alibaba_gpu_v2025()
    assert w.report.rows == 23_871 and w.report.counts["role"] == {"CN": 16_485, "HN": 7_386}
    assert w.report.counts["no_creation_time (left-censored)"] == 7_280
    assert w.report.counts["no_deletion_time (right-censored)"] == 8_878 and w.report.counts["both_times"] == 12_390
    dev = load_azure_v1(split="dev")
    assert dev.report.rows == 1_000 and len(dev) == 259_159
    assert (dev.report.counts["uncensored"], dev.report.counts["censored"]) == (244_842, 14_317)
    test = load_azure_v1(split="test")
    assert test.report.rows == 1_638 and (test.report.counts["uncensored"], test.report.counts["censored"]) == (
        386_965,
        23_311,
    )
    assert test.jobs["arrival"].max() + test.origin == 2_591_100
    train = load_azure_v1(split="train", durations=False)
    assert train.report.rows == 5_999 and len(train) == 1_200_998
    with pytest.raises(TraceFormatError, match="no duration"):
        train.to_source()


@shared
@pytest.mark.traces
def test_real_rms_google_replay(real_events):
    """First-Fit and Best-Fit on the first 20k RMS Google tasks (sampled invariant checks), and a
    fully validated replay of the first 1,000 on 10 servers."""
    sc = rms_google(first_n=20_000)
    assert sc.params["jobs"] == 20_000 and sc.source.types.exact
    res = _run_ff_bf(sc, validate=False, every=2_000)
    for r in res.values():
        assert r["completed"] == 20_000 and not r["unstable"]
    small = rms_google(first_n=1_000, num_servers=10)
    res = _run_ff_bf(small, validate=True)
    assert res["best-fit"]["mean_queue_length"] > 0


@shared
@pytest.mark.traces
def test_real_other_trace_replays():
    lo = lotes_google(first_n=3_000, machine_scale=0.01)
    assert lo.num_types == 4 and lo.num_servers == sum(c["count"] for c in lo.params["machine_configurations"])
    _run_ff_bf(lo, validate=False, every=500)
    g = alibaba_gpu(first_n=2_000, node_scale=0.05)
    assert g.resources == ("cpu", "memory", "gpu")
    _run_ff_bf(g, validate=False, every=500)
