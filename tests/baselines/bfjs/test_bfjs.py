"""BF-J, BF-S, BF-J/S (BF-J/S paper §IV-A) and FIFO-FF (§VII-B): exact unit scenarios (U4-U13), per-slot
invariants, a literal re-implementation as oracle, and short stability tests (docs/papers/bfjs.md#test-labels)."""

from __future__ import annotations

import numpy as np
import pytest

from clustergym.agent_api import Agent, list_agents, make_agent, make_env_for
from clustergym.baselines.bfjs.bfjs import SLOT_EPOCHS, first_by_id
from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.errors import ConfigError, InvalidCommandError
from clustergym.reproduce.bfjs import classify, run_slotted
from clustergym.scenarios import Scenario, make_preset
from clustergym.workloads import Geometric, ReplaySource, SlottedSource, UniformDemand

EPS = 1e-9


# ---------------------------------------------------------------------------------------------- helpers
def replay(jobs, capacity, horizon=20.0) -> Scenario:
    """Jobs ``(slot, size, slots of service)`` on servers of the given capacities, slotted epochs."""
    t, s, w = (np.array([j[k] for j in jobs], float) for k in range(3))
    cap = np.asarray(capacity, float).reshape(len(capacity), -1)
    src = ReplaySource(t, s.reshape(len(jobs), -1), w)
    return Scenario(name="unit", capacity=cap, source=src, resources=tuple(f"r{d}" for d in range(cap.shape[1])),
                    horizon=horizon, epochs=SLOT_EPOCHS)


def drive(sc, agent, seed=0, check=None):
    """Run an episode; return the placements ``(slot, job, server)``; ``check(env, agent)`` runs after
    every slot's scheduling (just before the WAIT of each tick)."""
    if isinstance(agent, str):
        agent = make_agent(agent)
    env = make_env_for(sc, agent)
    env.reset(seed=seed)
    agent.reset(env, seed=seed)
    out = []
    while True:
        cmd, _ = agent.predict(None)
        if cmd.kind == Cmd.PLACE:
            out.append((int(env.sim.now), cmd.job, cmd.server))
        elif check is not None and env.sim.event.kind == EventKind.TICK:
            check(env, agent)
        _, _, term, trunc, _ = env.step(cmd)
        if term or trunc:
            return out


def slotted(L=3, low=0.1, high=0.9, rate=0.1, mean=20.0, R=1, capacity=None, horizon=2000.0) -> Scenario:
    cap = np.ones((L, R)) if capacity is None else np.asarray(capacity, float)
    src = SlottedSource(rate, UniformDemand([low] * R, [high] * R), Geometric(1.0 / mean))
    return Scenario(name="rand", capacity=cap, source=src, resources=tuple(f"r{d}" for d in range(R)),
                    horizon=horizon, epochs=SLOT_EPOCHS)


# ---------------------------------------------------------------------------------------------- registry
def test_agents_registered_with_parameters():
    names = list_agents()
    assert {"bf-j", "bf-s", "bf-js", "fifo-ff"} <= set(names)
    assert "§IV-A" in names["bf-js"]  # the description cites the paper's section
    for name in ("bf-j", "bf-s", "bf-js", "fifo-ff"):
        ag = make_agent(name)
        assert ag.requirements.epochs == SLOT_EPOCHS
        assert ag.mode == "faithful" and make_agent(name, mode="vector").vector
    with pytest.raises(ConfigError, match="agent.mode"):
        make_agent("bf-js", mode="scalar")
    with pytest.raises(ConfigError, match="agent.blocking"):
        make_agent("fifo-ff", blocking="sometimes")
    with pytest.raises(ConfigError, match="agent.J"):
        make_agent("bf-js", J=4)


def test_first_by_id_matches_a_literal_scan():
    from sortedcontainers import SortedList

    rng = np.random.default_rng(3)
    for n in (1, 5, 40, 300):
        occ = {i: float(rng.choice([0.1, 0.2, 0.3, 0.5, 0.7])) for i in range(0, 3 * n, 3)}
        pool = SortedList((o, 0.0, -i) for i, o in occ.items())
        fifo = dict.fromkeys(occ)
        for x in (0.0, 0.1, 0.15, 0.3, 0.69, 1.0):
            want = next((i for i in fifo if occ[i] <= x), -1)
            assert first_by_id(pool, fifo, occ, x) == want


