"""The LSTM as a Forecaster, with resampling and declared fallbacks.

`forecast(history)` resamples the history to the model's step (the operator
may read every few seconds while the model steps at 15 s), takes the last
`lookback` steps and runs the network. When the history is too short, lacks
a feature the model reads, or has gaps it cannot fill (a gap-channel model
forecasts through idle steps and short runs of missing scrapes: gaps.py), the
forecast comes from the fallback baseline instead, with `model` naming that baseline and
`fallback_reason` saying why. A model trained on one target only (say
latency) gets the other from the fallback baseline, labelled `lstm+ewm`.
A history whose every feature is constant gets the last value (exact, and
labelled so). `forecast_many` runs every usable history through the network
in one batch.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .baseline_forecaster import TARGET_NAMES, BaselineForecaster
from .forecast_types import Forecast, History
from . import gaps
from .history_prep import constant_history, feature_matrix, on_step, raw_matrix, window_problem
from .trained_model import TrainedModel


class LSTMForecaster:
    """Forecaster over a TrainedModel; see the module docstring."""

    name = "lstm"

    def __init__(self, model: TrainedModel, *, fallback: str = "ewm", source: str = "") -> None:
        self.model = model
        self.config = model.config
        self.source = source
        self.fallback = BaselineForecaster(
            fallback,
            step_seconds=self.config.step_seconds,
            horizon_seconds=self.config.horizon_seconds,
            quantiles=self.config.quantiles,
        )
        self.constant = BaselineForecaster(
            "last", step_seconds=self.config.step_seconds, horizon_seconds=self.config.horizon_seconds,
            quantiles=self.config.quantiles,
        )

    @property
    def step_seconds(self) -> float:
        return self.config.step_seconds

    @property
    def horizon_seconds(self) -> float:
        return self.config.horizon_seconds

    @property
    def quantiles(self) -> tuple[float, ...]:
        return self.config.quantiles

    @property
    def metadata(self) -> dict:
        return self.model.metadata

    def forecast(self, history: History) -> Forecast:
        """Forecast the model's horizon after the last sample of `history`."""
        return self.forecast_many([history])[0]

    def forecast_many(self, histories: Sequence[History]) -> list[Forecast]:
        """Forecast every history; usable ones go through the network in one batch.

        Raises SeriesError for a history that is empty, unordered or all NaN
        (nothing can forecast it); every other problem is a declared fallback.
        """
        results: list[Forecast | None] = [None] * len(histories)
        windows, seen, times, slots = [], [], [], []
        lookback = self.config.lookback
        for i, raw in enumerate(histories):
            history = on_step(raw, self.step_seconds)
            values = raw_matrix(history, self.config.features)
            constant = constant_history(values, self.config.features)
            if constant is not None:
                results[i] = self.constant.forecast(history, reason=constant)
                continue
            if self.config.gap_channels:
                if len(values) >= lookback and np.isfinite(values[-lookback:]).all():
                    problem, mask = None, np.ones((lookback, len(self.config.features)))  # no gap: the fast path
                else:
                    problem = gaps.window_problem(values, self.config.features, lookback, self.step_seconds)
                    if problem is None:
                        filled, observed = gaps.carry_forward(values)
                        values, mask = filled[-lookback:], observed[-lookback:]
            else:
                values = feature_matrix(history, self.config.features, last=lookback)
                problem = window_problem(values, self.config.features, lookback, self.step_seconds)
                mask = None
            if problem is not None:
                results[i] = self.fallback.forecast(history, reason=problem)
                continue
            windows.append(values[-lookback:])
            seen.append(mask)
            times.append(float(history.times[-1]))
            slots.append(i)
        missing = [t for t in TARGET_NAMES if t not in self.config.targets]
        if windows:
            batch = np.stack(windows)
            observed = np.stack(seen) if self.config.gap_channels else None
            # latency and rate are never negative
            pred = np.maximum(self.model.predict_windows(batch, np.asarray(times), observed), 0.0)  # [N, Q, H, T]
            for row, slot in enumerate(slots):
                forecast = self._to_forecast(pred[row], times[row])
                if missing:
                    forecast = self._complete(forecast, histories[slot], missing)
                results[slot] = forecast
        return [r for r in results if r is not None]

    def _complete(self, forecast: Forecast, history: History, missing: list[str]) -> Forecast:
        """Fill targets this model does not forecast from the fallback baseline, and say so."""
        other = self.fallback.forecast(history)
        parts = {name: getattr(forecast, name) for name in TARGET_NAMES}
        for name in missing:
            parts[name] = {q: np.asarray(other._target(name)[q]) for q in forecast.quantiles}
        return Forecast(
            generated_at=forecast.generated_at,
            step_seconds=forecast.step_seconds,
            horizon_seconds=forecast.horizon_seconds,
            quantiles=forecast.quantiles,
            latency_ms=parts[TARGET_NAMES[0]],
            rate=parts[TARGET_NAMES[1]],
            model=f"{self.name}+{self.fallback.name}",
            fallback_reason=f"the model does not forecast {', '.join(missing)}; {self.fallback.name} forecasts it",
        )

    def _to_forecast(self, pred: np.ndarray, generated_at: float) -> Forecast:
        q = self.config.quantiles
        targets = {}
        for name in TARGET_NAMES:
            if name in self.config.targets:
                t = self.config.targets.index(name)
                targets[name] = {qq: pred[i, :, t] for i, qq in enumerate(q)}
            else:
                targets[name] = {qq: np.full(self.config.horizon, np.nan) for qq in q}
        return Forecast(
            generated_at=generated_at,
            step_seconds=self.step_seconds,
            horizon_seconds=self.horizon_seconds,
            quantiles=q,
            latency_ms=targets[TARGET_NAMES[0]],
            rate=targets[TARGET_NAMES[1]],
            model=self.name,
        )

