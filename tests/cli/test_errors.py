"""Every user-facing error exits 2 with a message naming the problem and no traceback; with --json,
stdout is one JSON document {"error": {"type", "field", "message"}}.

The cases are the audit's categories, command by command: scenarios and files, agents and models,
seeds and horizons, settings, sweeps and output folders, trace options, claims and benchmarks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clustergym.cli import app

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("quiet_warnings")
FIX = Path(__file__).resolve().parents[1] / "fixtures" / "traces"

SCENARIO = """name: x
resources: [cpu]
servers: [{count: %(count)s, capacity: [1]}]
workload: {kind: poisson, rate: %(rate)s, demand: {dist: fixed, vector: [0.5]}, service: {dist: exponential, mean: 1}}
horizon: %(horizon)s
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    def scenario(name: str, count="2", rate="1.0", horizon="10", extra="") -> str:
        p = tmp_path / name
        p.write_text(SCENARIO % {"count": count, "rate": rate, "horizon": horizon} + extra)
        return str(p)

    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: caf\xe9\n")
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "not-a-model.zip").write_text("x")
    (tmp_path / "empty-dir").mkdir()
    return {
        "inf": scenario("inf.yaml", horizon=".inf"),
        "rate": scenario("rate.yaml", rate="1.0e+300"),
        "count": scenario("count.yaml", count="1000000000000"),
        "latin": str(latin),
        "dup": scenario("dup.yaml", extra="horizon: 20\n"),
        "file": str(tmp_path / "a-file"),
        "zip": str(tmp_path / "not-a-model.zip"),
        "dir": str(tmp_path / "empty-dir"),
        "tmp": str(tmp_path),
    }


RUN = ["run", "ec2", "--agent", "best-fit", "--horizon", "5"]
CMP = ["compare", "ec2", "--agents", "best-fit", "--seeds", "1", "--horizon", "5"]
TRAIN = ["train", "ec2", "--timesteps", "64", "--envs", "1", "--no-progress"]
TRACE = ["trace", "google", "--trace-dir", str(FIX)]

