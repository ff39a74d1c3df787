"""The rms-fig1b claim's Best-Fit trap study (Psychas & Ghaderi 2018, §III, Fig. 1b): time to trap and its rate."""

import pytest


def test_fig1b_best_fit_from_empty_falls_into_the_trap_on_an_early_seed():
    """From an empty system the trap is entered at a random time (the rms-fig1b claim's 16-seed study);
    seed 8 is one of the two seeds that fall in early: every server (2,1), both queues non-empty, from
    t = 577.65 for the 1000 time units that define 'trapped', with the queue growing meanwhile."""
    from clustergym.reproduce.rms import FIG1B_EARLY_SEED, bf_time_to_trap

    r = bf_time_to_trap(FIG1B_EARLY_SEED, 2000.0)
    assert r["trapped_at"] == pytest.approx(577.654, abs=1e-3)
    assert r["t_end"] == pytest.approx(r["trapped_at"] + 1000.0, abs=1.0)  # stopped as soon as trapped
    assert r["queued_at_end"] > 1000 and r["frozen_spells"] >= 1
    # a trap shorter than `hold` does not count: with hold 2000 the same run is censored at the horizon
    late = bf_time_to_trap(FIG1B_EARLY_SEED, 2000.0, hold=2000.0)
    assert late["trapped_at"] is None and late["t_end"] == 2000.0


def test_fig1b_trap_rate_estimate():
    from clustergym.reproduce import rms as R

    mean, lo, hi = R._trap_rate()
    exposure = sum(R.FIG1B_TRAP_TIMES) + (R.FIG1B_STUDY_SEEDS - len(R.FIG1B_TRAP_TIMES)) * R.FIG1B_STUDY_HORIZON
    assert mean == pytest.approx(exposure / len(R.FIG1B_TRAP_TIMES))
    assert 4.5e4 < lo < mean < hi < 3e5 and all(t < R.FIG1B_STUDY_HORIZON for t in R.FIG1B_TRAP_TIMES)
