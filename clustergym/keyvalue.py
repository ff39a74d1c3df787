"""``key=value`` settings as the command line and the run folders write them (``--set``, ``--filter``, ``--sweep``):
one parser, one rule.

The values are not read as YAML (YAML 1.1 turns ``yes``, ``on`` and ``no`` into booleans, ``012``
into 10, ``12:30`` into 750 and leaves ``1e3`` a string).  The rule, applied to the text after the
first ``=``:

* ``null`` or ``none`` -> ``None`` (any case);
* ``true`` / ``false`` -> ``True`` / ``False`` (any case).  Only boolean settings accept them: a
  number, a choice or a name given ``true`` is an error (``--set num_servers=true``);
* decimal digits with an optional sign -> an ``int`` (``20``, ``-3``);
* a decimal or scientific number, ``inf``, ``infinity`` or ``nan`` -> a ``float`` (``0.95``,
  ``1e3``, ``-inf``).  An integral float is accepted where an integer is expected (``1e3`` is
  1000); ``nan`` is rejected by every numeric setting;
* ``[a, b, ...]`` -> a list of values, each read by this rule (lists nest: ``[[1, 2], [3, 4]]``;
  ``[]`` is the empty list);
* a value in matching single or double quotes -> the text inside, as a string (``'1'`` is the
  string ``1``);
* anything else -> the string as written (``best-fit``, ``yes``, ``0x10``, and nothing at all, ``""``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from clustergym.errors import ConfigError

__all__ = ["parse_value", "parse_pairs", "parse_stage", "split_prefix"]

_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)", re.IGNORECASE)


def parse_value(raw: str) -> Any:
    """A command-line value by the rule of this module's docstring."""
    text = raw.strip()
    low = text.lower()
    if low in ("null", "none"):
        return None
    if low in ("true", "false"):
        return low == "true"
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    if len(text) >= 2 and text[0] == "[" and text[-1] == "]":
        return [parse_value(item) for item in _split_items(text[1:-1])]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _split_items(body: str) -> list[str]:
    """The comma-separated items of a list's body, commas inside nested brackets or quotes kept."""
    if not body.strip():
        return []
    items, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(body):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(body[start:i])
            start = i + 1
    items.append(body[start:])
    return items


def parse_pairs(items: Iterable[str], option: str = "--set") -> dict[str, Any]:
    """``key=value`` items (of the command-line option ``option``) -> ``{key: value}``, values by
    :func:`parse_value`; a later key overrides an earlier one."""
    out: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"{option} {item!r}", "expected key=value")
        out[key.strip()] = parse_value(raw)
    return out


def parse_stage(text: str, option: str = "--stage") -> tuple[int, dict[str, Any]]:
    """``STEPS:key=value[,key=value...]`` (a curriculum stage, :mod:`clustergym.training.curriculum`)
    -> ``(steps, {key: value})``; ``STEPS`` may use ``_`` separators (``100_000``)."""
    steps, colon, pairs = text.partition(":")
    try:
        n = int(steps.strip())
    except ValueError:
        n = -1
    if not colon or n < 1 or not pairs.strip():
        raise ConfigError(
            f"{option} {text!r}",
            "expected STEPS:key=value[,key=value] with STEPS a positive integer, e.g. 100000:load=1.5",
        )
    return n, parse_pairs(pairs.split(","), option)


def split_prefix(params: dict[str, Any], prefix: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``params`` without the keys that start with ``prefix``, and those keys with the prefix removed
    (``agent.scan=64`` -> ``{"scan": 64}``)."""
    rest = {k: v for k, v in params.items() if not k.startswith(prefix)}
    return rest, {k[len(prefix) :]: v for k, v in params.items() if k.startswith(prefix)}
