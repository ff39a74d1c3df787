"""The folder of a training run: what it holds, how it is written, and which point ``--resume`` continues.

``OUT/`` holds ``model.json`` (the configuration, the agent's metadata, the run's status and the
SHA-256 digests of the files the run wrote), ``model.zip`` and its normalisation statistics once
the run has finished, ``checkpoints/rl_model_N_steps.zip`` (each with its statistics), ``eval.csv``
and ``tb/``.  Models and checkpoints are written to a temporary file and renamed, so an interrupted
write leaves the previous file or the new one, never half of one.

A run's status in ``model.json`` is ``running``, ``interrupted`` (Ctrl-C: a checkpoint was saved
at the last policy update) or ``finished``.  ``--resume`` continues from the run's latest point;
an earlier checkpoint of a run that went further would mix two runs (its later checkpoints, its
final model, its evaluations), so it needs ``--overwrite``, which removes them first.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from clustergym.errors import ConfigError
from clustergym.learned.files import (
    DIGESTS_KEY,
    LEGACY_VECNORM_SUFFIX,
    legacy_message,
    load_vecnormalize,
    record_digests,
    save_vecnormalize,
    verify_digests,
)
from clustergym.learned.model_agent import META_NAME, read_metadata
from clustergym.runner.journal import atomic_write, check_writable

__all__ = [
    "TrainingWarning",
    "ResumePoint",
    "RUN_FILES",
    "RUN_DIRS",
    "prepare_out",
    "resume_point",
    "checkpoint_path",
    "checkpoints",
    "save_model",
    "load_stats",
    "write_meta",
    "check_resume",
    "take_over",
    "earlier_processes",
    "running_process",
    "record_process",
    "sigterm_as_interrupt",
]

#: the final model's normalisation statistics (:func:`clustergym.learned.files.save_vecnormalize`)
STATS_NAME = "vecnormalize.npz"
#: what a training run writes in its folder (``--overwrite`` removes these, and nothing else; the
#: statistics of runs saved before the ``.npz`` format too)
RUN_FILES = (META_NAME, "model.zip", STATS_NAME, "vecnormalize.pkl", "eval.csv")
RUN_DIRS = ("checkpoints", "tb")
_CKPT = re.compile(r"rl_model_(\d+)_steps")


class TrainingWarning(UserWarning):
    """A training run does something other than asked, and says so (stage steps rounded up to whole
    rollouts, evaluations of a lost policy removed on resume, torch threads cut to the cores)."""


def _stderr_line(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def training_warnings_as_lines(write: Callable[[str], None] = _stderr_line) -> Iterator[None]:
    """Inside, each :class:`TrainingWarning` is shown once per raise as one line, ``write(message)``
    (default: ``warning: <message>`` on stderr), without Python's source line; other warnings as before.
    ``clustergym train`` shows them so, and so does each run of a sweep in its worker process.  Inside an
    outer such block of this process (a sweep's run in the command's own process), the default keeps the
    outer block's ``write`` (the command's styled line)."""
    if write is _stderr_line and getattr(warnings.showwarning, "training_lines", False):
        yield
        return

    def show(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        if issubclass(category, TrainingWarning):
            write(str(message))
        else:
            previous(message, category, *args, **kwargs)

    show.training_lines = True  # type: ignore[attr-defined]
    previous = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always", TrainingWarning)
        warnings.showwarning = show
        yield


@dataclass(frozen=True)
class ResumePoint:
    """Where a resumed run starts: the model file, its run folder, its step count, the run's
    metadata, and its evaluations so far (the last evaluated step, the training seconds so far)."""

    model: Path
    run_dir: Path
    step: int
    meta: dict[str, Any]
    last_eval: int = 0
    wall_seconds: float = 0.0


def prepare_out(out: Path, overwrite: bool) -> None:
    """A new run's folder: new or empty, unless ``overwrite`` (the earlier run's files are removed)."""
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            earlier = (out / META_NAME).exists()
            raise ConfigError(
                "out",
                f"{out} {'holds an earlier training run' if earlier else 'is not empty'}: "
                f"continue a run with --resume {out}, replace it with --overwrite, or choose "
                "another --out",
            )
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
        for name in RUN_DIRS:
            if (out / name).is_dir():
                shutil.rmtree(out / name)
    check_writable(out, "out")
    (out / "checkpoints").mkdir(exist_ok=True)


def checkpoint_path(run_dir: Path, step: int) -> Path:
    """``OUT/checkpoints/rl_model_<step>_steps.zip`` (SB3's checkpoint names)."""
    return run_dir / "checkpoints" / f"rl_model_{step}_steps.zip"


def checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """The run's checkpoints ``(step, path)``, by step."""
    found = []
    for c in (run_dir / "checkpoints").glob("rl_model_*_steps.zip"):
        m = _CKPT.fullmatch(c.stem)
        if m:
            found.append((int(m.group(1)), c))
    return sorted(found)


def _stats_path(model_path: Path, suffix: str = ".npz") -> Path:
    """Where the normalisation statistics of a model (or a checkpoint) are written."""
    m = _CKPT.fullmatch(model_path.stem)
    if m:
        return model_path.parent / f"rl_model_vecnormalize_{m.group(1)}_steps{suffix}"
    return model_path.parent / Path(STATS_NAME).with_suffix(suffix)


def load_stats(model_path: Path, venv: Any) -> Any:
    """``venv`` normalised with the statistics saved beside ``model_path`` (learning goes on).

    Raises:
        ConfigError: they are missing, damaged, or a pickle of a run saved before the ``.npz``
            format (:func:`clustergym.learned.files.legacy_message` says how to convert it).
    """
    path = _stats_path(model_path)
    if not path.is_file():
        legacy = _stats_path(model_path, LEGACY_VECNORM_SUFFIX)
        if legacy.is_file():
            raise ConfigError("resume", legacy_message(legacy))
        raise ConfigError("resume", f"{model_path}: its normalisation statistics {path} are missing")
    out = load_vecnormalize(path, venv)
    out.training = True
    return out


def save_model(model: Any, venv: Any, path: Path) -> None:
    """``model`` to ``path`` and ``venv``'s normalisation statistics beside it, each by temp-and-rename."""

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            model.save(f)

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, write)
    save_vecnormalize(venv, _stats_path(path))


