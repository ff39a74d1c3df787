"""No function of the package is longer than 80 lines (``def`` to its last line, docstring and nested
functions included), except the few listed in :data:`ALLOWED`, each with the reason and the length it
may not grow past.  An entry that is no longer needed (the function was shortened, moved or renamed)
fails too, so the list only shrinks.  See ``docs/architecture.md``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "clustergym"
LIMIT = 80

#: ``"path inside clustergym/::qualified name"`` -> (lines it may not exceed, why it is longer than LIMIT)
ALLOWED: dict[str, tuple[int, str]] = {
    "core/fastpath.py::_loop": (
        360,
        "the compiled event loop: numba keeps its state in locals, helpers would pass ~40 arrays (its docstring)",
    ),
}


def function_lengths() -> dict[str, int]:
    """``"path::qualified name"`` -> lines, for every function and method of the package."""
    lengths: dict[str, int] = {}

    def walk(node: ast.AST, prefix: str, rel: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                lengths[f"{rel}::{name}"] = child.end_lineno - child.lineno + 1  # type: ignore[operator]
                walk(child, name + ".<locals>.", rel)
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".", rel)
            else:
                walk(child, prefix, rel)

    for path in sorted(PKG.rglob("*.py")):
        if "__pycache__" not in path.parts:
            walk(ast.parse(path.read_text(), filename=str(path)), "", str(path.relative_to(PKG)))
    return lengths


def test_no_function_over_the_limit_but_the_allowed_ones():
    lengths = function_lengths()
    too_long = [
        f"{name}: {n} lines" + (f" (allowed {ALLOWED[name][0]})" if name in ALLOWED else "")
        for name, n in sorted(lengths.items())
        if n > LIMIT and n > ALLOWED.get(name, (LIMIT, ""))[0]
    ]
    assert not too_long, f"functions over {LIMIT} lines (split them):\n" + "\n".join(too_long)


def test_every_allowed_entry_is_still_needed():
    lengths = function_lengths()
    stale = [name for name in ALLOWED if lengths.get(name, 0) <= LIMIT]
    assert not stale, f"within {LIMIT} lines now, or gone: remove from ALLOWED:\n" + "\n".join(stale)


def test_the_allow_list_stays_short_and_says_why():
    assert len(ALLOWED) <= 25
    assert all(reason.strip() and limit > LIMIT for limit, reason in ALLOWED.values())


def test_the_count_sees_methods_and_nested_functions():
    lengths = function_lengths()
    assert lengths["cli/compare.py::_Bar.start"] < LIMIT  # a method, by its class
    assert any(".<locals>." in name for name in lengths)  # nested functions are counted on their own too
