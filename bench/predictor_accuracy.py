"""Forecast accuracy of the LSTM against every baseline on every real dev series.

    python -m bench.predictor_accuracy [--only SUBSTRING] [--epochs N] [--json OUT]

For each series: `forescale backtest` semantics (train on the first 70%,
one origin per step over the rest, errors at the final horizon step). The
request traces are binned at 15 s. Prints every series and every model
(MAE, sMAPE, MASE, band coverage, spike precision/recall/lead), then the win
counts and the LSTM/last-value ratio, a pass over copies with injected gaps,
and every goal met or missed. Timing is noisy: the CPUs are shared.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

from bench._predictor_common import dev_series, traces_dir


#: the issue's goals (docs/predictor.md): geometric-mean MAE ratio, band coverage range and share, gap share
GOAL_RATIO = 0.85
GOAL_BAND = (0.75, 0.85)
GOAL_BAND_SHARE = 0.90
GOAL_GAP_LSTM = 0.95


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="only series whose path contains one of these comma-separated strings")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--gap-series", type=int, default=6, help="how many dev series also run with injected gaps")
    parser.add_argument("--json", dest="json_out", default=None, help="also write all results to this JSON file")
    args = parser.parse_args(argv)

    from forescale_predictor.backtest import run_backtest
    from forescale_predictor.errors import PredictorError
    from forescale_predictor.series_input import read_series
    from forescale_predictor.training import TrainOptions

    traces = traces_dir()
    wanted = [w for w in args.only.split(",") if w] or [""]
    series = [p for p in dev_series(traces) if any(w in str(p) for w in wanted)]
    options = TrainOptions(max_epochs=args.epochs, progress=False)
    summary: list[dict] = []
    header = (f"{'series':34s} {'model':9s} {'MAE':>11s} {'sMAPE%':>7s} {'MASE':>6s} {'band':>5s} {'raw':>5s} "
              f"{'spkP':>5s} {'spkR':>5s} {'lead':>5s}")
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
                                  name=str(path.relative_to(traces)), options=options)
        except PredictorError as exc:
            print(f"{path.stem[:34]:34s} error: {exc}", flush=True)
            continue
        for note in notes:
            print(f"{path.stem[:34]:34s} note: {note.split(': ', 1)[-1]}")
        entry = _entry(result, kind, step, time.monotonic() - t0)
        entry["diagnosis"] = diagnose(history.features["value"], result.train_fraction, horizon, entry["best_baseline"], entry)
        entry["gaps"] = int((~np.isfinite(history.features["value"])).sum())
        summary.append(entry)
    gap_runs = gap_pass(series[: args.gap_series], traces, options) if args.gap_series else []
    scored = [e for e in summary if e["lstm_vs_best"] is not None]
    wins_best = sum(e["lstm_vs_best"] < 1 for e in scored)
    wins_last = sum(e["lstm_vs_last"] < 1 for e in scored)
    print()
    print(f"LSTM beats the best baseline on {wins_best}/{len(scored)} series; beats the last value on {wins_last}/{len(scored)}")
    print(f"geometric mean MAE ratio  lstm/last = {geo([e['lstm_vs_last'] for e in scored]):.3f}   "
          f"lstm/best baseline = {geo([e['lstm_vs_best'] for e in scored]):.3f}   "
          f"auto (lstm or ewm, chosen online)/best = {geo([e['auto_vs_best'] for e in scored if e['auto_vs_best']]):.3f}")
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
    loop = loop_gap_pass(traces) if args.gap_series else None
    goals(scored, summary, gap_runs, loop)
    print("(timings are noisy: the 2 CPU cores are shared with other work)")
    if args.json_out:
        with open(args.json_out, "w") as handle:
            json.dump({"series": summary, "gaps": gap_runs, "loop": loop}, handle, indent=1, default=float)
    return 0


def geo(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _entry(result, kind, step, seconds) -> dict:
    """Print one series' rows and return its summary."""
    name = result.series.split("/")[-1][:34]
    maes, bands = {}, {}
    for model, res in result.models.items():
        m = res.metrics
        if "mae" not in m:
            print(f"{name:34s} {model:9s} skipped: {m.get('skipped')}")
            continue
        maes[model] = m["mae"]
        band = m["band_coverage"]
        bands[model] = band["achieved"]
        raw = band.get("uncalibrated")
        s = m["spike"]
        print(f"{name:34s} {model:9s} {m['mae']:11.4g} {m['smape']:7.2f} {m['mase']:6.3f} {band['achieved']:5.2f} "
              f"{'' if raw is None else format(raw, '5.2f'):>5s} {s['precision']:5.2f} {s['recall']:5.2f} {s['mean_lead_seconds']:5.0f}")
    baselines = {k: v for k, v in maes.items() if k not in ("lstm", "auto")}
    best_name = min(baselines, key=baselines.get)
    best = baselines[best_name]
    entry = {
        "series": result.series, "kind": kind, "step_seconds": step, "origins": int(len(result.origins)),
        "forecast_by": result.lstm_info.get("forecast_by", {}),
        "seconds": round(seconds, 1), "mae": maes, "band": bands, "best_baseline": best_name,
        "lstm_vs_best": maes["lstm"] / best if "lstm" in maes and best > 0 else None,
        "lstm_vs_last": maes["lstm"] / maes["last"] if "lstm" in maes and maes["last"] > 0 else None,
        "auto_vs_best": maes["auto"] / best if "auto" in maes and best > 0 else None,
        "blend": {k: result.lstm_info.get("validation", {}).get(k) for k in ("shrink", "smooth_weight", "smooth_alpha")},
        "epochs": result.lstm_info.get("epochs"),
        "metrics": {k: v.metrics for k, v in result.models.items()},
    }
    if entry["lstm_vs_best"] is not None:
        print(f"{'':34s} -> lstm/best({best_name}) {entry['lstm_vs_best']:.3f}  lstm/last {entry['lstm_vs_last']:.3f}  "
              f"auto/best {entry['auto_vs_best']:.3f}  [{len(result.origins)} origins, forecast by "
              f"{entry['forecast_by']}, {seconds:.0f} s, blend {entry['blend']['shrink']}/{entry['blend']['smooth_weight']}]",
              flush=True)
    return entry


