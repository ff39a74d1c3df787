"""``clustergym run``: one agent on one scenario, its metrics."""

from __future__ import annotations

import typer
from rich.table import Table

from clustergym._json import jsonable as _jsonable
from clustergym.cli._common import WARMUP_HELP, err, fail, format_option, print_json, print_table, with_warmup
from clustergym.errors import ClusterGymError
from clustergym.keyvalue import parse_pairs, split_prefix
from clustergym.validation import settings


def run_cmd(
    scenario: str = typer.Argument(..., help="preset name or scenario file (.yaml/.json)"),
    agent: str = typer.Option(..., "--agent", help="registered agent name (see `clustergym list`)"),
    set_: list[str] = typer.Option([], "--set", help="scenario parameter key=value; agent.key=value for the agent"),
    seed: int = typer.Option(0, "--seed"),
    horizon: float | None = typer.Option(None, "--horizon", help="override the simulated horizon"),
    table_format: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
    warmup: float | None = typer.Option(None, "--warmup", help=WARMUP_HELP),
) -> None:
    """Run one agent on one scenario and report its metrics."""
    from clustergym.agent_api import make_agent
    from clustergym.runner import RUN_FIELDS, run_episode
    from clustergym.scenarios import resolve_scenario

    try:
        sparams, aparams = split_prefix(parse_pairs(set_), "agent.")
        with_warmup(sparams, warmup)
        sc = resolve_scenario(scenario, **sparams).with_horizon(horizon)
        settings.number(seed, "--seed", lo=0, integer=True)
        ag = make_agent(agent, **aparams)
        if not json_out:
            err.print(f"running {agent} on {sc.name} (seed {seed}, horizon {sc.horizon:g})")
        result = run_episode(sc, ag, seed=seed, horizon=horizon, agent_name=agent)
    except ClusterGymError as e:
        fail(e)
        return
    if json_out:
        print_json(result)
        return
    t = Table(title=f"{agent} on {sc.name}, seed {seed}")
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k in RUN_FIELDS:
        v = result[k]
        t.add_row(k, f"{v:.6g}" if isinstance(v, float) else str(_jsonable(v)))
        if k == "p99_wait" and "p99_wait_method" in result:  # job_memory=bounded: p99 is estimated
            t.add_row("p99_wait_method", str(result["p99_wait_method"]))
    print_table(t)
