"""The speed-estimate teacher (``clustergym.baselines.greedy:FastestEstimatedFit``): not an oracle,
not registered, and each placement on the fitting server estimated fastest for the job's type."""

from __future__ import annotations

import numpy as np

from clustergym.agent_api import list_agents, make_agent, make_env_for
from clustergym.core.commands import Cmd
from clustergym.scenarios import make_preset
from clustergym.suite.scoring import evaluate

PATH = "clustergym.baselines.greedy:FastestEstimatedFit"


def test_by_import_path_only_and_not_an_oracle():
    agent = make_agent(PATH, scan=16)
    assert type(agent).__name__ == "FastestEstimatedFit" and agent.scan == 16
    assert not getattr(agent, "uses_oracle", False)
    assert all("FastestEstimated" not in n for n in list_agents())  # the suite's reference stays as it is
    assert agent.compiled_policy() is None  # the compiled loop has First-/Best-Fit's rules only


def test_each_placement_goes_to_the_fitting_server_estimated_fastest():
    sc = make_preset("lotes-omega", omega=0.5, machines_per_config=1, load=0.95).with_horizon(2.0)
    agent = make_agent(PATH)
    env = make_env_for(sc, agent)
    env.reset(seed=0)
    agent.reset(env, seed=0)
    view, placed, not_first = env.unwrapped.view, 0, 0
    while True:
        cmd, _ = agent.predict(None)
        if cmd.kind == Cmd.PLACE:
            fits = np.flatnonzero(view.fits(cmd.job))
            rel = view.speed_estimate()[fits, view.job_type(cmd.job)]
            assert cmd.server in fits and rel[list(fits).index(cmd.server)] >= rel.max() * (1 - 1e-9)
            placed += 1
            not_first += cmd.server != fits[0]
        _, _, term, trunc, _ = env.step(cmd)
        if term or trunc:
            break
    assert placed > 500 and not_first > 100, "the estimate never moved a placement: a weak check"


def test_beats_random_fit_on_the_heterogeneous_task():
    """What the estimate is worth (``experiments/round8.md``): on ``lotes-hetero``'s first validation
    seeds the teacher's mean queue is below ``random-fit``'s, seed for seed on most."""
    out = evaluate([PATH], ["lotes-hetero"], seeds=6, workers=1)
    r = out["tasks"]["lotes-hetero"]["runs"][PATH]
    assert r["paired_vs_best"] > 0 and out["tasks"]["lotes-hetero"]["best"] == "random-fit"
    assert sum(n > 1 for n in r["normalized_per_seed"]) >= 4
