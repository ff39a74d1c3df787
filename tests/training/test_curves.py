"""Learning curves from training runs' eval.csv: the data drawn, mismatched runs refused, the CLI."""

import json
import os
import subprocess
import sys

import matplotlib
import pandas as pd
import pytest

from clustergym.errors import ConfigError
from clustergym.training.curves import curve_data, load_curves, plot_learning_curves

matplotlib.use("Agg")


def _run(folder, seed, values, scenario="bf-trap", metric="mean_queue_length"):
    folder.mkdir()
    (folder / "model.json").write_text(json.dumps({"scenario": scenario, "scenario_params": {}, "seed": seed}))
    rows = []
    for k, v in enumerate(values):
        step = 512 * (k + 1)
        for s in (0, 1):
            rows.append(
                {
                    "step": step,
                    "wall_seconds": 3.0 * (k + 1),
                    "agent": "learned",
                    "seed": s,
                    metric: v + s,
                    "unstable": False,
                }
            )
            rows.append(
                {
                    "step": step,
                    "wall_seconds": 3.0 * (k + 1),
                    "agent": "best-fit",
                    "seed": s,
                    metric: 10.0 + s,
                    "unstable": False,
                }
            )
    pd.DataFrame(rows).to_csv(folder / "eval.csv", index=False)
    return folder


def test_curve_data_averages_seeds_then_runs_and_keeps_the_baselines(tmp_path):
    a = _run(tmp_path / "a", 0, [30.0, 20.0, 12.0])
    b = _run(tmp_path / "b", 1, [40.0, 24.0, 8.0])
    curves, metric = load_curves([a, b / "model.zip"])
    assert metric == "mean_queue_length" and set(curves["train_seed"]) == {0, 1}
    d = curve_data(curves, metric)
    mean = d["mean"].set_index("step")
    assert mean.loc[512, "value"] == pytest.approx((30.5 + 40.5) / 2)  # mean over eval seeds, then runs
    assert (mean.loc[1536, "low"], mean.loc[1536, "high"]) == (8.5, 12.5)
    # the 95% interval of the mean over the two runs: 10.5 +- t(0.975, 1) * 2 * sqrt(2) / sqrt(2)
    assert mean.loc[1536, "ci_high"] - 10.5 == pytest.approx(12.706 * 2.0, rel=1e-3)
    assert mean.loc[1536, "ci_low"] == 0.0  # 10.5 - 25.4, cut at the least queue length there is
    assert set(mean["interval_over"]) == {"training seeds"}
    one = curve_data(*load_curves([a]))["mean"].set_index("step")  # one run: over its evaluation seeds
    assert one.loc[1536, "ci_low"] < 12.5 < one.loc[1536, "ci_high"] and set(one["interval_over"]) == {
        "evaluation seeds"
    }
    assert d["baselines"].set_index("agent").loc["best-fit", "value"] == 10.5
    axes = plot_learning_curves(curves, metric)
    assert axes[0].get_xlabel() == "environment steps" and "lower is better" in axes[0].get_ylabel()
    assert axes[1].get_xlabel().startswith("training wall time")


def test_runs_of_different_problems_are_refused(tmp_path):
    a = _run(tmp_path / "a", 0, [1.0])
    b = _run(tmp_path / "b", 0, [1.0], scenario="ec2")
    with pytest.raises(ConfigError, match="the first run"):
        load_curves([a, b])
    with pytest.raises(ConfigError, match="no eval.csv"):
        load_curves([tmp_path / "missing"])


def test_curves_command_writes_three_formats_and_refuses_to_overwrite(tmp_path):
    a = _run(tmp_path / "a", 0, [30.0, 20.0])
    cmd = [sys.executable, "-m", "clustergym", "curves", str(a), "--out", str(tmp_path / "lc"), "--json"]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["metric"] == "mean_queue_length" and [r["value"] for r in doc["mean"]] == [30.5, 20.5]
    assert all((tmp_path / f"lc.{fmt}").stat().st_size > 0 for fmt in ("png", "svg", "pdf"))
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert again.returncode == 2 and "--overwrite" in again.stderr and "Traceback" not in again.stderr


def test_the_committed_learning_curves_figure_data_have_an_interval_over_five_training_seeds():
    """docs/figures/learning_curves_bftrap/: the data docs/figures/learning_curves_bftrap.png is drawn
    from (its README has the commands); the numbers docs/reporting.md quotes."""
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "docs" / "figures" / "learning_curves_bftrap"
    runs = sorted(p for p in data.iterdir() if p.is_dir())
    assert [p.name for p in runs] == ["s0", "s1", "s2", "s3", "s4"]
    curves, metric = load_curves(runs)
    d = curve_data(curves, metric)
    m = d["mean"]
    assert metric == "mean_queue_length" and set(curves["train_seed"]) == {0, 1, 2, 3, 4}
    assert set(m["runs"]) == {5} and set(m["interval_over"]) == {"training seeds"}
    assert ((m["ci_low"] < m["value"]) & (m["value"] < m["ci_high"])).all()
    last = m.iloc[-1]
    assert (round(last["value"], 1), round(last["ci_low"], 1), round(last["ci_high"], 1)) == (30.5, 24.1, 37.0)
    assert d["baselines"].set_index("agent")["value"].round(1).to_dict() == {"best-fit": 16.2, "first-fit": 9.7}
