"""Agents from outside clustergym, scored the standard way: a plain SB3 save (flattened or ``Dict``
observation, no ``model.json``), a class or factory by import path, and the project's own models,
each loaded once per process; :func:`clustergym.suite.score`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from typer.testing import CliRunner

import clustergym
from clustergym.cli import app

pytest.importorskip("stable_baselines3")

from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from clustergym.learned.outside import LOADS

TASK = "mris-poisson"
ROOT = Path(clustergym.__file__).parent.parent


def _train(path: Path, policy: str, wrapper: type | None) -> Path:
    """A tiny PPO trained the SB3 way on the task's id and saved with ``model.save``."""
    venv = make_vec_env(f"clustergym/{TASK}-v1", n_envs=2, seed=0, wrapper_class=wrapper)
    model = PPO(policy, venv, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(128)
    model.save(path)
    venv.close()
    return path


@pytest.fixture(scope="module")
def flat_zip(tmp_path_factory) -> Path:
    return _train(tmp_path_factory.mktemp("flat") / "ppo_flat.zip", "MlpPolicy", gym.wrappers.FlattenObservation)


@pytest.fixture(scope="module")
def dict_zip(tmp_path_factory) -> Path:
    return _train(tmp_path_factory.mktemp("dict") / "ppo_dict.zip", "MultiInputPolicy", None)


def _benchmark(*args: str) -> dict:
    res = CliRunner().invoke(app, ["benchmark", *args, "--tasks", TASK, "--seeds", "2", "--workers", "1", "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize("which", ["flat_zip", "dict_zip"])
def test_benchmark_scores_a_plain_sb3_save_without_a_sidecar(which, request):
    path = request.getfixturevalue(which)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no model.json, nothing beside it
    doc = _benchmark(str(path))
    run = doc["tasks"][TASK]["runs"][str(path)]
    assert len(run["scores"]) == 2 and np.isfinite(run["normalized"])
    assert not doc["skipped"]


def test_decoding_is_an_option_of_every_model_and_changes_the_actions(dict_zip):
    argmax = _benchmark(str(dict_zip), "--decoding", "argmax")
    sample = _benchmark(str(dict_zip), "--decoding", "sample")
    assert sample["decoding"] == "sample"
    a, s = (d["tasks"][TASK]["runs"][str(dict_zip)]["scores"] for d in (argmax, sample))
    assert a != s
    bad = CliRunner().invoke(app, ["benchmark", str(dict_zip), "--tasks", TASK, "--decoding", "greedy", "--json"])
    assert bad.exit_code == 2 and json.loads(bad.stdout)["error"]["field"] == "--decoding"


def test_a_model_is_loaded_once_per_process(flat_zip):
    from clustergym._cache import clear_caches
    from clustergym.suite.scoring import evaluate

    clear_caches()
    LOADS.clear()
    evaluate([str(flat_zip)], [TASK], seeds=3, workers=1)  # 1 + T + T x S loads before the cache
    assert LOADS == {str(flat_zip.resolve()): 1}


def test_a_project_model_is_loaded_once_per_process():
    from clustergym._cache import clear_caches
    from clustergym.suite.scoring import evaluate

    model = ROOT / "models" / "autoscale-syn4-cur-s0" / "model.zip"
    if not model.is_file():
        pytest.skip("the shipped models are not in this checkout")
    clear_caches()
    LOADS.clear()
    evaluate([str(model)], ["autoscale-syn4"], seeds=2, workers=1)
    assert LOADS == {str(model.resolve()): 1}


FACTORY = '''
import numpy as np


class FirstValid:
    """Places the head job on the first server where it fits (a policy: predict only)."""

    def predict(self, observation, state=None, episode_start=None, deterministic=True):
        mask = observation["action_mask"].astype(bool)
        valid = np.flatnonzero(mask[:-1])
        return (int(valid[0]) if valid.size else mask.size - 1), state


def factory():
    return FirstValid()
'''


def test_benchmark_scores_a_factory_by_import_path(tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(FACTORY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "clustergym", "benchmark", "mypkg.mod:factory", "--tasks", TASK]
    done = subprocess.run([*cmd, "--seeds", "2", "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    run = json.loads(done.stdout)["tasks"][TASK]["runs"]["mypkg.mod:factory"]
    assert run["normalized"] > 0.5  # first fit: far above random
    missing = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=300)  # not on the path
    assert missing.returncode == 2 and "PYTHONPATH" in json.loads(missing.stdout)["error"]["message"]


def test_score_takes_an_agent_object_and_returns_benchmarks_document(tmp_path, monkeypatch):
    from clustergym.suite import score

    (tmp_path / "firstvalid.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    from firstvalid import FirstValid

    doc = score(FirstValid(), tasks=[TASK], seeds=2)
    (name,) = doc["specs"]
    assert set(doc) >= {"seeds", "specs", "tasks", "aggregate", "rows"}
    assert doc["tasks"][TASK]["runs"][name]["normalized"] > 0.5
    by_name = score("random", tasks=[TASK], seeds=2)  # a registered name or model path works as in benchmark
    from clustergym.suite.reference import load_reference

    ref = load_reference()["tasks"][TASK]["agents"]["random"]["scores"][:2]
    assert by_name["tasks"][TASK]["runs"]["random"]["scores"] == pytest.approx(ref)  # the reference's episodes
    assert "firstvalid" not in clustergym.agent_api.AGENTS  # nothing left registered


def test_a_zoo_folder_loads_with_its_env_kwargs(dict_zip, tmp_path):
    import shutil

    folder = tmp_path / "ppo" / "mris-poisson-v1_1"
    folder.mkdir(parents=True)
    shutil.copy(dict_zip, folder / "mris-poisson-v1.zip")
    (folder / "config.yml").write_text("clustergym/mris-poisson-v1:\n  policy: MultiInputPolicy\n  n_timesteps: 128\n")
    (folder / "env_kwargs.yml").write_text("queue_window: 8\nreward_scale: 0.5\n")  # reward shaping is the training's
    agent = clustergym.make_agent(str(folder))
    assert dict(agent.requirements.env_kwargs) == {"queue_window": 8}
    doc = _benchmark(str(folder))
    assert len(doc["tasks"][TASK]["runs"][str(folder)]["scores"]) == 2


MODELS = sorted(p for p in (ROOT / "models").glob("*/model.json"))


@pytest.mark.skipif(not MODELS, reason="the shipped models are not in this checkout")
def test_the_shipped_models_carry_the_zoo_layout():
    import yaml

    for meta_path in MODELS:
        meta = json.loads(meta_path.read_text())
        config = yaml.safe_load((meta_path.parent / "config.yml").read_text())
        env_kwargs = yaml.safe_load((meta_path.parent / "env_kwargs.yml").read_text())
        (env_id,) = config
        assert env_id == (meta.get("task") or f"clustergym/{meta['scenario']}-v0")
        assert config[env_id]["n_timesteps"] == meta["timesteps"]
        assert env_kwargs.items() >= (meta.get("env_kwargs") or {}).items()
        gym.spec(env_id)  # a registered id
    agent = clustergym.make_agent(str(MODELS[0].parent))  # a folder of that layout loads
    assert agent.meta["algo"] == json.loads(MODELS[0].read_text())["algo"]


def test_compare_and_run_take_an_outside_model(flat_zip):
    res = CliRunner().invoke(
        app,
        ["compare", f"clustergym/{TASK}-v1", "--agents", f"{flat_zip},pq", "--seeds", "2", "--workers", "1", "--json"],
    )
    assert res.exit_code == 0, res.output
    assert {r["agent"] for r in json.loads(res.stdout)["summary"]} == {str(flat_zip), "pq"}
    # on the preset (another action mode and observation) the model is named as another environment's
    bad = CliRunner().invoke(app, ["run", TASK, "--agent", str(flat_zip), "--json"])
    assert (
        bad.exit_code == 2
        and "run it on the environment it was trained on" in json.loads(bad.stdout)["error"]["message"]
    )
