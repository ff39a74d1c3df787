"""The suite's bounds: U*_L (auto-scaling, finite L) and the no-wait bound (MRIS weighted flow time).

Each bound is checked against an optimum computed exactly on a tiny instance (an MDP with free
repacking; every order of a one-machine schedule), against the trivial bound, and against what every
registered baseline scored on the shipped reference seeds (a wrong bound would sit below some of them).
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

import clustergym.suite as suite_pkg
from clustergym.agent_api import make_agent, make_env_for
from clustergym.scenarios.presets.autoscale import autoscale_4vm, autoscale_intro
from clustergym.suite.scoring import evaluate
from clustergym.suite.tasks import task
from clustergym.theory.autoscale import (
    erlang_b,
    finite_bound_per_server,
    loss_system_mean,
    lp_bound_per_server,
    max_per_server,
    score_bound,
    space_of,
)
from clustergym.theory.mris import no_wait_bound, released_jobs
from clustergym.theory.mris import score_bound as mris_bound

REFERENCES = {
    "validation": Path(suite_pkg.__file__).parent / "reference.json",
    "test": Path(suite_pkg.__file__).parent / "reference_test.json",
}


# ------------------------------------------------------------------ auto-scaling: U*_L
def test_erlang_b_known_values():
    assert erlang_b(1, 1.0) == pytest.approx(0.5)
    assert erlang_b(2, 2.0) == pytest.approx(0.4)
    assert erlang_b(0, 3.0) == 1.0
    assert erlang_b(180, 180.0) == pytest.approx(0.0572, abs=1e-4)


def test_loss_mean_is_exact_from_empty_and_below_the_stationary_mean():
    # M/M/1/1 from empty: P(busy at t) = a/(1+a) (1 - e^{-(1+a) t}); the time average over [0, T] in closed form
    a, T = 2.0, 3.0
    exact = a / (1 + a) * (1 - (1 - math.exp(-(1 + a) * T)) / ((1 + a) * T))
    assert loss_system_mean(1, a, 0.0, T) == pytest.approx(exact, rel=1e-9)
    stationary = loss_system_mean(1, a)
    assert stationary == pytest.approx(a / (1 + a)) and exact < stationary
    # the large-c form (pointwise min of the infinite-server and stationary means) is above the exact transient
    for c, a in [(5, 4.0), (150, 140.0)]:
        assert loss_system_mean(c, a, 0.0, 5.0) <= loss_system_mean(c, a) + 1e-12
        m = min(a * (1 - math.exp(-5.0)), loss_system_mean(c, a))
        assert loss_system_mean(c, a, 4.0, 5.0) <= m + 1e-9


def _optimal_reward_rate(scenario, iters: int = 4000) -> float:
    """The best long-run reward rate of ANY admission policy with free repacking (relative value
    iteration on the counts of jobs per type that L servers can hold): at least every real policy's."""
    space = space_of(scenario)
    L = scenario.num_servers
    configs = [tuple(int(v) for v in k) for k in space.configs]
    packable = {tuple(np.sum(c, axis=0)) for c in itertools.combinations_with_replacement(configs, L)}
    states = sorted(packable)
    idx = {s: i for i, s in enumerate(states)}
    lam = np.asarray(scenario.source.arrival_rates(), dtype=np.float64)
    u = np.array([float(v) for v in space.rewards])
    J = len(lam)
    unif = lam.sum() + max(sum(s) for s in states)
    h = np.zeros(len(states))
    gain = 0.0
    for _ in range(iters):
        new = np.empty_like(h)
        for i, s in enumerate(states):
            v = float(u @ np.array(s))
            stay = unif
            for j in range(J):
                up = tuple(s[k] + (k == j) for k in range(J))
                v += lam[j] * max(h[i], h[idx[up]] if up in idx else -np.inf)
                stay -= lam[j] + s[j]
                if s[j]:
                    v += s[j] * h[idx[tuple(s[k] - (k == j) for k in range(J))]]
            new[i] = (v + stay * h[i]) / unif
        gain = (new[0] - h[0]) * unif
        h = new - new[0]
    return gain


@pytest.mark.parametrize("variant, L", [("a", 2), ("b", 1)])
def test_finite_bound_is_above_the_exact_optimum_and_below_u_star(variant, L):
    sc = autoscale_intro(variant, num_servers=L)
    opt = _optimal_reward_rate(sc) / L
    bound = finite_bound_per_server(sc)
    assert opt <= bound + 1e-6
    assert bound <= lp_bound_per_server(sc) + 1e-9
    # the finite size binds here: the (6,6) VM fits once per server, so U*_L is strictly below U*
    assert bound < lp_bound_per_server(sc) - 0.1


def test_syn4_at_180_servers_is_below_0_97_of_u_star():
    sc = autoscale_4vm(num_servers=180)
    assert max_per_server(space_of(sc)) == (40, 10, 10, 1)
    ratio = finite_bound_per_server(sc) / lp_bound_per_server(sc)
    assert ratio == pytest.approx(0.9526, abs=1e-4) and ratio < 0.97
    # over the docs' window [10, 25] the bound is no larger
    assert finite_bound_per_server(sc, (10.0, 25.0)) <= finite_bound_per_server(sc) + 1e-9


