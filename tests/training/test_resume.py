"""``clustergym train --resume`` continues the run it names, and only that one; the typed
configuration behind ``train``; ``--stage`` steps recorded as taken.

Budgets are tiny (rollouts of 128 steps: 2 envs x 64, one epoch, 4 servers, episodes of 3 time
units): these tests check what is restored, kept and refused, not what is learned.
"""

from __future__ import annotations

import json
import shutil
import signal
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

pytest.importorskip("stable_baselines3", reason="needs the train extra")

from clustergym.cli import app
from clustergym.errors import ConfigError
from clustergym.training.config import TrainConfig
from clustergym.training.run_folder import TrainingWarning
from clustergym.training.train import train

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("quiet_warnings")
TINY = ["--envs", "2", "--set", "algo.n_steps=64", "--set", "algo.batch_size=64", "--set", "algo.n_epochs=1"]
EC2 = ["--set", "horizon=3", "--set", "num_servers=4", "--no-progress"]
EVAL = ["--eval-agents", "best-fit", "--eval-every", "256", "--eval-seeds", "1"]


def _cli(*args: str) -> tuple[int, str, str]:
    res = runner.invoke(app, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, " ".join(res.stderr.split())


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished run of 512 steps on ec2 with evaluations every 256 steps and checkpoints every 128."""
    out = tmp_path_factory.mktemp("resume") / "run"
    rc, _, err = _cli("train", "ec2", "--timesteps", "512", "--out", str(out), *TINY, *EC2, *EVAL)
    assert rc == 0, err
    return out


def _copy(run: Path, tmp_path: Path, name: str = "run") -> Path:
    shutil.copytree(run, tmp_path / name)
    return tmp_path / name


def _stopped_run(signalled_cli, out: Path, steps: int, sig: int) -> tuple[dict, str, int]:
    """``clustergym train ec2`` in a process of its own, sent ``sig`` after its first evaluation (step
    256, most of the run left); its ``model.json``, its stderr and its last checkpoint's step."""
    args = ["train", "ec2", "--timesteps", str(steps), "--out", str(out), *TINY, *EC2, *EVAL]
    csv = out / "eval.csv"
    rc, _, stderr = signalled_cli(args, lambda: csv.is_file() and pd.read_csv(csv)["step"].max() >= 256, sig)
    assert rc == (130 if sig != signal.SIGKILL else -signal.SIGKILL), stderr
    kept = max(int(p.stem.split("_")[2]) for p in (out / "checkpoints").glob("rl_model_*_steps.zip"))
    return json.loads((out / "model.json").read_text()), stderr, kept


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX signals")
def test_sigterm_ends_a_run_as_ctrl_c_does(tmp_path, signalled_cli):
    """``kill PID`` (and a job scheduler's time limit) sends SIGTERM: the run ends as on Ctrl-C, its last
    update's policy kept, the process's seconds recorded, exit 130 without a traceback."""
    meta, stderr, kept = _stopped_run(signalled_cli, tmp_path / "run", 2048, signal.SIGTERM)
    assert meta["status"] == "interrupted" and "Traceback" not in stderr, stderr
    assert f"the policy of step {kept:,} is kept" in " ".join(stderr.split())
    (first,) = meta["processes"]
    assert (first["steps_to"], first["status"]) == (kept, "interrupted") and first["cpu_seconds"] > 0


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX signals")
def test_a_killed_process_is_counted_up_to_its_last_checkpoint_when_the_run_resumes(tmp_path, signalled_cli):
    """SIGKILL leaves no chance to record anything at the end: each checkpoint keeps the process's seconds
    so far (``running_process``), and the resumed run counts them as a ``killed`` process in its totals
    (before, the resumed run's totals silently left the killed process out)."""
    out = tmp_path / "run"
    meta, _, kept = _stopped_run(signalled_cli, out, 1024, signal.SIGKILL)
    assert meta["status"] == "running" and meta["processes"] == []
    running = meta["running_process"]
    assert (running["steps_from"], running["steps_to"], running["status"]) == (0, kept, "running")
    assert running["cpu_seconds"] > 0 and running["wall_seconds"] > 0

    rc, _, err = _cli("train", "--resume", str(out), "--no-progress")
    assert rc == 0, err
    meta = json.loads((out / "model.json").read_text())
    killed, last = meta["processes"]
    assert killed == {**running, "status": "killed"} and "running_process" not in meta
    assert (last["steps_from"], last["steps_to"], last["status"]) == (kept, 1024, "finished")
    assert meta["cpu_seconds_total"] == pytest.approx(killed["cpu_seconds"] + last["cpu_seconds"])


def test_ctrl_c_then_resume_gives_the_asked_total_with_every_evaluation(tmp_path, signalled_cli):
    """SIGINT to a training process: exit 130, the last update's policy kept as a checkpoint, the run
    marked interrupted; ``--resume OUT`` alone trains to the run's own total (not the default
    100,000) with its evaluations, whose steps are those of an uninterrupted run, each once."""
    out = tmp_path / "run"
    meta, stderr, kept = _stopped_run(signalled_cli, out, 2048, signal.SIGINT)
    assert meta["status"] == "interrupted" and "Traceback" not in stderr
    assert "clustergym train --resume" in " ".join(stderr.split())
    assert 256 <= kept < 2048 and kept % 128 == 0  # a policy update's step: whole rollouts
    assert not (out / "model.zip").exists()
    (first,) = meta["processes"]  # the interrupted process's seconds are kept for the run's totals
    assert (first["steps_from"], first["steps_to"], first["status"]) == (0, kept, "interrupted")
    assert first["cpu_seconds"] > 0 and meta["cpu_seconds_total"] == first["cpu_seconds"]
    assert "running_process" not in meta  # recorded: no longer only up to a checkpoint

    rc, stdout, err = _cli("train", "--resume", str(out), "--no-progress")
    assert rc == 0, err
    meta = json.loads((out / "model.json").read_text())
    assert meta["status"] == "finished" and meta["timesteps"] == 2048 and meta["config"]["timesteps"] == 2048
    assert meta["processes"][0] == first and meta["processes"][1]["steps_from"] == kept
    assert (meta["processes"][1]["steps_to"], meta["processes"][1]["status"]) == (2048, "finished")
    assert meta["cpu_seconds_last_run"] == meta["processes"][1]["cpu_seconds"]
    assert meta["cpu_seconds_total"] == pytest.approx(first["cpu_seconds"] + meta["cpu_seconds_last_run"])
    ev = pd.read_csv(out / "eval.csv")
    assert list(ev.groupby("step").size().index) == list(range(256, 2049, 256))
    assert (ev.groupby(["step", "agent"]).size() == 1).all()  # every evaluation once, both agents
    assert ev["wall_seconds"].is_monotonic_increasing
    assert "suite task" not in stdout and "scenario ec2" in " ".join(stdout.split())


def test_a_finished_run_is_continued_only_to_a_larger_total(finished, tmp_path):
    run = _copy(finished, tmp_path)
    before = (run / "model.zip").read_bytes()
    rc, _, err = _cli("train", "--resume", str(run), "--no-progress")
    assert rc == 2 and "give --timesteps above 512" in err
    assert (run / "model.zip").read_bytes() == before
    rc, _, err = _cli("train", "--resume", str(run), "--timesteps", "256", "--no-progress")
    assert rc == 2 and "--timesteps 256 is not above the 512 steps" in err
    rc, _, err = _cli("train", "--resume", str(run), "--timesteps", "768", "--no-progress")
    assert rc == 0, err
    meta = json.loads((run / "model.json").read_text())
    assert meta["timesteps"] == 768 and meta["config"]["eval_agents"] == ["best-fit"]
    steps = [(p["steps_from"], p["steps_to"], p["status"]) for p in meta["processes"]]
    assert steps == [(0, 512, "finished"), (512, 768, "finished")]
    assert meta["wall_seconds_total"] == pytest.approx(sum(p["wall_seconds"] for p in meta["processes"]))
    # the earlier final model is kept as the checkpoint of its step
    assert (run / "checkpoints" / "rl_model_512_steps.zip").read_bytes() == before
    assert sorted(set(pd.read_csv(run / "eval.csv")["step"])) == [256, 512, 768]


def test_an_early_checkpoint_of_a_finished_run_needs_overwrite_and_then_replaces_its_later_work(finished, tmp_path):
    run = _copy(finished, tmp_path)
    ckpt = run / "checkpoints" / "rl_model_256_steps.zip"
    rc, _, err = _cli("train", "--resume", str(ckpt), "--no-progress")
    assert rc == 2 and "went further (1 later checkpoint and its final model" in err
    assert (run / "model.zip").exists() and (run / "checkpoints" / "rl_model_384_steps.zip").exists()
    rc, _, err = _cli("train", "--resume", str(ckpt), "--no-progress", "--overwrite")
    assert rc == 0, err
    steps = sorted(int(p.stem.split("_")[2]) for p in (run / "checkpoints").glob("rl_model_*_steps.zip"))
    assert steps == [128, 256, 384]  # the new run's 384, not a mix: its digest is the recorded one
    meta = json.loads((run / "model.json").read_text())
    assert set(meta["sha256"]) >= {"checkpoints/rl_model_384_steps.zip", "model.zip"}
    assert meta["timesteps"] == 512 and meta["resumed_from"].endswith("rl_model_256_steps.zip")
    assert sorted(set(pd.read_csv(run / "eval.csv")["step"])) == [256, 512]


def test_a_checkpoint_of_another_run_is_refused(finished, tmp_path):
    a, b = _copy(finished, tmp_path, "a"), _copy(finished, tmp_path, "b")
    rc, _, err = _cli("train", "--resume", str(a), "--timesteps", "640", "--no-progress", "--seed", "0")
    assert rc == 0, err
    # a's 640-step model placed among b's checkpoints: b never wrote it
    foreign = b / "checkpoints" / "rl_model_640_steps.zip"
    shutil.copyfile(a / "model.zip", foreign)
    shutil.copyfile(a / "vecnormalize.npz", b / "checkpoints" / "rl_model_vecnormalize_640_steps.npz")
    rc, _, err = _cli("train", "--resume", str(foreign), "--timesteps", "768", "--no-progress")
    assert rc == 2 and "not a checkpoint of the run" in err
    # an --out other than the run's own folder is refused too
    rc, _, err = _cli("train", "--resume", str(b), "--timesteps", "768", "--out", str(a), "--no-progress")
    assert rc == 2 and "another folder" in err


def test_a_damaged_checkpoint_is_the_same_clear_error_as_in_run(finished, tmp_path):
    run = _copy(finished, tmp_path)
    ckpt = run / "checkpoints" / "rl_model_384_steps.zip"
    ckpt.write_bytes(ckpt.read_bytes()[: ckpt.stat().st_size // 2])
    (run / "model.zip").unlink()  # an interrupted run: the damaged checkpoint is its latest point
    rc, _, err = _cli("train", "--resume", str(run), "--no-progress")
    rc_run, stdout, _ = _cli("run", "ec2", "--agent", str(ckpt), "--set", "num_servers=4", "--json")
    message = json.loads(stdout)["error"]["message"]
    assert rc == 2 and rc_run == 2 and "Traceback" not in err
    assert "".join(message.split()) in "".join(err.split()) and str(ckpt) in message


def test_resume_restores_every_recorded_setting_and_refuses_another(finished, tmp_path):
    run = _copy(finished, tmp_path)
    rc, _, err = _cli("train", "--resume", str(run), "--timesteps", "640", "--eval-every", "100", "--no-progress")
    assert rc == 2 and "trained with eval_every 256, not 100" in err
    rc, _, err = _cli("train", "--resume", str(run), "--timesteps", "640", "--set", "num_servers=5", "--no-progress")
    assert rc == 2 and "trained with num_servers=4, not num_servers=5" in err
    # the same values given again are accepted
    rc, _, err = _cli("train", "--resume", str(run), "--timesteps", "640", *TINY, *EC2, *EVAL)
    assert rc == 0, err


def _staged(out: Path, timesteps: int, *stages: tuple[int, dict]) -> dict:
    """A tiny run with rollouts of 128 steps (2 envs x 64) and ``stages``; its model.json."""
    params = {"algo.n_steps": 64, "algo.batch_size": 64, "algo.n_epochs": 1, "horizon": 3, "num_servers": 4}
    train(
        TrainConfig(
            scenario="ec2", timesteps=timesteps, n_envs=2, params=params, curriculum=stages, out=out, verbose=False
        )
    )
    return json.loads((out / "model.json").read_text())


def test_stage_steps_are_recorded_as_taken_with_a_warning(tmp_path):
    """A stage of 64 steps with rollouts of 128 takes 128: model.json records 128 (and the asked
    64), the warning says so, and the run's stage boundary is at 128."""
    with pytest.warns(TrainingWarning, match=r"the stages take 128 steps, not 64 as asked"):
        meta = _staged(tmp_path / "run", 256, (64, {"num_servers": 6}))
    assert meta["curriculum"] == [{"steps": 128, "params": {"num_servers": 6}}] == meta["config"]["curriculum"]
    assert meta["curriculum_asked"] == [{"steps": 64, "params": {"num_servers": 6}}]
    assert meta["timesteps"] == 256

    # stages smaller than a rollout: the second is covered by the first's rounding, the run by both
    with pytest.warns(TrainingWarning, match=r"stage 2 takes none.*and the run 128 steps \(--timesteps 48\)"):
        meta = _staged(tmp_path / "small", 48, (16, {"num_servers": 6}), (16, {"num_servers": 5}))
    assert meta["curriculum"] == [{"steps": 128, "params": {"num_servers": 6}}]
    assert meta["timesteps"] == 128 == meta["config"]["timesteps"]

    # stages on rollout boundaries (as a resumed run's are) and a total that is not: the warning names
    # only the total (it once listed the stages as taken "not as asked" with the same numbers)
    with pytest.warns(TrainingWarning) as caught:
        _staged(tmp_path / "aligned", 200, (128, {"num_servers": 6}))
    said = [str(w.message) for w in caught if issubclass(w.category, TrainingWarning)]
    assert len(said) == 1 and "the run 256 steps (--timesteps 200)" in said[0] and "the stages take" not in said[0]


def test_a_key_twice_in_one_stage_is_refused(tmp_path):
    rc, _, err = _cli("train", "ec2", "--stage", "64:zeta=0.5,zeta=0.6", "--out", str(tmp_path / "r"))
    assert rc == 2 and "'zeta' is given twice in one stage" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_the_report_names_the_task_and_the_policy_used(tmp_path):
    rc, stdout, err = _cli(
        "train", "rms-trap", "--algo", "ppo", "--policy", "mlp", "--timesteps", "128", "--out", str(tmp_path / "r"),
        *TINY, "--no-progress",
    )  # fmt: skip
    assert rc == 0, err
    line = " ".join(stdout.split())
    assert "trained ppo with the mlp policy (ActorCriticPolicy) on suite task rms-trap for 128 steps" in line
    assert "bf-trap" not in line


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"algo": "sac"}, "algo"),
        ({"policy": "cnn"}, "policy"),
        ({"timesteps": 0}, "timesteps"),
        ({"n_envs": 0}, "envs"),
        ({"eval_every": -1}, "eval_every"),
        ({"eval_seeds": (0, -1)}, "eval_seeds"),
        ({"eval_horizon": 0.0}, "eval_horizon"),
        ({"hidden": 0}, "hidden"),
        ({"decoding": "median"}, "decoding"),
        ({"vec_env": "ray"}, "vec_env"),
        ({"algo": "dqn"}, "policy"),
        ({"warm_start": "best-fit", "policy": "mlp"}, "warm_start"),
        ({"curriculum": ((0, {"load": 1.5}),)}, "stage 1.steps"),
        ({"curriculum": ((300, {"load": 1.5}),), "timesteps": 200}, "curriculum"),
    ],
)
def test_the_config_checks_each_field_in_one_place(kwargs, field):
    with pytest.raises(ConfigError) as e:
        TrainConfig(scenario="ec2", **kwargs)
    assert e.value.field == field


