"""Claims generated, not typed: Markdown blocks rendered from the results files ``clustergym benchmark --json`` wrote.

A *claims index* (JSON; the repository's is ``docs/results/claims.json``) lists the methods whose
results the documentation states: for each, its task, its models and the results file of each split (a
``clustergym benchmark MODELS --split SPLIT --json`` document, with its ``report``).
:func:`render_blocks` renders, from those files and the models' own ``model.json``:

- ``claims:table``: one row per method: the test split's normalized score, paired difference with
  the best non-oracle baseline and verdict, the validation split's for comparison, the headroom, the
  training CPU of each run as its ``model.json`` records it (:func:`training_cpu`);
- ``claims:run <model>``: one model's own line (its run alone: the interval over episodes).

A method whose test-split score was not that split's first look at its task says so in the index
(``"test_look": k``, the k-th method scored there for the task): its row adds the report at the level
that counts the k looks (Bonferroni, ``1 - 0.05 / k``), whose verdict is the one that holds.

A block sits between ``<!-- claims:NAME -->`` and ``<!-- /claims -->`` in a Markdown file.
``python -m clustergym.suite.claims INDEX FILE...`` rewrites the blocks of the files (``--check``:
exit 1 if one differs); tests/suite/test_claims.py checks the repository's documents.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["fmt_interval", "load_index", "render_blocks", "rewrite", "run_line", "table", "training_cpu"]

_BLOCK = re.compile(r"(<!-- claims:(?P<name>[^>]+?) -->\n)(?P<body>.*?)(<!-- /claims -->)", re.S)


def fmt_interval(x: dict[str, float] | None, digits: int = 3, signed: bool = False) -> str:
    """``value [low, high]`` with ``digits`` decimals."""
    if not x or not math.isfinite(x["value"]):
        return "–"
    f = f"{{:{'+' if signed else ''}.{digits}f}}"
    return f"{f.format(x['value'])} [{f.format(x['low'])}, {f.format(x['high'])}]"


def load_index(path: str | Path) -> dict[str, Any]:
    """The claims index with each method's results documents loaded (``docs``: ``{split: document}``)."""
    p = Path(path)
    index = json.loads(p.read_text())
    root = p.parent
    for m in index["methods"]:
        m["docs"] = {split: json.loads((root / f).read_text()) for split, f in m["results"].items()}
    index.setdefault("models_root", str(root / index.get("models_from", ".")))
    return index


def _run_cpu(meta: dict[str, Any]) -> tuple[float | None, bool]:
    """``(CPU seconds, whole)`` of a training run from its ``model.json``: the sum over its processes
    (``cpu_seconds_total``; ``None`` when one was not recorded) or, for a file written before processes
    were, its one process's ``cpu_seconds_last_run``; ``whole`` is False when a process's record timed
    the RL updates only (``"counted": "learn"``, or a file without ``seconds_last_run_parts``)."""
    processes = meta.get("processes")
    if processes:
        return meta.get("cpu_seconds_total"), all(p.get("counted", "process") == "process" for p in processes)
    return meta.get("cpu_seconds_last_run"), "seconds_last_run_parts" in meta


def training_cpu(runs: list[str], root: str | Path) -> str:
    """The "training CPU per run" cell: the range over ``runs`` (model folders under ``root``) of the CPU
    seconds each ``model.json`` records (every ``clustergym train`` process of the run, cloning and
    resumed runs included), with a note when a record covers the RL updates only."""
    values, partial = [], 0
    for run in runs:
        cpu, whole = _run_cpu(json.loads((Path(root) / run / "model.json").read_text()))
        if cpu is None:
            return "not recorded"
        values.append(cpu)
        partial += not whole
    lo, hi = min(values), max(values)
    cell = f"{lo:,.0f} s" if round(lo) == round(hi) else f"{lo:,.0f}–{hi:,.0f} s"
    if partial:
        some = "" if partial == len(runs) else f" in {partial} of {len(runs)} runs"
        cell += f" (setup and cloning not timed{some}: recorded before model.json counted the whole process)"
    return cell


def _task(doc: dict[str, Any], task: str) -> dict[str, Any]:
    return doc["report"]["tasks"][task]


def _digits(metric: str) -> int:
    return 0 if metric == "reward_rate" else 2


