"""``clustergym convert-model FOLDER --trust-pickle``: a model folder saved before the ``.npz`` format, converted.

Registered in :mod:`clustergym.cli` as ``app.command("convert-model")(convert_model_cmd)``.  Folders
saved by older versions keep their normalisation statistics as ``vecnormalize.pkl``, a pickle, which
clustergym refuses to load (unpickling runs whatever code the file holds).  This command UNPICKLES
them -- it runs that code -- once, on the user's word (``--trust-pickle``) that the folder comes from
a trusted source, writes ``vecnormalize.npz`` instead and records the folder's digests in
``model.json`` (:func:`clustergym.learned.files.convert_legacy_folder`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console

from clustergym.errors import ConfigError

__all__ = ["convert_model_cmd"]

_err = Console(stderr=True, markup=False)  # messages may name extras: [plot] is text


def convert_model_cmd(
    folders: list[Path] = typer.Argument(..., help="model folders of `clustergym train` holding vecnormalize.pkl"),
    trust_pickle: bool = typer.Option(
        False,
        "--trust-pickle",
        help="required: this UNPICKLES the folder's .pkl files, which runs any code they hold; "
        "give it only for folders from a trusted source",
    ),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document"),
) -> None:
    """Convert a trusted model folder's pickled normalisation statistics to vecnormalize.npz (runs the pickle)."""
    from clustergym.learned.files import convert_legacy_folder

    if not trust_pickle:
        raise ConfigError(
            "--trust-pickle",
            "convert-model unpickles the folder's .pkl files, which runs any code they hold: "
            "give --trust-pickle if, and only if, you trust where the folder comes from",
        )
    for folder in folders:
        if not folder.is_dir():
            raise ConfigError("FOLDER", f"{folder}: not a folder")
    done = {str(f): [str(p) for p in convert_legacy_folder(f)] for f in folders}
    if json_out:
        sys.stdout.write(json.dumps({"converted": done}, indent=2) + "\n")
        return
    for f, written in done.items():
        _err.print(f"{f}: {len(written)} file(s) converted, digests recorded in model.json", highlight=False)