def test_the_config_round_trips_through_json_and_the_keyword_form_builds_the_same_config():
    c = TrainConfig(
        scenario="ec2",
        algo="ppo",
        policy="mlp",
        timesteps=1000,
        params={"num_servers": 4, "algo.gamma": 0.9},
        eval_agents=("best-fit",),
        curriculum=((100, {"load": 1.5}),),
    )
    assert TrainConfig.from_json(json.loads(json.dumps(c.to_json())), "x") == c
    keyword = TrainConfig.from_kwargs(
        "ec2", "ppo", policy="mlp", timesteps=1000, eval_agents=["best-fit"], curriculum=[(100, {"load": 1.5})],
        num_servers=4, **{"algo.gamma": 0.9},
    )  # fmt: skip
    assert keyword == c
    with pytest.raises(ConfigError, match="unknown setting 'speed'"):
        TrainConfig.from_json({**c.to_json(), "speed": 2}, "model.json")
    with pytest.raises(TypeError):
        train(c, "ppo")


def test_a_warm_started_run_resumes_without_a_second_warm_start(tmp_path):
    out = tmp_path / "run"
    warm = ["--warm-start", "best-fit", "--warm-start-steps", "200", "--warm-start-epochs", "1"]
    rc, _, err = _cli("train", "ec2", "--timesteps", "128", "--out", str(out), *warm, *TINY, *EC2)
    assert rc == 0, err
    first = json.loads((out / "model.json").read_text())["warm_start"]
    rc, _, err = _cli("train", "--resume", str(out), "--timesteps", "256", *warm, "--no-progress")
    assert rc == 2 and "--warm-start is for new runs" in err
    rc, _, err = _cli("train", "--resume", str(out), "--timesteps", "256", "--no-progress")
    assert rc == 0, err
    meta = json.loads((out / "model.json").read_text())
    assert meta["timesteps"] == 256 and meta["warm_start"] == first and meta["config"]["warm_start"] == "best-fit"


