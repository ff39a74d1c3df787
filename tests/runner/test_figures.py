"""Figure data and comparison statistics: intervals inside the metric's bounds, oracle agents
flagged, multiple-comparison corrections applied (the numbers figures draw, not pixels)."""

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

from clustergym.errors import ConfigError
from clustergym.runner.figures import figure_data, plot_agents, plot_paired, plot_sweep, save_figure
from clustergym.runner.metric_info import metric_info
from clustergym.runner.stats import adjust_p_values, bounded_ci, mean_ci, summarize, summary_long

matplotlib.use("Agg")


def _rows(agents, seeds=4, zetas=(None,), seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for z in zetas:
        for name, mu, oracle in agents:
            for s in range(seeds):
                row = {
                    "agent": name,
                    "seed": s,
                    "unstable": False,
                    "uses_oracle": oracle,
                    "mean_queue_length": max(0.0, mu + rng.normal(0, 0.6)),
                    "utilization": 0.5,
                }
                if z is not None:
                    row["zeta"] = z
                rows.append(row)
    return pd.DataFrame(rows)


AGENTS = [("ref", 1.0, False), ("close", 1.1, False), ("tiny", 0.05, True), ("far", 4.0, False)]


def test_bounded_ci_is_the_t_interval_cut_at_the_bounds():
    v = [0.0, 0.0, 0.3]
    mean, half = mean_ci(v)
    m, lo, hi = bounded_ci(v, 0.0)
    assert (m, hi) == (mean, mean + half) and mean - half < 0 and lo == 0.0
    assert math.isnan(bounded_ci([1.0], 0.0)[1])


def test_summary_intervals_stay_within_the_metric_bounds_and_flag_oracles():
    s = summarize(_rows(AGENTS), ["mean_queue_length"], reference="ref")
    info = metric_info("mean_queue_length")
    assert info.lower == 0.0 and info.lower_is_better
    assert (s["mean_queue_length_lo"] >= 0).all()
    # the unbounded Student-t interval of the near-zero agent would go below 0
    tiny = s.set_index("agent").loc["tiny"]
    assert tiny["mean_queue_length"] - tiny["mean_queue_length_ci95"] < 0 == tiny["mean_queue_length_lo"]
    assert s.set_index("agent")["uses_oracle"].to_dict() == {a: o for a, _, o in AGENTS}
    d = figure_data(s, "mean_queue_length")
    assert list(d["agent"]) == ["tiny", "ref", "close", "far"]  # best (lowest) first
    assert ((d["lo"] <= d["mean"]) & (d["mean"] <= d["hi"]) & (d["lo"] >= 0)).all()
    assert d.set_index("agent").loc["tiny", "uses_oracle"]


def test_holm_matches_its_definition_and_bh_scipys():
    p = np.array([0.01, 0.04, 0.03, math.nan, 0.2])
    assert np.allclose(adjust_p_values(p, "holm"), [0.04, 0.09, 0.09, math.nan, 0.2], equal_nan=True)
    from scipy.stats import false_discovery_control

    assert np.allclose(adjust_p_values(p[[0, 1, 2, 4]], "bh"), false_discovery_control(p[[0, 1, 2, 4]]))
    assert np.array_equal(adjust_p_values([0.5, 0.01], "none"), [0.5, 0.01])
    with pytest.raises(ConfigError, match="p_adjust"):
        adjust_p_values([0.1], "bonferroni-ish")


def test_paired_p_values_are_adjusted_over_the_agents_compared():
    s = summarize(_rows(AGENTS), ["mean_queue_length"], reference="ref", p_adjust="holm")
    others = s[s["agent"] != "ref"]
    raw = others["mean_queue_length_diff_p"].to_numpy()
    assert np.allclose(others["mean_queue_length_diff_p_adj"], adjust_p_values(raw, "holm"))
    assert (others["mean_queue_length_diff_p_adj"] >= raw).all() and s.attrs["p_adjust"] == "holm"
    assert s.set_index("agent").loc["far", "mean_queue_length_diff_p_adj"] < 0.05
    paired = figure_data(s, "mean_queue_length", kind="paired")
    assert "ref" not in set(paired["agent"]) and list(paired["agent"])[0] == "tiny"


def test_sweep_figure_dodges_agents_and_keeps_bounds():
    s = summarize(_rows(AGENTS, zetas=(0.8, 0.9)), ["mean_queue_length"], reference="ref", by="zeta")
    d = figure_data(s, "mean_queue_length", kind="sweep", param="zeta")
    for _, grp in d.groupby("zeta"):
        assert grp["x"].is_unique and (abs(grp["x"] - grp["zeta"]) < 0.05).all()
    assert (d["lo"] >= 0).all()
    # p-values adjusted within each swept value
    for _, grp in s.groupby("zeta"):
        g = grp[grp["agent"] != "ref"]
        assert np.allclose(g["mean_queue_length_diff_p_adj"], adjust_p_values(g["mean_queue_length_diff_p"]))


def test_summary_long_has_one_row_per_agent_and_metric():
    s = summarize(_rows(AGENTS), ["mean_queue_length", "utilization"], reference="ref")
    long = summary_long(s, ["mean_queue_length", "utilization"])
    assert len(long) == 2 * len(AGENTS) and set(long["metric"]) == {"mean_queue_length", "utilization"}
    row = long[(long["agent"] == "far") & (long["metric"] == "mean_queue_length")].iloc[0]
    assert row["mean"] == s.set_index("agent").loc["far", "mean_queue_length"]


def test_figures_render_many_agents_in_three_formats(tmp_path):
    import matplotlib.pyplot as plt

    many = [(f"agent-{i}", 1 + i / 10, i % 3 == 0) for i in range(40)]
    s = summarize(_rows(many, seeds=3), ["mean_queue_length"], reference="agent-0")
    fig, axes = plt.subplots(1, 2, figsize=(12, 12))
    plot_agents(s, "mean_queue_length", ax=axes[0])
    plot_paired(s, "mean_queue_length", "agent-0", ax=axes[1])
    assert len(axes[0].get_yticklabels()) == 40 and "lower is better" in axes[0].get_xlabel()
    paths = save_figure(fig, tmp_path / "many")
    plt.close(fig)
    assert [p.suffix for p in paths] == [".png", ".svg", ".pdf"] and all(p.stat().st_size > 0 for p in paths)
    ax = plot_sweep(
        summarize(_rows(AGENTS, zetas=(0.8, 0.9)), ["mean_queue_length"], by="zeta"), "zeta", "mean_queue_length"
    )
    assert ax.get_yscale() == "linear"  # intervals reach 0: no log axis
    assert any("(oracle)" in t.get_text() for t in ax.get_legend().get_texts())
    plt.close("all")


def test_slotted_agents_on_continuous_arrivals_are_marked():
    """A slotted-time agent (BF-J/S paper, one decision per slot) on continuous Poisson arrivals is
    flagged in the rows, the summary and the figures; on its own slotted scenario it is not."""
    import matplotlib.pyplot as plt

    from clustergym.runner import compare
    from clustergym.runner.figures import SLOTTED_MARK

    rows = compare("bf-trap", ["best-fit", "bf-j"], seeds=range(2), horizon=20)
    flags = rows.groupby("agent")["slotted_on_continuous"].all().to_dict()
    assert flags == {"best-fit": False, "bf-j": True}
    s = summarize(rows, ["mean_queue_length"], reference="best-fit")
    d = figure_data(s, "mean_queue_length").set_index("agent")
    assert d.loc["bf-j", "label"] == f"bf-j {SLOTTED_MARK}" and d.loc["best-fit", "label"] == "best-fit"
    ax = plot_agents(s, "mean_queue_length")
    assert f"bf-j {SLOTTED_MARK}" in [t.get_text() for t in ax.get_yticklabels()]
    assert any(SLOTTED_MARK in t.get_text() for t in ax.get_legend().get_texts())
    plt.close("all")
    own = compare("two-sizes", ["bf-j"], seeds=range(1), horizon=20)
    assert not own["slotted_on_continuous"].any()


def test_agents_spanning_decades_are_drawn_on_a_log_axis(monkeypatch):
    """36 agents on bf-trap: a few unstable ones have queues 100x the rest, which a linear axis squashes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import clustergym.runner.figures as figures

    def data(means):
        n = len(means)
        return pd.DataFrame(
            {
                "agent": [f"a{i}" for i in range(n)],
                "label": [f"a{i}" for i in range(n)],
                "mean": means,
                "lo": [m - abs(m) * 0.1 for m in means],
                "hi": [m + abs(m) * 0.1 for m in means],
                "uses_oracle": [i % 2 == 0 for i in range(n)],
                "slotted": [False] * n,
            }
        )

    for means, scale in (([0.5, 2.0, 400.0], "log"), ([0.5, 2.0, 10.0], "linear"), ([-1.0, 2.0, 400.0], "linear")):
        monkeypatch.setattr(figures, "figure_data", lambda *a, m=means, **k: data(m))
        ax = plot_agents(pd.DataFrame(), "mean_queue_length")
        assert ax.get_xscale() == scale and ("log scale" in ax.get_xlabel()) == (scale == "log")
        assert any(bar.get_hatch() for bar in ax.patches)  # the oracle hatching is drawn either way
        plt.close("all")
