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
