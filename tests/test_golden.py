"""Golden figures: the performance work must not change any result.

``tests/fixtures/golden_figures.json`` holds, recorded before the kernel was
optimised, the ``clustergym run`` metrics of several presets x agents x seeds
(synthetic presets, trace presets on the committed fixture traces, and a few
runs on the shared real traces) and the reward sums and observation hashes of
environment trajectories under a seeded random masked policy.  This test
recomputes them and asserts they are **identical** (every float bit for bit;
the observation hashes are SHA-256 of the observation arrays' bytes).

Both kernel paths are checked: every case on the pure-NumPy path (numba
switched off with ``clustergym.core.accel.forced(False)``, as
``CLUSTERGYM_NO_NUMBA=1`` does), and the cases that can take the compiled path
(greedy agents with a scan window) also on it, when numba is installed.
Equality is exact everywhere: no tolerance was needed, because the optimised
code performs the same floating-point operations in the same order.

Regenerate (only when a result is *meant* to change, and say so in the commit):
``python tests/test_golden.py --write``.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "fixtures" / "golden_figures.json"
FIXTURE_TRACES = str(HERE / "fixtures" / "traces")

#: (preset, preset params, agent, agent params, seeds, horizon)
RUN_CASES: list[tuple[str, dict, str, dict, tuple[int, ...], float | None]] = [
    ("ec2", {}, "best-fit", {}, (0, 1), 60.0),
    ("ec2", {}, "first-fit", {}, (0,), 60.0),
    ("ec2", {}, "random-fit", {}, (0,), 60.0),
    ("ec2", {}, "best-fit", {"select_job": "fifo"}, (0,), 60.0),
    ("ec2", {}, "best-fit", {"scan": 8}, (0,), 60.0),
    ("ec2", {"num_servers": 100}, "best-fit", {}, (2,), 8.0),
    ("ec2", {}, "rms", {}, (0,), 20.0),
    ("ec2", {}, "rms-rf-ad-plus", {}, (0,), 20.0),
    ("ec2", {}, "rms-bf", {}, (1,), 20.0),
    ("ec2", {}, "mwr", {}, (0,), 20.0),
    ("ec2", {}, "random", {}, (0,), 20.0),
    ("bf-trap", {}, "best-fit", {}, (0,), 30.0),
    ("bf-trap", {}, "rms-less-wasteful", {}, (0,), 20.0),
    ("two-sizes", {}, "bf-js", {}, (0,), 2000.0),
    ("two-sizes", {}, "vqs-bf", {}, (0,), 2000.0),
    ("uniform-sizes", {}, "bf-j", {}, (0,), 1000.0),
    ("lotes-table", {}, "lotes", {}, (0,), 0.05),
    ("lotes-table", {}, "tetris", {}, (0,), 0.05),
    ("lotes-table", {}, "lotes-greedy", {}, (0,), 0.05),
    ("mris-patience", {}, "mris", {}, (0,), None),
    ("mris-patience", {}, "pq-wsjf", {}, (0,), None),
    ("mris-patience", {}, "ca-pq", {}, (0,), None),
    ("autoscale-4vm", {}, "dra", {}, (0,), 20.0),
    ("autoscale-4vm", {}, "gpa-static", {}, (0,), 20.0),
    ("autoscale-4vm", {}, "best-fit-admit", {}, (0,), 20.0),
    ("autoscale-4vm", {}, "dra-preemption", {}, (0,), 20.0),
    # trace presets on the committed (synthetic) fixture traces: always available
    ("rms-google", {"trace_dir": FIXTURE_TRACES, "num_servers": 5}, "best-fit", {}, (0,), None),
    ("rms-google", {"trace_dir": FIXTURE_TRACES, "num_servers": 5}, "rms", {}, (0,), 300.0),
    ("bfjs-google", {"trace_dir": FIXTURE_TRACES, "num_servers": 5}, "bf-js", {}, (0,), None),
    ("lotes-google", {"trace_dir": FIXTURE_TRACES}, "lotes-greedy", {}, (0,), None),
    ("autoscale-google", {"trace_dir": FIXTURE_TRACES, "num_servers": 5}, "dra", {}, (0,), None),
    ("google-bf-replay", {"trace_dir": FIXTURE_TRACES, "num_servers": 4}, "best-fit", {"scan": 64}, (0,), None),
]

#: runs on the shared real traces (skipped when absent)
SHARED_CASES: list[tuple[str, dict, str, dict, tuple[int, ...], float | None]] = [
    ("rms-google", {"first_n": 3000, "num_servers": 20}, "best-fit", {}, (0,), None),
    ("rms-google", {"first_n": 2000, "num_servers": 20}, "rms", {}, (0,), 300.0),
    ("google-bf-replay", {"first_n": 5000, "num_servers": 10}, "best-fit", {"scan": 64}, (0,), None),
]

#: (env id / preset, kwargs, steps): random masked policy, seeded
ENV_CASES: list[tuple[str, dict, int]] = [
    ("ec2", {}, 400),
    ("ec2", {"action_mode": "slot", "queue_window": 4}, 300),
    ("ec2", {"num_servers": 50}, 300),
    ("bf-trap", {"skip_trivial": False}, 300),
    ("autoscale-4vm", {}, 300),
    ("lotes-table", {}, 300),
    ("mris-patience", {}, 200),
]

_DROP = {"wall_seconds"}


def _clean(x: Any) -> Any:
    """JSON-safe, exact: floats kept as floats (json round-trips doubles exactly), NaN as a string."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items() if k not in _DROP}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (np.floating, float)):
        x = float(x)
        return "nan" if math.isnan(x) else x
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def _key(preset: str, params: dict, agent: str, aparams: dict, seed: int, horizon: float | None) -> str:
    p = {k: v for k, v in params.items() if k != "trace_dir"}
    tag = "fixture" if params.get("trace_dir") == FIXTURE_TRACES else ""
    return f"{preset}{tag and '@' + tag}{json.dumps(p, sort_keys=True)}|{agent}{json.dumps(aparams, sort_keys=True)}|s{seed}|h{horizon}"


