"""What the commands print: full values when piped, --format csv|markdown, --version, install hints
that keep the extra's name, --markdown that prints the shipped reference and writes nothing."""

from __future__ import annotations

import csv
import io
from importlib.metadata import version

from typer.testing import CliRunner

from clustergym.cli import app
from clustergym.suite.reference import REFERENCE_PATH

runner = CliRunner()


def test_version():
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.stdout.strip() == f"clustergym {version('clustergym')}"


def test_piped_tables_hold_full_values():
    res = runner.invoke(app, ["list"])  # CliRunner's stdout is not a terminal
    assert res.exit_code == 0 and "…" not in res.stdout
    from clustergym.scenarios import PRESETS

    assert PRESETS["bf-trap"].description in res.stdout  # a long description, whole on its line


def test_benchmark_prints_csv_and_markdown_tables():
    args = ["benchmark", "random", "--tasks", "rms-trap", "--seeds", "1", "--workers", "1"]
    res = runner.invoke(app, [*args, "--format", "csv"])
    assert res.exit_code == 0, res.output
    rows = list(csv.reader(io.StringIO("\n".join(ln for ln in res.stdout.splitlines() if not ln.startswith("#")))))
    assert rows[0][:3] == ["task", "agent", "score"] and rows[1][:2] == ["rms-trap", "random"]
    md = runner.invoke(app, [*args, "--format", "markdown"])
    assert md.exit_code == 0 and "| task | agent | score |" in md.stdout and "|---|" in md.stdout


def test_markdown_prints_the_shipped_reference_and_writes_nothing():
    before = REFERENCE_PATH.read_bytes()
    res = runner.invoke(app, ["benchmark", "--reference", "--markdown", "--tasks", "rms-trap"])
    assert res.exit_code == 0, res.output
    assert "rms-trap" in res.stdout and "mris-poisson" not in res.stdout
    assert REFERENCE_PATH.read_bytes() == before


def test_install_hints_keep_the_extras_name(monkeypatch, tmp_path):
    import clustergym.runner as runner_pkg

    monkeypatch.setattr(
        runner_pkg, "missing_outputs", lambda: {"the plot": "needs matplotlib: pip install 'clustergym[plot]'"}
    )
    res = runner.invoke(
        app, ["compare", "ec2", "--agents", "best-fit", "--seeds", "1", "--horizon", "5", "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 0, res.output
    assert "pip install 'clustergym[plot]'" in " ".join(res.stderr.split())


def test_bench_prints_csv_with_its_notes_as_comment_lines(monkeypatch):
    """bench prints tables and lines of prose: under --format csv the prose is '#' lines, so that
    every other line parses as CSV (the measurement itself is replaced by fixed numbers)."""
    import clustergym.perf as perf

    row = {"benchmark": "kernel", "scenario": "ec2", "servers": 20, "events": 1000, "steps": 1500}
    row.update(wall_seconds=0.5, events_per_second=2000.0, steps_per_second=3000.0)
    row.update(events_per_cpu_second=2100.0, steps_per_cpu_second=3100.0)
    ppo = {"timesteps": 512, "learn_wall_seconds": 4.0, "env_wall_seconds": 1.0, "env_share": 0.25}
    monkeypatch.setattr(perf, "run_benchmarks", lambda **kw: {"benchmarks": [row], "ppo": ppo})
    res = runner.invoke(app, ["bench", "--no-replay", "--no-env-steps", "--format", "csv"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    notes = [ln for ln in lines if ln.startswith("#")]
    assert notes == ["# clustergym bench", "# MaskablePPO on ec2, 512 steps: learn 4.0 s wall, env 1.0 s = 25.0% of it"]
    rows = list(csv.DictReader(ln for ln in lines if not ln.startswith("#")))
    assert len(rows) == 1 and rows[0]["benchmark"] == "kernel" and rows[0]["events_per_second"] == "2,000"
    md = runner.invoke(app, ["bench", "--no-replay", "--no-env-steps", "--format", "markdown"])
    assert md.exit_code == 0 and "| benchmark | scenario |" in md.stdout and "= 25.0% of it" in md.stdout


def test_bench_env_steps_skips_a_trace_task_without_its_traces_and_measures_the_others(monkeypatch, tmp_path):
    """Without the trace files, the trace task's row says why it was skipped, the other tasks are
    measured, and the table prints both (the run is not lost to one missing trace)."""
    import clustergym.perf as perf
    from clustergym.perf.envspeed import bench_env_steps

    monkeypatch.setenv("CLUSTERGYM_TRACES", str(tmp_path / "no-traces-here"))
    doc = bench_env_steps(["azure-vms", "rms-trap"], steps=30, rounds=1, n_envs=0)
    skipped, measured = doc["tasks"]
    assert skipped["task"] == "azure-vms" and skipped["status"] == "skipped"
    assert "no-traces-here" in skipped["reason"] and "CLUSTERGYM_TRACES" in skipped["reason"]
    assert measured["task"] == "rms-trap" and measured["steps_per_s"] > 0 and "status" not in measured
    monkeypatch.setattr(perf, "run_benchmarks", lambda **kw: {"benchmarks": [], "env_steps": doc})
    res = runner.invoke(app, ["bench", "--no-replay", "--no-ppo", "--format", "csv"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    table = lines[next(i for i, ln in enumerate(lines) if ln.startswith("# env steps/s")) + 1 :]
    rows = {r["task"]: r for r in csv.DictReader(table)}
    assert rows["azure-vms"]["steps_per_s"].startswith("skipped: ") and float(rows["rms-trap"]["ratio_min"]) > 0
