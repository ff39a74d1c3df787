"""``experiments/lifetime_information.py``: the rules read what they say (and no durations), and the script prints its table."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from clustergym.agent_api import make_env_for
from clustergym.baselines.mris.bf_exec import BFExec
from clustergym.core.jobs import JobStatus
from clustergym.runner import run_episode
from clustergym.suite import task

SCRIPT = "lifetime_information"
SEED = 1_000_000


@pytest.fixture(scope="module")
def li(experiment_script):
    return experiment_script


def steps(task_name: str, agent, n: int, until=None):
    """Run ``n`` steps (or to the episode's end, or until ``until(sim)``) of ``agent`` on the task's
    reference seed ``SEED``; return the env (unclosed), at the state after its last step."""
    t = task(task_name)
    env = make_env_for(t.scenario(), agent, env_id=t.id)
    env.reset(seed=SEED)
    agent.reset(env, seed=SEED)
    for _ in range(n):
        _, _, term, trunc, _ = env.step(agent.act(None))
        if term or trunc or (until is not None and until(agent.view._sim)):
            break
    return env


def test_estimated_type_means_are_the_censored_estimate_of_the_completions_so_far(li):
    """On ``rms-trap`` (two job types, exponential service): after 1,000 steps each type's mean is
    (its exposure + one pooled mean) / (its completions + 1), recounted job by job from the table;
    the rule asked for no duration, and its scan is sorted by that mean."""
    agent = li.FlavourSJF(means="estimated")
    env = steps("rms-trap", agent, 1000)
    assert not agent.jobs.durations and np.isnan(agent.jobs.work[: agent.jobs.n]).all()
    sim = agent.view._sim
    jobs, now = sim.jobs, sim.now
    rows = np.arange(jobs.base, jobs.size)
    real = ~jobs.dummy[rows]
    done = (jobs.status[rows] == int(JobStatus.COMPLETED)) & real
    run = (jobs.status[rows] == int(JobStatus.RUNNING)) & real
    typ = jobs.type[rows]
    n = np.bincount(typ[done], minlength=2).astype(float)
    e = np.bincount(typ[done], weights=(jobs.end - jobs.start)[rows][done], minlength=2)
    e += np.bincount(typ[run], weights=now - jobs.start[rows][run], minlength=2)
    pooled = e.sum() / n.sum()
    assert n.min() > 50
    np.testing.assert_allclose(agent.type_means(), (e + pooled) / (n + 1.0), rtol=1e-9)
    queued = np.flatnonzero(jobs.status[rows] == int(JobStatus.QUEUED)) + jobs.base
    if queued.size > 1:
        agent.jobs.ensure(queued)
        m = agent.type_means()[[agent.view.job_type(int(j)) for j in agent.order(queued)]]
        assert np.all(np.diff(m) >= 0)
    env.close()


def test_iid_durations_are_drawn_from_the_law_not_read_and_change_bf_exec(li):
    """On ``bfjs-uniform`` the blind ``bf-exec`` never reads a job's duration: its durations are
    geometric draws of the task's mean (20 slots), uncorrelated with the true ones, and its episode
    differs from ``bf-exec``'s."""
    agent = li.blind(BFExec)(durations="iid")
    env = steps("bfjs-uniform", agent, 1500)
    c, sim = agent.jobs, agent.view._sim
    work = c.work[: c.n]
    true = sim.jobs.work[: c.n]
    assert c.n > 300 and np.all(work >= 1) and np.all(work == np.round(work))
    assert 15 < work.mean() < 25 and abs(np.corrcoef(work, true)[0, 1]) < 0.2
    env.close()
    t = task("bfjs-uniform")
    blind = run_episode(t.scenario(), li.blind(BFExec)(durations="iid"), seed=SEED, env_id=t.id)
    oracle = run_episode(t.scenario(), "bf-exec", seed=SEED, env_id=t.id)
    assert blind["mean_queue_length"] != oracle["mean_queue_length"]


def _queued(sim) -> np.ndarray:
    st = sim.jobs.status[sim.jobs.base : sim.jobs.size]
    return np.flatnonzero(st == int(JobStatus.QUEUED)) + sim.jobs.base


@pytest.mark.parametrize("params", [{"largest": True}, {"aging": 0.0}, {"aging": 1.0}])
def test_size_orders_scan_by_their_key_and_place_on_the_best_fit_machine(li, params):
    """On ``bfjs-uniform``, once 5 jobs wait: the scan order is nondecreasing in the key (minus the size
    for largest first, the size less the aged wait otherwise), and each job goes to the fitting
    server with the least room; no duration is read."""
    agent = li.SizeOrderBestFit(**params)
    env = steps("bfjs-uniform", agent, 5000, until=lambda sim: _queued(sim).size >= 5)
    queued = _queued(agent.view._sim)
    assert not agent.jobs.durations and queued.size >= 5
    agent.jobs.ensure(queued)
    order = agent.order(queued)
    key = agent.size_key(order)
    assert sorted(order.tolist()) == sorted(queued.tolist()) and np.all(np.diff(key) >= -1e-9)
    if params.get("largest"):
        assert np.all(np.diff(agent.jobs.u[order]) <= 1e-9)
    job = int(queued[np.argmin(agent.jobs.u[queued])])  # the smallest waiting job
    v = agent.view
    fits = np.all(v.load + agent.jobs.dem_abs[job] <= agent.limit, axis=1)
    got = agent.machine_for(job, fits)
    room = np.linalg.norm(1.0 - v.load / v.capacity, axis=1)
    assert (got == -1) if not fits.any() else (fits[got] and room[got] == pytest.approx(room[fits].min()))
    env.close()


def test_the_script_prints_the_bfjs_rows(li, capsys):
    assert li.main(["--tasks", "bfjs-uniform", "--seeds", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| `")]
    assert [r.split("|")[2].strip() for r in rows] == [r[1] for r in li.RULES if r[0] == "bfjs-uniform"]
    assert len(rows) == 6 and all("`best-fit`" in r for r in rows)


def test_the_rules_cover_both_tasks(li):
    assert {r[0] for r in li.RULES} == {"azure-vms", "bfjs-uniform"}
    assert list(itertools.chain.from_iterable([r[1]] for r in li.RULES)).count("flavour-estimated SJF") == 1
