"""``experiments/headroom_rules.py``: the diagnostic rules act as they say, and the script prints its table."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from clustergym.agent_api import make_env_for
from clustergym.runner import run_episode
from clustergym.suite import task

# experiments/headroom_rules.py, loaded by the experiment_script fixture (experiments/conftest.py)
SCRIPT = "headroom_rules"
SEED = 1_000_000


@pytest.fixture(scope="module")
def headroom(experiment_script):
    return experiment_script


def commands(task_name: str, agent):
    """``(command, view)`` for each step of ``agent``'s episode on the task's reference seed ``SEED``,
    the view as the agent saw it when it issued the command (before the step)."""
    t = task(task_name)
    env = make_env_for(t.scenario(), agent, env_id=t.id)
    env.reset(seed=SEED)
    agent.reset(env, seed=SEED)
    done = False
    while not done:
        cmd = agent.act(None)
        yield cmd, agent.view
        _, _, term, trunc, _ = env.step(cmd)
        done = term or trunc


def test_reservation_of_zero_servers_is_best_fit_admit_and_four_rejects_more(headroom):
    t = task("autoscale-syn4")
    row = lambda agent: run_episode(t.scenario(), agent, seed=SEED, env_id=t.id)  # noqa: E731
    bfa = row("best-fit-admit")
    none = row(headroom.LargeVMReservation(k=0))
    four = row(headroom.LargeVMReservation(k=4))
    assert none["return"] == bfa["return"] and none["rejected"] == bfa["rejected"]
    assert four["rejected"] > bfa["rejected"]


def test_type_segregation_never_mixes_while_a_pure_server_fits(headroom):
    """At every placement, when some server that fits the job holds only jobs of its type or nothing,
    the chosen server is such a server."""
    checked = 0
    for cmd, v in commands("rms-trap", headroom.TypeSegregation()):
        if cmd.server >= 0 and cmd.job >= 0:
            counts = v.count_real
            jt = v.job_type(cmd.job)
            fits = np.flatnonzero(v.fits(cmd.job))
            pure = [s for s in fits if counts[s].sum() == counts[s, jt]]
            if pure:
                assert cmd.server in pure
                checked += 1
    assert checked > 500


def test_pq_best_fit_machine_starts_pq_s_jobs_on_the_fullest_machine(headroom):
    """The same scan as ``pq`` (its first command at the first epoch with a choice of machines is the
    same job), on the machine with the least normalised room left; ``pq`` itself keeps first fit."""
    from clustergym.agent_api import make_agent

    agent = headroom.PriorityQueueBestFit()
    pq = make_agent("pq")
    compared = 0
    for cmd, v in commands("mris-poisson", agent):
        if compared == 50:
            break
        if cmd.job >= 0 and cmd.server >= 0:
            cap = v.capacity
            room = np.linalg.norm(1.0 - v.load / cap, axis=1)
            fits = np.flatnonzero(np.all(v.load + agent.jobs.dem_abs[cmd.job] <= agent.limit, axis=1))
            assert cmd.server in fits and room[cmd.server] == pytest.approx(room[fits].min())
            assert pq.machine_for(cmd.job, np.isin(np.arange(len(cap)), fits)) == fits[0]
            compared += 1
    assert compared == 50


def test_pq_power_key_is_pq_at_exponent_one_and_sorts_by_its_key(headroom):
    """Exponent 1 is WSJF: the same episode as ``pq``.  At 0.8 the scan order is by ``p ** 0.8 / w``
    (nondecreasing), which is not WSJF's order on this seed's jobs."""
    t = task("mris-poisson")
    row = lambda agent: run_episode(t.scenario(), agent, seed=SEED, env_id=t.id)  # noqa: E731
    assert row(headroom.PriorityQueuePower(exponent=1.0))["return"] == row("pq")["return"]
    agent = headroom.PriorityQueuePower(exponent=0.8)
    for _ in itertools.islice(commands("mris-poisson", agent), 500):  # release a few hundred jobs
        pass
    c = agent.jobs
    ids = np.flatnonzero(np.isfinite(c.work))  # the released jobs (the others' work is not known yet)
    assert ids.size > 100
    order = agent.order(ids)
    key = c.work[order] ** 0.8 / c.weight[order]
    assert sorted(order.tolist()) == ids.tolist()
    assert np.all(np.diff(key) >= -1e-9 * np.abs(key[1:]))
    wsjf = c.work[order] / c.weight[order]
    assert np.any(np.diff(wsjf) < 0)  # another order than pq's


def test_fastest_machine_places_each_job_where_its_class_runs_fastest(headroom):
    """Every placement is on a fitting machine whose speed for the job's class is the highest among
    the machines the job fits."""
    placed, slower_exists = 0, 0
    for cmd, v in commands("lotes-hetero", headroom.FastestMachine()):
        if cmd.server >= 0 and cmd.job >= 0:
            fits = np.flatnonzero(v.fits(cmd.job))
            speed = v.speed[:, v.job_type(cmd.job)]
            assert cmd.server in fits and speed[cmd.server] == speed[fits].max()
            slower_exists += bool(speed[fits].min() < speed[cmd.server])
            placed += 1
    assert placed > 500 and slower_exists > 100  # the choice mattered


def test_the_script_prints_one_row_per_rule(headroom, capsys):
    assert headroom.main(["--seeds", "2"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| `")]
    names = [r.split("|")[2].strip() for r in rows]
    assert names == [
        "type-segregation",
        "large-vm-reservation",
        "pq-best-fit-machine",
        "pq p^0.8/w",
        "random-fit scan=1",
        "random-fit scan=8",
        "random-fit scan=64",
        "fastest-machine scan=64",
        "fastest-machine",
        "fastest-estimated scan=32",
        "fastest-estimated",
    ]
    from clustergym.agent_api import AGENTS

    assert not set(names) & set(AGENTS)  # registered for the run only: the registry is left as it was