# ---------------------------------------------------------------------------------------------- unit scenarios
def test_u4_bf_j_tightest_server():
    # fillers leave free = [0.5, 0.3, 0.35]; then a = 0.3, b = 0.32, c = 0.45 arrive in one slot
    sc = replay([(0, 0.5, 99), (1, 0.7, 99), (2, 0.65, 99), (3, 0.3, 99), (3, 0.32, 99), (3, 0.45, 99)], [1, 1, 1],
                horizon=6)
    for name in ("bf-j", "bf-js"):
        holder = {}
        pl = drive(sc, name, check=lambda env, ag, h=holder: h.update(free=[ag.free(l) for l in range(3)]))
        assert pl == [(0, 0, 0), (1, 1, 1), (2, 2, 2), (3, 3, 1), (3, 4, 2), (3, 5, 0)], name
        assert np.allclose(holder["free"], [0.05, 0.0, 0.03])


def test_u5_bf_s_largest_first_with_id_tie():
    # one server; at slot 1 its free capacity is 0.55 (the 0.1 filler leaves); queue sizes 0.3, 0.5, 0.25, 0.05, 0.05
    jobs = [(0, 0.45, 99), (0, 0.1, 1)] + [(1, s, 99) for s in (0.3, 0.5, 0.25, 0.05, 0.05)]
    sc = replay(jobs, [1], horizon=4)
    for name in ("bf-s", "bf-js"):
        left = {}
        pl = drive(sc, name, check=lambda env, ag, q=left: q.update(q=list(env.view.queue())))
        assert pl == [(0, 0, 0), (0, 1, 0), (1, 3, 0), (1, 5, 0)], name   # 0.5, then 0.05 with the smaller id
        assert left["q"] == [2, 4, 6]


def test_u6_bf_j_and_bf_s_differ():
    sc = replay([(0, 0.5, 99), (1, 0.2, 99), (1, 0.45, 99)], [1], horizon=3)
    assert drive(sc, "bf-j")[1:] == [(1, 1, 0)]      # the job order: 0.2 goes, 0.45 no longer fits
    assert drive(sc, "bf-s")[1:] == [(1, 2, 0)]      # the largest job: 0.45 goes, 0.2 no longer fits


def test_u7_bf_js_step_order():
    # server 0 loses its 0.6 job at slot 2 (free 0.6); server 1 holds 0.55 (free 0.45, no departure);
    # o1 = 0.5 waits since slot 1; NEW(2) = n1 = 0.4, n2 = 0.15
    jobs = [(0, 0.6, 2), (1, 0.55, 99), (1, 0.4, 99), (1, 0.5, 99), (2, 0.4, 99), (2, 0.15, 99)]
    sc = replay(jobs, [1, 1], horizon=4)
    seen = {}

    def check(env, ag):
        seen[int(env.sim.now)] = (list(ag.dep), list(ag.new), list(env.view.queue()))

    pl = drive(sc, "bf-js", check=check)
    assert pl == [(0, 0, 0), (1, 1, 1), (1, 2, 0), (2, 3, 0), (2, 4, 1)]
    assert seen[2] == ([0], [4, 5], [5])            # DEP(2) = {0}; n2 = 0.15 fits nowhere and waits
    assert seen[0][0] == [0, 1]                     # DEP(0) = every server


def test_u12_fifo_ff_blocking_and_skip():
    # fillers leave free = [0.3, 0.6]; queue a = 0.5, b = 0.2, c = 0.7, d = 0.05
    jobs = [(0, 0.7, 99), (1, 0.4, 99), (2, 0.5, 99), (2, 0.2, 99), (2, 0.7, 99), (2, 0.05, 99)]
    sc = replay(jobs, [1, 1], horizon=4)
    head = {}
    pl = drive(sc, "fifo-ff", check=lambda env, ag: head.update(q=list(env.view.queue())))
    assert pl == [(0, 0, 0), (1, 1, 1), (2, 2, 1), (2, 3, 0)]
    assert head["q"] == [4, 5]                      # c blocks d
    pl = drive(sc, make_agent("fifo-ff", blocking=False))
    assert pl == [(0, 0, 0), (1, 1, 1), (2, 2, 1), (2, 3, 0), (2, 5, 0)]


