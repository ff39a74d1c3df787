"""A sweep of training runs over seeds (``clustergym train TASK --seeds 0-4 --out runs/x``).

Every seed is an ordinary training run (:func:`clustergym.training.train.train`) in its own folder,
so each one is a model ``clustergym run``/``benchmark`` accept as it is (``clustergym benchmark
runs/x/s0 runs/x/s1 ...``: several models are the training seeds of one method)::

    OUT/sweep.json     the sweep: the seeds, the configuration every run shares (its seed aside),
                       each run's status (pending, finished, failed), the sweep's status
    OUT/s0/, OUT/s1/   one run folder per seed (model.zip, model.json, checkpoints/, eval.csv, tb/)

The runs are independent jobs on the runner's one executor (:func:`clustergym.runner.run_jobs`): in
this process, on ``workers`` local processes (joblib's loky), or one Ray task of 1 CPU per run on a
cluster (``ray``).  A run given seed ``s`` is the run ``clustergym train ... --seed s`` would make: a
run's trajectory depends only on its configuration and seed (its environments' seeds come from it,
torch uses :attr:`TrainConfig.torch_threads` threads per run, 1 by default; more are cut, with a
warning, to the cores over the runs at once, and the sweep records the count its runs use), so the
models are the sequential runs' of the recorded configuration, whichever executor and however many
runs share the machine.

A run resumes from its own latest checkpoint: when Ray runs its task again on another node (a lost
node: ``max_retries``), and when ``--resume OUT`` continues a sweep that was interrupted (Ctrl-C, a
killed driver): finished runs are kept, runs with a checkpoint continue from it, the others start.
(A resumed run continues the saved policy and statistics; its later rollouts are not those of an
uninterrupted run -- the environments restart -- so only uninterrupted runs equal the sequential ones.)

On Ray the runs write their folders where they train: ``OUT`` must be on a filesystem every node
mounts at the same path (NFS, a cluster file system); a node that does not see ``OUT/sweep.json``
fails the run with an error saying so.  The driver records each run's status as its result arrives.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clustergym.errors import ClusterGymError, ConfigError
from clustergym.learned.model_agent import META_NAME
from clustergym.runner import run_jobs, worker_count
from clustergym.runner.cells import available_workers
from clustergym.runner.journal import atomic_write, check_writable
from clustergym.training.config import TrainConfig
from clustergym.training.run_folder import (
    TrainingWarning,
    checkpoints,
    prepare_out,
    sigterm_as_interrupt,
    training_warnings_as_lines,
)

__all__ = ["SWEEP_FILE", "parse_seeds", "run_folder", "train_run", "train_sweep", "is_sweep"]

SWEEP_FILE = "sweep.json"
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def parse_seeds(text: str | Sequence[int], option: str = "--seeds") -> list[int]:
    """Seeds from ``0-4``, ``0,3,7`` or ``0-2,10`` (or a list of integers): distinct, >= 0, in order given.

    Raises:
        ConfigError: an empty list, a malformed item, a reversed range or a seed given twice.
    """
    if isinstance(text, str):
        seeds: list[int] = []
        for item in (x.strip() for x in text.split(",")):
            m = _RANGE.match(item)
            if m is None:
                raise ConfigError(option, f"{text!r}: expected seeds such as 0-4, 0,3,7 or 0-2,10")
            lo, hi = int(m[1]), int(m[2] if m[2] is not None else m[1])
            if hi < lo:
                raise ConfigError(option, f"{item!r}: a range runs upwards (e.g. {hi}-{lo})")
            seeds += range(lo, hi + 1)
    else:
        seeds = [int(s) for s in text]
    if not seeds or any(s < 0 for s in seeds):
        raise ConfigError(option, f"{text!r}: expected one seed or more, each >= 0")
    twice = sorted({s for s in seeds if seeds.count(s) > 1})
    if twice:
        raise ConfigError(option, f"seed {twice[0]} is given twice: each seed is one run")
    return seeds


def run_folder(out: str | Path, seed: int) -> Path:
    """The folder of the run of ``seed`` in the sweep ``out``: ``out/s<seed>``."""
    return Path(out) / f"s{seed}"


def is_sweep(path: str | Path) -> bool:
    """Whether ``path`` is a sweep's folder (it holds ``sweep.json``)."""
    return (Path(path) / SWEEP_FILE).is_file()


