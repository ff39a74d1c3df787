"""The learned-agent claims of the documentation equal the results files ``clustergym benchmark --json`` wrote.

docs/results/claims.json names each method's results file per split; the blocks between
``<!-- claims:... -->`` and ``<!-- /claims -->`` in README.md, docs/learning_results.md,
models/README.md and the models' READMEs are rendered from them (clustergym.suite.claims), and each
file's report is what clustergym.suite.report computes from its episodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clustergym._json import jsonable
from clustergym.suite.claims import load_index, main, render_blocks
from clustergym.suite.report import report

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "docs" / "results" / "claims.json"
DOCS = [ROOT / "README.md", ROOT / "docs" / "learning_results.md", ROOT / "models" / "README.md"]


@pytest.fixture(scope="module")
def index():
    return load_index(INDEX)


def _model_readmes(index):
    out = []
    for m in index["methods"]:
        for spec in m["docs"]["test"]["report"]["tasks"][m["task"]]["runs"]:
            out.append(ROOT / spec / "README.md")
    return out


def test_every_document_states_what_the_results_files_hold(index):
    files = DOCS + _model_readmes(index)
    for f in files:
        text = f.read_text()
        assert "<!-- claims:" in text, f"{f.relative_to(ROOT)} has no claims block"
        assert render_blocks(index, text) == text, (
            f"{f.relative_to(ROOT)}: a claims block differs from docs/results; run "
            "python -m clustergym.suite.claims docs/results/claims.json <file>"
        )


def test_readme_names_each_method_with_its_test_split_verdict(index):
    readme = (ROOT / "README.md").read_text()
    for m in index["methods"]:
        test = m["docs"]["test"]["report"]["tasks"][m["task"]]
        assert f"**{test['verdict']}**" in readme and m["models"] in readme


def test_each_results_file_is_a_benchmark_document_of_its_split(index):
    for m in index["methods"]:
        for split, doc in m["docs"].items():
            assert doc["split"] == split and doc["report"]["split"] == split
            assert set(doc) >= {"seeds", "specs", "rows", "report"}
            assert len(doc["seeds"]) == 30 and m["task"] in doc["report"]["tasks"]


def test_the_stored_reports_are_recomputed_exactly_from_the_episodes(index):
    m = index["methods"][0]  # one file (the bootstrap takes a second per file): the others are alike
    doc = m["docs"]["test"]
    assert jsonable(report(doc)) == json.loads(json.dumps(jsonable(doc["report"])))


def test_check_mode_flags_a_block_that_drifted(tmp_path, index):
    f = tmp_path / "x.md"
    f.write_text("before\n<!-- claims:table -->\n| typed by hand |\n<!-- /claims -->\nafter\n")
    assert main([str(INDEX), str(f), "--check"]) == 1 and "typed by hand" in f.read_text()
    assert main([str(INDEX), str(f)]) == 0 and main([str(INDEX), str(f), "--check"]) == 0
    assert "typed by hand" not in f.read_text() and f.read_text().startswith("before\n")


def test_each_claimed_run_records_its_training_cpu_within_the_hour(index):
    """The issue's budget, as the models' own ``model.json`` records it: every run of a claim at most
    one CPU-hour (all its ``clustergym train`` processes, a resumed run's earlier ones included)."""
    from clustergym.suite.claims import _run_cpu

    for m in index["methods"]:
        for run in m["docs"]["test"]["report"]["tasks"][m["task"]]["runs"]:
            cpu, _ = _run_cpu(json.loads((ROOT / run / "model.json").read_text()))
            assert cpu is not None and 0 < cpu <= 3600, f"{run}: {cpu} CPU-s"


def test_the_cpu_cell_is_the_range_of_the_records_and_says_what_they_cover(tmp_path):
    from clustergym.suite.claims import training_cpu

    def run(name: str, meta: dict) -> str:
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.json").write_text(json.dumps(meta))
        return name

    whole = {"cpu_seconds_last_run": 150.4, "seconds_last_run_parts": {}}
    resumed = {"processes": [{"cpu_seconds": 100.0}, {"cpu_seconds": 1210.0}], "cpu_seconds_total": 1310.0}
    assert training_cpu([run("a", whole), run("b", resumed)], tmp_path) == "150–1,310 s"
    old = run("c", {"cpu_seconds_last_run": 9.0})  # recorded when only the RL updates were timed
    assert training_cpu(["a", old], tmp_path) == (
        "9–150 s (setup and cloning not timed in 1 of 2 runs: recorded before model.json counted the whole process)"
    )
    lost = run("d", {"processes": [{"cpu_seconds": None}, {"cpu_seconds": 5.0}], "cpu_seconds_total": None})
    assert training_cpu(["a", lost], tmp_path) == "not recorded"


def test_a_later_look_at_a_test_split_shows_the_verdict_that_counts_every_look(index):
    """A method scored on its task's test split after another one was (``test_look`` k > 1) shows,
    beside the 95% verdict, the report at 1 - 0.05 / k: recomputed from its results file here."""
    from clustergym.suite.claims import fmt_interval, table

    later = [m for m in index["methods"] if m.get("test_look", 1) > 1]
    assert later, "the index names no later look (the mris-poisson 2.25M models are the second)"
    rows = table(index).splitlines()
    for m in later:
        k = m["test_look"]
        t = report(m["docs"]["test"], level=1 - 0.05 / k)["tasks"][m["task"]]
        row = next(r for r in rows if f"`{m['models']}`" in r)
        assert f"look {k} at this task: at {100 * (1 - 0.05 / k):g}%" in row
        assert fmt_interval(t["paired_vs_best"], 2, signed=True) in row and f"**{t['verdict']}**" in row
        # the corrected interval is the wider one
        low95 = m["docs"]["test"]["report"]["tasks"][m["task"]]["paired_vs_best"]["low"]
        assert t["paired_vs_best"]["low"] < low95
