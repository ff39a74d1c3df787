"""``compare``, ``benchmark`` and a training sweep on a Ray cluster that loses nodes, and whose driver dies.

One local cluster for all the episode checks (:class:`ray.cluster_utils.Cluster`, what Ray's own
tests use): a head and two worker nodes on this machine, each its own raylet with its own node id
and 1 CPU (the head 0 CPUs: every task runs on a worker node), so a node can be killed -- its
raylet and its workers -- without touching the others; ``ray start`` subprocesses would do the
same with more start-up time and no handle to kill one node by.  The checks are the steps of one
test, so that pytest-xdist never starts a second cluster for them on another worker.  A step that
finds a worker node lost by an earlier one adds a fresh node first, as an autoscaler would.  This
process is the driver of the in-process commands (``--ray`` reuses its connection); a killed driver
is a ``python -m clustergym`` subprocess.

* a worker node killed while it runs an episode (its process title, ``ray::run_cell``, says so):
  every cell finishes (Ray runs the lost task again elsewhere: ``max_retries``) and the tables
  equal the local run's;
* the driver killed (SIGKILL) after some episodes are kept: ``--resume`` runs only the missing ones,
  keeps the others' rows untouched, and the tables equal the local run's;
* a training sweep of two seeds, a node killed once both runs have a checkpoint: the lost run
  resumes from its checkpoint on another node, and the run that was not lost is the sequential run
  (with ``CLUSTERGYM_SLOW_TESTS=1``: ~20 s more; local sweeps are tested in tests/training/test_sweep.py).

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

COMPARE = ["compare", "bf-trap", "--agents", "first-fit,best-fit", "--seeds", "4", "--horizon", "50"]
BENCHMARK = ["benchmark", "first-fit", "best-fit", "--tasks", "rms-trap", "--seeds", "4"]


@pytest.fixture
def cluster():
    """A head (no CPU for tasks) and two worker nodes (1 CPU each), this process connected as a driver."""
    if ray.is_initialized():  # another module's local instance: this module needs its own cluster
        ray.shutdown()
    old = os.environ.get("PYTHONPATH")
    # the nodes' workers import this tree's clustergym (the raylets pass this environment on)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), old) if p)
    # the head runs the cluster and no task (num_cpus=0): every episode runs on a worker node
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
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


def _local(base: Path) -> Path:
    """The local runs (this process) of the compare and the benchmark: the tables to match."""
    assert _cli(*COMPARE, "--workers", "1", "--out", str(base / "compare"))[0] == 0
    assert _cli(*BENCHMARK, "--workers", "1", "--out", str(base / "benchmark"))[0] == 0
    return base


def _kept(folder: Path) -> list[dict]:
    path = folder / "cells.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def _running(node, task: str) -> bool:
    """Whether one of the node's worker processes runs ``task`` (Ray titles it ray::FUNCTION)."""
    try:
        raylet = node.all_processes["raylet"][0].process.pid
        return any(task in " ".join(p.cmdline()) for p in psutil.Process(raylet).children(recursive=True))
    except (psutil.Error, KeyError, IndexError):  # a process gone meanwhile; a node already removed
        return False


