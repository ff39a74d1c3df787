"""Tests of clustergym.scenarios: presets, YAML/JSON scenario files, resolve_scenario."""

from __future__ import annotations

import copy
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

import clustergym
from clustergym import PRESETS, Scenario, ScenarioError, load_scenario_file, make_preset, resolve_scenario
from clustergym.runner import run_episode
from clustergym.scenarios.presets.autoscale import SYN4_RHO


@pytest.fixture(autouse=True)
def _quiet_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# =============================================================================== presets
#: one changed parameter per preset, and how to see that it took effect
CHANGED = {
    "ec2": ({"zeta": 0.5, "num_servers": 4}, lambda s: s.num_servers == 4 and s.params["zeta"] == 0.5),
    "bf-trap": (
        {"num_servers": 3, "rate1": 5.0},
        lambda s: s.num_servers == 3 and np.allclose(s.source.arrival_rates(), [5.0, 10.4]),
    ),
    "two-sizes": ({"variant": "e2"}, lambda s: s.capacity[0, 0] == 10.0 and s.params["variant"] == "e2"),
    "uniform-sizes": (
        {"low": 0.01, "high": 0.19, "num_servers": 2},
        lambda s: s.num_servers == 2 and s.params["low"] == 0.01,
    ),
    "autoscale-4vm": ({"load": 0.5, "num_servers": 4}, lambda s: s.num_servers == 4 and s.params["load"] == 0.5),
}


#: presets built from generated parameters (trace presets load data: tested in test_traces.py)
SYNTHETIC = [name for name, p in PRESETS.items() if not p.needs_traces]  # trace presets: tests/traces


def test_the_foundation_presets_have_a_change_case():
    assert set(CHANGED) <= set(PRESETS)


@pytest.mark.parametrize("name", SYNTHETIC)
def test_preset_builds_with_defaults(name):
    from clustergym.traces import TraceNotFoundError

    try:
        s = make_preset(name)
    except TraceNotFoundError as e:  # a paper preset built from a trace (e.g. mris-alibaba)
        pytest.skip(f"{name} needs the real traces, set CLUSTERGYM_TRACES: {e}")
    assert isinstance(s, Scenario) and s.name == name
    assert s.num_servers >= 1 and s.num_resources == len(s.resources)
    defaults = PRESETS[name].defaults()
    if "horizon" in defaults:
        assert s.horizon == defaults["horizon"]
    assert s.description and PRESETS[name].description
    desc = s.describe()
    json.dumps(desc)  # JSON-ready
    assert desc["servers"] == s.num_servers
    # and the simulator it builds accepts a reset
    sim = s.make_simulator()
    sim.reset(0)
    assert sim.now == 0.0


@pytest.mark.parametrize("name", list(CHANGED))
def test_preset_builds_with_a_changed_parameter(name):
    params, took_effect = CHANGED[name]
    s = make_preset(name, **params)
    assert took_effect(s)
    assert not took_effect(make_preset(name))
    # also through gymnasium.make (extra kwargs are preset parameters)
    import gymnasium as gym

    env = gym.make(f"clustergym/{name}-v0", horizon=1.0, **params)
    assert took_effect(env.unwrapped.scenario)


@pytest.mark.parametrize("name", list(PRESETS))
def test_unknown_preset_parameter_names_it(name):
    with pytest.raises(ScenarioError) as ei:
        make_preset(name, nope=1)
    assert ei.value.field == "params.nope"
    assert "params.nope" in str(ei.value)


@pytest.mark.parametrize(
    "name,param,value",
    [
        ("ec2", "zeta", -0.5),
        ("ec2", "zeta", "high"),
        ("ec2", "num_servers", 2.5),
        ("ec2", "num_servers", 0),
        ("ec2", "horizon", 0),
        ("bf-trap", "rate1", float("nan")),
        ("two-sizes", "variant", "e3"),
        ("uniform-sizes", "alpha", -1),
        ("autoscale-4vm", "load", "x"),
    ],
)
def test_bad_preset_parameter_value_names_it(name, param, value):
    with pytest.raises(ScenarioError) as ei:
        make_preset(name, **{param: value})
    assert ei.value.field == f"params.{param}"