def write_meta(run_dir: Path, meta: dict[str, Any]) -> None:
    """``model.json`` (by temp-and-rename), then the SHA-256 digest of every model file the run holds
    (:func:`clustergym.learned.files.record_digests`): a checkpoint of another run, or a changed
    one, is told apart from the run's own."""
    atomic_write(run_dir / META_NAME, lambda tmp: tmp.write_text(json.dumps(meta, indent=2)))
    meta[DIGESTS_KEY] = record_digests(run_dir)


def _finished_step(run_dir: Path, meta: dict[str, Any]) -> int | None:
    """The final model's step count, when the run has finished (runs saved before the status: a
    ``model.zip`` with its recorded steps)."""
    if not (run_dir / "model.zip").is_file() or meta.get("status", "finished") != "finished":
        return None
    return int(meta["timesteps"]) if "timesteps" in meta else None


def resume_point(resume: str | Path) -> tuple[Path, Path]:
    """``(model file, run folder)`` of ``--resume``: a checkpoint ``.zip`` (in ``OUT/checkpoints/``),
    a ``model.zip``, or a run folder (its latest point: the final model of a finished run, else its
    latest checkpoint)."""
    p = Path(resume)
    if p.is_dir():
        ckpts = checkpoints(p)
        meta = read_metadata(p / "model.zip") if (p / META_NAME).is_file() else {}
        final = _finished_step(p, meta)
        if final is not None and (not ckpts or final >= ckpts[-1][0]):
            return p / "model.zip", p
        if ckpts:
            return ckpts[-1][1], p
        if (p / "model.zip").is_file():
            return p / "model.zip", p
        raise ConfigError("resume", f"{p}: no checkpoint (checkpoints/rl_model_N_steps.zip) nor model.zip there")
    if not p.is_file():
        raise ConfigError("resume", f"{resume}: no such checkpoint")
    return p, (p.parent.parent if p.parent.name == "checkpoints" else p.parent)


