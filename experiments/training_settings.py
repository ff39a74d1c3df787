"""Learning curves of several training settings side by side: score against samples and against wall time.

    python experiments/training_settings.py "SB3 defaults=runs/old-s0,runs/old-s1,runs/old-s2" \\
        "16 envs, batch 512, 4 epochs=runs/new-s0,runs/new-s1,runs/new-s2" --out docs/figures/training_settings.png

Each ``LABEL=RUN[,RUN...]`` names the folders written by ``clustergym train`` with ``--eval-every``
(their ``eval.csv``) for one setting: training seeds of it; every run must train on the same task.
Left: the learned policy's mean evaluation score against environment steps (sample efficiency), with
the shaded 95% Student-t interval of the mean (``clustergym.training.curves.curve_data``): over the
setting's training seeds when it has several runs, over the evaluation seeds of its one run
otherwise (which leaves out the seed-to-seed variation of training); right: against training wall
time (what a CPU budget buys; the first run of each setting).  The baselines evaluated beside the
first setting's runs are dashed lines.  Prints the curves as a table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from clustergym.errors import ConfigError
from clustergym.runner.metric_info import metric_info
from clustergym.training.curves import curve_data, load_curves


def _draw_setting(axes: Any, label: str, folders: list[str], colour: str) -> tuple[dict[str, Any], str]:
    """One setting's curves on both panels; returns its :func:`curve_data` and the metric."""
    curves, metric = load_curves(folders)
    d = curve_data(curves, metric)
    m, first = d["mean"], d["per_run"][d["per_run"]["run"] == d["per_run"]["run"].iloc[0]]
    over = m["interval_over"].iloc[0]
    axes[0].plot(
        m["step"], m["value"], marker="o", markersize=3, color=colour, label=f"{label} ({len(folders)} run(s))"
    )
    axes[0].fill_between(m["step"], m["ci_low"], m["ci_high"], color=colour, alpha=0.15, linewidth=0)
    axes[1].plot(first["wall_seconds"], first["value"], marker="o", markersize=3, color=colour)
    print(
        f"{label} (95% interval over {over}): "
        + ", ".join(f"{r.step}: {r.value:.3g} [{r.ci_low:.3g}, {r.ci_high:.3g}]" for r in m.itertuples())
    )
    return d, metric


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="LABEL=RUN_FOLDER[,RUN_FOLDER...]")
    ap.add_argument("--out", required=True, type=Path, help="the figure (.png, .svg or .pdf)")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    baselines, metric = None, ""
    for i, spec in enumerate(args.runs):
        label, sep, folders = spec.partition("=")
        if not sep or not folders:
            print(f"error: {spec!r} is not LABEL=RUN_FOLDER[,RUN_FOLDER...]", file=sys.stderr)
            return 2
        try:
            d, metric = _draw_setting(axes, label, folders.split(","), f"C{i}")
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        baselines = d["baselines"] if baselines is None else baselines
    assert baselines is not None
    for j, row in enumerate(baselines.itertuples()):
        for ax in axes:
            ax.axhline(row.value, color="gray", linestyle=("--", ":", "-.")[j % 3], linewidth=1, label=row.agent)
    axes[0].set_xlabel("environment steps (shaded: 95% interval of the mean)")
    axes[1].set_xlabel("training wall time (s), first run of each setting")
    axes[0].set_ylabel(metric_info(metric).axis_label, fontsize=8)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
