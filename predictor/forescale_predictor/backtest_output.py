"""Write a backtest's predictions CSV, its plot and its human-readable table."""

from __future__ import annotations

import csv
from pathlib import Path

from .backtest import BacktestResult

PREDICTION_HEADER = ["origin", "target_time", "step", "model", "y_true", "y_pred"]


def write_predictions(result: BacktestResult, path: str | Path) -> int:
    """CSV rows `origin,target_time,step,model,y_true,y_pred,q0.1,q0.9...`; returns the row count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    quantiles = list(result.quantiles)
    extra = [f"q{q:g}" for q in quantiles if q != 0.5]
    times, values, at = result.times, result.values, result.origins
    horizon = result.horizon_steps
    rows = 0
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(PREDICTION_HEADER + extra)
        for name, model in result.models.items():
            if model.predictions is None:
                continue
            pred = model.predictions
            for i, o in enumerate(at):
                for h in range(horizon):
                    target = o + h + 1
                    qs = [f"{pred[i, quantiles.index(q), h]:.6g}" for q in quantiles if q != 0.5]
                    writer.writerow([f"{times[o]:.0f}", f"{times[target]:.0f}", h + 1, name, f"{values[target]:.6g}", f"{pred[i, quantiles.index(0.5), h]:.6g}", *qs])
                    rows += 1
    return rows


def write_plot(result: BacktestResult, path: str | Path, models: tuple[str, ...] = ("lstm", "last")) -> None:
    """PNG of the actual series and each model's final-step forecast; the LSTM's quantile band shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    at, h = result.origins, result.horizon_steps
    target = at + h
    x = (result.times[target] - result.times[0]) / 3600.0
    fig, ax = plt.subplots(figsize=(12, 4.5))
    ax.plot(x, result.values[target], color="black", linewidth=1.0, label="actual")
    colours = {"lstm": "tab:blue", "last": "tab:orange", "seasonal": "tab:green", "ewm": "tab:red", "linear": "tab:purple"}
    for name in models:
        model = result.models.get(name)
        if model is None or model.predictions is None:
            continue
        pred = model.predictions
        ax.plot(x, pred[:, list(result.quantiles).index(0.5), -1], color=colours.get(name), linewidth=0.9, label=f"{name} median")
        if name == "lstm":
            ax.fill_between(x, pred[:, 0, -1], pred[:, -1, -1], color=colours["lstm"], alpha=0.2,
                            label=f"lstm band q{result.quantiles[0]:g}-q{result.quantiles[-1]:g}")
    ax.set_xlabel("hours since series start (target time)")
    ax.set_ylabel("value")
    ax.set_title(f"{Path(result.series).name}: forecasts {h * result.step_seconds:g} s ahead")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(result: BacktestResult) -> str:
    """A plain-text table of the headline metrics."""
    lines = [
        f"{result.series}: step {result.step_seconds:g} s, horizon {result.horizon_steps * result.step_seconds:g} s, "
        f"{len(result.origins)} origins after the first {result.train_fraction:.0%}"
        + (f"; forecast by {', '.join(f'{k} {v}' for k, v in result.lstm_info['forecast_by'].items())}"
           if result.lstm_info.get("forecast_by") else ""),
        f"{'model':10s} {'MAE':>12s} {'sMAPE%':>8s} {'MASE':>7s} {'band':>6s} {'raw':>6s} {'spike P':>8s} {'spike R':>8s} {'lead s':>7s}"
        "   (band: q0.1-q0.9 coverage after online calibration, nominal 0.80; raw: before)",
    ]
    for name, model in result.models.items():
        m = model.metrics
        if "mae" not in m:
            lines.append(f"{name:10s} skipped: {m.get('skipped', '')}")
            continue
        s, band = m["spike"], m["band_coverage"]
        raw = band.get("uncalibrated")
        lines.append(
            f"{name:10s} {m['mae']:12.5g} {m['smape']:8.2f} {m['mase']:7.3f} {band['achieved']:6.2f} "
            f"{'' if raw is None else format(raw, '6.2f'):>6s} "
            f"{s['precision']:8.2f} {s['recall']:8.2f} {s['mean_lead_seconds']:7.0f}"
        )
    return "\n".join(lines)