def _check_own(model: Path, run_dir: Path, meta: dict[str, Any]) -> None:
    """``model`` and its statistics are files this run wrote: listed in its digests, with those
    digests (runs saved before digests are not checked)."""
    digests = meta.get(DIGESTS_KEY)
    if not isinstance(digests, dict):
        return
    try:
        name = model.resolve().relative_to(run_dir.resolve()).as_posix()
    except ValueError:
        name = None
    if name not in digests:
        raise ConfigError(
            "resume",
            f"{model}: not a checkpoint of the run in {run_dir} (its {META_NAME} lists no such file): "
            "a checkpoint resumes the run that wrote it, in that run's folder",
        )
    stats = _stats_path(model)
    verify_digests(run_dir / META_NAME, [model, *([stats] if stats.is_file() else [])], meta)


def _later_work(run_dir: Path, meta: dict[str, Any], model: Path, step: int) -> list[Path]:
    later = [p for s, p in checkpoints(run_dir) if s > step]
    final = _finished_step(run_dir, meta)
    if final is not None and model.name != "model.zip" and final > step:
        later.append(run_dir / "model.zip")
    return later


def _drop_later_work(later: list[Path]) -> None:
    for p in later:
        p.unlink(missing_ok=True)
        _stats_path(p).unlink(missing_ok=True)


def _evaluations_until(run_dir: Path, step: int) -> tuple[int, float]:
    """Keep ``eval.csv``'s rows up to ``step`` (later ones evaluated a policy the resumed run does not
    continue: removed, with a warning); return the last evaluated step and the training seconds so far."""
    csv = run_dir / "eval.csv"
    if not csv.is_file():
        return 0, 0.0
    df = pd.read_csv(csv)
    keep = df[df["step"] <= step]
    if len(keep) < len(df):
        warnings.warn(
            f"{csv}: {len(df) - len(keep)} evaluation rows after step {step} removed (they evaluated "
            "a policy the resumed run does not continue)",
            TrainingWarning,
            stacklevel=3,
        )
        atomic_write(csv, lambda tmp: keep.to_csv(tmp, index=False))
    if keep.empty:
        return 0, 0.0
    return int(keep["step"].max()), float(keep["wall_seconds"].max())


def check_resume(
    model: Path, run_dir: Path, meta: dict[str, Any], step: int, total: int, overwrite: bool
) -> ResumePoint:
    """The point a resume continues from, checked (nothing is changed yet: :func:`take_over`): a
    file of this run; ``total`` above its ``step``; not behind later work of the run unless
    ``overwrite``."""
    _check_own(model, run_dir, meta)
    if total <= step:
        done = "the run finished its" if model.name == "model.zip" else "it holds"
        raise ConfigError(
            "timesteps",
            f"--timesteps {total:,} is not above the {step:,} steps of {model} ({done} {step:,} steps): "
            f"give --timesteps above {step:,} to train further",
        )
    later = _later_work(run_dir, meta, model, step)
    if later and not overwrite:
        n = sum(p.name != "model.zip" for p in later)
        what = f"{n} later checkpoint{'s' * (n != 1)}" + (" and its final model" if n < len(later) else "")
        raise ConfigError(
            "resume",
            f"{model} is step {step:,} of a run that went further ({what} in {run_dir}): resuming from it "
            f"would mix two runs; resume the run itself (--resume {run_dir}), or give --overwrite to drop "
            "its later work",
        )
    return ResumePoint(model, run_dir, step, dict(meta))


def take_over(point: ResumePoint) -> ResumePoint:
    """The run folder made ready to continue from ``point`` (checked by :func:`check_resume`): the
    run's later work removed (``--overwrite``), a finished run's final model kept as the checkpoint
    of its step, ``eval.csv`` cut at the step; with the run's last evaluation and seconds so far."""
    run_dir, model, step = point.run_dir, point.model, point.step
    _drop_later_work(_later_work(run_dir, point.meta, model, step))
    if model.name == "model.zip":  # a finished run goes on: its final model stays, as a checkpoint
        kept = checkpoint_path(run_dir, step)
        if not kept.exists():
            kept.parent.mkdir(exist_ok=True)
            shutil.copyfile(model, kept)
            if _stats_path(model).is_file():
                shutil.copyfile(_stats_path(model), _stats_path(kept))
        model = kept
    last_eval, wall = _evaluations_until(run_dir, step)
    return ResumePoint(model, run_dir, step, point.meta, last_eval, wall)