def test_u13_timeline_one_slot_service_frees_capacity_next_slot():
    sc = replay([(0, 1.0, 1), (1, 1.0, 1), (1, 1.0, 3), (2, 0.5, 1)], [1], horizon=6)
    deps = {}
    pl = drive(sc, "bf-js", check=lambda env, ag: deps.update({int(env.sim.now): list(ag.dep)}))
    # job 0 occupies slot 0 only; job 1 starts in slot 1, job 2 in slot 2 (3 slots: 2, 3, 4), job 3 waits
    assert pl == [(0, 0, 0), (1, 1, 0), (2, 2, 0), (5, 3, 0)]
    assert deps[1] == [0] and deps[2] == [0] and deps[3] == [] and deps[5] == [0]


def test_u13_geometric_service_mean():
    src = make_preset("two-sizes").source
    work = np.concatenate([c.work for c, _ in zip(src.chunks(np.random.default_rng(0)), range(25))])
    assert work.size >= 100_000 and np.all(work >= 1) and np.all(work == np.round(work))
    assert abs(work.mean() / 100.0 - 1.0) < 0.02


# ---------------------------------------------------------------------------------------------- literal oracle
class Literal(Agent):
    """BF-J, BF-S, BF-J/S (§IV-A) and FIFO-FF (§VII-B) executed literally on the full state every slot."""

    requirements = make_agent("bf-js").requirements

    def __init__(self, policy, vector=False):
        super().__init__()
        self.policy, self.vector = policy, vector

    def reset(self, env, seed=None):
        super().reset(env, seed)
        cap = np.asarray(self.view.capacity)
        self.ref = cap.max(axis=0)
        self.capn = cap / self.ref
        self.prev = [set() for _ in range(len(cap))]
        self.seen, self.first, self.cmds, self.ep = set(), True, [], -1

    def act(self, obs):
        v = self.view
        if v.epoch != self.ep:
            self.ep = v.epoch
            if v.event.kind == EventKind.TICK:
                self.cmds = self.slot()
        return self.cmds.pop(0) if self.cmds else Command.wait()

    def slot(self):
        v, L = self.view, len(self.capn)
        queue = list(v.queue())
        dem = {i: np.asarray(v.demand(i)) / self.ref for i in queue}
        run = [set(v.running_on(l)) for l in range(L)]
        use = [sum((np.asarray(v.demand(i)) / self.ref for i in run[l]), np.zeros(len(self.ref))) for l in range(L)]
        uses = [sum(float((np.asarray(v.demand(i)) / self.ref).max()) for i in run[l]) for l in range(L)]
        dep = list(range(L)) if self.first else [l for l in range(L) if self.prev[l] - run[l]]
        new = [i for i in queue if i not in self.seen]
        self.first = False
        self.seen.update(queue)
        r = {i: float(d.max()) for i, d in dem.items()}
        cap = self.capn.min(axis=1)
        out = []

        def fits(i, l):
            if self.vector:
                return bool(np.all(dem[i] <= self.capn[l] - use[l] + EPS * cap[l]))
            return r[i] <= cap[l] - uses[l] + EPS * cap[l]

        def score(l):
            return float((self.capn[l] - use[l]).mean()) if self.vector else cap[l] - uses[l]

        def place(i, l):
            queue.remove(i)
            use[l] = use[l] + dem[i]
            uses[l] += r[i]
            run[l].add(i)
            out.append(Command.place(i, l))

        def bf_j(i):
            best = None
            for l in range(L):
                if fits(i, l) and (best is None or score(l) < score(best) - 1e-12):
                    best = l
            if best is not None:
                place(i, best)

        def bf_s(l):
            while True:
                c = [i for i in queue if fits(i, l)]
                if not c:
                    return
                key = (lambda i: (r[i], float(dem[i].sum()), -i)) if self.vector else (lambda i: (r[i], -i))
                place(max(c, key=key), l)

        def first_fit(i):
            ls = [l for l in range(L) if fits(i, l)]
            if ls:
                place(i, ls[0])
            return bool(ls)

        if self.policy == "bf-j":
            for i in list(queue):
                bf_j(i)
        elif self.policy == "bf-s":
            for l in range(L):
                bf_s(l)
        elif self.policy == "bf-js":
            for l in dep:
                bf_s(l)
            for i in new:
                if i in queue:
                    bf_j(i)
        elif self.policy == "fifo-ff":
            while queue and first_fit(queue[0]):
                pass
        elif self.policy == "fifo-ff-skip":
            for i in list(queue):
                first_fit(i)
        self.prev = run
        return out


