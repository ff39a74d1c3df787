"""``clustergym reproduce`` on the runner: the claims' episodes are cells, run serially, on local
processes or on Ray with the same rows; runs shared between claims are computed once per process
(one memo); the options are explicit (``--workers``, ``--scale``, ``--set``) and bad values are
clear errors (exit 2, no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from clustergym._json import jsonable
from clustergym.agent_api import AGENTS
from clustergym.cli import app
from clustergym.errors import ConfigError
from clustergym.reproduce import RUNS, SETTINGS, ReproduceConfig, episodes, run_claims
from clustergym.reproduce.autoscale import window_cell
from clustergym.reproduce.bfjs import slotted_cell
from clustergym.reproduce.lotes import case_cell
from clustergym.reproduce.mris import instance_cell
from clustergym.reproduce.rms import ec2_cell, trap_cell
from clustergym.runner import Cell, Probe, run_rows

pytestmark = pytest.mark.usefixtures("quiet_warnings")

cli = CliRunner()


def _cli(*args: str):
    result = cli.invoke(app, list(args), env={"COLUMNS": "240"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _figures(rows: list[dict]) -> list:
    """Rows without the machine's wall time, as plain JSON values."""
    return jsonable([{k: v for k, v in r.items() if k != "wall_seconds"} for r in rows])


def _claim_cells() -> list[Cell]:
    """One short cell of each kind the claims run: sampled and agent probes, a Scenario object with an
    agent the cell carries (the Fig. 1b trap), slotted, loss and exact-instance presets."""
    return [
        ec2_cell("rms-rf-ad", 0.9, 1, 20.0),
        ec2_cell("rms", 0.8, 0, 20.0, rates=(1.0, 1.0, 1.0)),
        trap_cell(0, 30.0),
        slotted_cell("two-sizes", "vqs", seed=0, horizon=2000),
        window_cell("autoscale-4vm", "dra", seed=0, t0=1.0, num_servers=10, horizon=3.0),
        case_cell(
            "lotes-omega",
            "lotes",
            params={"omega": 0.1, "load": 0.9, "machines_per_config": 2, "horizon": 0.2, "instance": 0},
        ),
        instance_cell("mris-lemma41", "mris"),
    ]


# ========================================================================================== the runner path
def test_claim_cells_give_the_same_rows_serially_and_on_two_workers():
    cells = _claim_cells()
    serial = run_rows(cells, workers=1)
    assert _figures(run_rows(cells, workers=2)) == _figures(serial)
    trap = serial[2]["trap"]
    assert trap["left_2_1_at"] is None and trap["q_start"] == [1000, 1000]  # BF stays trapped in (2, 1)
    assert "rms-trap-setup" not in AGENTS  # the cell carries its agent; nothing is registered
    assert serial[3]["J"] == 4 and serial[4]["g"] is not None  # probes of the agent


def test_episodes_give_the_rows_in_cell_order_whatever_the_work_order():
    cells = [ec2_cell("rms", 0.8, s, T) for s, T in ((0, 10.0), (1, 30.0), (2, 20.0))]

    def cost(c):
        return c.horizon

    a = episodes(cells, ReproduceConfig(workers=1))
    RUNS.clear()
    b = episodes(cells, ReproduceConfig(workers=2), cost=cost)
    assert [r["seed"] for r in b] == [0, 1, 2]
    assert _figures(a) == _figures(b)


def test_claims_measure_the_same_with_one_and_two_workers():
    ids = ["rms-prop1", "mris-lemma64-tight"]
    one = run_claims(ids, ReproduceConfig(workers=1, scale=0.05))
    two = run_claims(ids, ReproduceConfig(workers=2, scale=0.05))
    assert [r["measured"] for r in one] == [r["measured"] for r in two]
    assert one[0]["measured"]["T"] == 500.0  # --scale multiplies the horizon
    assert all(r["passed"] for r in one)


# ========================================================================================== the memo
_CALLS = {"n": 0}


def _counting(env) -> int:
    _CALLS["n"] += 1
    return env.sim.n_arrivals


def test_the_memo_runs_a_shared_cell_once():
    memo: dict = {}
    _CALLS["n"] = 0
    c1 = Cell("bf-trap", "best-fit", 0, horizon=5.0, probes=(("n", Probe(_counting)),))
    c2 = Cell("bf-trap", "first-fit", 0, horizon=5.0, probes=(("n", Probe(_counting)),))
    first = run_rows([c1, c1, c2], memo=memo)
    again = run_rows([c2, c1], memo=memo)
    assert _CALLS["n"] == 2 and len(memo) == 2
    assert first[0] == first[1] == again[1] and first[2] == again[0]  # wall_seconds too: the same runs
    again[0]["n"] = -1  # rows are copies: the memo keeps its own
    assert memo[c2]["n"] == first[2]["n"] != -1
    run_rows([c1], memo=None)  # no memo, no sharing
    assert _CALLS["n"] == 3


