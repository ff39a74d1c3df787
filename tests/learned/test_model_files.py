"""Damaged or foreign model files are ConfigErrors naming the file and the problem (exit 2 from the CLI);
a run folder works as an agent; `train` refuses to write over a run and `--resume` restores the run's
whole configuration (and the warm-start example)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("stable_baselines3", reason="needs the train extra")

from clustergym.cli import app
from clustergym.errors import ConfigError
from clustergym.learned.model_agent import load_model_agent
from clustergym.training.train import train

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("quiet_warnings")
TINY = {"horizon": 3.0, "algo.n_steps": 64, "algo.batch_size": 32, "algo.n_epochs": 1}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A tiny equivariant masked-PPO run on ec2 (3 resources)."""
    out = tmp_path_factory.mktemp("models") / "ec2"
    train("ec2", "maskable-ppo", timesteps=64, n_envs=1, out=out, verbose=False, hidden=8, num_servers=4, **TINY)
    return out


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(run_dir, dst)
    return dst


def _cli(*args: str):
    res = runner.invoke(app, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def _damage_member(path: Path, member: str) -> None:
    """Flip bytes in the middle of ``member``'s data inside the zip (its CRC no longer matches)."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    raw = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    mid = start + info.compress_size // 2
    raw[mid : mid + 8] = bytes(b ^ 0xFF for b in raw[mid : mid + 8])
    path.write_bytes(bytes(raw))


DAMAGES = {
    "truncated": (lambda m: m.write_bytes(m.read_bytes()[: m.stat().st_size // 2]), "truncated"),
    "not a zip": (lambda m: m.write_text("hello"), "not a zip file"),
    "another program's zip": (
        lambda m: zipfile.ZipFile(m, "w").writestr("readme.txt", "hi"),
        "not a Stable-Baselines3 model",
    ),
    "damaged member": (lambda m: _damage_member(m, "policy.pth"), "damaged"),
    "damaged model.json": (
        lambda m: (m.parent / "model.json").write_text('{"algo": "maskable-p'),
        "model.json: damaged metadata",
    ),
    "unknown algo": (
        lambda m: (m.parent / "model.json").write_text(
            json.dumps({**json.loads((m.parent / "model.json").read_text()), "algo": "sac"})
        ),
        "unknown algorithm 'sac'",
    ),
    "changed algo": (
        lambda m: (m.parent / "model.json").write_text(
            json.dumps({**json.loads((m.parent / "model.json").read_text()), "algo": "dqn"})
        ),
        "model.zip",
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_or_foreign_model_is_a_clear_error(run_dir, tmp_path, damage):
    run = _copy(run_dir, tmp_path)
    model = run / "model.zip"
    act, message = DAMAGES[damage]
    act(model)
    with pytest.raises(ConfigError, match=message) as e:
        load_model_agent(model)
    assert str(model.parent) in str(e.value)
    rc, stdout, stderr = _cli("run", "ec2", "--agent", str(model), "--set", "num_servers=4", "--horizon", "2", "--json")
    assert rc == 2 and "Traceback" not in stderr
    assert message in json.loads(stdout)["error"]["message"]


def test_a_model_on_a_cluster_of_another_shape_is_a_clear_error(run_dir):
    rc, stdout, stderr = _cli("run", "bf-trap", "--agent", str(run_dir / "model.zip"), "--horizon", "2", "--json")
    assert rc == 2 and "Traceback" not in stderr
    assert "trained on a cluster of another shape" in json.loads(stdout)["error"]["message"]


def test_a_run_folder_is_an_agent(run_dir, tmp_path):
    rc, stdout, _ = _cli("run", "ec2", "--agent", str(run_dir), "--set", "num_servers=6", "--horizon", "2", "--json")
    assert rc == 0 and json.loads(stdout)["arrivals"] > 0
    rc, stdout, _ = _cli("run", "ec2", "--agent", str(tmp_path), "--json")
    assert rc == 2 and "a folder without a saved model" in json.loads(stdout)["error"]["message"]


def test_train_refuses_an_existing_run_and_resume_restores_its_configuration(run_dir, tmp_path):
    run = _copy(run_dir, tmp_path)
    base = ["train", "--timesteps", "128", "--envs", "1", "--no-progress"]
    rc, _, stderr = _cli(*base[:1], "ec2", *base[1:], "--out", str(run))
    assert rc == 2 and "holds an earlier training run" in " ".join(stderr.split())
    # a setting that differs from the recorded one is an error, not a silent change of task
    rc, _, stderr = _cli(*base, "--resume", str(run), "--set", "horizon=50")
    assert rc == 2 and "trained with horizon=3.0, not horizon=50" in " ".join(stderr.split())
    rc, _, stderr = _cli(*base, "--resume", str(run), "--algo", "ppo")
    assert rc == 2 and "trained with algo 'maskable-ppo'" in " ".join(stderr.split())
    # resuming without the original flags trains the same task
    rc, _, stderr = _cli(*base, "--resume", str(run))
    assert rc == 0, stderr
    meta = json.loads((run / "model.json").read_text())
    before = json.loads((run_dir / "model.json").read_text())
    for key in ("scenario", "scenario_params", "train_env_kwargs", "algo", "policy", "algo_kwargs", "seed", "hidden"):
        assert meta[key] == before[key], key
    assert meta["timesteps"] >= 128 and meta["resumed_from"].endswith(".zip")
    # --overwrite starts afresh: the earlier run's checkpoints are gone
    rc, _, stderr = _cli(
        *base[:1],
        "ec2",
        "--timesteps",
        "64",
        "--envs",
        "1",
        "--no-progress",
        "--out",
        str(run),
        "--overwrite",
        "--set",
        "horizon=2",
        "--set",
        "algo.n_steps=64",
    )
    assert rc == 0, stderr
    assert json.loads((run / "model.json").read_text())["timesteps"] == 64
    assert all("128" not in c.name for c in (run / "checkpoints").iterdir())


@pytest.mark.parametrize("scenario,mode", [("ec2", "head"), ("bf-trap", "slot")])
def test_the_documented_warm_start_works_on_ec2_and_bf_trap(tmp_path, scenario, mode):
    out = tmp_path / scenario
    rc, _, stderr = _cli(
        "train",
        scenario,
        "--warm-start",
        "best-fit",
        "--warm-start-steps",
        "200",
        "--warm-start-epochs",
        "1",
        "--timesteps",
        "64",
        "--envs",
        "1",
        "--no-progress",
        "--out",
        str(out),
        "--set",
        f"action_mode={mode}",
        "--set",
        "horizon=3",
        "--set",
        "algo.n_steps=64",
    )
    assert rc == 0, stderr
    ws = json.loads((out / "model.json").read_text())["warm_start"]
    assert ws["teacher"] == "best-fit" and ws["teacher_params"] == {"scan": 1 if mode == "head" else 8}


def test_two_level_argmax_decides_place_or_not_first():
    import numpy as np

    from clustergym.learned.model_agent import two_level_argmax

    # placing has probability 0.8 spread over 4 servers (0.2 each), waiting 0.2: the plain argmax ties
    # or waits; the two-level rule places, on the most probable server
    p = np.array([0.19, 0.21, 0.2, 0.2, 0.2])
    assert two_level_argmax(np.log(p)) == 1
    # waiting with more probability than all placements together: wait
    assert two_level_argmax(np.log(np.array([0.1, 0.2, 0.15, 0.55]))) == 3
    # masked placements (logit -1e8) carry no probability
    assert two_level_argmax(np.array([-1e8, -1e8, 0.0])) == 2
    assert two_level_argmax(np.array([-1e8, 1.0, 0.0])) == 1


def test_decodings_recorded_and_overridable(run_dir):
    """New models record two-level decoding; ``agent.decoding`` overrides it; ``sample`` is a seeded
    draw (the same seed, the same episode) and differs from the deterministic decodings."""
    from clustergym.runner import run_episode
    from clustergym.scenarios import resolve_scenario

    assert json.loads((run_dir / "model.json").read_text())["decoding"] == "two-level"
    sc = resolve_scenario("ec2", num_servers=6)

    def episode(decoding: str, seed: int) -> tuple:
        agent = load_model_agent(run_dir, decoding=decoding)
        assert agent.meta["decoding"] == decoding
        row = run_episode(sc, agent, seed=seed, horizon=3.0)
        return (row["mean_queue_length"], row["completed"])

    assert episode("sample", 5) == episode("sample", 5)
    outcomes = {episode(d, 5) for d in ("sample", "argmax", "two-level")} | {episode("sample", s) for s in (6, 7)}
    assert len(outcomes) > 1
    with pytest.raises(ConfigError, match="agent.decoding"):
        load_model_agent(run_dir, decoding="median")
    rc, stdout, _ = _cli("run", "ec2", "--agent", str(run_dir), "--set", "agent.decoding=x", "--json")
    assert rc == 2 and "decoding" in json.loads(stdout)["error"]["message"]


def test_an_mlp_run_evaluates_itself_with_its_live_normalisation(tmp_path):
    """The periodic evaluation feeds the learned mlp policy VecNormalize's current statistics."""
    import pandas as pd

    out = tmp_path / "mlp"
    train(
        "ec2",
        "ppo",
        policy="mlp",
        timesteps=64,
        n_envs=1,
        out=out,
        verbose=False,
        eval_agents=["best-fit"],
        eval_seeds=range(1),
        eval_horizon=5.0,
        num_servers=4,
        **TINY,
    )
    ev = pd.read_csv(out / "eval.csv")
    assert set(ev["agent"]) == {"learned", "best-fit"}
