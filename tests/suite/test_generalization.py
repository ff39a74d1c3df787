"""The generalization track: its declared train distribution and test points (never the same), the
points' environments, the shipped reference (every point, its own seeds, regenerated to the same
scores), ``clustergym benchmark --track generalization`` on a tiny track, and bad input (exit 2)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import gymnasium as gym
import pytest
from typer.testing import CliRunner

from clustergym.cli import app
from clustergym.errors import ConfigError
from clustergym.runner import run_rows
from clustergym.suite.generalization import (
    GOOGLE_TASKS,
    SEEDS_LARGEST,
    SEEDS_PER_POINT,
    TEST_LOADS,
    TEST_SIZES,
    TRACK_SEEDS,
    TRACK_TASKS,
    TRACK_VERSION,
    TRAIN_LOADS,
    TRAIN_SIZES,
    load_track_reference,
    plan_track,
    summarize_track_reference,
    test_points,
    train_points,
    train_stages,
)
from clustergym.suite.reference import normalized
from clustergym.suite.tasks import EVAL_SEEDS, TASKS, TEST_SEEDS

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("quiet_warnings")


def test_the_declared_test_points_are_every_load_and_size_of_every_track_task_and_the_trace():
    pts = test_points()
    assert len(pts) == 7 * len(TRACK_TASKS) + 1 and pts[-1].task is GOOGLE_TASKS
    for base in TRACK_TASKS:
        mine = [p for p in pts if p.base == base]
        assert [(p.load, p.size) for p in mine] == [(lf, 1.0) for lf in TEST_LOADS] + [(1.0, s) for s in TEST_SIZES]
        for p in mine:  # the servers scale with the size; the task's other settings are its own
            assert dict(p.task.params)["num_servers"] == round(
                dict(TASKS[base].scenario().params)["num_servers"] * p.size
            )
            assert p.task.horizon == TASKS[base].horizon and p.task.action_mode == TASKS[base].action_mode
            assert p.seeds == (SEEDS_LARGEST if p.size == 10 else SEEDS_PER_POINT)
    # the track's seeds are neither the suite's evaluation seeds nor clustergym train's (10_000 + 100 x seed + i)
    assert not set(TRACK_SEEDS) & (set(EVAL_SEEDS) | set(TEST_SEEDS)) and min(TRACK_SEEDS) > 10_000 + 100 * 10_000


def test_the_train_distribution_never_holds_a_test_point():
    """Loads: train on even tenths (0.8, 1.0, 1.2), test on odd ones; sizes: train inside [0.8, 1.5],
    test outside it; and no test point's preset parameters are any train point's."""
    assert not {round(x * 10) % 2 for x in TRAIN_LOADS} & {round(x * 10) % 2 for x in TEST_LOADS}
    assert all(s < min(TRAIN_SIZES) or s > max(TRAIN_SIZES) for s in TEST_SIZES)
    for base in TRACK_TASKS:
        train = {p.task.params for p in train_points(base)}
        assert len(train) == len(TRAIN_LOADS) * len(TRAIN_SIZES) and TASKS[base].params in {
            tuple((k, v) for k, v in p if k in dict(TASKS[base].params)) for p in train
        }
        assert not train & {p.task.params for p in test_points() if p.base == base}


def test_train_stages_visit_every_train_point_but_the_task_itself_which_ends_the_run():
    stages = train_stages("autoscale-syn4", 28_000)
    assert len(stages) == 8 and all(s.startswith("28000:") for s in stages)
    got = set()
    for s in stages:
        kv = dict(x.split("=") for x in s.split(":", 1)[1].split(","))
        got.add((float(kv.get("load", 1.0)), int(kv.get("num_servers", 10))))
    grid = {(lf, round(10 * sf)) for lf in TRAIN_LOADS for sf in TRAIN_SIZES}
    assert got == grid - {(1.0, 10)}
    with pytest.raises(Exception, match="not a task of the generalization track"):
        train_stages("bfjs-uniform", 10)


def test_a_points_id_builds_its_scenario_in_the_tasks_environment():
    p = next(p for p in test_points() if p.name == "autoscale-syn4-size0.5")
    env = gym.make(p.task.id)
    obs, _ = env.reset(seed=TRACK_SEEDS[0])
    assert env.unwrapped.scenario.num_servers == 5 and obs["free"].shape == (5, 2)
    assert env.spec.max_episode_steps == p.task.max_episode_steps
    env.close()


def test_the_shipped_reference_has_every_point_on_its_own_seeds_normalized_per_point():
    doc = load_track_reference()
    assert doc["track_version"] == TRACK_VERSION and doc["train"]["loads"] == list(TRAIN_LOADS)
    for p in test_points():
        e = doc["points"][p.name]
        assert e["seeds"] == list(TRACK_SEEDS[: p.seeds]) and e["params"] == dict(p.task.params)
        assert "random" in e["agents"] and not e["agents"][e["best"]]["oracle"]
        assert all(len(a["scores"]) == p.seeds for a in e["agents"].values())
        assert normalized(e["random"], e) == 0 and normalized(e["best_score"], e) == 1
        if e["best_oracle"]:
            assert e["agents"][e["best_oracle"]]["oracle"]


def test_the_reference_of_a_point_regenerates_to_the_shipped_scores():
    """One point on its first seed, through the plan the CLI runs: the same scores as the shipped table."""
    plan = plan_track(None, ["autoscale-syn4"], seeds=1)
    name = "autoscale-syn4-load0.7"
    a, b = plan.spans[name]
    rows: list = [None] * len(plan.cells)
    rows[a:b] = run_rows(plan.cells[a:b], workers=1)
    doc = summarize_track_reference(plan, rows)
    assert list(doc["points"]) == [name]
    shipped = load_track_reference()["points"][name]["agents"]
    for agent, got in doc["points"][name]["agents"].items():
        assert got["scores"] == [pytest.approx(shipped[agent]["scores"][0], rel=1e-9)], agent


def test_benchmark_scores_an_agent_at_every_point_with_the_paired_comparison(tmp_path):
    """Each spec on its own at every point, and the specs together as the runs of one method."""
    res = runner.invoke(
        app,
        ["benchmark", "best-fit-admit", "random", "--track", "generalization", "--tasks", "autoscale-syn4"]
        + ["--seeds", "2", "--workers", "1", "--json", "--out", str(tmp_path / "run")],
    )
    assert res.exit_code == 0, res.stdout
    doc = json.loads(res.stdout)
    assert list(doc["points"]) == [p.name for p in test_points() if p.base == "autoscale-syn4"]
    ref = load_track_reference()["points"]
    for name, v in doc["points"].items():
        r = v["runs"]["best-fit-admit"]
        assert len(r["scores"]) == 2 and r["scores"] == pytest.approx(
            ref[name]["agents"]["best-fit-admit"]["scores"][:2]
        )
        assert math.isfinite(r["normalized"]) and r["paired_seeds"] == 2
        if v["best"] == "best-fit-admit":  # the same agent on the same seeds: no difference
            assert r["paired_vs_best"] == pytest.approx(0.0, abs=1e-9)
        # the two specs as two runs, normalized as the main report does: against random and the best
        # baseline on the same seeds (here the specs are those two: 1 and 0, their mean one half)
        m = v["method"]
        assert m["runs"] == ["best-fit-admit", "random"] and m["seeds"] == 2
        agents, mean = ref[name]["agents"], (lambda xs: sum(xs) / len(xs))
        lo, hi = mean(agents["random"]["scores"][:2]), mean(agents[v["best"]]["scores"][:2])
        want = (mean(v["runs"]["best-fit-admit"]["scores"] + v["runs"]["random"]["scores"]) - lo) / (hi - lo)
        assert m["normalized"]["value"] == pytest.approx(want)
        assert m["normalized"]["low"] <= want <= m["normalized"]["high"]
        own = m["per_run"]["best-fit-admit"]
        if v["best"] == "best-fit-admit":
            assert own["paired_vs_best"]["value"] == pytest.approx(0.0, abs=1e-9)
            assert own["verdict"] == "at best-fit-admit's level"
    assert (tmp_path / "run" / "cells.jsonl").read_text().count("\n") == 2 * 7 * 2


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["random", "--track", "nope"], "unknown track 'nope'"),
        (["random", "--track", "generalization", "--tasks", "bfjs-uniform"], "not a task of the generalization track"),
        (["random", "--track", "generalization", "--seeds", "11"], "--seeds"),
        (["--track", "generalization", "--reference"], "--out"),
        (["random", "--track", "generalization", "--plot", "x.png"], "does not apply to --track"),
        (["random", "--track", "generalization", "--split", "test"], "does not apply to --track"),
        (["--track", "generalization"], "give an agent or model"),
    ],
)
def test_bad_input_exits_2_with_a_message_before_any_episode(argv, words, tmp_path):
    res = runner.invoke(app, ["benchmark", *argv, "--json"])
    assert res.exit_code == 2, res.stdout
    doc = json.loads(res.stdout)
    assert words in doc["error"]["message"] or words == doc["error"].get("field"), doc
    assert "Traceback" not in res.stdout


def test_the_google_trace_preset_replays_thinned_windows_and_names_a_window_that_does_not_fit():
    """On the small fixture slice (165 completed tasks over 1.2 hours): each seed a window of its own."""
    from pathlib import Path

    from clustergym.errors import ScenarioError
    from clustergym.scenarios import make_preset

    fix = str(Path(__file__).resolve().parents[1] / "fixtures" / "traces")
    sc = make_preset("google-tasks", trace_dir=fix, num_servers=2, thin=2, window_hours=0.5, start_hour=0)
    assert sc.resources == ("cpu", "memory") and sc.num_servers == 2 and sc.horizon == 1800.0
    rows = run_rows(plan_cells_of(sc), workers=1)
    assert rows[0]["arrivals"] != rows[1]["arrivals"] or rows[0]["mean_queue_length"] != rows[1]["mean_queue_length"]
    with pytest.raises(ScenarioError, match="params.start_hour"):
        make_preset("google-tasks", trace_dir=fix, window_hours=0.5, start_hour=1.0)


def plan_cells_of(sc):
    from clustergym.runner import plan

    return plan(sc, ["best-fit"], seeds=[0, 1])


@pytest.mark.parametrize(
    "model, point",
    [
        ("general-autoscale-syn4-s0", "autoscale-syn4-size0.5"),
        ("general-rms-trap-s0", "rms-trap-size2"),
        ("general-mris-poisson-s0", "mris-poisson-size2"),
    ],
)
def test_a_shipped_general_policy_runs_at_another_size_of_its_task(model, point):
    """The equivariant policy's weights do not depend on the number of servers: an episode at another
    size than the task's completes, above the point's random reference (the CLI's table has it at every
    size)."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "models" / model
    if not (folder / "model.zip").is_file():
        pytest.skip("the shipped models are not in this checkout")
    from clustergym.suite.generalization import point_cells

    p = next(q for q in test_points() if q.name == point)
    (row,) = run_rows(point_cells(p, [str(folder)], 1), workers=1)
    assert row["task"]["complete"] and row["seed"] == TRACK_SEEDS[0]
    assert row["task"]["score"] > load_track_reference()["points"][point]["random"]


