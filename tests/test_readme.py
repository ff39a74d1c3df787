"""Every ```bash and ```python block of README.md runs, with tiny budgets, so a documented command
that breaks fails the suite.

The fence marks what runs: ```bash and ```python blocks are commands a reader types and run here;
```text blocks (option synopses, the layout) are not commands and do not run; ``yaml`` blocks are
scenario files and must load.  The bash blocks run in order, each in a fresh temporary folder
(relative paths such as ``results/`` and ``runs/ec2`` land there); the commands of one block run
one after the other (a block may use what an earlier line wrote, e.g. a trained model).
``clustergym`` runs as ``python -m clustergym`` of this tree.  Budgets are shortened by
:data:`SUBSTITUTIONS` (and ``run``/``compare`` without ``--horizon`` get ``--horizon 20``, except
on a suite task, which fixes its window);
:data:`SKIPS` lists what does not run here and why; a line that needs an extra that is not
installed (:data:`EXTRAS`) or the traces is left out, and its test reports as skipped with the
reason after the rest of its block has run.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

#: (pattern, replacement, why): applied to every bash line and python block, in order
SUBSTITUTIONS = [
    (r"--timesteps \d+", "--timesteps 64", "training budgets: 64 steps"),
    (r"--envs \d+", "--envs 1", "one training process"),
    (r"--eval-every \d+", "--eval-every 0", "evaluate once, at the end"),
    (r"--stage \d+:", "--stage 16:", "curriculum stages: 16 steps each"),
    (r"--seeds \d+", "--seeds 2", "two seeds"),
    (r"--horizon \d+", "--horizon 20", "short episodes"),
    (r"--set horizon=\d+", "--set horizon=3", "short training episodes"),
    (r"--first-n \d+", "--first-n 200", "a few trace jobs"),
    (r"(?<![\w/])models/", str(ROOT / "models") + "/", "the repository's models (commands run in a temporary folder)"),
    (r"--sweep zeta=[\d.,]+", "--sweep zeta=0.8,0.9", "two swept values"),
    (r"--set num_servers=1000", "--set num_servers=100", "a smaller large cluster"),
    (r"horizon=500", "horizon=20", "short episodes (python)"),
    (r"horizon=200", "horizon=20", "short episodes (python)"),
    (r"range\(10\)", "range(2)", "two seeds (python)"),
    (r"\.learn\(10_000\)", ".learn(64)", "training budgets (python)"),
    (
        r"MaskablePPO\(\"MlpPolicy\", env, seed=0\)",
        'MaskablePPO("MlpPolicy", env, seed=0, n_steps=64, batch_size=32)',
        "a 64-step rollout (python)",
    ),
]
#: (pattern, why): a bash line matching it does not run here
SKIPS = [
    (r"^python -m pip install", "CI installs exactly this in .ci/run"),
    (r"^pytest\b", "the suite itself"),
    (r"^tensorboard\b", "an interactive server"),
    (r"--ray auto", "needs a running Ray cluster"),
]
#: a line that needs an extra: (pattern, module, extra)
EXTRAS = [
    (r"clustergym train\b|model\.zip|runs/|models/", "stable_baselines3", "train"),
    (r"MaskablePPO|sb3_contrib", "sb3_contrib", "train"),
    (r"--plot\b", "matplotlib", "plot"),
]


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```", README, flags=re.DOTALL | re.MULTILINE)


def _shorten(text: str) -> str:
    for pattern, repl, _ in SUBSTITUTIONS:
        text = re.sub(pattern, repl, text)
    return text


def _commands(block: str) -> list[str]:
    """The block's commands: continuation lines joined, comments dropped, `a && b` split."""
    joined = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line and not line.startswith("#"):
            out += [c.strip() for c in line.split("&&")]
    return out


def _traces() -> str | None:
    from clustergym.traces.paths import TraceNotFoundError, resolve_trace_dir

    try:
        return str(resolve_trace_dir())
    except TraceNotFoundError:
        return None


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "COLUMNS": "200"}
    if _traces():
        env["CLUSTERGYM_TRACES"] = _traces()
    return env


