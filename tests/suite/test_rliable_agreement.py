"""clustergym's rliable statistics (SciPy's bootstrap) agree with rliable's on fixed arrays.

rliable's numbers come from tests/fixtures/rliable/rliable_fixture.json, written by
tests/fixtures/rliable/make_fixture.py in a throwaway virtualenv (the command is in its docstring):
rliable does not import beside this project's pandas, so it is never a dependency.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from clustergym.suite.aggregate import (
    aggregate,
    median_of_means,
    optimality_gap,
    performance_profile,
    probability_of_improvement,
    probability_of_improvement_interval,
)
from clustergym.suite.aggregate import iqm as iqm_fn

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "rliable" / "rliable_fixture.json").read_text())
ARRAYS = {k: np.asarray(v) for k, v in FIXTURE["arrays"].items()}  # runs x tasks


@pytest.mark.parametrize("method", ["x", "y"])
def test_point_estimates_equal_rliables(method):
    s = ARRAYS[method]
    ours = [float(iqm_fn(s.ravel())), float(s.mean()), float(median_of_means(s)), float(optimality_gap(s))]
    assert ours == pytest.approx(FIXTURE["point"][method], abs=1e-9)
    agg = aggregate(list(s.T))  # one sample of runs per task
    assert [agg[k] for k in FIXTURE["aggregates"]] == pytest.approx(FIXTURE["point"][method], abs=1e-9)


@pytest.mark.parametrize("method", ["x", "y"])
def test_stratified_bootstrap_intervals_agree_with_rliables(method):
    """Two bootstraps with different generators: the ends agree to a few percent of the interval's width."""
    agg = aggregate(list(ARRAYS[method].T), resamples=4000)
    low, high = FIXTURE["ci"][method]
    for i, k in enumerate(FIXTURE["aggregates"]):
        width = high[i] - low[i]
        assert agg[f"{k}_low"] == pytest.approx(low[i], abs=0.1 * width + 1e-3), k
        assert agg[f"{k}_high"] == pytest.approx(high[i], abs=0.1 * width + 1e-3), k


def test_probability_of_improvement_agrees_with_rliables():
    x, y = list(ARRAYS["x"].T), list(ARRAYS["y"].T)
    assert probability_of_improvement(x, y) == pytest.approx(FIXTURE["probability_of_improvement"]["point"], abs=1e-12)
    ours = probability_of_improvement_interval(x, y, resamples=4000)
    low, high = FIXTURE["probability_of_improvement"]["ci"]
    assert ours["low"] == pytest.approx(low, abs=0.04) and ours["high"] == pytest.approx(high, abs=0.04)


@pytest.mark.parametrize("method", ["x", "y"])
def test_performance_profile_equals_rliables(method):
    taus = np.asarray(FIXTURE["taus"])
    ours = performance_profile(list(ARRAYS[method].T), taus)
    assert ours == pytest.approx(FIXTURE["profile"][method], abs=1e-12)