def test_unknown_preset_name():
    with pytest.raises(ScenarioError, match="unknown scenario"):
        make_preset("no-such-preset")


@pytest.mark.parametrize("zeta,L", [(0.9, 20), (0.5, 7), (1.0, 1)])
def test_ec2_rates_are_zeta_L_times_the_average_maximal_configuration(zeta, L):
    s = make_preset("ec2", zeta=zeta, num_servers=L)
    expected = zeta * L * np.array([2 / 3, 11 / 3, 2 / 3])
    np.testing.assert_allclose(s.source.arrival_rates(), expected, rtol=1e-9)
    np.testing.assert_allclose(s.params["rates"], expected, rtol=1e-9)
    np.testing.assert_array_equal(s.capacity, np.tile([90.0, 90.0, 5000.0], (L, 1)))
    assert s.objective == "queue" and s.queueing == "central"


def test_bf_trap_rates_and_sizes():
    s = make_preset("bf-trap")
    np.testing.assert_allclose(s.source.arrival_rates(), [20.8, 10.4], rtol=1e-12)
    np.testing.assert_array_equal(s.capacity, np.full((10, 1), 10.0))
    np.testing.assert_array_equal(s.source.types.demand, [[2.0], [5.0]])


@pytest.mark.parametrize("load,L", [(1.0, 30), (0.5, 4), (1.7, 3)])
def test_autoscale_rates_are_load_rho_L(load, L):
    s = make_preset("autoscale-4vm", load=load, num_servers=L)
    np.testing.assert_allclose(s.source.arrival_rates(), load * np.array([2.0, 0.5, 4 / 3, 1.0]) * L, rtol=1e-12)
    np.testing.assert_allclose(SYN4_RHO, [2.0, 0.5, 4 / 3, 1.0])
    assert s.queueing == "loss" and s.objective == "reward"


def test_slotted_presets_have_tick_epochs():
    for name in ("two-sizes", "uniform-sizes"):
        e = make_preset(name).epochs
        assert e.tick_period == 1.0 and not e.arrivals and not e.completions


# =============================================================================== scenario files
FULL = {
    "name": "my-cluster",
    "description": "two server kinds, typed Poisson jobs",
    "resources": ["cpu", "memory"],
    "servers": [{"count": 3, "capacity": [32, 128]}, {"count": 2, "capacity": [64, 512]}],
    "workload": {
        "kind": "poisson-typed",
        "types": [
            {"name": "small", "rate": 4.0, "demand": [2, 8], "service": {"dist": "exponential", "mean": 1.0}},
            {
                "name": "large",
                "rate": 1.0,
                "demand": [16, 64],
                "service": {"dist": "lognormal", "mean": 2.0, "sigma": 1.0},
                "weight": 2.0,
                "reward_rate": 5.0,
            },
        ],
    },
    "horizon": 1000,
    "objective": "system",
    "queueing": "central",
    "epochs": {"arrivals": True, "completions": True, "tick_rate": 0.5},
    "queue_cap": 5000,
}


