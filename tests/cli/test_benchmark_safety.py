"""``clustergym benchmark`` has ``compare``'s data safety: every input, ``--out`` and ``--plot`` checked
before the first episode; ``--out`` new or empty unless ``--overwrite``; each finished episode kept, and
``--resume`` after Ctrl-C gives the uninterrupted run's tables; files written by temp-and-rename, never
through a symlink; ``--reference`` writes only to ``--out``; the packaged table never shrinks; a model
given twice counts once; errors are one JSON document with ``--json``."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clustergym.cli import app
from clustergym.errors import ConfigError
from clustergym.suite.reference import REFERENCE_PATH, load_reference, update_packaged

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
pytestmark = pytest.mark.usefixtures("quiet_warnings")
FAST = ["benchmark", "random", "--tasks", "rms-trap", "--seeds", "2", "--workers", "1"]


def _cli(*args: str):
    res = runner.invoke(app, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res


def _error(res, field: str | None = None) -> str:
    assert res.exit_code == 2, res.stdout
    doc = json.loads(res.stdout)
    assert set(doc) == {"error"}, doc
    if field is not None:
        assert doc["error"]["field"] == field, doc
    return doc["error"]["message"]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("argv", "field", "words"),
    [
        (["--tasks", "nope"], None, "nope"),
        (["--seeds", "0"], "--seeds", "--seeds"),
        (["--plot", "{tmp}/fig.gif"], "--plot", "unknown figure format"),
        (["--plot", "{tmp}/d.png"], "--plot", "is a folder"),
        (["--resume", "{tmp}/nothing"], "--resume", "no earlier run"),
    ],
)
def test_bad_inputs_are_refused_before_any_episode(tmp_path, argv, field, words):
    out = tmp_path / "out"
    (tmp_path / "d.png").mkdir()
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    target = [] if "--resume" in argv else ["--out", str(out)]
    msg = _error(_cli(*FAST, *target, "--json", *argv), field)
    assert words in msg
    assert not (out / "cells.jsonl").exists()


def test_out_must_be_new_or_empty_and_a_compare_folder_is_left_alone(tmp_path):
    cmp = tmp_path / "cmp"
    assert (
        _cli("compare", "ec2", "--agents", "best-fit", "--seeds", "1", "--horizon", "5", "--out", str(cmp)).exit_code
        == 0
    )
    before = {p.name: _sha(p) for p in cmp.iterdir()}
    assert "earlier run" in _error(_cli(*FAST, "--out", str(cmp), "--json"), "--out")
    assert {p.name: _sha(p) for p in cmp.iterdir()} == before
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert "not empty" in _error(_cli(*FAST, "--out", str(other), "--json"), "--out")
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    assert "not the run.json of clustergym benchmark" in _error(_cli("benchmark", "--resume", str(cmp), "--json"))


def test_files_are_never_written_through_a_symlink(tmp_path):
    outside = tmp_path / "outside.csv"
    outside.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.csv").symlink_to(outside)
    assert _cli(*FAST, "--out", str(out), "--overwrite").exit_code == 0
    assert outside.read_text() == "precious\n"
    assert not (out / "results.csv").is_symlink() and "score" in (out / "results.csv").read_text()


def test_reference_writes_only_to_out():
    # where it writes with --out: test_reference_ctrl_c_then_resume_gives_the_uninterrupted_table
    assert "--out" in _error(_cli("benchmark", "--reference", "--tasks", "rms-trap", "--seeds", "2", "--json"), "--out")


def _interrupt(signalled_cli, args: list[str], journal: Path, after: int) -> int:
    """``clustergym ARGS``, sent SIGINT once ``journal`` holds ``after`` episodes; the episodes kept."""
    ready = lambda: journal.exists() and journal.read_text().count("\n") >= after  # noqa: E731
    rc, stdout, _ = signalled_cli(args, ready, signal.SIGINT, timeout=120)
    assert rc == 130, stdout
    assert json.loads(stdout)["error"]["type"] == "Interrupted"
    assert json.loads((journal.parent / "run.json").read_text())["status"] == "interrupted"
    return journal.read_text().count("\n")


def _run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m clustergym ARGS`` in a subprocess (``env``: the ``cli_env`` fixture's)."""
    return subprocess.run(
        [sys.executable, "-m", "clustergym", *args], capture_output=True, text=True, env=env, timeout=300
    )


