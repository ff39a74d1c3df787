"""``clustergym train --seeds``: a sweep of runs, one folder per seed, whose models are the sequential runs'.

Budgets are tiny (2 envs x 32-step rollouts, 128 steps, 4 servers, episodes of 3 time units): these
tests check where runs go, that parallel runs equal sequential ones, and what a resume keeps.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("stable_baselines3", reason="needs the train extra")

from clustergym.cli import app
from clustergym.errors import ConfigError
from clustergym.training.sweep import parse_seeds
from clustergym.training.train import train

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("quiet_warnings")
SETS = {"algo.n_steps": 32, "algo.batch_size": 32, "algo.n_epochs": 1, "horizon": 3, "num_servers": 4}
TINY = ["--timesteps", "128", "--envs", "2", *[a for k, v in SETS.items() for a in ("--set", f"{k}={v}")]]


def _cli(*args: str) -> tuple[int, str, str]:
    res = runner.invoke(app, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, " ".join(res.stderr.split())


def _params(model: Path) -> dict:
    import torch

    with zipfile.ZipFile(model) as z:
        return torch.load(io.BytesIO(z.read("policy.pth")), map_location="cpu")


def _same(a: Path, b: Path) -> bool:
    import torch

    x, y = _params(a), _params(b)
    return x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """Seeds 0 and 1 trained on two local processes."""
    out = tmp_path_factory.mktemp("sweep") / "x"
    rc, _, err = _cli("train", "ec2", "--seeds", "0-1", "--workers", "2", "--out", str(out), *TINY)
    assert rc == 0, err
    return out


def test_parallel_runs_are_the_sequential_runs(sweep, tmp_path):
    doc = json.loads((sweep / "sweep.json").read_text())
    assert doc["status"] == "complete" and doc["sweep"]["seeds"] == [0, 1]
    assert {k: v["status"] for k, v in doc["runs"].items()} == {"s0": "trained", "s1": "trained"}
    for seed in (0, 1):
        alone = train("ec2", timesteps=128, n_envs=2, seed=seed, out=tmp_path / f"seq{seed}", verbose=False, **SETS)
        assert _same(sweep / f"s{seed}" / "model.zip", alone), f"seed {seed}: the sweep's model is not the run's"
        meta = json.loads((sweep / f"s{seed}" / "model.json").read_text())
        assert meta["config"]["seed"] == seed and meta["timesteps"] == 128
    assert not _same(sweep / "s0" / "model.zip", sweep / "s1" / "model.zip")  # the seed matters


def test_resume_keeps_finished_runs_and_continues_the_others_from_their_checkpoint(sweep, tmp_path):
    import shutil

    out = tmp_path / "x"
    shutil.copytree(sweep, out)
    kept = (out / "s0" / "model.zip").read_bytes()
    # s1 as a run killed after its checkpoint of step 64: no final model, status running
    for name in ("model.zip", "vecnormalize.npz"):
        (out / "s1" / name).unlink()
    meta = json.loads((out / "s1" / "model.json").read_text())
    (out / "s1" / "model.json").write_text(json.dumps({**meta, "status": "running", "timesteps": 64}))
    rc, stdout, err = _cli("train", "--resume", str(out), "--workers", "1", "--json")
    assert rc == 0, err
    runs = {r["seed"]: r for r in json.loads(stdout)["runs"]}
    assert runs[0]["status"] == "kept" and runs[1]["status"] == "resumed"
    assert (out / "s0" / "model.zip").read_bytes() == kept  # not trained again
    assert json.loads((out / "s1" / "model.json").read_text())["timesteps"] == 128
    assert json.loads((out / "sweep.json").read_text())["status"] == "complete"


@pytest.mark.parametrize(
    ("text", "seeds"), [("0-2", [0, 1, 2]), ("3", [3]), ("0,5,7", [0, 5, 7]), ("0-1,10", [0, 1, 10])]
)
def test_seed_lists(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "2-0", "a", "0,0", "-1", "1-"])
def test_bad_seed_lists_are_refused(text):
    with pytest.raises(ConfigError, match="--seeds"):
        parse_seeds(text)


def test_bad_sweep_input_exits_2_before_anything_runs(sweep, tmp_path):
    cases = [
        (["train", "ec2", "--workers", "2", "--out", str(tmp_path / "a")], "add --seeds"),
        (["train", "ec2", "--ray", "auto", "--out", str(tmp_path / "a")], "add --seeds"),
        (["train", "ec2", "--seeds", "0-1", "--seed", "3", "--out", str(tmp_path / "a")], "drop --seed"),
        (["train", "ec2", "--seeds", "2-0", "--out", str(tmp_path / "a")], "runs upwards"),
        (["train", "ec2", "--seeds", "0-1", "--out", str(sweep)], "holds an earlier sweep"),
        (["train", "--resume", str(sweep), "--set", "num_servers=8"], "is a sweep trained with params"),
        (["train", "--resume", str(sweep), "--seeds", "0-3"], "drop --seeds"),
        (["train", "ec2", "--seeds", "0-1", "--set", "nope=1", "--out", str(tmp_path / "b")], "nope"),
    ]
    for args, message in cases:
        rc, _, err = _cli(*args, *([] if "--resume" in args else TINY))
        assert rc == 2, (args, err)
        assert message in err and "Traceback" not in err, (args, err)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_run_that_ended_on_its_cpu_budget_is_finished_for_the_sweep(tmp_path):
    """A resumed sweep keeps the runs that ended on the sweep's CPU budget (resuming them would spend a
    process to stop at once); a run short of its total for another reason continues."""
    from clustergym.training.sweep import _recorded, _state

    run = tmp_path / "s0"
    run.mkdir()
    (run / "model.zip").write_bytes(b"")
    meta = {"status": "finished", "timesteps": 512, "stopped_by": "cpu_budget"}
    (run / "model.json").write_text(json.dumps(meta))
    assert _state(run, 1024, _recorded(run)) == "finished"
    (run / "model.json").write_text(json.dumps({**meta, "stopped_by": None}))
    assert _state(run, 1024, _recorded(run)) == "checkpoint"


def test_torch_threads_are_cut_to_the_cores_over_the_runs_at_once(monkeypatch):
    """Runs at once share the cores: each gets at most cores // workers torch threads (a Ray task, its
    one CPU), with a warning when the configuration asked for more; within that, the count stands."""
    import clustergym.training.sweep as sweep_module
    from clustergym.training.config import TrainConfig
    from clustergym.training.sweep import _threads_per_run

    monkeypatch.setattr(sweep_module, "available_workers", lambda: 4)
    c = TrainConfig(scenario="ec2", torch_threads=4)
    with pytest.warns(UserWarning, match="torch_threads=4 with 2 runs at once on 4 cores"):
        assert _threads_per_run(c, 2, False).torch_threads == 2
    with pytest.warns(UserWarning, match="Ray task"):
        assert _threads_per_run(c, 1, True).torch_threads == 1
    assert _threads_per_run(c, 1, False) is c
    assert _threads_per_run(TrainConfig(scenario="ec2", torch_threads=2), 2, False).torch_threads == 2


def test_a_runs_training_warnings_are_one_line_each_in_its_worker(tmp_path, monkeypatch, capsys):
    """A sweep's run (``train_run``, in a worker process) shows each training warning as one
    ``warning:`` line on stderr, without Python's source line; other warnings keep their handler."""
    import warnings

    import clustergym.training.train as train_module
    from clustergym.training.config import TrainConfig
    from clustergym.training.run_folder import TrainingWarning, training_warnings_as_lines
    from clustergym.training.sweep import SWEEP_FILE, train_run

    def warns(config):
        warnings.warn("--stage: the stages take 2,048 steps, not 2,000", TrainingWarning, stacklevel=2)
        raise KeyboardInterrupt  # stop before any training

    out = tmp_path / "sw"
    (out / "s0").mkdir(parents=True)
    (out / SWEEP_FILE).write_text("{}")
    monkeypatch.setattr(train_module, "train", warns)
    with pytest.raises(KeyboardInterrupt):
        train_run(TrainConfig(scenario="ec2", seed=0, timesteps=128, out=out / "s0"))
    err = capsys.readouterr().err
    assert err == "warning: --stage: the stages take 2,048 steps, not 2,000\n"

    seen = []
    monkeypatch.setattr(warnings, "showwarning", lambda m, c, *a, **k: seen.append(c))
    with training_warnings_as_lines(seen.append):
        warnings.simplefilter("always", UserWarning)  # this module's fixture ignores library warnings
        warnings.warn("other", UserWarning, stacklevel=1)
        warnings.warn("mine", TrainingWarning, stacklevel=1)
    assert seen == [UserWarning, "mine"]


