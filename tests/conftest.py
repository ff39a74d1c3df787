"""Shared pytest fixtures."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="session")
def _trace_cache_dir(tmp_path_factory):
    """The on-disk trace cache of the test session lives in a temporary directory (never the user's
    ``~/.cache/clustergym``): tests start cold and leave nothing behind."""
    from clustergym.traces.diskcache import ENV_VAR

    old = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = str(tmp_path_factory.mktemp("trace-cache"))
    yield
    if old is None:
        os.environ.pop(ENV_VAR, None)
    else:
        os.environ[ENV_VAR] = old


@pytest.fixture(autouse=True, scope="session")
def _sb3_log_dir(tmp_path_factory):
    """SB3's default log folder (an empty ``<tmp>/SB3-<date-time>`` for each ``learn()`` a test makes without
    a TensorBoard folder) is one folder of the session's temporary directory instead."""
    old = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3-logs"))
    yield
    if old is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = old


@pytest.fixture
def quiet_warnings():
    """Silence library warnings (SB3, Gymnasium) for the test; a module opts in with
    ``pytestmark = pytest.mark.usefixtures("quiet_warnings")``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.fixture
def run_stepping():
    """``run_stepping(scenario, agent, hook, seed=0, horizon=None, validate=False, agent_name=None)``:
    one episode through the step loop, calling ``hook(env)`` after every step, then the finished
    env.  For tests that watch the kernel between steps (the runner only hands out probes)."""
    from clustergym.agent_api import make_agent, make_env_for
    from clustergym.scenarios import resolve_scenario

    def run(scenario, agent, hook=None, *, seed=0, horizon=None, validate=False):
        sc = resolve_scenario(scenario).with_horizon(horizon)
        ag = make_agent(agent) if isinstance(agent, str) else agent
        env = make_env_for(sc, ag, validate=validate)
        obs, _ = env.reset(seed=seed)
        ag.reset(env, seed=seed)
        done = False
        while not done:
            action, _ = ag.predict(obs, deterministic=True)
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
            if hook is not None:
                hook(env.unwrapped)
        return env.unwrapped

    return run


@pytest.fixture
def cli_env() -> dict[str, str]:
    """The environment of a ``python -m clustergym`` subprocess: this checkout first on ``PYTHONPATH``
    (the installed package may be another checkout's), tables 200 columns wide."""
    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "200"}


@pytest.fixture
def signalled_cli(cli_env):
    """``signalled_cli(args, ready, sig, timeout=240)``: ``python -m clustergym ARGS`` in a process of its
    own (:func:`cli_env`), sent ``sig`` once ``ready()`` holds (checked every 0.05 s, for up to ``timeout``
    seconds) while it still runs; returns ``(returncode, stdout, stderr)``.  For the tests of what a
    command keeps when it is interrupted or killed."""

    def run(args, ready, sig=signal.SIGINT, timeout=240.0):
        argv = [sys.executable, "-m", "clustergym", *args]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None and not ready():
            time.sleep(0.05)
        assert proc.poll() is None, "the command ended before it could be stopped"
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
        return proc.returncode, stdout, stderr

    return run
