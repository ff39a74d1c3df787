"""The MRIS-paper baselines as agents in the environment: registry and parameters, oracle labels, the
rules of PQ, TETRIS, BF-EXEC and MRIS on hand-made instances, the MRIS presets, the weighted objective
and clairvoyant observations, and the registered claims."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from clustergym.agent_api import list_agents, make_agent
from clustergym.core.commands import Command, EventKind
from clustergym.envs.cluster_env import ClusterEnv
from clustergym.errors import ConfigError, ScenarioError
from clustergym.reproduce.mris import run_on_instance
from clustergym.runner import run_episode
from clustergym.scenarios import make_preset
from clustergym.scenarios.presets.mris import instance_scenario, patience_instance
from clustergym.theory.mris import MRISInstance
from clustergym.traces import traces_available

AGENTS = [
    "mris",
    "mris-wsvf",
    "mris-greedy",
    "pq",
    "pq-svf",
    "pq-wsvf",
    "pq-sjf",
    "pq-wsjf",
    "pq-sdf",
    "pq-wsdf",
    "pq-erf",
    "ca-pq",
    "tetris-mris",
    "bf-exec",
]


def inst1(r, p, d, w=None, M=1) -> MRISInstance:
    d = np.asarray(d, dtype=float)
    return MRISInstance(
        np.asarray(r, float),
        np.asarray(p, float),
        np.ones(len(r)) if w is None else np.asarray(w, float),
        d if d.ndim == 2 else d[:, None],
        machines=M,
    )


def starts(inst, agent, **params):
    s = run_on_instance(inst, agent, validate=True, **params)["schedule"]
    return s["start"], s["server"]


# ============================================================================ registry


def test_registry_names_parameters_and_errors():
    names = list_agents()
    assert set(AGENTS) <= set(names)
    assert all(names[a] for a in AGENTS)  # one-line descriptions
    assert all(make_agent(a).name == a for a in AGENTS)
    assert (
        make_agent("pq").key == "wsjf"
        and make_agent("pq-erf").key == "erf"
        and make_agent("pq", key="svf").key == "svf"
    )
    assert make_agent("mris").knapsack == "exact" and make_agent("mris-greedy").knapsack == "greedy"
    assert make_agent("mris-wsvf").key == "wsvf" and make_agent("ca-pq").key == "wsjf"
    for name, params, field in [
        ("pq", {"key": "lifo"}, "agent.key"),
        ("mris", {"knapsack": "fptas"}, "agent.knapsack"),
        ("mris", {"eps": 1.5}, "agent.eps"),
        ("mris", {"gamma0": 0}, "agent.gamma0"),
        ("mris", {"alpha": 1.0}, "agent.alpha"),
        ("bf-exec", {"departures": "one"}, "agent.departures"),
        ("tetris-mris", {"colour": 1}, "agent.colour"),
    ]:
        with pytest.raises(ConfigError) as e:
            make_agent(name, **params)
        assert e.value.field == field


def test_oracle_labels():
    sc = make_preset("mris-lemma41")  # clairvoyant, declares gamma0
    flags = {a: run_episode(sc, a)["uses_oracle"] for a in ["mris", "pq", "pq-erf", "tetris-mris", "bf-exec", "ca-pq"]}
    assert flags == {"mris": False, "pq": False, "pq-erf": False, "tetris-mris": False, "bf-exec": False, "ca-pq": True}
    blind = dataclasses.replace(sc, clairvoyant=False)
    flags = {
        a: run_episode(blind, a)["uses_oracle"]
        for a in ["mris", "pq-wsjf", "pq-sdf", "pq-erf", "tetris-mris", "bf-exec"]
    }
    assert flags == {
        "mris": True,
        "pq-wsjf": True,
        "pq-sdf": False,
        "pq-erf": False,
        "tetris-mris": True,
        "bf-exec": True,
    }
    # MRIS taking gamma0 from the replayed table's smallest work (the reference code's p_min) is privileged
    undeclared = dataclasses.replace(sc, params={})
    assert run_episode(undeclared, "mris")["uses_oracle"] is True
    assert run_episode(undeclared, make_agent("mris", gamma0=1.0))["uses_oracle"] is False


# ============================================================================ PQ


def test_pq_scans_in_key_order_with_first_fit():
    # M = 2, R = 1, all released at 0: A (p 3, d .6), B (p 1, d .6), C (p 2, d .5)
    inst = inst1([0, 0, 0], [3, 1, 2], [0.6, 0.6, 0.5], M=2)
    S, m = starts(inst, "pq-wsjf")  # order B, C, A: B -> 0, C -> 1, A waits for B
    assert S.tolist() == [1, 0, 0] and m.tolist() == [0, 0, 1]
    S, m = starts(inst, "pq-erf")  # order A, B, C: A -> 0, B -> 1, C waits for B (t = 1)
    assert S.tolist() == [0, 0, 1] and m.tolist() == [0, 1, 1]
    # weights matter for WSJF only: a heavy long job goes first
    heavy = inst1([0, 0, 0], [3, 1, 2], [0.6, 0.6, 0.5], w=[10, 1, 1], M=2)
    assert starts(heavy, "pq-wsjf")[0].tolist() == [0, 0, 1]
    assert starts(heavy, "pq-sjf")[0].tolist() == [1, 0, 0]


def test_simultaneous_events_are_decided_together():
    # both jobs arrive at t = 1 on an empty machine; the second is shorter (higher WSJF priority).  Deciding
    # at the first arrival's epoch would start the first job; PQ decides after every event at t (docs/papers/mris.md#event-times)
    inst = inst1([1, 1], [5, 1], [0.6, 0.6])
    S, _ = starts(inst, "pq")
    assert S.tolist() == [2, 1]
    # a completion and an arrival at the same time: the queued job and the new one compete together
    inst = inst1([0, 0.5, 2], [2, 5, 1], [1.0, 0.5, 0.6])
    assert starts(inst, "pq")[0].tolist() == [0, 3, 2]  # job 2 (shorter) wins the space freed at t = 2


def test_ca_pq_waits_for_the_last_release():
    inst = inst1([0, 0.5, 3], [1, 1, 1], [0.5, 0.5, 0.5])
    S, _ = starts(inst, "ca-pq")
    assert S.tolist() == [3, 3, 4]
    S, _ = starts(inst, "ca-pq", r_max=10.0)
    assert S.tolist() == [10, 10, 11]


# ============================================================================ TETRIS


def _tetris_first_batch(inst: MRISInstance) -> set[int]:
    """The jobs TETRIS starts at t = 0 (all released at 0, M = 1), by the rule of docs/papers/mris.md#tetris."""
    use = np.zeros(inst.num_resources)
    left = list(range(inst.n))
    chosen = set()
    while True:
        F = [j for j in left if np.all(use + inst.demand[j] <= 1 + 1e-9)]
        if not F:
            return chosen
        rem = 1 - use
        a = np.array([inst.demand[j] @ rem for j in F])
        s = np.array([1 / inst.volume[j] for j in F])
        j = F[int(np.argmax(a + a.mean() / s.mean() * s))]
        chosen.add(j)
        left.remove(j)
        use = use + inst.demand[j]


