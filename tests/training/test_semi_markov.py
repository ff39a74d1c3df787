"""The semi-Markov discount (clustergym.training.semi_markov): the buffers' GAE against a hand-written
recursion, SB3's own buffers when every step lasts one time unit, the callback's glue in a real
rollout (durations, truncation bootstrap), and `train --set semi_markov=...`."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="needs the train extra")

import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer
from stable_baselines3.common.buffers import RolloutBuffer

from clustergym.errors import ConfigError
from clustergym.suite import find_task
from clustergym.training.semi_markov import (
    SemiMarkovCallback,
    SemiMarkovDictRolloutBuffer,
    SemiMarkovMaskableDictRolloutBuffer,
    SemiMarkovMaskableRolloutBuffer,
    SemiMarkovRolloutBuffer,
    semi_markov_buffer_kwargs,
    semi_markov_time_unit,
)
from clustergym.training.train import train

pytestmark = pytest.mark.usefixtures("quiet_warnings")

OBS = spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = spaces.Discrete(4)
T, N = 7, 3  # steps, envs
GAMMA, LAM, UNIT = 0.9, 0.8, 2.5


def _rollout(seed: int = 0) -> dict[str, np.ndarray]:
    """A random rollout of T steps over N envs: env 0 ends an episode after step 2 (so step 3
    starts one) and env 1 after the last step; durations irregular, some zero (commands)."""
    rng = np.random.default_rng(seed)
    starts = np.zeros((T, N), np.float32)
    starts[0] = 1.0
    starts[3, 0] = 1.0
    dt = rng.exponential(1.0, (T, N))
    dt[rng.random((T, N)) < 0.3] = 0.0
    return {
        "rewards": rng.normal(size=(T, N)).astype(np.float32),
        "values": rng.normal(size=(T, N)).astype(np.float32),
        "starts": starts,
        "dt": dt,
        "last_values": rng.normal(size=N).astype(np.float32),
        "dones": np.array([False, True, False]),
    }


def _fill(buf: RolloutBuffer, r: dict[str, np.ndarray]) -> RolloutBuffer:
    for t in range(T):
        if hasattr(buf, "record_durations"):
            buf.record_durations(r["dt"][t])
        buf.add(
            np.zeros((N, 3), np.float32),
            np.zeros((N, 1)),
            r["rewards"][t],
            r["starts"][t],
            th.as_tensor(r["values"][t]),
            th.zeros(N),
        )
    buf.compute_returns_and_advantage(th.as_tensor(r["last_values"]), r["dones"])
    return buf


def _by_sums(r: dict[str, np.ndarray], unit: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE written as explicit sums: A_t = sum_k (prod_{j<k} gamma_{t+j} lam) delta_{t+k} over the
    steps of t's episode in the buffer, with gamma_t = GAMMA ** (dt_t / unit)."""
    g = GAMMA ** (r["dt"] / unit)
    v = r["values"].astype(np.float64)
    adv = np.zeros((T, N))
    for i in range(N):
        # the step after t: its value and whether it is in the same episode
        nxt_v = np.append(v[1:, i], r["last_values"][i])
        cont = np.append(1.0 - r["starts"][1:, i], 1.0 - float(r["dones"][i]))
        delta = r["rewards"][:, i] + g[:, i] * nxt_v * cont - v[:, i]
        for t in range(T):
            weight, total = 1.0, 0.0
            for k in range(t, T):
                total += weight * delta[k]
                if not cont[k]:
                    break
                weight *= g[k, i] * LAM
            adv[t, i] = total
    return adv, adv + v


