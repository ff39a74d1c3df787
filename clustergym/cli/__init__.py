"""The ``clustergym`` command line (stable: scripts depend on it).

``--json`` prints exactly one JSON document on stdout and nothing else there;
progress and messages go to stderr.
"""

from __future__ import annotations

import os

import typer

from clustergym.cli._common import Commands
from clustergym.cli.bench import bench_cmd
from clustergym.cli.benchmark import benchmark_cmd
from clustergym.cli.compare import compare_cmd
from clustergym.cli.curves import curves_cmd
from clustergym.cli.listing import list_cmd
from clustergym.cli.reproduce import reproduce_cmd
from clustergym.cli.run import run_cmd
from clustergym.cli.trace import trace_cmd
from clustergym.cli.train import train_cmd

__all__ = ["app", "main"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    cls=Commands,
    help="Multi-resource cluster scheduling: environments, baselines, comparisons.",
)


def _print_version(value: bool) -> None:
    if value:
        from clustergym.cli._common import version

        typer.echo(f"clustergym {version()}")
        raise typer.Exit()


@app.callback()
def _global_options(
    no_trace_cache: bool = typer.Option(
        False,
        "--no-trace-cache",
        help="parse trace files instead of reading parsed tables from the on-disk "
        "trace cache (sets CLUSTERGYM_TRACE_CACHE=off for this command and "
        "its worker processes)",
    ),
    show_version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="print clustergym's version and exit"
    ),
) -> None:
    """Multi-resource cluster scheduling: environments, baselines, comparisons."""
    if no_trace_cache:
        from clustergym.traces.diskcache import ENV_VAR

        os.environ[ENV_VAR] = "off"


app.command("list")(list_cmd)
app.command("run")(run_cmd)
app.command("compare")(compare_cmd)
app.command("train")(train_cmd)
app.command("curves")(curves_cmd)
app.command("reproduce")(reproduce_cmd)
app.command("bench")(bench_cmd)
app.command("trace")(trace_cmd)
app.command("benchmark")(benchmark_cmd)
from clustergym.cli.convert import convert_model_cmd  # noqa: E402

app.command("convert-model")(convert_model_cmd)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
