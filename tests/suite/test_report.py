"""The report of ``clustergym benchmark`` (:func:`clustergym.suite.report.report`) and the splits.

A stubbed reference of one small task keeps these fast; one CLI run plays three episodes on the
test split."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

import clustergym  # noqa: F401
from clustergym.cli import app
from clustergym.errors import ConfigError
from clustergym.suite import SPLITS, TEST_SEEDS, eval_seeds
from clustergym.suite.reference import load_reference
from clustergym.suite.report import report, task_bound, verdict

pytestmark = pytest.mark.usefixtures("quiet_warnings")
runner = CliRunner()
SEEDS = [2_000_000 + i for i in range(12)]


def _reference(rng: np.random.Generator) -> dict:
    """A stub reference of ``rms-trap`` on the test split: random, a best baseline and an oracle."""
    hard = rng.normal(0.0, 2.0, len(SEEDS))
    agents = {
        "random": {"oracle": False, "scores": (hard - 10).tolist()},
        "mwr": {"oracle": False, "scores": (hard - 5).tolist()},
        "pq": {"oracle": True, "scores": (hard - 2).tolist()},
    }
    for a in agents.values():
        a["mean"] = float(np.mean(a["scores"]))
    return {
        "split": "test",
        "suite_version": 1,
        "seeds": SEEDS,
        "tasks": {
            "rms-trap": {
                "id": "clustergym/rms-trap-v1",
                "metric": "mean_queue_length",
                "random": agents["random"]["mean"],
                "best": "mwr",
                "best_score": agents["mwr"]["mean"],
                "best_oracle": "pq",
                "best_oracle_score": agents["pq"]["mean"],
                "agents": agents,
            }
        },
    }


def _result(ref: dict, offsets: list[float], rng: np.random.Generator) -> dict:
    best = np.asarray(ref["tasks"]["rms-trap"]["agents"]["mwr"]["scores"])
    rows = [
        {"task": "rms-trap", "agent": f"m{i}", "seed": s, "score": float(best[j] + off + rng.normal(0, 0.3))}
        for i, off in enumerate(offsets)
        for j, s in enumerate(SEEDS)
    ]
    return {
        "split": "test",
        "seeds": SEEDS,
        "specs": [f"m{i}" for i in range(len(offsets))],
        "rows": rows,
        "tasks": {"rms-trap": {}},
    }


def test_the_report_holds_every_statistic_with_an_interval_and_names_the_split():
    rng = np.random.default_rng(0)
    ref = _reference(rng)
    rep = report(_result(ref, [1.0, 1.2, 0.9], rng), ref, resamples=200)
    assert rep["split"] == "test" and rep["runs"] == ["m0", "m1", "m2"]
    t = rep["tasks"]["rms-trap"]
    for key in ("normalized", "iqm", "median", "optimality_gap", "paired_vs_best", "paired_vs_best_normalized"):
        assert t[key]["low"] <= t[key]["value"] <= t[key]["high"], key
    assert t["paired_vs_best"]["baseline"] == "mwr" and t["paired_vs_best"]["low"] > 0
    assert t["verdict"] == "above mwr"
    assert set(t["probability_of_improvement"]) == {"random", "mwr", "pq"}
    assert t["probability_of_improvement"]["random"]["value"] == 1.0
    assert t["probability_of_improvement"]["pq"]["oracle"] is True
    assert t["headroom"]["best_oracle"] == "pq" and t["headroom"]["oracle_normalized"]["value"] == pytest.approx(1.6)
    assert t["headroom"]["bound"] is None  # RMS gives no bound
    assert set(t["per_run"]) == {"m0", "m1", "m2"}
    agg = rep["aggregate"]
    assert {"iqm", "mean", "median", "optimality_gap", "probability_of_improvement"} <= set(agg)
    assert set(agg["probability_of_improvement"]) == {"best baseline", "best oracle", "random"}
    prof = rep["performance_profile"]
    assert len(prof["taus"]) == len(prof["fraction"]) == len(prof["low"])
    assert all(a >= b - 1e-12 for a, b in zip(prof["fraction"], prof["fraction"][1:]))  # a survival curve


def test_a_method_at_the_baselines_level_is_not_declared_above_it():
    rng = np.random.default_rng(1)
    ref = _reference(rng)
    t = report(_result(ref, [0.0], rng), ref, resamples=200)["tasks"]["rms-trap"]
    assert t["verdict"] == "at mwr's level"
    assert t["paired_vs_best"]["low"] < 0 < t["paired_vs_best"]["high"]
    assert verdict({"low": -2.0, "high": -1.0}, "pq") == "below pq"


def test_a_report_refuses_a_reference_of_another_split():
    rng = np.random.default_rng(2)
    ref = _reference(rng)
    res = _result(ref, [0.0], rng)
    with pytest.raises(ValueError, match="test split, the reference on the validation split"):
        report(res, {**ref, "split": "validation"})


def test_autoscale_and_mris_report_their_bounds_and_others_none():
    b = task_bound("autoscale-syn4")
    assert b["name"] == "U*_L" and 9_000 < b["score"] < 12_360.0  # below U* = 1236 per server, 10 servers
    m = task_bound("mris-poisson", [1, 2])
    assert m["name"] == "no-wait" and len(m["scores"]) == 2 and m["score"] == pytest.approx(np.mean(m["scores"]))
    assert task_bound("rms-trap") is None


def test_the_splits_are_disjoint_and_each_has_its_reference():
    assert not set(SPLITS["validation"]) & set(SPLITS["test"])
    assert eval_seeds(3, "test") == list(TEST_SEEDS[:3])
    for split in SPLITS:
        ref = load_reference(split=split)
        assert ref["split"] == split and ref["seeds"] == eval_seeds(len(ref["seeds"]), split)
    with pytest.raises(ConfigError, match="unknown split 'train'"):
        eval_seeds(3, "train")


def test_bad_split_exits_2():
    result = runner.invoke(app, ["benchmark", "best-fit", "--split", "train"])
    assert result.exit_code == 2 and "unknown split 'train'" in result.stderr


def test_benchmark_json_on_the_test_split_prints_the_report():
    result = runner.invoke(
        app,
        [
            "benchmark",
            "first-fit",
            "--tasks",
            "rms-trap",
            "--seeds",
            "3",
            "--split",
            "test",
            "--workers",
            "1",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["split"] == "test" and doc["seeds"] == list(TEST_SEEDS[:3])
    rep = doc["report"]
    assert rep["split"] == "test"
    t = rep["tasks"]["rms-trap"]
    assert (
        t["seeds"] == 3 and t["paired_vs_best"]["baseline"] == load_reference(split="test")["tasks"]["rms-trap"]["best"]
    )
    for key in ("iqm", "mean", "median", "optimality_gap"):
        assert math.isfinite(rep["aggregate"][key]["value"])
    assert math.isfinite(t["paired_vs_best"]["low"]) and t["paired_vs_best"]["low"] <= t["paired_vs_best"]["high"]


def test_the_report_figure_names_the_split(tmp_path):
    pytest.importorskip("matplotlib")
    from clustergym.suite.figures import plot_report

    rng = np.random.default_rng(4)
    ref = _reference(rng)
    rep = report(_result(ref, [0.5, 0.7], rng), ref, resamples=100)
    path = plot_report(rep, tmp_path / "r.png")
    assert path.stat().st_size > 10_000
    with pytest.raises(ValueError, match="no task"):
        plot_report({k: v for k, v in rep.items() if k != "aggregate"}, path)
