"""Rolling-origin backtest, as a library function.

The series is split once: the first `train_fraction` of the grid trains the
LSTM and fits the baselines; every origin of the rest is then forecast, one
origin per step, by every model. Every origin counts: gaps are carried
forward (causally) and the LSTM reads its observed-indicator channel; the
origins it cannot forecast (a gap past gaps.MAX_MISSING_STEPS) get its `ewm`
fallback, and `forecast_by` says how many each made. Errors are reported at
the final horizon step (the headline) and per horizon step, on the origins
whose outcome was observed. Each model's band is calibrated online by ACI
(`band_coverage`: nominal, achieved, uncalibrated); `auto` is the loop's
pick between the LSTM and `ewm` at each origin.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from . import metrics
from .baselines import BASELINES, make_baseline_model
from .conformal import calibrate_backtest
from .errors import SeriesError, TrainingError
from .gaps import carry_forward, window_ok
from .model_selection import select_backtest
from .model_config import ModelConfig
from .train_options import TrainOptions
from .windowing import input_windows, target_windows

DAY = 86400.0
#: the models a backtest runs by default: the LSTM and the four baselines its accuracy goal is measured against
ALL_MODELS = ("lstm", "last", "seasonal", "ewm", "linear")
#: every model a backtest accepts: the defaults and `cycle`, the loop's rival (baselines/cycle.py)
MODELS = ("lstm", *BASELINES)
QUANTILES = (0.1, 0.5, 0.9)
VALID_FRACTION = 0.25
#: the q0.1-q0.9 band's nominal share
NOMINAL_COVERAGE = 0.8
#: what forecasts an origin the LSTM cannot (a gap longer than gaps.MAX_MISSING_STEPS), and its rival in `auto`
FALLBACK = "ewm"
#: the loop's pick between the LSTM and FALLBACK, origin by origin (model_selection.py)
AUTO = "auto"
#: training-part origins whose errors seed each model's band calibration
SEED_ORIGINS = 300


@dataclass
class ModelResult:
    """One model's forecasts [N, Q, H] and the metrics computed from them."""

    name: str
    predictions: np.ndarray | None
    metrics: dict = field(default_factory=dict)


@dataclass
class BacktestResult:
    series: str
    step_seconds: float
    horizon_steps: int
    train_fraction: float
    quantiles: tuple[float, ...]
    times: np.ndarray
    values: np.ndarray
    origins: np.ndarray
    models: dict[str, ModelResult]
    lstm_info: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """The `forescale backtest --json` object."""
        return {
            "series": self.series,
            "step_seconds": self.step_seconds,
            "horizon_seconds": self.step_seconds * self.horizon_steps,
            "origins": int(len(self.origins)),
            "forecast_by": self.lstm_info.get("forecast_by", {}),
            "train_fraction": self.train_fraction,
            "quantiles": list(self.quantiles),
            "models": {name: r.metrics for name, r in self.models.items()},
            "lstm_training": self.lstm_info,
        }


