"""`--plot`: rate, latency, replicas and weights over time, one column per policy, one y scale per row."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import SimError
from .metrics import WINDOW_SECONDS
from .session import ReplayResult


def plot_replay(result: ReplayResult, out: str | Path) -> Path:
    """Draw the replay to a PNG at `out` (matplotlib, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    if out.parent and not out.parent.exists():
        raise SimError(f"--plot: folder {out.parent} does not exist")
    fig = draw_replay(result)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def draw_replay(result: ReplayResult):
    """The replay's figure: a row per quantity, a column per policy."""
    import matplotlib.pyplot as plt

    runs = result.runs
    # One y scale per row: the policies are compared by eye across a row (latency, pods, weight).
    fig, axes = plt.subplots(4, len(runs), figsize=(3.6 * len(runs), 9), sharex=True, sharey="row", squeeze=False)
    for col, (name, run) in enumerate(runs.items()):
        rec = run.recorder
        t_min = np.arange(rec.ticks) / 60.0
        w_min = (np.arange(run.window_latency_ms.size) + 0.5) * WINDOW_SECONDS / 60.0
        rate = np.convolve(rec.arrivals.sum(0), np.ones(10) / 10, "same")
        axes[0, col].plot(t_min, rate, lw=0.7)
        axes[0, col].set_title(name)
        lat = np.minimum(run.window_latency_ms, 4 * result.slo_ms)
        axes[1, col].plot(w_min, lat, lw=0.7, color="tab:orange")
        axes[1, col].axhline(result.slo_ms, color="red", lw=0.8, ls="--")
        over = np.flatnonzero(run.windows_over)
        axes[1, col].scatter(w_min[over], lat[over], s=4, color="red")
        axes[2, col].step(t_min, rec.replicas[0], lw=0.8, label="A replicas")
        axes[2, col].step(t_min, rec.ready[0], lw=0.6, ls=":", label="A ready")
        axes[2, col].step(t_min, rec.replicas[1], lw=0.8, label="B replicas")
        axes[3, col].step(t_min, rec.weight_b, lw=0.8, color="tab:green")
        axes[3, col].set_ylim(-5, 105)
        for inc in result.incidents:
            for ax in axes[:, col]:
                ax.axvspan(inc.start / 60.0, (inc.start + max(inc.seconds, 10)) / 60.0, color="grey", alpha=0.15)
        axes[3, col].set_xlabel("minutes")
    axes[0, 0].set_ylabel("req/s (10 s mean)")
    axes[1, 0].set_ylabel(f"p{result.options.quantile * 100:g} latency ms\n(10 s windows)")
    axes[2, 0].set_ylabel("pods")
    axes[2, 0].legend(fontsize=7)
    axes[3, 0].set_ylabel("weight B %")
    fig.suptitle(f"{Path(result.trace.name).name}: SLO {result.slo_ms:g} ms, grey = incident", fontsize=10)
    fig.tight_layout()
    return fig
