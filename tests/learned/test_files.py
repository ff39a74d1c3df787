"""The model folder's data-only formats: VecNormalize statistics as ``.npz`` and the files' SHA-256 digests."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="needs the train extra")

from clustergym.errors import ConfigError
from clustergym.learned.files import (
    convert_legacy_folder,
    load_vecnormalize,
    read_vecnormalize,
    record_digests,
    save_vecnormalize,
    verify_digests,
)


def _venv(norm_obs: bool):
    import gymnasium
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    venv = DummyVecEnv([lambda: gymnasium.make("CartPole-v1")])
    venv.seed(3)
    vn = VecNormalize(venv, norm_obs=norm_obs, norm_reward=True, clip_obs=7.0, gamma=0.97)
    vn.reset()
    for _ in range(20):
        vn.step(np.array([vn.action_space.sample()]))
    return vn


@pytest.mark.parametrize("norm_obs", [True, False])
def test_vecnormalize_round_trips_through_npz(tmp_path, norm_obs):
    vn = _venv(norm_obs)
    save_vecnormalize(vn, tmp_path / "vecnormalize.npz")
    with np.load(tmp_path / "vecnormalize.npz", allow_pickle=False) as z:
        assert z["clip_obs"] == 7.0 and bool(z["norm_obs"]) is norm_obs
    back = load_vecnormalize(tmp_path / "vecnormalize.npz", _venv(norm_obs).venv)
    assert (back.clip_obs, back.gamma, back.norm_obs, back.norm_reward) == (7.0, 0.97, norm_obs, True)
    assert back.ret_rms.var == vn.ret_rms.var and back.ret_rms.count == vn.ret_rms.count
    if norm_obs:
        np.testing.assert_array_equal(back.obs_rms.mean, vn.obs_rms.mean)
        np.testing.assert_array_equal(back.obs_rms.var, vn.obs_rms.var)
        x = np.arange(4, dtype=np.float32)
        np.testing.assert_allclose(read_vecnormalize(tmp_path / "vecnormalize.npz").normalize(x), vn.normalize_obs(x))


def test_object_arrays_and_pickles_are_refused(tmp_path):
    save_vecnormalize(_venv(True), tmp_path / "v.npz")
    with np.load(tmp_path / "v.npz") as z:
        arrays = dict(z)
    np.savez(tmp_path / "v.npz", **{**arrays, "clip_obs": np.array([object()], dtype=object)})
    with pytest.raises(ConfigError, match="damaged normalisation statistics"):
        read_vecnormalize(tmp_path / "v.npz")
    (tmp_path / "vecnormalize.pkl").write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(ConfigError, match="--trust-pickle"):
        read_vecnormalize(tmp_path / "vecnormalize.pkl")


def test_digests_are_recorded_and_a_changed_file_is_refused(tmp_path):
    (tmp_path / "model.json").write_text(json.dumps({"algo": "ppo"}))
    (tmp_path / "model.zip").write_bytes(b"weights")
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "rl_model_64_steps.zip").write_bytes(b"ckpt")
    table = record_digests(tmp_path)
    assert sorted(table) == ["checkpoints/rl_model_64_steps.zip", "model.zip"]
    assert json.loads((tmp_path / "model.json").read_text())["sha256"] == table
    verify_digests(
        tmp_path / "model.json", [tmp_path / "model.zip", tmp_path / "checkpoints" / "rl_model_64_steps.zip"]
    )
    (tmp_path / "model.zip").write_bytes(b"weightz")
    with pytest.raises(ConfigError, match=r"model.zip: its SHA-256 does not match"):
        verify_digests(tmp_path / "model.json", [tmp_path / "model.zip"])


def test_convert_legacy_folder_writes_npz_and_removes_the_pickle(tmp_path):
    vn = _venv(True)
    with open(tmp_path / "vecnormalize.pkl", "wb") as f:
        pickle.dump(vn, f)
    with pytest.raises(ConfigError, match="no model.json"):
        convert_legacy_folder(tmp_path)
    (tmp_path / "model.json").write_text("{}")
    assert convert_legacy_folder(tmp_path) == [tmp_path / "vecnormalize.npz"]
    assert not (tmp_path / "vecnormalize.pkl").exists()
    np.testing.assert_array_equal(read_vecnormalize(tmp_path / "vecnormalize.npz").obs_mean, vn.obs_rms.mean)
    assert "vecnormalize.npz" in json.loads((tmp_path / "model.json").read_text())["sha256"]
