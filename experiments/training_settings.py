"""Learning curves of several training settings side by side: score against samples and against wall time.

    python experiments/training_settings.py "SB3 defaults=runs/old" "16 envs, batch 512, 4 epochs=runs/new" \\
        --out docs/figures/training_settings.png

Each ``LABEL=RUN`` is a folder written by ``clustergym train`` with ``--eval-every`` (its ``eval.csv``);
the runs must train on the same task.  Left: the learned policy's mean evaluation score against
environment steps (sample efficiency); right: against training wall time (what a CPU budget buys).
The baselines evaluated beside the first run are dashed lines.  Prints the curves as a table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clustergym.errors import ConfigError
from clustergym.training.curves import curve_data, load_curves


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="LABEL=RUN_FOLDER")
    ap.add_argument("--out", required=True, type=Path, help="the figure (.png, .svg or .pdf)")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    baselines = None
    for i, spec in enumerate(args.runs):
        label, sep, folder = spec.partition("=")
        if not sep:
            print(f"error: {spec!r} is not LABEL=RUN_FOLDER", file=sys.stderr)
            return 2
        try:
            curves, metric = load_curves([folder])
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        d = curve_data(curves, metric)
        run = d["per_run"]
        for ax, x in zip(axes, ("step", "wall_seconds")):
            ax.plot(run[x], run["value"], marker="o", markersize=3, color=f"C{i}", label=label)
        print(f"{label}: " + ", ".join(f"{r.step}: {r.value:.3g} ({r.wall_seconds:.0f} s)" for r in run.itertuples()))
        if baselines is None:
            baselines = d["baselines"]
    assert baselines is not None
    for j, row in enumerate(baselines.itertuples()):
        for ax in axes:
            ax.axhline(row.value, color="gray", linestyle=("--", ":", "-.")[j % 3], linewidth=1, label=row.agent)
    axes[0].set_xlabel("environment steps")
    axes[1].set_xlabel("training wall time (s)")
    axes[0].set_ylabel(metric)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
