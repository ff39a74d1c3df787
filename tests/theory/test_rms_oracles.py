"""Oracles: exact laws the kernel must reproduce through the environment.

* RMS paper §V, Definition 2 and Lemma 1: the fixed-weight RMS chain (Poisson clocks, dummy jobs,
  replacement with probability 1 - exp(-w_j) at a departure) has the product-form
  stationary law phi^w.  Driven here through ``ClusterEnv`` with Poisson ticks
  and DUMMY commands; compared with :func:`clustergym.theory.rms.product_form_law`.
* RMS paper §VII-A, eqs. 2-3: the EC2 capacity point (V on the boundary of C).
* Little's law between the reported mean queue length and mean wait.
* RMS paper §III, Proposition 1: no work-conserving greedy rule ever starts a type-2 job.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from clustergym.core.commands import Command, EventKind
from clustergym.core.simulator import EpochConfig
from clustergym.envs import ClusterEnv
from clustergym.runner import run_episode
from clustergym.scenarios import Scenario, make_preset
from clustergym.scenarios.presets.rms import EC2_SERVER, EC2_TYPES
from clustergym.theory.rms import boundary_point, capacity_scale, product_form_law
from clustergym.workloads import Deterministic, Exponential, PoissonTypedSource, ReplaySource

SIZES = np.array([[2.0], [5.0]])
R_TICK = np.array([1.0, 2.0])
W = np.array([0.5, 1.0])


def _rms_bar_occupancy(num_servers: int, service, horizon: float, seed: int) -> dict[tuple[int, ...], float]:
    """Run RMS-bar (Definition 2, RMS paper §V) through the env; return the time fraction
    spent in each joint configuration (tuple of per-server (k_1, k_2))."""
    source = PoissonTypedSource([0.0, 0.0], SIZES, service)  # lambda = 0: every placement is a dummy
    sc = Scenario(
        name="rms-bar",
        capacity=np.full((num_servers, 1), 10.0),
        source=source,
        resources=("units",),
        horizon=horizon,
        epochs=EpochConfig(arrivals=False, completions=False, dummy_completions=True, tick_rate=float(R_TICK.sum())),
    )
    env = ClusterEnv(sc, action_mode="command", skip_trivial=False, invalid_action="raise", observe=False)
    view = env.view
    rng = np.random.default_rng(seed + 1000)
    env.reset(seed=seed)
    occupancy: dict[tuple[int, ...], float] = {}
    config = tuple(view.count_dummy.ravel().tolist())
    t_prev = 0.0
    p_type = R_TICK / R_TICK.sum()
    while True:
        t = view.now
        occupancy[config] = occupancy.get(config, 0.0) + (t - t_prev)
        t_prev = t
        ev = view.event
        if ev.kind == EventKind.TICK:  # clock of type j ticks at rate r_j: sample a server uniformly
            j = int(rng.choice(2, p=p_type))
            server = int(rng.integers(num_servers))
            if view.fits_type(j)[server]:
                env.step(Command.dummy(j, server))
        elif ev.kind == EventKind.COMPLETION and rng.random() < 1.0 - math.exp(-W[ev.type]):
            env.step(Command.dummy(ev.type, ev.server))  # replaced by a job of the same type
        config = tuple(view.count_dummy.ravel().tolist())
        _, _, terminated, truncated, _ = env.step(Command.wait())
        if terminated or truncated:
            occupancy[config] = occupancy.get(config, 0.0) + (view.now - t_prev)
            break
    total = sum(occupancy.values())
    assert total == pytest.approx(horizon)
    return {k: v / total for k, v in occupancy.items()}


def _exact(num_servers: int) -> dict[tuple[int, int], float]:
    configs, probs = product_form_law(SIZES, np.array([10.0]), R_TICK, np.ones(2), W, num_servers)
    return {tuple(int(x) for x in k): float(p) for k, p in zip(configs, probs)}


def _marginal(occ: dict[tuple[int, ...], float], server: int) -> dict[tuple[int, int], float]:
    out: dict[tuple[int, int], float] = {}
    for k, p in occ.items():
        key = (k[2 * server], k[2 * server + 1])
        out[key] = out.get(key, 0.0) + p
    return out


def _tv(p: dict, q: dict) -> float:
    keys = set(p) | set(q)
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in keys)


def test_lemma1_product_form_single_server():
    exact = _exact(1)
    assert exact[(0, 2)] == pytest.approx(
        0.35413, abs=5e-5
    )  # eq. (9) by hand: sizes (2, 5), capacity 10, r = (1, 2), w = (0.5, 1)
    emp = _marginal(_rms_bar_occupancy(1, Exponential(1.0), horizon=30_000.0, seed=1), 0)
    assert set(emp) <= set(exact), "a configuration outside K was visited"
    assert _tv(emp, exact) < 0.02
    for j, expected in ((0, 0.76893), (1, 1.23038)):
        assert sum(k[j] * p for k, p in emp.items()) == pytest.approx(expected, abs=0.03)


def test_lemma1_product_form_two_servers_factorises():
    exact = _exact(2)  # per-server marginal with r_j / L
    occ = _rms_bar_occupancy(2, Exponential(1.0), horizon=20_000.0, seed=2)
    for server in (0, 1):
        assert _tv(_marginal(occ, server), exact) < 0.03
    # independence across servers: the joint law is the product of the marginals
    joint_exact = {a + b: exact[a] * exact[b] for a in exact for b in exact}
    assert _tv(occ, joint_exact) < 0.05


def test_lemma1_insensitivity_deterministic_service():
    """Section IX: the law depends on the service distribution only through its mean."""
    emp = _marginal(_rms_bar_occupancy(1, Deterministic(1.0), horizon=30_000.0, seed=3), 0)
    assert _tv(emp, _exact(1)) < 0.03


def test_ec2_capacity_point():
    cap = np.tile(EC2_SERVER, (20, 1))
    v = boundary_point(EC2_TYPES, cap)
    np.testing.assert_allclose(v, [40 / 3, 220 / 3, 40 / 3], rtol=1e-12)
    assert capacity_scale(v, EC2_TYPES, cap) == pytest.approx(1.0, abs=1e-9)
    sc = make_preset("ec2", zeta=0.9)
    np.testing.assert_allclose(sc.source.arrival_rates(), 0.9 * v, rtol=1e-12)


def test_littles_law_queue_length_vs_wait():
    r = run_episode("ec2", "best-fit", seed=3, horizon=600.0)
    assert not r["unstable"] and r["queued_at_end"] < 20
    lam = r["arrivals"] / r["sim_time"]
    assert r["mean_queue_length"] == pytest.approx(lam * r["mean_wait"], rel=0.03)


def _prop1_scenario(horizon: float, seed: int = 0) -> tuple[Scenario, int]:
    """The proof of Proposition 1 (RMS paper §III) with k = 2, a = 5, b = 4: size-1/3 jobs every 4 time units lasting 5; size-1 jobs at
    integer times t >= 1 with probability 0.05, lasting 1; one unit server."""
    rng = np.random.default_rng(seed)
    t1 = np.arange(0.0, horizon, 4.0)
    t2 = np.arange(1.0, horizon).astype(float)
    t2 = t2[rng.random(t2.size) < 0.05]
    time = np.concatenate([t1, t2])
    typ = np.concatenate([np.zeros(t1.size, int), np.ones(t2.size, int)])
    demand = np.where(typ == 0, 1.0 / 3.0, 1.0)[:, None]
    work = np.where(typ == 0, 5.0, 1.0)
    source = ReplaySource(time, demand, work, type=typ, type_demand=[[1.0 / 3.0], [1.0]])
    sc = Scenario(name="prop1", capacity=np.ones((1, 1)), source=source, resources=("units",), horizon=horizon)
    return sc, int(t2.size)


@pytest.mark.parametrize("agent", ["first-fit", "best-fit", "random-fit"])
@pytest.mark.parametrize("select_job", ["largest", "fifo", "random"])
def test_proposition1_greedy_starves_large_jobs(agent, select_job, run_stepping):
    from clustergym.agent_api import make_agent

    horizon = 4000.0
    sc, a2 = _prop1_scenario(horizon)
    starts_type2 = []

    def watch(env):
        starts_type2.append(int(env.sim.cluster.count_real[0, 1]))

    env = run_stepping(sc, make_agent(agent, select_job=select_job), watch)
    r = env.metrics()
    assert max(starts_type2) == 0, "a type-2 job started"
    assert r["queued_at_end"] == a2  # Q_2(T) = A_2(T) exactly
    assert r["mean_queue_length_by_type"][0] == 0.0  # Q_1(t) = 0 at all times (zero integral)
