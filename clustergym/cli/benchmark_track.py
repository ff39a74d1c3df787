"""``clustergym benchmark --track generalization``: the generalization track (:mod:`clustergym.suite.generalization`).

With agents or models: each scored zero-shot at every test point, normalized against the point's own
reference (random and the point's best non-oracle baseline), with the main report's interval and
paired difference.  With ``--reference --out DIR``: every compatible baseline at every point, each
episode kept in ``DIR/cells.jsonl`` as it finishes (``--resume DIR`` continues), the document in
``DIR/generalization.json``; ``--update-packaged DIR/generalization.json --track generalization``
puts it in the package.  ``--markdown`` prints the shipped reference (docs/generalization.md).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from clustergym._json import jsonable
from clustergym.cli._common import SCORE_COLUMNS, print_table, score_cells
from clustergym.errors import ConfigError

__all__ = ["check_track", "track_cmd", "track_markdown"]


def check_track(track: str) -> str:
    """``track`` if it names a track; a :class:`ConfigError` naming the tracks otherwise."""
    from clustergym.suite.generalization import TRACK

    if track != TRACK:
        raise ConfigError("--track", f"unknown track {track!r}; the tracks are: {TRACK}")
    return track


def track_markdown(doc: dict[str, Any]) -> str:
    """The track's reference as Markdown: one row per point (random, best non-oracle baseline, best
    oracle), then every agent of every point, oracles marked (docs/generalization.md)."""
    from clustergym.suite.reference import cell as _f
    from clustergym.suite.reference import normalized

    lines = [
        f"Generalization track v{doc['track_version']}: scores on the track's seeds (3,000,000 on), mean ± 95% "
        "Student-t half-width; higher is better (costs are negated).",
        "",
        "| point | load × | size × | seeds | random | best non-oracle baseline | best oracle | oracle, normalized |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, e in doc["points"].items():
        a = e["agents"]
        best = f"`{e['best']}` {_f(e['best_score'])} ± {_f(a[e['best']]['ci95'], 2)}" if e["best"] else "–"
        orc = f"`{e['best_oracle']}` {_f(e['best_oracle_score'])}" if e["best_oracle"] else "–"
        norm = _f(normalized(e["best_oracle_score"], e), 3) if e["best_oracle"] else "–"
        lines.append(
            f"| `{name}` | {e['load']:g} | {e['size']:g} | {len(e['seeds'])} | {_f(e['random'])} | {best} | {orc} | {norm} |"
        )
    for name, e in doc["points"].items():
        lines += [
            "",
            f"<details><summary><code>{name}</code>: all {len(e['agents'])} agents ({e['metric']})</summary>",
            "",
            "| agent | oracle | score | 95% CI ± | normalized | vs best oracle |",
            "|---|---|---|---|---|---|",
        ]
        for agent, a in e["agents"].items():
            lines.append(
                f"| `{agent}` | {'yes' if a['oracle'] else ''} | {_f(a['mean'])} | {_f(a['ci95'], 2)} | "
                f"{_f(normalized(a['mean'], e), 3)} | {_f(normalized(a['mean'], e, oracle=True), 3)} |"
            )
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def track_cmd(opts: dict[str, Any], resumed: Any, err: Any) -> None:
    """The track's branch of ``clustergym benchmark``: ``opts`` holds the command's options
    (``specs``, ``tasks``, ``seeds``, ``workers``, ``reference``, ``out_dir``, ``overwrite``,
    ``update_packaged``, ``markdown``, ``decoding``, ``queue_window``, ``table_format``, ``json_out``, ``ray``)."""
    from clustergym.suite.generalization import load_track_reference

    specs, tasks = opts["specs"] or [], opts["tasks"]
    if opts["update_packaged"] is not None:
        if specs or opts["reference"]:
            raise ConfigError("--update-packaged", "is a step of its own: give no agent and no --reference with it")
        _update_packaged(opts["update_packaged"], opts["json_out"], err)
        return
    if opts["markdown"]:
        if specs or opts["reference"]:
            raise ConfigError("--markdown", "prints the track's reference; give no agent and no --reference with it")
        from clustergym.suite.generalization import select_points

        select_points(tasks)  # a name that is no task of the track is an error
        sys.stdout.write(track_markdown(_only(load_track_reference(), tasks)))
        return
    if opts["reference"] and specs:
        raise ConfigError("--reference", "regenerates the baselines' scores; give no agent with it")
    if not opts["reference"] and not specs:
        raise ConfigError("agent", "give an agent or model to score on the track, --reference or --markdown")
    if opts["reference"]:
        _reference(opts, resumed, err)
    else:
        _score(opts, resumed, err)


def _only(doc: dict[str, Any], tasks: list[str] | None) -> dict[str, Any]:
    if not tasks:
        return doc
    return {**doc, "points": {n: e for n, e in doc["points"].items() if e["base"] in tasks}}


def _update_packaged(source: Path, json_out: bool, err: Any) -> None:
    """Put a track reference written by ``--reference --out`` into the package (it must be the track's
    current version and hold every test point: a partial run would drop points)."""
    from clustergym.runner.journal import atomic_write
    from clustergym.suite.generalization import TRACK_PATH, load_track_reference, test_points

    try:
        doc = load_track_reference(source)
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError("--update-packaged", f"{source}: {e}") from None
    missing = [p.name for p in test_points() if p.name not in doc.get("points", {})]
    if missing:
        raise ConfigError(
            "--update-packaged", f"{source} lacks the points {', '.join(missing)}: the table would lose them"
        )
    text = json.dumps(doc, indent=1, allow_nan=True) + "\n"
    atomic_write(TRACK_PATH, lambda tmp: tmp.write_text(text))
    if json_out:
        sys.stdout.write(json.dumps({"updated": str(TRACK_PATH), "from": str(source)}) + "\n")
    else:
        err.print(f"updated {TRACK_PATH} from {source}", highlight=False)


def _run(plan: Any, opts: dict[str, Any], resumed: Any, settings: dict[str, Any], err: Any) -> tuple[Any, list]:
    """Run the plan's cells, each kept in ``--out`` (or the resumed folder) as it finishes."""
    from rich.progress import Progress

    from clustergym.cli.benchmark_out import open_folder, run_journaled

    folder = open_folder(opts["out_dir"], resumed, opts["overwrite"], settings, plan.cells)
    if folder is not None and folder.rows and not opts["json_out"]:
        err.print(f"resuming {folder.path}: {len(folder.rows)} of {len(plan.cells)} episodes kept", highlight=False)
    with Progress(console=err, transient=True) as prog:
        bar = prog.add_task("episodes", total=len(plan.cells), completed=len(folder.rows) if folder else 0)

        def tick(agent: str, seed: int) -> None:
            prog.update(bar, advance=1, description=f"{agent} seed {seed}")

        rows = run_journaled(plan.cells, folder, opts["workers"], tick, opts["ray"])
    return folder, rows


