"""``clustergym bench``: speed and memory figures, measured side by side in one run.

Measured, never asserted: the test suite checks correctness only.  Sections:

* ``benchmarks`` (rows) -- on ``ec2`` (20 servers) and ``ec2`` with 1000 servers
  (arrival rates scale with L):

  - ``kernel``: work-conserving Best-Fit driven through the environment by
    ``Command`` objects, one ``step`` per command: simulated events per second;
  - ``kernel-compiled``: Best-Fit with a 64-job scan window on the compiled
    whole-episode path (:mod:`clustergym.core.fastpath`; only with numba);
  - ``env-random``: the masked random policy through the Gymnasium API (``head``
    action mode, trivial epochs skipped, observations built): steps per second.

* ``env_steps`` -- each suite task's env steps per second with a random valid action, and its ratio
  to Gymnasium's CartPole-v1 timed interleaved in the same process, single and 16 in a
  :class:`~clustergym.envs.vector.BatchedVectorEnv` (:mod:`clustergym.perf.envspeed`).

* ``replay`` -- the Google Best-Fit replay (``google-bf-replay``:
  completed tasks, CPU and memory, 420 unit servers, Best-Fit over the first 64
  queued jobs at every arrival and completion) through ``clustergym`` and through
  the SimPy reference :mod:`clustergym.perf.simpy_bestfit`, each in its own process, one
  after the other: simulation wall and CPU time (trace loading excluded), peak RSS,
  the two metrics side by side, and the speed-up ratio.  Then the **whole process**
  (interpreter start, imports, trace loading, simulation, output) of
  ``python -m clustergym run google-bf-replay --agent best-fit --set agent.scan=64 --json``,
  twice on a fresh, empty on-disk trace cache (:mod:`clustergym.traces.diskcache`): ``cold``
  (parses the CSV parts and writes the table) and ``warm`` (reads it), and of the SimPy
  reference's process (on the warm cache: it loads the trace through the same loader); wall
  time, user + system CPU time and peak RSS of each process (``os.wait4``), and the ratios.

* ``ppo`` -- the share of ``MaskablePPO.learn`` wall time spent inside the
  environment (``reset``, ``step``, ``action_masks``) on ``ec2``.

* ``memory`` and ``memory_bounded`` (opt-in, ``memory_events``) -- resident memory of a
  child process sampled over a run of that many events (Best-Fit, ``ec2``), with the
  default job table and with ``job_memory="bounded"``, one after the other.

* ``scale`` (``clustergym bench --scale``, :func:`bench_scale`) -- the same rates
  against the number of servers, L = 20, 200, 2,000, 20,000 on ``ec2`` (arrival
  rates scale with L): events per second of Best-Fit, First-Fit and RMS-BF (its
  clock at 30 ticks per 20 servers, the paper's density) through ``env.step``, and
  env steps per second of the masked random policy; measured over a window of
  events after a warm-up that brings the cluster to its working load; bytes per
  server of the per-server state; a log-log plot with ``--plot PATH``.

Every time is reported as wall-clock seconds and, beside it, CPU seconds of the
process that did the work (less sensitive to other load on the machine).
"""

from clustergym.perf.kernel import random_steps as _random_steps  # noqa: F401  (benchmarks/test_benchmarks.py)
from clustergym.perf.memory import bench_memory
from clustergym.perf.ppo import bench_ppo_share
from clustergym.perf.replay import REPLAY_SCAN, SIMPY_MODULE, bench_replay, replay_command
from clustergym.perf.scale import QUICK_SCALE, SCALE_AGENTS, SCALE_SERVERS, bench_scale, plot_scale
from clustergym.perf.sections import run_benchmarks

__all__ = [
    "QUICK_SCALE",
    "REPLAY_SCAN",
    "SCALE_AGENTS",
    "SCALE_SERVERS",
    "SIMPY_MODULE",
    "bench_memory",
    "bench_ppo_share",
    "bench_replay",
    "bench_scale",
    "plot_scale",
    "replay_command",
    "run_benchmarks",
]
