"""``clustergym benchmark``'s output folder: checked before the first episode, every finished episode
journaled, ``--resume`` after an interruption, files written by temp-and-rename.

The folder is a :class:`clustergym.runner.journal.RunFolder`, as ``compare --out``'s: ``run.json``
(key ``benchmark``: the specs as given, the tasks, the seed count, the working folder the specs'
paths are relative to; the status and the files written), ``cells.jsonl`` (one line per finished
episode, fsynced), then ``results.csv`` (every episode) and ``summary.json`` (the result without
the episodes and the wall time, so a resumed run writes the same bytes as an uninterrupted one).
A ``--reference`` run records ``reference: true`` (and no specs) and writes ``reference.json``
instead: the same task entries as an uninterrupted run, each task's ``wall_seconds`` the sum of
its kept episodes' times.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clustergym._json import jsonable
from clustergym.errors import ConfigError
from clustergym.runner.journal import RunFolder, atomic_write, check_writable

__all__ = ["PLOT_SUFFIXES", "check_plot", "open_folder", "recorded_settings", "run_journaled", "write_outputs"]

#: the suffixes ``--plot`` takes (the formats matplotlib writes without extra packages)
PLOT_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def check_plot(plot: Path | None) -> None:
    """``--plot``'s suffix is a known format and its folder can be written, before anything runs."""
    if plot is None:
        return
    if plot.suffix.lower() not in PLOT_SUFFIXES:
        raise ConfigError("--plot", f"{plot}: unknown figure format {plot.suffix!r} (use {', '.join(PLOT_SUFFIXES)})")
    if plot.is_dir():
        raise ConfigError("--plot", f"{plot} is a folder; give a file name")
    check_writable(plot.parent if str(plot.parent) else Path("."), "--plot")


def recorded_settings(resume: Path, given: dict[str, Any]) -> tuple[RunFolder, dict[str, Any]]:
    """The earlier run of ``resume`` and its settings; a setting given again must be the recorded one,
    and relative model paths need the working folder the run started in."""
    folder = RunFolder.resume(resume, kind="benchmark")
    rec = folder.config["benchmark"]
    for opt, value in given.items():
        if value is not None and value != rec.get(opt):
            raise ConfigError(
                opt,
                f"{resume} was run with {opt} {rec.get(opt)!r}; --resume continues it with its own "
                f"settings (drop {opt}, or start a new run with --out)",
            )
    cwd = Path(rec.get("cwd") or ".")
    relative = [s for s in rec.get("specs") or [] if not Path(s).is_absolute() and (cwd / s).exists()]
    if relative and cwd.resolve() != Path.cwd().resolve():
        raise ConfigError(
            "--resume", f"{resume} names models by paths relative to {rec['cwd']}: run --resume from there"
        )
    return folder, rec


def open_folder(
    out: Path | None, resumed: RunFolder | None, overwrite: bool, settings: dict[str, Any], cells: list[Any]
) -> RunFolder | None:
    """The run folder: the resumed one (its kept episodes must be this plan's), or a new one in
    ``out`` (new or empty unless ``overwrite``), or none."""
    if resumed is not None:
        resumed.check_plan(cells)
        return resumed
    if out is None:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("clustergym")
    except PackageNotFoundError:
        ours = "0+unknown"
    config = {"benchmark": {**settings, "cwd": str(Path.cwd()), "cells": len(cells)}, "clustergym": ours}
    return RunFolder.create(out, config, overwrite=overwrite)


def run_journaled(
    cells: list[Any],
    folder: RunFolder | None,
    workers: int,
    progress: Callable[[str, int], None],
    ray: str | None = None,
) -> list[dict[str, Any]]:
    """The rows of ``cells`` (plan order), each finished episode kept in ``folder`` as it finishes
    (:func:`clustergym.runner.journal.run_kept`), on ``workers`` local processes or, with ``ray``
    (an address), on a Ray cluster (the rows arrive and are kept on this machine, the driver)."""
    from clustergym.runner.journal import run_kept

    return run_kept(cells, folder, "benchmark", workers=workers, ray=ray, progress=progress)


def write_outputs(folder: RunFolder, res: dict[str, Any], wall: float) -> list[Path]:
    """``results.csv`` and ``summary.json`` in the folder (temp-and-rename), then the status ``complete``."""
    import pandas as pd

    frame = pd.DataFrame(res["rows"])
    summary = json.dumps(jsonable({k: v for k, v in res.items() if k not in ("rows", "wall_seconds")}), indent=1)
    written = [folder.path / "results.csv", folder.path / "summary.json"]
    atomic_write(written[0], lambda tmp: frame.to_csv(tmp, index=False))
    atomic_write(written[1], lambda tmp: tmp.write_text(summary + "\n"))
    folder.add_files([p.name for p in written])
    folder.set_status("complete", wall_seconds=wall)
    return written
