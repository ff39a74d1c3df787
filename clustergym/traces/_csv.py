"""Fast, checked CSV reading for the trace loaders.

The fast path is one ``pandas.read_csv`` (C engine) per file that reads only the
needed columns with explicit dtypes; ``.gz`` is decompressed by pandas.  When it
fails -- a non-numeric field, a missing mandatory value, a line with too many
fields, a truncated gzip stream -- a slow diagnostic pass streams the file with
the :mod:`csv` module to find the first offending line, and raises
:class:`~clustergym.errors.TraceFormatError` as ``"<file>: line <n>, field
'<name>' (column <k>): <problem>"`` (lines are 1-based and count a header line).
The diagnostic pass runs only on malformed input, so it costs nothing otherwise.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

import numpy as np
import pandas as pd

from clustergym.errors import TraceFormatError
from clustergym.traces.paths import TraceNotFoundError

__all__ = ["Col", "read_table", "open_text", "check_exists"]

Kind = Literal["int", "float", "str"]


@dataclass(frozen=True)
class Col:
    """A column to read.

    Attributes:
        name: the output column name.
        key: 0-based position (headerless files) or the header name (files with a header;
            compared after stripping spaces).
        kind: ``int`` (whole number), ``float`` or ``str``.
        required: whether an empty value is an error (mandatory field).
        label: the field's name in error messages (default: ``key`` for headers, ``name`` otherwise).
        dtype: a narrower integer dtype for a required ``int`` column (the values must fit).
    """

    name: str
    key: int | str
    kind: Kind = "float"
    required: bool = True
    label: str | None = None
    dtype: object = None  # a narrower numpy dtype for a required int column (e.g. np.int8)


def check_exists(path: Path, what: str) -> None:
    if not path.exists():
        raise TraceNotFoundError(
            f"{path} not found ({what}); download the trace (see docs/traces.md) and pass its "
            f"path, or set CLUSTERGYM_TRACES to the trace directory"
        )


def open_text(path: Path) -> IO[str]:
    """Open a plain or gzip-compressed text file (by content, not by name)."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _header(path: Path) -> list[str]:
    try:
        with open_text(path) as fh:
            line = fh.readline()
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise TraceFormatError(f"{path}: line 1 (header): cannot read: {e}") from None
    if not line.strip():
        raise TraceFormatError(f"{path}: line 1 (header): the file is empty or has no header line")
    return [h.strip() for h in next(csv.reader([line]))]


def _label(c: Col, header: bool) -> str:
    if c.label:
        return c.label
    return str(c.key) if header else c.name


def read_table(
    path: Path | str, cols: Sequence[Col], *, header: bool, nfields: int | None = None, what: str = "trace file"
) -> pd.DataFrame:
    """Read ``cols`` of one CSV file (plain or gzip) with explicit dtypes.

    Args:
        header: whether line 1 is a header (then ``Col.key`` are header names and a missing one
            is reported as ``line 1 (header)``).
        nfields: for headerless files, the number of fields a line must have (used by the
            diagnostic pass; lines with fewer fields than a requested column are errors).
        what: a description for the not-found message.

    Returns:
        a DataFrame with one column per ``Col.name``; optional ``int`` columns are float64 (``NaN``
        = empty).  Row ``i`` is line ``i + 1`` (+1 with a header): blank lines are not skipped.

    Raises:
        TraceFormatError: naming the file, the line and the field.
        TraceNotFoundError: the file does not exist.
    """
    path = Path(path)
    check_exists(path, what)
    offset = 1 if header else 0
    if header:
        names = _header(path)
        nfields = len(names)
        pos = _header_positions(path, cols, names)
    else:
        pos = {c.name: int(c.key) for c in cols}
    dtypes = {pos[c.name]: _dtype(c) for c in cols}
    usecols = sorted(set(pos.values()))
    try:
        raw = pd.read_csv(
            path,
            header=None,
            skiprows=offset,
            usecols=usecols,
            dtype=dtypes,  # type: ignore[arg-type]
            compression="gzip" if _is_gzip(path) else None,
            skip_blank_lines=False,
            engine="c",
            keep_default_na=False,
            na_values=[""],
            quoting=csv.QUOTE_MINIMAL,
        )
    except pd.errors.EmptyDataError:
        raise TraceFormatError(
            f"{path}: no data line{' after the header' if header else ''}: the file holds no job"
        ) from None
    except (ValueError, pd.errors.ParserError, EOFError, OSError, zlib.error, UnicodeDecodeError) as e:
        _diagnose(path, cols, pos, header, nfields, e)
        raise AssertionError("unreachable") from e  # _diagnose always raises
    by_pos = {pos[c.name]: c.name for c in cols}
    raw.columns = [by_pos[int(p)] for p in raw.columns]  # rename in place: no copy of the data
    _check_values(path, raw, cols, pos, header)
    return raw


