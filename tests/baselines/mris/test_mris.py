"""MRIS oracles (labels T1-T8: docs/papers/mris.md#test-labels): knapsack subroutines (T4), Lemma 4.1 (T1), Lemma 6.4 (T2), PQ makespan with
the corrected multi-machine bound (T3), MRIS structural invariants (T5), a brute-force competitive check
(T6), the Figure 7 instance (T7) and the cross-implementation equivalences (T8)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from clustergym.baselines.mris.mris import check_schedule, mris_schedule
from clustergym.baselines.mris.priority_queue import pq_schedule, pq_schedule_machine_major
from clustergym.reproduce.mris import run_on_instance
from clustergym.scenarios.presets.mris import instance_scenario, lemma41_instance, patience_instance
from clustergym.theory.mris import MRISInstance, knapsack_brute_force, knapsack_cadp, knapsack_exact, knapsack_greedy


def rand_instance(rng: np.random.Generator, n: int, M: int, R: int, grid: bool = True) -> MRISInstance:
    """Random instance; ``grid`` puts times on multiples of 1/2 and demands on multiples of 1/8, so that
    releases, completions and boundaries coincide and capacities fill exactly."""
    if grid:
        r = rng.integers(0, 8, n) * 0.5
        p = rng.choice([1.0, 1.5, 2.0, 3.0, 4.0, 6.0], n)
        d = rng.integers(1, 9, (n, R)) / 8
    else:
        r = rng.uniform(0, 6, n)
        p = rng.uniform(1, 6, n)
        d = rng.uniform(0.05, 1.0, (n, R))
    return MRISInstance(r, p, rng.integers(1, 4, n).astype(float), d, machines=M)


def makespan(inst: MRISInstance, start: np.ndarray) -> float:
    return float(np.max(start + inst.proc))


# ============================================================================ T4: knapsack subroutines

def _knapsack_cases(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for it in range(count):
        n = int(rng.integers(0, 15))
        w = rng.choice([1.0, 2.0], n) if it % 3 == 0 else rng.integers(1, 6, n).astype(float)
        cap = float(rng.uniform(0.5, 5.0))
        v = rng.uniform(0.01, 1.0, n) * cap  # every v_j <= zeta (MRIS's eligible jobs: p_j <= gamma_k gives v_j <= R gamma_k)
        if n:
            v[rng.integers(n)] = cap * (1 - 1e-12)  # an item (almost) exactly filling the knapsack
        yield w, v, cap


def test_exact_knapsack_methods_match_brute_force():
    for w, v, cap in _knapsack_cases(1, 120):
        opt, _ = knapsack_brute_force(w, v, cap)
        methods = ["auto", "dp", "milp"] + (["prefix"] if np.unique(w).size <= 2 else [])
        for m in methods:
            sel = knapsack_exact(w, v, cap, method=m)
            assert w[sel].sum() == pytest.approx(opt, abs=1e-9), m
            assert v[sel].sum() <= cap * (1 + 1e-9), m
            assert len(set(sel.tolist())) == sel.size


@pytest.mark.parametrize("eps", [0.5, 0.25, 0.125])
def test_cadp_reaches_opt_weight_within_1_plus_eps_volume(eps):
    for w, v, cap in _knapsack_cases(2, 80):
        opt, _ = knapsack_brute_force(w, v, cap)
        sel = knapsack_cadp(w, v, cap, eps=eps)
        assert w[sel].sum() >= opt - 1e-9  # Lemma 6.1
        assert v[sel].sum() <= (1 + eps) * cap * (1 + 1e-9)


def test_cadp_uses_the_corrected_scale_factor():
    # three items of volume 0.51 in a knapsack of 1 (OPT = 1 item), eps = 1/2.
    # Corrected K = eps*zeta/n = 1/6: v-hat = 3, Z-hat = 6 -> two items, volume 1.02 <= 1.5 (constraint
    # approximation: more weight than OPT, at most (1+eps) zeta).  The printed K = zeta*n/eps = 6 would
    # round every size to 0 and take all three (volume 1.53 > 1.5).
    w, v = np.ones(3), np.full(3, 0.51)
    sel = knapsack_cadp(w, v, 1.0, eps=0.5)
    assert sel.size == 2 and v[sel].sum() == pytest.approx(1.02)


def test_greedy_knapsack_reaches_opt_weight_within_twice_the_capacity():
    for w, v, cap in _knapsack_cases(3, 120):
        opt, _ = knapsack_brute_force(w, v, cap)
        sel = knapsack_greedy(w, v, cap)
        assert w[sel].sum() >= opt - 1e-9  # Remark 1 (every v_j <= zeta)
        assert v[sel].sum() <= 2 * cap * (1 + 1e-9)
    # the "better of the prefix and the first item that does not fit" branch
    sel = knapsack_greedy([1.0, 1.0, 10.0], [0.1, 0.1, 1.0], 0.5)  # ratios 10, 10, 10: prefix {0,1} then item 2
    assert sel.tolist() == [2]


@pytest.mark.parametrize("kind,bound", [("exact", 1.0), ("cadp", 1.25), ("greedy", 2.0)])
def test_batch_selection_adds_zero_weight_items_within_the_bound(kind, bound):
    from clustergym.theory.mris import select_batch

    for w, v, cap in _knapsack_cases(4, 60):
        w = np.where(np.arange(w.size) % 3 == 0, 0.0, w)
        opt, _ = knapsack_brute_force(w, v, cap)
        sel = select_batch(kind, w, v, cap, eps=0.25)
        assert w[sel].sum() >= opt - 1e-9 and v[sel].sum() <= bound * cap * (1 + 1e-9)
        left = np.setdiff1d(np.flatnonzero(w == 0), sel)
        assert np.all(v[left] > bound * cap * (1 + 1e-9) - v[sel].sum())  # no zero-weight item would still fit


def test_exact_knapsack_tie_break_prefers_less_volume():
    sel = knapsack_exact([1.0, 1.0, 1.0], [0.6, 0.3, 0.5], 1.0, method="prefix")
    assert sel.tolist() == [1, 2]  # weight 2 with volume 0.8, not {0, 1} (0.9)


# ============================================================================ T1: Lemma 4.1

def _closed_forms(n: int, P: float, delta: float) -> tuple[float, float, float]:
    pq = P + (n - 1) * (P + 1)
    opt = (n - 1) * (1 + delta) + 1 + delta + P
    mris = 2 * (n - 1) + 2 * P
    return pq, opt, mris


def test_lemma41_closed_forms_through_the_environment():
    n, P, delta, R = 65, 64.0, 0.5, 2
    pq, opt, mris = _closed_forms(n, P, delta)
    assert (pq, opt, mris) == (4224.0, 161.5, 256.0)
    totals = {a: run_on_instance("mris-lemma41", a, validate=True)["paper"]["total_weighted_completion"]
              for a in ["pq-wsjf", "pq-svf", "pq-erf", "pq-sdf", "tetris-mris", "bf-exec", "mris", "ca-pq"]}
    for a in ["pq-wsjf", "pq-svf", "pq-erf", "pq-sdf", "tetris-mris", "bf-exec"]:
        assert totals[a] == pq, a
    assert totals["mris"] == mris
    assert totals["mris"] <= 8 * R * opt
    assert totals["ca-pq"] == opt
    res = run_on_instance("mris-lemma41", "mris", knapsack="cadp", eps=0.125)
    assert res["paper"]["total_weighted_completion"] == mris
    log = [(e["k"], e["J"], e["B"]) for e in res["agent_obj"].log if e["J"]]
    assert log == [(0, 64, 64), (6, 1, 1)]  # (k, |J_k|, |B_k|): all small jobs at gamma_0, job 0 at gamma_6 = P


def test_lemma41_ratio_grows_linearly_for_pq_but_not_mris():
    n, P, delta = 257, 256.0, 0.5
    pq, opt, mris = _closed_forms(n, P, delta)
    inst = lemma41_instance(n, P, delta, R=2)
    got_pq = run_on_instance(inst, "pq")["paper"]["total_weighted_completion"]
    got_mris = run_on_instance(inst, "mris")["paper"]["total_weighted_completion"]
    assert got_pq == pq == 66048 and got_mris == mris == 1024
    assert got_pq / opt > n / 4  # Omega(N): about 103
    assert got_mris / opt < 1.61


# ============================================================================ T2: Lemma 6.4 tightness

def test_lemma64_tightness():
    # trivial case: one job of demand 1/2: C_max = P = 2V/M
    one = MRISInstance([0.0], [5.0], [1.0], [[0.5, 0.0, 0.0]])
    S, _ = pq_schedule(one, offline=True)
    assert makespan(one, S) == 5.0 == 2 * one.volume.sum()
    # N jobs of demand 1/2 + delta run one at a time: C_max = N P, and C_max / (2V/M) = 1/(1 + 2 delta) -> 1
    ratios = []
    for delta in (0.1, 0.01, 0.001):
        N, P = 6, 3.0
        inst = MRISInstance(np.zeros(N), np.full(N, P), np.ones(N), np.tile([0.5 + delta, 0.0], (N, 1)))
        S, _ = pq_schedule(inst, offline=True)
        cmax = makespan(inst, S)
        assert cmax == N * P
        assert cmax <= max(2 * P, 2 * inst.volume.sum())
        ratios.append(cmax / (2 * inst.volume.sum()))
        assert ratios[-1] == pytest.approx(1 / (1 + 2 * delta))
    assert ratios == sorted(ratios) and ratios[-1] > 0.998
    # the same through the environment (PQ with every job released at 0 is the offline PQ)
    res = run_on_instance(inst, "pq")
    assert res["paper"]["makespan"] == N * P


# ============================================================================ T3: makespan of PQ

def test_lemma63_holds_on_one_machine():
    rng = np.random.default_rng(5)
    for _ in range(150):
        inst = rand_instance(rng, int(rng.integers(1, 10)), 1, int(rng.integers(1, 4)), grid=bool(rng.integers(2)))
        for key in ("wsjf", "svf", "erf"):
            S, _ = pq_schedule(inst, key, offline=True)
            cmax = makespan(inst, S)
            assert cmax <= max(2 * inst.proc.max(), 2 * inst.volume.sum()) + 1e-9
            assert cmax >= inst.volume.sum() / inst.num_resources - 1e-9  # Lemma 6.2 (any schedule)


def test_lemma63_fails_for_two_machines_and_the_corrected_bound_holds():
    # counterexample to Lemma 6.3 (docs/papers/mris.md#lemma63): R = 1, demands 0.51, four jobs p = 1 and one p = 1.5 last in WSJF order
    inst = MRISInstance(np.zeros(5), [1, 1, 1, 1, 1.5], np.ones(5), np.full((5, 1), 0.51), machines=2)
    S, _ = pq_schedule(inst, "wsjf", offline=True)
    cmax, pmax, V, M = makespan(inst, S), 1.5, inst.volume.sum(), 2
    assert cmax == 3.5
    assert cmax > max(2 * pmax, 2 * V / M) == 3.0  # the paper's Lemma 6.3 is false for M >= 2
    assert cmax < 2 * pmax + 2 * V / M  # the corrected bound
    # Lemma 6.5 fails too: V = 3.9984 <= R M gamma = 4 and p_max <= gamma = 2, yet PQ needs 4.84 > 2 R gamma
    inst = MRISInstance(np.zeros(7), [1] * 6 + [1.84], np.ones(7), np.full((7, 1), 0.51), machines=2)
    S, _ = pq_schedule(inst, "wsjf", offline=True)
    assert inst.volume.sum() == pytest.approx(3.9984) and inst.volume.sum() <= 1 * 2 * 2.0
    assert makespan(inst, S) == pytest.approx(4.84) and makespan(inst, S) > 2 * 1 * 2.0
    # the corrected bound C_max < 2 p_max + 2V/M on random multi-machine instances
    rng = np.random.default_rng(6)
    for _ in range(120):
        inst = rand_instance(rng, int(rng.integers(1, 12)), int(rng.integers(2, 4)), int(rng.integers(1, 4)),
                             grid=bool(rng.integers(2)))
        S, _ = pq_schedule(inst, "wsjf", offline=True)
        assert makespan(inst, S) < 2 * inst.proc.max() + 2 * inst.volume.sum() / inst.machines + 1e-9


# ============================================================================ T5: MRIS structural invariants

def _fits_state(inst: MRISInstance, S: dict[int, float], i_jobs: list[int], j: int, t: float) -> bool:
    """FITS_WINDOW of job j at t against the reservations ``i_jobs`` (with starts ``S``), recomputed."""
    end = t + inst.proc[j]
    pts = [t] + [S[x] for x in i_jobs if t < S[x] < end]
    for tau in pts:
        use = sum((inst.demand[x] for x in i_jobs if S[x] <= tau < S[x] + inst.proc[x]), np.zeros(inst.num_resources))
        if np.any(use + inst.demand[j] > 1 + 1e-9):
            return False
    return True


@pytest.mark.parametrize("knapsack,c_eps", [("exact", 0.0), ("cadp", 0.25), ("greedy", 1.0)])
def test_mris_structural_invariants(knapsack, c_eps):
    rng = np.random.default_rng({"exact": 11, "cadp": 12, "greedy": 13}[knapsack])
    for it in range(25):
        M, R = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        inst = rand_instance(rng, int(rng.integers(1, 11)), M, R, grid=it % 2 == 0)
        res = mris_schedule(inst, key=["wsjf", "wsvf", "sdf"][it % 3], knapsack=knapsack, eps=0.25)
        g = res.gamma
        # 1. decision times
        assert np.all(res.start >= g) and np.all(g >= inst.release) and np.all(inst.proc <= g * (1 + 1e-9))
        assert np.all(np.log2(g / res.gamma0) == res.k)
        # 4. feasibility (capacity, S >= r, every job once)
        assert check_schedule(inst, res.start, res.machine) == []
        for e in res.log:
            B, J = np.array(e["B"], dtype=int), np.array(e["J"], dtype=int)
            # 2. budget: c R M gamma_k with c = 1 (exact), 1 + eps (CADP), 2 (greedy)
            assert inst.volume[B].sum() <= (1 + c_eps) * R * M * e["gamma"] * (1 + 1e-9)
            # 3. selection quality against brute force
            opt, _ = knapsack_brute_force(inst.weight[J], inst.volume[J], R * M * e["gamma"])
            assert inst.weight[B].sum() >= opt - 1e-9
            # 5. list property: a job started after gamma_k did not fit at any scan of its batch before its own
            committed: dict[int, float] = {}
            earlier = [x for x in range(inst.n) if res.k[x] < e["k"]]
            for x in earlier:
                committed[x] = res.start[x]
            for (i, t, placed) in e["scans"]:
                for x in placed:
                    committed[x] = t
                on_i = [x for x in committed if res.machine[x] == i]
                for j in B:
                    if j not in committed:  # still in the list after this scan: it did not fit there
                        assert not _fits_state(inst, committed, on_i, int(j), t)
        # 6. per-job completion bound (docs/papers/mris.md#lemma63)
        bound = 4 * R * (1 + c_eps) if M == 1 else 4 * (1 + R * (1 + c_eps))
        assert np.all(res.completion <= bound * g * (1 + 1e-9))


# ============================================================================ T6: brute-force competitive check

def _opt_single_machine(inst: MRISInstance) -> float:
    """min Σ w C over all orders of a serial schedule-generation scheme (active schedules; M = 1)."""
    best = math.inf
    n = inst.n
    for order in itertools.permutations(range(n)):
        S: dict[int, float] = {}
        for j in order:
            cands = sorted({inst.release[j]} | {S[x] + inst.proc[x] for x in S if S[x] + inst.proc[x] > inst.release[j]})
            for t in cands:
                if _fits_state(inst, S, list(S), j, t):
                    S[j] = t
                    break
        total = sum(inst.weight[j] * (S[j] + inst.proc[j]) for j in range(n))
        best = min(best, total)
    return best


def test_mris_within_8R_of_brute_force_optimum_on_one_machine():
    rng = np.random.default_rng(21)
    worst = 0.0
    for _ in range(12):
        n, R = int(rng.integers(2, 7)), int(rng.integers(1, 4))
        inst = MRISInstance(rng.uniform(0, 6, n), rng.uniform(1, 6, n), rng.integers(1, 4, n).astype(float),
                            rng.uniform(0.05, 1.0, (n, R)))
        opt = _opt_single_machine(inst)
        got = mris_schedule(inst).total_weighted_completion(inst)
        assert opt <= got + 1e-9
        worst = max(worst, got / (8 * R * opt))
    assert worst <= 1.0


# ============================================================================ T7: Figure 7 "patience"

def test_figure7_patience_mris_far_better_than_the_pq_family():
    inst = patience_instance(n=500, seed=0)
    sc = instance_scenario(inst)
    res = {a: run_on_instance(sc, a) for a in ["mris-wsvf", "pq-wsvf", "tetris-mris", "bf-exec"]}
    awct = {a: r["paper"]["awct"] for a, r in res.items()}
    for a in ["pq-wsvf", "tetris-mris", "bf-exec"]:
        assert awct["mris-wsvf"] < 0.5 * awct[a], (a, awct)
    big = {a: r["schedule"]["start"][0] for a, r in res.items()}  # job 0 is the 14-unit job
    assert big["pq-wsvf"] == big["tetris-mris"] == big["bf-exec"] == 0.01
    assert big["mris-wsvf"] > 14.0


# ============================================================================ T8: cross-implementation equivalences

def test_pq_job_major_equals_machine_major():
    rng = np.random.default_rng(31)
    for it in range(60):
        inst = rand_instance(rng, int(rng.integers(1, 12)), int(rng.integers(1, 4)), int(rng.integers(1, 4)),
                             grid=it % 2 == 0)
        for key in ("wsjf", "svf", "wsdf", "erf"):
            for offline in (False, True):
                a = pq_schedule(inst, key, offline=offline)
                b = pq_schedule_machine_major(inst, key, offline=offline)
                assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


@pytest.mark.parametrize("knapsack", ["exact", "cadp", "greedy"])
def test_mris_agent_reproduces_the_offline_reference_exactly(knapsack):
    rng = np.random.default_rng({"exact": 41, "cadp": 42, "greedy": 43}[knapsack])
    for it in range(25):
        inst = rand_instance(rng, int(rng.integers(1, 14)), int(rng.integers(1, 4)), int(rng.integers(1, 4)),
                             grid=it % 3 != 0)
        key = ["wsjf", "svf", "erf", "wsdf"][it % 4]
        ref = mris_schedule(inst, key=key, knapsack=knapsack, eps=0.25)
        res = run_on_instance(inst, "mris", key=key, knapsack=knapsack, eps=0.25, validate=True)
        s = res["schedule"]
        assert np.array_equal(s["start"], ref.start), (it, s["start"], ref.start)
        assert np.array_equal(s["server"], ref.machine)
        assert np.array_equal(s["end"], ref.completion)
        assert res["paper"]["total_weighted_completion"] == ref.total_weighted_completion(inst)


def test_pq_and_ca_pq_agents_reproduce_the_offline_references():
    rng = np.random.default_rng(51)
    for it in range(30):
        inst = rand_instance(rng, int(rng.integers(1, 14)), int(rng.integers(1, 4)), int(rng.integers(1, 4)),
                             grid=it % 3 != 0)
        key = ["wsjf", "svf", "erf", "sdf", "wsvf"][it % 5]
        S, m = pq_schedule(inst, key)
        s = run_on_instance(inst, "pq", key=key, validate=True)["schedule"]
        assert np.array_equal(s["start"], S) and np.array_equal(s["server"], m), (it, key)
        # CA-PQ == offline PQ shifted by r_max
        S, m = pq_schedule(inst, "wsjf", offline=True, start_time=float(inst.release.max()))
        s = run_on_instance(inst, "ca-pq", validate=True)["schedule"]
        assert np.array_equal(s["start"], S) and np.array_equal(s["server"], m), it


def test_every_scheduler_is_feasible_and_completes():
    rng = np.random.default_rng(61)
    agents = ["mris", "mris-greedy", "pq", "ca-pq", "tetris-mris", "bf-exec"]
    for it in range(8):
        inst = rand_instance(rng, int(rng.integers(5, 25)), int(rng.integers(1, 4)), int(rng.integers(1, 4)),
                             grid=it % 2 == 0)
        for a in agents:
            res = run_on_instance(inst, a, validate=True)  # the kernel checks capacity after every event
            s = res["schedule"]
            assert s["completed"].all(), a
            assert check_schedule(inst, s["start"], s["server"]) == [], a
            assert np.array_equal(s["end"], s["start"] + inst.proc), a  # non-preemptive
            assert res["paper"]["makespan"] >= inst.volume.sum() / (inst.num_resources * inst.machines) - 1e-9
