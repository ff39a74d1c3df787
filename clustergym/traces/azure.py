"""Azure Public Dataset V1 (2017) VM arrivals, as preprocessed by huaweicloud/trace_generation_rnn (SOSP'21).

Decoded format (as the trace subset documents it).  Each line is ``<ts> <tok>,<tok>,...``:

* ``ts``: seconds since the trace start; lines step by 300 s; a line holds the VMs that
  arrived in the 300 s bin *ending* at ``ts``.
* flavour files (``v1.<split>.txt``): tokens are flavour letters ``a``..``p`` (``flav_map.txt``:
  ``vCPU,memGB letter``) and ``|``, which ends a *batch* (the VMs one tenant created in that bin).
* duration files (``v1.<split>.c<T>.txt``, dev and test only): aligned token for token with the
  flavour file of the same timestamps; ``U<bin>`` = the VM ended before the censoring time
  ``T``; ``C<bin>`` = still alive at ``T`` (the bin gives its age then).
* ``v1.interval_map.txt``: ``<duration_s> <bin>`` for every multiple of 300 s up to 20 days.
  Bins 0-12 are exactly 0, 300, ..., 3600 s; bins 13-35 are hours (1 h, 2 h] .. (23 h, 24 h];
  bins 36-44 days (1 d, 2 d] .. (9 d, 10 d]; bin 45 is > 10 d (listed up to 20 d).

Durations from bins (``duration_point``): ``mid`` (default) takes the middle of the bin's interval
(e.g. 1.5 h for (1 h, 2 h], 15 d for bin 45), ``lower``/``upper`` its ends; the exact bins give
their value, and bin 0 ("0 s" at 300 s resolution: the VM lived less than 300 s) gives 150 s in
every mode.  Censored VMs (``C``): ``censored="truncate"`` (default) gives them
``T - arrival`` (they run until the censoring time; flagged in ``censored`` and counted in
``modified``), ``"drop"`` drops them (counted).  The training split has no duration file in the
public snapshot: load it with ``durations=False`` (flavours and arrivals only; it cannot be replayed).

Arrival times (``arrival``): ``bin_end`` (default, ``ts`` as written) or ``spread``: the n VMs of
a line at ``ts - 300 + 300 (k + 1/2) / n``, k = 0..n-1 in file order (deterministic).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from clustergym.errors import ScenarioError, TraceFormatError
from clustergym.traces._csv import check_exists, open_text
from clustergym.traces.paths import TraceNotFoundError, trace_path
from clustergym.traces.table import Filtering, FilterReport, TraceTable
from clustergym.validation import choice

__all__ = [
    "FLAVORS",
    "BIN_INTERVALS",
    "RESOLUTION",
    "load_azure_v1",
    "read_flavor_map",
    "read_interval_map",
    "bin_durations",
    "SPLITS",
]

PathLike = str | os.PathLike[str]
RESOLUTION = 300.0
SPLITS = ("train", "dev", "test")

#: flavour letter -> (vCPU, memory GB), as in flav_map.txt
FLAVORS: dict[str, tuple[float, float]] = {
    "a": (1, 0.75),
    "b": (1, 1.75),
    "c": (1, 2),
    "d": (16, 112),
    "e": (2, 14),
    "f": (2, 16),
    "g": (2, 3.5),
    "h": (2, 4),
    "i": (4, 28),
    "j": (4, 32),
    "k": (4, 7),
    "l": (4, 8),
    "m": (8, 14),
    "n": (8, 16),
    "o": (8, 56),
    "p": (8, 64),
}


def _default_bins() -> np.ndarray:
    """``(46, 2)``: the (lo, hi] seconds of each duration bin (exact bins have lo == hi)."""
    rows = [(300.0 * b, 300.0 * b) for b in range(13)]
    rows += [(3600.0 * h, 3600.0 * (h + 1)) for h in range(1, 24)]
    rows += [(86400.0 * d, 86400.0 * (d + 1)) for d in range(1, 10)]
    rows += [(864000.0, 1728000.0)]
    return np.array(rows)


#: duration bin -> (lo, hi] in seconds, as documented by the README (verified against v1.interval_map.txt)
BIN_INTERVALS: np.ndarray = _default_bins()


def read_flavor_map(path: PathLike) -> dict[str, tuple[float, float]]:
    """Parse ``flav_map.txt`` (lines ``vCPU,memGB letter``)."""
    p = Path(path)
    check_exists(p, "Azure flav_map.txt")
    out: dict[str, tuple[float, float]] = {}
    with open_text(p) as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                res, letter = line.split()
                cpu, mem = (float(v) for v in res.split(","))
            except ValueError:
                raise TraceFormatError(f"{p}: line {n}: expected 'vCPU,memGB letter', got {line.strip()!r}") from None
            out[letter] = (cpu, mem)
    return out


def read_interval_map(path: PathLike) -> np.ndarray:
    """Parse ``v1.interval_map.txt`` into ``(bins, 2)`` (lo, hi] seconds: hi = the largest duration
    mapped to the bin, lo = the previous bin's hi (or hi itself when the bin holds one duration)."""
    p = Path(path)
    check_exists(p, "Azure v1.interval_map.txt")
    d: dict[int, list[float]] = {}
    with open_text(p) as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                s, b = line.split()
                d.setdefault(int(b), []).append(float(s))
            except ValueError:
                raise TraceFormatError(f"{p}: line {n}: expected '<duration_s> <bin>', got {line.strip()!r}") from None
    nb = max(d) + 1
    out = np.zeros((nb, 2))
    prev = 0.0
    for b in range(nb):
        if b not in d:
            raise TraceFormatError(f"{p}: bin {b} has no durations")
        v = d[b]
        out[b] = (min(v), max(v)) if len(v) == 1 else (prev, max(v))
        prev = max(v)
    return out


