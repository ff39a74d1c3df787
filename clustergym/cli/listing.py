"""``clustergym list``: the scenarios and agents, one line each."""

from __future__ import annotations

import typer
from rich.table import Table

from clustergym.cli._common import format_option, print_json, print_table


def list_cmd(
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
    table_format: str = format_option(),
) -> None:
    """List the scenarios and agents with a one-line description each."""
    from clustergym.agent_api import list_agents
    from clustergym.scenarios import PRESETS

    scenarios = {name: {"description": p.description, "params": p.defaults()} for name, p in PRESETS.items()}
    agents = list_agents()
    if json_out:
        print_json({"scenarios": scenarios, "agents": agents})
        return
    t = Table(title="scenarios")
    t.add_column("name")
    t.add_column("description")
    t.add_column("parameters (defaults)")
    for name, s in scenarios.items():
        t.add_row(name, s["description"], ", ".join(f"{k}={v}" for k, v in s["params"].items()))
    print_table(t)
    t = Table(title="agents")
    t.add_column("name")
    t.add_column("description")
    for name, d in agents.items():
        t.add_row(name, d)
    print_table(t)
