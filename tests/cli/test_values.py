"""The command line's ``key=value`` rule (:mod:`clustergym.cli.values`): no YAML 1.1 surprises."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from clustergym.cli import app
from clustergym.cli.values import parse_pairs, parse_value, split_prefix
from clustergym.errors import ConfigError


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("20", 20),
        ("-3", -3),
        ("+4", 4),
        ("012", 12),
        ("0.95", 0.95),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("1E-4", 1e-4),
        ("-2.5e+2", -250.0),
        ("inf", math.inf),
        ("-Infinity", -math.inf),
        ("true", True),
        ("False", False),
        ("null", None),
        ("None", None),
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("off", "off"),
        ("12:30", "12:30"),
        ("0x10", "0x10"),
        ("1_000", "1_000"),
        ("2001-01-01", "2001-01-01"),
        ("best-fit", "best-fit"),
        ("", ""),
        ("  fifo ", "fifo"),
        ("~", "~"),
        ("'1'", "1"),
        ('"true"', "true"),
        ("'a,b'", "a,b"),
        ("[1, 2.5]", [1, 2.5]),
        ("[]", []),
        ("[a, 'b, c', true]", ["a", "b, c", True]),
        ("[[1, 2], [3, 4]]", [[1, 2], [3, 4]]),
        ("[1e3]", [1000.0]),
    ],
)
def test_parse_value(raw, expected):
    v = parse_value(raw)
    assert v == expected and type(v) is type(expected)


def test_parse_value_nan():
    assert math.isnan(parse_value("nan"))


def test_parse_pairs_and_prefixes():
    params = parse_pairs(["zeta=0.9", "agent.scan=64", "name=a=b", " k =1", "zeta=0.5"])
    assert params == {"zeta": 0.5, "agent.scan": 64, "name": "a=b", "k": 1}
    assert split_prefix(params, "agent.") == ({"zeta": 0.5, "name": "a=b", "k": 1}, {"scan": 64})
    for bad in ("zeta", "=1"):
        with pytest.raises(ConfigError, match="expected key=value") as e:
            parse_pairs([bad], "--filter")
        assert str(e.value).startswith(f"--filter {bad!r}")


@pytest.mark.parametrize(
    "sets,message",
    [
        (["num_servers=true"], "params.num_servers: expected an integer, got True"),
        (["zeta=yes"], "params.zeta: expected a number, got the string 'yes'"),
        (["zeta=nan"], "params.zeta: must be finite"),
        (["agent.scan=true"], "agent.scan: expected an integer, got True"),
        (["agent.select_job=true"], "agent.select_job: expected one of"),
    ],
)
def test_run_rejects_booleans_and_nan_where_numbers_are_expected(sets, message):
    args = ["run", "ec2" if not sets[0].startswith("agent.") else "bf-trap", "--agent", "best-fit", "--horizon", "2"]
    for s in sets:
        args += ["--set", s]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2
    assert message in " ".join(res.stderr.split())


def test_run_accepts_scientific_integers():
    res = CliRunner().invoke(
        app,
        [
            "run",
            "ec2",
            "--agent",
            "best-fit",
            "--horizon",
            "2",
            "--set",
            "num_servers=2e1",
            "--set",
            "zeta=5e-1",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.stderr
    assert '"servers": 20' in res.stdout