def bin_durations(
    bins: np.ndarray, point: Literal["mid", "lower", "upper"] = "mid", intervals: np.ndarray = BIN_INTERVALS
) -> np.ndarray:
    """A representative duration (s) for each duration bin; bin 0 ("< 300 s") -> 150 s."""
    choice(point, "duration_point", ("mid", "lower", "upper"))
    lo, hi = intervals[:, 0], intervals[:, 1]
    rep = {"mid": (lo + hi) / 2, "lower": lo, "upper": hi}[point].copy()
    rep[(lo == 0) & (hi == 0)] = RESOLUTION / 2
    return rep[np.asarray(bins, dtype=np.int64)]


def _read_lines(path: Path) -> list[tuple[int, float, list[str]]]:
    """``(line number, ts, tokens)`` per non-empty line; tokens without empties."""
    out = []
    try:
        with open_text(path) as fh:
            for n, line in enumerate(fh, 1):
                s = line.strip()
                if not s:
                    continue
                ts_s, _, rest = s.partition(" ")
                try:
                    ts = float(ts_s)
                except ValueError:
                    raise TraceFormatError(f"{path}: line {n}, field 'timestamp': not a number: {ts_s!r}") from None
                out.append((n, ts, [t for t in rest.strip().split(",") if t]))
    except (EOFError, OSError) as e:
        last = out[-1][0] if out else 0
        raise TraceFormatError(
            f"{path}: truncated or corrupt gzip stream after line {last} ({type(e).__name__}: {e})"
        ) from None
    return out


def _split_file(d: Path, split: str) -> Path:
    for name in (f"v1.{split}.txt.gz", f"v1.{split}.txt"):
        if (d / name).exists():
            return d / name
    raise TraceNotFoundError(
        f"{d / f'v1.{split}.txt.gz'} not found (the Azure V1 {split} flavour trace); download "
        "huaweicloud/trace_generation_rnn resources/traces and point CLUSTERGYM_TRACES at them"
    )


def _duration_file(d: Path, split: str) -> Path | None:
    cands = sorted(d.glob(f"v1.{split}.c*.txt.gz")) + sorted(d.glob(f"v1.{split}.c*.txt"))
    return cands[0] if cands else None