# ---------------------------------------------------------------------------------------- the run's processes
@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """``SIGTERM`` (``kill PID``; SLURM and other job schedulers send it at a time limit, before
    ``SIGKILL``) raises ``KeyboardInterrupt`` in the main thread, so that the run ends as on Ctrl-C:
    the last update's policy kept as a checkpoint and the process's seconds recorded.  Elsewhere (a
    thread, where handlers cannot be set) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def earlier_processes(previous: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``clustergym train`` processes of the run a resumed run continues (``previous``: its
    ``model.json``), one entry each (:func:`record_process`), oldest first.

    A ``model.json`` written before ``processes`` was recorded has its last process's seconds only
    (``cpu_seconds_last_run``); when that process had itself resumed the run, the processes before it
    are an entry whose seconds are ``None`` (not recorded), so that no total counts them as zero.  A
    record without ``seconds_last_run_parts`` timed the RL updates only (the setup and a warm start
    were not counted then): its entry says so, ``"counted": "learn"``.

    A process that ended without recording itself (killed: ``SIGKILL``, the machine lost) left its
    seconds up to its last checkpoint in ``"running_process"`` (:func:`running_process`): it is an
    entry of status ``killed``, so that the run's totals and a CPU budget count what it spent up to the
    checkpoint the run continues from (what it spent after that checkpoint is lost with it).
    """
    if "processes" in previous:
        killed = previous.get("running_process")
        return [dict(p) for p in previous["processes"]] + ([{**killed, "status": "killed"}] if killed else [])
    if "cpu_seconds_last_run" not in previous:
        return []
    out: list[dict[str, Any]] = []
    if previous.get("resumed_from"):
        out.append(
            {"steps_from": 0, "steps_to": None, "status": "not recorded", "wall_seconds": None, "cpu_seconds": None}
        )
    last = {
        "steps_from": None if out else 0,
        "steps_to": previous.get("timesteps"),
        "status": previous.get("status", "finished"),
        "wall_seconds": previous.get("wall_seconds_last_run"),
        "cpu_seconds": previous["cpu_seconds_last_run"],
    }
    if "seconds_last_run_parts" not in previous:  # recorded when only the RL updates were timed
        last["counted"] = "learn"
    return [*out, last]


def _process_entry(
    steps: tuple[int, int], status: str, wall: float, cpu: float, torch_threads: int | None
) -> dict[str, Any]:
    entry = {"steps_from": steps[0], "steps_to": steps[1], "status": status, "wall_seconds": wall, "cpu_seconds": cpu}
    if torch_threads is not None:
        entry["torch_threads"] = torch_threads
    return entry


def running_process(
    meta: dict[str, Any], steps: tuple[int, int], wall: float, cpu: float, torch_threads: int | None = None
) -> None:
    """Keep this process's seconds so far in ``meta["running_process"]`` when it writes a checkpoint
    (``steps``: the step it started at and the checkpoint's).  Not in ``processes`` nor the totals
    while the process runs; :func:`record_process` replaces it when the process ends, and if the process
    is killed first, a resumed run counts it (:func:`earlier_processes`)."""
    meta["running_process"] = _process_entry(steps, "running", wall, cpu, torch_threads)


def record_process(
    meta: dict[str, Any],
    steps: tuple[int, int],
    status: str,
    wall: float,
    cpu: float,
    torch_threads: int | None = None,
) -> None:
    """Add this process to ``meta["processes"]`` (``steps``: the steps it started and ended at;
    ``status``: ``finished`` or ``interrupted``; seconds: the whole process, :class:`RunClock`;
    ``torch_threads``: the learner's threads, which the weights depend on in their last bits) and
    set ``wall_seconds_total`` and ``cpu_seconds_total``: the sums over every process of the run,
    an abandoned one (``--resume`` of an earlier checkpoint with ``--overwrite``) included, or
    ``None`` when one of them was not recorded.  What a model cost is these totals, not the last
    process's seconds."""
    processes = meta.setdefault("processes", [])
    meta.pop("running_process", None)  # recorded now: no longer only up to a checkpoint
    processes.append(_process_entry(steps, status, wall, cpu, torch_threads))
    for key in ("wall_seconds", "cpu_seconds"):
        values = [p[key] for p in processes]
        meta[f"{key}_total"] = None if any(v is None for v in values) else float(sum(values))