def test_sigterm_to_a_sweep_marks_it_interrupted_and_its_runs_keep_their_seconds_to_their_checkpoint(
    tmp_path, signalled_cli
):
    """``kill`` of a sweep's process: the sweep is marked interrupted (exit 130, no traceback), and each run,
    whose worker process ends with it, keeps its checkpoint and its seconds up to it (``running_process``),
    which ``--resume`` counts as a killed process."""
    import signal

    out = tmp_path / "x"
    many = [a if a != "128" else "40000" for a in TINY]  # the runs outlast the first checkpoint by far
    args = ["train", "ec2", "--seeds", "0-1", "--workers", "2", "--out", str(out), "--no-progress", *many]

    def checkpointed(run: Path) -> bool:  # model.json is written atomically, after the checkpoint's files
        meta = run / "model.json"
        return meta.is_file() and "running_process" in json.loads(meta.read_text())

    rc, _, stderr = signalled_cli(args, lambda: checkpointed(out / "s0") and checkpointed(out / "s1"), signal.SIGTERM)
    assert rc == 130 and "Traceback" not in stderr, stderr
    assert "clustergym train --resume" in " ".join(stderr.split())
    assert json.loads((out / "sweep.json").read_text())["status"] == "interrupted"
    for s in ("s0", "s1"):
        meta = json.loads((out / s / "model.json").read_text())
        assert meta["status"] == "running" and meta["running_process"]["cpu_seconds"] > 0


