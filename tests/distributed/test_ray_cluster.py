"""``compare`` and ``benchmark`` on a Ray cluster of three nodes that loses one, and whose driver dies.

One local cluster for the whole module (:class:`ray.cluster_utils.Cluster`, what Ray's own tests use:
a head and two worker nodes on this machine, each its own raylet with its own node id and 1 CPU, so
tasks spread over all three and one node can be killed -- its raylet and its workers -- without
touching the others; ``ray start`` subprocesses would do the same with more start-up time and no
handle to kill one node by).  This process is the driver of the in-process commands (``--ray`` reuses
its connection); a killed driver is a ``python -m clustergym`` subprocess.

* a node killed while one of its workers runs an episode: every cell finishes (Ray runs the lost
  task again elsewhere: ``max_retries``) and the tables equal the local run's;
* the driver killed (SIGKILL) after some episodes are kept: ``--resume`` runs only the missing ones,
  keeps the others' rows untouched, and the tables equal the local run's.

Skipped when ray is not installed.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'clustergym[ray]'): no cluster to test")
psutil = pytest.importorskip("psutil", reason="psutil (a dependency of ray) is not installed")

from ray.cluster_utils import Cluster  # noqa: E402

from clustergym.cli import app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

COMPARE = ["compare", "bf-trap", "--agents", "first-fit,best-fit", "--seeds", "4", "--horizon", "100"]
BENCHMARK = ["benchmark", "first-fit", "best-fit", "--tasks", "rms-trap", "--seeds", "6"]


@pytest.fixture(scope="module")
def cluster():
    """A head and two worker nodes (1 CPU each), this process connected as a driver."""
    if ray.is_initialized():  # another module's local instance: this module needs its own cluster
        ray.shutdown()
    old = os.environ.get("PYTHONPATH")
    # the nodes' workers import this tree's clustergym (the raylets pass this environment on)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), old) if p)
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    workers = [c.add_node(num_cpus=1) for _ in range(2)]
    c.wait_for_nodes()
    ray.init(address=c.address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        yield c, workers
    finally:
        ray.shutdown()
        c.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def _cli(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, " ".join(res.stderr.split())


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The local runs (this process) of the compare and the benchmark: the tables to match."""
    base = tmp_path_factory.mktemp("local")
    assert _cli(*COMPARE, "--workers", "1", "--out", str(base / "compare"))[0] == 0
    assert _cli(*BENCHMARK, "--workers", "1", "--out", str(base / "benchmark"))[0] == 0
    return base


def _kept(folder: Path) -> list[dict]:
    path = folder / "cells.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def _running_episode(node) -> bool:
    """Whether one of the node's worker processes is running an episode (Ray titles it ray::run_cell)."""
    raylet = node.all_processes["raylet"][0].process.pid
    try:
        return any("ray::run_cell" in " ".join(p.cmdline()) for p in psutil.Process(raylet).children(recursive=True))
    except psutil.Error:
        return False


class _Killer(threading.Thread):
    """Kills ``node`` (its raylet and workers) once ``folder`` keeps a row and the node runs an episode."""

    def __init__(self, c: Cluster, node, folder: Path):
        super().__init__(daemon=True)
        self.c, self.node, self.folder, self.killed_at = c, node, folder, None

    def run(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if _kept(self.folder) and _running_episode(self.node):
                self.killed_at = len(_kept(self.folder))
                self.c.remove_node(self.node, allow_graceful=False)
                return
            time.sleep(0.02)


def _compare_tables(a: Path, b: Path) -> None:
    """results.csv and summary.csv equal, but for the machine's wall time."""
    for name in ("results.csv", "summary.csv"):
        x, y = pd.read_csv(a / name), pd.read_csv(b / name)
        walls = [c for c in x.columns if "wall" in c]
        pd.testing.assert_frame_equal(x.drop(columns=walls), y.drop(columns=walls), check_exact=True)


def _benchmark_tables(a: Path, b: Path) -> None:
    """results.csv and summary.json byte for byte (neither holds a wall time)."""
    for name in ("results.csv", "summary.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.parametrize(
    ("command", "check", "node"), [(COMPARE, _compare_tables, 0), (BENCHMARK, _benchmark_tables, 1)]
)
def test_a_lost_node_loses_no_cell(cluster, local, tmp_path, command, check, node):
    c, workers = cluster
    out = tmp_path / "run"
    killer = _Killer(c, workers[node], out)
    killer.start()
    rc, err = _cli(*command, "--ray", c.address, "--out", str(out))
    killer.join(timeout=5)
    assert rc == 0, err
    assert killer.killed_at is not None, "the node was not killed while it ran an episode"
    assert killer.killed_at < len(_kept(out))  # killed mid-run
    assert sorted(e["index"] for e in _kept(out)) == list(range(len(_kept(out))))  # every cell once
    check(local / command[0], out)


@pytest.mark.parametrize(("command", "check"), [(COMPARE, _compare_tables), (BENCHMARK, _benchmark_tables)])
def test_a_killed_driver_resumes_only_the_missing_cells(cluster, local, tmp_path, command, check):
    c, _ = cluster
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    argv = [sys.executable, "-m", "clustergym", *command, "--ray", c.address, "--out", str(out), "--json"]
    driver = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(_kept(out)) < 2 and driver.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    before = {e["index"]: e["row"] for e in _kept(out)}
    total = len(_kept(local / command[0]))
    assert 2 <= len(before) < total, driver.stderr.read().decode() if driver.stderr else ""
    rc, err = _cli(command[0], "--resume", str(out), "--ray", c.address)
    assert rc == 0, err
    assert f"{len(before)} of {total} episodes kept" in err
    after = {e["index"]: e["row"] for e in _kept(out)}
    assert sorted(after) == list(range(total)) and len(_kept(out)) == total  # each missing cell ran once
    assert all(after[i] == row for i, row in before.items())  # the kept cells did not run again
    check(local / command[0], out)
