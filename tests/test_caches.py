"""One rule for per-process caches (:mod:`clustergym._cache`): bounded, least recently used out first."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from clustergym._cache import Cache, clear_caches

PKG = Path(__file__).resolve().parents[1] / "clustergym"
#: module-level dicts that are registries (every entry is wanted), not caches
REGISTRIES = {"AGENTS", "MODEL_LOADERS", "PRESETS"}


def test_cache_keeps_the_most_recently_used():
    c: Cache[int] = Cache(2)
    built = []

    def build(v):
        return lambda: built.append(v) or v

    assert c.get("a", build(1)) == 1 and c.get("b", build(2)) == 2
    assert c.get("a", build(99)) == 1          # a hit: not rebuilt, and now the most recent
    assert c.get("c", build(3)) == 3           # evicts b, the least recently used
    assert "b" not in c and "a" in c and len(c) == 2
    assert c.get("b", build(4)) == 4 and built == [1, 2, 3, 4]


def test_a_failed_build_keeps_nothing_and_clear_caches_empties_all():
    c: Cache[int] = Cache(1)
    with pytest.raises(ZeroDivisionError):
        c.get("x", lambda: 1 // 0)
    assert len(c) == 0
    c.get("x", lambda: 1)
    clear_caches()
    assert len(c) == 0
    with pytest.raises(ValueError):
        Cache(0)


def test_no_module_level_dict_caches_outside_the_rule():
    """Every module-level cache is a :class:`Cache` (reproduce/ is migrating on its own)."""
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if "reproduce" in path.parts:
            continue
        for node in ast.parse(path.read_text()).body:
            targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
            value = getattr(node, "value", None)
            empty_dict = (isinstance(value, ast.Dict) and not value.keys) or (
                isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) in
                ("dict", "OrderedDict"))
            for t in targets:
                if empty_dict and isinstance(t, ast.Name) and t.id not in REGISTRIES:
                    found.append(f"{path.relative_to(PKG.parent)}:{node.lineno} {t.id}")
    assert not found, "module-level dicts (make them a clustergym._cache.Cache with a size):\n" + "\n".join(found)