def _write(path: Path, data) -> Path:
    if path.suffix == ".json":
        path.write_text(json.dumps(data))
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("ext", ["yaml", "yml", "json"])
def test_full_definition_loads_and_runs(tmp_path, ext):
    path = _write(tmp_path / f"cluster.{ext}", FULL)
    s = load_scenario_file(path)
    assert s.name == "my-cluster" and s.description.startswith("two server kinds")
    assert s.resources == ("cpu", "memory")
    np.testing.assert_array_equal(s.capacity, [[32, 128]] * 3 + [[64, 512]] * 2)
    np.testing.assert_allclose(s.source.arrival_rates(), [4.0, 1.0])
    np.testing.assert_array_equal(s.source.types.demand, [[2, 8], [16, 64]])
    assert s.horizon == 1000 and s.objective == "system" and s.queueing == "central" and s.queue_cap == 5000
    assert s.epochs.tick_rate == 0.5
    r = run_episode(str(path), "first-fit", horizon=15.0, seed=1)
    assert r["scenario"] == "my-cluster" and r["servers"] == 5
    assert r["sim_time"] == pytest.approx(15.0)
    assert r["arrivals"] > 30  # ~ 5 per time unit
    assert r["return"] == pytest.approx(-r["mean_jobs_in_system"] * r["sim_time"], rel=1e-9)


def test_yaml_and_json_give_the_same_scenario(tmp_path):
    a = run_episode(str(_write(tmp_path / "a.yaml", FULL)), "best-fit", horizon=10.0, seed=3)
    b = run_episode(str(_write(tmp_path / "b.json", FULL)), "best-fit", horizon=10.0, seed=3)
    for k in ("arrivals", "completed", "mean_queue_length", "return"):
        assert a[k] == b[k]


def test_preset_form_with_params_and_horizon_override(tmp_path):
    path = _write(
        tmp_path / "trap.yaml",
        {"preset": "bf-trap", "params": {"num_servers": 4, "rate1": 5.0}, "horizon": 30, "objective": "system"},
    )
    s = load_scenario_file(path)
    assert s.name == "bf-trap" and s.num_servers == 4 and s.horizon == 30.0 and s.objective == "system"
    np.testing.assert_allclose(s.source.arrival_rates(), [5.0, 10.4])
    r = run_episode(str(path), "first-fit", seed=0)
    assert r["sim_time"] == pytest.approx(30.0) and r["servers"] == 4


def test_preset_form_json(tmp_path):
    path = _write(tmp_path / "ec2.json", {"preset": "ec2", "params": {"zeta": 0.5, "num_servers": 2}, "horizon": 5})
    s = resolve_scenario(str(path))
    assert s.num_servers == 2 and s.horizon == 5.0
    np.testing.assert_allclose(s.source.arrival_rates(), 0.5 * 2 * np.array([2 / 3, 11 / 3, 2 / 3]))


def test_poisson_kind(tmp_path):
    path = _write(
        tmp_path / "po.yaml",
        {
            "resources": ["cpu"],
            "servers": [{"count": 2, "capacity": [1]}],
            "horizon": 20,
            "workload": {
                "kind": "poisson",
                "rate": 1.5,
                "demand": {"dist": "uniform", "low": [0.1], "high": [0.5]},
                "service": {"dist": "exponential", "mean": 1.0},
            },
        },
    )
    s = load_scenario_file(path)
    np.testing.assert_allclose(s.source.arrival_rates(), [1.5])
    r = run_episode(str(path), "first-fit", seed=0)
    assert 10 <= r["arrivals"] <= 60 and r["sim_time"] == pytest.approx(20.0)


def test_slotted_kind(tmp_path):
    path = _write(
        tmp_path / "sl.yaml",
        {
            "resources": ["units"],
            "servers": [{"capacity": [10]}],
            "horizon": 200,
            "workload": {
                "kind": "slotted",
                "rate_per_slot": 0.2,
                "demand": {"dist": "discrete", "values": [2, 5], "probs": [0.5, 0.5]},
                "service": {"dist": "geometric", "mean": 10},
            },
            "epochs": {"arrivals": False, "completions": False, "tick_period": 1},
        },
    )
    s = load_scenario_file(path)
    assert s.epochs.tick_period == 1.0 and not s.epochs.arrivals
    r = run_episode(str(path), "first-fit", seed=0)
    assert 15 <= r["arrivals"] <= 80
    # slotted: every arrival and start happens on a slot boundary
    sim = run_episode(str(path), "first-fit", seed=0, probes={"sim": lambda env: env.sim})["sim"]
    n = sim.jobs.size
    np.testing.assert_array_equal(sim.jobs.arrival[:n], np.round(sim.jobs.arrival[:n]))