def _missing_extra(text: str) -> str | None:
    for pattern, module, extra in EXTRAS:
        if re.search(pattern, text) and importlib.util.find_spec(module) is None:
            return f"needs the {extra} extra ({module} is not installed)"
    return None


def _is_task(command: str) -> bool:
    """``clustergym compare TASK ...`` on a suite task (not a preset): the task fixes its window."""
    from clustergym.scenarios import PRESETS
    from clustergym.suite import find_task

    name = shlex.split(command)[2]
    return name not in PRESETS and find_task(name) is not None


BASH = _blocks("bash")
PYTHON = _blocks("python")


def test_the_readme_has_runnable_blocks():
    assert len(BASH) >= 3 and len(PYTHON) >= 3
    assert BASH[0].splitlines()[0] == 'python -m pip install -e ".[dev]" && clustergym run ec2 --agent best-fit'


@pytest.mark.parametrize("index", range(len(BASH)), ids=[f"bash{i}" for i in range(len(BASH))])
def test_readme_bash_block_runs(index, tmp_path):
    """Each line that can run here runs and exits 0 without a traceback; a line that needs an extra
    or the traces is left out (with the lines after it that use what it writes), and the test then
    reports as skipped with the reason, after the rest of the block has run."""
    ran, left_out = 0, []
    for command in _commands(BASH[index]):
        if any(re.search(pattern, command) for pattern, _ in SKIPS):
            continue
        if not command.startswith("clustergym "):
            pytest.fail(f"README bash line not covered by the substitution table or the skips: {command}")
        missing = _missing_extra(command)
        if missing is None and "trace google" in command and _traces() is None:
            missing = "needs the traces ($CLUSTERGYM_TRACES or ~/.local/share/clustergym/traces)"
        if missing:
            left_out.append(f"{command}: {missing}")
            continue
        short = _shorten(command)
        if re.match(r"clustergym (run|compare) ", short) and "--horizon" not in short and not _is_task(short):
            short += " --horizon 20"  # the scenarios' own horizons (1000 time units and more): shortened
        argv = [sys.executable, "-m", "clustergym", *shlex.split(short)[1:]]
        res = subprocess.run(argv, check=False, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, f"README command failed: {command}\n(ran: {short})\n{res.stderr[-3000:]}"
        assert "Traceback" not in res.stderr
        ran += 1
    if left_out:
        pytest.skip(f"ran {ran} line(s); left out: " + "; ".join(left_out))
    if not ran:
        pytest.skip("every line of this block is skipped (see SKIPS)")


def test_readme_python_blocks_run_in_order(tmp_path):
    """The python blocks share one namespace, in order, as a reader pastes them into one session; a
    block that needs a missing extra is left out and the test reports that after the rest ran."""
    runnable = [b for b in PYTHON if _missing_extra(b) is None]
    code = "\n\n".join(_shorten(b) for b in runnable)
    res = subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]
    if len(runnable) < len(PYTHON):
        reasons = {_missing_extra(b) for b in PYTHON if _missing_extra(b)}
        pytest.skip(f"ran {len(runnable)} of {len(PYTHON)} python blocks; the others: " + "; ".join(sorted(reasons)))


@pytest.mark.parametrize("index", range(len(_blocks("yaml"))))
def test_readme_yaml_blocks_are_scenario_files(index, tmp_path):
    from clustergym.scenarios import load_scenario_file

    p = tmp_path / "readme.yaml"
    p.write_text(_blocks("yaml")[index])
    sc = load_scenario_file(p)
    assert sc.num_servers > 0


def test_every_substitution_is_used():
    """A substitution that matches nothing is stale: the README changed; update the table."""
    text = "\n".join(BASH + PYTHON)
    unused = [p for p, _, _ in SUBSTITUTIONS if not re.search(p, text)]
    assert not unused, unused