class _Killer(threading.Thread):
    """Kills one of ``nodes`` (its raylet and workers) as soon as it runs ``task`` (default: an
    episode) once ``ready()`` (default: at once); ``killed_at``: the rows ``folder`` kept by then."""

    def __init__(self, c: Cluster, nodes: list, folder: Path, task: str = "ray::run_cell", ready=None):
        super().__init__(daemon=True)
        self.c, self.nodes, self.folder, self.killed_at = c, nodes, folder, None
        self.task, self.ready = task, ready or (lambda: True)

    def run(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            busy = [n for n in self.nodes if _running(n, self.task)] if self.ready() else []
            if busy:
                self.killed_at = len(_kept(self.folder))
                self.c.remove_node(busy[0], allow_graceful=False)
                return
            time.sleep(0.02)


def _two_workers(c: Cluster) -> list:
    """The live worker nodes, a fresh one added when a test before lost one (as an autoscaler would)."""
    while len(c.worker_nodes) < 2:
        c.add_node(num_cpus=1)
    return list(c.worker_nodes)


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


def _a_lost_node_loses_no_cell(c: Cluster, local: Path, tmp_path: Path, command: list[str], check) -> None:
    out = tmp_path / "run"
    killer = _Killer(c, _two_workers(c), out)
    killer.start()
    rc, err = _cli(*command, "--ray", c.address, "--out", str(out))
    killer.join(timeout=5)
    assert rc == 0, err
    assert killer.killed_at is not None, "the node was not killed while it ran an episode"
    assert killer.killed_at < len(_kept(out))  # killed mid-run
    assert sorted(e["index"] for e in _kept(out)) == list(range(len(_kept(out))))  # every cell once
    check(local / command[0], out)


def _a_killed_driver_resumes_only_the_missing_cells(
    c: Cluster, local: Path, tmp_path: Path, command: list[str], check
) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    argv = [sys.executable, "-m", "clustergym", *command, "--ray", c.address, "--out", str(out), "--json"]
    driver = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180  # on a loaded machine the driver and its first cells start slowly
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


SWEEP = ["--timesteps", "512", "--envs", "2", "--set", "algo.n_steps=32", "--set", "algo.batch_size=32"]
SWEEP += ["--set", "algo.n_epochs=1", "--set", "horizon=3", "--set", "num_servers=4"]


def _policy(model: Path) -> dict:
    import io
    import zipfile

    import torch

    with zipfile.ZipFile(model) as z:
        return torch.load(io.BytesIO(z.read("policy.pth")), map_location="cpu")


def _a_training_sweep_survives_a_lost_node_and_its_runs_are_the_sequential_runs(c: Cluster, tmp_path: Path) -> None:
    import torch

    from clustergym.training.train import train

    nodes = _two_workers(c)  # the two runs train at once, one per worker node
    out = tmp_path / "sweep"
    ready = lambda: all(list(out.glob(f"s{s}/checkpoints/*.zip")) for s in (0, 1))  # noqa: E731
    killer = _Killer(c, nodes, out, task="ray::train_run", ready=ready)
    killer.start()
    rc, err = _cli("train", "ec2", "--seeds", "0-1", "--ray", c.address, "--out", str(out), "--json", *SWEEP)
    killer.join(timeout=5)
    assert rc == 0, err
    assert killer.killed_at is not None, "the node was not killed while it trained a run"
    runs = json.loads((out / "sweep.json").read_text())["runs"]
    assert sorted(r["status"] for r in runs.values()) == ["resumed", "trained"]  # the lost run went on
    assert all(r["timesteps"] == 512 for r in runs.values())
    (seed,) = [int(k[1:]) for k, r in runs.items() if r["status"] == "trained"]
    settings = {"algo.n_steps": 32, "algo.batch_size": 32, "algo.n_epochs": 1, "horizon": 3, "num_servers": 4}
    alone = train("ec2", timesteps=512, n_envs=2, seed=seed, out=tmp_path / "alone", verbose=False, **settings)
    a, b = _policy(out / f"s{seed}" / "model.zip"), _policy(alone)
    assert all(torch.equal(a[k], b[k]) for k in a)  # the run Ray kept is the sequential run


def test_a_cluster_that_loses_nodes_and_its_driver_loses_no_work(cluster, tmp_path):
    """The episode steps of the module docstring, in order, on one cluster (one test, so that
    pytest-xdist never starts a second cluster on another worker)."""
    c, _ = cluster
    local = _local(tmp_path / "local")
    for i, (command, check) in enumerate([(COMPARE, _compare_tables), (BENCHMARK, _benchmark_tables)]):
        _a_lost_node_loses_no_cell(c, local, tmp_path / f"lost{i}", command, check)
        _a_killed_driver_resumes_only_the_missing_cells(c, local, tmp_path / f"driver{i}", command, check)


@pytest.mark.skipif(
    not os.environ.get("CLUSTERGYM_SLOW_TESTS"),
    reason="a training sweep on a cluster that loses a node takes ~30 s more: run with CLUSTERGYM_SLOW_TESTS=1",
)
def test_a_training_sweep_survives_a_lost_node_and_its_runs_are_the_sequential_runs(cluster, tmp_path):
    pytest.importorskip("stable_baselines3", reason="needs the train extra")
    _a_training_sweep_survives_a_lost_node_and_its_runs_are_the_sequential_runs(cluster[0], tmp_path)