def test_claims_share_their_runs_through_one_memo():
    RUNS.clear()
    config = ReproduceConfig(workers=1, scale=0.01)  # EC2 over T = 10
    (mws,) = run_claims(["rms-fig5-rms-mws"], config)  # RMS and MWS at 4 zetas x 3 seeds
    assert len(RUNS) == 24
    rms_rows = {c: dict(r) for c, r in RUNS.items() if c.agent == "rms"}
    (mwr,) = run_claims(["rms-fig5-mwr"], config)  # MWR and RMS: only MWR's 12 runs are new
    assert len(RUNS) == 36
    assert all(RUNS[c] == r for c, r in rms_rows.items())
    assert mws["measured"]["queue"]["zeta=0.8"]["rms"] == mwr["measured"]["queue"]["zeta=0.8"]["rms"]


# ========================================================================================== options
def test_config_parses_settings_and_keeps_the_defaults():
    c = ReproduceConfig(
        settings=ReproduceConfig.parse_sets(["lotes.machines=10", "rms.google_scalings=0.5,1", "rms.google_n=0"])
    )
    assert c.get("lotes.machines") == 10 and c.get("rms.google_scalings") == (0.5, 1.0)
    one = ReproduceConfig(settings=ReproduceConfig.parse_sets(["rms.google_scalings=1.5"]))
    assert one.get("rms.google_scalings") == (1.5,)  # one scaling: a list of one, not an error
    assert c.get("rms.google_n") == 0 and c.get("lotes.instances") == SETTINGS["lotes.instances"].default == 2
    with pytest.raises(ConfigError, match="lotes.horizon: expected a number"):
        ReproduceConfig(settings={"lotes.horizon": [2]})
    d = ReproduceConfig()
    assert (d.workers, d.ray, d.scale) == (1, None, 1.0)
    assert {k: d.get(k) for k in SETTINGS} == {
        "rms.google_n": 10_000,
        "rms.google_scalings": (0.5, 1.0, 1.5),
        "lotes.machines": 50,
        "lotes.horizon": 6.0,
        "lotes.instances": 2,
        "lotes.google_n": 0,
        "autoscale.google_servers": 300,
        "autoscale.google_n": 60_000,
    }


@pytest.mark.parametrize(
    "args,message",
    [
        (["--workers", "0"], "workers: expected an integer >= 1"),
        (["--scale", "0"], "scale: expected a finite number > 0"),
        (["--scale", "-1"], "scale: expected a finite number > 0"),
        (["--scale", "inf"], "scale: expected a finite number > 0"),
        (["--set", "lotes.machines"], "expected key=value"),
        (["--set", "=3"], "expected key=value"),
        (["--set", "nope=1"], "nope: unknown setting; known: rms.google_n"),
        (["--set", "lotes.machines=0"], "lotes.machines: expected a value >= 1, got 0"),
        (["--set", "lotes.machines=many"], "lotes.machines: expected an integer, got 'many'"),
        (["--set", "lotes.machines=2.5"], "lotes.machines: expected an integer"),
        (["--set", "lotes.horizon=0"], "lotes.horizon: expected a value > 0"),
        (["--set", "rms.google_scalings=0.5,-1"], "rms.google_scalings: expected a value > 0"),
        (["--set", "rms.google_scalings=[]"], "rms.google_scalings: expected a non-empty list"),
        (["--set", "rms.google_n=-5"], "rms.google_n: expected a value >= 0"),
        (["--set", "autoscale.google_servers=0"], "autoscale.google_servers: expected a value >= 1, got 0"),
    ],
)
def test_bad_options_are_clear_errors(args, message):
    code, out, err = _cli("reproduce", "rms-ec2-boundary", *args, "--json")
    assert code == 2 and json.loads(out)["error"]["message"] == " ".join(err.split()).removeprefix("error: ")
    assert message in " ".join(err.split()) and "Traceback" not in err


def test_a_non_number_is_a_usage_error_without_traceback():
    code, out, err = _cli("reproduce", "rms-ec2-boundary", "--workers", "two")
    assert code == 2 and "Traceback" not in out + err and "--workers" in err


def test_help_documents_every_option_and_setting():
    code, out, _ = _cli("reproduce", "--help")
    assert code == 0
    text = " ".join(out.split())
    for opt in ("--workers", "--ray", "--scale", "--set", "--quiet", "--json"):
        assert opt in text
    for name in SETTINGS:
        assert name in text, name


def test_good_options_run_the_claim():
    code, out, err = _cli(
        "reproduce",
        "rms-ec2-boundary",
        "--workers",
        "1",
        "--scale",
        "0.5",
        "--set",
        "lotes.machines=10",
        "--quiet",
        "--json",
    )
    assert code == 0, err
    (r,) = json.loads(out)
    assert r["id"] == "rms-ec2-boundary" and r["passed"] is True


