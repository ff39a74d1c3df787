"""``clustergym.comparison.run_comparison``: every feature of ``clustergym compare`` from Python (a suite
task, "all", a run folder, resume after an interruption)."""

from __future__ import annotations

import json

import pytest

from clustergym.comparison import Comparison, Reporter, run_comparison, settings_words
from clustergym.errors import ConfigError
from clustergym.keyvalue import parse_pairs, parse_value
from clustergym.runner.journal import CELLS_FILE, RUN_FILE


class _Count(Reporter):
    """Counts what it is told; raises KeyboardInterrupt (as Ctrl-C would) after ``stop_after`` episodes."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.stop_after, self.started, self.episodes, self.notes = stop_after, None, 0, []

    def note(self, message: str) -> None:
        self.notes.append(message)

    def start(self, total: int, kept: int) -> None:
        self.started = (total, kept)

    def episode(self, agent: str, seed: int) -> None:
        self.episodes += 1
        if self.episodes == self.stop_after:
            raise KeyboardInterrupt


def test_a_suite_task_with_all_interrupted_then_resumed_from_python(tmp_path):
    out = tmp_path / "run"
    first = _Count(stop_after=5)
    with pytest.raises(KeyboardInterrupt, match=r"5 of (\d+) episodes kept .*--resume"):
        run_comparison("rms-trap", ["mwr", "all"], seeds=1, workers=1, out=out, report=first)
    total, kept = first.started
    assert kept == 0 and total > 10  # "all": every agent that runs on the task, one seed each
    record = json.loads((out / RUN_FILE).read_text())
    assert record["status"] == "interrupted"
    assert record["compare"]["argv"]["SCENARIO"] == "rms-trap" and record["compare"]["argv"]["--agents"] == "mwr,all"
    kept_rows = [json.loads(line) for line in (out / CELLS_FILE).read_text().splitlines()]
    assert len(kept_rows) == 5

    with pytest.raises(ConfigError) as e:  # resume continues the run with its own settings
        run_comparison(resume=out, seeds=2)
    assert e.value.field == "--seeds"

    again = _Count()
    res = run_comparison(resume=out, agents="mwr, all", workers=1, report=again)  # the same agents, other spacing
    assert isinstance(res, Comparison)
    assert again.started == (total, 5) and again.episodes == total - 5  # only the missing episodes ran
    assert any(n.startswith(f"resuming {out}: 5 of {total}") for n in again.notes)
    assert res.task == "clustergym/rms-trap-v1" and res.metric == "mean_queue_length"
    assert res.agents[0] == "mwr" == res.reference and len(res.agents) == total and res.skipped
    assert len(res.runs) == total and set(res.summary["agent"]) == set(res.agents)
    for k in kept_rows:  # the kept episodes are in the tables as they were
        assert res.runs.iloc[k["index"]]["mean_queue_length"] == k["row"]["mean_queue_length"]
    assert res.out == out and {p.name for p in res.written} >= {"results.csv", "summary.csv"}
    assert json.loads((out / RUN_FILE).read_text())["status"] == "complete"
    doc = res.to_dict()
    assert doc["task"] == res.task and doc["seeds"] == [0] and len(doc["runs"]) == total


def test_settings_are_recorded_in_the_command_lines_words_and_read_back():
    params = {"zeta": 0.9, "num_servers": 20, "name": "a,b", "flag": True, "none": None, "pair": [1, 2.5], "s": "1"}
    words = settings_words("ec2", ["first-fit", "best-fit"], params=params, sweep=("load", [0.8, float("inf"), "x"]))
    assert words["--agents"] == "first-fit,best-fit"
    assert parse_pairs(words["--set"]) == params
    key, _, raw = words["--sweep"].partition("=")
    assert key == "load" and [parse_value(v) for v in raw.split(",")] == [0.8, float("inf"), "x"]
    cli = settings_words("ec2", "first-fit", params=["zeta=0.90"], sweep="load=1,2")  # the CLI's words, as given
    assert cli["--set"] == ["zeta=0.90"] and cli["--sweep"] == "load=1,2" and cli["--seeds"] is None


def test_bad_settings_are_named_before_anything_runs(tmp_path):
    for kwargs, field in [
        ({"agents": ["first-fit", "first-fit"]}, "--agents"),
        ({"agents": ["first-fit"], "params": {"agent.scan": 2}}, "--set"),
        ({"agents": ["first-fit"], "sweep": "zeta"}, "--sweep"),
        ({"agents": ["first-fit"], "seeds": 0}, "--seeds"),
        ({"agents": ["first-fit"], "p_adjust": "bonferroni"}, "--p-adjust"),
    ]:
        with pytest.raises(ConfigError) as e:
            run_comparison("ec2", out=tmp_path / "never", **kwargs)
        assert e.value.field == field, kwargs
    with pytest.raises(ConfigError, match="suite task 'rms-trap' fixes") as e:
        run_comparison("rms-trap", ["mwr"], horizon=10)
    assert not (tmp_path / "never").exists()