def test_tetris_picks_by_alignment_plus_inverse_volume():
    rng = np.random.default_rng(3)
    differs_from_svf = 0
    for _ in range(20):
        n, R = 12, 2
        inst = MRISInstance(
            np.zeros(n), rng.uniform(1, 5, n), rng.integers(1, 5, n).astype(float), rng.uniform(0.05, 0.6, (n, R))
        )
        S, _ = starts(inst, "tetris-mris")
        first = set(np.flatnonzero(S == 0).tolist())
        assert first == _tetris_first_batch(inst)
        # weights are not used
        unweighted = dataclasses.replace(inst, weight=np.ones(n))
        assert np.array_equal(starts(unweighted, "tetris-mris")[0], S)
        differs_from_svf += first != set(np.flatnonzero(starts(inst, "pq-svf")[0] == 0).tolist())
    assert differs_from_svf > 0  # the alignment term changes decisions


# ============================================================================ BF-EXEC


def test_bf_exec_arrivals_best_fit_by_remaining_norm():
    # R = 1, M = 2: job 0 (d .5) -> server 0; job 1 (d .7) does not fit 0 -> server 1; job 2 (d .3, t = 1)
    # fits both: the server with the least remaining capacity (1: 0.3 left) takes it
    inst = inst1([0, 0, 1], [10, 10, 1], [0.5, 0.7, 0.3], M=2)
    S, m = starts(inst, "bf-exec")
    assert m.tolist() == [0, 1, 1] and S.tolist() == [0, 0, 1]
    assert starts(inst, "pq")[1].tolist() == [0, 1, 0]  # first fit would take server 0


def test_bf_exec_backfills_departures_before_arrivals():
    # job 0 (d 1) runs [0, 2); job 1 (d .5, p 5) queues at 0.5; job 2 (d .6, p 1) arrives at 2 = job 0's departure.
    # Phase 1 (departure) runs first and starts job 1; job 2 no longer fits and waits for job 1 (t = 7).
    inst = inst1([0, 0.5, 2], [2, 5, 1], [1.0, 0.5, 0.6])
    assert starts(inst, "bf-exec")[0].tolist() == [0, 2, 7]
    assert starts(inst, "pq-sjf")[0].tolist() == [0, 3, 2]  # PQ considers both together, shortest first
    # a queued job is not started by an arrival, only by a departure on a machine where it fits
    inst = inst1([0, 1, 2], [10, 1, 1], [0.8, 0.5, 0.1])
    assert starts(inst, "bf-exec")[0].tolist() == [0, 10, 2]