def load_azure_v1(
    trace_dir: PathLike | None = None,
    *,
    split: Literal["train", "dev", "test"] = "test",
    flavors_path: PathLike | None = None,
    durations_path: PathLike | None = None,
    durations: bool = True,
    censor_time: float | None = None,
    censored: Literal["truncate", "drop"] = "truncate",
    duration_point: Literal["mid", "lower", "upper"] = "mid",
    arrival: Literal["bin_end", "spread"] = "bin_end",
    window: tuple[float | None, float | None] | None = None,
    first_n: int | None = None,
) -> TraceTable:
    """Azure V1 VM arrivals with flavours (vCPU, memory GB) and binned lifetimes; one job per VM.

    Steps: locate the files (:func:`_azure_files`), parse the aligned token lines (:func:`_parse_vms`), build
    the VM table (:func:`_vm_frame`), then filter and report (:func:`_azure_table`).

    Args:
        split: ``train`` (no durations in the snapshot), ``dev`` or ``test``.
        flavors_path, durations_path: explicit files (default: under the trace directory).
        durations: read the duration file (required for replay; ``False`` gives ``duration = NaN``).
        censor_time: the censoring time T (default: parsed from the duration file name ``c<T>``).
        censored, duration_point, arrival: see the module docstring.
        window: on the arrival time in trace seconds.

    Returns:
        columns ``arrival, duration, vcpu, memory, flavor, batch, batch_size, censored, duration_bin,
        time`` (trace seconds of the line).
    """
    choice(split, "split", SPLITS)
    choice(censored, "censored", ("truncate", "drop"))
    choice(arrival, "arrival", ("bin_end", "spread"))
    files = _azure_files(trace_dir, split, flavors_path, durations_path, durations, censor_time)
    flines = _read_lines(files.flavors)
    dlines = _read_lines(files.durations) if files.durations is not None else None
    if dlines is not None and len(dlines) != len(flines):
        raise TraceFormatError(
            f"{files.durations}: {len(dlines)} lines, but {files.flavors} has {len(flines)}: the files must align"
        )
    vms = _parse_vms(files, flines, dlines)
    rep = FilterReport(
        str(files.flavors) + (f" + {files.durations.name}" if files.durations is not None else ""), rows=len(flines)
    )
    df = _vm_frame(vms, files, duration_point, arrival, rep)
    return _azure_table(df, rep, files, split, censored, duration_point, arrival, window, first_n)


@dataclass
class _AzureFiles:
    """The files of one split and what they decode with: flavour and duration files (``None``: no
    durations), the flavour map (letter -> (vCPU, GB)), the bin intervals and the censoring time (s)."""

    flavors: Path
    durations: Path | None
    flav: dict[str, tuple[float, float]]
    intervals: np.ndarray
    censor_time: float | None


def _azure_files(
    trace_dir: PathLike | None,
    split: str,
    flavors_path: PathLike | None,
    durations_path: PathLike | None,
    durations: bool,
    censor_time: float | None,
) -> _AzureFiles:
    """Locate the split's files under the trace directory (or take the explicit ones) and the censoring time."""
    d: Path | None = None
    if flavors_path is None or (durations and durations_path is None):
        d = trace_path("azure", ".", trace_dir=trace_dir)
    fpath = Path(flavors_path) if flavors_path is not None else _split_file(d, split)  # type: ignore[arg-type]
    check_exists(fpath, "Azure V1 flavour trace")
    flav = dict(FLAVORS)
    intervals = BIN_INTERVALS
    if d is not None and (d / "flav_map.txt").exists():
        flav = read_flavor_map(d / "flav_map.txt")
    if d is not None:
        for name in ("v1.interval_map.txt.gz", "v1.interval_map.txt"):
            if (d / name).exists():
                intervals = read_interval_map(d / name)
                break
    dpath: Path | None = None
    if durations:
        dpath = Path(durations_path) if durations_path is not None else _duration_file(d, split)  # type: ignore[arg-type]
        if dpath is None:
            raise TraceNotFoundError(
                f"no duration file v1.{split}.c<T>.txt(.gz) in {d}: the public snapshot has "
                f"durations for the dev and test splits only; use split='dev' or 'test', or "
                "durations=False for arrivals and flavours alone"
            )
        check_exists(dpath, "Azure V1 duration trace")
        if censor_time is None:
            m = re.search(r"\.c(\d+)\.txt", dpath.name)
            if not m:
                raise ScenarioError(
                    "censor_time", f"cannot read the censoring time from {dpath.name}; pass censor_time"
                )
            censor_time = float(m.group(1))
    return _AzureFiles(fpath, dpath, flav, intervals, censor_time)