def test_resume_of_a_run_missing_its_statistics_is_refused(finished, tmp_path):
    run = _copy(finished, tmp_path)
    (run / "model.zip").unlink()
    (run / "checkpoints" / "rl_model_vecnormalize_384_steps.npz").unlink()
    rc, _, err = _cli("train", "--resume", str(run), "--no-progress")
    assert rc == 2 and "normalisation statistics" in err and "missing" in err
    assert zipfile.is_zipfile(run / "checkpoints" / "rl_model_384_steps.zip")


def test_a_run_recorded_before_its_processes_were_counts_what_it_recorded_and_no_more():
    """``model.json`` files written before ``processes`` have the last process's seconds only: a fresh
    run's are its whole cost; a resumed run's earlier processes are unknown, so no total is given."""
    from clustergym.training.run_folder import earlier_processes, record_process

    fresh = {"timesteps": 1000, "status": "finished", "wall_seconds_last_run": 20.0, "cpu_seconds_last_run": 15.0}
    meta = {"processes": earlier_processes({**fresh, "resumed_from": ""})}
    record_process(meta, (1000, 2000), "finished", 30.0, 25.0)
    assert meta["cpu_seconds_total"] == 40.0 and meta["wall_seconds_total"] == 50.0
    assert [p["steps_from"] for p in meta["processes"]] == [0, 1000]
    meta = {"processes": earlier_processes({**fresh, "resumed_from": "runs/x/model.zip"})}
    record_process(meta, (1000, 2000), "finished", 30.0, 25.0)
    assert meta["cpu_seconds_total"] is None and meta["processes"][0]["status"] == "not recorded"
    assert earlier_processes({"timesteps": 5}) == []  # no seconds recorded at all: nothing to carry