def _recorded(run: Path) -> dict[str, Any] | None:
    """The run's ``model.json`` (``None``: the run has none; ``{}``: it cannot be read)."""
    meta_path = run / META_NAME
    if not meta_path.is_file():
        return None
    try:
        return dict(json.loads(meta_path.read_text(encoding="utf-8")))
    except ValueError:
        return {}


def _state(run: Path, total: int, meta: dict[str, Any] | None) -> str:
    """``finished`` (its model has ``total`` steps or more, or its run ended on its CPU budget: the
    sweep's, which a resumed sweep keeps), ``checkpoint`` (it can resume) or ``new``; ``meta``: the
    run's record (:func:`_recorded`)."""
    if meta is None:
        return "new"
    done = int(meta.get("timesteps", 0)) >= total or meta.get("stopped_by") == "cpu_budget"
    if meta.get("status") == "finished" and (run / "model.zip").is_file() and done:
        return "finished"
    return "checkpoint" if checkpoints(run) or (run / "model.zip").is_file() else "new"


def _resume_total(meta: dict[str, Any], total: int) -> int | None:
    """The ``timesteps`` a run of the sweep resumes with (``meta``: its record): ``None`` (the run's own
    total, as it recorded it: rounded up to whole rollouts when it has stages) unless the sweep's total is
    above it (``--resume SWEEP --timesteps`` larger: every run continues to it).  Passing the sweep's
    unrounded total again would round it again, and warn so, at every resume."""
    own = (meta.get("config") or {}).get("timesteps")
    return None if isinstance(own, int) and total <= own else total


def train_run(config: TrainConfig) -> dict[str, Any]:
    """One run of a sweep (a job of :func:`train_sweep`, wherever it runs): kept if its folder holds
    its finished model, continued from its latest checkpoint if it has one, else trained from the
    start (a folder without a checkpoint holds nothing to keep: it is cleared).

    Returns:
        ``{"seed", "model" (its path), "timesteps", "wall_seconds" (this attempt's), "status"}``,
        ``status`` ``kept``, ``resumed`` or ``trained``.

    Raises:
        ConfigError: the sweep's folder is not visible here (a Ray node without the shared filesystem).
    """
    from clustergym.training.train import train

    run = Path(str(config.out))
    if not is_sweep(run.parent):
        raise ConfigError(
            "--out",
            f"{run.parent}/{SWEEP_FILE} is not visible on {socket.gethostname()}: the runs of a sweep on Ray "
            "write their folders in --out, which must be on a filesystem every node mounts at the same path",
        )
    recorded = _recorded(run)
    state = _state(run, config.total, recorded)
    if state == "finished":
        assert recorded is not None
        return _result(config.seed, run, recorded, "kept")
    with training_warnings_as_lines():  # in a worker process too: one line each, no source line
        if state == "checkpoint":
            total = _resume_total(recorded or {}, config.total)
            path = train(TrainConfig(resume=run, timesteps=total, progress_bar=False, verbose=False))
        else:
            path = train(dataclasses.replace(config, overwrite=True, resume=None))
    meta = json.loads((path.parent / META_NAME).read_text(encoding="utf-8"))
    return _result(config.seed, run, meta, "resumed" if state == "checkpoint" else "trained")


