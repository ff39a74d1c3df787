"""The shipped reference scores (clustergym/suite/reference.json): coverage, normalization by
construction, and that they regenerate identically (serially and on worker processes)."""

from __future__ import annotations

import math

import pytest

import clustergym  # noqa: F401
from clustergym.suite import REFERENCE_SEEDS, TASKS, eval_seeds
from clustergym.suite.reference import (
    EXCLUDED,
    build_reference,
    load_reference,
    normalized,
    plan_reference,
    reference_agents,
    summarize_reference,
    summarize_task,
    task_rows,
)

pytestmark = pytest.mark.usefixtures("quiet_warnings")

REF = load_reference()


def test_every_task_has_reference_scores_on_the_evaluation_seeds():
    assert list(REF["tasks"]) == list(TASKS)
    assert REF["seeds"] == eval_seeds(REFERENCE_SEEDS) and len(REF["seeds"]) >= 30
    for name, e in REF["tasks"].items():
        assert e["id"] == TASKS[name].id
        assert "random" in e["agents"] and e["best"] and e["best"] != "random"
        for agent, a in e["agents"].items():
            assert len(a["scores"]) == len(REF["seeds"]) and all(math.isfinite(s) for s in a["scores"]), agent
            assert a["complete"] == len(REF["seeds"]), f"{name}/{agent}: an episode did not reach the window's end"
            assert math.isfinite(a["ci95"])
        assert not e["agents"][e["best"]]["oracle"]
        assert e["best_score"] == max(a["mean"] for n, a in e["agents"].items() if not a["oracle"] and n != "random")
        if e["best_oracle"] is not None:
            assert e["agents"][e["best_oracle"]]["oracle"]
        assert set(EXCLUDED.get(name, {})) <= set(e["skipped"])


def test_normalized_score_of_random_is_0_and_of_the_best_baseline_is_1_by_construction():
    for e in REF["tasks"].values():
        assert normalized(e["agents"]["random"]["mean"], e) == 0.0
        assert normalized(e["agents"][e["best"]]["mean"], e) == 1.0
        if e["best_oracle"] is not None:
            assert normalized(e["agents"][e["best_oracle"]]["mean"], e, oracle=True) == 1.0
            assert normalized(e["agents"]["random"]["mean"], e, oracle=True) == 0.0


def test_baselines_differ_on_every_task():
    """The suite was chosen so that the baselines differ: the best non-oracle baseline beats random
    by more than both intervals."""
    for name, e in REF["tasks"].items():
        rnd, best = e["agents"]["random"], e["agents"][e["best"]]
        assert best["mean"] - best["ci95"] > rnd["mean"] + rnd["ci95"], name


@pytest.mark.parametrize("name,workers", [("rms-trap", 2), ("mris-poisson", 1)])
def test_reference_rows_regenerate_identically(name, workers):
    t = TASKS[name]
    e = REF["tasks"][name]
    agents = list(dict.fromkeys(["random", e["best"], e["best_oracle"] or "random", "first-fit"]))
    seeds = REF["seeds"][:3]
    got = summarize_task(t, task_rows(t, agents, seeds, workers=workers), seeds)
    for agent in agents:
        assert got[agent]["scores"] == e["agents"][agent]["scores"][:3], agent
        assert got[agent]["oracle"] == e["agents"][agent]["oracle"]


def test_reference_agents_are_the_compatible_ones_random_first():
    agents, skipped = reference_agents(TASKS["autoscale-syn4"])
    assert agents[0] == "random" and "best-fit-admit" in agents and "best-fit" in skipped
    assert set(agents) == set(REF["tasks"]["autoscale-syn4"]["agents"])


def test_build_reference_is_its_plan_then_its_summary():
    ref = plan_reference(["rms-trap", "autoscale-syn4"], seeds=1)
    assert list(ref.spans) == ["rms-trap", "autoscale-syn4"] and ref.spans["autoscale-syn4"][1] == len(ref.cells)
    assert [c.agent for c in ref.cells[slice(*ref.spans["autoscale-syn4"])]] == ref.agents["autoscale-syn4"][0]
    doc = build_reference(["autoscale-syn4"], seeds=1, workers=1)
    e = doc["tasks"]["autoscale-syn4"]
    assert e["wall_seconds"] > 0 and doc["seeds"] == REF["seeds"][:1]
    for agent, a in e["agents"].items():
        assert a["scores"] == REF["tasks"]["autoscale-syn4"]["agents"][agent]["scores"][:1], agent
    with pytest.raises(ValueError, match="no row"):  # a task is summarized only with every episode
        summarize_reference(ref, [None] * len(ref.cells), tasks=["autoscale-syn4"])
