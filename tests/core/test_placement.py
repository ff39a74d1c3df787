"""The kernel's placement index and the env's incremental observations give today's answers.

* Random cluster states (Hypothesis): ``PlacementIndex.select`` for every rule equals the
  reference scan ``scan_select`` (``baselines.greedy.select_server``) over ``Cluster.fits_free``,
  and its fit sets and counts equal the scan's, for the per-type engine (demands equal to a
  type's row) and the continuous engine (any other demand).  States are built through the
  cluster's own update methods, with exact ties (servers with identical loads), demands that
  exactly fill a server, and loads at the edge of the fit tolerance (the largest load that
  still fits under ``FIT_RTOL`` and the next double above it).  Block sizes from 1 up, so
  block boundaries fall everywhere.
* Whole runs: every golden case (``tests/test_golden.py``) with the index forced on at any
  cluster size and blocks of 3 servers reproduces the golden figures exactly.
* The env: after random action sequences the incrementally kept observation (``free``,
  ``running``, ``dummies``) and the action mask equal the ones computed from scratch; a
  caller that changes a returned observation does not change the next one, and a later step
  does not change an observation handed out before.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clustergym.core.cluster as cluster_mod
import clustergym.core.placement as placement_mod
from clustergym.baselines.greedy import select_server
from clustergym.core.cluster import FIT_RTOL, Cluster
from clustergym.core.placement import RULES, PlacementIndex, scan_select
from clustergym.core.scores import argbest_rows

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow], "max_examples": 60}
RULE_LIST = list(RULES)


# ============================================================================ random states


@st.composite
def cluster_states(draw):
    """A cluster and the operations that built its state, with ties and tolerance edges."""
    L = draw(st.integers(1, 24))
    R = draw(st.integers(1, 3))
    J = draw(st.integers(1, 4))
    grid = st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 0.1, 0.2, 0.3, 1 / 3])
    hetero = draw(st.booleans())
    base_cap = np.array([draw(st.sampled_from([1.0, 2.0, 4.0, 10.0, 0.0 if r else 1.0])) for r in range(R)])
    cap = np.tile(base_cap, (L, 1))
    if hetero:
        for s in range(L):
            if draw(st.booleans()):
                cap[s] = [draw(st.sampled_from([0.5, 1.0, 3.0, 10.0])) for _ in range(R)]
    D = np.array([[draw(grid) for _ in range(R)] for _ in range(J)])
    block = draw(st.integers(1, 9))
    c = Cluster(cap, D, index_min_servers=0)
    idx = PlacementIndex(c, block=block)
    c.placement = idx
    idx.sync()
    idx._py_rows = draw(st.booleans())  # changed servers recomputed in Python floats, or by NumPy
    limit = c._limit
    # initial loads: several kinds, each added as one pseudo-job through add_real
    ops: list[tuple[int, np.ndarray]] = []
    for s in range(L):
        kind = draw(st.sampled_from(["zero", "grid", "fill", "edge-in", "edge-out", "copy", "type"]))
        j = draw(st.integers(0, J - 1))
        if kind == "zero":
            continue
        if kind == "grid":
            load = np.array([draw(grid) for _ in range(R)])
        elif kind == "fill":  # the type-j demand exactly fills the server (where it can)
            load = np.maximum(cap[s] - D[j], 0.0)
        elif kind in ("edge-in", "edge-out"):
            # the largest load x with fl(x + d) <= limit, and the next double above it
            load = np.array([_largest_fitting(D[j, r], limit[s, r]) for r in range(R)])
            if kind == "edge-out":
                load = np.nextafter(load, np.inf)
        elif kind == "copy" and ops:  # the same load as an earlier server: exact score ties
            load = ops[draw(st.integers(0, len(ops) - 1))][1].copy()
        else:
            load = D[j] * draw(st.integers(1, 3))
        if np.all(load <= limit[s]):
            ops.append((s, load))
    return c, idx, ops, D, draw(st.integers(0, 2**31 - 1)), draw(st.lists(st.integers(0, 10**6), max_size=12))


def _largest_fitting(d: float, limit: float) -> float:
    """The largest double x >= 0 with fl(x + d) <= limit (0 if none): bisection on the bit patterns."""
    if not 0.0 + d <= limit:
        return 0.0
    lo = 0  # bits of 0.0: fits
    hi = int(np.array(limit, dtype=np.float64).view(np.int64)) + 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if float(np.array(mid, dtype=np.int64).view(np.float64)) + d <= limit:
            lo = mid
        else:
            hi = mid
    return float(np.array(lo, dtype=np.int64).view(np.float64))


def _check_all(c: Cluster, idx: PlacementIndex, D: np.ndarray, seed: int, extra: list[np.ndarray]) -> None:
    for j in range(D.shape[0]):
        d = D[j]
        fits = c.fits_free(d)
        assert np.array_equal(idx.fit_mask(j, d), fits)
        assert idx.count(j, d) == int(fits.sum())
        assert idx.any_fit(j, d) == bool(fits.any())
        for rule in RULE_LIST:
            want = scan_select(rule, fits, d, c.load, c.capacity, np.random.default_rng(seed))
            got = idx.select(rule, j, d, np.random.default_rng(seed))
            assert got == want, (rule, j, got, want)
    for d in extra:  # the continuous engine (a demand that is no type's row)
        fits = c.fits_free(d)
        assert np.array_equal(idx.fit_mask(0, d), fits)
        assert idx.count(0, d) == int(fits.sum())
        assert idx.any_fit(0, d) == bool(fits.any())
        for rule in RULE_LIST:
            want = scan_select(rule, fits, d, c.load, c.capacity, np.random.default_rng(seed))
            got = idx.select(rule, 0, d, np.random.default_rng(seed))
            assert got == want, ("continuous", rule, d.tolist(), got, want)


def _extra_demands(c: Cluster, D: np.ndarray, picks: list[int]) -> list[np.ndarray]:
    """Demands for the continuous engine: complements of current loads (exact fills), halves, zero."""
    L, R = c.load.shape
    out = [np.zeros(R)]
    for p in picks:
        s = p % L
        kind = (p // L) % 3
        if kind == 0:
            d = np.maximum(c.capacity[s] - c.load[s], 0.0)  # exactly fills server s
        elif kind == 1:
            d = D[p % D.shape[0]] * 0.5 + 1e-3
        else:
            d = np.nextafter(np.maximum(c._limit[s] - c.load[s], 0.0), np.inf)  # just too big for s
        if not any(np.array_equal(d, row) for row in D):
            out.append(d)
    return out


@settings(**SETTINGS)
@given(cluster_states())
def test_index_equals_scan_on_random_states(state) -> None:
    c, idx, ops, D, seed, picks = state
    _check_all(c, idx, D, seed, [])  # empty cluster: first use builds everything
    for s, load in ops:
        c.add_real(s, 0, load)
    _check_all(c, idx, D, seed, _extra_demands(c, D, picks))
    # incremental updates: remove some pseudo-jobs, add type demands where they fit, check again
    rng = np.random.default_rng(seed)
    for k, (s, load) in enumerate(ops):
        if rng.random() < 0.5:
            c.remove_real(s, 0, load, False)
            if k % 3 == 0:
                _check_all(c, idx, D, seed + k, [])
        j = int(rng.integers(D.shape[0]))
        if c.fits_free_at(s, D[j]):
            c.add_real(s, j, D[j])
        if rng.random() < 0.3:
            c.add_dummy(s, j) if c.fits_free_at(s, D[j]) else None
    _check_all(c, idx, D, seed, _extra_demands(c, D, picks))


@settings(**SETTINGS)
@given(cluster_states())
def test_cluster_select_with_slots_and_threshold(state) -> None:
    """``Cluster.select``: reservation slots fall back to the scan; the index and the scan agree."""
    c, _, ops, D, seed, _ = state
    for s, load in ops:
        c.add_real(s, 0, load)
    scan = Cluster(c.capacity, D, index_min_servers=10**9)  # the same state, never indexed
    for s, load in ops:
        scan.add_real(s, 0, load)
    for j in range(D.shape[0]):
        if c.fits_free_at(0, D[j]):
            c.add_slot(0, j)
            scan.add_slot(0, j)
            break
    for j in range(D.shape[0]):
        for free_only in (False, True):
            for rule in RULE_LIST:
                a = c.select(rule, j, D[j], np.random.default_rng(seed), free_only=free_only)
                b = scan.select(rule, j, D[j], np.random.default_rng(seed), free_only=free_only)
                fits = c.fits_free(D[j]) if free_only else c.fits(j, D[j])
                want = select_server(rule, fits, D[j], c.load, c.capacity, np.random.default_rng(seed))
                assert a == b == want
            assert np.array_equal(c.fit_mask(j, D[j], free_only=free_only), scan.fit_mask(j, D[j], free_only=free_only))
            assert c.any_fit(j, D[j], free_only=free_only) == scan.any_fit(j, D[j], free_only=free_only)
    # every type at once (the pair scores of the observation): the same fits, and Best-Fit's choice row by row
    types = np.arange(D.shape[0])
    rows = c.fit_rows(types, D)
    assert np.array_equal(rows, np.stack([c.fits(j, D[j]) for j in types]))
    cap = np.where(c.capacity > 0, c.capacity, 1.0)
    scores = ((D[:, None, :] / cap[None]) * (c.load / cap)[None]).sum(axis=2)
    want = [select_server("best-fit", rows[j], D[j], c.load, c.capacity, None) for j in types]
    assert argbest_rows(scores, rows).tolist() == want


def test_journal_overflow_and_reset_rebuild() -> None:
    cap = np.tile([4.0, 4.0], (50, 1))
    D = np.array([[1.0, 0.5], [0.25, 2.0]])
    c = Cluster(cap, D, index_min_servers=0)
    c._jmax = 16
    idx = c.placement
    rng = np.random.default_rng(1)
    for step in range(400):
        s, j = int(rng.integers(50)), int(rng.integers(2))
        if c.count_real[s, j] and rng.random() < 0.4:
            c.remove_real(s, j, D[j], False)
        elif c.fits_free_at(s, D[j]):
            c.add_real(s, j, D[j])
        if step % 37 == 0:  # sometimes the journal overflowed in between: a full rebuild
            for jj in range(2):
                assert idx.select("best-fit", jj, D[jj]) == select_server(
                    "best-fit", c.fits_free(D[jj]), D[jj], c.load, c.capacity, None
                )
    c.reset()
    assert all(idx.select("first-fit", j, D[j]) == 0 for j in range(2))
    assert c.servers_without_real == 50


# ============================================================================ whole runs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the golden figures
import test_golden as golden_mod  # noqa: E402


@pytest.fixture()
def forced_index(monkeypatch):
    """The placement index and incremental observations at every cluster size, 3 servers per block."""
    import clustergym.envs.observation as observation_mod

    monkeypatch.setattr(cluster_mod, "INDEX_MIN_SERVERS", 0)
    monkeypatch.setattr(observation_mod, "INCREMENTAL_MIN_SERVERS", 0)
    monkeypatch.setattr(placement_mod, "block_size", lambda L: 3)


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(golden_mod.GOLDEN.read_text())


#: the golden runs of the agents that ask the kernel for a server (the others never query the index)
INDEXED_CASES = [
    c
    for c in golden_mod.RUN_CASES
    if c[2] in ("best-fit", "first-fit", "random-fit", "best-fit-admit", "lotes-greedy") or c[2].startswith("rms")
]


@pytest.mark.parametrize("case", INDEXED_CASES, ids=lambda c: f"{c[0]}-{c[2]}{'-' + str(c[3]) if c[3] else ''}")
def test_golden_runs_with_index_forced(golden, forced_index, case) -> None:
    from clustergym.core import accel

    preset, params, agent, ap, seeds, horizon = case
    with accel.forced(False):
        for s in seeds:
            key = golden_mod._key(preset, params, agent, ap, s, horizon)
            golden_mod._assert_same(
                key, golden_mod.run_case(preset, params, agent, ap, s, horizon), golden["runs"][key]
            )


@pytest.mark.parametrize("case", golden_mod.ENV_CASES, ids=lambda c: f"{c[0]}{'-' + str(c[1]) if c[1] else ''}")
def test_golden_env_trajectories_with_index_forced(golden, forced_index, case) -> None:
    preset, kw, steps = case
    key = f"{preset}{json.dumps(kw, sort_keys=True)}|{steps}"
    golden_mod._assert_same(key, golden_mod.env_case(preset, kw, steps), golden["envs"][key])


@pytest.mark.parametrize("agent", ["best-fit", "first-fit", "random-fit", "rms-bf", "rms-rf"])
def test_large_cluster_index_and_scan_agree(agent, monkeypatch) -> None:
    """At a size where the index is on by default, a run equals the same run with the scan."""
    from clustergym.runner import run_episode
    from clustergym.scenarios import make_preset

    assert cluster_mod.INDEX_MIN_SERVERS <= 800
    sc = make_preset("ec2", num_servers=800, horizon=0.6)
    a = run_episode(sc, agent, seed=3)
    monkeypatch.setattr(cluster_mod, "INDEX_MIN_SERVERS", 10**9)
    b = run_episode(sc, agent, seed=3)
    a.pop("wall_seconds"), b.pop("wall_seconds")
    assert a == b


def test_fast_path_leaves_a_consistent_index(forced_index) -> None:
    from clustergym.agent_api import make_agent, make_env_for
    from clustergym.core import accel
    from clustergym.scenarios import make_preset

    if not accel.available():
        pytest.skip("numba is not installed")
    sc = make_preset("ec2", num_servers=12, horizon=5.0)
    agent = make_agent("best-fit", scan=8)
    env = make_env_for(sc, agent)
    env.reset(seed=0)
    agent.reset(env, seed=0)
    with accel.forced(True):
        assert agent.run_fast(env) is not None
    c = env.sim.cluster
    assert c.servers_without_real == int((c.count_real.sum(axis=1) == 0).sum())
    for j in range(c.num_types):
        d = c.type_demand[j]
        assert c.select("best-fit", j, d) == select_server("best-fit", c.fits(j, d), d, c.load, c.capacity, None)


# ============================================================================ the env


def _reference_obs(env) -> dict[str, np.ndarray]:
    """The per-server features and the mask, computed from scratch."""
    sim = env.sim
    c = sim.cluster
    cap = np.where(c.capacity > 0, c.capacity, 1.0)
    free = np.clip(1.0 - c.load / cap, 0.0, 1.0).astype(np.float32)
    mode = env.mode
    mask = np.zeros(mode.mask_size, dtype=bool)
    mask[-1] = True
    if env.action_mode in ("head", "admit"):
        job = mode.job()
        if job >= 0:
            mask[:-1] = c.fits(int(sim.jobs.type[job]), sim.jobs.demand[job])
    elif env.action_mode == "slot":
        win = mode.window()
        for k, job in enumerate(win):
            mask[k * c.num_servers : (k + 1) * c.num_servers] = c.fits(int(sim.jobs.type[job]), sim.jobs.demand[job])
    else:  # the command mode's factorised mask, as it was computed with passes over the servers
        from clustergym.core.commands import Cmd

        mask = np.zeros(mode.mask_size, dtype=bool)
        nk = len(Cmd)
        mask[Cmd.WAIT] = True
        mask[nk:] = True
        if sim.queueing == "loss":
            mask[Cmd.ADMIT] = mask[Cmd.REJECT] = sim.pending >= 0
        elif sim.queue or sim.local_count.any():
            mask[Cmd.PLACE] = mask[Cmd.REJECT] = True
            mask[Cmd.ROUTE] = sim.queueing == "local" and bool(sim.queue)
            mask[Cmd.REPLACE] = bool(c.count_dummy.any())
        if sim.types.exact:
            mask[Cmd.DUMMY] = mask[Cmd.RESERVE] = True
            mask[Cmd.RELEASE] = bool(c.any_slots)
    return {
        "free": free,
        "running": c.count_real.astype(np.float32),
        "dummies": (c.count_dummy + c.slots).astype(np.float32),
        "action_mask": mask.astype(np.int8),
    }


ENV_SETUPS = [
    ("ec2", {"num_servers": 30}, {}),
    ("ec2", {"num_servers": 12}, {"action_mode": "slot", "queue_window": 3}),
    ("bf-trap", {}, {"skip_trivial": False}),
    ("autoscale-4vm", {"num_servers": 8}, {}),
    ("autoscale-4vm", {"num_servers": 6}, {"action_mode": "command"}),  # RESERVE/RELEASE: slots
    ("uniform-sizes", {"num_servers": 7}, {}),  # continuous demands
    ("ec2", {"num_servers": 6, "queueing": "local"}, {}),  # command mode, DUMMY, REPLACE
]


@pytest.mark.parametrize("setup", range(len(ENV_SETUPS)), ids=lambda i: f"{ENV_SETUPS[i][0]}-{i}")
@settings(
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture], max_examples=4
)
@given(seed=st.integers(0, 10_000), forced=st.booleans(), mutate=st.booleans())
def test_incremental_observation_equals_recomputed(monkeypatch, setup, seed, forced, mutate) -> None:
    import clustergym.envs.observation as observation_mod
    from clustergym.core.commands import Cmd
    from clustergym.envs import AdmissionEnv, ClusterEnv
    from clustergym.scenarios import resolve_scenario

    monkeypatch.setattr(cluster_mod, "INDEX_MIN_SERVERS", 0 if forced else 10**9)
    monkeypatch.setattr(observation_mod, "INCREMENTAL_MIN_SERVERS", 0 if forced else 10**9)
    preset, params, kw = ENV_SETUPS[setup]
    sc = resolve_scenario(preset, **params)
    cls = AdmissionEnv if sc.queueing == "loss" else ClusterEnv
    env = cls(sc, horizon=1e9, **kw)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    kept: list[tuple[dict, dict]] = []
    for step in range(150):
        ref = _reference_obs(env)
        for k, v in ref.items():
            assert obs[k].dtype == v.dtype and np.array_equal(obs[k], v), (preset, step, k)
        if step % 10 == 0:
            kept.append((obs, {k: v.copy() for k, v in obs.items()}))
        if mutate:  # a caller that writes into its observation must not affect the next one
            for v in obs.values():
                v[...] = 7
        if env.action_mode == "command":
            n = env.sim.num_servers
            kind = int(
                rng.choice(
                    [
                        int(Cmd.WAIT),
                        int(Cmd.ADMIT),
                        int(Cmd.RESERVE),
                        int(Cmd.RELEASE),
                        int(Cmd.REJECT),
                        int(Cmd.PLACE),
                        int(Cmd.DUMMY),
                        int(Cmd.REPLACE),
                    ]
                )
            )
            action = np.array([kind, int(rng.integers(env.mode.num_args)), int(rng.integers(n))])
        else:
            valid = np.flatnonzero(env.action_masks())
            action = int(valid[rng.integers(valid.size)])
        obs, _, term, trunc, _ = env.step(action)
        if term or trunc:
            obs, _ = env.reset(seed=seed + step + 1)
    if not mutate:  # observations handed out earlier did not change under later steps
        for o, copy in kept:
            for k in o:
                assert np.array_equal(o[k], copy[k])


def test_observation_arrays_are_fresh_copies() -> None:
    from clustergym.envs import ClusterEnv

    env = ClusterEnv("ec2", num_servers=1100, horizon=3.0)
    obs, _ = env.reset(seed=0)
    b = env.obs_builder
    assert b._incremental and env.sim.cluster.index_active()
    for buf in (b._free, b._running, b._dummies):
        assert not any(np.shares_memory(buf, v) for v in obs.values())
    before = {k: v.copy() for k, v in obs.items()}
    obs2, *_ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert all(np.array_equal(obs[k], before[k]) for k in obs)
    assert not any(np.shares_memory(obs[k], obs2[k]) for k in obs)


def test_fit_tolerance_edge_in_the_kernel() -> None:
    """A demand that fills a server up to the tolerance fits; one double more does not (both engines)."""
    cap = np.array([[1.0], [1.0], [1.0]])
    D = np.array([[0.3]])
    c = Cluster(cap, D, index_min_servers=0)
    x = _largest_fitting(0.3, 1.0 * (1 + FIT_RTOL) + 1e-12)
    c.add_real(1, 0, np.array([x]))
    c.add_real(2, 0, np.array([np.nextafter(x, 1)]))
    assert c.select("best-fit", 0, D[0]) == 1
    assert c.fit_mask(0, D[0]).tolist() == [True, True, False]
    d = np.array([0.3 + 1e-17]) if 0.3 + 1e-17 != 0.3 else np.array([np.nextafter(0.3, 1)])
    assert c.select("best-fit", 0, d) == select_server("best-fit", c.fits_free(d), d, c.load, c.capacity, None)


# ============================================================================ scalar residual index (BF-J/S)


def _ref_tightest(free: np.ndarray, tol: np.ndarray, x: float, scale: float) -> int:
    """BF-J/S's NumPy scan (faithful mode): the least residual, ties up to SCORE_RTOL to the lowest index."""
    from clustergym.core.scores import argbest

    ok = np.flatnonzero(free + tol >= x)
    if ok.size == 0:
        return -1
    return int(ok[argbest(free[ok], largest=False, scale=scale)])


