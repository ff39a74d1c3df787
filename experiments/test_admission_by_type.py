"""``experiments/admission_by_type.py``: per-type arrivals and rejections add up to the episode's own counts."""

from __future__ import annotations

import numpy as np
import pytest

from clustergym.runner import Probe, run_episode
from clustergym.suite import eval_seeds, task

# experiments/admission_by_type.py, loaded by the experiment_script fixture (experiments/conftest.py)
SCRIPT = "admission_by_type"


@pytest.fixture(scope="module")
def script(experiment_script):
    return experiment_script


def test_counts_add_up_to_the_episode_s_rejections(script):
    t = task("autoscale-syn4")
    (seed,) = eval_seeds(1)
    row = run_episode(
        t.scenario(), "first-fit-admit", seed=seed, env_id=t.id, probes={"types": Probe(script.arrivals_and_rejections)}
    )
    counts = np.asarray(row["types"])
    assert counts.shape == (4, 2) and (counts[:, 1] <= counts[:, 0]).all()
    assert counts[:, 1].sum() == row["rejected"] > 0  # an admit-all rule still loses jobs that fit nowhere
    assert (script.by_type("first-fit-admit", "autoscale-syn4", 1) == counts).all()


def test_the_script_prints_one_row_per_type(script, capsys):
    assert script.main(["best-fit-admit", "--seeds", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| vm-")]
    assert [r.split("|")[1].strip() for r in rows] == ["vm-2-2", "vm-8-32", "vm-4-64", "vm-64-512"]


@pytest.mark.parametrize(
    ("argv", "named"), [(["no-such-agent"], "no-such-agent"), (["first-fit-admit", "--task", "nope"], "nope")]
)
def test_bad_input_is_named_with_exit_code_2(script, capsys, argv, named):
    assert script.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and named in err and "Traceback" not in err
