"""`compare` keeps its work: every input and the output folder are checked
before anything runs; each episode is kept as it finishes; after Ctrl-C or a failing cell,
`compare --resume DIR` runs only the missing cells and writes the same tables as an uninterrupted run;
an earlier run is never overwritten without --overwrite; an agent listed twice is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from clustergym.agent_api import AGENTS, register_agent
from clustergym.baselines.greedy import BestFit
from clustergym.cli import app
from clustergym.errors import ConfigError
from clustergym.runner import RunFolder, plan, run_rows
from clustergym.runner.journal import CELLS_FILE, RUN_FILE

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("quiet_warnings")

FLAKY = "test-flaky-best-fit"
BASE = ["compare", "ec2", "--seeds", "3", "--horizon", "15", "--set", "num_servers=5"]


def _cli(*args: str):
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _flaky(marker: Path, exc: type[BaseException]):
    """Best-Fit that raises ``exc`` on seed 1 while ``marker`` exists (the factory travels to workers)."""

    class Flaky(BestFit):
        name = FLAKY

        def reset(self, env, seed=None):
            if seed == 1 and marker.exists():
                raise exc("injected at seed 1")
            super().reset(env, seed)

    return Flaky


@pytest.fixture
def flaky(tmp_path):
    marker = tmp_path / "fail-now"
    marker.touch()

    def use(exc: type[BaseException]) -> Path:
        register_agent(FLAKY)(_flaky(marker, exc))
        return marker

    yield use
    AGENTS.pop(FLAKY, None)


def _tables(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    results = pd.read_csv(folder / "results.csv").drop(columns=["wall_seconds"])
    return results, pd.read_csv(folder / "summary.csv")


@pytest.mark.parametrize(
    "exc,code,workers", [(KeyboardInterrupt, 130, "1"), (ConfigError, 2, "1"), (ConfigError, 2, "2")]
)
def test_an_interrupted_or_failing_compare_resumes_to_the_same_tables(tmp_path, flaky, exc, code, workers):
    marker = flaky(exc)
    agents = ["--agents", f"first-fit,{FLAKY}", "--workers", workers]
    out = tmp_path / "run"
    rc, stdout, stderr = _cli(*BASE, *agents, "--out", str(out), "--json")
    assert rc == code
    error = json.loads(stdout)["error"]
    assert "injected at seed 1" in error["message"] or error["type"] == "Interrupted"
    assert f"--resume {out}" in " ".join(stderr.split())
    assert json.loads((out / RUN_FILE).read_text())["status"] == ("interrupted" if code == 130 else "failed")
    kept = [json.loads(line) for line in (out / CELLS_FILE).read_text().splitlines()]
    # serially, the cells before the failing one (first-fit's three, the flaky agent's seed 0) are kept
    assert len(kept) == 4 if workers == "1" else len(kept) < 6
    assert not (out / "results.csv").exists()
    # a run into the same folder is refused; --resume with other settings too
    assert _cli(*BASE, *agents, "--out", str(out))[0] == 2
    rc, _, stderr = _cli("compare", "--resume", str(out), "--seeds", "4")
    assert rc == 2 and "was run with --seeds 3" in " ".join(stderr.split())

    marker.unlink()
    rc, stdout, stderr = _cli("compare", "--resume", str(out), "--workers", workers, "--json")
    assert rc == 0, stderr
    assert json.loads(stdout)["out"] == str(out)
    assert json.loads((out / RUN_FILE).read_text())["status"] == "complete"

    fresh = tmp_path / "fresh"
    assert _cli(*BASE, *agents, "--out", str(fresh))[0] == 0
    for resumed, uninterrupted in zip(_tables(out), _tables(fresh)):
        pd.testing.assert_frame_equal(resumed, uninterrupted)


def test_run_rows_keeps_rows_as_they_finish_and_skips_done_ones():
    cells = plan("ec2", ["first-fit"], seeds=range(3), horizon=5, params={"num_servers": 4})
    seen: list[int] = []
    rows = run_rows(cells, on_row=lambda i, row: seen.append(i))
    assert sorted(seen) == [0, 1, 2]
    again: list[int] = []
    fake = {**rows[1], "mean_queue_length": -1.0}
    rows2 = run_rows(cells, done={1: fake}, on_row=lambda i, row: again.append(i))
    assert sorted(again) == [0, 2] and rows2[1]["mean_queue_length"] == -1.0


def test_out_is_checked_before_anything_runs(tmp_path):
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    for target, message in [
        ("/proc/clustergym-x", "cannot write there"),
        (str(a_file), "is an existing file"),
        (str(tmp_path / "full"), "is not empty"),
    ]:
        rc, stdout, stderr = _cli(*BASE, "--agents", "best-fit", "--out", target, "--json")
        assert rc == 2 and message in json.loads(stdout)["error"]["message"], stderr
        assert "Traceback" not in stderr
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        assert _cli(*BASE, "--agents", "best-fit", "--out", str(ro))[0] == 2
    # --overwrite writes into a non-empty folder, and leaves files that are not a run's alone
    assert _cli(*BASE, "--agents", "best-fit", "--out", str(tmp_path / "full"), "--overwrite")[0] == 0
    assert (tmp_path / "full" / "notes.txt").read_text() == "mine"


def test_overwrite_replaces_an_earlier_run_and_its_plot(tmp_path):
    out = tmp_path / "run"
    assert _cli(*BASE, "--agents", "best-fit", "--sweep", "zeta=0.5,0.6", "--out", str(out))[0] == 0
    pytest.importorskip("matplotlib", reason="the plot needs the plot extra")
    assert (out / "mean_queue_length_vs_zeta.png").exists()
    rc, _, stderr = _cli(*BASE, "--agents", "best-fit", "--out", str(out))
    assert rc == 2 and "holds an earlier run" in " ".join(stderr.split())
    assert _cli(*BASE, "--agents", "best-fit", "--out", str(out), "--overwrite")[0] == 0
    assert not (out / "mean_queue_length_vs_zeta.png").exists()  # the earlier run's plot is gone
    assert "zeta" not in pd.read_csv(out / "results.csv").columns


def test_a_bad_sweep_value_is_found_before_any_episode_runs(tmp_path):
    out = tmp_path / "run"
    args = ["compare", "ec2", "--seeds", "2", "--horizon", "10", "--agents", "best-fit", "--out", str(out), "--json"]
    rc, stdout, _ = _cli(*args, "--sweep", "num_servers=5,10,0")
    assert rc == 2 and "num_servers=0" in json.loads(stdout)["error"]["message"]
    assert not out.exists()  # nothing ran, nothing was created
    rc, stdout, _ = _cli(*args, "--sweep", "num_servers=5,10", "--set", "num_servers=3")
    assert rc == 2 and "also given with --set" in json.loads(stdout)["error"]["message"]


def test_an_agent_listed_twice_is_refused():
    rc, stdout, _ = _cli(*BASE, "--agents", "best-fit,first-fit,best-fit", "--json")
    assert rc == 2 and "best-fit listed twice" in json.loads(stdout)["error"]["message"]
    with pytest.raises(ConfigError, match="listed twice"):
        plan("ec2", ["best-fit", "best-fit"], seeds=range(2))


def test_resume_refuses_a_folder_of_another_plan_and_a_damaged_journal(tmp_path):
    out = tmp_path / "run"
    assert _cli(*BASE, "--agents", "best-fit", "--out", str(out))[0] == 0
    lines = (out / CELLS_FILE).read_text().splitlines()
    (out / CELLS_FILE).write_text("\n".join(["{not json", *lines[1:]]) + "\n")
    rc, _, stderr = _cli("compare", "--resume", str(out))
    assert rc == 2 and "line 1 is damaged" in " ".join(stderr.split())
    # a line cut by the interruption (the last one) is dropped: its cell runs again
    (out / CELLS_FILE).write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20])
    folder = RunFolder.resume(out)
    cut = json.loads(lines[-1])["index"]
    assert sorted(folder.rows) == sorted({0, 1, 2} - {cut})
    assert _cli("compare", "--resume", str(tmp_path / "nothing-here"))[0] == 2


def test_atomic_write_keeps_the_usual_permissions(tmp_path):
    """Result files are written through a temporary file and a rename; they get the permissions of
    any new file (the umask's), not the owner-only 0600 of a mkstemp file; a failing writer leaves
    neither the target nor its temporary file."""
    from clustergym.runner.journal import atomic_write

    umask = os.umask(0o022)
    try:
        atomic_write(tmp_path / "a.csv", lambda p: p.write_text("x\n"))
    finally:
        os.umask(umask)
    assert (tmp_path / "a.csv").read_text() == "x\n"
    assert (tmp_path / "a.csv").stat().st_mode & 0o777 == 0o644

    def fail(p):
        p.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        atomic_write(tmp_path / "b.csv", fail)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["a.csv"]