def test_bf_exec_simultaneous_departures():
    # two machines empty at t = 1 together; two jobs queued.  "all": both machines backfill at 1;
    # "random" (the reference code): one machine only, the other job waits for the next departure
    inst = inst1([0, 0, 0.5, 0.5], [1, 1, 1, 1], [1, 1, 1, 1], M=2)
    assert sorted(starts(inst, "bf-exec")[0][2:].tolist()) == [1, 1]
    assert sorted(starts(inst, "bf-exec", departures="random")[0][2:].tolist()) == [1, 2]


# ============================================================================ MRIS


def test_mris_acts_only_at_its_boundaries_and_at_completions(run_stepping):
    rng = np.random.default_rng(8)
    n, M = 30, 2
    inst = MRISInstance(
        rng.uniform(0, 20, n),
        rng.uniform(0.7, 9, n),
        rng.integers(1, 3, n).astype(float),
        rng.uniform(0.05, 0.7, (n, 2)),
        machines=M,
    )
    sc = instance_scenario(inst)
    wakeups: list[float] = []

    def record(env):
        if env.sim.event.kind == EventKind.WAKEUP and (not wakeups or wakeups[-1] != env.sim.now):
            wakeups.append(env.sim.now)

    agent = make_agent("mris")
    res = run_stepping(sc, agent, record, validate=True).metrics()
    g0 = float(inst.proc.min())
    assert wakeups == [g0 * 2.0**k for k in range(len(wakeups))]  # every boundary, nothing else
    assert wakeups[-1] >= inst.proc.max()
    s = run_on_instance(sc, "mris")["schedule"]
    ends = s["start"] + inst.proc
    for j in range(n):
        same = (s["server"] == s["server"][j]) & (np.arange(n) != j)
        assert s["start"][j] in wakeups or np.any(ends[same] == s["start"][j])
    assert res["completed"] == n


def test_mris_needs_identical_machines():
    inst = inst1([0], [1], [0.5], M=2)
    sc = dataclasses.replace(instance_scenario(inst), capacity=np.array([[1.0], [2.0]]))
    with pytest.raises(ConfigError, match="identical machines"):
        run_episode(sc, "mris")


def test_mris_gamma0_shifts_the_grid():
    # one job of length 3 released at 0: eligible at the first boundary >= 3 (Algorithm 1: p_j <= gamma_k)
    inst = inst1([0.0], [3.0], [0.5])
    assert starts(inst, "mris")[0].tolist() == [3.0]  # gamma0 = p_min = 3
    assert starts(inst, "mris", gamma0=1.0)[0].tolist() == [4.0]  # 1, 2, 4
    assert starts(inst, "mris", gamma0=0.5)[0].tolist() == [4.0]
    assert starts(inst, "mris", gamma0=0.7)[0].tolist() == [0.7 * 2.0**3]


def test_mris_greedy_selects_more_volume():
    # one machine, R = 1, ten unit jobs of demand .5 at 0; gamma0 = 1: the exact knapsack (capacity R M gamma = 1)
    # takes 2 jobs at gamma_0, the greedy (capacity 2) takes 4
    inst = inst1(np.zeros(10), np.ones(10), np.full(10, 0.5))
    first = {a: run_on_instance(inst, a)["agent_obj"].log[0] for a in ("mris", "mris-greedy")}
    assert (first["mris"]["B"], first["mris-greedy"]["B"]) == (2, 4)
    assert (
        first["mris"]["volume"] <= first["mris"]["zeta"] < first["mris-greedy"]["volume"] <= 2 * first["mris"]["zeta"]
    )


def test_mris_schedules_zero_weight_jobs():
    # weight-0 jobs add nothing to the knapsack's objective; MRIS still schedules them when a boundary has room
    from clustergym.baselines.mris.mris import mris_schedule

    inst = inst1([0, 0, 1, 2], [1, 2, 1, 3], [0.5, 0.5, 0.5, 0.9], w=[0, 0, 1, 0])
    for knapsack in ("exact", "cadp", "greedy"):
        res = run_on_instance(inst, "mris", knapsack=knapsack, validate=True)
        assert res["paper"]["all_completed"]
        assert np.array_equal(res["schedule"]["start"], mris_schedule(inst, knapsack=knapsack).start)


# ============================================================================ presets, objective, observations