@pytest.mark.parametrize("policy", ["bf-j", "bf-s", "bf-js", "fifo-ff", "fifo-ff-skip"])
def test_agents_match_the_literal_pseudocode(policy):
    name, params = (("fifo-ff", {"blocking": False}) if policy == "fifo-ff-skip" else (policy, {}))
    cases = [
        (slotted(L=3, rate=0.16, horizon=700), False),                                    # E3b-like, overloaded
        (slotted(L=2, low=0.01, high=0.3, rate=0.5, horizon=500), False),                # small jobs, long queue
        (slotted(L=3, rate=0.13, horizon=500, capacity=[[1.0], [0.5], [2.0]]), False),  # heterogeneous
        (slotted(L=3, rate=0.2, R=2, low=0.05, high=0.6, horizon=400), False),           # 2 resources, faithful
        (slotted(L=3, rate=0.2, R=2, low=0.05, high=0.6, horizon=400), True),            # 2 resources, vector
        (slotted(L=40, rate=4.0, horizon=120), False),                                    # L > 32: NumPy scans
        (slotted(L=40, rate=4.0, R=2, low=0.05, high=0.6, horizon=80), True),
    ]
    for sc, vector in cases:
        got = drive(sc, make_agent(name, mode="vector" if vector else "faithful", **params), seed=1)
        want = drive(sc, Literal(policy, vector=vector), seed=1)
        assert len(got) > 50
        assert got == want, (policy, sc.capacity.tolist(), vector)


# ---------------------------------------------------------------------------------------------- per-slot invariants
def _invariants(kind):
    def check(env, ag):
        v, sim = env.view, env.sim
        L = v.num_servers
        assert np.all(v.load <= np.asarray(v.capacity) * (1 + 1e-9) + 1e-12)                      # 1. capacity
        running = int(v.count_real.sum())
        assert sim.n_arrivals == sim.n_completed + v.num_queued + running + sim.impossible_rejected  # 2.
        for l in range(L):                                                                    # agent = kernel
            assert set(ag.on[l]) == set(v.running_on(l))
        q = v.queue()
        kernel_fits = v.num_resources == 1 or ag.vector  # the kernel's fit check is the agent's own
        if kind == "maximal":                                                                 # 3. maximality
            assert not any(ag.fits(i, l) for i in q for l in range(L))
            if kernel_fits:
                assert not any(v.fits(i).any() for i in q)
            # Lemma 1: a server less than half full -> every queued job > 1/2
            if v.num_resources == 1 and any(ag.used[l] < 0.5 for l in range(L)):
                assert all(ag.occ[i] > 0.5 for i in q)
        elif kind == "head" and q:                                                            # 4. FIFO-FF
            assert not any(ag.fits(q[0], l) for l in range(L))
            if kernel_fits:
                assert not v.fits(q[0]).any()
    return check


@pytest.mark.parametrize("name,kind", [("bf-j", "maximal"), ("bf-s", "maximal"), ("bf-js", "maximal"),
                                       ("fifo-ff", "head")])
