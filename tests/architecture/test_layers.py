"""The layer rule: every import in the package points down (lazy imports inside functions included).

From the top: ``cli`` -> ``reproduce`` / ``training`` / ``perf`` / ``comparison`` -> ``suite`` -> ``runner``
-> ``baselines`` / ``learned`` -> ``agent_api`` -> ``envs`` -> ``scenarios`` -> ``traces`` -> ``workloads`` /
``theory`` -> ``core`` -> ``validation`` / ``keyvalue`` -> the base (``errors``, ``_json``, ``_cache``).  Units of one rank do not import each
other.  The package's ``__init__`` (the facade, which registers the agents and the model loader) may
import anything.  A private name (``_x``) is imported only inside its own top-level unit.
See ``docs/architecture.md``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "clustergym"

#: top-level unit -> rank (higher may import lower, never the reverse)
RANKS = {
    "errors": 0,
    "_json": 0,
    "_cache": 0,
    "validation": 1,
    "keyvalue": 1,
    "core": 2,
    "workloads": 3,
    "theory": 3,
    "traces": 4,
    "scenarios": 5,
    "envs": 6,
    "agent_api": 7,
    "baselines": 8,
    "learned": 8,
    "runner": 9,
    "suite": 10,
    "reproduce": 11,
    "training": 11,
    "perf": 11,
    "comparison": 11,
    "cli": 12,
    "__main__": 13,
}
FACADE = "clustergym/__init__.py"


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, imported module, imported names)`` of every import statement, at any depth."""
    tree = ast.parse(path.read_text(), filename=str(path))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod, [a.name for a in node.names]))
    return out


def _unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "clustergym" and len(parts) > 1 else None


def violations() -> list[str]:
    found = []
    for path in _modules():
        rel = str(path.relative_to(PKG.parent))
        if rel == FACADE:
            continue
        src = _unit(_module_name(path))
        for line, mod, names in _imports(path):
            if not mod.startswith("clustergym"):
                continue
            dst = _unit(mod)
            if mod == "clustergym":  # `from clustergym import X`: X is a unit, or a facade name
                for n in names:
                    if n in RANKS and RANKS[n] > RANKS[src]:
                        found.append(f"{rel}:{line} imports {n} (rank {RANKS[n]}) from rank {RANKS[src]}")
                    elif n not in RANKS:
                        found.append(f"{rel}:{line} imports {n!r} from the facade; import it from its module")
                continue
            if dst is None or dst not in RANKS:
                found.append(f"{rel}:{line} imports {mod}: unknown unit {dst!r} (add it to RANKS)")
                continue
            if dst != src and RANKS[dst] >= RANKS[src]:
                found.append(
                    f"{rel}:{line} imports {mod} (unit {dst}, rank {RANKS[dst]}) from unit {src} (rank {RANKS[src]})"
                )
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if dst != src and private:
                found.append(f"{rel}:{line} imports private {private} from {mod}")
            if dst != src and any(p.startswith("_") and p != "__init__" for p in mod.split(".")[2:]):
                found.append(f"{rel}:{line} imports the private module {mod}")
    return found


def test_every_unit_has_a_rank():
    units = {_unit(_module_name(p)) for p in _modules()} - {None}
    assert units <= set(RANKS), f"units without a rank: {sorted(units - set(RANKS))}"


def test_imports_point_down_and_private_names_stay_home():
    found = violations()
    assert not found, "layer violations:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "module,expected",
    [("clustergym.core.simulator", "core"), ("clustergym.baselines.rms.rms", "baselines"), ("clustergym", None)],
)
def test_unit_of(module, expected):
    assert _unit(module) == expected
