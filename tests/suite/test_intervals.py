"""The two-level bootstrap's intervals: their coverage, by simulation, not only their formula.

A task is simulated with common random numbers, as the suite's episodes are: each evaluation seed
has its own difficulty (shared by the method's runs and by every baseline, the largest noise), each
run (training seed) its own offset, each episode its own noise.  Evaluation seeds are drawn again
and again; the claims the intervals support are counted.
"""

import numpy as np
import pytest

from clustergym.suite.intervals import aggregate_draws, bootstrap_task, interval

SEEDS, DRAWS, RESAMPLES = 30, 300, 300


def _draw(rng, runs, margin, run_sd):
    """One draw of evaluation seeds: ``(runs x seeds)`` method scores, and random's and the best baseline's."""
    difficulty = rng.normal(0.0, 3.0, SEEDS)  # the seed's arrivals: shared by everyone on that seed
    best = difficulty + rng.normal(0.0, 1.0, SEEDS)
    random = difficulty - 10.0 + rng.normal(0.0, 1.0, SEEDS)
    offsets = rng.normal(0.0, run_sd, runs)  # training seeds: the method's runs differ
    method = difficulty[None, :] + margin + offsets[:, None] + rng.normal(0.0, 1.0, (runs, SEEDS))
    return method, {"random": random, "best": best}


def _claims(runs, margin, run_sd, seed):
    """Over repeated draws: the share of paired intervals above 0, of normalized intervals above 1, and
    of paired intervals covering ``margin``; and of the runs-only interval (seed noise left out) above 0."""
    rng = np.random.default_rng(seed)
    wins = norm_wins = covers = runs_only_wins = 0
    for _ in range(DRAWS):
        method, base = _draw(rng, runs, margin, run_sd)
        d = bootstrap_task(method, base, best="best", resamples=RESAMPLES, rng=rng)
        paired, normalized = interval(d.paired), interval(d.normalized.mean(axis=1))
        wins += paired["low"] > 0
        norm_wins += normalized["low"] > 1
        covers += paired["low"] <= margin <= paired["high"]
        if runs > 1:  # the old protocol: bootstrap the runs' means, all on this one draw of seeds
            means = (method - base["best"]).mean(axis=1)
            boot = means[rng.integers(0, runs, (RESAMPLES, runs))].mean(axis=1)
            runs_only_wins += np.percentile(boot, 2.5) > 0
    return wins / DRAWS, norm_wins / DRAWS, covers / DRAWS, runs_only_wins / DRAWS


@pytest.mark.parametrize(("runs", "run_sd"), [(1, 0.0), (3, 0.3), (5, 0.3)])
def test_equal_to_the_baseline_a_win_is_claimed_in_at_most_about_5_percent_of_draws(runs, run_sd):
    wins, norm_wins, covers, runs_only = _claims(runs, 0.0, run_sd, seed=runs)
    assert wins <= 0.07 and norm_wins <= 0.07, (wins, norm_wins)  # nominal 2.5% one-sided, Monte-Carlo slack
    assert covers >= 0.89, covers
    if runs > 1:
        assert runs_only > 0.1, runs_only  # leaving the shared seed noise out claims wins that are not there


@pytest.mark.parametrize(("runs", "run_sd"), [(1, 0.0), (3, 0.3), (5, 0.3)])
def test_better_by_a_known_margin_the_interval_covers_it_about_95_percent_of_the_time(runs, run_sd):
    _, _, covers, _ = _claims(runs, 0.7, run_sd, seed=100 + runs)
    assert 0.89 <= covers <= 0.995, covers


def test_one_run_resamples_only_the_seeds_and_pairs_the_baselines_seed_by_seed():
    rng = np.random.default_rng(0)
    method, base = _draw(rng, 1, 0.0, 0.0)
    d = bootstrap_task(method, base, best="best", resamples=50, rng=1)
    assert d.run_scores.shape == (51, 1) and d.paired.shape == (51,)
    assert d.paired[0] == pytest.approx(float((method[0] - base["best"]).mean()))
    # the baseline's mean is recomputed on each resample's seeds: the paired difference is a difference of
    # means over the same seeds, the normalized score's 1 is the baseline on that resample
    assert d.normalized[0, 0] == pytest.approx(
        (method.mean() - base["random"].mean()) / (base["best"].mean() - base["random"].mean())
    )
    same = bootstrap_task(base["best"][None, :], base, best="best", resamples=50, rng=1)
    assert np.allclose(same.paired, 0.0) and np.allclose(same.normalized, 1.0)
    assert np.allclose(same.wins["best"], 0.5)  # ties count a half


def test_aggregates_over_tasks_take_each_tasks_draws_side_by_side():
    rng = np.random.default_rng(3)
    draws = [bootstrap_task(*_draw(rng, 3, m, 0.2), best="best", resamples=100, rng=rng) for m in (0.0, 0.5, 1.0)]
    agg = aggregate_draws(draws)
    per_task = np.array([d.normalized[0].mean() for d in draws])
    assert agg["mean"][0] == pytest.approx(per_task.mean()) and agg["median"][0] == pytest.approx(np.median(per_task))
    assert all(v.shape == (101,) for v in agg.values())


def test_mismatched_baseline_seeds_are_refused():
    with pytest.raises(ValueError, match="baseline 'best'"):
        bootstrap_task(np.zeros((2, 5)), {"random": np.zeros(5), "best": np.zeros(4)}, best="best")
