"""One paper, one name: every registered paper family lives in its own modules, under its name.

The families are read from the registrations (the agents registered from ``baselines/<paper>/`` and
the presets registered from ``scenarios/presets/<paper>.py``), never listed here.  For each family
``p``: ``scenarios/presets/p.py``, ``baselines/p/``, ``theory/p.py``, ``reproduce/p.py`` (in the
claim module list, its claims named ``p-…`` with the paper ``p``), ``tests/baselines/p/`` and
``docs/papers/p.md``; presets named ``p-…`` and agents named ``p``/``p-…`` come from those modules.
The generic layers neither import a paper's module nor name a paper's preset or agent in their
code, outside the registration tables and the exceptions ``docs/architecture.md`` states.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "clustergym"


def _registrations() -> tuple[dict[str, str], dict[str, str]]:
    """The agent and preset registrations as ``import clustergym`` makes them, read in a fresh
    interpreter: in this process, building an agent replaces its import path by the class it names,
    and tests register agents of their own."""
    code = (
        "import json, clustergym\n"
        "from clustergym.agent_api import AGENTS\n"
        "from clustergym.scenarios.registry import PRESETS\n"
        "def s(v): return v if isinstance(v, str) else repr(v)\n"
        "print(json.dumps([{k: s(v) for k, v in AGENTS.items()}, {k: s(p.entry_point) for k, p in PRESETS.items()}]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    agents, presets = json.loads(out.stdout)
    return agents, presets


#: name -> entry point as registered (an import path ``module:attr``, or the repr of an object)
AGENTS, PRESETS = _registrations()


def _entry(e: object) -> str:
    assert isinstance(e, str), f"registered by object, not by import path: {e!r}"
    return e


def _family_of_agent(name: str) -> str | None:
    m = re.match(r"clustergym\.baselines\.(\w+)\.\w+:", _entry(AGENTS[name]))
    return m.group(1) if m else None


def _family_of_preset(name: str) -> str | None:
    m = re.match(r"clustergym\.scenarios\.presets\.(\w+):", _entry(PRESETS[name]))
    return m.group(1) if m and m.group(1) != "traces" else None


#: registered name -> its paper family
OWNER = {n: f for n in AGENTS if (f := _family_of_agent(n))} | {n: f for n in PRESETS if (f := _family_of_preset(n))}
FAMILIES = sorted(set(OWNER.values()))


def test_the_families_come_from_the_registrations():
    agents = {_family_of_agent(n) for n in AGENTS} - {None}
    presets = {_family_of_preset(n) for n in PRESETS} - {None}
    assert agents == presets, "every paper family registers agents and presets under one name"
    assert len(FAMILIES) >= 5


@pytest.mark.parametrize("p", FAMILIES)
def test_each_paper_lives_under_its_name(p):
    missing = [
        str(path.relative_to(ROOT))
        for path in (
            PKG / "scenarios" / "presets" / f"{p}.py",
            PKG / "baselines" / p / "__init__.py",
            PKG / "theory" / f"{p}.py",
            PKG / "reproduce" / f"{p}.py",
            ROOT / "docs" / "papers" / f"{p}.md",
        )
        if not path.is_file()
    ]
    assert not missing, f"{p}: missing {missing}"
    assert list((ROOT / "tests" / "baselines" / p).glob("test_*.py")), f"{p}: no tests in tests/baselines/{p}/"


@pytest.mark.parametrize("p", FAMILIES)
def test_a_paper_s_names_are_registered_from_its_modules(p):
    for name, fam in OWNER.items():
        if fam != p:
            assert not (name == p or name.startswith(f"{p}-")), f"{name!r} carries {p}'s name but comes from {fam}"
    for name in PRESETS:
        if name.startswith(f"{p}-"):
            assert OWNER.get(name) == p, f"preset {name!r} is not built in scenarios/presets/{p}.py"
    for name in AGENTS:
        if name == p or name.startswith(f"{p}-"):
            assert OWNER.get(name) == p, f"agent {name!r} is not in baselines/{p}/"


def test_the_claims_of_a_paper_are_in_its_module_and_carry_its_name():
    from clustergym.reproduce import _MODULES, CLAIMS, load_claims

    assert sorted(m.rpartition(".")[2] for m in _MODULES) == FAMILIES
    load_claims()
    for c in CLAIMS.values():
        module = inspect.getmodule(c.check)
        assert module is not None
        assert module.__name__ == f"clustergym.reproduce.{c.paper}", f"{c.id}: in {module.__name__}"
        assert c.id.startswith(f"{c.paper}-"), f"claim {c.id!r} of {c.paper} is not named {c.paper}-…"
    assert {c.paper for c in CLAIMS.values()} == set(FAMILIES)


def test_theory_holds_the_papers_and_one_shared_module():
    modules = {p.stem for p in (PKG / "theory").glob("*.py")} - {"__init__"}
    assert modules == set(FAMILIES) | {"configurations"}
    shared = (PKG / "theory" / "configurations.py").read_text()
    assert not re.search(r"^(from|import) clustergym\.theory\.(?!configurations)", shared, re.M)


# ------------------------------------------------------------------ generic modules stay paper-free
#: the generic layers (see docs/architecture.md, "One paper, one name")
GENERIC = ("core", "workloads", "traces", "scenarios", "envs", "agent_api.py", "runner", "learned", "suite")
#: registration tables: they name every paper's presets and agents by design
TABLES = {
    "clustergym/scenarios/presets/__init__.py",
    "clustergym/suite/tasks.py",
    "clustergym/suite/reference.py",
    "clustergym/suite/generalization.py",
}
#: named exceptions, each stated in docs/architecture.md: (module, the name it may use)
EXCEPTIONS = {
    ("clustergym/envs/cluster_env.py", "ec2"),  # ClusterEnv's default scenario
    ("clustergym/envs/cluster_env.py", "autoscale-4vm"),  # AdmissionEnv's default scenario
    ("clustergym/envs/factory.py", "ec2"),  # make_env's default scenario
    ("clustergym/traces/transforms.py", "mris"),  # a named priority map of scenario files
}


def _generic_files() -> list[Path]:
    out: list[Path] = []
    for g in GENERIC:
        p = PKG / g
        out += [p] if p.is_file() else sorted(p.rglob("*.py"))
    paper_presets = {PKG / "scenarios" / "presets" / f"{f}.py" for f in FAMILIES}
    return [p for p in out if p not in paper_presets and str(p.relative_to(ROOT)) not in TABLES]


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, kinds)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }


def paper_mentions(files: list[Path] | None = None) -> list[str]:
    families = "|".join(FAMILIES)
    paper_module = re.compile(rf"^clustergym\.(baselines|theory|reproduce|scenarios\.presets)\.({families})\b")
    found = []
    for path in _generic_files() if files is None else files:
        rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        tree = ast.parse(path.read_text(), filename=rel)
        docs = _docstrings(tree)
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
                if n.value in OWNER and (rel, n.value) not in EXCEPTIONS:
                    found.append(f"{rel}:{n.lineno} names {OWNER[n.value]}'s {n.value!r}")
            elif isinstance(n, ast.ImportFrom | ast.Import):
                mods = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]
                found += [f"{rel}:{n.lineno} imports {m}" for m in mods if paper_module.match(m)]
    return found


def test_generic_modules_name_no_paper():
    found = paper_mentions()
    assert not found, "paper names in generic modules:\n" + "\n".join(found)


def test_the_exceptions_are_still_needed():
    """An exception that no longer applies is removed, so the list stays the truth."""
    for rel, name in EXCEPTIONS:
        src = (ROOT / rel).read_text()
        assert f'"{name}"' in src, f"{rel} no longer names {name!r}: drop the exception"


def test_a_paper_module_in_a_generic_layer_is_caught(tmp_path):
    """The check itself: a generic module that imports a paper's theory or names its preset fails;
    the same name in a docstring does not."""
    fake = tmp_path / "probe.py"
    name = next(iter(OWNER))
    fake.write_text(f'"""{name}"""\nfrom clustergym.theory.{FAMILIES[0]} import x\nDEFAULT = "{name}"\n')
    found = paper_mentions([fake])
    assert len(found) == 2 and "imports clustergym.theory" in found[0] and repr(name) in found[1]


def test_every_family_module_imports():
    for p in FAMILIES:
        for mod in (f"clustergym.scenarios.presets.{p}", f"clustergym.theory.{p}"):
            importlib.import_module(mod)
