"""The validators of :mod:`clustergym.validation`: what each accepts and rejects, and how errors read."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from clustergym.errors import ConfigError, ScenarioError
from clustergym.validation import (
    Checks,
    boolean,
    choice,
    describe,
    is_number,
    mapping,
    matrix,
    number,
    positive,
    settings,
    vector,
)

NAN, INF = float("nan"), float("inf")


# ------------------------------------------------------------------------------------------- number
@pytest.mark.parametrize(
    "value,kw,expected",
    [
        (1, {}, 1.0),
        (2.5, {}, 2.5),
        (np.float32(0.5), {}, 0.5),
        (np.int64(3), {}, 3.0),
        (Fraction(1, 4), {}, 0.25),
        (np.array(2.0), {}, 2.0),
        (0, {"lo": 0}, 0.0),
        (1, {"lo": 0, "lo_open": True}, 1.0),
        (1, {"hi": 1}, 1.0),
        (3, {"integer": True}, 3),
        (1e3, {"integer": True}, 1000),
        (np.float64(4.0), {"integer": True}, 4),
        (None, {"allow_none": True}, None),
        (INF, {"allow_inf": True}, INF),
        ("inf", {"allow_inf": True}, INF),
        ("Infinity", {"allow_inf": True}, INF),
        (-INF, {"allow_inf": True}, -INF),
        (INF, {"allow_inf": True, "integer": True}, INF),
    ],
)
def test_number_accepts(value, kw, expected):
    v = number(value, "x", **kw)
    assert v == expected and type(v) is type(expected)


@pytest.mark.parametrize(
    "value,kw,problem",
    [
        (True, {}, "expected a number, got True (bool)"),
        (False, {"integer": True}, "expected an integer, got False (bool)"),
        (np.bool_(True), {}, "expected a number"),
        ("1", {}, "the string '1' (numbers must not be quoted"),
        ("high", {}, "expected a number, got the string 'high'"),
        (None, {}, "expected a number, got None"),
        ([1], {}, "expected a number, got [1] (list)"),
        (NAN, {}, "must be finite, got nan"),
        (NAN, {"allow_inf": True}, "must be finite, got nan"),
        (INF, {}, "must be finite, got inf"),
        ("inf", {}, "expected a number, got the string 'inf'"),
        (2.5, {"integer": True}, "expected an integer, got 2.5 (float)"),
        (-1, {"lo": 0}, "must be >= 0, got -1"),
        (0, {"lo": 0, "lo_open": True}, "must be > 0, got 0"),
        (0.0, {"lo": 0, "lo_open": True}, "must be > 0, got 0.0"),
        (2, {"hi": 1}, "must be <= 1, got 2"),
        (1, {"lo": 0, "lo_open": True, "hi": 1, "hi_open": True}, "must be > 0 and < 1, got 1"),
        (0, {"lo": 1, "integer": True}, "must be >= 1, got 0"),
        (INF, {"hi": 5, "allow_inf": True}, "must be <= 5, got inf"),
    ],
)
def test_number_rejects(value, kw, problem):
    with pytest.raises(ScenarioError) as e:
        number(value, "params.zeta", **kw)
    assert e.value.field == "params.zeta"
    assert str(e.value).startswith("params.zeta: ")
    assert problem in e.value.problem


def test_the_error_class_is_the_callers():
    with pytest.raises(ConfigError) as e:
        number(0, "agent.scan", lo=1, integer=True, error=ConfigError)
    assert str(e.value) == "agent.scan: must be >= 1, got 0"
    for call in (
        lambda: choice("x", "agent.mode", ("a",), error=ConfigError),
        lambda: boolean(1, "agent.check", error=ConfigError),
        lambda: positive(-1, "workers", error=ConfigError),
        lambda: vector([1, "a"], "agent.rates", error=ConfigError),
        lambda: matrix("a", "agent.rates", error=ConfigError),
        lambda: mapping([], "agent", {"a"}, error=ConfigError),
    ):
        with pytest.raises(ConfigError):
            call()
        with pytest.raises(ValueError):  # both error classes are ValueErrors
            call()


def test_settings_are_the_validators_raising_config_errors():
    """Settings that are not a scenario are checked through ``settings``; the plain functions raise
    ScenarioError, and both report the same message."""
    with pytest.raises(ConfigError) as e:
        settings.number(0, "agent.scan", lo=1, integer=True)
    assert str(e.value) == "agent.scan: must be >= 1, got 0"
    with pytest.raises(ScenarioError) as plain:
        number(0, "agent.scan", lo=1, integer=True)
    assert not isinstance(plain.value, ConfigError) and str(plain.value) == str(e.value)
    assert settings.positive(3, "workers", integer=True) == 3
    assert settings.choice("a", "agent.mode", ("a", "b")) == "a"
    for call in (
        lambda: settings.choice("x", "agent.mode", ("a",)),
        lambda: settings.boolean(1, "agent.check"),
        lambda: settings.positive(-1, "workers"),
        lambda: settings.vector([1, "a"], "agent.rates"),
        lambda: settings.matrix("a", "agent.rates"),
        lambda: settings.mapping([], "agent", {"a"}),
    ):
        with pytest.raises(ConfigError):
            call()
    assert Checks(ScenarioError).choice("a", "queueing", ("a",)) == "a"


@pytest.mark.parametrize(
    "value,kw,ok",
    [
        (1, {}, True),
        (0, {}, False),
        (0, {"allow_zero": True}, True),
        (-0.5, {"allow_zero": True}, False),
        (None, {"allow_none": True}, True),
        (None, {}, False),
        (INF, {}, False),
        (INF, {"allow_inf": True}, True),
        (2.0, {"integer": True}, True),
        (2.5, {"integer": True}, False),
        (True, {}, False),
        (NAN, {}, False),
    ],
)
def test_positive(value, kw, ok):
    if ok:
        positive(value, "params.n", **kw)
    else:
        with pytest.raises(ScenarioError, match=r"^params\.n: "):
            positive(value, "params.n", **kw)


# ------------------------------------------------------------------------------------------- choice
@pytest.mark.parametrize(
    "value,options,ok",
    [
        ("a", ("a", "b"), True),
        ("b", ["a", "b"], True),
        ("a", {"a": 1}, True),
        ("c", ("a", "b"), False),
        ("A", ("a",), False),
        (1, ("1",), False),
        (None, ("a",), False),
        (["a"], ("a",), False),
        (True, ("a",), False),
    ],
)
def test_choice(value, options, ok):
    if ok:
        assert choice(value, "mode", options) == value
    else:
        with pytest.raises(ScenarioError) as e:
            choice(value, "mode", options)
        assert e.value.field == "mode" and f"expected one of {list(options)}, got {value!r}" in str(e.value)


# ------------------------------------------------------------------------------------------ boolean
@pytest.mark.parametrize(
    "value,ok",
    [
        (True, True),
        (False, True),
        (np.bool_(False), True),
        (1, False),
        (0, False),
        ("true", False),
        ("yes", False),
        (None, False),
        (1.0, False),
    ],
)
def test_boolean(value, ok):
    if ok:
        assert boolean(value, "clairvoyant") is bool(value)
    else:
        with pytest.raises(ScenarioError, match=r"^clairvoyant: expected true or false, got "):
            boolean(value, "clairvoyant")
    assert boolean(None, "x", allow_none=True) is None


# ------------------------------------------------------------------------------------------- vector
@pytest.mark.parametrize(
    "value,kw,expected",
    [
        ([1, 2.5], {}, [1.0, 2.5]),
        ((0, 1), {"length": 2, "lo": 0}, [0.0, 1.0]),
        (np.array([3, 4]), {}, [3.0, 4.0]),
        (0.5, {"length": 1}, [0.5]),
        (np.array(0.5), {"length": 1}, [0.5]),
    ],
)
def test_vector_accepts(value, kw, expected):
    out = vector(value, "v", **kw)
    assert out.dtype == np.float64 and out.tolist() == expected


@pytest.mark.parametrize(
    "value,kw,field,problem",
    [
        ([1, True], {}, "v[1]", "expected a number, got True (bool)"),
        ([1, NAN], {}, "v[1]", "must be finite"),
        ([1, INF], {}, "v[1]", "must be finite"),
        ([1, -1], {"lo": 0}, "v[1]", "must be >= 0"),
        ([1, 0], {"lo": 0, "lo_open": True}, "v[1]", "must be > 0"),
        ([1, 2], {"hi": 1}, "v[1]", "must be <= 1"),
        ([1, "2"], {}, "v[1]", "the string '2'"),
        ([1], {"length": 2}, "v", "expected 2 numbers (one per resource), got 1"),
        ([1], {"length": 2, "what": "(one per job type)"}, "v", "expected 2 numbers (one per job type)"),
        ([], {}, "v", "non-empty"),
        (0.5, {"length": 2}, "v", "single number"),
        ("ab", {}, "v", "expected a list of numbers"),
        (np.zeros((2, 2)), {}, "v", "1-D"),
        (np.array(["a"]), {}, "v", "dtype"),
    ],
)
def test_vector_rejects(value, kw, field, problem):
    with pytest.raises(ScenarioError) as e:
        vector(value, "v", **kw)
    assert e.value.field == field and problem in e.value.problem


# ------------------------------------------------------------------------------------------- matrix
def test_matrix():
    assert matrix([[1, 2], [3, 4]], "m").tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert matrix(np.ones((1, 3)), "m", 3).shape == (1, 3)
    assert matrix([[0.5]], "m", lo=0).tolist() == [[0.5]]
    for value, kw, field, problem in [
        ([[1, 2], [3]], {}, "m[1]", "expected 2 numbers"),
        ([[1, 2], [3, -1]], {"lo": 0}, "m[1][1]", ">= 0"),
        ([[1, True]], {}, "m[0][1]", "bool"),
        ([], {}, "m", "at least one row"),
        (np.ones(3), {}, "m", "2-D"),
        ("x", {}, "m", "expected a list of rows"),
        ([[1, 2]], {"cols": 3}, "m[0]", "expected 3 numbers"),
    ]:
        with pytest.raises(ScenarioError) as e:
            matrix(value, "m", **kw)
        assert e.value.field == field and problem in e.value.problem, str(e.value)


# ------------------------------------------------------------------------------------------ mapping
def test_mapping():
    d = {"a": 1}
    assert mapping(d, "f", {"a", "b"}) is d
    for value, kw, field, problem in [
        ([1], {}, "f", "expected a mapping, got list"),
        ({"c": 1}, {}, "f.c", "unknown field; expected one of ['a', 'b']"),
        ({"a": 1}, {"required": ("b",)}, "f.b", "missing required field"),
    ]:
        with pytest.raises(ScenarioError) as e:
            mapping(value, "f", {"a", "b"}, **kw)
        assert e.value.field == field and problem in e.value.problem
    with pytest.raises(ScenarioError) as e:  # the top level has no field prefix
        mapping({"c": 1}, "", {"a"})
    assert e.value.field == "c"


# ------------------------------------------------------------------------------------------- helpers
def test_is_number_and_describe():
    assert all(is_number(x) for x in (1, 1.5, np.int8(1), np.float32(1), Fraction(1, 2), INF, NAN))
    assert not any(is_number(x) for x in (True, np.bool_(False), "1", None, [1], 1j))
    assert (
        describe("2")
        == "the string '2' (numbers must not be quoted; note that YAML reads 1e-3 as a string: write 1.0e-3)"
    )
    assert describe("x") == "the string 'x'"
    assert describe(True) == "True (bool)"
    assert math.isinf(number("+inf", "h", allow_inf=True))
