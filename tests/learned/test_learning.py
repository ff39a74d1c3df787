"""Learned agents: the equivariant policy's logit layout, equivariance and
size transfer; training, saving, reloading and exact reproduction; the ``train`` CLI; bad input.

Training budgets here are tiny (a few hundred to 2k steps): these tests check the
plumbing and the invariants, not that learning helps (see the README's results).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch as th
from gymnasium import spaces
from typer.testing import CliRunner

from clustergym.agent_api import make_agent
from clustergym.cli import app
from clustergym.envs import make_env
from clustergym.errors import ConfigError
from clustergym.learned import load_model_agent
from clustergym.learned.policies import MASKED_LOGIT, EquivariantMaskablePolicy, EquivariantPolicy, transfer_policy
from clustergym.runner import compare, run_episode
from clustergym.scenarios import resolve_scenario
from clustergym.training.train import train

runner = CliRunner()

#: small instances of each action mode the equivariant policy speaks
MODE_ENVS = {
    "head": ("bf-trap", {"num_servers": 6}),
    "slot": ("bf-trap", {"num_servers": 6}),
    "admit": ("autoscale-4vm", {"num_servers": 5}),
}


pytestmark = pytest.mark.usefixtures("quiet_warnings")


def _env(mode: str, **kw):
    scenario, params = MODE_ENVS[mode]
    return make_env(scenario, action_mode=mode, queue_window=4, horizon=5.0, invalid_action="raise", **{**params, **kw})


def _policy(env, mode: str, cls=EquivariantMaskablePolicy, seed: int = 0):
    th.manual_seed(seed)
    return cls(env.observation_space, env.action_space, lambda _: 3e-4, action_mode=mode, hidden=16)


def _logits(policy, obs) -> np.ndarray:
    """The network's raw logits (before the distribution's log-softmax)."""
    t, _ = policy.obs_to_tensor(obs)
    with th.no_grad():
        return policy.mlp_extractor.forward_actor(policy.extract_features(t)).reshape(-1).numpy()


def _busy_obs(env, steps: int = 40, seed: int = 0):
    """An observation with a queue and partly loaded servers: place on the first fitting server,
    but WAIT at every third step so that jobs pile up."""
    obs, _ = env.reset(seed=seed)
    for i in range(steps):
        valid = np.flatnonzero(obs["action_mask"])
        a = valid[-1] if i % 3 == 0 else valid[0]
        obs, *_ = env.step(int(a))
    return obs


# ============================================================== logits line up with the action modes
@pytest.mark.parametrize("mode", ["head", "slot", "admit"])
def test_logits_match_action_space_and_mask_and_drive_valid_episodes(mode):
    env = _env(mode)
    policy = _policy(env, mode)
    obs, _ = env.reset(seed=1)
    steps = 0
    seen_choice = False
    while True:
        z = _logits(policy, obs)
        mask = obs["action_mask"].astype(bool)
        assert z.shape == (env.action_space.n,)
        assert np.all(z[~mask] == MASKED_LOGIT) and np.all(np.isfinite(z[mask])) and np.all(z[mask] > MASKED_LOGIT)
        seen_choice |= mask[:-1].any()
        action, _ = policy.predict(obs, deterministic=False, action_masks=mask)
        obs, _, term, trunc, _ = env.step(int(action))  # invalid_action="raise": a masked action would raise
        steps += 1
        if term or trunc or steps >= 300:
            break
    assert seen_choice and steps > 10


def test_slot_logits_extend_head_logits_job_by_job():
    """Same weights: the head mode's server logits are the slot mode's row k = 0 (index k * L + l)."""
    env_slot, env_head = _env("slot"), _env("head")
    slot = _policy(env_slot, "slot")
    head = transfer_policy(slot, env_head.observation_space, env_head.action_space)
    assert head.action_space.n == 7 and head.mlp_extractor.action_mode == "slot"
    head.mlp_extractor.action_mode = "head"  # same network, scoring the head job only
    obs = _busy_obs(env_slot)
    L = 6
    zs = _logits(slot, obs)
    obs_h = dict(obs)
    obs_h["action_mask"] = np.concatenate([obs["action_mask"][:L], obs["action_mask"][-1:]])
    zh = _logits(head, obs_h)
    assert np.allclose(zh[:L], zs[:L], atol=1e-5) and np.isclose(zh[-1], zs[-1], atol=1e-5)
    assert obs["queue_mask"].sum() >= 2, "need at least two queued jobs for the layout check"
    assert not np.allclose(zs[L : 2 * L][obs["action_mask"][L : 2 * L] > 0], MASKED_LOGIT)


def test_work_conserving_policy_masks_wait_only_while_a_job_can_start():
    env = _env("slot", skip_trivial=False)  # also show the epochs where only WAIT is valid
    wc = EquivariantMaskablePolicy(
        env.observation_space, env.action_space, lambda _: 3e-4, action_mode="slot", hidden=16, work_conserving=True
    )
    obs, _ = env.reset(seed=0)
    seen = {True: 0, False: 0}
    for _ in range(200):
        z, mask = _logits(wc, obs), obs["action_mask"].astype(bool)
        can_start = mask[:-1].any()
        seen[bool(can_start)] += 1
        assert (z[-1] == MASKED_LOGIT) == can_start
        obs, _, term, trunc, _ = env.step(int(np.argmax(z)))
        if term or trunc:
            break
    assert seen[True] and seen[False]
    with pytest.raises(ConfigError, match="policy.work_conserving"):
        _policy(_env("admit"), "admit").__class__(
            _env("admit").observation_space,
            _env("admit").action_space,
            lambda _: 3e-4,
            action_mode="admit",
            work_conserving=True,
        )


# ============================================================== permutation equivariance
@pytest.mark.parametrize("pair_features", [False, True])
@pytest.mark.parametrize("mode", ["head", "slot", "admit"])
def test_permuting_servers_permutes_logits_and_keeps_value(mode, pair_features):
    env = _env(mode, pair_features=pair_features)
    policy = _policy(env, mode, cls=EquivariantPolicy, seed=3)
    obs = _busy_obs(env, steps=25, seed=2)
    L = obs["free"].shape[0]
    perm = np.random.default_rng(0).permutation(L)
    K = (env.action_space.n - 1) // L
    p_obs = dict(obs)
    for key in ("free", "running", "dummies", "event_server"):
        p_obs[key] = obs[key][perm]
    if pair_features:  # (K + 1, L, P): the servers are the second axis
        p_obs["pair_scores"] = obs["pair_scores"][:, perm]
    p_obs["action_mask"] = np.concatenate(
        [obs["action_mask"][:-1].reshape(K, L)[:, perm].ravel(), obs["action_mask"][-1:]]
    )
    z, zp = _logits(policy, obs), _logits(policy, p_obs)
    assert np.allclose(zp[:-1].reshape(K, L), z[:-1].reshape(K, L)[:, perm], atol=1e-5)
    assert np.isclose(zp[-1], z[-1], atol=1e-6)
    v = policy.predict_values(policy.obs_to_tensor(obs)[0]).item()
    vp = policy.predict_values(policy.obs_to_tensor(p_obs)[0]).item()
    assert np.isclose(v, vp, atol=1e-5)
    assert not np.allclose(zp, z), "the permutation left the logits unchanged: a trivial check"


def test_server_ids_start_as_the_plain_policy_then_tell_identical_servers_apart():
    """policy.server_ids: a zero-initialised embedding per server index.  At initialisation the logits
    are the plain policy's (same weights); once the embedding differs between servers, two servers
    with identical features score differently (the equivariance it gives up on purpose), and the
    model refuses another number of servers."""
    env = _env("head")
    plain = _policy(env, "head", cls=EquivariantPolicy, seed=3)
    th.manual_seed(3)
    ids = EquivariantPolicy(
        env.observation_space, env.action_space, lambda _: 3e-4, action_mode="head", hidden=16, server_ids=True
    )
    assert ids.mlp_extractor.server_embed.shape == (6, 16)
    ids.load_state_dict({**plain.state_dict(), "mlp_extractor.server_embed": th.zeros(6, 16)})
    obs, _ = env.reset(seed=0)  # empty servers: every server has the same features
    assert obs["queue_mask"][0] == 1
    z_plain, z_ids = _logits(plain, obs), _logits(ids, obs)
    assert np.allclose(z_plain, z_ids, atol=1e-6)
    assert np.allclose(z_ids[:6], z_ids[0], atol=1e-6), "identical servers, identical scores"
    with th.no_grad():
        ids.mlp_extractor.server_embed[2] += 1.0
    z = _logits(ids, obs)
    assert not np.isclose(z[2], z[0], atol=1e-4) and np.allclose(np.delete(z[:6], 2), z[0], atol=1e-6)
    other = _env("head", num_servers=8)
    with pytest.raises(ConfigError, match="identity for each of its 6 servers"):
        transfer_policy(ids, other.observation_space, other.action_space)
    with pytest.raises(ConfigError, match="policy.server_ids"):
        EquivariantPolicy(env.observation_space, env.action_space, lambda _: 3e-4, action_mode="head", server_ids="x")


def _one_type(space: spaces.Dict, obs: dict) -> tuple[spaces.Dict, dict]:
    """The space and observation of the same cluster state with its J job types seen as one: per-type
    counts summed, the one-hot type of each job (and of the event's) a single column."""
    R = space["free"].shape[1]
    J = space["queue_counts"].shape[0]
    new_space, new_obs = dict(space.spaces), dict(obs)
    for key in ("running", "dummies", "queue_counts", "arrival_rates"):
        new_obs[key] = obs[key].sum(axis=-1, keepdims=True)
    for key, first in (("queue_jobs", R), ("event", 5 + R)):
        x = obs[key]
        new_obs[key] = np.concatenate(
            [x[..., :first], x[..., first : first + J].sum(-1, keepdims=True), x[..., first + J :]], -1
        )
    for key in new_space:
        box = space[key]
        shape = new_obs[key].shape
        new_space[key] = spaces.Box(box.low.flat[0], box.high.flat[0], shape, box.dtype) if shape != box.shape else box
    return spaces.Dict(new_space), new_obs


@pytest.mark.parametrize("mode", ["slot", "admit"])
def test_pool_types_frees_the_weights_from_the_number_of_job_types(mode):
    """policy.pool_types: the weights of a policy trained with J job types run on a task with one type
    (azure-vms's six flavours, then the type-free google-tasks), and score a state exactly as they
    score the same state with its types merged; without it the weights do not fit, and the error says
    which setting would free them."""
    env = _env(mode, pair_features=True)
    J = env.observation_space["queue_counts"].shape[0]
    assert J > 1
    th.manual_seed(7)
    pooled = EquivariantPolicy(
        env.observation_space, env.action_space, lambda _: 3e-4, action_mode=mode, hidden=16, pool_types=True
    )
    obs = _busy_obs(env, steps=25, seed=2)
    space1, obs1 = _one_type(env.observation_space, obs)
    one = transfer_policy(pooled, space1, env.action_space)
    assert one.mlp_extractor.J == 1 and one.pool_types
    z, z1 = _logits(pooled, obs), _logits(one, obs1)
    assert np.allclose(z, z1, atol=1e-5)
    # the split of the counts over the types is not read: moving a count between types moves nothing,
    # where the plain policy reads it
    moved = dict(obs, queue_counts=obs["queue_counts"][::-1].copy())
    assert obs["queue_counts"][0] != obs["queue_counts"][-1]
    assert np.allclose(_logits(pooled, moved), z, atol=1e-6)
    plain = _policy(env, mode, seed=7)
    assert not np.allclose(_logits(plain, moved), _logits(plain, obs), atol=1e-6)
    with pytest.raises(ConfigError, match="pool_types=true frees the weights"):
        transfer_policy(plain, space1, env.action_space)
    with pytest.raises(ConfigError, match="policy.pool_types"):
        EquivariantPolicy(env.observation_space, env.action_space, lambda _: 3e-4, action_mode=mode, pool_types="x")


@pytest.mark.parametrize("mode", ["head", "slot", "admit"])
def test_pair_scores_feed_the_scored_jobs_pairs_and_transfer_only_with_them(mode):
    """With ``pair_features=True`` the policy reads ``obs["pair_scores"]``: the rows of the jobs the
    mode scores (window rows for head/slot, the event's job for admit) move exactly those logits, the
    other rows move none; the weights transfer to another number of servers, not to an env without
    the scores."""
    env = _env(mode, pair_features=True)
    policy = _policy(env, mode, seed=5)
    assert policy.mlp_extractor.has_pair_scores and not _policy(_env(mode), mode).mlp_extractor.has_pair_scores
    obs = _busy_obs(env, steps=25, seed=2)
    L, K = obs["free"].shape[0], obs["queue_mask"].shape[0]
    z = _logits(policy, obs)
    scored = {"head": [0], "slot": list(range(K)), "admit": [K]}[mode]
    for row in range(K + 1):
        moved = dict(obs)
        moved["pair_scores"] = obs["pair_scores"].copy()
        moved["pair_scores"][row] += 0.5
        zm = _logits(policy, moved)
        changed = ~np.isclose(zm, z, atol=1e-6)
        if row in scored:
            first = scored.index(row) * L
            valid = obs["action_mask"][first : first + L] > 0
            assert changed[first : first + L][valid].all(), f"row {row}: its pairs' logits did not move"
            assert not np.delete(changed, np.arange(first, first + L)).any(), f"row {row} moved other logits"
        else:
            assert not changed.any(), f"row {row} is not scored in {mode} mode but moved the logits"
    bigger = _env(mode, pair_features=True, num_servers=8)
    moved_policy = transfer_policy(policy, bigger.observation_space, bigger.action_space)
    assert moved_policy.mlp_extractor.has_pair_scores
    plain = _env(mode, num_servers=8)
    with pytest.raises(ConfigError, match="pair_features=true"):
        transfer_policy(policy, plain.observation_space, plain.action_space)


# ============================================================== training, saving, loading
@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A tiny masked-PPO run on ec2 (20 servers), equivariant policy, evaluated every 512 steps (two
    rollouts of 256) and at the end."""
    out = tmp_path_factory.mktemp("ec2-run")
    return train(
        "ec2",
        "maskable-ppo",
        timesteps=1024,
        n_envs=1,
        policy="equivariant",
        seed=0,
        out=out,
        eval_agents=["best-fit"],
        eval_every=512,
        eval_seeds=range(2),
        eval_horizon=3.0,
        verbose=False,
        hidden=16,
        horizon=5.0,
        zeta=0.9,
        **{"algo.n_steps": 256, "algo.batch_size": 64, "algo.n_epochs": 2},
    )


def test_training_writes_model_metadata_checkpoints_eval_and_tensorboard(trained):
    out = trained.parent
    meta = json.loads((out / "model.json").read_text())
    assert meta["algo"] == "maskable-ppo" and meta["policy"] == "equivariant" and meta["timesteps"] >= 1024
    assert meta["env_kwargs"] == {"action_mode": "head", "queue_window": 8}
    assert (out / "vecnormalize.npz").is_file()
    assert list((out / "checkpoints").glob("rl_model_*_steps.zip"))
    assert not list(out.rglob("*.pkl"))  # every statistic as plain arrays, never a pickle
    assert list((out / "checkpoints").glob("rl_model_vecnormalize_*_steps.npz"))
    assert {"model.zip", "vecnormalize.npz"} <= set(meta["sha256"])
    assert list((out / "tb").rglob("events.out.tfevents.*"))
    ev = pd.read_csv(out / "eval.csv")
    assert set(ev["agent"]) == {"learned", "best-fit"} and set(ev["seed"]) == {0, 1}


def test_evaluations_and_checkpoints_follow_policy_updates(trained):
    """Evaluations and checkpoints are taken after an update (never of the initial policy, never two of
    one policy), and TensorBoard gets the learner's train/* scalars and the evaluations at their steps."""
    out = trained.parent
    ev = pd.read_csv(out / "eval.csv")
    assert sorted(set(ev["step"])) == [512, 1024]  # every 512 steps, after 2 and 4 rollouts of 256
    assert ev.groupby("step")["wall_seconds"].first().is_monotonic_increasing
    steps = sorted(int(p.stem.split("_")[-2]) for p in (out / "checkpoints").glob("rl_model_*_steps.zip"))
    assert steps == [256, 512, 768]  # every 102 steps, at the rollouts' ends; the last one is model.zip
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (run,) = [p for p in (out / "tb").iterdir() if p.is_dir()]
    acc = EventAccumulator(str(run))
    acc.Reload()
    assert [e.step for e in acc.Scalars("eval/mean_queue_length/learned")] == [512, 1024]
    assert 1024 in {e.step for e in acc.Scalars("train/loss")}  # the last update's scalars are written


def test_reloaded_model_reproduces_training_evaluation_exactly(trained):
    ev = pd.read_csv(trained.parent / "eval.csv")
    final = ev[(ev["agent"] == "learned") & (ev["step"] == ev["step"].max())].set_index("seed")["mean_queue_length"]
    agent = make_agent(str(trained))  # the registry hands .zip paths to load_model_agent
    for seed, value in final.items():
        r = run_episode("ec2", agent, seed=int(seed), horizon=3.0, agent_name="m")
        assert r["mean_queue_length"] == pytest.approx(value, rel=1e-12, abs=1e-12)
    again = run_episode("ec2", load_model_agent(str(trained)), seed=1, horizon=3.0)
    assert again["mean_queue_length"] == pytest.approx(final[1], rel=1e-12, abs=1e-12)
    runs = compare("ec2", ["best-fit", str(trained)], seeds=range(2), horizon=3.0)
    got = runs[runs["agent"] == str(trained)].set_index("seed")["mean_queue_length"]
    assert np.allclose(got.sort_index().to_numpy(), final.sort_index().to_numpy(), rtol=0, atol=1e-12)


def _console(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "clustergym", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_cli_run_and_compare_in_subprocess_reproduce_in_process_metrics(trained):
    ref = run_episode("ec2", load_model_agent(str(trained)), seed=1, horizon=3.0)
    proc = _console("run", "ec2", "--agent", str(trained), "--seed", "1", "--horizon", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["mean_queue_length"] == ref["mean_queue_length"] and doc["started"] == ref["started"]
    res = runner.invoke(
        app, ["compare", "ec2", "--agents", f"best-fit,{trained}", "--seeds", "2", "--horizon", "3", "--json"]
    )
    assert res.exit_code == 0, res.stderr
    runs = pd.DataFrame(json.loads(res.stdout)["runs"])
    row = runs[(runs["agent"] == str(trained)) & (runs["seed"] == 1)].iloc[0]
    assert row["mean_queue_length"] == ref["mean_queue_length"]


def test_equivariant_model_trained_on_20_servers_runs_on_50_and_1000(trained):
    agent = load_model_agent(str(trained))
    base = {k: v.clone() for k, v in agent.model.policy.state_dict().items()}
    for L, horizon in ((50, 1.0), (1000, 0.05)):
        env = make_env(
            "ec2", num_servers=L, horizon=horizon, action_mode="head", skip_trivial=True, invalid_action="raise"
        )
        obs, _ = env.reset(seed=0)
        agent.reset(env, seed=0)
        assert agent.policy.observation_space["free"].shape == (L, 3) and agent.policy.action_space.n == L + 1
        sd = agent.policy.state_dict()
        assert sd.keys() == base.keys() and all(th.equal(sd[k], base[k]) for k in base)  # the same weights
        started = 0
        for _ in range(400):
            action, _ = agent.predict(obs)
            assert obs["action_mask"][action] == 1
            started += action < L
            obs, _, term, trunc, _ = env.step(action)  # invalid_action="raise"
            if term or trunc:
                break
        assert started > 0, f"the policy started no job on {L} servers"


def test_mlp_policy_refuses_other_cluster_sizes_with_a_clear_error(tmp_path):
    path = train(
        "bf-trap",
        "ppo",
        timesteps=128,
        n_envs=1,
        policy="mlp",
        out=tmp_path,
        verbose=False,
        horizon=3.0,
        num_servers=4,
        **{"algo.n_steps": 64, "algo.batch_size": 32, "algo.n_epochs": 1},
    )
    agent = load_model_agent(str(path))
    r = run_episode(resolve_scenario("bf-trap", num_servers=4), agent, seed=0, horizon=3.0)  # the trained size
    assert r["arrivals"] > 0
    with pytest.raises(ConfigError, match="mlp policy was trained on observations of shape"):
        run_episode(resolve_scenario("bf-trap", num_servers=5), agent, seed=0, horizon=3.0)


@pytest.mark.parametrize("algo", ["dqn", "a2c"])
def test_dqn_and_a2c_mlp_models_act_validly_when_reloaded(tmp_path, algo):
    extra = {"algo.learning_starts": 50, "algo.buffer_size": 1000} if algo == "dqn" else {"algo.n_steps": 16}
    path = train(
        "bf-trap",
        algo,
        timesteps=200,
        n_envs=1,
        policy="mlp",
        out=tmp_path,
        verbose=False,
        horizon=3.0,
        num_servers=4,
        **extra,
    )
    r = run_episode(
        resolve_scenario("bf-trap", num_servers=4), load_model_agent(str(path)), seed=0, horizon=3.0
    )  # env raises on invalid actions
    assert r["arrivals"] > 0 and r["agent"]


# ============================================================== the train CLI, resume, bad input
def test_train_cli_smoke_with_two_envs_and_resume(tmp_path):
    out = tmp_path / "run"
    sets = [
        "--set",
        "horizon=3",
        "--set",
        "num_servers=4",
        "--set",
        "algo.n_steps=64",
        "--set",
        "algo.batch_size=64",
        "--set",
        "algo.n_epochs=1",
    ]
    res = runner.invoke(
        app,
        [
            "train",
            "bf-trap",
            "--algo",
            "maskable-ppo",
            "--timesteps",
            "256",
            "--envs",
            "2",
            "--out",
            str(out),
            "--no-progress",
            *sets,
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads((out / "model.json").read_text())["timesteps"] == 256
    resume = ["train", "bf-trap", "--algo", "maskable-ppo", "--timesteps", "512", "--out", str(out), "--resume"]
    # another number of envs is another run: refused, naming the recorded one
    res = runner.invoke(app, [*resume, str(out), "--envs", "1", "--no-progress", *sets])
    assert res.exit_code == 2 and "n_envs 2, not 1" in " ".join(res.stderr.split())
    # the finished run extended from its final model, kept as the checkpoint of its step
    res = runner.invoke(app, [*resume, str(out), "--envs", "2", "--no-progress", *sets])
    assert res.exit_code == 0, res.output
    meta = json.loads((out / "model.json").read_text())
    assert meta["timesteps"] == 512 and meta["resumed_from"] == str(out / "checkpoints" / "rl_model_256_steps.zip")
    r = run_episode("bf-trap", load_model_agent(str(out / "model.zip")), seed=0, horizon=3.0)
    assert r["arrivals"] > 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--algo", "sac"], "got 'sac'"),
        (["--algo", "dqn", "--policy", "equivariant"], "dqn trains the mlp policy only"),
        (["--algo", "dqn", "--policy", "mlp", "--set", "action_mode=command"], "'command' mode"),
        (["--algo", "ppo", "--policy", "gnn"], "got 'gnn'"),
        (["--algo", "ppo", "--set", "nope=1"], "nope"),
        (["--algo", "ppo", "--set", "policy.depth=3"], "policy.depth"),
        (["--algo", "ppo", "--resume", "/nonexistent/ckpt.zip"], "no such checkpoint"),
    ],
)
def test_train_cli_bad_input_exits_2_naming_the_problem(tmp_path, args, message):
    res = runner.invoke(
        app, ["train", "bf-trap", "--timesteps", "64", "--envs", "1", "--out", str(tmp_path), "--no-progress", *args]
    )
    assert res.exit_code == 2, res.output
    assert message in res.stderr


def test_missing_model_file_is_a_clear_error():
    with pytest.raises(ConfigError, match="no such model file"):
        make_agent("/nonexistent/model.zip")
    res = runner.invoke(app, ["run", "ec2", "--agent", "/nonexistent/model.zip"])
    assert res.exit_code == 2 and "no such model file" in res.stderr


# ============================================================== the observation a model was trained on
@pytest.fixture(scope="module")
def preset_and_task_models(tmp_path_factory) -> dict[str, Path]:
    """Two tiny admit-mode models of the same scenario: one trained on the preset ``autoscale-4vm``
    (10 servers: the environment's own observation), one on the suite task ``autoscale-syn4``."""
    tiny = {"algo.n_steps": 128, "algo.batch_size": 64, "algo.n_epochs": 1}
    root = tmp_path_factory.mktemp("obs-models")
    kw = {"timesteps": 128, "n_envs": 1, "verbose": False, "hidden": 16, **tiny}
    return {
        "env": train("autoscale-4vm", out=root / "preset", num_servers=10, horizon=3.0, **kw),
        "task": train("autoscale-syn4", out=root / "task", **kw),
    }


@pytest.mark.parametrize(("trained_on", "run_on"), [("env", "task"), ("task", "env")])
def test_a_model_reads_the_observation_it_was_trained_on_wherever_it_runs(preset_and_task_models, trained_on, run_on):
    """A model trained on a preset and run on a suite task of that preset reads the environment's own
    observation beneath the task's (raw counts, the ``time`` key); one trained on the task and run on
    the preset reads the task's scaling of it: at every step the agent's action is the policy's
    choice on that observation, which differs from the one it would see unadapted."""
    from clustergym.agent_api import make_env_for
    from clustergym.envs.observation import scaled_observation
    from clustergym.learned.model_agent import two_level_argmax
    from clustergym.learned.policies import masked_logits
    from clustergym.suite import find_task

    agent = load_model_agent(str(preset_and_task_models[trained_on]))
    assert agent.meta["observation"] == trained_on
    task = find_task("autoscale-syn4")
    sc = task.scenario()
    env = make_env_for(sc, agent, env_id=task.id) if run_on == "task" else make_env_for(sc, agent)
    obs, _ = env.reset(seed=4)
    agent.reset(env, seed=4)
    assert ("time" in agent.policy.observation_space.spaces) == (trained_on == "env")
    sim = env.unwrapped.sim
    differs = 0
    for _ in range(200):
        raw = env.unwrapped._obs()
        seen = raw if trained_on == "env" else scaled_observation(raw, sim.num_resources, sim.num_types, task.time_unit)
        assert list(seen) == list(agent.policy.observation_space.spaces)
        action = agent.predict(obs)[0]
        mask = seen["action_mask"].astype(bool)
        assert action == two_level_argmax(masked_logits(agent.policy, seen, mask))
        differs += not np.array_equal(seen["running"], obs["running"])
        obs, _, term, trunc, _ = env.step(action)
        if term or trunc:
            break
    assert differs > 50, "the two observations never differed: a trivial check"
    if trained_on == "task":  # a model saved before the time unit was recorded: a clear error, not a guess
        old = load_model_agent(str(preset_and_task_models["task"]))
        del old.meta["observation_time_unit"]
        with pytest.raises(ConfigError, match="observation_time_unit"):
            old.reset(make_env_for(sc, old), seed=0)