def test_a_model_scores_with_another_queue_window_through_the_benchmark(tmp_path):
    """``--queue-window K`` (and ``agent.queue_window``): a shipped equivariant model (trained with a
    32-job window) acts in envs with K window rows; the CLI records K, a resume keeps it, and it is
    refused where it would do nothing or cannot apply."""
    from pathlib import Path

    from clustergym.agent_api import make_env_for
    from clustergym.learned import load_model_agent
    from clustergym.suite import task

    folder = Path(__file__).resolve().parents[2] / "models" / "general-mris-poisson-s0"
    if not (folder / "model.zip").is_file():
        pytest.skip("the shipped models are not in this checkout")
    t = task("mris-poisson")
    for window in (None, 4, 64):
        agent = load_model_agent(str(folder), **({} if window is None else {"queue_window": window}))
        env = make_env_for(t.scenario(), agent, env_id=t.id)
        assert env.observation_space["queue_jobs"].shape[0] == (32 if window is None else window)
        env.close()
    for bad in (0, "x", 2.5):
        with pytest.raises(ConfigError, match="agent.queue_window"):
            load_model_agent(str(folder), queue_window=bad)

    def bench(*args: str) -> dict:
        res = CliRunner().invoke(app, ["benchmark", str(folder), "--tasks", "mris-poisson", "--seeds", "1", *args])
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)

    own, narrow = bench("--json"), bench("--json", "--queue-window", "4")
    assert own["queue_window"] is None and narrow["queue_window"] == 4
    score = {d["queue_window"]: d["rows"][0]["score"] for d in (own, narrow)}
    assert score[None] != score[4], "a 4-job window acted as the model's own 32-job one"
    out = tmp_path / "b"
    first = CliRunner().invoke(
        app,
        ["benchmark", str(folder), "--tasks", "mris-poisson", "--seeds", "1"]
        + ["--queue-window", "4", "--out", str(out), "--json"],
    )
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, ["benchmark", "--resume", str(out), "--queue-window", "8", "--json"])
    assert again.exit_code == 2 and "queue_window" in json.loads(again.stdout)["error"]["message"]
    for args, field in (
        (["benchmark", "random", "--tasks", "mris-poisson", "--queue-window", "4"], "--queue-window"),
        (["benchmark", str(folder), "--tasks", "mris-poisson", "--queue-window", "0"], "--queue-window"),
        (
            ["benchmark", str(folder), "--track", "generalization", "--tasks", "mris-poisson", "--queue-window", "0"],
            "--queue-window",
        ),
    ):
        res = CliRunner().invoke(app, [*args, "--json"])
        assert res.exit_code == 2 and json.loads(res.stdout)["error"]["field"] == field, res.output


