"""``experiments/packing_search.py``: the rules order and place as they say, read no durations, and the
script searches its grid on the validation split and scores only the best rule on the test split."""

from __future__ import annotations

import numpy as np
import pytest

from clustergym.agent_api import AGENTS, make_env_for
from clustergym.core.jobs import JobStatus
from clustergym.suite import task

SCRIPT = "packing_search"
SEED = 1_000_000


@pytest.fixture(scope="module")
def ps(experiment_script):
    return experiment_script


def _queued(sim) -> np.ndarray:
    st = sim.jobs.status[sim.jobs.base : sim.jobs.size]
    return np.flatnonzero(st == int(JobStatus.QUEUED)) + sim.jobs.base


def _with_a_queue(agent, k: int = 5):
    """The agent's env on ``bfjs-uniform``'s seed ``SEED`` once ``k`` jobs wait."""
    t = task("bfjs-uniform")
    env = make_env_for(t.scenario(), agent, env_id=t.id)
    env.reset(seed=SEED)
    agent.reset(env, seed=SEED)
    for _ in range(5000):
        _, _, term, trunc, _ = env.step(agent.act(None))
        if term or trunc or _queued(agent.view._sim).size >= k:
            break
    return env


@pytest.mark.parametrize(("a", "b"), [(1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (0.5, 0.3)])
def test_the_scan_is_in_the_keys_order(ps, a, b):
    """The queue is scanned by ``a x size - b x wait / 20`` (the task's mean service), ties by arrival:
    smallest first, largest first, first come first served, and a mix; no duration is read."""
    agent = ps.ScoredPacking(a=a, b=b)
    env = _with_a_queue(agent)
    queued = _queued(agent.view._sim)
    assert queued.size >= 5 and not agent.jobs.durations
    agent.jobs.ensure(queued)
    order = agent.order(queued)
    u, arrival, now = agent.jobs.u[order], agent.jobs.arrival[order], agent.view.now
    assert sorted(order.tolist()) == sorted(queued.tolist())
    assert np.all(np.diff(a * u - b * (now - arrival) / 20.0) >= -1e-9)
    if (a, b) == (0.0, 1.0):
        assert np.all(np.diff(arrival) >= 0)  # first come, first served
    env.close()


@pytest.mark.parametrize("machine", ["best", "first", "worst"])
def test_the_machine_is_the_tightest_the_first_or_the_loosest_that_fits(ps, machine):
    """Among the machines a job fits: ``best`` takes the one with the least room (``bf-exec``'s rule, one
    resource), ``first`` the lowest index, ``worst`` the most room."""
    agent = ps.ScoredPacking(machine=machine)
    env = _with_a_queue(agent, k=1)
    v, queued = agent.view, _queued(agent.view._sim)
    agent.jobs.ensure(queued)
    job = int(queued[np.argmin(agent.jobs.u[queued])])
    left = (v.capacity - v.load).sum(axis=1)
    if machine == "best":  # bf-exec's rule tests the fit itself
        real = np.all(v.load + agent.jobs.dem_abs[job] <= agent.limit, axis=1)
        got = agent.machine_for(job, real)
        assert got == -1 if not real.any() else real[got] and left[got] == pytest.approx(left[real].min())
    else:
        fits = np.arange(left.size) % 2 == 1  # a set of machines to choose among
        got = agent.machine_for(job, fits)
        assert got == (1 if machine == "first" else int(np.flatnonzero(fits)[np.argmax(left[fits])]))
    env.close()


def test_the_script_searches_on_validation_and_scores_only_its_best_on_test(ps, capsys, monkeypatch):
    seen = []
    score = ps.score_rule

    def spy(a, b, machine, seeds, split, task="bfjs-uniform"):
        seen.append((a, b, machine, split))
        return score(a, b, machine, seeds, split, task)

    monkeypatch.setattr(ps, "score_rule", spy)
    monkeypatch.setattr(ps, "SIZE_WEIGHTS", (-1.0, 0.0))
    monkeypatch.setattr(ps, "AGE_WEIGHTS", (1.0,))
    monkeypatch.setattr(ps, "MACHINES", ("best", "first"))
    assert ps.main(["--seeds", "1", "--workers", "1", "--test"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| a=")]
    assert len(rows) == 5  # four rules on validation, the best of them once on test
    assert sorted(s[:3] for s in seen if s[3] == "validation") == sorted(
        [(-1.0, 1.0, "best"), (-1.0, 1.0, "first"), (0.0, 1.0, "best"), (0.0, 1.0, "first")]
    )
    tested = [s for s in seen if s[3] == "test"]
    assert len(tested) == 1 and rows[4].split("|")[1] == rows[0].split("|")[1]  # the validation's first row
    assert not any(name.startswith("a=") for name in AGENTS)  # nothing left registered


def test_the_selected_rule_is_a_teacher_by_import_path(ps, monkeypatch):
    """``packing_search:selected`` (round 11's pick) builds by the agent API's import path, reads no
    durations, and is largest first aged 0.1 on the tightest machine."""
    import sys
    from pathlib import Path

    from clustergym.agent_api import make_agent

    monkeypatch.syspath_prepend(str(Path(ps.__file__).parent))
    monkeypatch.delitem(sys.modules, "packing_search", raising=False)
    agent = make_agent("packing_search:selected")
    assert (agent.a, agent.b, agent.machine) == (-1.0, 0.1, "best") and not agent.needs_durations


def test_the_unit_of_waiting_is_the_tasks_time_unit(ps):
    """The key's wait is counted in the task's time unit: ``bfjs-uniform``'s 20 slots (its mean service,
    which the rule reads when no unit is given, as a teacher) and ``azure-vms``'s hour."""
    assert ps.age_unit("bfjs-uniform") == 20.0 == task("bfjs-uniform").scenario().params["mean_service"]
    assert ps.age_unit("azure-vms") == 3600.0  # the task's declaration: no trace is read
    given = ps.ScoredPacking(a=0.0, b=1.0, unit=40.0)
    env = _with_a_queue(given)
    queued = _queued(given.view._sim)
    given.jobs.ensure(queued)
    wait = given.view.now - given.jobs.arrival[queued]
    assert np.array_equal(given.key_of(queued), -wait / 40.0)
    env.close()
