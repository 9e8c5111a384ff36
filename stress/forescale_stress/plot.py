"""`--plot OUT.png`: latency percentiles against offered and achieved rate,
and latency over time with the fault windows shaded."""

from __future__ import annotations

import numpy as np

from forescale_stress.errors import StressError
from forescale_stress.percentiles import nearest_rank
from forescale_stress.runner import RunResult
from forescale_stress.samples import SampleTable


def _per_second(table: SampleTable, end: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """1 s bins by scheduled time: (bin start, p50, p99 of successes, failures)."""
    edges = np.arange(0.0, max(end, 1.0) + 1.0, 1.0)
    mids, p50, p99, failed = [], [], [], []
    for lo in edges[:-1]:
        lat = table.window(lo, lo + 1.0)
        good = lat[np.isfinite(lat)]
        mids.append(lo)
        p50.append(nearest_rank(good, 0.5) if len(good) else np.nan)
        p99.append(nearest_rank(good, 0.99) if len(good) else np.nan)
        failed.append(int((~np.isfinite(lat)).sum()))
    return np.array(mids), np.array(p50), np.array(p99), np.array(failed)


def write_plot(result: RunResult, report: dict, path: str) -> None:
    """Write the two-panel PNG to `path`; raises StressError if it cannot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import ScalarFormatter

    steps = report["steps"]
    fig, (ax_rate, ax_time) = plt.subplots(2, 1, figsize=(10, 9))
    for key, colour in (("p50_ms", "tab:green"), ("p99_ms", "tab:orange"), ("p999_ms", "tab:red")):
        pts = [(s["rate"], s["achieved_rate"], s[key]) for s in steps if s[key] is not None and not s["during_fault"]]
        if pts:
            offered, achieved, value = zip(*pts)
            ax_rate.plot(offered, value, "o-", color=colour, label=f"{key[:-3]} vs offered")
            # markers only: achieved rates are noisy, and a line through them zigzags
            ax_rate.plot(achieved, value, "s", color=colour, mfc="none", label=f"{key[:-3]} vs achieved")
        # steps inside a fault window say nothing about the knee: shown apart
        hit = [(s["rate"], s[key]) for s in steps if s[key] is not None and s["during_fault"]]
        if hit:
            ax_rate.plot(*zip(*hit), "x", color=colour, label=f"{key[:-3]} in a fault window")
    ax_rate.axhline(report["slo_ms"], color="grey", ls=":", label=f"SLO {report['slo_ms']:g} ms")
    if report["knee_rps"] is not None:
        ax_rate.axvline(report["knee_rps"], color="black", ls="--", lw=0.8, label=f"knee {report['knee_rps']:.1f} rps")
    ax_rate.set_xlabel("rate (requests/s)")
    ax_rate.set_ylabel("latency (ms)")
    ax_rate.set_yscale("log")
    ax_rate.set_title("latency percentiles per step")
    ax_rate.legend(fontsize=7, ncol=2)

    table = SampleTable.of(result.samples)
    t, p50, p99, failed = _per_second(table, result.load_end)
    ax_time.plot(t, p50, color="tab:green", label="p50 (1 s bins)")
    ax_time.plot(t, p99, color="tab:orange", label="p99 (1 s bins)")
    ax_time.set_yscale("log")
    ax_time.set_xlabel("seconds since load start")
    ax_time.set_ylabel("latency (ms)")
    for event in result.faults:
        if event.called_at is None:
            continue
        end = (event.answered_at or event.called_at) + event.spec.seconds
        ax_time.axvspan(event.called_at, max(end, event.called_at + 0.3), color="tab:red", alpha=0.15)
        ax_time.text(event.called_at, 0.98, event.spec.label(), transform=ax_time.get_xaxis_transform(),
                     fontsize=7, va="top", rotation=90)
    for event in result.degradations:
        if event.called_at is not None:
            ax_time.axvline(event.called_at, color="tab:blue", ls="--", lw=1)
            ax_time.text(event.called_at, 0.02, event.spec.label(), transform=ax_time.get_xaxis_transform(),
                         fontsize=7, rotation=90, color="tab:blue")
    rate_ax = ax_time.twinx()
    if steps:
        starts = [s["start_s"] for s in steps] + [result.load_end]
        rates = [s["rate"] for s in steps] + [steps[-1]["rate"]]
        rate_ax.step(starts, rates, where="post", color="grey", lw=1, label="offered rps")
    if failed.any():
        rate_ax.bar(t, failed, width=1.0, align="edge", color="black", alpha=0.3, label="failed / s")
    rate_ax.set_ylabel("requests/s")
    rate_ax.set_ylim(bottom=0)
    lines = ax_time.get_legend_handles_labels()
    more = rate_ax.get_legend_handles_labels()
    ax_time.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="upper left")
    ax_time.set_title("latency over time (faults shaded, degradation actions dashed)")
    for ax in (ax_rate, ax_time):
        ax.yaxis.set_major_formatter(ScalarFormatter())  # 150, not 1.5x10^2, on the log axes
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100)
    except OSError as exc:
        raise StressError(f"cannot write the plot to {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