@pytest.mark.parametrize("split", ["validation", "test"])
def test_every_baseline_scores_below_u_star_l_on_autoscale_syn4(split):
    entry = json.loads(REFERENCES[split].read_text())["tasks"]["autoscale-syn4"]
    b = score_bound(task("autoscale-syn4").scenario())
    assert b["name"] == "U*_L" and b["score"] < 12_360.0  # U* = 1236 per server, 10 servers
    for agent, v in entry["agents"].items():
        scores = np.asarray(v["scores"])
        assert scores.mean() + 2 * scores.std() / math.sqrt(len(scores)) <= b["score"], agent


# ------------------------------------------------------------------ MRIS: the no-wait bound
def _single_machine_optimum(r, p, w, H) -> float:
    """min over every order of ∫_0^H Σ w_j 1[j in system] dt on one machine that runs one job at a time
    (every job's demand above half the machine); for a fixed order starting each job as early as
    possible is optimal, so the minimum over orders is the optimum."""
    best = math.inf
    for order in itertools.permutations(range(len(r))):
        t, total = 0.0, 0.0
        for j in order:
            t = max(t, r[j]) + p[j]
            total += w[j] * max(0.0, min(t, H) - r[j])
        best = min(best, total)
    return best


def test_no_wait_bound_is_below_the_exact_optimum_and_tight_without_overlap():
    rng = np.random.default_rng(3)
    for _ in range(20):
        r = np.sort(rng.uniform(0, 3, 5))
        p, w = rng.lognormal(0, 1, 5), rng.choice([1.0, 2.0], 5)
        H = 4.0
        lb = no_wait_bound(r, p, w, 0.0, H)
        assert 0.0 <= lb <= _single_machine_optimum(r, p, w, H) + 1e-12
    r, p, w = np.array([0.0, 2.0, 5.0]), np.array([1.5, 2.0, 1.0]), np.array([1.0, 2.0, 1.0])
    assert no_wait_bound(r, p, w, 0.0, 5.5) == pytest.approx(_single_machine_optimum(r, p, w, 5.5))
    assert no_wait_bound(r, p, w, 0.0, 5.5) == pytest.approx(1.5 + 4.0 + 0.5)


@pytest.mark.parametrize("split", ["validation", "test"])
def test_every_baseline_scores_below_the_no_wait_bound_on_every_seed(split):
    ref = json.loads(REFERENCES[split].read_text())
    b = mris_bound(task("mris-poisson").scenario(), ref["seeds"])
    bound = np.asarray(b["scores"])
    assert b["name"] == "no-wait" and np.all(bound < 0)
    for agent, v in ref["tasks"]["mris-poisson"]["agents"].items():
        assert np.all(np.asarray(v["scores"]) <= bound + 1e-9), agent


def test_released_jobs_are_the_episodes_jobs():
    # the jobs the bound is computed from are those the task's environment releases on the same seed
    t = task("mris-poisson")
    sc = t.scenario()
    env = make_env_for(sc, make_agent("pq"), env_id=t.id)
    env.reset(seed=123)
    sim = env.unwrapped.sim
    for _ in range(200):
        env.step(0)
    n = sim.jobs.size
    rel, work, weight = released_jobs(sc, 123)
    assert n > 50 and rel.max() < t.horizon
    for got, want in [(sim.jobs.arrival, rel), (sim.jobs.work, work), (sim.jobs.weight, weight)]:
        assert np.array_equal(got[:n], want[:n])
    # and an episode run now scores below its seed's bound
    res = evaluate(["pq-wsjf"], tasks=["mris-poisson"], seeds=2, workers=1, split="test")
    got_scores = {int(r["seed"]): float(r["score"]) for r in res["rows"]}
    b = mris_bound(sc, sorted(got_scores))
    assert all(got_scores[s] <= bound for s, bound in zip(sorted(got_scores), b["scores"]))


def test_expected_bound_is_the_mean_of_the_seeds_bounds():
    sc = task("mris-poisson").scenario()
    expected = mris_bound(sc)["score"]
    per_seed = mris_bound(sc, range(100))["scores"]
    assert expected == pytest.approx(np.mean(per_seed), abs=3 * np.std(per_seed) / 10)


def test_compare_reports_the_ratio_to_u_star_l():
    from typer.testing import CliRunner

    from clustergym.cli import app

    args = ["compare", "autoscale-intro", "--set", "num_servers=2", "--set", "horizon=4", "--warmup", "1"]
    res = CliRunner().invoke(app, [*args, "--agents", "best-fit-admit,random", "--seeds", "2", "--workers", "1"])
    assert res.exit_code == 0, res.output
    assert "U*_L = 4.58898" in res.output and "ratio to U*_L" in res.output
    # the window's bound [1, 4] from empty is below the stationary one (4.8 per server)
    sc = autoscale_intro("a", num_servers=2, horizon=4.0)
    assert finite_bound_per_server(sc, (1.0, 4.0)) < finite_bound_per_server(sc)
