"""Packaging: the core install is what the environments, baselines, runner and CLI import; training,
plots and Parquet are extras, and a feature that needs a missing extra says which one to install;
``import clustergym`` and ``clustergym --help`` stay light (no timing: which modules they load)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from clustergym.errors import ConfigError, MissingExtraError, require_extra

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "clustergym"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

#: modules that may import an optional dependency at module level, and the extra that brings it
EXTRA_MODULES = {
    "clustergym/learned/policies.py": "train",  # torch, SB3: imported only by model loading and training
    "clustergym/training/semi_markov.py": "train",  # SB3 rollout buffers: imported lazily by train() only
    "clustergym/training/callbacks.py": "train",  # SB3 callbacks: imported lazily by train() only
    "clustergym/training/batched.py": "train",  # SB3's VecEnv: imported by training (make_batched_venv) only
    "clustergym/perf/simpy_bestfit.py": "bench",  # the SimPy reference, run as its own process
    "clustergym/core/accel.py": "fast",  # numba, imported under try (the NumPy path otherwise)
}
#: import name -> distribution name
DIST = {
    "yaml": "pyyaml",
    "sklearn": "scikit-learn",
    "sb3_contrib": "sb3-contrib",
    "stable_baselines3": "stable-baselines3",
}


def _requirement_names(reqs: list[str]) -> set[str]:
    out = set()
    for r in reqs:
        name = r.split(";")[0]
        for sep in "<>=!~[ ":
            name = name.split(sep)[0]
        out.add(name.strip().lower())
    return out


def _module_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in tree.body:
        nodes = ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]
        for n in nodes:
            if isinstance(n, ast.Import):
                found |= {a.name.split(".")[0] for a in n.names}
            elif isinstance(n, ast.ImportFrom) and not n.level and n.module:
                found.add(n.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m not in ("clustergym", "__future__")}


def test_every_module_level_import_is_a_core_dependency():
    core = _requirement_names(PYPROJECT["project"]["dependencies"])
    extras = PYPROJECT["project"]["optional-dependencies"]
    missing = []
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        allowed = set(core)
        if rel in EXTRA_MODULES:
            allowed |= _requirement_names(extras[EXTRA_MODULES[rel]])
        for mod in _module_level_imports(path):
            if DIST.get(mod, mod).lower() not in allowed:
                missing.append(f"{rel} imports {mod} at module level; it is not a dependency of that install")
    assert not missing, "\n".join(missing)


def test_core_is_the_env_install_and_training_is_an_extra():
    core = _requirement_names(PYPROJECT["project"]["dependencies"])
    assert core == {
        "gymnasium",
        "numpy",
        "scipy",
        "pandas",
        "pyyaml",
        "joblib",
        "cloudpickle",
        "typer",
        "rich",
        "sortedcontainers",
    }
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert "torch>=2.3,<2.14" in extras["train"]
    assert {"stable-baselines3", "sb3-contrib", "tensorboard", "tqdm"} <= _requirement_names(extras["train"])
    # [all] and [dev] bring every extra (today's full install)
    assert extras["all"] == ["clustergym[train,plot,parquet,fast,bench,video]"]
    assert extras["video"] == ["moviepy==1.0.3"]  # 2.x caps Pillow below 12 (pyproject comment)
    assert "clustergym[all]" in extras["dev"]
    assert {"ruff", "mypy", "build", "twine", "pytest"} <= _requirement_names(extras["dev"])
    assert PYPROJECT["project"]["license"] == "MIT" and PYPROJECT["project"]["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").is_file()


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


HEAVY = ("pandas", "scipy.stats", "torch", "stable_baselines3", "matplotlib", "pyarrow", "numba", "ray")


def test_import_clustergym_loads_no_heavy_module():
    loaded = _loaded_after("import clustergym")
    assert not [m for m in HEAVY if m in loaded]


def test_cli_help_loads_no_heavy_module():
    loaded = _loaded_after(
        "import sys; sys.argv = ['clustergym', '--help']\n"
        "from clustergym.cli import app\n"
        "try:\n    app()\nexcept SystemExit:\n    pass"
    )
    assert "clustergym.cli" in loaded
    assert not [m for m in HEAVY if m in loaded]


def test_one_episode_through_the_runner_loads_no_pandas():
    """`clustergym run`'s path (the runner package, one episode of a synthetic scenario) imports pandas
    only where a table is built: about 0.15 CPU-s of every such command's start."""
    loaded = _loaded_after(
        "from clustergym.runner import run_episode\n"
        "from clustergym.scenarios import resolve_scenario\n"
        "run_episode(resolve_scenario('bf-trap'), 'best-fit', seed=0, horizon=5.0)"
    )
    assert "clustergym.runner.episode" in loaded and "clustergym.runner.stats" in loaded
    assert "pandas" not in loaded
    assert "pandas" in _loaded_after("from clustergym.runner import summarize, run_cells\nrun_cells([])")