def _header_positions(path: Path, cols: Sequence[Col], names: list[str]) -> dict[str, int]:
    """Column name -> 0-based field position, from the header's ``names``; a missing column is an error."""
    pos = {}
    for c in cols:
        if c.key not in names:
            raise TraceFormatError(
                f"{path}: line 1 (header): missing column '{c.key}' "
                f"(the header has: {', '.join(repr(n) for n in names)})"
            )
        pos[c.name] = names.index(str(c.key))
    return pos


def _dtype(c: Col) -> object:
    """The dtype pandas reads ``c`` with: object for text, int for required whole numbers, else float64
    (an optional int may be empty: NaN)."""
    if c.kind == "str":
        return object
    if c.kind == "int" and c.required:
        return c.dtype or np.int64
    return np.float64


def _check_values(path: Path, out: pd.DataFrame, cols: Sequence[Col], pos: dict[str, int], header: bool) -> None:
    """Mandatory float/str fields are not empty and optional ints are whole numbers, or an error at the line."""
    offset = 1 if header else 0
    # mandatory float/str fields: an empty value is an error at its line
    for c in cols:
        if c.required and c.kind != "int":
            na = out[c.name].isna().to_numpy()
            if na.any():
                i = int(np.flatnonzero(na)[0])
                more = int(na.sum()) - 1
                raise TraceFormatError(
                    f"{path}: line {i + 1 + offset}, field '{_label(c, header)}' "
                    f"(column {pos[c.name] + 1}): missing value" + (f" (and {more} more lines)" if more else "")
                )
    # whole-number check for optional ints read as float
    for c in cols:
        if c.kind == "int" and not c.required:
            v = out[c.name].to_numpy()
            bad = np.isfinite(v) & (np.floor(v) != v)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise TraceFormatError(
                    f"{path}: line {i + 1 + offset}, field '{_label(c, header)}' "
                    f"(column {pos[c.name] + 1}): not a whole number: {v[i]!r}"
                )


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def _diagnose(
    path: Path, cols: Sequence[Col], pos: dict[str, int], header: bool, nfields: int | None, err: BaseException
) -> None:
    """Stream ``path`` to find the first malformed line and raise a TraceFormatError for it."""
    line = 0
    try:
        with open_text(path) as fh:
            reader = csv.reader(fh)
            for fields in reader:
                line = reader.line_num
                if header and line == 1:
                    continue
                if not fields or fields == [""]:
                    raise TraceFormatError(
                        f"{path}: line {line}: blank line (expected {nfields or 'comma-separated'} fields)"
                    )
                if nfields is not None and len(fields) > nfields:
                    raise TraceFormatError(f"{path}: line {line}: {len(fields)} fields, expected {nfields}")
                short = [c for c in cols if pos[c.name] >= len(fields)]
                if short:
                    c = ([c for c in short if c.required] or short)[0]
                    raise TraceFormatError(
                        f"{path}: line {line}, field '{_label(c, header)}' (column "
                        f"{pos[c.name] + 1}): missing (the line has {len(fields)} fields, "
                        f"expected {nfields or pos[c.name] + 1})"
                    )
                for c in cols:
                    p = pos[c.name]
                    lab = _label(c, header)
                    v = fields[p].strip()
                    if v == "":
                        if c.required:
                            raise TraceFormatError(
                                f"{path}: line {line}, field '{lab}' (column {p + 1}): missing value"
                            )
                        continue
                    if c.kind == "int":
                        try:
                            int(v)
                        except ValueError:
                            raise TraceFormatError(
                                f"{path}: line {line}, field '{lab}' (column {p + 1}): not an integer: {v!r}"
                            ) from None
                    elif c.kind == "float":
                        try:
                            x = float(v)
                        except ValueError:
                            raise TraceFormatError(
                                f"{path}: line {line}, field '{lab}' (column {p + 1}): not a number: {v!r}"
                            ) from None
                        if not math.isfinite(x):  # the parser takes nan/inf as text, not as numbers
                            raise TraceFormatError(
                                f"{path}: line {line}, field '{lab}' (column {p + 1}): not a finite number: {v!r}"
                            )
    except (EOFError, zlib.error, gzip.BadGzipFile, OSError) as e:
        raise TraceFormatError(
            f"{path}: truncated or corrupt gzip stream after line {line} ({type(e).__name__}: {e})"
        ) from None
    except UnicodeDecodeError as e:
        raise TraceFormatError(f"{path}: line {line + 1}: not UTF-8 text ({e})") from None
    raise TraceFormatError(f"{path}: cannot parse ({type(err).__name__}: {err})")
