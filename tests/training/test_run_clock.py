"""``RunClock``: the seconds ``model.json`` records, part by part, child processes' CPU included."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clustergym.training.train import RunClock

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"


def test_parts_add_up_and_a_finished_child_process_is_counted():
    clock = RunClock()
    clock.mark("setup")
    subprocess.run([sys.executable, "-c", BURN], check=True)  # a worker that ends, as subproc envs at close
    clock.mark("learn")
    parts = clock.parts()
    assert list(parts) == ["setup", "learn"]
    assert parts["learn"]["cpu_seconds"] >= 0.3  # the child's 0.3 s of CPU, not only this process's
    assert parts["learn"]["wall_seconds"] >= 0.3
    assert clock.cpu_total() == pytest.approx(sum(p["cpu_seconds"] for p in parts.values()))
    assert clock.wall_total() == pytest.approx(sum(p["wall_seconds"] for p in parts.values()))


def test_subprocess_envs_are_children_of_this_process_so_their_cpu_is_counted():
    """``--vec-env subproc``'s workers are this process's children (started with ``spawn``): once closed,
    their CPU (their imports and steps) is in ``RUSAGE_CHILDREN``, which :class:`RunClock` counts.  With
    SB3's default ``forkserver`` they would be the fork server's children, and never counted."""
    import resource

    import numpy as np

    pytest.importorskip("stable_baselines3", reason="needs the train extra")
    from clustergym.training.train import build_venv

    def children() -> float:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime

    before = children()
    venv = build_venv("ec2", {}, {"action_mode": "head", "horizon": 5.0}, "equivariant", 2, "subproc", 0)
    venv.reset()
    for _ in range(100):
        wait = [int(np.flatnonzero(m)[-1]) for m in venv.env_method("action_masks")]  # WAIT: always valid
        venv.step(np.array(wait))
    venv.close()
    assert children() - before > 0.5  # each worker imported clustergym and stepped its env
