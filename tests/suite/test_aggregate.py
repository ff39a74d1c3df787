"""IQM and stratified bootstrap intervals (clustergym.suite.aggregate)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clustergym.suite.aggregate import aggregate, iqm


def test_iqm_is_the_mean_of_the_middle_half():
    assert iqm([0, 1, 2, 3, 4, 5, 6, 100]) == pytest.approx(np.mean([2, 3, 4, 5]))
    assert iqm([1.0] * 7) == 1.0


def test_interval_brackets_the_estimate_and_is_reproducible():
    rng = np.random.default_rng(0)
    per_task = [rng.normal(m, 0.2, 30) for m in (0.2, 0.8, 1.0, 1.1, 1.5)]
    a = aggregate(per_task)
    assert a == aggregate(per_task)
    assert a["tasks"] == 5 and a["runs"] == 30
    assert a["iqm_low"] < a["iqm"] < a["iqm_high"]
    assert a["mean_low"] < a["mean"] < a["mean_high"]
    assert a["iqm"] == pytest.approx(iqm(np.concatenate(per_task)))


def test_stratified_resampling_keeps_each_task_in_every_resample():
    """Two tasks whose runs never vary: every stratified resample has the same pooled scores, so
    the interval collapses onto the estimate (an unstratified bootstrap would not)."""
    a = aggregate([[0.0] * 10, [1.0] * 10])
    assert a["mean_low"] == pytest.approx(0.5) and a["mean_high"] == pytest.approx(0.5)


def test_one_run_per_task_gives_no_interval_and_mixed_sizes_work():
    a = aggregate([[0.5], [1.0], [0.8]])
    assert a["iqm"] == pytest.approx(np.mean([0.5, 1.0, 0.8]))  # three values: nothing to trim
    assert math.isnan(a["iqm_low"])
    b = aggregate([[0.5, 0.7], [1.0], [float("nan"), 0.9]])
    assert b["tasks"] == 3 and b["runs"] == 1 and b["mean_low"] <= b["mean"] <= b["mean_high"]