def _result(seed: int, run: Path, meta: dict[str, Any], status: str) -> dict[str, Any]:
    return {
        "seed": seed,
        "model": str(run / "model.zip"),
        "timesteps": int(meta.get("timesteps", 0)),
        "wall_seconds": float(meta.get("wall_seconds_last_run", 0.0)) if status != "kept" else 0.0,
        "status": status,
    }


def _open(config: TrainConfig, seeds: list[int] | None, out: Path, resume: bool, overwrite: bool) -> dict[str, Any]:
    """The sweep's record: a new one written in ``out`` (new or empty, unless ``overwrite``), or the
    recorded one of ``out`` (``resume``), whose settings a new value may not contradict."""
    path = out / SWEEP_FILE
    if resume:
        if not path.is_file():
            raise ConfigError("--resume", f"{out}: no training sweep there (no {SWEEP_FILE})")
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            recorded = TrainConfig.from_json(doc["sweep"]["config"], str(path))
            doc["sweep"]["seeds"] = parse_seeds(doc["sweep"]["seeds"])
        except (ValueError, KeyError, TypeError) as e:
            raise ConfigError("--resume", f"{path}: damaged ({e})") from None
        if seeds is not None and seeds != doc["sweep"]["seeds"]:
            raise ConfigError("--seeds", f"{out} is a sweep of seeds {doc['sweep']['seeds']}: drop --seeds")
        _same_settings(config, recorded, out)
        if config.timesteps is not None and config.total != recorded.total:
            doc["sweep"]["config"]["timesteps"] = config.total  # every run continues to the new total
        check_writable(out, "--resume")
        return doc
    if seeds is None:
        raise ConfigError("--seeds", "a sweep needs its seeds (e.g. --seeds 0-4)")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        earlier = "holds an earlier sweep" if is_sweep(out) else "is not empty"
        raise ConfigError(
            "--out", f"{out} {earlier}: continue it with --resume {out}, replace it with --overwrite, or choose another"
        )
    check_writable(out, "--out")
    if overwrite:  # the earlier runs' files go (a finished run would otherwise be kept)
        for seed in seeds:
            if run_folder(out, seed).is_dir():
                prepare_out(run_folder(out, seed), overwrite=True)
    scenario = config.scenario
    if scenario is not None and Path(scenario).suffix in (".yaml", ".yml", ".json") and Path(scenario).is_file():
        scenario = str(Path(scenario).resolve())  # the runs may train in another folder (Ray workers)
    recorded = dataclasses.replace(config, scenario=scenario, seed=0, overwrite=False, resume=None)
    doc = {"sweep": {"seeds": seeds, "config": recorded.to_json(), "cwd": os.getcwd()}, "status": "running", "runs": {}}
    return doc


def _same_settings(given: TrainConfig, recorded: TrainConfig, out: Path) -> None:
    """On ``--resume``: a setting given (not left at its default) must be the recorded one; only
    ``timesteps`` may change (every run continues to the new total)."""
    defaults = TrainConfig(scenario=recorded.scenario).to_json()
    was = recorded.to_json()
    for name, value in given.to_json().items():
        if name in ("timesteps", "seed") or value == defaults.get(name) or value == was.get(name):
            continue
        if name == "scenario" and value is None:
            continue
        raise ConfigError(
            name,
            f"{out} is a sweep trained with {name} {was.get(name)!r}, not {value!r}: drop it (--resume "
            "continues the sweep with its own settings) or start a new sweep",
        )


def _save(out: Path, doc: dict[str, Any]) -> None:
    text = json.dumps(doc, indent=2) + "\n"
    atomic_write(out / SWEEP_FILE, lambda tmp: tmp.write_text(text))


