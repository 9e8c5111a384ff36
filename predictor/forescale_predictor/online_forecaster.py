"""One series' forecaster in the loop: the LSTM or a baseline, whichever is ahead, with calibrated bands.

`OnlineForecaster(lstm)` wraps a forecaster for ONE series (one resource in
the operator, one replay run) and keeps what it learns about that series:

- Each call forecasts with the LSTM and with one cheap rival (`cycle`: the
  EWM level, or the series' own cycle where its history shows one,
  baselines/cycle.py), picks the model that is ahead on rolling horizon MAE,
  with hysteresis
  (model_selection.py), and widens or narrows the chosen band by adaptive
  conformal inference (conformal.py) so that q_low..q_high holds its nominal
  share of outcomes on this series.
- Each call first scores the earlier forecasts whose target time the history
  now covers: that is the only feedback it needs, so the caller just keeps
  passing the growing history.
- Where the LSTM cannot forecast (a history too short, a gap past its limit)
  the rival forecasts in its place, calibrated, with the LSTM's reason.
- `status()` says which model forecasts and why ("lstm: rolling MAE 4.1 vs
  cycle 4.6 over 2 h"), the rolling coverage of the bands it issued and the
  rolling MAE at the horizon, per target.
- Bad series never raise: a history with nothing observed gets a forecast of
  NaN labelled `none` with the reason; a constant one gets the last value,
  labelled (lstm_forecaster.py).

The replay uses it as is: `OnlineForecaster(load_forecaster())` in place of
the bare LSTM; `Forecast.model` then counts what was really used.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Any

import numpy as np

from .baseline_forecaster import BaselineForecaster
from .conformal import WINDOW as CONFORMAL_WINDOW
from .conformal import HorizonConformal
from .errors import SeriesError
from .forecast_types import TARGETS, Forecast, History
from .history_prep import on_step
from .model_selection import ModelSelector

#: how many of its own scored forecasts the rolling coverage and MAE in status cover
STATUS_WINDOW = 240
#: the rival refits its parameters, band and period every this many ticks (10 minutes at 15 s), not every tick,
#: whenever its history has doubled since its last fit, and on the tick its history shows another period
#: (`Cycle.stale`, a 0.05 ms check; baseline_forecaster.py)
REFIT_EVERY = 40


class OnlineForecaster:
    """See the module docstring; `primary` is an LSTMForecaster (anything with the same attributes works)."""

    def __init__(self, primary: Any, *, baseline: str = "cycle", coverage: float = 0.8, gamma: float = 0.02,
                 window: int = CONFORMAL_WINDOW, selection_window: int = 480, margin: float = 0.05, min_scores: int = 20) -> None:
        self.primary = primary
        self.name = getattr(primary, "name", "lstm")
        self.step_seconds = float(primary.step_seconds)
        self.horizon_seconds = float(primary.horizon_seconds)
        self.quantiles = tuple(primary.quantiles)
        self.coverage = coverage
        self.baseline = BaselineForecaster(baseline, step_seconds=self.step_seconds, horizon_seconds=self.horizon_seconds,
                                           quantiles=self.quantiles, refit_every=REFIT_EVERY)
        self.models = (self.name, baseline)
        #: the baseline the primary falls back on where it cannot forecast: the rival forecasts in its place
        self.fallback = getattr(getattr(primary, "fallback", None), "name", None)
        self.selector = ModelSelector(self.models, targets=TARGETS, window=selection_window, margin=margin,
                                      min_scores=min_scores, step_seconds=self.step_seconds)
        #: forecast steps per horizon: also how many forecasts are in flight at once (the conformal cap)
        self.horizon_steps = int(round(self.horizon_seconds / self.step_seconds))
        self.conformal = {(m, t): HorizonConformal(self.horizon_steps, coverage, gamma, window)
                          for m in self.models for t in TARGETS}
        #: [origin, model used, {model: {target: (lo, median, hi, issued_lo, issued_hi), arrays over the steps}},
        #: the next step to score], oldest first
        self.pending: deque = deque()
        self.used_hits = {t: deque(maxlen=STATUS_WINDOW) for t in TARGETS}
        self.used_errors = {t: deque(maxlen=STATUS_WINDOW) for t in TARGETS}
        self.used: str | None = None
        self.why: str = "no forecast yet"
        #: what the rival's kept models called themselves last tick (a cycle's period), per target
        self.rival_labels: dict[str, str] = {}

    @property
    def calibrates(self) -> bool:
        q = self.quantiles
        return len(q) >= 3 and q[0] < 0.5 < q[-1]

    # -- forecasting ---------------------------------------------------------

    def forecast(self, history: History) -> Forecast:
        """The forecast to act on after the last sample of `history`; never raises on a bad series."""
        try:
            grid = on_step(history, self.step_seconds)
        except SeriesError as exc:
            self.used, self.why = "none", str(exc)
            return self._nothing(history, str(exc))
        self._score(grid)
        own = self.primary.forecast(grid)
        base = self.baseline.forecast(grid)
        self._rescore_if_changed(grid)
        candidates = {self.models[1]: base}
        if own.model == self.name:
            candidates[self.name] = own
        leader = self.selector.choose()
        rival = self.models[1]
        if own.model == self.fallback:
            # the LSTM could not forecast (history too short, a long gap): the loop's rival does, calibrated
            chosen, used = replace(base, fallback_reason=own.fallback_reason), rival
            why = f"{rival}: the LSTM could not forecast: {own.fallback_reason}"
        elif own.model != self.name:
            # the LSTM's own answer to a series it should not forecast (nothing observed, a constant), labelled
            chosen, used, why = own, own.model, f"{own.model}: {own.fallback_reason}"
        elif leader == self.name:
            chosen, used, why = own, self.name, self.selector.reason()
        else:
            learned = ", ".join(f"{t} {label}" for t, label in self.baseline.fitted_labels().items())
            chosen, used, why = base, rival, self.selector.reason() + (f"; {learned}" if learned else "")
        entry: dict[str, dict] = {}
        issued: dict[str, dict] = {}
        for model, fc in candidates.items():
            entry[model], issued[model] = self._calibrate(model, fc)
        self.pending.append([float(grid.times[-1]), used, entry, 0])
        self.used, self.why = used, why
        if used not in issued:
            return chosen
        return _with_bands(chosen, issued[used], self.quantiles)

    def _rescore_if_changed(self, grid: History) -> None:
        """When the rival's model changed (a cycle found, changed or lost), its rolling errors are those of
        the model it replaced: re-score it over the same origins, each forecast from the history before it,
        so the selection compares the LSTM with the rival that forecasts now. Without this, on a 30 s burst
        every 5 minutes (the periodic replay at seed 0), the cycle found at 1,560 s led from 1,965 s: its
        errors as the EWM level had to be outweighed first, and the LSTM answered each burst after it began."""
        labels = self.baseline.fitted_labels()
        rival = self.models[1]
        for target in TARGETS:
            if labels.get(target) != self.rival_labels.get(target):
                count = len(self.selector.errors[(rival, target)])
                self.selector.rescore(rival, target, self.baseline.horizon_errors(grid, target, count))
        self.rival_labels = labels

    def _calibrate(self, model: str, fc: Forecast) -> tuple[dict, dict]:
        """(what to score later, the calibrated low/high arrays) per target of one model's forecast."""
        record, bands = {}, {}
        q = self.quantiles
        for t in TARGETS:
            arrays = fc._target(t)
            lo, med, hi = (np.asarray(arrays[k], dtype=np.float64) for k in (q[0], 0.5, q[-1])) if self.calibrates else (None, None, None)
            if lo is None:
                med = np.asarray(fc.median(t), dtype=np.float64)
                nothing = np.full(med.shape, np.nan)
                record[t] = (nothing, med, nothing, nothing, nothing)
                continue
            new_lo, new_hi = self.conformal[(model, t)].band(lo, med, hi)
            new_lo = np.maximum(new_lo, 0.0)  # latency and rate are never negative
            bands[t] = (new_lo, new_hi)
            # copies: the model's arrays are kept until the last step is scored, a horizon from now
            record[t] = (lo.copy(), med.copy(), hi.copy(), new_lo, new_hi)
        return record, bands

    # -- feedback ------------------------------------------------------------

    def _score(self, grid: History) -> None:
        """Score every step of the pending forecasts whose target time the history now covers."""
        times = np.asarray(grid.times, dtype=np.float64)
        now, half = float(times[-1]), self.step_seconds / 2
        values = {t: np.asarray(grid.features.get(t, np.full(len(times), np.nan)), dtype=np.float64) for t in TARGETS}
        for item in self.pending:
            origin, used, entry, step = item
            while step < self.horizon_steps and origin + (step + 1) * self.step_seconds <= now + half:
                self._score_step(times, values, origin + (step + 1) * self.step_seconds, step, used, entry)
                step += 1
            item[3] = step
        while self.pending and self.pending[0][3] >= self.horizon_steps:
            self.pending.popleft()

    def _score_step(self, times: np.ndarray, values: dict, target: float, step: int, used: str, entry: dict) -> None:
        """Score one step of one forecast: its band's calibration at that step; at the horizon, the selection
        and the status too (both speak of the horizon)."""
        i = min(int(np.searchsorted(times, target)), len(times) - 1)
        if i > 0 and abs(times[i - 1] - target) < abs(times[i] - target):
            i -= 1
        if abs(times[i] - target) > self.step_seconds / 2:
            return
        horizon = step == self.horizon_steps - 1
        for t in TARGETS:
            y = float(values[t][i])
            if not np.isfinite(y):
                continue  # an idle step has no latency; a missing scrape nothing
            for model, by_target in entry.items():
                lo, med, hi, new_lo, new_hi = (float(a[step]) for a in by_target[t])
                if np.isfinite(lo):
                    self.conformal[(model, t)].update(step, (lo, med, hi), (new_lo, new_hi), y)
                if not horizon:
                    continue
                self.selector.record(model, t, abs(y - med))
                if model == used:
                    self.used_errors[t].append(abs(y - med))
                    if np.isfinite(new_lo):
                        self.used_hits[t].append(1.0 if new_lo <= y <= new_hi else 0.0)

    # -- reporting -----------------------------------------------------------

    def status(self) -> dict:
        """Which model forecasts and why, and the rolling coverage and MAE (at the horizon) per target."""
        return {
            "model": self.used,
            "reason": self.why,
            "nominal_coverage": self.coverage,
            "rolling_coverage": {t: (float(np.mean(h)) if h else None) for t, h in self.used_hits.items()},
            "rolling_mae": {t: (float(np.mean(e)) if e else None) for t, e in self.used_errors.items()},
            "scored": {t: len(e) for t, e in self.used_errors.items()},
        }

    def _nothing(self, history: History, reason: str) -> Forecast:
        empty = {q: np.full(self.horizon_steps, np.nan) for q in self.quantiles}
        times = np.asarray(history.times, dtype=np.float64)
        at = float(times[np.isfinite(times)][-1]) if np.isfinite(times).any() else float("nan")
        return Forecast(generated_at=at, step_seconds=self.step_seconds, horizon_seconds=self.horizon_seconds,
                        quantiles=self.quantiles, latency_ms=empty, rate=dict(empty), model="none",
                        fallback_reason=reason)


def _with_bands(fc: Forecast, bands: dict, quantiles: tuple[float, ...]) -> Forecast:
    """The forecast with its lowest and highest quantiles replaced by the calibrated band."""
    parts = {}
    for t in TARGETS:
        arrays = dict(fc._target(t))
        if t in bands:
            arrays[quantiles[0]], arrays[quantiles[-1]] = bands[t]
        parts[t] = arrays
    return Forecast(generated_at=fc.generated_at, step_seconds=fc.step_seconds, horizon_seconds=fc.horizon_seconds,
                    quantiles=fc.quantiles, latency_ms=parts[TARGETS[0]], rate=parts[TARGETS[1]], model=fc.model,
                    fallback_reason=fc.fallback_reason, extras=fc.extras)