def inject_gaps(values, seed: int):
    """A copy with missing-scrape runs of 1-12 steps (uniform: a third are past the LSTM's 8-step limit), one run
    starting every ~60 steps, in the training part too."""
    rng = np.random.default_rng(seed)
    out = np.array(values, dtype=float)
    i = 0
    while i < len(out):
        i += int(rng.geometric(1 / 60))
        length = int(rng.integers(1, 13))
        out[i : i + length] = np.nan
        i += length
    return out


def gap_pass(series, traces, options) -> list[dict]:
    """Backtest (LSTM and ewm) on copies of dev series with injected missing scrapes; count who forecast each origin."""
    from forescale_predictor.backtest import run_backtest
    from forescale_predictor.series_input import read_series

    print(f"\nwith injected gaps (missing scrapes: runs of 1-12 steps, one every ~60 steps; {len(series)} series):")
    runs = []
    for k, path in enumerate(series):
        history, _ = read_series(path)
        step = history.step_seconds
        horizon = int(round(max(180.0, 3 * step) / step))
        values = inject_gaps(history.features["value"], k)
        result = run_backtest(history.times, values, step_seconds=step, horizon_steps=horizon, models=("lstm", "ewm"),
                              name=str(path.relative_to(traces)) + " +gaps", options=options)
        by = result.lstm_info.get("forecast_by", {})
        total = sum(by.values())
        m = result.models
        runs.append({"series": result.series, "origins": total, "forecast_by": by,
                     "lstm_share": by.get("lstm", 0) / total if total else None,
                     "missing_steps": int((~np.isfinite(values)).sum()),
                     "lstm_vs_ewm": m["lstm"].metrics["mae"] / m["ewm"].metrics["mae"] if "mae" in m["lstm"].metrics else None,
                     "band": m["lstm"].metrics.get("band_coverage", {}).get("achieved")})
        r = runs[-1]
        print(f"  {path.stem[:34]:34s} {total:5d} origins ({r['missing_steps']} missing steps): lstm {by.get('lstm', 0)}, "
              f"ewm fallback {by.get('ewm', 0)} -> {r['lstm_share']:.1%} by the LSTM; lstm/ewm MAE {r['lstm_vs_ewm']:.3f}, "
              f"band {r['band']:.2f}", flush=True)
    return runs