def _ref_first(free: np.ndarray, tol: np.ndarray, x: float) -> int:
    ok = np.flatnonzero(free + tol >= x)
    return int(ok[0]) if ok.size else -1


@settings(**SETTINGS)
@given(L=st.integers(1, 40), block=st.integers(1, 8), hetero=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_residual_index_equals_scan(L, block, hetero, seed) -> None:
    from clustergym.core.placement import ResidualIndex

    rng = np.random.default_rng(seed)
    cap = rng.choice([1.0, 0.5, 0.75], size=L) if hetero else np.ones(L)
    tol = 1e-9 * cap
    # values on a coarse grid (exact ties), some within the SCORE_RTOL tie window of each other
    base = rng.choice([0.0, 0.1, 0.25, 0.3, 0.5, 0.7, 1.0], size=L)
    free = np.minimum(base + rng.choice([0.0, 0.0, 4e-13, 9e-13, 2e-12, 5e-10, 2e-9], size=L), cap)
    idx = ResidualIndex(free, tol, block=block)
    sizes = [0.0, 0.1, 0.25, 0.3, 0.3 + 1e-9, 0.5, 0.7, 1.0, 1.0 + 2e-9]
    for step in range(60):
        for x in sizes:
            assert idx.tightest(x, 1.0) == _ref_tightest(free, tol, x, 1.0), (step, x)
            assert idx.first(x) == _ref_first(free, tol, x), (step, x)
        for _ in range(int(rng.integers(1, 4))):  # the owner changes some residuals in place
            l = int(rng.integers(L))
            free[l] = cap[l] - float(rng.choice([0.0, 0.1, 0.2, 0.3, 0.5, 0.7 + 5e-13, 1.0]))
            idx.touch(l)


@pytest.mark.parametrize(
    "agent,params", [("bf-j", {}), ("bf-js", {}), ("fifo-ff", {}), ("fifo-ff", {"blocking": False})]
)
def test_bfjs_agents_with_and_without_the_residual_index(agent, params, monkeypatch) -> None:
    """Above bfjs.SMALL_L servers the slotted agents query a ResidualIndex; runs equal the NumPy scans'."""
    from clustergym.agent_api import make_agent
    from clustergym.baselines.bfjs import bfjs
    from clustergym.runner import run_episode
    from clustergym.scenarios import make_preset

    sc = make_preset("uniform-sizes", num_servers=48, mean_service=8.0, alpha=0.97, horizon=150.0)
    a = run_episode(sc, make_agent(agent, **params), seed=1)
    monkeypatch.setattr(bfjs, "ResidualIndex", lambda *args, **kw: None)
    b = run_episode(sc, make_agent(agent, **params), seed=1)
    a.pop("wall_seconds"), b.pop("wall_seconds")
    assert a == b and a["started"] > 1000


# ============================================================================ bench --scale


def test_bench_scale_cli_quick(monkeypatch, tmp_path) -> None:
    """``clustergym bench --scale --quick --json --plot``: the rows, the ratios, the plot (sizes shrunk)."""
    from typer.testing import CliRunner

    from clustergym.cli import app
    from clustergym.perf import scale as bench

    monkeypatch.setattr(bench, "SCALE_SERVERS", (20, 200))
    plot = tmp_path / "scale.png"
    res = CliRunner().invoke(app, ["bench", "--scale", "--quick", "--json", "--plot", str(plot)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout[res.stdout.index("{") :])
    labels = {r["benchmark"] for r in doc["rows"]}
    assert labels == {"best-fit", "first-fit", "rms-bf", "env-random"}
    assert {r["servers"] for r in doc["rows"]} == {20, 200}
    for r in doc["rows"]:
        assert r["events"] > 0 and r["steps"] > 0 and r["bytes_per_server"] > 0 and len(r["digest"]) == 16
    assert set(doc["ratios_to_200"]) == labels
    assert plot.stat().st_size > 0 and doc["plot"] == str(plot)


def test_bench_scale_digest_same_with_and_without_index(monkeypatch) -> None:
    from clustergym.perf import bench_scale

    kw = {"servers": (40,), "events": 1500, "steps": 300, "warmup": 0.3}
    monkeypatch.setattr(cluster_mod, "INDEX_MIN_SERVERS", 0)
    a = bench_scale(**kw)["rows"]
    monkeypatch.setattr(cluster_mod, "INDEX_MIN_SERVERS", 10**9)
    b = bench_scale(**kw)["rows"]
    assert [(r["benchmark"], r["digest"], r["events"], r["steps"]) for r in a] == [
        (r["benchmark"], r["digest"], r["events"], r["steps"]) for r in b
    ]