def default_lstm_config(train_len: int, step_seconds: float, horizon: int, span_seconds: float) -> ModelConfig:
    """The LSTM shape the backtest trains: lookback scaled to the data it has."""
    lookback = int(np.clip(train_len // 10, 12, 48))
    return ModelConfig(
        features=("value",),
        targets=("value",),
        step_seconds=step_seconds,
        lookback=lookback,
        horizon=horizon,
        quantiles=QUANTILES,
        hidden=32,
        ar_steps=min(16, lookback),
        level_steps=4,
        time_features=span_seconds >= 3 * DAY and step_seconds < DAY / 4,
        gap_channels=True,
    )


def run_backtest(
    times: np.ndarray,
    values: np.ndarray,
    *,
    step_seconds: float,
    horizon_steps: int,
    models: Sequence[str] = ALL_MODELS,
    train_fraction: float = 0.7,
    name: str = "series",
    options: TrainOptions = TrainOptions(),
    config: ModelConfig | None = None,
    coverage: float = NOMINAL_COVERAGE,
) -> BacktestResult:
    """Backtest `models` on one series already on a regular grid of `step_seconds`.

    Every origin of the test part is forecast by every model (a gap is data:
    values are carried forward, causally, and the LSTM reads the observed
    indicator); the LSTM's own fallback forecasts the origins it cannot
    (`forecast_by` counts them). Errors are scored where the outcome exists.
    Bands are calibrated online by ACI (conformal.py), seeded with errors from
    the training part only.
    """
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise ValueError(f"unknown model(s) {unknown}; choose from {', '.join(MODELS)}")
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    if len(values) == 0 or not finite.any():
        raise SeriesError(f"{name}: the series has no numeric values")
    n = len(values)
    cut = int(n * train_fraction)
    span = float(times[cut - 1] - times[0]) if cut > 1 else 0.0
    config = config or default_lstm_config(cut, step_seconds, horizon_steps, span)
    need = max(config.lookback, _max_min_history(models, step_seconds, horizon_steps, span))
    filled, observed = carry_forward(values[:, None])
    at = np.arange(max(cut - 1, need - 1), n - horizon_steps)
    at = at[np.isfinite(filled[at, 0])]  # before the first observation there is nothing to forecast from
    truth = target_windows(values, at, horizon_steps)[:, :, 0] if at.size else np.empty((0, horizon_steps))
    if at.size < 2 or np.isfinite(truth[:, -1]).sum() < 2:
        raise SeriesError(
            f"{name}: {n} steps leave no scorable test origin after the first {train_fraction:.0%} "
            f"(lookback {config.lookback}, horizon {horizon_steps}); give a longer series or a larger --step"
        )
    # origins near the end of the training part seed the band calibration (their outcomes lie before the cut)
    seed_at = np.arange(max(need - 1, cut - horizon_steps - SEED_ORIGINS), cut - horizon_steps)
    seed_at = seed_at[np.isfinite(filled[seed_at, 0])] if seed_at.size else seed_at
    both = np.concatenate([seed_at, at])
    train_vals = values[:cut]
    raw: dict[str, np.ndarray | None] = {}
    lstm_info: dict = {}
    for model in models:
        if model == "lstm":
            continue
        baseline = make_baseline_model(model, step_seconds=step_seconds, horizon=horizon_steps, quantiles=QUANTILES)
        if hasattr(baseline, "choose_period"):
            baseline.choose_period(span)
        baseline.fit(filled[:cut], times[:cut])
        raw[model] = baseline.predict_origins(filled, times, both)[..., 0]
    forecast_by: dict[str, int] = {}
    if "lstm" in models:
        pred, lstm_info = _lstm(times, values, cut, both, config, options)
        if pred is not None:
            ok = window_ok(filled, observed, both, config.lookback)
            fallback = raw.get(FALLBACK)
            if fallback is None:
                fallback = _fallback(filled, times, cut, both, step_seconds, horizon_steps)
            pred[~ok] = fallback[~ok]
            tested = ok[len(seed_at):]
            forecast_by = {"lstm": int(tested.sum()), FALLBACK: int((~tested).sum())}
            lstm_info["forecast_by"] = forecast_by
        raw["lstm"] = pred
    seed_truth = target_windows(values, seed_at, horizon_steps)[:, :, 0] if seed_at.size else np.empty((0, horizon_steps))
    results: dict[str, ModelResult] = {}
    for model in models:
        pred = raw.get(model)
        if pred is None:
            results[model] = ModelResult(model, None, {"skipped": lstm_info.get("error", "not available")})
            continue
        seed, test = pred[: len(seed_at)], pred[len(seed_at):]
        calibrated, hits = calibrate_backtest(test, truth, at, horizon_steps, coverage=coverage,
                                              seed=(seed[:, [0, len(QUANTILES) // 2, -1]], seed_truth))
        metrics_ = score(values, train_vals, at, truth, calibrated, step_seconds)
        metrics_["band_coverage"] = {"nominal": coverage, "achieved": _mean(hits[:, -1]),
                                     "uncalibrated": _inside(test, truth[:, -1]),
                                     "achieved_by_step": [_mean(hits[:, k]) for k in range(horizon_steps)]}
        if model == "lstm":
            metrics_["forecast_by"] = forecast_by
        results[model] = ModelResult(model, calibrated, metrics_)
    if "lstm" in results and FALLBACK in results and results["lstm"].predictions is not None:
        results[AUTO] = _auto(results, values, train_vals, at, truth, horizon_steps, step_seconds, coverage)
    return BacktestResult(name, step_seconds, horizon_steps, train_fraction, QUANTILES, times, values, at, results, lstm_info)


def _auto(results, values, train_vals, at, truth, horizon, step_seconds, coverage) -> ModelResult:
    """The loop's choice between the LSTM and its baseline at each origin (model_selection.py), scored."""
    median = len(QUANTILES) // 2
    lstm, base = results["lstm"].predictions, results[FALLBACK].predictions
    errors = {"lstm": np.abs(lstm[:, median, -1] - truth[:, -1]), FALLBACK: np.abs(base[:, median, -1] - truth[:, -1])}
    chosen = select_backtest(errors, at, horizon)
    pred = np.where(chosen[:, None, None] == 0, lstm, base)
    metrics_ = score(values, train_vals, at, truth, pred, step_seconds)
    metrics_["band_coverage"] = {"nominal": coverage, "achieved": _inside(pred, truth[:, -1]),
                                 "achieved_by_step": [_inside(pred, truth[:, k], k) for k in range(horizon)]}
    metrics_["chosen"] = {"lstm": int((chosen == 0).sum()), FALLBACK: int((chosen == 1).sum())}
    return ModelResult(AUTO, pred, metrics_)


def _fallback(filled, times, cut, at, step_seconds, horizon):
    baseline = make_baseline_model(FALLBACK, step_seconds=step_seconds, horizon=horizon, quantiles=QUANTILES)
    baseline.fit(filled[:cut], times[:cut])
    return baseline.predict_origins(filled, times, at)[..., 0]


def _inside(pred: np.ndarray, outcome: np.ndarray, step: int = -1) -> float | None:
    """Share of known outcomes inside one step's [lowest, highest] quantile band (the final step's by default)."""
    known = np.isfinite(outcome)
    if not known.any():
        return None
    return float(((pred[known, 0, step] <= outcome[known]) & (outcome[known] <= pred[known, -1, step])).mean())


def _mean(values: np.ndarray) -> float | None:
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else None


def score(values, train_vals, at, truth, pred, step_seconds) -> dict:
    """Metrics of forecasts pred [N, Q, H] against truth [N, H] (NaN outcomes are left out)."""
    q = list(QUANTILES)
    median, low, high = pred[:, q.index(0.5)], pred[:, 0], pred[:, -1]
    horizon = truth.shape[1]
    scales = [metrics.naive_scale(train_vals, h) for h in range(1, horizon + 1)]
    per_step: dict[str, list] = {"mae": [], "smape": [], "mase": []}
    for h in range(horizon):
        k = np.isfinite(truth[:, h])
        per_step["mae"].append(metrics.mae(truth[k, h], median[k, h]))
        per_step["smape"].append(metrics.smape(truth[k, h], median[k, h]))
        per_step["mase"].append(metrics.mase(truth[k, h], median[k, h], scales[h]))
    k = np.isfinite(truth[:, -1])
    return {
        "mae": per_step["mae"][-1],
        "smape": per_step["smape"][-1],
        "mase": per_step["mase"][-1],
        "origins_scored": int(k.sum()),
        "band_coverage": metrics.band_coverage(truth[k, -1], low[k, -1] if q[0] < 0.5 else None, high[k, -1]),
        "band": [q[0], q[-1]],
        "spike": metrics.spike_scores(values, at, high, step_seconds),
        "per_step": per_step,
    }


def _lstm(times, values, cut, at, config: ModelConfig, options: TrainOptions):
    from .training import Segment, train  # torch is imported only when an LSTM is trained
    # The last quarter of the training part (by time) is validation: early
    # stopping and the blend see enough windows there (on the 30-day hourly
    # series 15% left ~24 windows and a blend that did not carry over).
    # Short series enlarge it further so that some windows exist at all.
    wanted = (config.lookback + config.horizon + 16) / max(cut, 1)
    options = replace(options, valid_fraction=float(np.clip(max(VALID_FRACTION, wanted), 0.0, 0.35)))
    try:
        model = train([Segment(times[:cut], values[:cut, None], "train")], config, options)
    except TrainingError as exc:
        return None, {"error": str(exc)}
    filled, observed = carry_forward(values[:, None])
    # windows that cannot feed the network (checked by the caller) are replaced by the fallback
    safe = np.where(np.isfinite(filled), filled, 0.0)
    windows = input_windows(safe, at, config.lookback) if config.gap_channels else input_windows(values[:, None], at, config.lookback)
    seen = input_windows(observed, at, config.lookback) if config.gap_channels else None
    pred = model.predict_windows(windows, times[at], seen)[..., 0]
    info = {k: v for k, v in model.metadata.items() if k != "loss_history"}
    info.update({"lookback": config.lookback, "time_features": config.time_features, "hidden": config.hidden})
    return pred, info


def _max_min_history(models, step_seconds, horizon, span) -> int:
    need = 1
    for m in models:
        if m in BASELINES:
            b = make_baseline_model(m, step_seconds=step_seconds, horizon=horizon)
            if hasattr(b, "choose_period"):
                b.choose_period(span)
            need = max(need, b.min_history)
    return need