def _settings(opts: dict[str, Any], reference: bool) -> dict[str, Any]:
    return {
        "track": "generalization",
        "reference": reference,
        "specs": [] if reference else list(opts["specs"]),
        "tasks": opts["tasks_text"],
        "seeds": opts["seeds"],
        "split": None,
        "decoding": None if reference else opts["decoding"],
        "queue_window": None if reference else opts["queue_window"],
    }


def _reference(opts: dict[str, Any], resumed: Any, err: Any) -> None:
    """``--reference``: every compatible baseline at every point into ``--out DIR/generalization.json``."""
    from clustergym.runner.journal import atomic_write
    from clustergym.suite.generalization import plan_track, summarize_track_reference

    if opts["out_dir"] is None and resumed is None:
        raise ConfigError(
            "--out",
            "--reference writes the track's table to --out DIR/generalization.json (the package's table "
            "changes only with --update-packaged DIR/generalization.json --track generalization)",
        )
    plan = plan_track(None, opts["tasks"], seeds=opts["seeds"])
    t0 = time.perf_counter()
    folder, rows = _run(plan, opts, resumed, _settings(opts, True), err)
    doc = summarize_track_reference(plan, rows)
    wall = time.perf_counter() - t0
    path = folder.path / "generalization.json"
    text = json.dumps(jsonable(doc), indent=1) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text))
    folder.add_files(["generalization.json"])
    folder.set_status("complete", wall_seconds=wall)
    if opts["json_out"]:
        sys.stdout.write(json.dumps(jsonable({**doc, "wall_seconds": wall, "path": str(path)}), indent=1) + "\n")
        return
    sys.stdout.write(track_markdown(doc))
    err.print(f"track reference: {len(plan.cells)} episodes at {len(doc['points'])} points in {wall:.0f} s -> {path}")