def test_advantages_and_returns_equal_the_hand_written_recursion_with_irregular_durations():
    r = _rollout()
    buf = _fill(SemiMarkovRolloutBuffer(T, OBS, ACT, "cpu", gae_lambda=LAM, gamma=GAMMA, n_envs=N, time_unit=UNIT), r)
    adv, ret = _by_sums(r, UNIT)
    np.testing.assert_allclose(buf.advantages, adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(buf.returns, ret, rtol=1e-5, atol=1e-5)
    # and the durations matter: the per-step discount gives other advantages
    plain = _fill(RolloutBuffer(T, OBS, ACT, "cpu", gae_lambda=LAM, gamma=GAMMA, n_envs=N), r)
    assert np.abs(plain.advantages - buf.advantages).max() > 1e-2
    # a step of zero duration is not discounted; a long one nearly cuts the bootstrap
    np.testing.assert_allclose(buf.discounts()[r["dt"] == 0.0], 1.0)


def test_with_every_step_one_time_unit_the_results_are_sb3s():
    r = _rollout(1)
    r["dt"] = np.full((T, N), UNIT)
    ours = _fill(SemiMarkovRolloutBuffer(T, OBS, ACT, "cpu", gae_lambda=LAM, gamma=GAMMA, n_envs=N, time_unit=UNIT), r)
    sb3 = _fill(RolloutBuffer(T, OBS, ACT, "cpu", gae_lambda=LAM, gamma=GAMMA, n_envs=N), r)
    # SB3 computes in float32, the semi-Markov buffer in float64 (stored as float32): equal to float32 rounding
    np.testing.assert_allclose(ours.advantages, sb3.advantages, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours.returns, sb3.returns, rtol=1e-6, atol=1e-6)


def test_truncation_bootstrap_uses_the_steps_own_discount():
    buf = SemiMarkovRolloutBuffer(2, OBS, ACT, "cpu", gae_lambda=LAM, gamma=GAMMA, n_envs=2, time_unit=1.0)
    d = buf.record_durations(np.array([3.0, 0.5]), bootstrap_values=np.array([10.0, 0.0]))
    np.testing.assert_allclose(d, [GAMMA**3, GAMMA**0.5])
    # SB3 adds gamma * V(terminal obs) to a truncated episode's reward before add()
    reward = np.array([1.0 + GAMMA * 10.0, 2.0], np.float32)
    buf.add(np.zeros((2, 3), np.float32), np.zeros((2, 1)), reward, np.ones(2), th.zeros(2), th.zeros(2))
    np.testing.assert_allclose(buf.rewards[0], [1.0 + GAMMA**3 * 10.0, 2.0], rtol=1e-6)
    # the correction is for that step only
    buf.record_durations(np.array([1.0, 1.0]))
    buf.add(np.zeros((2, 3), np.float32), np.zeros((2, 1)), np.ones(2), np.zeros(2), th.zeros(2), th.zeros(2))
    np.testing.assert_allclose(buf.rewards[1], [1.0, 1.0])


def test_a_missing_duration_is_an_error_not_a_silent_per_step_discount():
    buf = SemiMarkovRolloutBuffer(2, OBS, ACT, "cpu", gamma=GAMMA, n_envs=1)
    for _ in range(2):
        buf.add(np.zeros((1, 3), np.float32), np.zeros((1, 1)), np.ones(1), np.zeros(1), th.zeros(1), th.zeros(1))
    with pytest.raises(RuntimeError, match="SemiMarkovCallback"):
        buf.compute_returns_and_advantage(th.zeros(1), np.zeros(1, bool))


def test_buffer_classes_follow_the_algorithm_and_the_observation_space():
    d = spaces.Dict({"x": OBS})
    assert semi_markov_buffer_kwargs("ppo", OBS, 2.0)["rollout_buffer_class"] is SemiMarkovRolloutBuffer
    assert semi_markov_buffer_kwargs("a2c", d, 2.0)["rollout_buffer_class"] is SemiMarkovDictRolloutBuffer
    assert (
        semi_markov_buffer_kwargs("maskable-ppo", OBS, 2.0)["rollout_buffer_class"] is SemiMarkovMaskableRolloutBuffer
    )
    kw = semi_markov_buffer_kwargs("maskable-ppo", d, 2.0)
    assert kw["rollout_buffer_class"] is SemiMarkovMaskableDictRolloutBuffer
    assert issubclass(kw["rollout_buffer_class"], MaskableDictRolloutBuffer) and kw["rollout_buffer_kwargs"] == {
        "time_unit": 2.0
    }


def test_the_callback_records_every_steps_duration_and_the_truncation_bootstrap():
    """A real PPO rollout on short episodes (truncations inside the buffer), learning rate 0 so the
    policy after learn() is the one that collected: every buffer row holds its step's info["dt"],
    and the reward of a truncated step is the env's reward plus gamma_t * V(terminal obs)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    from clustergym.training.train import make_train_env

    venv = DummyVecEnv([lambda: make_train_env("ec2", {"num_servers": 3}, {"horizon": 2.0}, "mlp") for _ in range(2)])
    venv.seed(5)
    n_steps, unit = 48, 0.5
    seen: list[tuple[np.ndarray, np.ndarray, list]] = []

    class Probe(BaseCallback):
        def _on_rollout_start(self) -> None:
            seen.clear()

        def _on_step(self) -> bool:
            infos = self.locals["infos"]
            dt = np.array([i["dt"] for i in infos])
            term = [i["terminal_observation"] if i.get("TimeLimit.truncated") else None for i in infos]
            seen.append((dt, self.locals["rewards"].copy(), term))  # before SB3 adds its bootstrap
            return True

    model = PPO(
        "MlpPolicy",
        venv,
        n_steps=n_steps,
        batch_size=n_steps,
        n_epochs=1,
        learning_rate=0.0,
        gamma=GAMMA,
        seed=0,
        device="cpu",
        **semi_markov_buffer_kwargs("ppo", venv.observation_space, unit),
    )
    model.learn(2 * n_steps, callback=[Probe(), SemiMarkovCallback()])
    buf = model.rollout_buffer
    assert isinstance(buf, SemiMarkovRolloutBuffer) and len(seen) == n_steps
    dts = np.array([s[0] for s in seen])
    np.testing.assert_array_equal(buf.durations, dts)
    assert (dts == 0).any() and (dts > 0).any()
    truncated = 0
    for t, (dt, raw, term) in enumerate(seen):
        for i in range(2):
            want = float(raw[i])
            if term[i] is not None:
                truncated += 1
                with th.no_grad():
                    v = model.policy.predict_values(model.policy.obs_to_tensor(term[i])[0])[0].item()
                want += GAMMA ** (dt[i] / unit) * v
            assert buf.rewards[t, i] == pytest.approx(want, rel=1e-5, abs=1e-5)
    assert truncated >= 1


def test_setting_values():
    assert semi_markov_time_unit(False, "dqn") is None
    assert semi_markov_time_unit(True, "ppo") == 1.0
    assert semi_markov_time_unit(True, "maskable-ppo", 20.0) == 20.0
    assert semi_markov_time_unit(3, "a2c", 20.0) == 3.0
    for bad in ("yes", 0, -1.0, float("inf"), float("nan"), [1]):
        with pytest.raises(ConfigError, match="semi_markov"):
            semi_markov_time_unit(bad, "ppo")
    with pytest.raises(ConfigError, match="dqn discounts per step"):
        semi_markov_time_unit(True, "dqn")


TINY = {"algo.n_steps": 64, "algo.batch_size": 64, "algo.n_epochs": 1}


def test_train_on_a_suite_task_records_the_setting_and_the_tasks_time_unit(tmp_path):
    task = find_task("bfjs-uniform")
    assert task is not None and task.time_unit != 1.0
    out = tmp_path / "run"
    path = train(
        "bfjs-uniform", "maskable-ppo", timesteps=256, n_envs=2, out=out, verbose=False, hidden=8,
        semi_markov=True, **TINY,
    )  # fmt: skip
    meta = json.loads((out / "model.json").read_text())
    assert meta["semi_markov"] is True and meta["semi_markov_time_unit"] == task.time_unit
    assert meta["timesteps"] >= 256 and path.is_file()
    # a resumed run keeps the setting; giving another value is refused
    with pytest.raises(ConfigError, match="semi_markov"):
        train(None, resume=out, timesteps=512, verbose=False, semi_markov=False)


def test_train_ppo_mlp_on_a_scenario_with_a_given_time_unit(tmp_path):
    out = tmp_path / "run"
    train(
        "ec2", "ppo", policy="mlp", timesteps=128, n_envs=2, out=out, verbose=False, num_servers=3,
        horizon=3.0, semi_markov=4.0, **TINY,
    )  # fmt: skip
    meta = json.loads((out / "model.json").read_text())
    assert meta["semi_markov"] == 4.0 and meta["semi_markov_time_unit"] == 4.0
    assert "semi_markov" not in meta["scenario_params"]
    from stable_baselines3 import PPO

    model = PPO.load(out / "model.zip", device="cpu")
    assert model.rollout_buffer_class is SemiMarkovRolloutBuffer and model.rollout_buffer_kwargs == {"time_unit": 4.0}


def test_train_a2c_equivariant_uses_the_dict_buffer(tmp_path):
    out = tmp_path / "run"
    train(
        "ec2", "a2c", timesteps=64, n_envs=2, out=out, verbose=False, hidden=8, num_servers=3, horizon=3.0,
        semi_markov=True, **{"algo.n_steps": 8},
    )  # fmt: skip
    from stable_baselines3 import A2C

    model = A2C.load(out / "model.zip", device="cpu")
    assert model.rollout_buffer_class is SemiMarkovDictRolloutBuffer
    assert json.loads((out / "model.json").read_text())["semi_markov_time_unit"] == 1.0


@pytest.mark.parametrize(
    ("algo", "extra", "match"),
    [
        ("dqn", {"policy": "mlp"}, "dqn discounts per step"),
        ("ppo", {"semi_markov": "often"}, "positive number"),
        ("ppo", {"semi_markov": -2}, "positive number"),
        ("maskable-ppo", {"warm_start": "best-fit"}, "warm start"),
    ],
)
def test_train_refuses_bad_settings(tmp_path, algo, extra, match):
    kwargs = {"semi_markov": True, **extra}
    with pytest.raises(ConfigError, match=match):
        train("ec2", algo, timesteps=64, n_envs=1, out=tmp_path / "run", verbose=False, **kwargs)
