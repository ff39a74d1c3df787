"""Tests of the evaluation harness (clustergym.runner.cells, clustergym.runner.episode, ``clustergym compare``).

* the executors give the same frame: serial, local processes (joblib/loky) and Ray
  (against a local Ray instance, one per module; skipped when ray is not installed);
* results.csv and results.parquet hold the same table;
* paired differences against a reference on a hand-checkable case;
* ``--agents all`` picks up an agent registered at run time, also in worker
  processes, and skips the agents that cannot run, with the reason;
* bad input (unknown agent, --reference, --ray, --workers) exits 2 with a clear message.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from clustergym.agent_api import AGENTS, register_agent
from clustergym.baselines.greedy import FirstFit
from clustergym.cli import app
from clustergym.errors import ConfigError
from clustergym.runner import (
    EvaluationError,
    RayError,
    compare,
    compatible_agents,
    flat_results,
    plan,
    run_cells,
    summarize,
    write_results,
)
from clustergym.scenarios import resolve_scenario

runner = CliRunner()
AGENTS_2 = ["first-fit", "best-fit"]
DUMMY = "test-dummy-first-fit"


pytestmark = pytest.mark.usefixtures("quiet_warnings")


def _cli(*args: str):
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _policy_columns(df: pd.DataFrame) -> pd.DataFrame:
    """Everything but the columns that measure the machine."""
    return df.drop(columns=["wall_seconds"])


class _DummyFirstFit(FirstFit):
    """First-Fit under another name, registered by the test only (not at import)."""

    name = DUMMY
    description = "First-Fit registered at run time by tests/test_evaluation.py"


@pytest.fixture
def dummy_agent():
    register_agent(DUMMY)(_DummyFirstFit)
    yield DUMMY
    AGENTS.pop(DUMMY, None)


# ============================================================================================ executors
def test_plan_orders_cells_by_value_agent_seed():
    cells = plan("ec2", AGENTS_2, seeds=[3, 4], horizon=5, params={"num_servers": 4}, sweep=("zeta", [0.8, 0.9]))
    assert [(dict(c.params)["zeta"], c.agent, c.seed) for c in cells] == [
        (z, a, s) for z in (0.8, 0.9) for a in AGENTS_2 for s in (3, 4)
    ]
    assert all(dict(c.params)["num_servers"] == 4 and c.columns == ("zeta",) for c in cells)
    with pytest.raises(ConfigError, match="seeds"):
        plan("ec2", AGENTS_2, seeds=[])
    with pytest.raises(ConfigError, match="agents"):
        plan("ec2", [], seeds=[0])
    with pytest.raises(ConfigError, match="sweep"):
        plan("ec2", AGENTS_2, seeds=[0], sweep=("zeta", []))


def test_local_processes_give_the_serial_frame_exactly(dummy_agent):
    # the dummy agent is registered in this process only: its cells carry it to the workers
    cells = plan("bf-trap", ["first-fit", "random", dummy_agent], seeds=range(3), horizon=20)
    serial = run_cells(cells, workers=1)
    parallel = run_cells(cells, workers=2)
    pd.testing.assert_frame_equal(_policy_columns(serial), _policy_columns(parallel), check_exact=True)
    assert list(serial["agent"]) == [c.agent for c in cells] and list(serial["seed"]) == [c.seed for c in cells]
    # common random numbers: the same seed gives the same arrivals to every agent; the dummy is First-Fit
    for s in range(3):
        assert serial[serial.seed == s]["arrivals"].nunique() == 1
    ff = _policy_columns(serial[serial.agent == "first-fit"]).drop(columns="agent").reset_index(drop=True)
    dm = _policy_columns(serial[serial.agent == dummy_agent]).drop(columns="agent").reset_index(drop=True)
    pd.testing.assert_frame_equal(ff, dm, check_exact=True)
    # compare() and sweep() go through the same cells
    pd.testing.assert_frame_equal(
        _policy_columns(compare("bf-trap", ["first-fit"], seeds=range(3), horizon=20)),
        _policy_columns(serial[serial.agent == "first-fit"]).reset_index(drop=True),
        check_exact=True,
    )


def test_a_failing_cell_names_itself():
    cells = plan("bf-trap", ["no-such-agent-x"], seeds=[2], horizon=5)
    with pytest.raises(EvaluationError, match=r"no-such-agent-x on bf-trap, seed 2: .*unknown agent"):
        run_cells(cells)
    with pytest.raises(ConfigError, match="workers"):
        run_cells(cells, workers=0)


def test_worker_count_is_one_rule():
    from clustergym.runner import available_workers, worker_count

    assert worker_count(None) == available_workers() >= 1
    assert worker_count(3) == 3 and worker_count(2.0) == 2
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ConfigError, match=r"^--envs: "):
            worker_count(bad, "--envs")


# =============================================================================================== files
def test_parquet_round_trip_equals_the_csv_frame(tmp_path):
    results = compare("ec2", AGENTS_2, seeds=range(2), horizon=10, params={"num_servers": 5})
    summary = summarize(results, reference="first-fit")
    paths = write_results(tmp_path, results, summary, metric="mean_queue_length", title="t")
    figures = {f"mean_queue_length{kind}.{fmt}" for kind in ("", "_paired") for fmt in ("png", "svg", "pdf")}
    assert {p.name for p in paths} == {"results.csv", "results.parquet", "summary.csv", "summary_long.csv", *figures}
    from_csv = pd.read_csv(tmp_path / "results.csv", float_precision="round_trip")
    from_parquet = pd.read_parquet(tmp_path / "results.parquet")
    pd.testing.assert_frame_equal(from_csv, from_parquet, check_exact=True, check_dtype=False)
    pd.testing.assert_frame_equal(from_parquet, flat_results(results), check_exact=True, check_dtype=False)
    # per-resource lists become one column per resource (ec2 has 3 resources)
    assert [c for c in from_parquet.columns if c.startswith("utilization_")] == [f"utilization_{k}" for k in range(3)]
    assert from_parquet["utilization_2"].tolist() == [u[2] for u in results["utilization"]]


def test_flat_results_pads_lists_of_different_lengths():
    df = pd.DataFrame({"agent": ["a", "b"], "u": [[1.0], [2.0, 3.0]]})
    flat = flat_results(df)
    assert list(flat.columns) == ["agent", "u_0", "u_1"]
    assert flat["u_0"].tolist() == [1.0, 2.0] and math.isnan(flat["u_1"][0]) and flat["u_1"][1] == 3.0


# ==================================================================================== paired differences
def _table(values: dict[str, list[float]], seeds=(0, 1, 2), **extra) -> pd.DataFrame:
    rows = [
        {"agent": a, "seed": s, "unstable": False, "mean_queue_length": v, **extra}
        for a, vs in values.items()
        for s, v in zip(seeds, vs)
    ]
    return pd.DataFrame(rows)


def test_paired_differences_on_a_hand_checkable_case():
    # differences B - A on seeds 0, 1, 2: 1, 2, 0 -> mean 1, sample sd 1, half-width t(0.975, 2) / sqrt(3)
    res = _table({"A": [1.0, 2.0, 3.0], "B": [2.0, 4.0, 3.0]})
    s = summarize(res, metrics=["mean_queue_length"], reference="A").set_index("agent")
    t = stats.t.ppf(0.975, 2)
    assert s.loc["B", "mean_queue_length_diff"] == pytest.approx(1.0, abs=1e-12)
    assert s.loc["B", "mean_queue_length_diff_ci95"] == pytest.approx(t / math.sqrt(3), rel=1e-12)
    assert s.loc["B", "mean_queue_length"] == pytest.approx(3.0)
    assert s.loc["B", "mean_queue_length_ci95"] == pytest.approx(t * 1.0 / math.sqrt(3))  # sd of (2, 4, 3) = 1
    assert "mean_queue_length_diff" in s.columns and np.isnan(s.loc["A"].get("mean_queue_length_diff", np.nan))
    # pairing by seed, not by row order: shuffled rows give the same summary
    shuffled = res.sample(frac=1.0, random_state=1)
    pd.testing.assert_frame_equal(
        summarize(shuffled, metrics=["mean_queue_length"], reference="A").set_index("agent").loc[["A", "B"]],
        s.loc[["A", "B"]],
    )
    # a constant offset has a zero-width paired interval however noisy the seeds are
    res = _table({"A": [1.0, 50.0, 7.0], "B": [1.5, 50.5, 7.5]})
    s = summarize(res, metrics=["mean_queue_length"], reference="A").set_index("agent")
    assert s.loc["B", "mean_queue_length_diff"] == pytest.approx(0.5)
    assert s.loc["B", "mean_queue_length_diff_ci95"] == pytest.approx(0.0, abs=1e-12)
    assert s.loc["B", "mean_queue_length_ci95"] > 10


def test_paired_differences_per_swept_value():
    res = pd.concat(
        [
            _table({"A": [1.0, 2.0, 3.0], "B": [2.0, 3.0, 4.0]}, zeta=0.8),
            _table({"A": [1.0, 2.0, 3.0], "B": [4.0, 5.0, 6.0]}, zeta=0.9),
        ],
        ignore_index=True,
    )
    s = summarize(res, metrics=["mean_queue_length"], reference="A", by="zeta")
    b = s[s.agent == "B"].set_index("zeta")["mean_queue_length_diff"]
    assert b.to_dict() == pytest.approx({0.8: 1.0, 0.9: 3.0})


def test_reference_must_be_a_compared_agent():
    with pytest.raises(ConfigError, match="reference: agent 'C'"):
        summarize(_table({"A": [1.0, 2.0, 3.0]}), metrics=["mean_queue_length"], reference="C")


# ========================================================================================== agents: all
def test_agents_all_picks_up_registered_agents_and_skips_with_reasons(dummy_agent):
    ok, skipped = compatible_agents(resolve_scenario("bf-trap"))
    assert dummy_agent in ok and "first-fit" in ok
    assert "dra" in skipped and "loss" in skipped["dra"]  # a loss-system agent on a queueing scenario
    assert set(ok).isdisjoint(skipped) and set(ok) | set(skipped) == set(AGENTS)
    ok, skipped = compatible_agents(resolve_scenario("autoscale-4vm"))
    assert "dra" in ok and dummy_agent in skipped and "queueing" in skipped[dummy_agent]
    # through the CLI, on worker processes (the dummy travels with its cells)
    code, out, err = _cli(
        "compare", "bf-trap", "--agents", "all", "--seeds", "1", "--horizon", "3", "--workers", "2", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert dummy_agent in doc["agents"] and doc["reference"] == doc["agents"][0]
    assert "dra" in doc["skipped"] and "dra" not in doc["agents"]
    assert {r["agent"] for r in doc["runs"]} == set(doc["agents"])
    # "all" inside a list: the named agents first (the first is the reference), then every other one once
    code, out, err = _cli(
        "compare", "bf-trap", "--agents", "mwr,all", "--seeds", "1", "--horizon", "3", "--workers", "1", "--json"
    )
    assert code == 0, err
    doc2 = json.loads(out)
    assert doc2["agents"][0] == "mwr" == doc2["reference"]
    assert sorted(doc2["agents"]) == sorted(doc["agents"]) and doc2["skipped"] == doc["skipped"]


# ================================================================================================== CLI
def test_cli_compare_out_writes_results_parquet_summary_and_plots(tmp_path):
    out_dir = tmp_path / "cmp"
    code, out, err = _cli(
        "compare",
        "bf-trap",
        "--agents",
        "first-fit,best-fit",
        "--seeds",
        "3",
        "--horizon",
        "20",
        "--reference",
        "best-fit",
        "--workers",
        "1",
        "--out",
        str(out_dir),
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["reference"] == "best-fit"
    for name in ("results.csv", "results.parquet", "summary.csv"):
        assert (out_dir / name).stat().st_size > 0
    assert (out_dir / "mean_queue_length.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = pd.read_parquet(out_dir / "results.parquet")
    assert len(res) == 6 and list(res["agent"]) == ["first-fit"] * 3 + ["best-fit"] * 3
    summ = pd.read_csv(out_dir / "summary.csv").set_index("agent")
    per_seed = res.pivot(index="seed", columns="agent", values="mean_queue_length")
    assert summ.loc["first-fit", "mean_queue_length_diff"] == pytest.approx(
        (per_seed["first-fit"] - per_seed["best-fit"]).mean(), rel=1e-12
    )
    assert math.isnan(summ.loc["best-fit", "mean_queue_length_diff"])
    # a sweep: metric against the swept parameter
    sweep_dir = tmp_path / "sweep"
    code, _, err = _cli(
        "compare",
        "ec2",
        "--agents",
        "first-fit",
        "--seeds",
        "2",
        "--horizon",
        "5",
        "--set",
        "num_servers=4",
        "--sweep",
        "zeta=0.5,0.9",
        "--workers",
        "1",
        "--out",
        str(sweep_dir),
    )
    assert code == 0, err
    res = pd.read_parquet(sweep_dir / "results.parquet")
    assert list(res.columns[:2]) == ["scenario", "zeta"] and res["zeta"].tolist() == [0.5, 0.5, 0.9, 0.9]
    assert (sweep_dir / "mean_queue_length_vs_zeta.png").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--agents", "first-fit,nope-agent"], "nope-agent"),
        (["--agents", " , "], "expected agent names"),
        (["--agents", "first-fit,best-fit", "--reference", "random"], "--reference 'random'"),
        (["--agents", "first-fit,dra"], "dra"),
        (["--agents", "first-fit", "--workers", "0"], "--workers: must be >= 1, got 0"),
        (["--agents", "first-fit", "--ray", "not an address"], "expected 'auto', 'HOST:PORT'"),
        (["--agents", "first-fit", "--sweep", "num_servers="], "--sweep: 'num_servers=': expected key=v1,v2"),
    ],
)
def test_cli_compare_bad_input_exits_2(args, message):
    code, out, err = _cli("compare", "bf-trap", "--seeds", "1", "--horizon", "2", *args, "--json")
    assert code == 2 and message in json.loads(out)["error"]["message"]  # one JSON error document
    assert message in err.replace("\n", "")


def test_ray_unreachable_address_is_a_clear_error(monkeypatch):
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'clustergym[ray]')")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # even if a test of this process started Ray
    with pytest.raises(RayError, match="no Ray cluster reachable"):
        run_cells(plan("bf-trap", ["first-fit"], seeds=[0], horizon=1), ray="127.0.0.1:1")


@pytest.mark.parametrize(
    ("address", "message"), [("not an address", "expected 'auto', 'HOST:PORT'"), ("127.0.0.1:1", "no Ray cluster")]
)
def test_benchmark_with_a_bad_ray_address_exits_2_before_writing(monkeypatch, tmp_path, address, message):
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'clustergym[ray]')")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # even if a test of this process started Ray
    out = tmp_path / "b"
    code, _, err = _cli(
        "benchmark", "first-fit", "--tasks", "rms-trap", "--seeds", "2", "--ray", address, "--out", str(out)
    )
    assert code == 2 and message in err.replace("\n", "") and not out.exists()


def test_ray_missing_is_a_clear_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(RayError, match=r"pip install 'clustergym\[ray\]'"):
        run_cells(plan("bf-trap", ["first-fit"], seeds=[0], horizon=1), ray="auto")


# ================================================================================================== Ray
@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip(
        "ray", reason="ray is not installed (pip install 'clustergym[ray]'); the Ray executor is not tested"
    )
    started = not ray.is_initialized()
    if started:
        # address="local": a new instance, even where `ray start` left a cluster address behind
        ray.init(
            address="local",
            num_cpus=2,
            include_dashboard=False,
            object_store_memory=100 * 2**20,
            logging_level="ERROR",
            log_to_driver=False,
        )
    yield ray
    if started:
        ray.shutdown()


def test_ray_gives_the_local_frame_exactly(local_ray, dummy_agent, tmp_path):
    cells = plan(
        "ec2",
        ["best-fit", dummy_agent],
        seeds=range(2),
        horizon=5,
        params={"num_servers": 5},
        sweep=("zeta", [0.7, 0.95]),
    )
    local = run_cells(cells, workers=1)
    on_ray = run_cells(cells, ray="auto")  # this process's Ray connection: the local instance
    pd.testing.assert_frame_equal(_policy_columns(local), _policy_columns(on_ray), check_exact=True)
    # the CLI's --ray, same rows as its local run
    frames = []
    for extra in (["--workers", "1"], ["--ray", "auto"]):
        out_dir = tmp_path / extra[0].strip("-")
        code, _, err = _cli(
            "compare",
            "bf-trap",
            "--agents",
            "first-fit,random",
            "--seeds",
            "2",
            "--horizon",
            "5",
            *extra,
            "--out",
            str(out_dir),
            "--json",
        )
        assert code == 0, err
        frames.append(pd.read_parquet(out_dir / "results.parquet").drop(columns="wall_seconds"))
    pd.testing.assert_frame_equal(frames[0], frames[1], check_exact=True)


def test_scenario_files_run_on_workers_from_any_directory(tmp_path, monkeypatch):
    (tmp_path / "trap.json").write_text(json.dumps({"preset": "bf-trap", "params": {"num_servers": 3}, "horizon": 5}))
    monkeypatch.chdir(tmp_path)
    cells = plan("trap.json", ["first-fit"], seeds=[0, 1])
    assert cells[0].scenario == str(tmp_path / "trap.json")
    monkeypatch.chdir("/")
    res = run_cells(cells)
    assert list(res["servers"]) == [3, 3] and list(res["sim_time"]) == [5.0, 5.0]


def test_ray_auto_with_a_dead_cluster_address_fails_fast(monkeypatch):
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'clustergym[ray]')")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    code, out, err = _cli(
        "compare", "bf-trap", "--agents", "first-fit", "--seeds", "1", "--horizon", "1", "--ray", "auto", "--json"
    )
    assert code == 2 and json.loads(out)["error"]["type"] == "RayError"
    assert "no Ray cluster reachable" in err and "127.0.0.1:1" in err
