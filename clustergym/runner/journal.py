"""A comparison's run folder: the run's configuration, every finished cell's row as it finishes, the final tables.

``clustergym compare --out DIR`` keeps its work here::

    DIR/run.json       the configuration (scenario, parameters, agents, seeds, horizon, sweep,
                       reference), the status (running, interrupted, failed, complete) and the
                       files written
    DIR/cells.jsonl    one line per finished cell: its index in the plan, its identity and its
                       row, appended, flushed and fsynced as the cell finishes
    DIR/results.csv, results.parquet, summary.csv, the plot: written (each atomically: a
                       temporary file renamed) once every cell has a row

An interrupted or failing run keeps ``run.json`` and ``cells.jsonl``; ``compare --resume DIR``
plans the same cells from ``run.json``, takes the rows of ``cells.jsonl`` and runs only the
missing cells, so the final tables are those of an uninterrupted run (every row goes through the
same JSON round trip, which keeps floats exactly, NaN and infinities included).

The target is checked before anything runs (:meth:`RunFolder.create`): it must be creatable and
writable, not an existing file, and empty, unless ``overwrite`` (which removes the files an
earlier run listed in its ``run.json``, and nothing else); a folder holding an earlier run is
continued with :meth:`RunFolder.resume`, never written over by accident.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from clustergym.errors import ClusterGymError, ConfigError
from clustergym.runner.cells import Cell

__all__ = ["CELLS_FILE", "RUN_FILE", "RunFolder", "atomic_write", "cell_id", "check_writable", "run_kept"]

RUN_FILE = "run.json"
CELLS_FILE = "cells.jsonl"


def _plain(x: Any) -> Any:
    """Plain JSON values (NumPy scalars and arrays to Python, tuples to lists); floats stay exact,
    NaN and infinities included (``json`` writes them as NaN/Infinity and reads them back)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, Path):
        return str(x)
    if x is None or isinstance(x, (str, bool, int, float)):
        return x
    raise ConfigError("row", f"a value of type {type(x).__name__} cannot be kept in {CELLS_FILE}: {x!r}")


def cell_id(cell: Cell) -> str:
    """A cell's identity in the journal: scenario, parameters, agent, seed, horizon."""
    scenario = cell.scenario if isinstance(cell.scenario, str) else cell.scenario.name
    return json.dumps(
        _plain(
            [
                scenario,
                [list(p) for p in cell.params],
                cell.agent,
                cell.seed,
                cell.horizon,
                [list(p) for p in cell.agent_params],
            ]
        )
    )