def test_a_cpu_budget_ends_the_run_at_an_update_and_a_resume_with_more_budget_finishes_it(tmp_path, monkeypatch):
    """``--cpu-budget``: once the run's CPU (every process) reaches it, the run ends at the next policy
    update, that policy saved as the model and the stop recorded; ``--resume`` with a larger budget
    trains on to the total, counting the first process's seconds.  The CPU clock is a counter here (one
    second a reading), so where the budget runs out does not depend on the machine's speed."""
    import itertools

    import clustergym.training.train as train_module

    ticks = itertools.count()
    monkeypatch.setattr(train_module, "_cpu_now", lambda: float(next(ticks)))
    out = tmp_path / "run"
    rc, stdout, err = _cli("train", "ec2", "--timesteps", "1024", "--cpu-budget", "3.5", "--out", str(out), *TINY, *EC2)
    assert rc == 0, err
    meta = json.loads((out / "model.json").read_text())
    assert meta["stopped_by"] == "cpu_budget" and meta["status"] == "finished"
    assert 0 < meta["timesteps"] < 1024 and meta["timesteps"] % 128 == 0  # whole rollouts: a policy update's step
    assert meta["config"]["cpu_budget"] == 3.5 and meta["cpu_seconds_total"] >= 3.5
    with zipfile.ZipFile(out / "model.zip") as z:  # the saved policy is the one of that update
        assert json.loads(z.read("data"))["num_timesteps"] == meta["timesteps"]
    assert "CPU budget of 3.5 s spent" in " ".join(stdout.split())

    rc, _, err = _cli("train", "--resume", str(out), "--cpu-budget", "0", "--no-progress")
    assert rc == 2 and "cpu_budget" in err  # a budget is a positive number of seconds
    rc, _, err = _cli("train", "--resume", str(out), "--cpu-budget", "1000000", "--no-progress")
    assert rc == 0, err
    meta = json.loads((out / "model.json").read_text())
    assert meta["timesteps"] == 1024 and "stopped_by" not in meta and meta["config"]["cpu_budget"] == 1e6
    assert [p["status"] for p in meta["processes"]] == ["finished", "finished"]
    assert meta["processes"][1]["steps_from"] == meta["processes"][0]["steps_to"]


