"""``clustergym reproduce``: check the papers' claims."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from clustergym._json import jsonable as _jsonable
from clustergym.cli._common import fail, format_option, print_json, print_table
from clustergym.errors import ClusterGymError

_PAPER_SCALE = typer.Option(
    False,
    "--paper-scale",
    help="every size setting at the paper's value (lotes.machines=1000, lotes.horizon=100, "
    "lotes.instances=5; rms.google_n=0, rms.google_scalings=0.5,0.75,1,1.25,1.5; "
    "autoscale.google_servers=1000, autoscale.google_n=0); --set still sets one; CPU-hours per "
    "claim: a job for --ray (docs/distributed.md, costs in docs/performance.md)",
)


_OUT = typer.Option(
    None,
    "--out",
    help="keep every finished episode in DIR/episodes.jsonl as it arrives; the same command with the same "
    "--out (after a lost driver) runs only the episodes not kept",
)


def reproduce_cmd(
    claims: list[str] = typer.Argument(None, help="claim ids (default: all)"),
    all_: bool = typer.Option(False, "--all", help="run every registered claim"),
    workers: int | None = typer.Option(
        None,
        "--workers",
        help="local worker processes for the claims' episodes "
        "(default: min(2, available cores); 1 runs in "
        "this process); the figures do not depend on it",
    ),
    ray_address: str | None = typer.Option(
        None, "--ray", help="run the episodes on a Ray cluster: 'auto', HOST:PORT or ray://HOST:PORT"
    ),
    scale: float = typer.Option(
        1.0,
        "--scale",
        help="multiply the simulated horizons of the simulation claims "
        "(RMS, BF-J/S, auto-scaling, LoTES generated data); below 1 "
        "for a quick look, the verdicts then mean little",
    ),
    set_: list[str] = typer.Option(
        [],
        "--set",
        help="claim setting key=value (repeatable): rms.google_n, "
        "rms.google_scalings, lotes.machines, lotes.horizon, "
        "lotes.instances, lotes.google_n, "
        "autoscale.google_servers, autoscale.google_n; see the README",
    ),
    paper_scale: bool = _PAPER_SCALE,
    out_dir: Path | None = _OUT,
    quiet: bool = typer.Option(False, "--quiet", help="no progress lines on stderr"),
    table_format: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
) -> None:
    """Check the papers' claims: id, paper, claim, measured, expected, passed.

    Without CLAIM ids or --all, list the registered claims (running them all takes a while).

    Settings (--set key=value; defaults give the documented figures): rms.google_n (10000; 0 = the whole slice)
    and rms.google_scalings (0.5,1,1.5) for rms-fig8; lotes.machines (50 per configuration), lotes.horizon
    (6 h), lotes.instances (2 per Phi) for the LoTES generated-data claims; lotes.google_n (0 = all) for
    lotes-google-*; autoscale.google_servers (300) and autoscale.google_n (60000; 0 = all) for
    autoscale-google-trace-ordering.
    """
    from clustergym.reproduce import CLAIMS, ReproduceConfig, load_claims, run_claims
    from clustergym.runner import available_workers

    try:
        config = ReproduceConfig(
            workers=workers if workers is not None else min(2, available_workers()),
            ray=ray_address,
            scale=scale,
            progress=not quiet,
            settings=ReproduceConfig.parse_sets(set_),
            paper_scale=paper_scale,
            out=str(out_dir) if out_dir is not None else None,
        )
        if not claims and not all_:
            load_claims()
            listing = [{"id": c.id, "paper": c.paper, "claim": c.text} for c in CLAIMS.values()]
            if json_out:
                print_json(listing)
            else:
                _print_listing(listing)
            return
        load_claims()
        ids = list(CLAIMS) if all_ else claims
        results = run_claims(ids, config)
    except ClusterGymError as e:
        fail(e)
        return
    if json_out:
        print_json(results)
    else:
        _print_results(results)
    if not all(r["passed"] for r in results):
        raise typer.Exit(1)


def _print_listing(listing: list[dict[str, str]]) -> None:
    """The registered claims: id, paper, claim."""
    t = Table(title="paper claims (run some with `clustergym reproduce ID ...`, or --all)")
    for col in ("id", "paper", "claim"):
        t.add_column(col)
    for c in listing:
        t.add_row(c["id"], c["paper"], c["claim"])
    print_table(t)


def _print_results(results: list[dict[str, Any]]) -> None:
    """The claims run: what was measured against what the paper states, and whether it holds."""
    t = Table(title="paper claims")
    for c in ("id", "paper", "claim", "measured", "expected", "passed"):
        t.add_column(c)
    for r in results:
        t.add_row(
            r["id"],
            r["paper"],
            r["claim"],
            str(_jsonable(r["measured"])),
            str(r["expected"]),
            "[green]yes[/]" if r["passed"] else "[red]no[/]",
        )
    print_table(t)
