"""Executes every ``notebooks/*.ipynb`` top to bottom on a tiny budget.

Each notebook's first code cell reads ``BUDGET = os.environ.get("CLUSTERGYM_NB_BUDGET",
"full")`` and uses tiny sizes when ``BUDGET == "tiny"``; this runner sets
``CLUSTERGYM_NB_BUDGET=tiny`` and runs the notebook with nbclient on the ``python3``
kernel (this interpreter).  A failing cell fails the test with that cell's source and
error.  A notebook whose metadata declares ``"clustergym": {"needs_traces": true}`` is
skipped, with the reason, when the trace directory is absent.

By hand, on the real budget: ``jupyter execute --inplace notebooks/NAME.ipynb`` (nbclient).
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -e '.[dev]')")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e '.[dev]')")

from clustergym.traces.paths import default_trace_dir, traces_available  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
TIMEOUT = 600  # seconds per cell: a guard against hangs, far above the tiny budget


def test_there_are_notebooks():
    assert PATHS, f"no notebooks in {NOTEBOOKS}"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs_on_the_tiny_budget(path: Path, monkeypatch, tmp_path):
    nb = nbformat.read(path, as_version=4)
    if nb.metadata.get("clustergym", {}).get("needs_traces") and not traces_available():
        pytest.skip(f"{path.name} needs the traces: none at $CLUSTERGYM_TRACES or {default_trace_dir()} "
                    "(see docs/traces.md)")
    first = next((c for c in nb.cells if c.cell_type == "code"), None)
    assert first is not None and "CLUSTERGYM_NB_BUDGET" in first.source, \
        f"{path.name}: the first code cell must read BUDGET from CLUSTERGYM_NB_BUDGET"
    monkeypatch.setenv("CLUSTERGYM_NB_BUDGET", "tiny")  # the kernel inherits this environment
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = nbclient.NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:
        pytest.fail(f"{path.name}: a cell failed\n{e}", pytrace=False)