def _resume(folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``benchmark --resume folder`` in a subprocess, which must succeed."""
    res = _run_cli(["benchmark", "--resume", str(folder), "--workers", "1", "--json"], env)
    assert res.returncode == 0, res.stderr
    return res


def test_reference_ctrl_c_then_resume_gives_the_uninterrupted_table(tmp_path, signalled_cli, cli_env):
    packaged = _sha(REFERENCE_PATH)
    args = ["benchmark", "--reference", "--tasks", "autoscale-syn4", "--seeds", "2", "--workers", "1", "--json"]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert _run_cli([*args, "--out", str(whole)], cli_env).returncode == 0
    episodes = (whole / "cells.jsonl").read_text().count("\n")  # 10 agents x 2 seeds
    assert episodes == 20
    kept = _interrupt(signalled_cli, [*args, "--out", str(cut)], cut / "cells.jsonl", 3)
    assert 3 <= kept < episodes
    assert not (cut / "reference.json").exists()  # the task is not done: no entry for it yet
    res = _resume(cut, cli_env)
    assert (cut / "cells.jsonl").read_text().count("\n") == episodes
    a, b = load_reference(whole / "reference.json"), load_reference(cut / "reference.json")
    assert set(a["tasks"]) == {"autoscale-syn4"} and a["seeds"] == b["seeds"]

    def timeless(doc):  # a task's wall_seconds measures the machine: the sum of its episodes' times
        return {n: {k: v for k, v in e.items() if k != "wall_seconds"} for n, e in doc["tasks"].items()}

    assert timeless(a) == timeless(b)
    rows = [json.loads(line)["row"] for line in (cut / "cells.jsonl").read_text().splitlines()]
    assert b["tasks"]["autoscale-syn4"]["wall_seconds"] == pytest.approx(sum(r["wall_seconds"] for r in rows))
    assert json.loads((cut / "run.json").read_text())["status"] == "complete"
    assert json.loads(res.stdout)["tasks"] == b["tasks"]
    assert _sha(REFERENCE_PATH) == packaged  # --reference never writes the package's table


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    """A finished ``--reference`` run of one task on one seed (the refusals below write nothing)."""
    out = tmp_path_factory.mktemp("reference") / "ref"
    argv = ["benchmark", "--reference", "--tasks", "autoscale-syn4", "--seeds", "1", "--workers", "1", "--json"]
    assert _cli(*argv, "--out", str(out)).exit_code == 0
    return out


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--tasks", "autoscale-syn4,rms-trap"], "tasks"),
        (["--seeds", "2"], "seeds"),
        (["--split", "test"], "split"),
        (["random"], "specs"),
        (["--reference"], "--resume"),
    ],
)
def test_reference_resume_refuses_other_settings(reference_run, argv, field):
    out = reference_run
    before = {p.name: _sha(p) for p in out.iterdir()}
    msg = _error(_cli("benchmark", "--resume", str(out), *argv, "--json"), field)
    assert str(out) in msg or "--reference" in msg
    assert {p.name: _sha(p) for p in out.iterdir()} == before  # nothing ran, nothing written


def test_the_packaged_table_never_shrinks(tmp_path):
    target = tmp_path / "packaged.json"
    target.write_text(REFERENCE_PATH.read_text())
    real = load_reference()
    fewer_seeds = tmp_path / "fewer.json"
    fewer_seeds.write_text(
        json.dumps({**real, "seeds": real["seeds"][:2], "tasks": {"rms-trap": real["tasks"]["rms-trap"]}})
    )
    with pytest.raises(ConfigError, match="shrink"):
        update_packaged(fewer_seeds, target)
    more = real["seeds"] + [real["seeds"][-1] + 1]
    fewer_tasks = tmp_path / "fewer-tasks.json"
    fewer_tasks.write_text(json.dumps({**real, "seeds": more, "tasks": {"rms-trap": real["tasks"]["rms-trap"]}}))
    with pytest.raises(ConfigError, match="lose"):
        update_packaged(fewer_tasks, target)
    same = tmp_path / "one-task.json"  # the same seeds, one task: merged, the others kept
    same.write_text(json.dumps({**real, "tasks": {"rms-trap": {**real["tasks"]["rms-trap"], "wall_seconds": 1.0}}}))
    update_packaged(same, target)
    after = load_reference(target)
    assert set(after["tasks"]) == set(real["tasks"]) and after["tasks"]["rms-trap"]["wall_seconds"] == 1.0
    assert "--update-packaged" in _error(_cli("benchmark", "random", "--update-packaged", str(same), "--json"))


def test_a_model_given_twice_counts_once(tmp_path):
    from clustergym.suite.scoring import distinct_specs

    pytest.importorskip("stable_baselines3", reason="needs the train extra")
    folder = ROOT / "models" / "rms-trap-pf-s0"
    kept, warnings = distinct_specs([str(folder), str(folder / "model.zip"), "random", "random"])
    assert kept == [str(folder), "random"]
    assert len(warnings) == 2 and "same model" in warnings[0]


def test_ctrl_c_then_resume_gives_the_uninterrupted_tables(tmp_path, signalled_cli, cli_env):
    args = ["benchmark", "random", "--tasks", "rms-trap", "--seeds", "6", "--workers", "1", "--json"]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert _run_cli([*args, "--out", str(whole)], cli_env).returncode == 0
    kept = _interrupt(signalled_cli, [*args, "--out", str(cut)], cut / "cells.jsonl", 2)
    assert 2 <= kept < 6
    _resume(cut, cli_env)
    for name in ("results.csv", "summary.json"):
        assert (cut / name).read_bytes() == (whole / name).read_bytes(), name
    assert json.loads((cut / "run.json").read_text())["status"] == "complete"