def _threads_per_run(config: TrainConfig, workers: int, on_ray: bool) -> TrainConfig:
    """``config`` with its torch threads cut to what each of the runs at once may use without
    oversubscribing the cores: the available cores over ``workers`` local runs, or the one CPU of a Ray
    task; asking for more warns (as :func:`clustergym.training.threads.torch_thread_budget`)."""
    cores = available_workers()
    per_run = 1 if on_ray else max(1, cores // workers)
    if config.torch_threads <= per_run:
        return config
    where = "a Ray task of 1 CPU per run" if on_ray else f"{workers} runs at once on {cores} cores"
    warnings.warn(
        f"torch_threads={config.torch_threads} with {where} would oversubscribe the cores: each run uses {per_run}",
        TrainingWarning,
        stacklevel=3,
    )
    return dataclasses.replace(config, torch_threads=per_run)


def train_sweep(
    config: TrainConfig,
    seeds: Sequence[int] | str | None,
    out: str | Path,
    *,
    workers: int | None = 1,
    ray: str | None = None,
    resume: bool = False,
    overwrite: bool = False,
    on_run: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Train one run per seed of ``config`` (its ``seed`` and ``out`` are replaced), each in
    ``out/s<seed>`` (:func:`run_folder`); ``resume``: continue the sweep recorded in ``out``.

    Args:
        config: every setting but the seed (checked on the first seed's run before anything runs).
        seeds: ``0-4``, ``0,3,7`` or a list (:func:`parse_seeds`); ``None`` with ``resume``.
        out: the sweep's folder: new or empty unless ``overwrite``; on Ray, seen by every node.
        workers: local processes running runs at once (``None``: the available cores).
        ray: a Ray address: one task of 1 CPU per run, retried (from its checkpoint) on a lost node.
        on_run: called in this process with each run's result as it arrives (:func:`train_run`).

    Returns:
        The runs' results in seed order.

    Raises:
        ConfigError: a bad setting, seed list or folder, before any run starts.
        KeyboardInterrupt: Ctrl-C or ``SIGTERM``; the runs keep their checkpoints and ``--resume OUT`` continues.
    """
    from clustergym.runner import connect_ray
    from clustergym.training.train import setup

    out = Path(out)
    wanted = parse_seeds(seeds) if seeds is not None else None
    workers = worker_count(workers, "--workers")
    config = _threads_per_run(config, workers, ray is not None)
    if not resume and wanted:  # every setting checked against the scenario before anything is written
        with tempfile.TemporaryDirectory() as tmp:
            setup(dataclasses.replace(config, seed=wanted[0], out=Path(tmp) / "check", resume=None, verbose=False))
    doc = _open(config, wanted, out, resume, overwrite)
    base = TrainConfig.from_json(doc["sweep"]["config"], str(out / SWEEP_FILE), progress_bar=False, verbose=False)
    seeds_ = doc["sweep"]["seeds"]
    jobs = [(i, dataclasses.replace(base, seed=s, out=run_folder(out, s))) for i, s in enumerate(seeds_)]
    if ray is not None:
        connect_ray(ray)
    doc["status"] = "running"
    _save(out, doc)
    results: dict[int, dict[str, Any]] = {}

    def finished(i: int, result: dict[str, Any]) -> None:
        results[i] = result
        doc["runs"][f"s{result['seed']}"] = {k: v for k, v in result.items() if k != "seed"}
        _save(out, doc)
        if on_run is not None:
            on_run(result)

    try:
        with sigterm_as_interrupt():  # as Ctrl-C: the sweep marked interrupted, each run keeps its checkpoints
            run_jobs(train_run, jobs, workers=workers, ray=ray, finished=finished)
    except BaseException as e:
        doc["status"] = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
        _save(out, doc)
        left = f"{len(results)} of {len(jobs)} runs finished; continue with `clustergym train --resume {out}`"
        if isinstance(e, KeyboardInterrupt):
            raise KeyboardInterrupt(f"{left} (each run from its last checkpoint)") from None
        if isinstance(e, ClusterGymError):
            raise ClusterGymError(f"{e}\n{left}") from None
        raise
    doc["status"] = "complete"
    _save(out, doc)
    return [results[i] for i in range(len(jobs))]
