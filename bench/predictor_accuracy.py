"""Forecast accuracy of the LSTM against every baseline on every real dev series.

    python -m bench.predictor_accuracy [--only SUBSTRING] [--epochs N] [--json OUT]

For each series: `forescale backtest` semantics (train on the first 70%,
one origin per step over the rest, errors at the final horizon step). The
request traces are binned at 15 s. Prints every series and every model
(MAE, sMAPE, MASE, band coverage, spike precision/recall/lead), then the win
counts and the LSTM/last-value ratio. Timing is noisy: the CPUs are shared.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from bench._predictor_common import dev_series, traces_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="only series whose path contains one of these comma-separated strings")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--json", dest="json_out", default=None, help="also write all results to this JSON file")
    args = parser.parse_args(argv)

    from forescale_predictor.backtest import run_backtest
    from forescale_predictor.errors import PredictorError
    from forescale_predictor.series_input import read_series
    from forescale_predictor.training import TrainOptions

    traces = traces_dir()
    wanted = [w for w in args.only.split(",") if w] or [""]
    series = [p for p in dev_series(traces) if any(w in str(p) for w in wanted)]
    summary: list[dict] = []
    header = f"{'series':34s} {'model':9s} {'MAE':>11s} {'sMAPE%':>7s} {'MASE':>6s} {'band':>5s} {'spkP':>5s} {'spkR':>5s} {'lead':>5s}"
    print(header)
    print("-" * len(header))
    for path in series:
        t0 = time.monotonic()
        notes: list[str] = []
        try:
            history, kind = read_series(path, warnings=notes)
            step = history.step_seconds
            horizon = int(round(max(180.0, 3 * step) / step))
            result = run_backtest(history.times, history.features["value"], step_seconds=step, horizon_steps=horizon,
                                  name=str(path.relative_to(traces)), options=TrainOptions(max_epochs=args.epochs, progress=False))
        except PredictorError as exc:
            print(f"{path.stem[:34]:34s} error: {exc}", flush=True)
            continue
        for note in notes:
            print(f"{path.stem[:34]:34s} note: {note.split(': ', 1)[-1]}")
        seconds = time.monotonic() - t0
        name = path.stem[:34]
        maes = {}
        for model, res in result.models.items():
            m = res.metrics
            if "mae" not in m:
                print(f"{name:34s} {model:9s} skipped: {m.get('skipped')}")
                continue
            maes[model] = m["mae"]
            s = m["spike"]
            print(f"{name:34s} {model:9s} {m['mae']:11.4g} {m['smape']:7.2f} {m['mase']:6.3f} {m['band_coverage']:5.2f} "
                  f"{s['precision']:5.2f} {s['recall']:5.2f} {s['mean_lead_seconds']:5.0f}")
        baselines = {k: v for k, v in maes.items() if k != "lstm"}
        best_name = min(baselines, key=baselines.get)
        entry = {
            "series": result.series, "kind": kind, "step_seconds": step, "origins": int(len(result.origins)),
            "seconds": round(seconds, 1), "mae": maes, "best_baseline": best_name,
            "lstm_vs_best": maes["lstm"] / baselines[best_name] if "lstm" in maes and baselines[best_name] > 0 else None,
            "lstm_vs_last": maes["lstm"] / maes["last"] if "lstm" in maes and maes["last"] > 0 else None,
            "blend": {k: result.lstm_info.get("validation", {}).get(k) for k in ("shrink", "smooth_weight", "smooth_alpha")},
            "epochs": result.lstm_info.get("epochs"),
            "metrics": {k: v.metrics for k, v in result.models.items()},
        }
        entry["diagnosis"] = diagnose(history.features["value"], result.train_fraction, horizon, best_name, entry)
        summary.append(entry)
        ratio = entry["lstm_vs_best"]
        print(f"{'':34s} -> lstm/best({best_name}) {ratio:.3f}  lstm/last {entry['lstm_vs_last']:.3f}  "
              f"[{len(result.origins)} origins, {seconds:.0f} s, blend {entry['blend']['shrink']}/{entry['blend']['smooth_weight']}]",
              flush=True)
    scored = [e for e in summary if e["lstm_vs_best"] is not None]
    wins_best = sum(e["lstm_vs_best"] < 1 for e in scored)
    wins_last = sum(e["lstm_vs_last"] < 1 for e in scored)
    geo = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")  # noqa: E731
    print()
    print(f"LSTM beats the best baseline on {wins_best}/{len(scored)} series; beats the last value on {wins_last}/{len(scored)}")
    print(f"geometric mean MAE ratio  lstm/last = {geo([e['lstm_vs_last'] for e in scored]):.3f}   "
          f"lstm/best baseline = {geo([e['lstm_vs_best'] for e in scored]):.3f}")
    groups: dict[str, list] = {}
    for e in scored:
        groups.setdefault(e["series"].split("/")[1] if "/" in e["series"] else e["series"], []).append(e)
    for group, items in groups.items():
        print(f"  {group:36s} n={len(items):2d}  wins vs best {sum(i['lstm_vs_best'] < 1 for i in items):2d}  "
              f"lstm/last {geo([i['lstm_vs_last'] for i in items]):.3f}  lstm/best {geo([i['lstm_vs_best'] for i in items]):.3f}")
    losers = [e for e in scored if e["lstm_vs_best"] >= 1]
    if losers:
        print("\nWhere the LSTM does not beat the best baseline, and the likely reason:")
        for e in losers:
            print(f"  {e['series']:62s} {e['lstm_vs_best']:.3f} vs {e['best_baseline']:8s} {e['diagnosis']}")
    print("(timings are noisy: the 2 CPU cores are shared with other work)")
    if args.json_out:
        with open(args.json_out, "w") as handle:
            json.dump(summary, handle, indent=1, default=float)
    return 0


def diagnose(values, train_fraction: float, horizon: int, best: str, entry: dict) -> str:
    """A one-line, measured reason why a series is hard for the LSTM (printed for the losers)."""
    import numpy as np

    v = np.asarray(values, dtype=float)
    cut = int(len(v) * train_fraction)
    moves = lambda x: float(np.nanmean(np.abs(x[horizon:] - x[:-horizon])))  # noqa: E731
    shift = moves(v[:cut]) / max(moves(v[cut:]), 1e-12)
    notes = []
    if shift > 2 or shift < 0.5:
        notes.append(f"regime change: {horizon}-step moves are {shift:.1f}x as large in training as in the test part")
    mae = entry["mae"]
    if best == "ewm" and mae.get("last", 0) > 0:
        notes.append(f"noise-dominated: smoothing beats the last value by {1 - mae['ewm'] / mae['last']:.0%}")
    if best == "seasonal":
        notes.append("a daily pattern the window cannot see in full")
    if entry["origins"] < 100:
        notes.append(f"only {entry['origins']} test origins: the difference is within noise")
    if not notes:
        notes.append(f"within {abs(entry['lstm_vs_best'] - 1):.1%} of the best baseline" if entry["lstm_vs_best"] < 1.05
                     else "the validation split chose a blend that did not carry over to the test part")
    return "; ".join(notes)


if __name__ == "__main__":
    sys.exit(main())
