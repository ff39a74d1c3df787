"""RMS family, MaxWeight reconstructions and the RMS paper's oracles (Lemma 1, Proposition 1, Fig. 1b, eqs. 4-5).

Every agent here runs through the environment (``make_env_for`` + commands).
Short, seeded versions of the reproduction claims; the full-length ones are
``clustergym reproduce rms-*`` (clustergym/reproduce/rms.py).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from clustergym.agent_api import list_agents, make_agent, make_env_for
from clustergym.baselines.rms.rms import (
    ad_probabilities,
    replacement_probability,
    rms_weights,
    weight_function,
)
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.errors import ConfigError
from clustergym.reproduce.rms import TrapSetup, trap_scenario
from clustergym.runner import run_episode
from clustergym.scenarios import Scenario, make_preset
from clustergym.scenarios.presets.rms import EC2_SERVER, EC2_TYPES
from clustergym.theory.configurations import enumerate_configurations
from clustergym.theory.rms import Knapsack, knapsack_for, product_form_law
from clustergym.workloads import (
    Exponential,
    PoissonTypedSource,
    PrefixedSource,
    ReplaySource,
)

RMS_NAMES = ["rms", "rms-less-wasteful", "rms-rf", "rms-bf", "rms-ad", "rms-rf-ad", "rms-bf-ad", "rms-rf-ad-plus"]
SIZES = np.array([[2.0], [5.0]])


def drive(scenario, agent, *, seed=0, end_of_epoch=None, on_command=None, validate=False):
    """Run ``agent`` on ``scenario``; call ``end_of_epoch(env, agent)`` before every WAIT and
    ``on_command(env, cmd)`` before every other command.  Returns the env."""
    env = make_env_for(scenario, agent, validate=validate)
    env.reset(seed=seed)
    agent.reset(env, seed=seed)
    while True:
        cmd, _ = agent.predict(None)
        if cmd.kind == Cmd.WAIT:
            if end_of_epoch is not None:
                end_of_epoch(env, agent)
        elif on_command is not None:
            on_command(env, cmd)
        _, _, term, trunc, _ = env.step(cmd)
        if term or trunc:
            return env


# ============================================================================ registry and parameters
def test_every_rms_paper_agent_is_registered_with_its_parameters():
    names = set(list_agents())
    assert set(RMS_NAMES) | {"rms-jsq", "mwr", "mws", "best-fit", "first-fit", "random-fit"} <= names
    a = make_agent("rms")
    assert (a.selection, a.clock, a.less_wasteful, a.speedup, a.b, a.eps) == ("uniform", "fixed", False, 1.0, 0.0, 0.01)
    p = make_agent("rms-rf-ad-plus")
    assert (p.selection, p.clock, p.less_wasteful, p.speedup) == ("rf", "ad", True, 5.0)
    assert make_agent("rms-bf-ad").selection == "bf"
    ep = a.requirements_for(make_preset("ec2")).epochs
    assert (ep.arrivals, ep.completions, ep.dummy_completions, ep.tick_rate) == (True, True, True, 30.0)
    assert p.requirements_for(make_preset("ec2")).epochs.tick_rate == 150.0
    assert make_agent("rms", rates=[1, 2, 3]).requirements.epochs.tick_rate == 6.0
    jsq = make_agent("rms-jsq", rates=[1.0, 1.0, 1.0])
    assert jsq.requirements_for(make_preset("ec2", queueing="local")).epochs.tick_rate == 60.0  # 3 x 20 queues
    assert make_agent("rms-jsq").requirements_for(make_preset("ec2", queueing="local")).epochs.tick_rate == 30.0
    for bad in (
        {"selection": "worst"},
        {"clock": "slow"},
        {"eps": 0},
        {"b": 1},
        {"total_rate": -1},
        {"rates": [0, 0]},
        {"frozen_weights": [-1.0]},
        {"speedup": 0},
    ):
        with pytest.raises(ConfigError, match="agent."):
            make_agent("rms", **bad)
    with pytest.raises(ConfigError, match="agent.rates"):
        make_agent("rms", rates=[1, 2]).requirements_for(make_preset("ec2"))
    with pytest.raises(ConfigError, match="queueing=local"):
        make_env_for(make_preset("ec2"), make_agent("rms-jsq"))
    with pytest.raises(ConfigError, match="rms-jsq"):
        make_env_for(make_preset("ec2", queueing="local"), make_agent("rms"))
    with pytest.raises(ConfigError, match="agent.beta"):
        make_agent("mws", beta=0)
    with pytest.raises(ConfigError, match="agent.refresh"):
        make_agent("mwr", refresh="sometimes")


# ============================================================================ formula checks (eqs. 4-5, §VI)
def test_weights_eq4_and_replacement_probabilities():
    q = np.array([0, 3, 9])
    w = rms_weights(q, eps=0.01, M=5)
    np.testing.assert_allclose(w, [0.00025 * math.log(10), math.log(4), math.log(10)], rtol=1e-12)
    np.testing.assert_allclose(w, [0.000576, 1.386294, 2.302585], atol=1e-6)
    np.testing.assert_allclose(replacement_probability(w), [0.000575, 0.75, 0.9], atol=1e-6)
    # b in (0, 1): f = log(1+x)^(1-b); eq. (5) row by row
    np.testing.assert_allclose(weight_function(np.e - 1, b=0.5), 1.0)
    rows = rms_weights(np.array([[0, 3, 9], [1, 0, 0]]), eps=0.01, M=5)
    np.testing.assert_allclose(rows[0], w)
    np.testing.assert_allclose(rows[1], [math.log(2), 0.00025 * math.log(2), 0.00025 * math.log(2)])
    # empty system: w = 0, a departing job is never replaced
    assert np.all(rms_weights(np.zeros(3), 0.01, 5) == 0) and np.all(replacement_probability(np.zeros(3)) == 0)


def test_ad_probabilities_and_chi_square_of_the_tick_type():
    w = rms_weights(np.array([0, 3, 9]), eps=0.01, M=5)
    p = ad_probabilities(w)
    e = np.array([10.0**0.00025, 4.0, 10.0])  # exp(w) = max(1 + Q_j, (1 + Q_max)^(eps/8M))
    np.testing.assert_allclose(p, e / e.sum(), rtol=1e-9)
    # p = (1.000576, 4, 10) / 15.000576: 0.066702, not the 1/15 = 0.06667 a rounded hand computation gives
    np.testing.assert_allclose(p, [0.066702, 0.266656, 0.666641], atol=1e-6)
    agent = make_agent("rms-ad")
    env = make_env_for(make_preset("ec2"), agent)
    env.reset(seed=0)
    agent.reset(env, seed=11)
    assert agent.M == 5
    n = 100_000
    frozen_q = np.array([0, 3, 9])
    draws = np.bincount([agent.tick_type(frozen_q) for _ in range(n)], minlength=3)
    assert stats.chisquare(draws, n * p).pvalue > 1e-3
    fixed = make_agent("rms", rates=[1.0, 2.0, 7.0])
    fixed.reset(env, seed=5)
    draws = np.bincount([fixed.tick_type(frozen_q) for _ in range(20_000)], minlength=3)
    assert stats.chisquare(draws, 20_000 * np.array([0.1, 0.2, 0.7])).pvalue > 1e-3


def test_empty_system_never_replaces_but_ticks_place_dummies():
    source = PoissonTypedSource([0.0, 0.0], SIZES, Exponential(1.0))
    sc = Scenario(name="idle", capacity=np.full((3, 1), 10.0), source=source, resources=("units",), horizon=200.0)
    agent = make_agent("rms", rates=[1.0, 1.0])
    env = drive(sc, agent, seed=4)
    assert agent.stats["departure_refills"] == 0
    assert agent.stats["dummies"] > 100 and env.sim.n_dummies == agent.stats["dummies"]
    assert env.metrics()["dummy_utilization"][0] > 0


def test_bf_selection_reduces_to_least_residual_in_one_dimension():
    """With one resource and equal capacities the BF score picks the fitting server
    with the least residual capacity; RF picks uniformly among the fitting servers."""
    sizes = [[2.0], [3.0]]
    plan = [(0, 1), (1, 1), (1, 1), (2, 0), (2, 0), (2, 0), (2, 0), (3, 0), (3, 0), (3, 1), (4, 0)]  # (server, type)
    types = np.array([j for _, j in plan])
    pre = ReplaySource(
        np.zeros(types.size), np.array(sizes)[types], np.full(types.size, 1e6), type=types, type_demand=sizes
    )
    sc = Scenario(
        name="bf1d",
        capacity=np.full((5, 1), 10.0),
        resources=("units",),
        horizon=1.0,
        source=PrefixedSource(pre, PoissonTypedSource([0.0, 0.0], sizes, Exponential(1.0))),
    )
    agent = make_agent("rms-bf")
    env = make_env_for(sc, agent)
    env.reset(seed=0)
    agent.reset(env, seed=0)
    for job, (s, _) in enumerate(plan):  # pack the servers at t = 0 through the env
        env.step(Command.wait())
        assert env.view.event.job == job
        env.step(Command.place(job, s))
    assert env.view.load[:, 0].tolist() == [3.0, 6.0, 8.0, 7.0, 2.0]  # residuals 7, 4, 2, 3, 8
    assert agent.select(0) == 2  # size 2: least residual (2)
    assert agent.select(1) == 3  # size 3: server 2 cannot hold it; least residual among the rest (3)
    rf = make_agent("rms-rf")
    rf.reset(env, seed=1)
    assert {rf.select(1) for _ in range(200)} == {0, 1, 3, 4}
    rms = make_agent("rms")
    rms.reset(env, seed=1)
    assert {rms.select(1) for _ in range(200)} == {-1, 0, 1, 3, 4}  # uniform over all L: may waste the tick


# ============================================================================ Lemma 1 with the real agent
def _occupancy(env_factory, agent, seed):
    """Time fraction of each per-server configuration (dummy counts), through the env."""
    env = make_env_for(env_factory, agent)
    env.reset(seed=seed)
    agent.reset(env, seed=seed)
    view = env.view
    occ: dict[tuple[int, ...], float] = {}
    config = tuple(view.count_dummy.ravel().tolist())
    t_prev = 0.0
    while True:
        cmd, _ = agent.predict(None)
        if cmd.kind == Cmd.WAIT:
            config = tuple(view.count_dummy.ravel().tolist())
        _, _, term, trunc, _ = env.step(cmd)
        if cmd.kind == Cmd.WAIT or term or trunc:
            occ[config] = occ.get(config, 0.0) + (view.now - t_prev)
            t_prev = view.now
        if term or trunc:
            break
    total = sum(occ.values())
    return {k: v / total for k, v in occ.items()}, env


def _marginal(occ, server, J=2):
    out: dict[tuple[int, ...], float] = {}
    for k, p in occ.items():
        key = tuple(k[J * server : J * server + J])
        out[key] = out.get(key, 0.0) + p
    return out


def _tv(p, q):
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


def _rms_bar_scenario(num_servers, horizon, queueing="central"):
    source = PoissonTypedSource([0.0, 0.0], SIZES, Exponential(1.0))  # lambda = 0: every placement is a dummy
    return Scenario(
        name="rms-bar",
        capacity=np.full((num_servers, 1), 10.0),
        source=source,
        resources=("units",),
        horizon=horizon,
        queueing=queueing,
    )


def test_lemma1_product_form_with_the_rms_agent_at_frozen_weights():
    """Lemma 1 (§V): RMS-bar (Definition 2) = the real RMS agent with w frozen at (0.5, 1.0), r = (1, 2), lambda = 0."""
    configs, probs = product_form_law(SIZES, [10.0], [1.0, 2.0], [1.0, 1.0], [0.5, 1.0], 1)
    exact = {tuple(int(x) for x in k): float(p) for k, p in zip(configs, probs)}
    agent = make_agent("rms", rates=[1.0, 2.0], frozen_weights=[0.5, 1.0])
    occ, env = _occupancy(_rms_bar_scenario(1, 25_000.0), agent, seed=1)
    emp = _marginal(occ, 0)
    assert set(emp) <= set(exact), "a configuration outside K was visited"
    assert _tv(emp, exact) < 0.025
    for j, expected in ((0, 0.76893), (1, 1.23038)):
        assert sum(k[j] * p for k, p in emp.items()) == pytest.approx(expected, abs=0.03)
    assert env.sim.n_started == 0  # no real job: every placement was a dummy


def test_lemma1_eq14_rms_jsq_per_server_law_at_frozen_weights():
    """Eq. (14): with per-queue clocks r_j^l there is no 1/L; servers are independent."""
    configs, probs = product_form_law(SIZES, [10.0], [0.5, 1.0], [1.0, 1.0], [0.5, 1.0], 1)
    exact = {tuple(int(x) for x in k): float(p) for k, p in zip(configs, probs)}
    agent = make_agent("rms-jsq", rates=[0.5, 1.0], frozen_weights=[0.5, 1.0])
    occ, _ = _occupancy(_rms_bar_scenario(2, 12_000.0, queueing="local"), agent, seed=2)
    for s in (0, 1):
        assert _tv(_marginal(occ, s), exact) < 0.035


# ============================================================================ Fig. 1b trap (§III)
def test_fig1b_trap_best_fit_stays_in_configuration_2_1():
    """Fig. 1b (§III) from the trap state: from all servers in (2,1) with Q = (1000, 1000), work-conserving Best-Fit
    (largest-job refill) keeps every server in (2,1) while both queues are non-empty, so the
    queue grows by ~(0.8 + 0.4) per time unit: total ΔQ over T = 2000 is 2400 ± 5 x 350."""
    T = 2000.0
    sc, plan, n_prefix = trap_scenario(T)
    agent = TrapSetup(make_agent("best-fit"), plan, n_prefix)
    broken = []
    q_start = []

    def check(env, _agent):
        v = env.view
        if not agent.handed_over:  # the state the setup built, at t = 0
            q_start[:] = [v.queued_by_type.copy()]
            return
        q = v.queued_by_type
        if q[0] > 0 and q[1] > 0 and not np.all(v.count_real == [2, 1]):
            broken.append((v.now, v.count_real.copy()))

    env = drive(sc, agent, seed=0, end_of_epoch=check)
    assert q_start[0].tolist() == [1000, 1000]
    assert not broken, f"a server left configuration (2,1) at t={broken[0][0]:g}"
    dq = env.view.queued_by_type - q_start[0]
    assert 2400 - 5 * 350 < dq.sum() < 2400 + 5 * 350
    assert dq[0] > 0 and dq[1] > 0


def test_fig1b_rms_from_empty_stays_bounded_short():
    """Fig. 1b (§III), RMS side, shortened to T = 1000: RMS (uniform, eps = 0.05, r_j = 50) from empty on the
    Fig. 1b setting keeps the total queue below 2000.  Only the bound is asserted
    here: on this instance RMS's queue climbs for the first ~10^3 time units and then fluctuates
    at a few hundred on a slow time scale (3 seeds at T = 2500: quarter means 90-410, one seed's last
    quarter > 3 x its second), so the levelling criterion (last-quarter mean < 3 x the second
    quarter's) needs the full horizon 2 x 10^4 (`clustergym reproduce rms-fig1b`)."""
    T = 1000.0
    agent = make_agent("rms", rates=[50.0, 50.0], eps=0.05)
    env = drive(make_preset("bf-trap", horizon=T), agent, seed=0)
    _, q = env.sim.trace.arrays()
    assert q.max() < 2000
    assert env.view.num_queued < 1000
    assert env.sim.n_started > 0.95 * env.sim.n_arrivals


# ============================================================================ invariants
@pytest.mark.parametrize("name", ["rms-less-wasteful", "rms-rf-ad-plus"])
def test_remark2_invariant_no_dummy_of_a_waiting_type(name):
    agent = make_agent(name)
    seen = {"epochs": 0, "replaced": 0}

    def check(env, _a):
        v = env.view
        seen["epochs"] += 1
        for j in range(v.num_types):
            if v.queued_by_type[j] > 0:
                assert v.count_dummy[:, j].sum() == 0, f"type {j} waits while a type-{j} dummy runs"

    def count(env, cmd):
        seen["replaced"] += cmd.kind == Cmd.REPLACE

    drive(make_preset("ec2", zeta=0.95, horizon=60.0), agent, seed=2, end_of_epoch=check, on_command=count)
    assert seen["replaced"] > 10 and seen["epochs"] > 1000


def test_remark3_invariant_per_server_with_agent_routing():
    agent = make_agent("rms-jsq", less_wasteful=True, total_rate=60.0)
    sc = dataclasses.replace(make_preset("ec2", zeta=0.9, horizon=60.0, queueing="local"), routing="agent")
    routes = []

    def check(env, _a):
        v = env.view
        bad = (v.local_count > 0) & (v.count_dummy > 0)
        assert not bad.any(), "a server holds a dummy of a type waiting in its own queue"

    def on_cmd(env, cmd):
        if cmd.kind == Cmd.ROUTE:
            j = env.view.job_type(cmd.job)
            q = env.view.local_count[:, j]
            assert q[cmd.server] == q.min()  # JSQ: a minimiser
            routes.append(cmd.server)

    drive(sc, agent, seed=1, end_of_epoch=check, on_command=on_cmd, validate=False)
    assert len(set(routes)) == 20


def test_jsq_ties_are_uniform_and_favour_servers_with_a_dummy():
    sc = _rms_bar_scenario(5, 1.0, queueing="local")
    agent = make_agent("rms-jsq")
    env = make_env_for(sc, agent)
    env.reset(seed=0)
    agent.reset(env, seed=3)
    n = 20_000
    draws = np.bincount([agent.jsq_route(0) for _ in range(n)], minlength=5)
    assert stats.chisquare(draws).pvalue > 1e-3  # all queues empty: uniform over the 5 servers
    env.step(Command.dummy(0, 3))  # server 3 holds a type-0 dummy
    agent.less_wasteful = True
    assert {agent.jsq_route(0) for _ in range(50)} == {3}


def test_departure_placement_reuses_the_departing_type_and_server():
    """Algorithm 1 (§IV-A): a placement at a departure is of the departing job's type,
    on its server; ticks place on a sampled server only."""
    agent = make_agent("rms")
    counts = {"completion": 0, "tick": 0}

    def on_cmd(env, cmd):
        v = env.view
        ev = v.event
        assert ev.kind in (EventKind.COMPLETION, EventKind.TICK), f"{cmd} at a {ev.kind.name} epoch"
        if ev.kind == EventKind.COMPLETION:
            counts["completion"] += 1
            assert cmd.server == ev.server
            j = cmd.type if cmd.kind == Cmd.DUMMY else v.job_type(cmd.job)
            assert j == ev.type
        else:
            counts["tick"] += 1

    drive(make_preset("ec2", zeta=0.9, horizon=30.0), agent, seed=3, on_command=on_cmd)
    assert counts["completion"] > 500 and counts["tick"] > 20


# ============================================================================ outside C (accounting), C12
@pytest.mark.parametrize("name", ["rms", "rms-rf-ad-plus", "mwr", "mws", "best-fit"])
def test_outside_capacity_region_every_policy_grows(name):
    """Outside the capacity region no policy is stable (shortened to L = 5, T = 600): at zeta = 1.1 the total queue must grow at
    >= sum(lambda) - 5 L = 2.5 per time unit on average; the slope over the second half is asserted
    >= 2.5 - 1.3 (the slope's noise sd is about 0.43 here: 3 sd)."""
    T = 600.0
    env = drive(make_preset("ec2", zeta=1.1, num_servers=5, horizon=T), make_agent(name), seed=5)
    t, q = env.sim.trace.arrays()
    half = q[t >= T / 2][0]
    slope = (env.view.num_queued - half) / (T / 2)
    assert slope >= 2.5 - 1.3


def test_throughput_does_not_depend_on_the_clock_rate():
    """C12 (Theorem 1 and §IV-A: throughput does not depend on the clock rates; shortened: L = 5, zeta = 0.8, T = 600): the same jobs start whatever the
    clock rate (within the final backlog), while the queue shrinks as the clock speeds up."""
    sc = make_preset("ec2", zeta=0.8, num_servers=5, horizon=600.0)
    out = {}
    for r in (1.0, 10.0, 40.0):
        res = run_episode(sc, make_agent("rms", rates=[r] * 3), seed=7)
        out[r] = res
    arrivals = out[1.0]["arrivals"]
    assert all(o["arrivals"] == arrivals for o in out.values())  # common random numbers
    for o in out.values():
        assert o["started"] / arrivals > 0.97
    assert out[40.0]["mean_queue_length"] < out[10.0]["mean_queue_length"] < out[1.0]["mean_queue_length"]


# ============================================================================ short Figs. 3 and 5
def test_fig3_fig5_orderings_short():
    """Figs. 3/5 shortened (L = 10, zeta = 0.9, T = 200, 2 seeds, paired): RF and BF improve on RMS,
    AD improves each, RMS-RF-AD+ is the best RMS variant; the greedy Best-Fit is stable here.
    Tolerances: on 5 seeds at this length every single-seed ratio RF/RMS, BF/RMS, RF-AD/RF, BF-AD/BF
    was between 0.5 and 0.72 and AD/RMS between 0.72 and 0.8, so the 20% margins below and the
    plain AD < RMS hold with room; RF vs BF (within noise) is not asserted."""
    sc = make_preset("ec2", zeta=0.9, num_servers=10, horizon=200.0)
    names = ["rms", "rms-rf", "rms-bf", "rms-ad", "rms-rf-ad", "rms-bf-ad", "rms-rf-ad-plus", "best-fit"]
    q = {n: np.mean([run_episode(sc, n, seed=s)["mean_queue_length"] for s in (0, 1)]) for n in names}
    assert q["rms-rf"] < 0.8 * q["rms"] and q["rms-bf"] < 0.8 * q["rms"]
    assert q["rms-rf-ad"] < 0.8 * q["rms-rf"] and q["rms-bf-ad"] < 0.8 * q["rms-bf"]
    assert q["rms-ad"] < q["rms"]
    assert q["rms-rf-ad-plus"] < min(q[n] for n in names[:6])
    assert q["best-fit"] < 10


# ============================================================================ MaxWeight reconstructions
def test_knapsack_exact_matches_brute_force_and_breaks_ties_towards_more_jobs():
    ks = knapsack_for(EC2_TYPES, EC2_SERVER)
    assert ks.method == "enumerate" and ks.exact and ks.configs.shape == (28, 3)
    rng = np.random.default_rng(0)
    for _ in range(200):
        q = rng.integers(0, 30, 3).astype(float)
        k = ks.best(q)
        assert k @ q == pytest.approx((ks.configs @ q).max())
        assert np.all(k @ EC2_TYPES <= EC2_SERVER * (1 + 1e-9))
    assert ks.best(np.array([1.0, 0, 0])).tolist() == [2, 3, 0]
    assert ks.best(np.zeros(3)).tolist() == [0, 0, 0]


def test_knapsack_divisible_shortcut_is_exact_on_power_of_half_sizes():
    sizes = np.array([[2.0**-p] for p in range(10)])  # the Google types, unit servers
    ks = Knapsack(sizes, np.array([1.0]), limit=1000)  # too many to enumerate at this limit
    assert ks.method == "divisible" and ks.exact
    small = sizes[:4]
    ref = enumerate_configurations(small, [1.0])
    ks4 = Knapsack(small, np.array([1.0]), limit=5)
    assert ks4.method == "divisible"
    rng = np.random.default_rng(1)
    for _ in range(100):
        q = rng.integers(0, 50, 4).astype(float)
        assert ks4.best(q) @ q == pytest.approx((ref @ q).max())
    two_d = Knapsack(np.repeat(sizes, 2, axis=1), np.array([1.0, 1.0]), limit=1000)  # cpu = memory = size
    assert two_d.method == "divisible"
    odd = Knapsack(np.array([[0.3], [0.45]]), np.array([1.0]), limit=2)
    assert odd.method == "greedy" and not odd.exact


@pytest.mark.parametrize("name", ["mwr", "mws"])
def test_maxweight_agents_respect_their_targets(name):
    agent = make_agent(name)
    seen = {"epochs": 0}

    def check(env, a):
        v = env.view
        seen["epochs"] += 1
        if name == "mwr":
            over = (v.count_real > a.target) & a.committed[:, None]
            assert not over.any(), "a committed server exceeds its target configuration"
            # after each epoch: a waiting type has no committed server with room for it
            for j in np.flatnonzero(v.queued_by_type):
                assert not np.any(a.committed & (a.target[:, j] > v.count_real[:, j]))
            if v.num_queued:
                assert a.committed.all()
        else:
            assert not np.any(a.stopped & (v.count_real.sum(axis=1) == 0)), "an empty server is stopped"

    drive(make_preset("ec2", zeta=0.9, horizon=50.0), agent, seed=0, end_of_epoch=check)
    assert seen["epochs"] > 1000 and agent.stats["knapsack_solves"] > 0


def test_maxweight_with_local_queues_and_global_refresh_run():
    sc = make_preset("ec2", zeta=0.8, horizon=30.0, queueing="local", routing="power-of-two")
    for name, params in (("mwr", {}), ("mws", {"blackbox": "greedy"}), ("rms-jsq", {})):
        r = run_episode(sc, make_agent(name, **params), seed=0, validate=name == "mws")
        assert r["started"] > 0.5 * r["arrivals"]
    r = run_episode(make_preset("ec2", zeta=0.8, horizon=40.0), make_agent("mwr", refresh="global"), seed=0)
    assert r["started"] > 0


# ============================================================================ the reproduction claims
def test_rms_claims_are_registered_and_prop1_reproduces():
    from clustergym.reproduce import CLAIMS, ReproduceConfig, run_claims

    ids = [
        "rms-prop1",
        "rms-fig1b",
        "rms-fig3",
        "rms-fig4",
        "rms-fig5-bf-stable",
        "rms-fig5-plus-best",
        "rms-fig5-rms-mws",
        "rms-fig5-mwr",
        "rms-fig6",
        "rms-clock-rate",
    ]
    run_claims([])  # imports the claim modules
    assert set(ids) <= set(CLAIMS)
    # Prop. 1 over T = 2000 (deterministic)
    (res,) = run_claims(["rms-prop1"], ReproduceConfig(scale=0.2))
    assert res["passed"] and res["measured"]["type2_arrivals"] > 50
    assert res["measured"]["best-fit/largest"]["size1_running_max"] == 0


# ---------------------------------------------------------------------- Fig. 8 (C11), short version
def _google_or_skip():
    from clustergym.traces import traces_available

    if not traces_available():
        pytest.skip("the real traces were not found (set CLUSTERGYM_TRACES): the Fig. 8 check replays the Google slice")


@pytest.fixture(scope="module")
def fig8_short():
    """The first 1000 tasks of the Google slice at 1/alpha = 1.5 on the paper's 1000 unit servers."""
    _google_or_skip()
    from clustergym.reproduce import rms as R

    agents = ("rms", "rms-rf-ad", "rms-rf-ad-plus", "mwr", "mws")
    return R.fig8_results(1000, (1.5,), servers=(1000,), agents=agents), R


def test_fig8_short_same_arrivals_and_adaptive_rms_ordering(fig8_short):
    res, _ = fig8_short
    runs = {k[0]: v for k, v in res.items()}
    # common random numbers: the trace gives every agent the same 1000 arrivals, all served
    assert {r["arrivals"] for r in runs.values()} == {1000}
    assert all(r["completed"] == 1000 and not r["unstable"] for r in runs.values())
    # the clock is the segment's mean arrival rate (docs/papers/rms.md#parameters), "+" five times faster
    assert runs["rms"]["clock_rate"] == pytest.approx(runs["rms-rf-ad"]["params"]["total_rate"])
    # the adaptive variants improve on basic RMS, and "+" improves further (C4's ordering on the trace)
    assert runs["rms-rf-ad-plus"]["queue"] < runs["rms-rf-ad"]["queue"] < runs["rms"]["queue"]


@pytest.mark.xfail(
    strict=True,
    reason="C11 does not reproduce: at 1000 unit servers the shared slice loads the "
    "servers to about 2%, so MWR and MWS (as reconstructed, docs/papers/rms.md) start "
    "every task on arrival while RMS waits for its clocks (see rms-fig8)",
)
def test_fig8_short_adaptive_rms_beats_mwr_and_mws(fig8_short):
    res, R = fig8_short
    assert R.fig8_verdict(res, 1000, (1.5,))["adaptive beat MWR and MWS at 1/alpha=1.5"]