def run_case(preset: str, params: dict, agent: str, aparams: dict, seed: int, horizon: float | None) -> dict:
    from clustergym.agent_api import make_agent
    from clustergym.runner import run_episode
    from clustergym.scenarios import resolve_scenario

    sc = resolve_scenario(preset, **params)
    m = run_episode(sc, make_agent(agent, **aparams), seed=seed, horizon=horizon, agent_name=agent)
    return _clean(m)


def env_case(preset: str, kwargs: dict, steps: int, seed: int = 0) -> dict:
    from clustergym.envs import AdmissionEnv, ClusterEnv
    from clustergym.scenarios import resolve_scenario

    kw = dict(kwargs)
    sc_kw = {k: kw.pop(k) for k in list(kw) if k in ("num_servers",)}
    sc = resolve_scenario(preset, **sc_kw)
    cls = AdmissionEnv if sc.queueing == "loss" else ClusterEnv
    env = cls(sc, horizon=1e9, **kw)
    rng = np.random.default_rng(seed)
    h = hashlib.sha256()
    obs, _ = env.reset(seed=seed)
    rewards = []
    for i in range(steps):
        for k in sorted(obs):
            h.update(k.encode())
            h.update(np.ascontiguousarray(obs[k]).tobytes())
        valid = np.flatnonzero(obs["action_mask"])
        obs, r, term, trunc, _ = env.step(int(valid[rng.integers(valid.size)]))
        rewards.append(r)
        if term or trunc:
            obs, _ = env.reset(seed=seed + i + 1)
    return {
        "rewards_sum": float(np.sum(rewards)),
        "rewards_hash": hashlib.sha256(np.asarray(rewards).tobytes()).hexdigest(),
        "obs_hash": h.hexdigest(),
        "time": float(env.sim.now),
        "events": int(env.sim.n_events),
    }