def table(index: dict[str, Any]) -> str:
    """The ``claims:table`` block: one row per method of the index."""
    lines = [
        "| task | method (models) | test: normalized [95% CI] | test: paired Δ vs best baseline [95% CI] | "
        "test verdict | validation: normalized [95% CI], verdict | best oracle; bound (normalized) | "
        "training CPU per run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in index["methods"]:
        test = _task(m["docs"]["test"], m["task"])
        val = _task(m["docs"]["validation"], m["task"]) if "validation" in m["docs"] else None
        h = test["headroom"]
        room = f"`{h['best_oracle']}` {fmt_interval(h.get('oracle_normalized'))}" if h["best_oracle"] else "–"
        if h["bound"]:
            room += f"; {h['bound']['name']} {h['bound']['normalized']['value']:.2f}"
        paired = test["paired_vs_best"]
        verdict = f"**{test['verdict']}**{_corrected(m)}"
        lines.append(
            f"| `{m['task']}` | {m['label']} (`{m['models']}`, {len(test['runs'])} runs) | "
            f"{fmt_interval(test['normalized'])} | "
            f"{fmt_interval(paired, _digits(paired['units']), signed=True)} ({paired['units']}) | "
            f"{verdict} | {fmt_interval(val['normalized']) + ', ' + val['verdict'] if val else '–'} | "
            f"{room} | {training_cpu(test['runs'], index['models_root'])} |"
        )
    return "\n".join(lines) + "\n"


def _corrected(m: dict[str, Any]) -> str:
    """For a method that was the k-th look at its task's test split (``test_look``, k > 1): the paired
    difference and verdict at the level that counts the k looks, recomputed from the results file."""
    look = int(m.get("test_look", 1))
    if look <= 1:
        return ""
    from clustergym.suite.report import report

    level = 1 - 0.05 / look
    t = report(m["docs"]["test"], level=level)["tasks"][m["task"]]
    p = t["paired_vs_best"]
    return (
        f"; the test split's look {look} at this task: at {100 * level:g}% "
        f"{fmt_interval(p, _digits(p['units']), signed=True)}, **{t['verdict']}**"
    )


def run_line(index: dict[str, Any], model: str) -> str:
    """The ``claims:run <model>`` block: the model alone on each split (interval over episodes)."""
    for m in index["methods"]:
        if model in {Path(r).name for r in _task(m["docs"]["test"], m["task"])["runs"]}:
            out = []
            for split in [s for s in ("test", "validation") if s in m["docs"]]:
                t = _task(m["docs"][split], m["task"])
                spec = next(r for r in t["per_run"] if Path(r).name == model)
                r = t["per_run"][spec]
                p = r["paired_vs_best"]
                out.append(
                    f"- {split} split ({t['seeds']} seeds): normalized {fmt_interval(r['normalized'])}, paired Δ "
                    f"vs `{t['best']}` {fmt_interval(p, _digits(t['paired_vs_best']['units']), signed=True)}: "
                    f"**{r['verdict']}**"
                )
            return "\n".join(out) + "\n"
    raise KeyError(f"{model}: in no method of the claims index")


def render_blocks(index: dict[str, Any], text: str) -> str:
    """``text`` with each claims block rendered again from the index's results."""

    def sub(mt: re.Match[str]) -> str:
        name = mt.group("name").strip()
        body = table(index) if name == "table" else run_line(index, name.removeprefix("run ").strip())
        return mt.group(1) + body + mt.group(4)

    return _BLOCK.sub(sub, text)


def rewrite(index_path: str | Path, files: list[str | Path], check: bool = False) -> list[Path]:
    """Render the blocks of ``files``; return the files that differed (rewritten unless ``check``)."""
    index = load_index(index_path)
    changed = []
    for f in map(Path, files):
        old = f.read_text()
        new = render_blocks(index, old)
        if new != old:
            changed.append(f)
            if not check:
                f.write_text(new)
    return changed


def main(argv: list[str] | None = None) -> int:
    """``python -m clustergym.suite.claims INDEX FILE... [--check]``."""
    ap = argparse.ArgumentParser(prog="python -m clustergym.suite.claims", description=__doc__.splitlines()[0])
    ap.add_argument("index")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--check", action="store_true", help="exit 1 if a block differs from the results; write nothing")
    args = ap.parse_args(argv)
    changed = rewrite(args.index, args.files, check=args.check)
    for f in changed:
        print(f"{'differs' if args.check else 'rewrote'}: {f}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