def test_torch_threads_are_recorded_per_process_and_a_resume_keeps_the_runs_count(tmp_path, monkeypatch):
    """``--torch-threads``: the configuration keeps what was asked, each process the count it used (cut
    to the cores, with a warning on stderr); a resume restores the recorded count and refuses another."""
    import clustergym.training.threads as threads

    monkeypatch.setattr(threads, "available_workers", lambda: 1)  # one core: 2 threads would oversubscribe
    out = tmp_path / "run"
    rc, _, err = _cli("train", "ec2", "--timesteps", "128", "--torch-threads", "2", "--out", str(out), *TINY, *EC2)
    assert rc == 0, err
    assert "torch_threads=2 on 1 cores" in err and "using 1" in err
    meta = json.loads((out / "model.json").read_text())
    assert meta["config"]["torch_threads"] == 2 and meta["processes"][-1]["torch_threads"] == 1

    monkeypatch.setattr(threads, "available_workers", lambda: 2)
    rc, _, err = _cli("train", "--resume", str(out), "--timesteps", "256", "--no-progress")
    assert rc == 0, err
    meta = json.loads((out / "model.json").read_text())
    assert [p["torch_threads"] for p in meta["processes"]] == [1, 2]  # the recorded 2, now on 2 cores
    rc, _, err = _cli("train", "--resume", str(out), "--timesteps", "384", "--torch-threads", "3", "--no-progress")
    assert rc == 2 and "torch_threads 2, not 3" in err