def _shared_dir() -> str | None:
    """The real traces as the presets find them ($CLUSTERGYM_TRACES, else the user data folder), if present."""
    from clustergym.traces.paths import TraceNotFoundError, resolve_trace_dir

    try:
        d = resolve_trace_dir()
    except TraceNotFoundError:
        return None
    return str(d) if (d / "google-clusterdata-2011-2").is_dir() else None


def compute_all(shared: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": {}, "shared_runs": {}, "envs": {}}
    for preset, params, agent, ap, seeds, horizon in RUN_CASES:
        for s in seeds:
            out["runs"][_key(preset, params, agent, ap, s, horizon)] = run_case(preset, params, agent, ap, s, horizon)
    if shared:
        for preset, params, agent, ap, seeds, horizon in SHARED_CASES:
            for s in seeds:
                out["shared_runs"][_key(preset, params, agent, ap, s, horizon)] = run_case(
                    preset, params, agent, ap, s, horizon
                )
    for preset, kw, steps in ENV_CASES:
        out["envs"][f"{preset}{json.dumps(kw, sort_keys=True)}|{steps}"] = env_case(preset, kw, steps)
    return out


# ---------------------------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text())


def _assert_same(key: str, got: dict, want: dict) -> None:
    assert got.keys() == want.keys(), f"{key}: fields differ: {sorted(set(got) ^ set(want))}"
    diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
    assert not diff, f"{key}: changed figures (got, golden): {diff}"


def _run_params() -> list:
    """Every case on the NumPy path; the cases a compiled path can take (a scan window) also on it."""
    out = []
    for c in RUN_CASES:
        cid = f"{c[0]}-{c[2]}{'-' + str(c[3]) if c[3] else ''}"
        out.append(pytest.param(c, "numpy", id=f"{cid}-numpy"))
        if "scan" in c[3]:
            out.append(pytest.param(c, "compiled", id=f"{cid}-compiled"))
    return out


@pytest.mark.parametrize("case,mode", _run_params())
def test_run_figures_unchanged(golden: dict, case: tuple, mode: str) -> None:
    from clustergym.core import accel

    if mode == "compiled" and not accel.available():
        pytest.skip("numba is not installed (the optional 'fast' extra): only the NumPy path is checked")
    preset, params, agent, ap, seeds, horizon = case
    with accel.forced(mode == "compiled"):
        for s in seeds:
            key = _key(preset, params, agent, ap, s, horizon)
            _assert_same(key, run_case(preset, params, agent, ap, s, horizon), golden["runs"][key])


@pytest.mark.traces
@pytest.mark.parametrize("case", SHARED_CASES, ids=lambda c: f"{c[0]}-{c[2]}")
def test_shared_trace_figures_unchanged(golden: dict, case: tuple) -> None:
    if _shared_dir() is None:
        pytest.skip("the real traces were not found: set CLUSTERGYM_TRACES to the directory of the trace subsets")
    preset, params, agent, ap, seeds, horizon = case
    for s in seeds:
        key = _key(preset, params, agent, ap, s, horizon)
        _assert_same(key, run_case(preset, params, agent, ap, s, horizon), golden["shared_runs"][key])


@pytest.mark.parametrize("case", ENV_CASES, ids=lambda c: f"{c[0]}{'-' + str(c[1]) if c[1] else ''}")
def test_env_trajectories_unchanged(golden: dict, case: tuple) -> None:
    preset, kw, steps = case
    key = f"{preset}{json.dumps(kw, sort_keys=True)}|{steps}"
    _assert_same(key, env_case(preset, kw, steps), golden["envs"][key])


if __name__ == "__main__":  # python tests/test_golden.py --write
    if "--write" not in sys.argv:
        sys.exit("usage: python tests/test_golden.py --write   (regenerates tests/fixtures/golden_figures.json)")
    data = compute_all(shared=_shared_dir() is not None)
    GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(
        f"wrote {GOLDEN}: {len(data['runs'])} runs, {len(data['shared_runs'])} shared-trace runs, "
        f"{len(data['envs'])} env trajectories"
    )
