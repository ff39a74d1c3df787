"""Observations: keys in the space's order, flattening layouts agree, values inside the space."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.spaces import flatten

from clustergym import make_env


@pytest.mark.parametrize("scenario", ["ec2", "bf-trap", "autoscale-4vm", "mris-lemma41"])
def test_observation_keys_come_in_the_space_order_and_flatten_alike(scenario):
    env = make_env(scenario, horizon=5.0) if scenario != "mris-lemma41" else make_env(scenario)
    obs, _ = env.reset(seed=0)
    space = env.observation_space
    assert list(obs) == list(space.spaces)
    assert list(space.spaces)[0] == "free" and list(space.spaces)[-1] == "action_mask"  # the documented order
    by_values = np.concatenate([np.asarray(v, dtype=np.float32).ravel() for v in obs.values()])
    np.testing.assert_array_equal(flatten(space, obs), by_values)
    assert space.contains(obs)


# ============================================================== pair scores (pair_features=True)
def _pair_oracle(env, job: int) -> dict[str, np.ndarray]:
    """The pair scores of ``job`` recomputed here, server by server, from the cluster's arrays and
    Best-Fit's and First-Fit's definitions (RMS paper §III; ties to the lowest index)."""
    c, jobs = env.unwrapped.sim.cluster, env.unwrapped.sim.jobs
    d = jobs.demand[job]
    L, R = c.load.shape
    score, left = np.zeros(L), np.zeros(L)
    for s in range(L):
        cap = [c.capacity[s, r] if c.capacity[s, r] > 0 else 1.0 for r in range(R)]
        score[s] = sum(d[r] / cap[r] * c.load[s, r] / cap[r] for r in range(R))
        left[s] = min((c.capacity[s, r] - c.load[s, r] - d[r]) / cap[r] for r in range(R))
    return {"score": score, "left": np.clip(left, -1.0, 1.0)}


@pytest.mark.parametrize(
    ("scenario", "mode", "params"),
    [("ec2", "slot", {"zeta": 0.95}), ("bf-trap", "head", {}), ("autoscale-4vm", "admit", {"num_servers": 6})],
)
def test_pair_scores_show_the_fit_and_the_choices_of_best_fit_and_first_fit(scenario, mode, params):
    """``obs["pair_scores"]`` against independent oracles along a random-policy episode: ``fits`` is
    the action mode's mask for that job, ``first_fit_choice`` its first valid server,
    ``best_fit_choice`` the Best-Fit choice of the agents' view (``ClusterView.select_server``, the
    path the Best-Fit agent takes), and the scores are recomputed server by server; rows without a
    job are zero; the other keys are those of the same episode without pair scores."""
    env = make_env(scenario, action_mode=mode, queue_window=4, horizon=5.0, pair_features=True, **params)
    plain = make_env(scenario, action_mode=mode, queue_window=4, horizon=5.0, **params)
    assert "pair_scores" not in plain.observation_space.spaces  # off by default
    obs, _ = env.reset(seed=3)
    obs_plain, _ = plain.reset(seed=3)
    sim = env.unwrapped.sim
    L, K = sim.num_servers, 4
    rng = np.random.default_rng(0)
    checked = {"window": 0, "event": 0, "best_fit_differs_from_first_fit": 0}
    for _ in range(150):
        assert env.observation_space.contains(obs)
        assert obs["pair_scores"].shape == (K + 1, L, 5)
        for k in obs_plain:  # the other keys are the plain observation's
            np.testing.assert_array_equal(obs[k], obs_plain[k])
        ps = obs["pair_scores"]
        mask = obs["action_mask"][:-1].astype(bool)
        rows = []
        if mode in ("head", "slot"):
            ids = list(sim.queue)[: (1 if mode == "head" else K)]
            rows = [(k, j, mask[k * L : (k + 1) * L]) for k, j in enumerate(ids)]
            assert not ps[len(list(sim.queue)[:K]) : K].any(), "rows below the queue are zero"
        elif sim.event.job >= 0:
            rows = [(K, sim.event.job, mask[:L])]
        for k, job, fits in rows:
            checked["event" if k == K else "window"] += 1
            np.testing.assert_array_equal(ps[k, :, 0], fits)
            oracle = _pair_oracle(env, job)
            np.testing.assert_allclose(ps[k, :, 4], oracle["left"], atol=1e-6)
            np.testing.assert_allclose(ps[k, :, 1], np.where(fits, oracle["score"], 0.0), rtol=1e-6, atol=1e-7)
            if fits.any():
                bf = env.unwrapped.view.select_server("best-fit", job)
                assert np.flatnonzero(ps[k, :, 2]).tolist() == [bf]
                assert np.flatnonzero(ps[k, :, 3]).tolist() == [int(np.argmax(fits))]
                checked["best_fit_differs_from_first_fit"] += bf != int(np.argmax(fits))
            else:
                assert not ps[k, :, 1:4].any()
        valid = np.flatnonzero(obs["action_mask"])
        a = int(rng.choice(valid))
        obs, _, term, trunc, _ = env.step(a)
        obs_plain, *_ = plain.step(a)
        if term or trunc:
            break
    assert checked["window" if mode != "admit" else "event"] >= 20
    assert checked["best_fit_differs_from_first_fit"] >= 3, "the choices never differed: a weak check"


# ============================================================== pair_features="speed"
def test_speed_pair_score_is_the_views_estimate_for_each_jobs_type():
    """``pair_features="speed"``: the five scores of ``True`` (same values) and a sixth, each window
    job's row the agents' :meth:`ClusterView.speed_estimate` column of its type (zeros below the queue),
    which leaves 1 once completions are seen on a heterogeneous cluster (LoTES)."""
    kw = {"omega": 0.5, "machines_per_config": 1, "load": 0.95, "action_mode": "slot", "queue_window": 8}
    env = make_env("lotes-omega", horizon=3.0, pair_features="speed", **kw)
    five = make_env("lotes-omega", horizon=3.0, pair_features=True, **kw)
    assert env.pair_features == "speed" and five.pair_features is True
    obs, _ = env.reset(seed=2)
    obs5, _ = five.reset(seed=2)
    sim, view = env.unwrapped.sim, env.unwrapped.view
    rng = np.random.default_rng(0)
    moved = 0
    for _ in range(600):
        assert env.observation_space.contains(obs) and obs["pair_scores"].shape == (9, sim.num_servers, 6)
        np.testing.assert_array_equal(obs["pair_scores"][..., :5], obs5["pair_scores"])
        ids = list(sim.queue)[:8]
        rel = view.speed_estimate()
        for k, job in enumerate(ids):
            np.testing.assert_allclose(obs["pair_scores"][k, :, 5], rel[:, sim.jobs.type[job]], rtol=1e-6)
        assert not obs["pair_scores"][len(ids) : 8].any()
        moved += bool(ids) and not np.allclose(obs["pair_scores"][0, :, 5], 1.0)
        a = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, _, term, trunc, _ = env.step(a)
        obs5, *_ = five.step(a)
        if term or trunc:
            break
    assert moved >= 50, "the estimate never left 1: a weak check"


@pytest.mark.parametrize("bad", ["yes", 1, "speeds"])
def test_pair_features_refuses_other_values_by_name(bad):
    from clustergym.errors import ScenarioError

    with pytest.raises(ScenarioError, match="pair_features.*'speed'"):
        make_env("ec2", pair_features=bad)
