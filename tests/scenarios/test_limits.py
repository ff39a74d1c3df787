"""Runs that would never end, or never fit in memory, are refused up front with the limit named;
scenario files get the presets' queue cap; files are UTF-8 and name a key given twice."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from clustergym.errors import ScenarioError
from clustergym.scenarios import load_scenario_file, make_preset, resolve_scenario
from clustergym.scenarios.spec import DEFAULT_QUEUE_CAP, MAX_EXPECTED_ARRIVALS, MAX_SERVERS
from clustergym.workloads import ReplaySource

FILE = """name: x
resources: [cpu]
servers: [{count: %s, capacity: [1]}]
workload: {kind: poisson, rate: %s, demand: {dist: fixed, vector: [0.5]}, service: {dist: exponential, mean: 1}}
horizon: %s
"""


def _file(tmp_path, count="2", rate="1.0", horizon="10", extra=""):
    p = tmp_path / "s.yaml"
    p.write_text(FILE % (count, rate, horizon) + extra)
    return p


def test_infinite_horizon_on_an_endless_workload_is_refused(tmp_path):
    with pytest.raises(ScenarioError, match="horizon: inf is only allowed for a workload that ends"):
        load_scenario_file(_file(tmp_path, horizon=".inf"))
    with pytest.raises(ScenarioError, match="horizon: inf is only allowed"):
        make_preset("ec2").with_horizon(math.inf)
    with pytest.raises(ScenarioError, match="params.horizon: must be finite"):
        make_preset("ec2", horizon=math.inf)


def test_infinite_horizon_on_a_finite_workload_drains():
    from clustergym.runner import run_episode
    from clustergym.scenarios import Scenario

    src = ReplaySource(np.array([0.0, 0.5, 1.0]), np.array([[0.6], [0.6], [0.3]]), np.array([1.0, 1.0, 2.0]))
    sc = Scenario("replay", np.ones((1, 1)), src, ("cpu",), horizon=math.inf)
    row = run_episode(sc, "first-fit", seed=0)
    assert row["completed"] == 3 and math.isfinite(row["sim_time"])


@pytest.mark.parametrize("rate,horizon", [("1.0e+300", "10"), ("90", "1.0e+12")])
def test_expected_arrivals_beyond_the_limit_are_refused(tmp_path, rate, horizon):
    from clustergym.runner import run_episode

    sc = load_scenario_file(_file(tmp_path, rate=rate, horizon=horizon))  # an env may step it a few times
    with pytest.raises(ScenarioError, match=re.escape(f"more than the limit of {MAX_EXPECTED_ARRIVALS:.0e}")):
        sc.check_run_size()
    with pytest.raises(ScenarioError, match="horizon: an episode would see"):
        run_episode(sc, "best-fit")  # a whole run is refused before it starts


def test_server_counts_beyond_the_limit_are_refused_before_allocating(tmp_path):
    with pytest.raises(ScenarioError, match=r"servers\[0\].count: 1,000,000,000,000 servers in all exceed the limit"):
        load_scenario_file(_file(tmp_path, count="1000000000000"))
    with pytest.raises(ScenarioError, match=r"params.num_servers: must be <= "):
        make_preset("ec2", num_servers=MAX_SERVERS * 10)


def test_scenario_files_get_the_presets_queue_cap(tmp_path):
    assert make_preset("ec2").queue_cap == DEFAULT_QUEUE_CAP
    assert load_scenario_file(_file(tmp_path)).queue_cap == DEFAULT_QUEUE_CAP
    assert load_scenario_file(_file(tmp_path, extra="queue_cap: null\n")).queue_cap is None
    assert load_scenario_file(_file(tmp_path, extra="queue_cap: 7\n")).queue_cap == 7


def test_a_file_that_is_not_utf8_names_the_line_and_byte(tmp_path):
    p = tmp_path / "latin.yaml"
    p.write_bytes(b"name: ok\ndescription: caf\xe9\n")
    with pytest.raises(ScenarioError, match=r"latin.yaml: line 2: not UTF-8 text \(byte 0xe9"):
        load_scenario_file(p)


def test_a_key_given_twice_is_an_error(tmp_path):
    p = _file(tmp_path, extra="horizon: 20\n")
    with pytest.raises(ScenarioError, match=r"horizon: given twice in one mapping \(lines 5 and 6"):
        load_scenario_file(p)
    j = tmp_path / "s.json"
    j.write_text('{"name": "a", "name": "b"}')
    with pytest.raises(ScenarioError, match="name: given twice"):
        load_scenario_file(j)
    nested = _file(tmp_path).read_text().replace("rate: 1.0,", "rate: 1.0, rate: 2.0,")
    p.write_text(nested)
    with pytest.raises(ScenarioError, match="rate: given twice"):
        resolve_scenario(str(p))
