"""The notebooks in ``notebooks/``: they run, their committed outputs are clean, and those outputs come
from the current code.

Each notebook's first code cell reads ``BUDGET = os.environ.get("CLUSTERGYM_NB_BUDGET", "full")``.
The notebooks are committed executed at the ``full`` budget (``CLUSTERGYM_NB_BUDGET=full jupyter
execute --inplace notebooks/NAME.ipynb``, see docs/notebooks.md), with their figures.  Every figure
is followed by a ``show_figure_data(name, frame)`` display whose output metadata holds the numbers
the figure draws (``{"clustergym": {"figure_data": name, "records": [...]}}``).

* :func:`test_notebook_runs_on_the_tiny_budget` executes every notebook with
  ``CLUSTERGYM_NB_BUDGET=tiny`` (seconds) with nbclient on the ``python3`` kernel.
* :func:`test_committed_outputs_are_full_and_clean` reads the committed outputs (no execution):
  every code cell ran, on the full budget, without errors or stderr, with figures and their data,
  and no absolute paths.
* :func:`test_committed_figure_data_match_the_code` re-executes a notebook at the full budget and
  compares the figure data with the committed ones (numbers to 1e-9 relative; the runs are seeded,
  so they are deterministic).  Notebooks whose metadata says ``"clustergym": {"recheck": "always"}``
  are cheap (about a minute of CPU) and always rechecked; the ones that train an agent
  (``"recheck": "slow"``, minutes) only with ``CLUSTERGYM_NB_RECHECK_SLOW=1``.

A notebook whose metadata declares ``"clustergym": {"needs_traces": true}`` is skipped, with the
reason, when the trace directory is absent.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -e '.[dev]')")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e '.[dev]')")

from clustergym.traces.paths import default_trace_dir, traces_available  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
TIMEOUT = 1200  # seconds per cell: a guard against hangs, far above each budget
RECHECK_SLOW = "CLUSTERGYM_NB_RECHECK_SLOW"
# absolute paths of this machine or of a temporary directory must not reach committed outputs
ABSOLUTE_PATH = re.compile(r"(?<![\w.])/(?:tmp|home|root|work|usr|var|opt|Users)/")


def _meta(nb: Any) -> dict[str, Any]:
    return nb.metadata.get("clustergym", {})


def _skip_without_traces(path: Path, nb: Any) -> None:
    if _meta(nb).get("needs_traces") and not traces_available():
        pytest.skip(
            f"{path.name} needs the traces: none at $CLUSTERGYM_TRACES or {default_trace_dir()} (see docs/traces.md)"
        )


def _execute(path: Path, budget: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    nb = nbformat.read(path, as_version=4)
    _skip_without_traces(path, nb)
    monkeypatch.setenv("CLUSTERGYM_NB_BUDGET", budget)  # the kernel inherits this environment
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = nbclient.NotebookClient(
        nb, timeout=TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:
        pytest.fail(f"{path.name} ({budget} budget): a cell failed\n{e}", pytrace=False)
    return nb


def figure_data(nb: Any) -> list[tuple[str, list[dict[str, Any]]]]:
    """The ``(name, records)`` of every figure-data display, in order."""
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            fd = o.get("metadata", {}).get("clustergym", {})
            if "figure_data" in fd:
                out.append((fd["figure_data"], fd["records"]))
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def differences(committed: list[tuple[str, list[dict]]], fresh: list[tuple[str, list[dict]]]) -> list[str]:
    """Human-readable differences between two :func:`figure_data` lists (empty when they agree)."""
    if [n for n, _ in committed] != [n for n, _ in fresh]:
        return [f"figures {[n for n, _ in committed]} committed, {[n for n, _ in fresh]} now"]
    diffs = []
    for (name, old), (_, new) in zip(committed, fresh):
        if len(old) != len(new):
            diffs.append(f"{name}: {len(old)} rows committed, {len(new)} now")
            continue
        for i, (ro, rn) in enumerate(zip(old, new)):
            if ro.keys() != rn.keys():
                diffs.append(f"{name} row {i}: columns {sorted(ro)} committed, {sorted(rn)} now")
            diffs += [
                f"{name} row {i} {k}: {ro[k]!r} committed, {rn[k]!r} now"
                for k in ro.keys() & rn.keys()
                if not _same(ro[k], rn[k])
            ]
    return diffs


def test_there_are_notebooks():
    assert PATHS, f"no notebooks in {NOTEBOOKS}"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs_on_the_tiny_budget(path: Path, monkeypatch, tmp_path):
    nb = nbformat.read(path, as_version=4)
    first = next((c for c in nb.cells if c.cell_type == "code"), None)
    assert first is not None and "CLUSTERGYM_NB_BUDGET" in first.source, (
        f"{path.name}: the first code cell must read BUDGET from CLUSTERGYM_NB_BUDGET"
    )
    nb = _execute(path, "tiny", monkeypatch, tmp_path)
    assert figure_data(nb), f"{path.name}: no figure data displayed (show_figure_data)"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_committed_outputs_are_full_and_clean(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert _meta(nb).get("recheck") in ("always", "slow"), (
        f"{path.name}: metadata clustergym.recheck must say 'always' (cheap) or 'slow'"
    )
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), f"{path.name}: committed with cells that did not run"
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), f"{path.name}: not executed top to bottom in one go: {counts}"
    first = "".join(o.get("text", "") for o in code[0].outputs)
    assert first.startswith("budget full"), f"{path.name}: committed outputs are not from the full budget: {first!r}"
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"], f"{path.name}: committed with an error"
    stderr = [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert not stderr, f"{path.name}: stderr in the committed outputs (warnings?): {stderr[0][:300]}"
    figures = [o for o in outputs if "image/png" in o.get("data", {})]
    data = figure_data(nb)
    assert figures and len(data) >= len(figures), (
        f"{path.name}: {len(figures)} figures and {len(data)} figure-data displays (each figure needs its data)"
    )
    for name, records in data:
        assert records, f"{path.name}: figure data {name!r} is empty"
    texts = [o.get("text", "") for o in outputs] + [
        v for o in outputs for k, v in o.get("data", {}).items() if k.startswith("text/")
    ]
    leaks = [m.group(0) for t in texts for m in [ABSOLUTE_PATH.search(str(t))] if m]
    assert not leaks, f"{path.name}: absolute paths in the committed outputs: {leaks}"
    assert not any("wall_seconds" in str(t) for t in texts), f"{path.name}: timings in the committed outputs"


def _recheck_params() -> list[Any]:
    params = []
    for p in PATHS:
        slow = _meta(nbformat.read(p, as_version=4)).get("recheck") != "always"
        marks = (
            [
                pytest.mark.slow,
                pytest.mark.skipif(
                    not os.environ.get(RECHECK_SLOW), reason=f"trains an agent (minutes): set {RECHECK_SLOW}=1"
                ),
            ]
            if slow
            else []
        )
        params.append(pytest.param(p, id=p.stem, marks=marks))
    return params


@pytest.mark.parametrize("path", _recheck_params())
def test_committed_figure_data_match_the_code(path: Path, monkeypatch, tmp_path):
    committed = figure_data(nbformat.read(path, as_version=4))
    fresh = figure_data(_execute(path, "full", monkeypatch, tmp_path))
    diffs = differences(committed, fresh)
    assert not diffs, (
        f"{path.name}: the committed figures are not what the current code draws; re-execute "
        f"(CLUSTERGYM_NB_BUDGET=full jupyter execute --inplace {path.relative_to(NOTEBOOKS.parent)}):\n"
        + "\n".join(diffs[:20])
    )


def test_differences_catch_a_changed_number():
    """The comparison itself: equal up to float formatting, different beyond it."""
    old = [("agents", [{"agent": "a", "mean": 1.0, "lo": None, "uses_oracle": False}])]
    assert differences(old, [("agents", [{"agent": "a", "mean": 1.0 + 1e-13, "lo": None, "uses_oracle": False}])]) == []
    assert differences(old, [("agents", [{"agent": "a", "mean": 1.001, "lo": None, "uses_oracle": False}])])
    assert differences(old, [("agents", [{"agent": "a", "mean": 1.0, "lo": 0.5, "uses_oracle": False}])])
    assert differences(old, [("agents", [{"agent": "a", "mean": 1.0, "lo": None, "uses_oracle": True}])])
    assert differences(old, [("paired", old[0][1])])
    assert differences(old, [("agents", old[0][1] * 2)])
