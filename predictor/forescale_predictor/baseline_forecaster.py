"""A baseline as a Forecaster: History in, Forecast out.

The baseline is fitted on the history it is given (its parameters and its
band come from that history's own past), then forecasts after its last
sample. Features the history lacks, or holds only NaN for, come back as NaN.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .baselines import make_baseline_model
from .forecast_types import LATENCY_MS, RATE, Forecast, History
from .history_prep import feature_matrix, on_step

TARGET_NAMES = (LATENCY_MS, RATE)


class BaselineForecaster:
    """Forecaster over one of the baselines (`last`, `seasonal`, `ewm`, `linear`)."""

    def __init__(self, name: str, *, step_seconds: float, horizon_seconds: float, quantiles=(0.5, 0.9),
                 refit_every: int = 1) -> None:
        if step_seconds <= 0 or horizon_seconds < step_seconds:
            raise ValueError(f"need step_seconds > 0 and horizon_seconds >= step_seconds, got {step_seconds}, {horizon_seconds}")
        self.name = name
        self.step_seconds = float(step_seconds)
        self.horizon = int(round(horizon_seconds / step_seconds))
        self.quantiles = tuple(sorted(set(quantiles) | {0.5}))
        make_baseline_model(name, step_seconds=self.step_seconds, horizon=self.horizon)  # validates the name
        #: >1 keeps each target's fitted model (parameters and band) for that many forecasts of ONE series:
        #: the loop forecasts one series every tick, and refitting on every tick costs more than the LSTM
        self.refit_every = max(1, int(refit_every))
        #: per target: (forecasts since the fit, the history's length at the fit, the fitted model)
        self._fitted: dict[int, tuple[int, int, object]] = {}

    @property
    def horizon_seconds(self) -> float:
        return self.horizon * self.step_seconds

    def forecast(self, history: History, *, reason: str | None = None) -> Forecast:
        """Forecast after the last sample; `reason` marks it as a fallback for another model."""
        history = on_step(history, self.step_seconds)
        values = _carry_forward(feature_matrix(history, TARGET_NAMES))
        times = np.asarray(history.times, dtype=np.float64)
        out = np.full((len(self.quantiles), self.horizon, len(TARGET_NAMES)), np.nan)
        for f in range(len(TARGET_NAMES)):
            col = values[:, f : f + 1]
            first = np.flatnonzero(np.isfinite(col[:, 0]))
            if first.size == 0:
                continue
            col, col_times = col[first[0] :], times[first[0] :]
            model = self._fitted_model(f, col, col_times)
            out[:, :, f] = model.predict_origins(col, col_times, np.array([len(col) - 1]))[0, :, :, 0]
        return Forecast(
            generated_at=float(times[-1]),
            step_seconds=self.step_seconds,
            horizon_seconds=self.horizon_seconds,
            quantiles=self.quantiles,
            latency_ms={q: out[i, :, 0] for i, q in enumerate(self.quantiles)},
            rate={q: out[i, :, 1] for i, q in enumerate(self.quantiles)},
            model=self.name,
            fallback_reason=reason,
        )

    def fitted_labels(self) -> dict[str, str]:
        """How each target's kept model names itself where that says more than its name (a cycle's period)."""
        out = {}
        for f, (_, _, model) in sorted(self._fitted.items()):
            if model.label != model.name:
                out[TARGET_NAMES[f]] = model.label
        return out

    def horizon_errors(self, history: History, target: str, count: int) -> np.ndarray:
        """The absolute errors at the horizon of the model kept for `target`, had it forecast from each of
        the last origins whose horizon `history` covers: at most `count`, oldest first, outcomes that were
        not observed left out. Each forecast reads only the history up to its origin."""
        f = TARGET_NAMES.index(target)
        if f not in self._fitted:
            return np.zeros(0)
        model = self._fitted[f][2]
        history = on_step(history, self.step_seconds)
        raw = feature_matrix(history, TARGET_NAMES)[:, f]
        times = np.asarray(history.times, dtype=np.float64)
        seen = np.flatnonzero(np.isfinite(raw))
        if seen.size == 0:
            return np.zeros(0)
        col, col_times, truth = raw[seen[0]:, None], times[seen[0]:], raw[seen[0]:]
        at = np.arange(max(model.min_history - 1, 0), len(col) - self.horizon)
        if at.size == 0:
            return np.zeros(0)
        median = model.predict_origins(col, col_times, at)[:, self.quantiles.index(0.5), -1, 0]
        errors = np.abs(truth[at + self.horizon] - median)
        return errors[np.isfinite(errors)][-count:] if count > 0 else np.zeros(0)

    def forecast_many(self, histories: Sequence[History]) -> list[Forecast]:
        """One forecast per history (baselines are cheap; no batching needed)."""
        return [self.forecast(h) for h in histories]

    def _fitted_model(self, f: int, col: np.ndarray, col_times: np.ndarray):
        uses, length, model = self._fitted.get(f, (0, 0, None))
        # Refit every `refit_every` forecasts, whenever the history has doubled since the last fit (a model
        # fitted on the first few samples of a series, with no band yet and a default smoothing, is not kept
        # for long), and whenever the model says the history has outgrown it (a cycle that has shown itself).
        if (model is None or uses >= self.refit_every or len(col) < model.min_history or len(col) >= 2 * length
                or model.stale(col)):
            model = self._model_for(len(col), float(col_times[-1] - col_times[0]), counts=TARGET_NAMES[f] == RATE)
            model.fit(col, col_times)
            uses, length = 0, len(col)
        if self.refit_every > 1:
            self._fitted[f] = (uses + 1, length, model)
        return model

    def _model_for(self, length: int, span: float, *, counts: bool):
        model = make_baseline_model(self.name, step_seconds=self.step_seconds, horizon=self.horizon, quantiles=self.quantiles,
                                    counts=counts)
        if hasattr(model, "choose_period"):
            model.choose_period(span)
        if length < model.min_history:
            # not enough history for this baseline's lags or period: the last value is the honest answer
            model = make_baseline_model("last", step_seconds=self.step_seconds, horizon=self.horizon, quantiles=self.quantiles,
                                        counts=counts)
        return model


def _carry_forward(values: np.ndarray) -> np.ndarray:
    """Trailing NaNs (a scrape that has not landed yet) take the last finite value."""
    out = values.copy()
    for f in range(out.shape[1]):
        col = out[:, f]
        ok = np.flatnonzero(np.isfinite(col))
        if ok.size and ok[-1] < len(col) - 1:
            col[ok[-1] + 1 :] = col[ok[-1]]
    return out
