"""Rolling-origin backtest (DESIGN.md §6), as a library function.

The series is split once: the first `train_fraction` of the grid trains the
LSTM and fits the baselines; every origin of the rest is then forecast, one
origin per step, by every model. Origins are the same for every model: those
whose LSTM window and targets hold no missing value. Errors are reported at
the final horizon step (the headline) and per horizon step.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from . import metrics
from .baselines import BASELINES, make_baseline_model
from .errors import SeriesError, TrainingError
from .model_config import ModelConfig
from .train_options import TrainOptions
from .windowing import WindowSpec, complete, input_windows, target_windows

DAY = 86400.0
ALL_MODELS = ("lstm", "last", "seasonal", "ewm", "linear")
QUANTILES = (0.1, 0.5, 0.9)
VALID_FRACTION = 0.25


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
) -> BacktestResult:
    """Backtest `models` on one series already on a regular grid of `step_seconds`."""
    unknown = [m for m in models if m != "lstm" and m not in BASELINES]
    if unknown:
        raise ValueError(f"unknown model(s) {unknown}; choose from {', '.join(ALL_MODELS)}")
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    if len(values) == 0 or not finite.any():
        raise SeriesError(f"{name}: the series has no numeric values")
    n = len(values)
    cut = int(n * train_fraction)
    span = float(times[cut - 1] - times[0]) if cut > 1 else 0.0
    config = config or default_lstm_config(cut, step_seconds, horizon_steps, span)
    spec = WindowSpec(config.lookback, horizon_steps)
    need = max(config.lookback, _max_min_history(models, step_seconds, horizon_steps, span))
    first = max(cut - 1, need - 1)
    at = np.arange(first, n - horizon_steps)
    at = complete(values, at, spec) if at.size else at
    if at.size < 2:
        raise SeriesError(
            f"{name}: {n} steps leave no complete test origin after the first {train_fraction:.0%} "
            f"(lookback {config.lookback}, horizon {horizon_steps}); give a longer series or a larger --step"
        )
    truth = target_windows(values, at, horizon_steps)[:, :, 0]
    train_vals = values[:cut]
    results: dict[str, ModelResult] = {}
    lstm_info: dict = {}
    for model in models:
        if model == "lstm":
            pred, lstm_info = _lstm(times, values, cut, at, config, options)
        else:
            baseline = make_baseline_model(model, step_seconds=step_seconds, horizon=horizon_steps, quantiles=QUANTILES)
            if hasattr(baseline, "choose_period"):
                baseline.choose_period(span)
            baseline.fit(train_vals[:, None], times[:cut])
            pred = baseline.predict_origins(values[:, None], times, at)[..., 0]
        if pred is None:
            results[model] = ModelResult(model, None, {"skipped": lstm_info.get("error", "not available")})
            continue
        results[model] = ModelResult(model, pred, score(values, train_vals, at, truth, pred, step_seconds))
    return BacktestResult(name, step_seconds, horizon_steps, train_fraction, QUANTILES, times, values, at, results, lstm_info)


def score(values, train_vals, at, truth, pred, step_seconds) -> dict:
    """Metrics of forecasts pred [N, Q, H] against truth [N, H]."""
    q = list(QUANTILES)
    median, low, high = pred[:, q.index(0.5)], pred[:, 0], pred[:, -1]
    horizon = truth.shape[1]
    scales = [metrics.naive_scale(train_vals, h) for h in range(1, horizon + 1)]
    per_step = {
        "mae": [metrics.mae(truth[:, h], median[:, h]) for h in range(horizon)],
        "smape": [metrics.smape(truth[:, h], median[:, h]) for h in range(horizon)],
        "mase": [metrics.mase(truth[:, h], median[:, h], scales[h]) for h in range(horizon)],
    }
    return {
        "mae": per_step["mae"][-1],
        "smape": per_step["smape"][-1],
        "mase": per_step["mase"][-1],
        "band_coverage": metrics.band_coverage(truth[:, -1], low[:, -1] if q[0] < 0.5 else None, high[:, -1]),
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
    windows = input_windows(values[:, None], at, config.lookback)
    pred = model.predict_windows(windows, times[at])[..., 0]
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