def test_per_slot_invariants(name, kind):
    scenarios = (slotted(L=4, rate=0.22, horizon=1500),
                 make_preset("two-sizes", variant="e2", rate=0.04, horizon=3000),
                 slotted(L=3, rate=0.25, R=2, low=0.05, high=0.7, horizon=800))
    for sc in scenarios:
        for mode in ("faithful", "vector"):
            drive(sc, make_agent(name, mode=mode), seed=2, check=_invariants(kind))


def test_faithful_mode_scalarises_to_max_demand():
    # two resources: 0.6 cpu / 0.1 mem and 0.1 cpu / 0.6 mem fit together as vectors but not as max-demand
    src = ReplaySource(np.zeros(2), np.array([[0.6, 0.1], [0.1, 0.6]]), np.full(2, 99.0))
    sc = Scenario(name="u", capacity=np.ones((1, 2)), source=src, resources=("cpu", "mem"), horizon=3,
                  epochs=SLOT_EPOCHS)
    assert drive(sc, make_agent("bf-js")) == [(0, 0, 0)]
    assert drive(sc, make_agent("bf-js", mode="vector")) == [(0, 0, 0), (0, 1, 0)]


def test_an_invalid_placement_would_raise():
    # the agents run with invalid_action="raise": a wrong shadow state could not go unnoticed
    sc = replay([(0, 0.6, 99), (0, 0.6, 99)], [1], horizon=2)
    env = make_env_for(sc, make_agent("bf-js"))
    env.reset(seed=0)
    env.step(Command.wait())                  # START -> the tick of slot 0 (after its arrivals)
    env.step(Command.place(0, 0))
    with pytest.raises(InvalidCommandError):
        env.step(Command.place(1, 0))


# ---------------------------------------------------------------------------------------------- short stability tests
def test_s1_bf_js_stable_below_half_capacity():
    # Theorem 2: E3b at alpha = 0.45 (rho < L / (2 R)): stable, tiny queue (expected average about 0.2)
    runs = [run_slotted("uniform-sizes", "bf-js", seed=s, horizon=40_000, params={"alpha": 0.45}) for s in (0, 1)]
    assert classify(runs, q_max=5) == "STABLE"
    assert max(r["avg"] for r in runs) < 2


def test_s12_every_policy_unstable_beyond_the_bound():
    # Lemma 2: alpha = 1.05 > 1 on E3b; lambda - lambda_cap = 0.005 jobs per slot
    T = 40_000
    for name in ("bf-js", "fifo-ff"):
        r = run_slotted("uniform-sizes", name, seed=0, horizon=T, params={"alpha": 1.05})
        assert classify([r], growth=0.25 * 0.005 * T) == "UNSTABLE", (name, r["m1"], r["m2"], r["q_final"])


def test_e1_bf_js_stable_where_vqs_is_not():
    # S6 shortened: E1 (lambda = 0.014, 0.7 rho*): BF-J/S keeps a queue of a few jobs (expected average 2.6-2.8)
    runs = [run_slotted("two-sizes", "bf-js", seed=s, horizon=60_000) for s in (0, 1)]
    assert classify(runs, q_max=20) == "STABLE"
    assert all(r["avg"] < 8 for r in runs)


@pytest.mark.traces
def test_agents_on_the_google_trace_preset():
    # E4's setup (§VII-B) on a small piece: the first 1500 tasks on 40 servers (> 32: the NumPy server scans)
    pytest.importorskip("clustergym.traces")
    try:
        sc = make_preset("bfjs-google", first_n=1500, num_servers=40, horizon=6_000.0)
    except Exception as e:
        pytest.skip(f"Google trace unavailable: {e}")
    full = _invariants("maximal")

    def check(env, ag):  # every 25th slot (O(queue x servers) each)
        if int(env.sim.now) % 25 == 0:
            full(env, ag)

    placed = {}
    for name in ("bf-js", "vqs-bf"):
        ag = make_agent(name)
        placed[name] = drive(sc, ag, check=check)
        if name == "vqs-bf":
            assert ag.J == 10  # no lower bound on trace demands: J = 10 (docs/papers/bfjs.md#choice-of-j)
    assert len(placed["bf-js"]) > 300 and len(placed["vqs-bf"]) > 300
    assert placed["bf-js"] != placed["vqs-bf"]