def test_a_runs_warnings_in_the_commands_own_process_keep_the_commands_line(tmp_path, monkeypatch, capsys):
    """``--workers 1`` runs the sweep's runs in the command's process: a run's training warning is shown by
    the command's own writer (its styled ``warning:`` line), not replaced by the worker's plain one."""
    import warnings

    import clustergym.training.train as train_module
    from clustergym.training.config import TrainConfig
    from clustergym.training.run_folder import TrainingWarning, training_warnings_as_lines
    from clustergym.training.sweep import SWEEP_FILE, train_run

    def warns(config):
        warnings.warn("--stage: the stages take 2,048 steps, not 2,000", TrainingWarning, stacklevel=2)
        raise KeyboardInterrupt

    out = tmp_path / "sw"
    (out / "s0").mkdir(parents=True)
    (out / SWEEP_FILE).write_text("{}")
    monkeypatch.setattr(train_module, "train", warns)
    shown: list[str] = []
    with training_warnings_as_lines(shown.append), pytest.raises(KeyboardInterrupt):
        train_run(TrainConfig(scenario="ec2", seed=0, timesteps=128, out=out / "s0"))
    assert shown == ["--stage: the stages take 2,048 steps, not 2,000"]
    assert capsys.readouterr().err == ""


def test_a_resumed_sweep_with_stages_does_not_warn_again_of_its_rounded_total(tmp_path):
    """A run's stages and total are rounded up to whole rollouts when it starts (with a warning), and its
    ``model.json`` records the total taken: resuming the sweep continues each run to that total, without
    rounding the sweep's asked total again (it warned once per run at every resume)."""
    out = tmp_path / "x"
    stage = ["--stage", "100:num_servers=3", "--timesteps", "200"]
    args = ["train", "ec2", "--seeds", "0", "--workers", "1", "--out", str(out), *TINY[2:], *stage]
    rc, _, err = _cli(*args)
    assert rc == 0 and "--stage: the stages take 128 steps" in err, err
    run = out / "s0"
    meta = json.loads((run / "model.json").read_text())
    assert meta["timesteps"] == meta["config"]["timesteps"] == 256
    # as a run killed after its checkpoint of step 128: no final model, no later checkpoint, status running
    for p in [run / "model.zip", run / "vecnormalize.npz", *(run / "checkpoints").glob("rl_model*_19[0-9]_steps*")]:
        p.unlink()
    for p in (run / "checkpoints").glob("rl_model*_256_steps*"):
        p.unlink()
    (run / "model.json").write_text(json.dumps({**meta, "status": "running", "timesteps": 128}))
    rc, stdout, err = _cli("train", "--resume", str(out), "--workers", "1", "--json")
    assert rc == 0, err
    assert "warning" not in err, err
    assert json.loads(stdout)["runs"][0]["status"] == "resumed"
    assert json.loads((run / "model.json").read_text())["timesteps"] == 256
