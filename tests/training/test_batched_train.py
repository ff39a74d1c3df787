"""``clustergym train``'s default in-process envs (``--vec-env batched``) give the ``dummy`` envs' trajectories.

Golden: the same seeds give the same observations, masks, rewards, ends, terminal observations and episode
statistics step for step (a suite task with a curriculum stage's envs, a scenario with the ``mlp`` policy's
flat observations), and a short training run learns the same weights bit for bit.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from clustergym.learned.model_agent import algo_classes, load_sb3
from clustergym.training.train import batched_applies, build_venv, train

N = 3


def _same(a, b) -> bool:
    if isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in b)
    return np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize(
    ("scenario", "params", "env_kwargs", "policy", "stage"),
    [
        ("rms-trap", {}, {"action_mode": "slot", "queue_window": 4}, "equivariant", None),
        ("rms-trap", {}, {"action_mode": "slot", "queue_window": 4}, "equivariant", {"num_servers": 6}),
        ("ec2", {"num_servers": 3}, {"action_mode": "head", "horizon": 2.0}, "mlp", None),
    ],
)
def test_build_venv_batched_is_dummy_step_for_step(scenario, params, env_kwargs, policy, stage):
    from clustergym.training.batched import SB3BatchedVecEnv

    got = build_venv(scenario, params, env_kwargs, policy, N, "batched", seed=2, stage_params=stage)
    want = build_venv(scenario, params, env_kwargs, policy, N, "dummy", seed=2, stage_params=stage)
    assert isinstance(got.venv, SB3BatchedVecEnv) and got.observation_space == want.observation_space
    og, ow = got.reset(), want.reset()
    rng, ends = np.random.default_rng(0), 0
    for _ in range(400):
        assert _same(og, ow)
        masks = np.stack(got.env_method("action_masks"))
        assert np.array_equal(masks, np.stack(want.env_method("action_masks")))
        acts = np.array([int(rng.choice(np.flatnonzero(m))) for m in masks])
        og, rg, dg, ig = got.step(acts)
        ow, rw, dw, iw = want.step(acts)
        assert np.array_equal(rg, rw) and rg.dtype == rw.dtype and np.array_equal(dg, dw)
        for i in range(N):
            assert ig[i]["dt"] == iw[i]["dt"]
        for i in np.flatnonzero(dw):
            ends += 1
            assert _same(ig[i]["terminal_observation"], iw[i]["terminal_observation"])
            assert ig[i]["TimeLimit.truncated"] == iw[i].get("TimeLimit.truncated", False)
            # the episode statistics (logs only): VecMonitor sums the float32 rewards, Monitor rounds its sum to 1e-6
            assert ig[i]["episode"]["l"] == iw[i]["episode"]["l"]
            assert ig[i]["episode"]["r"] == pytest.approx(iw[i]["episode"]["r"], rel=1e-5, abs=1e-6)
    assert scenario != "ec2" or ends >= N
    got.close()
    want.close()


def test_the_rule_mode_runs_as_dummy():
    from stable_baselines3.common.vec_env import DummyVecEnv

    assert not batched_applies({"action_mode": "rule"}) and batched_applies({"action_mode": "slot"})
    venv = build_venv("rms-trap", {}, {"action_mode": "rule", "rules": None}, "equivariant", 2, "batched", seed=0)
    assert isinstance(venv, DummyVecEnv)
    venv.close()


@pytest.mark.parametrize(
    ("scenario", "policy", "more"), [("rms-trap", "equivariant", {}), ("ec2", "mlp", {"horizon": 2.0})]
)
def test_a_training_run_learns_the_same_weights_on_batched_and_dummy_envs(tmp_path, scenario, policy, more):
    weights = {}
    for vec_env in ("batched", "dummy"):
        out = tmp_path / vec_env
        path = train(
            scenario, policy=policy, timesteps=96, n_envs=2, vec_env=vec_env, out=out, verbose=False,
            **{"algo.n_steps": 48, "algo.batch_size": 32, "algo.n_epochs": 2}, **more,
        )  # fmt: skip
        assert json.loads((out / "model.json").read_text())["vec_env"] == vec_env
        weights[vec_env] = load_sb3(
            algo_classes()["maskable-ppo"], path, "maskable-ppo", device="cpu"
        ).policy.state_dict()
    assert weights["batched"].keys() == weights["dummy"].keys()
    assert all(torch.equal(weights["batched"][k], weights["dummy"][k]) for k in weights["dummy"])