def test_mris_presets():
    sc = make_preset("mris-lemma41")
    assert sc.clairvoyant and sc.objective == "weighted-system" and sc.num_servers == 1 and sc.num_resources == 2
    assert sc.params["pq_total"] == 4224 and sc.params["opt_total"] == 161.5 and sc.params["gamma0"] == 1.0
    assert make_preset("mris-lemma41", n=17, P=16).params["pq_total"] == 16 + 16 * 17
    p0, p0b, p1 = (make_preset("mris-patience", n=300, seed=s) for s in (0, 0, 1))
    assert np.array_equal(p0.source.work, p0b.source.work) and not np.array_equal(p0.source.work, p1.source.work)
    assert p0.source.work[0] == 14.0 and p0.source.time[0] == 0.01 and np.all(p0.source.time[1:] == 0.1)
    assert p0.params["gamma0"] == p0.source.work.min() > 0
    assert np.all(p0.source.demand[1:] < 0.1) and np.all(p0.source.demand[0] == 0.99)
    for name, bad, field in [
        ("mris-lemma41", {"N": 3}, "params.N"),
        ("mris-lemma41", {"n": 1}, "params.n"),
        ("mris-patience", {"n": -5}, "params.n"),
    ]:
        with pytest.raises(ScenarioError) as e:
            make_preset(name, **bad)
        assert e.value.field == field


def test_return_is_minus_weighted_flow_and_awct_uses_absolute_completions():
    inst = patience_instance(n=60, seed=2)
    inst = dataclasses.replace(inst, weight=np.random.default_rng(0).integers(1, 4, inst.n).astype(float))
    res = run_on_instance(inst, "mris")
    s, pm = res["schedule"], res["paper"]
    flow = float(np.dot(s["weight"], s["end"] - s["arrival"]))
    assert res["return"] == pytest.approx(-flow, rel=1e-12)
    assert res["mean_weighted_completion"] == pytest.approx(flow / inst.n)  # the kernel's metric: flow time
    assert pm["awct"] == pytest.approx(float(np.dot(s["weight"], s["end"])) / inst.n)  # the paper's metric
    assert pm["awct"] - res["mean_weighted_completion"] == pytest.approx(np.dot(inst.weight, inst.release) / inst.n)


def test_clairvoyant_observations_show_duration_and_weight():
    inst = inst1([0, 0, 0], [3.0, 7.0, 2.0], [1.0, 1.0, 0.4], w=[1, 5, 2])
    for clairvoyant in (True, False):
        env = ClusterEnv(dataclasses.replace(instance_scenario(inst), clairvoyant=clairvoyant), queue_window=4)
        obs, _ = env.reset(seed=0)
        while obs["queue_mask"].sum() < 3:
            obs, *_ = env.step(Command.wait())
        F = obs["queue_jobs"].shape[1]
        assert obs["queue_jobs"][:3, F - 3].tolist() == [1, 5, 2]  # weights
        assert obs["queue_jobs"][:3, F - 1].tolist() == ([3, 7, 2] if clairvoyant else [0, 0, 0])  # durations


@pytest.mark.traces
@pytest.mark.skipif(not traces_available(), reason="needs the real traces (set CLUSTERGYM_TRACES)")
def test_trace_driven_presets():
    sc = make_preset("mris-alibaba", n_jobs=200, num_servers=1)
    p = sc.params
    assert sc.clairvoyant and sc.objective == "weighted-system" and len(sc.source) == 200
    assert set(p["weights"]) == {"1.0", "2.0"} and p["dropped"]["qos not LS/BE"] > 0
    assert p["gamma0"] == sc.source.work.min() and np.all(sc.source.demand <= 1)
    assert make_preset("mris-alibaba", n_jobs=200, weight_map="mris-natural").params["weights"] == {
        "1.0": p["weights"]["2.0"],
        "2.0": p["weights"]["1.0"],
    }
    fast = make_preset("mris-alibaba", n_jobs=200, traffic_scaling=4.0)
    assert np.allclose(fast.source.time * 4.0, sc.source.time)
    with pytest.raises(ScenarioError) as e:
        make_preset("mris-alibaba", n_jobs=200, offset=10_000)
    assert e.value.field == "params.offset"
    for a in ("mris", "pq", "ca-pq"):
        assert run_on_instance(sc, a)["paper"]["all_completed"]
    aug = make_preset("mris-alibaba", n_jobs=200, extra_resources=2)  # Fig. 6 resource scaling
    assert aug.num_resources == 5 and np.array_equal(aug.source.demand[:, :3], sc.source.demand)
    assert np.all(np.isin(aug.source.demand[:, 3:], make_preset("mris-alibaba").source.demand[:, 0]))


# ============================================================================ claims


def test_claims_are_registered_and_lemma41_reproduces():
    from clustergym.reproduce import CLAIMS, run_claims

    out = run_claims(["mris-lemma41"])
    assert out[0]["passed"], out
    ids = {c for c in CLAIMS if c.startswith("mris-")}
    assert {"mris-lemma41", "mris-lemma41-growth", "mris-fig7-patience", "mris-lemma64-tight"} <= ids
    assert all(CLAIMS[c].paper == "mris" for c in ids)