def test_require_extra_names_the_extra(monkeypatch):
    require_extra("json", "train", "x")  # present: nothing happens
    with pytest.raises(
        MissingExtraError,
        match=r"clustergym train needs .*'no_such_module_x'.*"
        r"pip install 'clustergym\[train\]'",
    ) as e:
        require_extra(("json", "no_such_module_x"), "train", "clustergym train")
    assert isinstance(e.value, ConfigError) and e.value.extra == "train"


@pytest.mark.parametrize(
    "module,missing,extra",
    [
        ("clustergym.learned.policies", "torch", "train"),
        ("clustergym.learned.policies", "sb3_contrib", "train"),
        ("clustergym.perf.simpy_bestfit", "simpy", "bench"),
    ],
)
def test_modules_that_need_an_extra_name_it_when_imported_without(monkeypatch, module, missing, extra):
    """The two modules whose classes or code are built on an extra's package at module level check
    it first: without it, the import raises MissingExtraError naming the extra, not ModuleNotFoundError."""
    import importlib
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == missing else real(name, *a))
    monkeypatch.delitem(sys.modules, module, raising=False)  # restored after the test
    with pytest.raises(MissingExtraError, match=rf"pip install 'clustergym\[{extra}\]'") as e:
        importlib.import_module(module)
    assert e.value.extra == extra


@pytest.mark.parametrize(
    "args,extra",
    [
        (["train", "ec2", "--algo", "ppo", "--timesteps", "10"], "train"),
        (["run", "ec2", "--agent", "runs/x/model.zip"], "train"),
        (["bench", "--quick", "--no-replay"], "train"),
    ],
)
def test_cli_without_the_train_extra_says_which_extra(tmp_path, args, extra):
    """A fresh interpreter where torch and SB3 cannot be imported (an import hook refuses them)."""
    code = (
        "import sys, importlib.abc\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'stable_baselines3', 'sb3_contrib'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import importlib.util\n_f = importlib.util.find_spec\n"
        "def find_spec(name, *a):\n"
        "    if name.split('.')[0] in ('torch', 'stable_baselines3', 'sb3_contrib'):\n"
        "        return None\n"
        "    return _f(name, *a)\n"
        "importlib.util.find_spec = find_spec\n"
        "from clustergym.cli import main\nsys.argv = ['clustergym'] + sys.argv[1:]\nmain()\n"
    )
    if args[0] == "run":
        (tmp_path / "runs" / "x").mkdir(parents=True)
        (tmp_path / "runs" / "x" / "model.zip").write_bytes(b"PK")
    out = subprocess.run(
        [sys.executable, "-c", code, *args, "--json"]
        if args[0] != "train"
        else [sys.executable, "-c", code, *args, "--out", str(tmp_path / "t")],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 2, out.stderr
    assert f"pip install 'clustergym[{extra}]'" in " ".join((out.stderr + out.stdout).split())
    assert "Traceback" not in out.stderr + out.stdout