@dataclass
class _VMs:
    """Per VM, in file order: flavour letter, line time (s), batch number, spread arrival (s), and with
    durations its bin and whether it is censored (``C``)."""

    letters: list[str] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    batch: list[int] = field(default_factory=list)
    spread: list[float] = field(default_factory=list)
    dbin: list[int] = field(default_factory=list)
    dcens: list[bool] = field(default_factory=list)


Line = tuple[int, float, list[str]]


def _parse_vms(files: _AzureFiles, flines: list[Line], dlines: list[Line] | None) -> _VMs:
    """Every VM of the flavour lines, with its duration token from the aligned line of ``dlines``."""
    vms = _VMs()
    b = 0
    for li, (n, ts, toks) in enumerate(flines):
        dline = dlines[li] if dlines is not None else None
        if dline is not None:
            _check_aligned(files, flines[li], dline)
        idx = [k for k, t in enumerate(toks) if t != "|"]
        for j, k in enumerate(idx):
            t = toks[k]
            if t not in files.flav:
                raise TraceFormatError(
                    f"{files.flavors}: line {n}, field 'token {k + 1}': unknown flavour {t!r} "
                    f"(expected one of {''.join(sorted(files.flav))} or '|')"
                )
            vms.letters.append(t)
            vms.times.append(ts)
            vms.spread.append(ts - RESOLUTION + RESOLUTION * (j + 0.5) / len(idx))
            if dline is not None:
                _duration_token(files, dline, k, vms)
        if dline is not None:
            _check_batch_ends(files, toks, dline)
        # batches: tokens up to each '|'
        cur = 0
        for t in toks:
            if t == "|":
                b += cur > 0
                cur = 0
            else:
                vms.batch.append(b)
                cur += 1
        if cur:
            b += 1
    return vms


def _check_aligned(files: _AzureFiles, fline: Line, dline: Line) -> None:
    """A duration line has the flavour line's timestamp and token count."""
    (n, ts, toks), (dn, dts, dtoks) = fline, dline
    if dts != ts:
        raise TraceFormatError(
            f"{files.durations}: line {dn}, field 'timestamp': {dts:g} but {files.flavors} line {n} has {ts:g}"
        )
    if len(dtoks) != len(toks):
        raise TraceFormatError(
            f"{files.durations}: line {dn}: {len(dtoks)} tokens, but {files.flavors} line {n} has "
            f"{len(toks)}: the files must align token for token"
        )


def _check_batch_ends(files: _AzureFiles, toks: list[str], dline: Line) -> None:
    """Every batch end ('|') of a flavour line is one in its duration line too."""
    for k, t in enumerate(toks):
        if t == "|" and dline[2][k] != "|":
            raise TraceFormatError(
                f"{files.durations}: line {dline[0]}, field 'token {k + 1}': expected '|' "
                f"(a batch end in {files.flavors}), got {dline[2][k]!r}"
            )


def _duration_token(files: _AzureFiles, dline: Line, k: int, vms: _VMs) -> None:
    """Append the bin and censoring of duration token ``k`` of ``dline`` (``U<bin>`` or ``C<bin>``)."""
    dt = dline[2][k]
    kind, num = dt[:1], dt[1:]
    if kind not in ("U", "C") or not num.isdigit() or int(num) >= len(files.intervals):
        raise TraceFormatError(
            f"{files.durations}: line {dline[0]}, field 'token {k + 1}': expected U<bin> or "
            f"C<bin> with bin < {len(files.intervals)}, got {dt!r}"
        )
    vms.dbin.append(int(num))
    vms.dcens.append(kind == "C")


