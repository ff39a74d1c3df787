"""What every command shares: the one error path, the consoles and the printers.

``--json`` prints exactly one JSON document on stdout and nothing else there; progress and messages go
to stderr (:data:`err`).  :class:`Commands` is the app's group class: its ``invoke`` maps a
:class:`~clustergym.errors.ClusterGymError`, an :class:`OSError` or a usage error to exit code 2.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import typer
import typer.core
from rich.console import Console

from clustergym._json import jsonable
from clustergym.comparison import with_warmup
from clustergym.errors import ClusterGymError

__all__ = [
    "FORMATS",
    "WARMUP_HELP",
    "Commands",
    "err",
    "fail",
    "json_error",
    "out",
    "print_json",
    "print_table",
    "format_option",
    "table_rows",
    "version",
    "with_warmup",
]

#: click's UsageError as typer raises it (typer >= 0.24 vendors click)
USAGE_ERRORS = tuple(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


class Commands(typer.core.TyperGroup):
    """The one error path of every command.

    A :class:`ClusterGymError` (a bad scenario, setting, file or model), an :class:`OSError` (a file
    that cannot be read or written) and a malformed option (click's usage errors) exit with code 2
    and a message on stderr, never a traceback; with ``--json`` stdout also gets one JSON document
    ``{"error": {"type", "field", "message"}}``.  Ctrl-C exits with 130 (the message says what was
    kept); anything else is a bug in clustergym, reported as such with code 1
    (``CLUSTERGYM_DEBUG=1`` shows its traceback).
    """

    json_requested = False

    def main(self, args: Any = None, *a: Any, **kw: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        Commands.json_requested = "--json" in argv[: argv.index("--")] if "--" in argv else "--json" in argv
        return super().main(args, *a, **kw)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except USAGE_ERRORS as e:  # typer prints it (with the usage line) and exits with 2
            param = getattr(e, "param", None)
            json_error(
                "UsageError",
                (param.opts[0] if getattr(param, "opts", None) else getattr(param, "name", None)),
                e.format_message(),
            )
            raise
        except ClusterGymError as e:
            fail(e)
        except OSError as e:
            fail(e, field=getattr(e, "filename", None))
        except KeyboardInterrupt as e:
            msg = str(e) or "interrupted"
            err.print("[bold red]interrupted:[/] ", end="", markup=True)
            err.print(msg, markup=False, highlight=False)
            json_error("Interrupted", None, msg)
            raise typer.Exit(130) from None
        except Exception as e:  # a bug: say so, without a traceback unless asked for
            if os.environ.get("CLUSTERGYM_DEBUG"):
                raise
            msg = f"{type(e).__name__}: {e}"
            err.print(
                "[bold red]internal error[/] (a bug in clustergym; please report it with the command; "
                "CLUSTERGYM_DEBUG=1 shows the traceback): ",
                end="",
                markup=True,
            )
            err.print(msg, markup=False, highlight=False)
            json_error("InternalError", None, msg)
            raise typer.Exit(1) from None


err = Console(stderr=True, markup=False)  # messages may name extras: [plot] is text
out = Console(markup=False)


#: ``--format`` of the commands that print tables
FORMATS = ("table", "csv", "markdown")


def table_rows(t: Any) -> tuple[list[str], list[list[str]]]:
    """The header and the rows of a rich :class:`~rich.table.Table`, as plain text."""
    from rich.text import Text

    def plain(cell: Any) -> str:
        return cell.plain if isinstance(cell, Text) else str(cell)

    header = [plain(c.header) for c in t.columns]
    cells = [[plain(x) for x in c._cells] for c in t.columns]
    return header, [list(r) for r in zip(*cells)]


_FORMAT = ["table"]  # the --format of the command being run (set by its option's callback)

#: the columns of one spec's row in a scores table (the suite's and the generalization track's), after
#: the row's own first columns; :func:`score_cells` fills them
SCORE_COLUMNS = ("score", "random", "best baseline", "normalized", "paired Δ vs best", "vs best oracle")


def score_cells(ref: dict[str, Any], r: dict[str, Any], f: Any) -> list[str]:
    """One spec's cells under :data:`SCORE_COLUMNS`: ``r`` is its summary on a task or a track point
    (``mean``, ``ci95``, ``normalized``, ``normalized_ci95``, ``paired_vs_best``, ``paired_vs_best_ci95``,
    ``paired_seeds``, ``vs_oracle``), ``ref`` the task's or point's reference (``random``, ``best``,
    ``best_score``), ``f(x, digits)`` the number formatter of the table."""
    paired = f"{f(r['paired_vs_best'], 3)} ± {f(r['paired_vs_best_ci95'], 2)}" if r["paired_seeds"] else "n/a"
    return [
        f"{r['mean']:.4g} ± {f(r['ci95'], 2)}",
        f"{ref['random']:.4g}",
        f"{ref['best']} {f(ref['best_score'])}",
        f"{f(r['normalized'], 3)} ± {f(r['normalized_ci95'], 2)}",
        paired,
        f(r["vs_oracle"], 3),
    ]


def _set_format(value: str) -> str:
    if value not in FORMATS:
        raise typer.BadParameter(f"{value!r}: expected one of {', '.join(FORMATS)}")
    _FORMAT[0] = value
    return value


def format_option() -> Any:
    """The ``--format`` option of a command that prints tables (:func:`print_table` reads it)."""
    return typer.Option("table", "--format", help="how tables print: table, csv or markdown", callback=_set_format)


def print_table(t: Any, fmt: str | None = None) -> None:
    """Print a table: ``table`` (rich; when stdout is not a terminal, at full width, so no cell is cut
    to "7.2…"), ``csv`` or ``markdown`` (the title first, as a line starting with ``#`` for csv)."""
    import csv

    fmt = fmt or _FORMAT[0]
    if fmt == "table":
        (out if out.is_terminal else Console(width=100_000, soft_wrap=True, markup=False)).print(t)
        return
    header, rows = table_rows(t)
    title = str(t.title or "")
    if fmt == "csv":
        if title:
            sys.stdout.write(f"# {title}\n")
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
        return
    esc = [[c.replace("|", "\\|") for c in r] for r in [header, *rows]]
    if title:
        sys.stdout.write(f"**{title}**\n\n")
    sys.stdout.write("| " + " | ".join(esc[0]) + " |\n|" + "---|" * len(header) + "\n")
    sys.stdout.writelines("| " + " | ".join(r) + " |\n" for r in esc[1:])
    sys.stdout.write("\n")


def print_note(text: str) -> None:
    """A line of prose between tables: as it is for ``table`` and ``markdown``, a ``#`` comment line
    (as the tables' titles) for ``csv``, so that the output stays machine-readable."""
    if _FORMAT[0] == "csv":
        sys.stdout.write(f"# {text}\n")
    elif _FORMAT[0] == "markdown":
        sys.stdout.write(f"{text}\n\n")
    else:
        out.print(text)


def print_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(jsonable(doc), indent=2) + "\n")


# --warmup T (run, compare): the scenario parameter `warmup`, passed like --set warmup=T
WARMUP_HELP = "warm-up deletion: time averages over [T, horizon], per-job statistics of jobs arriving from T on"


def json_error(kind: str, field: str | None, message: str) -> None:
    if Commands.json_requested:
        sys.stdout.write(
            json.dumps({"error": {"type": kind, "field": field or None, "message": message}}, indent=2) + "\n"
        )


def fail(e: Exception, field: str | None = None) -> None:
    """Report a user-facing error (stderr; with --json also stdout) and exit with code 2."""
    msg = str(e)
    err.print("[bold red]error:[/] ", end="", markup=True)
    err.print(msg, markup=False, highlight=False)
    json_error(type(e).__name__, getattr(e, "field", None) or field, msg)
    raise typer.Exit(2)


def version() -> str:
    """The installed clustergym's version (``0+unknown`` when it is not installed, e.g. a bare checkout)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("clustergym")
    except PackageNotFoundError:
        return "0+unknown"