def _score(opts: dict[str, Any], resumed: Any, err: Any) -> None:
    """Agents or models at every test point, against each point's reference."""
    from clustergym.cli.benchmark_out import write_outputs
    from clustergym.suite.generalization import load_track_reference, plan_track, summarize_track_scores
    from clustergym.suite.scoring import distinct_specs

    specs, warnings = distinct_specs(opts["specs"])
    for w in warnings:
        err.print(f"warning: {w}", highlight=False)
    plan = plan_track(  # inputs checked
        specs, opts["tasks"], seeds=opts["seeds"], decoding=opts["decoding"], queue_window=opts["queue_window"]
    )
    ref = load_track_reference()
    t0 = time.perf_counter()
    folder, rows = _run(plan, opts, resumed, _settings(opts, False), err)
    res = summarize_track_scores(plan, rows, specs, ref)
    res["rows"] = [{"point": plan_point, **_row(r)} for plan_point, r in _owners(plan, rows)]
    res["wall_seconds"] = time.perf_counter() - t0
    if folder is not None:
        write_outputs(folder, res, res["wall_seconds"])
    if opts["json_out"]:
        sys.stdout.write(json.dumps(jsonable(res), indent=1) + "\n")
        return
    _print_scores(res, opts["table_format"], err)


def _owners(plan: Any, rows: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(name, r) for name, (a, b) in plan.spans.items() for r in rows[a:b]]


def _row(r: dict[str, Any]) -> dict[str, Any]:
    return {"agent": r["agent"], "seed": r["seed"], "score": r["task"]["score"], "complete": r["task"]["complete"]}


def _print_scores(res: dict[str, Any], table_format: str, err: Any) -> None:
    from clustergym.suite.reference import cell as _f

    for k, why in res["skipped"].items():
        err.print(f"skipped {k}: {why}", highlight=False)
    t = Table(title="generalization track: zero-shot scores at every test point (mean ± 95% CI), normalized per point")
    for c in ("point", "agent", "seeds", *SCORE_COLUMNS):
        t.add_column(c, justify="left" if c in ("point", "agent", "best baseline") else "right")
    for name, v in res["points"].items():
        for spec, r in v["runs"].items():
            t.add_row(name, spec, str(len(r["scores"])), *score_cells(v, r, _f))
    print_table(t, table_format)
    if len(res["specs"]) > 1:
        print_table(_method_table(res), table_format)
    err.print(f"{len(res['rows'])} episodes in {res['wall_seconds']:.0f} s")


def _method_table(res: dict[str, Any]) -> Table:
    """The specs as the runs of one method at every point: intervals over runs and episodes together."""
    from clustergym.suite.reference import cell as _f

    def iv(x: dict[str, float], digits: int = 3) -> str:
        return f"{_f(x['value'], digits)} [{_f(x['low'], digits)}, {_f(x['high'], digits)}]"

    t = Table(
        title=f"the {len(res['specs'])} specs as the runs of one method: 95% intervals over runs and evaluation "
        "seeds (two-level bootstrap), paired with the point's best non-oracle baseline"
    )
    for c in ("point", "runs", "seeds", "normalized", "paired Δ vs best", "verdict", "runs on their own"):
        t.add_column(c, justify="left" if c in ("point", "verdict", "runs on their own") else "right")
    for name, v in res["points"].items():
        m = v.get("method")
        if m is None:
            continue
        own = [r["verdict"].split(" ")[0] for r in m["per_run"].values()]
        counts = ", ".join(f"{own.count(w)} {w}" for w in ("above", "at", "below") if own.count(w))
        t.add_row(
            name,
            str(len(m["runs"])),
            str(m["seeds"]),
            iv(m["normalized"]),
            iv(m["paired_vs_best"], 3),
            m["verdict"],
            counts,
        )
    return t