def loop_gap_pass(traces, mean_per_step: float = 1.0, seed: int = 0) -> dict:
    """The packaged model in the loop (an OnlineForecaster over the growing history, as the operator and the
    replay run it) on two low-rate services: the Azure and Mooncake traces' shapes drawn as Poisson counts
    averaging `mean_per_step` requests per 15 s step, so many steps are idle (rate 0, latency undefined),
    plus injected missing scrapes (runs of 1-12 steps). Counts which model made each forecast."""
    from collections import Counter

    from forescale_predictor import LATENCY_MS, RATE, History, load_forecaster
    from forescale_predictor.online_forecaster import OnlineForecaster
    from forescale_predictor.request_traces import load_azure_trace, load_mooncake_trace

    rng = np.random.default_rng(seed)
    lstm = load_forecaster()
    counts: Counter = Counter()
    idle = missing = steps = 0
    for k, raw in enumerate((load_azure_trace(traces / "azure-llm-2023" / "AzureLLMInferenceTrace_conv.csv", 15.0),
                             load_mooncake_trace(traces / "mooncake" / "conversation_trace.jsonl", 15.0))):
        shape = np.nan_to_num(raw.values) / max(float(np.nanmean(raw.values)), 1e-9)
        n_req = rng.poisson(shape * mean_per_step)
        rate = n_req / 15.0
        latency = np.where(n_req > 0, 150.0 * rng.lognormal(0.0, 0.25, len(n_req)), np.nan)
        scrape = inject_gaps(np.ones(len(rate)), 100 + k)
        rate, latency = np.where(np.isfinite(scrape), rate, np.nan), np.where(np.isfinite(scrape), latency, np.nan)
        idle += int(((n_req == 0) & np.isfinite(scrape)).sum())
        missing += int((~np.isfinite(scrape)).sum())
        steps += len(rate)
        online = OnlineForecaster(lstm)
        times = 1_700_000_000.0 + 15.0 * np.arange(len(rate))
        for i in range(lstm.config.lookback - 1, len(rate)):
            lo = max(0, i - 239)
            f = online.forecast(History(15.0, times[lo : i + 1], {LATENCY_MS: latency[lo : i + 1], RATE: rate[lo : i + 1]}))
            counts[f.model + (" (fallback)" if f.fallback_reason else "")] += 1
    total = sum(counts.values())
    print(f"\nin the loop (packaged model, OnlineForecaster), two low-rate services from the Azure and Mooncake shapes: "
          f"{steps} steps, {idle} idle (no request: latency undefined), {missing} missing scrapes; "
          f"{total} forecasts: {dict(counts)}")
    return {"forecasts": total, "by_model": dict(counts), "idle_steps": idle, "missing_steps": missing, "steps": steps}


def goals(scored: list[dict], summary: list[dict], gap_runs: list[dict], loop: dict | None = None) -> None:
    """Every goal of the issue, met or missed, with the measured figure."""
    print("\nGOALS")
    ratio = geo([e["lstm_vs_best"] for e in scored])
    _goal(f"LSTM vs best baseline, geometric-mean MAE ratio at the horizon ({len(scored)} series)", f"{ratio:.3f}",
          f"<= {GOAL_RATIO}", ratio <= GOAL_RATIO)
    lo, hi = GOAL_BAND
    bands = [e["band"].get("lstm") for e in summary if e["band"].get("lstm") is not None]
    inside = sum(lo <= b <= hi for b in bands)
    share = inside / len(bands) if bands else 0.0
    _goal(f"LSTM band q0.1-q0.9 coverage within {lo}-{hi} (online ACI)", f"{inside}/{len(bands)} series ({share:.0%})",
          f">= {GOAL_BAND_SHARE:.0%} of series", share >= GOAL_BAND_SHARE)
    outside = [f"{e['series'].split('/')[-1]} {e['band']['lstm']:.3f}" for e in summary
               if e["band"].get("lstm") is not None and not lo <= e["band"]["lstm"] <= hi]
    if outside:
        print(f"      outside: {', '.join(outside)}")
    natural = [e for e in summary if e.get("gaps")]
    origins = sum(sum(e["forecast_by"].values()) for e in natural) + sum(r["origins"] for r in gap_runs)
    by_lstm = sum(e["forecast_by"].get("lstm", 0) for e in natural) + sum(r["forecast_by"].get("lstm", 0) for r in gap_runs)
    if origins:
        share = by_lstm / origins
        _goal(f"origins forecast by the LSTM on series with gaps ({len(natural)} with their own, {len(gap_runs)} injected)",
              f"{by_lstm}/{origins} ({share:.1%})", f">= {GOAL_GAP_LSTM:.0%}", share >= GOAL_GAP_LSTM)
    else:
        print("  [skip] origins forecast by the LSTM on series with gaps: no series with gaps was run")
    if loop and loop["forecasts"]:
        # a forecast labelled "(fallback)" is one the LSTM could not make (gap or short history); plain "ewm" is
        # model selection preferring the baseline on its rolling horizon MAE, which the LSTM could have made
        fallbacks = sum(v for k, v in loop["by_model"].items() if "(fallback)" in k)
        share = 1 - fallbacks / loop["forecasts"]
        _goal("forecasts the LSTM could make in the loop on idle + gappy low-rate services",
              f"{loop['forecasts'] - fallbacks}/{loop['forecasts']} ({share:.1%}); chosen for "
              f"{loop['by_model'].get('lstm', 0)} ({loop['by_model']})", f">= {GOAL_GAP_LSTM:.0%}", share >= GOAL_GAP_LSTM)


def _goal(what: str, measured: str, target: str, met: bool) -> None:
    print(f"  [{'MET ' if met else 'MISS'}] {what}: {measured} (goal {target})")


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
