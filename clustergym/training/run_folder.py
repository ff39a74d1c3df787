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

import hashlib
import json
import re
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from clustergym.errors import ConfigError
from clustergym.learned.model_agent import META_NAME, VECNORM_NAME, read_metadata, vecnormalize_path
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
]

#: what a training run writes in its folder (``--overwrite`` removes these, and nothing else)
RUN_FILES = (META_NAME, "model.zip", VECNORM_NAME, "eval.csv")
RUN_DIRS = ("checkpoints", "tb")
_CKPT = re.compile(r"rl_model_(\d+)_steps")


class TrainingWarning(UserWarning):
    """A training run does something other than asked, and says so (stage steps rounded up to whole
    rollouts, evaluations of a lost policy removed on resume)."""


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


def _stats_path(model_path: Path) -> Path:
    """Where the normalisation statistics of a model (or a checkpoint) are written."""
    m = _CKPT.fullmatch(model_path.stem)
    if m:
        return model_path.parent / f"rl_model_vecnormalize_{m.group(1)}_steps.pkl"
    return model_path.parent / VECNORM_NAME


def _save_stats(venv: Any, path: Path) -> None:
    atomic_write(path, lambda tmp: venv.save(str(tmp)))


def load_stats(model_path: Path, venv: Any) -> Any:
    """``venv`` normalised with the statistics saved beside ``model_path`` (learning goes on), or
    ``None`` when there are none."""
    from stable_baselines3.common.vec_env import VecNormalize

    path = vecnormalize_path(model_path)
    if path is None:
        return None
    try:
        out = VecNormalize.load(str(path), venv)
    except Exception as e:  # a damaged or foreign file
        raise ConfigError("resume", f"{path}: damaged normalisation statistics ({type(e).__name__}: {e})") from None
    out.training = True
    return out


def save_model(model: Any, venv: Any, path: Path) -> None:
    """``model`` to ``path`` and ``venv``'s normalisation statistics beside it, each by temp-and-rename."""

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            model.save(f)

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, write)
    _save_stats(venv, _stats_path(path))


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_meta(run_dir: Path, meta: dict[str, Any]) -> None:
    """``model.json`` (by temp-and-rename), with the SHA-256 digest of every model file the run
    holds (``"digests"``, by path relative to the folder): a checkpoint of another run, or a
    changed one, is told apart from the run's own."""
    files = [run_dir / "model.zip", run_dir / VECNORM_NAME] + [p for _, p in checkpoints(run_dir)]
    files += [s for s in (_stats_path(p) for p in files[2:]) if s.is_file()]
    meta["digests"] = {str(p.relative_to(run_dir)): _digest(p) for p in files if p.is_file()}
    atomic_write(run_dir / META_NAME, lambda tmp: tmp.write_text(json.dumps(meta, indent=2)))


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
    """``model`` is a file this run wrote (its digest is the recorded one), when the run records digests."""
    digests = meta.get("digests")
    if not isinstance(digests, dict):
        return
    try:
        name = str(model.resolve().relative_to(run_dir.resolve()))
    except ValueError:
        name = model.name
    if digests.get(name) != _digest(model):
        raise ConfigError(
            "resume",
            f"{model}: not a checkpoint of the run in {run_dir} (its SHA-256 is not the one the run "
            f"recorded in {META_NAME}): a file of another run, or one changed since",
        )


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
    """The point a resume continues from, checked: a file of this run; ``total`` above its ``step``;
    not behind later work of the run unless ``overwrite`` (which removes that work).  The final
    model of a finished run is kept as a checkpoint before the run goes on."""
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
    _drop_later_work(later)
    if model.name == "model.zip":  # a finished run goes on: its final model stays, as a checkpoint
        kept = checkpoint_path(run_dir, step)
        if not kept.exists():
            kept.parent.mkdir(exist_ok=True)
            shutil.copyfile(model, kept)
            stats = vecnormalize_path(model)
            if stats is not None:
                shutil.copyfile(stats, _stats_path(kept))
        model = kept
    last_eval, wall = _evaluations_until(run_dir, step)
    return ResumePoint(model, run_dir, step, dict(meta), last_eval, wall)