def _replay_scenario(csv_name: str) -> dict:
    return {
        "resources": ["cpu", "mem"],
        "servers": [{"count": 2, "capacity": [4, 4]}],
        "horizon": 10,
        "workload": {
            "kind": "replay",
            "file": f"traces/{csv_name}",
            "columns": {"arrival": "submit", "duration": "runtime", "demand": ["cpu", "mem"]},
        },
    }


def test_replay_kind_with_a_relative_csv(tmp_path, monkeypatch):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "jobs.csv").write_text(
        "submit,runtime,cpu,mem\n0.0,1.0,1,2\n0.5,2.0,2,1\n1.0,1.5,1,1\n2.0,0.5,3,3\n"
    )
    path = _write(tmp_path / "replay.yaml", _replay_scenario("jobs.csv"))
    monkeypatch.chdir(Path("/"))  # the CSV is found relative to the scenario file, not the cwd
    r = run_episode(str(path), "first-fit", seed=0)
    assert r["arrivals"] == 4 and r["completed"] == 4
    sim = run_episode(str(path), "first-fit", seed=0, probes={"sim": lambda env: env.sim})["sim"]
    np.testing.assert_array_equal(sim.jobs.arrival[:4], [0.0, 0.5, 1.0, 2.0])
    np.testing.assert_array_equal(sim.jobs.demand[:4], [[1, 2], [2, 1], [1, 1], [3, 3]])
    np.testing.assert_array_equal(sim.jobs.work[:4], [1.0, 2.0, 1.5, 0.5])


# ------------------------------------------------------------------------------- malformed files
def _mut(fn):
    def apply(d):
        d = copy.deepcopy(d)
        fn(d)
        return d

    return apply


MALFORMED = [
    ("missing-workload", "yaml", _mut(lambda d: d.pop("workload")), "workload"),
    ("unknown-top-level-key", "yaml", _mut(lambda d: d.update(colour="blue")), "colour"),
    (
        "capacity-wrong-length",
        "yaml",
        _mut(lambda d: d["servers"][1].update(capacity=[64, 512, 9])),
        "servers[1].capacity",
    ),
    (
        "rate-not-numeric",
        "json",
        _mut(lambda d: d["workload"]["types"][0].update(rate="fast")),
        "workload.types[0].rate",
    ),
    (
        "rate-not-numeric-yaml",
        "yaml",
        _mut(lambda d: d["workload"]["types"][0].update(rate=[1])),
        "workload.types[0].rate",
    ),
    ("rate-negative", "yaml", _mut(lambda d: d["workload"]["types"][1].update(rate=-2.0)), "workload.types[1].rate"),
    (
        "unknown-distribution",
        "yaml",
        _mut(lambda d: d["workload"]["types"][0]["service"].update(dist="weibull")),
        "workload.types[0].service.dist",
    ),
    ("bad-objective", "yaml", _mut(lambda d: d.update(objective="speed")), "objective"),
    ("tick-rate-negative", "json", _mut(lambda d: d["epochs"].update(tick_rate=-1)), "epochs.tick_rate"),
    (
        "impossible-type",
        "yaml",
        _mut(lambda d: d["workload"]["types"][1].update(demand=[100, 64])),
        "workload.types[1].demand",
    ),
    (
        "impossible-type-0",
        "yaml",
        _mut(lambda d: d["workload"]["types"][0].update(demand=[2, 1000])),
        "workload.types[0].demand",
    ),
    (
        "demand-wrong-length",
        "yaml",
        _mut(lambda d: d["workload"]["types"][0].update(demand=[2])),
        "workload.types[0].demand",
    ),
    ("unknown-kind", "yaml", _mut(lambda d: d["workload"].update(kind="gamma")), "workload.kind"),
    ("count-zero", "yaml", _mut(lambda d: d["servers"][0].update(count=0)), "servers[0].count"),
    ("horizon-negative", "yaml", _mut(lambda d: d.update(horizon=-5)), "horizon"),
    ("bad-queueing", "yaml", _mut(lambda d: d.update(queueing="fifo")), "queueing"),
    ("epochs-bool", "yaml", _mut(lambda d: d["epochs"].update(arrivals="yes")), "epochs.arrivals"),
    (
        "service-missing-mean",
        "yaml",
        _mut(lambda d: d["workload"]["types"][0]["service"].pop("mean")),
        "workload.types[0].service.mean",
    ),
    ("params-without-preset", "yaml", _mut(lambda d: d.update(params={"zeta": 1})), "params"),
]