def _vm_frame(vms: _VMs, files: _AzureFiles, duration_point: str, arrival: str, rep: FilterReport) -> pd.DataFrame:
    """The VM table (arrival in ``_arr``, trace seconds) with durations from the bins; counts in ``rep``."""
    n_vm = len(vms.letters)
    let = np.array(vms.letters, dtype="<U1")
    cpu = np.array([files.flav[x][0] for x in vms.letters], dtype=np.float64)
    mem = np.array([files.flav[x][1] for x in vms.letters], dtype=np.float64)
    bt = np.array(vms.batch, dtype=np.int64)
    t_line = np.array(vms.times, dtype=np.float64)
    arr = t_line if arrival == "bin_end" else np.array(vms.spread, dtype=np.float64)
    if files.durations is not None:
        bins = np.array(vms.dbin, dtype=np.int64)
        cens = np.array(vms.dcens, dtype=bool)
        dur = bin_durations(bins, duration_point, files.intervals)  # type: ignore[arg-type]
        assert files.censor_time is not None
        dur = np.where(cens, float(files.censor_time) - arr, dur)
        rep.counts["uncensored"] = int((~cens).sum())
        rep.counts["censored"] = int(cens.sum())
        rep.counts["censor_time"] = float(files.censor_time)
    else:
        bins = np.full(n_vm, -1, dtype=np.int64)
        cens = np.zeros(n_vm, dtype=bool)
        dur = np.full(n_vm, np.nan)
    rep.counts["batches"] = int(np.unique(bt).size) if n_vm else 0
    rep.counts["flavors"] = {k: int(v) for k, v in zip(*np.unique(let, return_counts=True), strict=True)}
    bsize = np.bincount(bt)[bt] if n_vm else bt
    return pd.DataFrame(
        {
            "duration": dur,
            "vcpu": cpu,
            "memory": mem,
            "flavor": let,
            "batch": bt,
            "batch_size": bsize,
            "censored": cens,
            "duration_bin": bins,
            "time": t_line,
            "_arr": arr,
        }
    )


def _azure_table(
    df: pd.DataFrame,
    rep: FilterReport,
    files: _AzureFiles,
    split: str,
    censored: str,
    duration_point: str,
    arrival: str,
    window: tuple[float | None, float | None] | None,
    first_n: int | None,
) -> TraceTable:
    """Censoring, window and first N on the VM table, arrivals from the first kept one, and the report."""
    filt = Filtering(df, rep)
    censor_time = files.censor_time
    if files.durations is not None:
        cens = df["censored"].to_numpy()
        if censored == "drop":
            filt.keep(~cens, f"alive at the censoring time {censor_time:g} s (C token)")
        else:
            rep.modify(f"alive at the censoring time {censor_time:g} s: duration truncated there", int(cens.sum()))
        nonpos = filt.df["duration"].to_numpy() <= 0
        filt.keep(~nonpos, "censored at or before its arrival (non-positive truncated duration)")
    filt.window_first("_arr", window, first_n)
    filt.df = filt.df.sort_values("_arr", kind="stable")
    jobs = filt.done()
    origin = float(jobs["_arr"].iloc[0]) if len(jobs) else 0.0
    jobs.insert(0, "arrival", jobs.pop("_arr") - origin)
    rep.steps.append(
        f"Azure V1 {split}: flavours from flav_map, durations from bins ({duration_point}), censored "
        f"{censored}, arrival {arrival}; arrival - {origin:g} s (the first kept arrival)"
    )
    return TraceTable(
        jobs=jobs,
        resources=("vcpu", "memory"),
        units={"arrival": "s", "duration": "s", "vcpu": "vCPU", "memory": "GB", "time": "s (trace)"},
        report=rep,
        format="azure",
        origin=origin,
    )
