"""The batched vector environment: the same trajectories as the single environments, for the same seeds."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from clustergym import make_env
from clustergym.envs.vector import BatchedVectorEnv
from clustergym.errors import ConfigError

N = 3


def _single(kind: str):
    if kind == "ec2":  # short episodes: autoreset is exercised
        return lambda **kw: make_env("ec2", horizon=1.5, **kw)
    return lambda **kw: gym.make(f"clustergym/{kind}-v1", **kw)


def _same_infos(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for k in want:
        if isinstance(want[k], dict):
            _same_infos(got[k], want[k])
        else:
            assert got[k].dtype == want[k].dtype, k
            assert all(a == b or (a != a and b != b) for a, b in zip(got[k].tolist(), want[k].tolist())), k  # NaN


def _masked_actions(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    return np.array([int(rng.choice(np.flatnonzero(m))) for m in masks])


@pytest.mark.parametrize("kind", ["ec2", "rms-trap", "mris-poisson"])
def test_batched_trajectories_are_the_single_ones_next_step_autoreset(kind):
    make = _single(kind)
    fns = [lambda: make(disable_env_checker=True)] * N if kind != "ec2" else [make] * N
    venv = BatchedVectorEnv(fns)
    singles = [make() for _ in range(N)]
    seed, rng, ends = 11, np.random.default_rng(0), 0
    vobs, _ = venv.reset(seed=seed)
    sobs = [e.reset(seed=seed + i)[0] for i, e in enumerate(singles)]
    pending = np.zeros(N, dtype=bool)  # NEXT_STEP: the single env is reset at the step after its end
    kept = []
    for _ in range(300):
        for i in range(N):
            assert list(vobs) == list(sobs[i])
            for k in sobs[i]:
                assert vobs[k][i].dtype == sobs[i][k].dtype and np.array_equal(vobs[k][i], sobs[i][k]), k
        assert np.array_equal(venv.action_masks(), np.stack([o["action_mask"] for o in sobs]).astype(bool))
        kept.append(({k: v.copy() for k, v in vobs.items()}, vobs))
        acts = _masked_actions(rng, venv.action_masks())
        vobs, vr, vte, vtr, vinfo = venv.step(acts)
        want: dict = {}
        for i, info in enumerate(venv.env_infos):  # Gymnasium's own layout of the environments' infos
            want = venv._add_info(want, info, i)
        _same_infos(vinfo, want)
        for i, e in enumerate(singles):
            if pending[i]:
                sobs[i], _ = e.reset()
                r, te, tr = 0.0, False, False
            else:
                sobs[i], r, te, tr, _ = e.step(int(acts[i]))
            assert (vr[i], vte[i], vtr[i]) == (r, te, tr)
            pending[i] = te or tr
            ends += te or tr
    for copy, handed in kept:  # what was handed out never changed afterwards
        assert all(np.array_equal(copy[k], handed[k]) for k in copy)
    assert kind != "ec2" or ends >= N


def test_the_sb3_adapter_is_dummy_vec_env_step_for_step():
    from stable_baselines3.common.vec_env import DummyVecEnv

    from clustergym.training.batched import make_batched_venv

    bv = make_batched_venv("ec2", N, seed=5, monitor=False, horizon=1.0)
    dv = DummyVecEnv([lambda: make_env("ec2", horizon=1.0)] * N)
    dv.seed(5)
    ob, od = bv.reset(), dv.reset()
    rng, ends = np.random.default_rng(1), 0
    for _ in range(250):
        assert all(np.array_equal(ob[k], od[k]) for k in od)
        masks = np.stack(bv.env_method("action_masks"))
        assert np.array_equal(masks, np.stack(dv.env_method("action_masks")))
        acts = _masked_actions(rng, masks)
        ob, rb, db, ib = bv.step(acts)
        od, rd, dd, id_ = dv.step(acts)
        assert np.array_equal(rb, rd) and np.array_equal(db, dd)
        for i in np.flatnonzero(dd):
            ends += 1
            t1, t2 = ib[i]["terminal_observation"], id_[i]["terminal_observation"]
            assert all(np.array_equal(t1[k], t2[k]) for k in t2)
            assert ib[i]["TimeLimit.truncated"] == id_[i].get("TimeLimit.truncated", False)
            m1, m2 = ib[i]["metrics"], id_[i]["metrics"]
            assert m1.keys() == m2.keys()
            for k in m2:  # NaN (no job finished) equals NaN here
                a = np.asarray(m1[k])
                assert np.array_equal(a, np.asarray(m2[k]), equal_nan=a.dtype.kind == "f"), k
    assert ends >= N


def test_the_flat_observation_is_flatten_observations():
    from gymnasium.spaces import flatten

    from clustergym.training.batched import make_batched_venv

    bv = make_batched_venv("rms-trap", 2, seed=3, monitor=False, flatten=True)
    single = gym.make("clustergym/rms-trap-v1")
    obs = bv.reset()
    want = flatten(single.observation_space, single.reset(seed=3)[0])
    assert obs.shape == (2, want.size) and obs.dtype == np.float32
    assert np.array_equal(obs[0], want)
    assert bv.observation_space.contains(obs[0])


def test_environments_with_the_env_checker_are_refused_with_a_clear_error():
    with pytest.raises(ConfigError, match="disable_env_checker"):
        BatchedVectorEnv([lambda: gym.make("clustergym/rms-trap-v1")])