@pytest.mark.parametrize("case,ext,mutate,field", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_file_names_the_field(tmp_path, case, ext, mutate, field):
    path = _write(tmp_path / f"{case}.{ext}", mutate(FULL))
    with pytest.raises(ScenarioError) as ei:
        load_scenario_file(path)
    assert ei.value.field == field, str(ei.value)
    assert str(ei.value).startswith(field + ":")
    assert str(path) in str(ei.value)  # and which file


@pytest.mark.parametrize(
    "doc,field",
    [
        ({"preset": "ec2", "params": {"nope": 1}}, "params.nope"),
        ({"preset": "ec2", "params": {"zeta": "high"}}, "params.zeta"),
        ({"preset": "ec2", "params": [1, 2]}, "params"),
        ({"preset": "ec2", "servers": []}, "servers"),
        ({"preset": "ec2", "horizon": 0}, "horizon"),
    ],
)
def test_malformed_preset_form_names_the_field(tmp_path, doc, field):
    path = _write(tmp_path / "p.yaml", doc)
    with pytest.raises(ScenarioError) as ei:
        load_scenario_file(path)
    assert ei.value.field == field, str(ei.value)


def test_unknown_preset_in_file_names_the_preset_field(tmp_path):
    """The offending field of ``preset: no-such`` is ``preset`` (the file has no field ``scenario``)."""
    path = _write(tmp_path / "p.yaml", {"preset": "no-such", "horizon": 5})
    with pytest.raises(ScenarioError) as ei:
        load_scenario_file(path)
    assert "no-such" in str(ei.value)
    assert ei.value.field == "preset", str(ei.value)


def test_invalid_yaml_syntax_names_the_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nservers: [1, 2\n  - : :\n")
    with pytest.raises(ScenarioError) as ei:
        load_scenario_file(path)
    assert str(path) in str(ei.value) and "YAML" in str(ei.value)


def test_invalid_json_syntax_names_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"name": "x", "servers": [1, 2}')
    with pytest.raises(ScenarioError) as ei:
        load_scenario_file(path)
    assert str(path) in str(ei.value) and "JSON" in str(ei.value)


def test_top_level_not_a_mapping(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(ScenarioError, match="expected a mapping"):
        load_scenario_file(path)


def test_nonexistent_file(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(ScenarioError) as ei:
        load_scenario_file(path)
    assert str(path) in str(ei.value) and "cannot read" in str(ei.value)
    with pytest.raises(ScenarioError):
        resolve_scenario(str(path))


def test_replay_csv_with_a_missing_column(tmp_path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "nodur.csv").write_text("submit,cpu,mem\n0.0,1,2\n1.0,1,1\n")
    path = _write(tmp_path / "r.yaml", _replay_scenario("nodur.csv"))
    with pytest.raises(ScenarioError) as ei:
        load_scenario_file(path)
    assert ei.value.field == "workload.file"
    assert "missing column 'runtime'" in str(ei.value) and "nodur.csv" in str(ei.value)


def test_replay_csv_with_a_negative_duration_names_row_and_column(tmp_path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "neg.csv").write_text("submit,runtime,cpu,mem\n0.0,1.0,1,2\n0.5,2.0,2,1\n0.7,-3.0,1,1\n")
    path = _write(tmp_path / "r.yaml", _replay_scenario("neg.csv"))
    with pytest.raises(ScenarioError) as ei:
        load_scenario_file(path)
    msg = str(ei.value)
    assert ei.value.field == "workload.file"
    assert "neg.csv" in msg and "row 2" in msg and "column 'runtime'" in msg and "-3.0" in msg


def test_replay_csv_with_a_non_numeric_cell(tmp_path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "txt.csv").write_text("submit,runtime,cpu,mem\n0.0,1.0,one,2\n")
    path = _write(tmp_path / "r.yaml", _replay_scenario("txt.csv"))
    with pytest.raises(ScenarioError, match=r"row 0, column 'cpu'"):
        load_scenario_file(path)


def test_replay_csv_missing(tmp_path):
    path = _write(tmp_path / "r.yaml", _replay_scenario("absent.csv"))
    with pytest.raises(ScenarioError) as ei:
        load_scenario_file(path)
    assert ei.value.field == "workload.file" and "absent.csv" in str(ei.value)


# =============================================================================== resolve_scenario
def test_resolve_scenario_from_a_dict():
    s = resolve_scenario(copy.deepcopy(FULL))
    assert s.name == "my-cluster" and s.num_servers == 5
    with pytest.raises(ScenarioError) as ei:
        resolve_scenario(copy.deepcopy(FULL), zeta=0.5)
    assert ei.value.field == "params.zeta"
    with pytest.raises(ScenarioError) as ei:
        resolve_scenario({"resources": ["cpu"]})
    assert ei.value.field in ("servers", "workload", "horizon")


def test_resolve_scenario_from_a_scenario_returns_it():
    s = make_preset("bf-trap", num_servers=2)
    assert resolve_scenario(s) is s
    with pytest.raises(ScenarioError) as ei:
        resolve_scenario(s, num_servers=3)
    assert ei.value.field == "params.num_servers"


def test_resolve_scenario_from_a_preset_name_and_params():
    s = resolve_scenario("ec2", zeta=0.5, num_servers=2)
    assert s.name == "ec2" and s.num_servers == 2
    np.testing.assert_allclose(s.source.arrival_rates(), 0.5 * 2 * np.array([2 / 3, 11 / 3, 2 / 3]))
    with pytest.raises(ScenarioError) as ei:
        resolve_scenario("ec2", nope=1)
    assert ei.value.field == "params.nope"


def test_resolve_scenario_from_a_path(tmp_path):
    path = _write(tmp_path / "c.yaml", FULL)
    for p in (path, str(path)):
        assert resolve_scenario(p).name == "my-cluster"


def test_resolve_scenario_file_with_params_is_an_error(tmp_path):
    path = _write(tmp_path / "c.yaml", FULL)
    with pytest.raises(ScenarioError) as ei:
        resolve_scenario(str(path), zeta=0.5)
    assert ei.value.field == "params.zeta"


def test_resolve_scenario_unknown_name():
    with pytest.raises(ScenarioError) as ei:
        resolve_scenario("definitely-not-a-preset")
    assert ei.value.field == "scenario"


def test_with_horizon():
    s = make_preset("ec2")
    assert s.with_horizon(None) is s
    assert s.with_horizon(12).horizon == 12.0 and s.horizon == 1000.0
    for bad in (0, -1, math.nan):
        with pytest.raises(ScenarioError, match="horizon"):
            s.with_horizon(bad)


def test_env_accepts_dicts_and_files(tmp_path):
    import gymnasium as gym

    path = _write(tmp_path / "c.json", FULL)
    for scenario in (str(path), copy.deepcopy(FULL)):
        env = gym.make("clustergym/Queueing-v0", scenario=scenario, horizon=3.0)
        assert env.unwrapped.scenario.name == "my-cluster"
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
    assert clustergym.ENV_IDS
