"""No silent results: inputs that used to give another result without a word are refused with a message
naming them (exit 2, one JSON document with ``--json``), or warned about where the behaviour is right
but surprising."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clustergym.cli import app
from clustergym.errors import ConfigError, ScenarioError
from clustergym.scenarios import load_scenario_file, resolve_scenario
from clustergym.scenarios.spec import LongRunWarning

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

SCENARIO = """name: x
resources: %(resources)s
servers: [{count: %(count)s, capacity: %(capacity)s}]
workload: {kind: poisson, rate: %(rate)s, demand: {dist: fixed, vector: %(demand)s}, service: {dist: exponential, mean: 1}}
horizon: %(horizon)s
%(extra)s"""


def _scenario(tmp_path: Path, name: str = "s.yaml", **kw: str) -> str:
    values = {"resources": "[cpu]", "count": "2", "capacity": "[1]", "rate": "1.0", "demand": "[0.5]"}
    values.update(horizon="10", extra="")
    values.update(kw)
    p = tmp_path / name
    p.write_text(SCENARIO % values)
    return str(p)


def _error(argv: list[str]) -> dict:
    res = runner.invoke(app, [*argv, "--json"])
    assert res.exit_code == 2, res.stdout
    doc = json.loads(res.stdout)
    assert set(doc) == {"error"}, doc
    return doc["error"]


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("count", "1:30", "'1:30'"),  # YAML 1.1: 90 servers
        ("count", "010", "leading zero"),  # YAML 1.1: 8
        ("count", "1_0", "'1_0'"),  # YAML 1.1: 10
        ("count", "yes", "'yes'"),  # YAML 1.1: True, i.e. 1
        ("rate", "on", "'on'"),
        ("resources", "[cpu, cpu]", "'cpu' named twice"),
    ],
)
def test_scenario_files_read_as_yaml_1_2_and_refuse_surprises(tmp_path, field, value, words):
    kw = {field: value}
    if field == "resources":
        kw.update(capacity="[1, 1]", demand="[0.5, 0.5]")
    path = _scenario(tmp_path, **kw)
    err = _error(["run", path, "--agent", "best-fit"])
    assert words in err["message"] and path in err["message"]


def test_yaml_1_2_numbers_read_as_written(tmp_path):
    sc = load_scenario_file(_scenario(tmp_path, count="0o10", rate="1e-1"))
    assert sc.num_servers == 8 and float(sc.source.arrival_rates().sum()) == pytest.approx(0.1)


def test_reset_options_are_refused(tmp_path):
    import gymnasium

    env = gymnasium.make("clustergym/rms-trap-v1")
    env.reset(seed=0, options={})
    with pytest.raises(ConfigError, match="reset\\(options=...\\) takes no options here, got 'warmup'"):
        env.reset(seed=0, options={"warmup": 5})


def test_a_malformed_trace_cache_limit_names_the_variable(tmp_path, monkeypatch):
    from clustergym.traces import diskcache

    monkeypatch.setenv(diskcache.MAX_MB_VAR, "abc")
    prev = diskcache.set_trace_cache(tmp_path / "cache")
    try:
        with pytest.raises(ConfigError, match="CLUSTERGYM_TRACE_CACHE_MAX_MB: expected a size in megabytes"):
            diskcache.cached_table("t", [], {}, lambda: None)  # type: ignore[arg-type,return-value]
        err = _error(["trace", "google", "--trace-dir", str(ROOT / "tests" / "fixtures" / "traces")])
        assert err["field"] == "CLUSTERGYM_TRACE_CACHE_MAX_MB"
    finally:
        diskcache.set_trace_cache(prev)


def test_a_long_run_without_a_queue_cap_is_warned_before_it_starts(tmp_path):
    sc = load_scenario_file(_scenario(tmp_path, rate="20000.0", horizon="1000", extra="queue_cap: null\n"))
    with pytest.warns(LongRunWarning, match="2e\\+07 arrivals .* no queue cap"):
        sc.check_run_size()
    with warnings.catch_warnings():
        warnings.simplefilter("error", LongRunWarning)
        resolve_scenario("lotes-phi").check_run_size()  # 5e6 arrivals, but a queue cap: no warning
    with pytest.raises(ScenarioError, match="more than the limit"):
        load_scenario_file(_scenario(tmp_path, "big.yaml", rate="1e7", horizon="1000")).check_run_size()


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [("task", "clustergym/nope-v1", "unknown task"), ("observation", "raw", "unknown observation")],
)
def test_model_json_with_an_unknown_task_or_observation_is_refused(tmp_path, key, value, words):
    pytest.importorskip("stable_baselines3", reason="needs the train extra")
    folder = tmp_path / "m"
    shutil.copytree(ROOT / "models" / "rms-trap-pf-s0", folder)
    meta = json.loads((folder / "model.json").read_text())
    (folder / "model.json").write_text(json.dumps({**meta, key: value}))
    err = _error(["benchmark", str(folder), "--tasks", "rms-trap", "--seeds", "1"])
    assert words in err["message"] and "model.json" in err["message"]