def test_the_azure_policy_with_pooled_types_runs_on_the_google_trace():
    """``models/general-azure-vms-s0`` learned on the Azure trace's six flavours with ``policy.pool_types``:
    its weights run on the Google trace, which has no job types (here on the small fixture slice), with its
    own 32-job window and with a wider one.  Needs the real traces (CI has them): the model is rebuilt
    with its training task's spaces."""
    from pathlib import Path

    from clustergym.runner import plan
    from clustergym.scenarios import make_preset

    root = Path(__file__).resolve().parents[2]
    folder = root / "models" / "general-azure-vms-s0"
    if not (folder / "model.zip").is_file():
        pytest.skip("the shipped models are not in this checkout")
    from clustergym.errors import ClusterGymError
    from clustergym.suite import task

    try:  # the model is rebuilt with its training task's spaces: the Azure trace
        task("azure-vms").scenario()
    except ClusterGymError as e:
        pytest.skip(f"the model loads with its training task azure-vms, which needs the real traces: {e}")
    meta = json.loads((folder / "model.json").read_text())
    assert meta["policy_kwargs"]["pool_types"] and meta["scenario"] == "azure-vms"
    fix = str(root / "tests" / "fixtures" / "traces")
    sc = make_preset("google-tasks", trace_dir=fix, num_servers=2, thin=2, window_hours=0.5, start_hour=0)
    assert sc.num_types == 1
    for params in ({}, {"queue_window": 64}):
        cells = [replace(c, agent_params=tuple(params.items())) for c in plan(sc, [str(folder)], seeds=[0, 1])]
        rows = run_rows(cells, workers=1)
        assert all(r["started"] > 0 and r["arrivals"] > 0 for r in rows), rows