#: (id, argv with {placeholders} from `files`, words the message must contain, whether --json applies)
CASES = [
    # scenarios and scenario files
    ("run: unknown scenario", ["run", "no-such", "--agent", "best-fit"], "unknown scenario", True),
    ("run: endless horizon", RUN[:4] + ["--horizon", "inf"], "inf is only allowed", True),
    ("run: horizon 0", RUN[:4] + ["--horizon", "0"], "horizon", True),
    ("run: horizon nan", RUN[:4] + ["--horizon", "nan"], "horizon", True),
    ("run: horizon too long", RUN[:4] + ["--horizon", "1e12"], "more than the limit", True),
    ("run: file with inf horizon", ["run", "{inf}", "--agent", "best-fit"], "inf is only allowed", True),
    ("run: file with rate 1e300", ["run", "{rate}", "--agent", "best-fit"], "more than the limit", True),
    ("run: file with 1e12 servers", ["run", "{count}", "--agent", "best-fit"], "exceed the limit", True),
    ("run: file not UTF-8", ["run", "{latin}", "--agent", "best-fit"], "not UTF-8", True),
    ("run: duplicate key", ["run", "{dup}", "--agent", "best-fit"], "given twice", True),
    ("run: bool as a count", RUN + ["--set", "num_servers=true"], "params.num_servers", True),
    ("run: 1e12 servers", RUN + ["--set", "num_servers=1e12"], "params.num_servers", True),
    ("run: nan parameter", RUN + ["--set", "zeta=nan"], "zeta", True),
    ("run: unknown parameter", RUN + ["--set", "nope=1"], "params.nope", True),
    ("run: --set without =", RUN + ["--set", "zeta"], "key=value", True),
    ("run: warm-up past the horizon", RUN + ["--warmup", "10"], "warm-up", True),
    ("compare: warm-up twice", CMP + ["--warmup", "1", "--set", "warmup=2"], "disagree", True),
    # agents and models
    ("run: unknown agent", ["run", "ec2", "--agent", "nope"], "unknown agent", True),
    ("run: bad agent parameter", RUN + ["--set", "agent.scan=0"], "agent.scan", True),
    ("run: missing model", ["run", "ec2", "--agent", "/nonexistent/model.zip"], "no such model file", True),
    ("run: folder without model", ["run", "ec2", "--agent", "{dir}"], "without a saved model", True),
    # seeds
    ("run: negative seed", RUN + ["--seed", "-1"], "--seed", True),
    ("run: seed not a number", RUN + ["--seed", "x"], "--seed", True),
    # compare
    ("compare: agent twice", CMP[:2] + ["--agents", "best-fit,best-fit", "--seeds", "1"], "listed twice", True),
    ("compare: zero seeds", CMP[:4] + ["--seeds", "0"], "--seeds", True),
    ("compare: zero workers", CMP + ["--workers", "0"], "--workers", True),
    ("compare: unknown p-value correction", CMP + ["--p-adjust", "bonferroni"], "--p-adjust", True),
    ("compare: bad sweep value", CMP + ["--sweep", "num_servers=5,10,0"], "num_servers=0", True),
    ("compare: sweep without =", CMP + ["--sweep", "zeta"], "expected key=v1", True),
    ("compare: --out a file", CMP + ["--out", "{file}"], "existing file", True),
    ("compare: --out unwritable", CMP + ["--out", "/proc/clustergym-test"], "cannot write", True),
    ("compare: --out not empty", CMP + ["--out", "{tmp}"], "not empty", True),
    ("compare: resume nothing", ["compare", "--resume", "{dir}"], "no earlier run", True),
    ("compare: no scenario", ["compare", "--agents", "best-fit"], "required", True),
    ("compare: agent settings", CMP + ["--set", "agent.scan=2"], "scenario parameters only", True),
    ("compare: bad reference", CMP + ["--reference", "random"], "--reference", True),
    # train
    ("train: unknown algo", TRAIN + ["--algo", "sac", "--out", "{tmp}/t1"], "sac", True),
    ("train: unknown algo setting", TRAIN + ["--set", "algo.nope=3", "--out", "{tmp}/t2"], "algo.nope", True),
    ("train: nan reward scale", TRAIN + ["--set", "reward_scale=nan", "--out", "{tmp}/t3"], "reward_scale", True),
    ("train: inf penalty", TRAIN + ["--set", "invalid_penalty=inf", "--out", "{tmp}/t4"], "invalid_penalty", True),
    ("train: zero timesteps", ["train", "ec2", "--timesteps", "0", "--out", "{tmp}/t5"], "timesteps", True),
    ("train: negative cpu budget", ["train", "ec2", "--cpu-budget", "-1", "--out", "{tmp}/t5b"], "cpu_budget", True),
    ("train: nan cpu budget", ["train", "ec2", "--cpu-budget", "nan", "--out", "{tmp}/t5c"], "cpu_budget", True),
    (
        "train: cpu budget with subprocess envs",
        ["train", "ec2", "--cpu-budget", "60", "--vec-env", "subproc", "--envs", "2", "--out", "{tmp}/t5e"],
        "vec-env subproc",
        True,
    ),
    (
        "train: zero torch threads",
        ["train", "ec2", "--torch-threads", "0", "--out", "{tmp}/t5d"],
        "torch_threads",
        True,
    ),
    ("train: resume nothing", ["train", "--resume", "/nonexistent/ckpt.zip"], "no such checkpoint", True),
    ("train: --out not empty", TRAIN + ["--out", "{tmp}"], "not empty", True),
    ("train: endless horizon", TRAIN + ["--set", "horizon=inf", "--out", "{tmp}/t6"], "inf is only allowed", True),
    # trace
    ("trace: inverted window", TRACE + ["--window", "50000:100"], "START must be before END", True),
    ("trace: bad priorities", TRACE + ["--priorities", "99x"], "--priorities", True),
    ("trace: plot to a bad path", TRACE + ["--plot", "/proc/x.png"], "cannot write", True),
    ("trace: plot to no folder", TRACE + ["--plot", "{tmp}/no/x.png"], "does not exist", True),
    ("trace: plot of unknown type", TRACE + ["--plot", "{tmp}/x.txt"], "unknown image type", True),
    ("trace: unknown trace", ["trace", "nonsense"], "unknown trace", True),
    # reproduce, bench, the command itself
    ("reproduce: unknown claim", ["reproduce", "no-such-claim"], "no-such-claim", True),
    ("reproduce: bad setting", ["reproduce", "rms-ec2-boundary", "--set", "rms.google_n=-5"], "rms.google_n", True),
    ("bench: negative events", ["bench", "--no-ppo", "--no-replay", "--memory-events", "-1"], "--memory-events", True),
    ("bench: --plot without --scale", ["bench", "--no-ppo", "--no-replay", "--plot", "{tmp}/x.png"], "--scale", True),
    (
        "bench: --task without --training",
        ["bench", "--no-ppo", "--no-replay", "--task", "rms-trap"],
        "--training",
        True,
    ),
    ("bench: training on an unknown task", ["bench", "--training", "--task", "nope-task"], "nope-task", True),
    ("train: unknown decoding", TRAIN + ["--decoding", "median", "--out", "{tmp}/t8"], "decoding", True),
    ("train: unknown vec env", TRAIN + ["--vec-env", "ray", "--out", "{tmp}/t7"], "vec_env", True),
    ("bench: scale plot to a bad path", ["bench", "--scale", "--quick", "--plot", "/proc/x.png"], "cannot write", True),
    ("unknown command", ["nope"], "No such command", True),
    # benchmark
    ("benchmark: unknown agent", ["benchmark", "nope", "--tasks", "rms-trap"], "unknown agent", True),
    ("benchmark: unknown task", ["benchmark", "random", "--tasks", "nope-task"], "nope-task", True),
    ("benchmark: zero seeds", ["benchmark", "random", "--seeds", "0"], "--seeds", True),
    ("benchmark: unknown decoding", ["benchmark", "random", "--decoding", "median"], "--decoding", True),
    ("benchmark: unknown format", ["benchmark", "random", "--format", "xls"], "--format", True),
    ("benchmark: nothing to do", ["benchmark"], "give an agent", True),
    ("benchmark: reference without --out", ["benchmark", "--reference", "--tasks", "rms-trap"], "--out", True),
    ("benchmark: markdown with an agent", ["benchmark", "random", "--markdown"], "--markdown", True),
    ("benchmark: import path not found", ["benchmark", "nopkg.mod:make", "--tasks", "rms-trap"], "PYTHONPATH", True),
    ("benchmark: missing model", ["benchmark", "/nonexistent/model.zip"], "no such model file", True),
    # curves, convert-model, list
    ("curves: no run", ["curves", "{dir}", "--out", "{tmp}/c"], "eval.csv", True),
    ("convert-model: not trusted", ["convert-model", "{dir}"], "--trust-pickle", True),
    ("list: unknown option", ["list", "--nope"], "No such option", True),
]


def test_every_command_has_its_json_error_contract_tested():
    names = {c.name or c.callback.__name__ for c in app.registered_commands}
    covered = {argv[0] for _, argv, _, has_json in CASES if has_json}
    assert names and names <= covered, f"no --json error case for {sorted(names - covered)}"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_every_user_facing_error_exits_2_with_a_message_and_no_traceback(files, case):
    _, argv, words, has_json = case
    argv = [a.format(**files) for a in argv]
    for json_out in [False, True] if has_json else [False]:
        res = runner.invoke(app, argv + (["--json"] if json_out else []))
        text = res.stdout + res.stderr
        assert res.exit_code == 2, f"{argv}: exit {res.exit_code}\n{text}\n{res.exception!r}"
        assert "Traceback" not in text and not (res.exception and not isinstance(res.exception, SystemExit))
        assert words in " ".join(text.split()), text
        if json_out:
            doc = json.loads(res.stdout)  # one parseable document, nothing else on stdout
            assert set(doc) == {"error"} and words in doc["error"]["message"] + " " + str(doc["error"]["field"])