def test_a_fresh_process_knows_the_claims_of_every_paper():
    code = (
        "import json; from clustergym.reproduce import CLAIMS, load_claims; load_claims(); "
        "print(json.dumps(sorted({c.paper for c in CLAIMS.values()})))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == ["autoscale", "bfjs", "lotes", "mris", "rms"]


def _google_slice() -> bool:
    from clustergym.traces.paths import TraceNotFoundError, resolve_trace_dir

    try:
        return (resolve_trace_dir() / "google-clusterdata-2011-2" / "task_events").is_dir()
    except TraceNotFoundError:
        return False


@pytest.mark.traces
@pytest.mark.skipif(not _google_slice(), reason="the shared Google trace slice is absent (set CLUSTERGYM_TRACES)")
def test_autoscale_trace_settings_reach_the_runs():
    """autoscale.google_servers and autoscale.google_n size the Google-trace claim (the paper's Fig. 6: 1000 servers)."""
    code, out, err = _cli(
        "reproduce",
        "autoscale-google-trace-ordering",
        "--workers",
        "1",
        "--quiet",
        "--json",
        "--set",
        "autoscale.google_servers=20",
        "--set",
        "autoscale.google_n=500",
    )
    assert code == 0, err
    (r,) = json.loads(out)
    m = r["measured"]
    assert (m["servers"], m["tasks"]) == (20, 500)
    # 20 servers over 500 tasks are loaded: the bound and the policies differ, and it bounds them all
    assert r["passed"] is True and all(
        v < m["reward_rate"]["upper-bound"] for k, v in m["reward_rate"].items() if k != "upper-bound"
    )


def test_paper_scale_sets_every_size_to_the_papers_and_set_still_wins():
    from clustergym.reproduce.lotes import _phi_cell

    paper = ReproduceConfig(paper_scale=True, settings={"lotes.instances": 3})
    assert [paper.get(n) for n in ("lotes.machines", "lotes.horizon", "lotes.instances")] == [1000, 100.0, 3]
    assert paper.get("rms.google_n") == 0 and paper.get("rms.google_scalings") == (0.5, 0.75, 1.0, 1.25, 1.5)
    assert paper.get("autoscale.google_servers") == 1000 and paper.get("autoscale.google_n") == 0
    params = dict(_phi_cell(paper, "lotes", 0.015, 0).params)  # the Fig. 11 cells at the paper's size
    assert params["machines_per_config"] == 1000 and params["horizon"] == 100.0
    default = ReproduceConfig()
    assert all(default.get(n) == SETTINGS[n].default for n in SETTINGS)
    code, out, _ = _cli("reproduce", "--paper-scale", "--json")  # no claim: the listing, nothing runs
    assert code == 0 and any(c["id"] == "lotes-phi-ordering" for c in json.loads(out))


def test_kept_rows_come_back_exactly_as_the_episode_gave_them():
    import numpy as np

    from clustergym.reproduce.kept import decode, encode

    row = {
        "a": np.float32(1.5),
        "b": np.array([[1, 2], [3, 4]], dtype=np.int16),
        "c": (1, 2.0, "x", None),
        (0, 1): [float("nan"), float("inf"), True],
        3: {"d": np.bool_(True), "e": np.int64(7), "f": np.zeros(0)},
    }
    back = decode(json.loads(json.dumps(encode(row))))
    assert list(back) == list(row) and back["a"].dtype == np.float32 and back["a"] == 1.5
    assert back["b"].dtype == np.int16 and back["b"].shape == (2, 2) and (back["b"] == row["b"]).all()
    assert back["c"] == (1, 2.0, "x", None) and isinstance(back["c"], tuple)
    assert np.isnan(back[(0, 1)][0]) and back[(0, 1)][1:] == [float("inf"), True]
    assert type(back[3]["d"]) is np.bool_ and type(back[3]["e"]) is np.int64 and back[3]["f"].shape == (0,)
    with pytest.raises(TypeError):
        encode({"env": object()})  # not kept: its episode would run again


def _untimed(x):
    """``x`` without the times it took (keys naming seconds), at every depth: what was measured."""
    if isinstance(x, dict):
        return {k: _untimed(v) for k, v in x.items() if "seconds" not in k}
    return [_untimed(v) for v in x] if isinstance(x, list) else x


def test_out_keeps_every_episode_and_a_rerun_runs_only_the_missing_ones(tmp_path, capsys):
    import clustergym.reproduce as rp

    ids = ["rms-prop1", "bfjs-e2"]  # cheap: bfjs-e2 keeps 6 episodes at this scale
    config = ReproduceConfig(workers=1, scale=0.05, progress=True, out=str(tmp_path))
    RUNS.clear()
    first = run_claims(ids, config)
    ran = capsys.readouterr().err.count("[reproduce] episode")
    lines = (tmp_path / "episodes.jsonl").read_text().splitlines()
    assert ran >= 3 and len(lines) >= 3  # the episodes of preset cells (Scenario objects run again)
    (tmp_path / "episodes.jsonl").write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])  # a driver killed mid-write
    RUNS.clear()
    rp._KEPT.clear()  # a new process
    again = run_claims(ids, config)
    assert capsys.readouterr().err.count("[reproduce] episode") == ran - 2  # only the missing ones ran
    assert _untimed([r["measured"] for r in again]) == _untimed([r["measured"] for r in first])
    assert len((tmp_path / "episodes.jsonl").read_text().splitlines()) == len(lines)  # the cut line dropped
