"""``clustergym curves``: learning curves of training runs, with the baselines."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from clustergym.cli._common import err, format_option, print_json, print_table
from clustergym.errors import ConfigError


def curves_cmd(
    runs: list[Path] = typer.Argument(..., help="training runs (folders or their model.zip): seeds of one method"),
    out_stem: Path = typer.Option(
        ..., "--out", help="the figure's path without suffix (or with .png/.svg/.pdf): PNG, SVG and PDF are written"
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace existing figure files"),
    table_format: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="print one JSON document (the curves' data)"),
) -> None:
    """Learning curves of training runs: evaluation score against steps and wall time, with the baselines."""
    from clustergym.errors import require_extra
    from clustergym.runner.figures import FIGURE_FORMATS
    from clustergym.training.curves import curve_data, load_curves, plot_learning_curves

    stem = out_stem.with_suffix("") if out_stem.suffix in {f".{f}" for f in FIGURE_FORMATS} else out_stem
    targets = [stem.with_name(f"{stem.name}.{fmt}") for fmt in FIGURE_FORMATS]
    if not stem.parent.is_dir():
        raise ConfigError("--out", f"{stem.parent} is not a folder")
    existing = [str(t) for t in targets if t.exists()]
    if existing and not overwrite:
        raise ConfigError("--out", f"{', '.join(existing)} exist; give --overwrite to replace them")
    require_extra("matplotlib", "plot", "clustergym curves")
    curves, metric = load_curves(runs)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from clustergym.runner.journal import atomic_write

    axes = plot_learning_curves(curves, metric)
    fig = axes[0].figure
    fig.tight_layout()
    for path, fmt in zip(targets, FIGURE_FORMATS):

        def draw(tmp: Path, fmt: str = fmt) -> None:
            fig.savefig(tmp, dpi=200, format=fmt, bbox_inches="tight")

        atomic_write(path, draw)
    plt.close(fig)
    data = curve_data(curves, metric)
    if json_out:
        print_json(
            {"metric": metric, "files": [str(t) for t in targets], **{k: v.to_dict("records") for k, v in data.items()}}
        )
        return
    last = data["per_run"].sort_values("step").groupby("run").last().reset_index()
    t = Table(title=f"last evaluation of each run ({metric}, mean over evaluation seeds)")
    for c in ("run", "step", "value"):
        t.add_column(c, justify="left" if c == "run" else "right")
    for r in last.itertuples():
        t.add_row(str(r.run), str(int(r.step)), f"{r.value:.4g}")
    for r in data["baselines"].itertuples():
        t.add_row(f"{r.agent} (baseline)", "", f"{r.value:.4g}")
    print_table(t)
    err.print(f"wrote {', '.join(str(p) for p in targets)}", highlight=False)