def atomic_write(path: Path, write: Callable[[Path], Any]) -> None:
    """``write(tmp)`` to a temporary file beside ``path``, then rename it over ``path``: a reader
    (or a later resume) sees the old file or the whole new one, never half of it.  The writer
    creates the temporary file, so it gets the usual permissions (the umask's, not mkstemp's 0600)."""
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_writable(path: Path, what: str) -> None:
    """``path`` is (or becomes) a folder this process can write in; else a ConfigError naming ``what``."""
    if path.exists() and not path.is_dir():
        raise ConfigError(what, f"{path} is an existing file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ConfigError(what, f"{path}: cannot write there ({e.strerror or e})") from None


class RunFolder:
    """The run folder of one comparison (see the module docstring)."""

    def __init__(self, path: Path, config: dict[str, Any], rows: dict[int, dict[str, Any]], ids: dict[int, str]):
        self.path = path
        self.config = config
        self.rows = rows
        self._ids = ids

    # ------------------------------------------------------------------------------ opening
    @classmethod
    def create(
        cls, path: str | Path, config: dict[str, Any], *, overwrite: bool = False, option: str = "--out"
    ) -> RunFolder:
        """A new run in ``path`` (checked and written before anything runs).

        Raises:
            ConfigError: ``path`` is a file, cannot be created or written, holds an earlier run
                (resume it, or pass ``overwrite``) or other files (unless ``overwrite``).
        """
        path = Path(path)
        if path.is_dir():
            earlier = path / RUN_FILE
            if not overwrite:
                if earlier.exists():
                    raise ConfigError(
                        option,
                        f"{path} holds an earlier run ({RUN_FILE}): continue it with "
                        f"--resume {path}, replace it with --overwrite, or choose another "
                        "folder",
                    )
                if any(path.iterdir()):
                    raise ConfigError(
                        option,
                        f"{path} is not empty: choose a new or empty folder, or pass "
                        "--overwrite to write there (files of an earlier run are replaced)",
                    )
            elif earlier.exists():  # remove exactly what the earlier run wrote
                try:
                    old = json.loads(earlier.read_text())
                    names = [*old.get("files", []), CELLS_FILE, RUN_FILE]
                except ValueError:
                    names = [CELLS_FILE, RUN_FILE]
                for name in names:
                    if "/" not in name and name not in ("", ".", ".."):
                        (path / name).unlink(missing_ok=True)
            else:
                (path / CELLS_FILE).unlink(missing_ok=True)
        check_writable(path, option)
        folder = cls(path, dict(config), {}, {})
        folder.config.setdefault("status", "running")
        folder.config.setdefault("files", [])
        folder._save()
        (path / CELLS_FILE).touch()
        return folder

    @classmethod
    def resume(cls, path: str | Path, option: str = "--resume", kind: str = "compare") -> RunFolder:
        """An earlier run of ``path``: its configuration and the rows of its finished cells.
        ``kind``: the command whose run it must be (``run.json``'s key: ``compare``, ``benchmark``).

        Raises:
            ConfigError: no run there, or its ``run.json`` or ``cells.jsonl`` is damaged (the
                message names the file and the line).
        """
        path = Path(path)
        meta = path / RUN_FILE
        if not meta.is_file():
            raise ConfigError(option, f"{path}: no earlier run there (no {RUN_FILE}); start one with --out {path}")
        try:
            config = json.loads(meta.read_text())
            if not isinstance(config, dict) or not isinstance(config.get(kind), dict):
                raise TypeError(f"not the run.json of clustergym {kind}")
        except (ValueError, TypeError, UnicodeDecodeError) as e:
            raise ConfigError(option, f"{meta}: damaged ({e})") from None
        check_writable(path, option)
        rows, ids = {}, {}
        journal = path / CELLS_FILE
        lines = journal.read_text().split("\n") if journal.exists() else []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                i, cid, row = int(entry["index"]), str(entry["cell"]), entry["row"]
                if not isinstance(row, dict):
                    raise TypeError("the row is not an object")
            except (ValueError, KeyError, TypeError) as e:
                if n == len(lines) or (n == len(lines) - 1 and not lines[-1].strip()):
                    break  # the last line, cut by the interruption: that cell runs again
                raise ConfigError(
                    option, f"{journal}: line {n} is damaged ({e}); remove that line to run its cell again"
                ) from None
            rows[i], ids[i] = row, cid
        folder = cls(path, config, rows, ids)
        folder._rewrite_journal()  # drop a cut last line before appending to the file
        return folder

    # ------------------------------------------------------------------------------ rows
    def check_plan(self, cells: list[Cell]) -> None:
        """The kept rows must be those of these cells (the same plan as the earlier run)."""
        for i, cid in self._ids.items():
            if i >= len(cells) or cell_id(cells[i]) != cid:
                raise ConfigError(
                    "--resume",
                    f"{self.path / CELLS_FILE}: the kept cell {i} ({cid}) is not the "
                    f"cell {i} of this run's plan; the folder belongs to another run",
                )

    def append(self, index: int, cell: Cell, row: dict[str, Any]) -> dict[str, Any]:
        """Keep the row of a finished cell: one line, flushed and fsynced; returns the row as kept."""
        kept = json.loads(json.dumps(_plain(row)))
        line = json.dumps({"index": index, "cell": cell_id(cell), "row": kept}) + "\n"
        with open(self.path / CELLS_FILE, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self.rows[index] = kept
        self._ids[index] = cell_id(cell)
        return kept

    def ordered_rows(self, n: int) -> list[dict[str, Any]]:
        """The rows of cells ``0..n-1`` in plan order (every one must be kept)."""
        return [dict(self.rows[i]) for i in range(n)]

    # ------------------------------------------------------------------------------ status
    def set_status(self, status: str, **extra: Any) -> None:
        self.config["status"] = status
        self.config.update(extra)
        self._save()

    def add_files(self, names: list[str]) -> None:
        self.config["files"] = sorted(set(self.config.get("files", [])) | set(names))
        self._save()

    def _save(self) -> None:
        text = json.dumps(_json_config(self.config), indent=2) + "\n"
        atomic_write(self.path / RUN_FILE, lambda tmp: tmp.write_text(text))

    def _rewrite_journal(self) -> None:
        lines = "".join(
            json.dumps({"index": i, "cell": self._ids[i], "row": self.rows[i]}) + "\n" for i in sorted(self.rows)
        )
        atomic_write(self.path / CELLS_FILE, lambda tmp: tmp.write_text(lines))


def _json_config(config: dict[str, Any]) -> Any:
    """run.json: strict JSON (an infinite horizon is written as the string 'inf')."""

    def conv(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return str(x)
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        if isinstance(x, list):
            return [conv(v) for v in x]
        return x

    return conv(_plain(config))


def run_kept(cells: list[Cell], folder: RunFolder | None, command: str, **run_rows_kwargs: Any) -> list[dict[str, Any]]:
    """:func:`clustergym.runner.run_rows` of ``cells`` with each finished cell kept in ``folder`` as
    it finishes (none: nothing kept), and the rows in plan order -- the kept ones, so a resumed run
    gives the same rows as an uninterrupted one.

    Raises:
        KeyboardInterrupt: on Ctrl-C; the folder's status becomes ``interrupted`` and the message
            says how many cells are kept and how to continue (``clustergym COMMAND --resume DIR``).
        EvaluationError: a cell failed with a ClusterGymError (status ``failed``, the same advice);
            another exception is re-raised after the status is set.
    """
    from clustergym.runner.cells import EvaluationError, run_rows

    def keep(i: int, row: dict[str, Any]) -> None:
        if folder is not None:
            folder.append(i, cells[i], row)

    done = folder.rows if folder is not None else None
    try:
        rows = run_rows(cells, done=done, on_row=keep, **run_rows_kwargs)
    except KeyboardInterrupt:
        if folder is None:
            raise KeyboardInterrupt(
                f"nothing kept (with --out DIR every finished episode is kept, and "
                f"`clustergym {command} --resume DIR` continues)"
            ) from None
        folder.set_status("interrupted")
        raise KeyboardInterrupt(
            f"{len(folder.rows)} of {len(cells)} episodes kept in {folder.path}; continue with "
            f"`clustergym {command} --resume {folder.path}`"
        ) from None
    except Exception as e:
        if folder is None:
            raise
        folder.set_status("failed", error=f"{type(e).__name__}: {e}")
        if not isinstance(e, ClusterGymError):
            raise
        raise EvaluationError(
            f"{e}\n{len(folder.rows)} of {len(cells)} episodes kept in {folder.path}; fix the problem "
            f"and continue with `clustergym {command} --resume {folder.path}`"
        ) from None
    return folder.ordered_rows(len(cells)) if folder is not None else rows
