"""docs/architecture.md against the code: each statement a test can check, checked.

The layer table against the rank table of ``test_layers.py`` and the command line's commands; the
folder table against the modules that exist (every module named, no module named that does not
exist); what ``import clustergym`` imports; where registration happens and that it is by import path;
the constants the page quotes; the "How to add" recipes against the paths they name.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "clustergym"
DOC = (ROOT / "docs" / "architecture.md").read_text()


def _sibling(name: str):
    """A test module of this folder (test folders are not packages)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_arch_{name}", Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RANKS = _sibling("test_layers").RANKS


def _section(title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", DOC, re.M | re.S)
    assert m, f"docs/architecture.md has no section {title!r}"
    return m.group(1)


def _layer_table() -> dict[int, list[str]]:
    block = re.search(r"```\n( *\d+ .*?)```", DOC, re.S)
    assert block
    table = {}
    for line in block.group(1).splitlines():
        m = re.match(r"\s*(\d+)\s+(.*)", line)
        assert m, line
        rank, rest = int(m.group(1)), m.group(2)
        units = re.match(r"((?:\S+/|\S+\.py|__main__)(?:\s+(?:\S+/|\S+\.py))*)", rest)
        assert units, line
        table[rank] = [u.rstrip("/").removesuffix(".py") for u in units.group(1).split()]
    return table


def test_the_layer_table_is_the_rank_table():
    documented = {u: r for r, units in _layer_table().items() for u in units}
    assert documented == RANKS


def test_the_layer_table_lists_every_command():
    from clustergym.cli import app

    line = next(line for line in DOC.splitlines() if re.match(r"\s*\d+\s+cli/", line))
    documented = [c.strip() for c in line.split(":", 1)[1].split(",")]
    assert documented == [c.name for c in app.registered_commands]


def _folder_rows() -> dict[str, str]:
    rows = {}
    for m in re.finditer(r"^\| `([\w.]+/?)` \| (.*) \|$", _section("What each folder owns"), re.M):
        rows[m.group(1)] = m.group(2)
    return rows


def test_the_folder_table_has_a_row_per_unit():
    units = {p.name + "/" for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert {r for r in _folder_rows() if r.endswith("/")} == units


@pytest.mark.parametrize("folder", sorted(p.name for p in PKG.iterdir() if (p / "__init__.py").exists()))
def test_the_folder_table_names_exactly_the_modules_that_exist(folder):
    text = _folder_rows()[f"{folder}/"]
    d = PKG / folder
    modules = {p.name for p in d.glob("*.py") if p.name != "__init__.py"}
    named = set(re.findall(r"`(\w+\.py)`", text)) - {"__init__.py"}
    assert named == modules, f"{folder}/: named {sorted(named)}, modules {sorted(modules)}"
    packages = {p.name for p in d.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    named_packages = {t.rstrip("/") for t in re.findall(r"`(\w+)/`", text)}
    assert packages <= named_packages, f"{folder}/: subpackages {sorted(packages - named_packages)} not named"


def test_import_clustergym_stays_light():
    """'import clustergym imports ... none of the claim runners, the runner, trace loaders, pandas or torch'."""
    code = "import json, sys; import clustergym; print(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    mods = set(json.loads(proc.stdout))
    for heavy in ("clustergym.reproduce", "clustergym.runner", "clustergym.traces", "pandas", "torch"):
        assert heavy not in mods, heavy
    for light in ("clustergym.core.simulator", "clustergym.envs", "clustergym.scenarios", "clustergym.agent_api"):
        assert light in mods, light
    # naming presets and agents imports none of their modules
    assert not [m for m in mods if re.match(r"clustergym\.(baselines|scenarios\.presets)\.\w+", m)]


def _calls(name: str) -> set[str]:
    where = set()
    for path in PKG.rglob("*.py"):
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name:
                where.add(str(path.relative_to(ROOT)))
    return where


def test_registration_is_in_one_place_per_kind_and_by_import_path():
    from clustergym.agent_api import MODEL_LOADERS

    assert _calls("register_agent") == {"clustergym/baselines/__init__.py"}
    assert _calls("register_preset") == {"clustergym/scenarios/presets/__init__.py"}
    # as registered: a fresh interpreter's (here, building an agent replaces its path by its class)
    agents, presets = _sibling("test_papers").AGENTS, _sibling("test_papers").PRESETS
    assert agents.keys() >= {"best-fit", "random"} and presets
    assert all(":" in e and e.startswith("clustergym.baselines.") for e in agents.values())
    assert all(":" in e and e.startswith("clustergym.scenarios.presets.") for e in presets.values())
    assert ".zip" in MODEL_LOADERS


def test_the_constants_the_page_quotes():
    from clustergym.core.cluster import FIT_RTOL, INDEX_MIN_SERVERS
    from clustergym.core.scores import SCORE_RTOL
    from clustergym.envs.observation import INCREMENTAL_MIN_SERVERS
    from clustergym.traces.formats import FORMATS

    assert "`FIT_RTOL = 1e-9`" in DOC and FIT_RTOL == 1e-9
    assert "`SCORE_RTOL`" in DOC and SCORE_RTOL > 0
    assert "about 768 servers for the\nindex, 1,024 for the observation" in DOC
    assert INDEX_MIN_SERVERS == 768 and INCREMENTAL_MIN_SERVERS == 1024
    assert "`traces/formats.py`'s `FORMATS`" in DOC and FORMATS
    assert "`CLUSTERGYM_NO_NUMBA=1`" in DOC and "CLUSTERGYM_NO_NUMBA" in (PKG / "core" / "accel.py").read_text()


def test_the_recipes_name_the_paths_a_family_is_checked_at():
    """'How to add a whole paper family' and 'One paper, one name' name the places test_papers.py checks."""
    recipe = _section("How to add …")
    for path in (
        "baselines/<paper>/",
        "scenarios/presets/<paper>.py",
        "reproduce/<paper>.py",
        "reproduce/__init__.py",
        "tests/baselines/<paper>/",
        "baselines/__init__.py",
        "scenarios/presets/__init__.py",
        "theory/<paper>.py",
        "docs/papers/<paper>.md",
    ):
        assert f"`{path}" in recipe, path
    names = re.findall(r"`(\w+)`\s\(", _section("One paper, one name").split(". The paper")[0])
    assert sorted(names) == _sibling("test_papers").FAMILIES


def test_the_function_length_section_names_the_one_allowed_function():
    """'The one exception is the compiled event loop ... it is the only entry of that test's allow list'."""
    allowed = _sibling("test_function_length").ALLOWED
    assert list(allowed) == ["core/fastpath.py::_loop"]
    section = _section("Function length")
    assert "The one exception is the compiled event loop" in section and "`_loop`" in section
