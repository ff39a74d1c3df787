"""``clustergym bench --training``: one row per learner setting, self-consistent, on the settings given
(figures are measured, never asserted); ``clustergym train``'s measured PPO defaults."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from clustergym.cli import app
from clustergym.training.throughput import TRAINING_CONFIGS, TrainingConfig, bench_training
from clustergym.training.train import DEFAULT_ENVS, ppo_defaults, train

pytestmark = pytest.mark.usefixtures("quiet_warnings")


@pytest.mark.parametrize(("policy", "vec_env"), [("equivariant", "dummy"), ("mlp", "dummy"), ("mlp", "batched")])
def test_bench_training_row(policy, vec_env, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where SB3 would make its SB3-<time> log folders
    monkeypatch.delenv("SB3_LOGDIR", raising=False)  # (the session's conftest points them elsewhere)
    cfg = TrainingConfig(
        "tiny", task="rms-trap", policy=policy, vec_env=vec_env, n_envs=4, n_steps=32, batch_size=64, n_epochs=2
    )
    row = bench_training(cfg, rollouts=2)
    assert not list(tmp_path.glob("SB3-*"))  # a measurement leaves no empty log folder behind
    assert row["steps"] == 2 * 4 * 32
    assert row["task"] == "rms-trap" and row["policy"] == policy and row["n_envs"] == 4 and row["vec_env"] == vec_env
    assert 0 < row["rollout_seconds"] < row["wall_seconds"]
    assert row["update_seconds"] == pytest.approx(row["wall_seconds"] - row["rollout_seconds"])
    assert row["steps_per_s"] == pytest.approx(row["steps"] / row["wall_seconds"])
    # the two phases share the run's time: 1 / total rate = 1 / rollout rate + 1 / update rate
    assert 1 / row["steps_per_s"] == pytest.approx(1 / row["rollout_steps_per_s"] + 1 / row["update_steps_per_s"])


def test_configs_compare_before_and_after():
    names = [c.name for c in TRAINING_CONFIGS]
    assert names[0].startswith("before") and any(n.startswith("after") for n in names)
    before = TRAINING_CONFIGS[0]
    assert (before.batch_size, before.n_epochs, before.vec_env) == (64, 10, "subproc")  # SB3's defaults
    assert len(set(names)) == len(names)


def test_cli_bench_training_json(monkeypatch):
    import clustergym.training.throughput as bt

    tiny = (TrainingConfig("a", n_envs=2, n_steps=32, batch_size=32, n_epochs=1),)
    monkeypatch.setattr(bt, "TRAINING_CONFIGS", tiny)
    monkeypatch.setattr(bt.bench_training_configs, "__defaults__", (tiny,))
    res = CliRunner().invoke(app, ["bench", "--training", "--quick", "--json", "--task", "rms-trap"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["training"]
    assert [r["name"] for r in rows] == ["a"] and rows[0]["task"] == "rms-trap" and rows[0]["steps"] == 64


def test_ppo_defaults_and_overrides(tmp_path):
    d = ppo_defaults(DEFAULT_ENVS)
    assert d["n_steps"] * DEFAULT_ENVS == 2048 and d["batch_size"] == 512 and d["n_epochs"] == 4
    train("rms-trap", timesteps=64, n_envs=2, out=tmp_path / "r", verbose=False, **{"algo.n_steps": 32})
    meta = json.loads((tmp_path / "r" / "model.json").read_text())
    # --set wins over the defaults; the rest of the defaults are recorded
    assert meta["algo_kwargs"] == {"n_steps": 32, "batch_size": 512, "n_epochs": 4}
    assert meta["vec_env"] == "batched" and meta["n_envs"] == 2  # clustergym train's default


@pytest.mark.parametrize(("policy", "hidden"), [("equivariant", 32), ("mlp", 32)])
def test_bench_builds_the_learner_train_builds(tmp_path, policy, hidden):
    """The bench times ``clustergym train``'s own learner: same policy class, layer widths and
    parameter count (one builder serves both); ``hidden`` sets the MLP's layers too."""
    import torch

    import clustergym.training.throughput as bt
    from clustergym.learned.model_agent import algo_classes, load_sb3

    cfg = TrainingConfig(
        "w", task="rms-trap", policy=policy, n_envs=2, n_steps=32, batch_size=32, n_epochs=1, hidden=hidden
    )
    model, venv = bt._learner(cfg, seed=0)
    venv.close()
    train(
        "rms-trap",
        "maskable-ppo",
        policy=policy,
        hidden=hidden,
        timesteps=64,
        n_envs=2,
        out=tmp_path / "r",
        verbose=False,
        **{"algo.n_steps": 32, "algo.batch_size": 32, "algo.n_epochs": 1},
    )
    trained = load_sb3(algo_classes()["maskable-ppo"], tmp_path / "r" / "model.zip", "maskable-ppo")
    assert type(model.policy) is type(trained.policy)

    def shapes(m: torch.nn.Module) -> list[tuple[int, ...]]:
        return [tuple(p.shape) for p in m.parameters()]

    assert shapes(model.policy) == shapes(trained.policy)
    if policy == "mlp":  # SB3's default would be [64, 64]
        assert model.policy.net_arch == trained.policy.net_arch == [hidden, hidden]


def test_a_row_reports_the_torch_threads_it_used(monkeypatch):
    """A row asking for more torch threads than the cores gets the cores, with a warning, and says so."""
    import clustergym.training.threads as threads

    monkeypatch.setattr(threads, "available_workers", lambda: 1)
    cfg = TrainingConfig("t", task="rms-trap", n_envs=2, vec_env="batched", n_steps=32, batch_size=32, n_epochs=1)
    with pytest.warns(UserWarning, match="oversubscribe"):
        row = bench_training(replace(cfg, torch_threads=2), rollouts=1)
    assert row["torch_threads"] == 2 and row["torch_threads_used"] == 1
    assert "batched, 2 torch threads" in [c.name for c in TRAINING_CONFIGS]
