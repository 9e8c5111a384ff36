"""A forecaster that reads the trace ahead of the clock: the ceiling of what a rate forecast can buy.

Replays only. Its rate forecast, at every quantile, is what will really
arrive in each coming step: the arrivals of the trace, per second, summed
over the same windows the engine's observed rate uses (the recorder's
`rate`: arrivals in [t - step, t) at time t). No rate forecaster can know
more, the Poisson noise of the arrivals included, and its band has no
width. Its latency forecast is the `ewm` baseline's: latency in a replay
depends on what the engine does, so it is not in the trace to read.

Why it exists: the forecaster ablation (bench.frontier) asks the LSTM for
0.9x the better baseline's violation seconds at equal GPU-hours, or 0.95x
its GPU-hours at equal violation seconds. Set beside `lstm`, `ewm` and
`last` on the same cases, the clairvoyant forecaster says how much of that
any rate forecast could reach through this engine at all: a ceiling near
1.0x means the engine's other parts, not the forecast, set the cost.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from forescale_predictor import Forecast, History, make_baseline

#: the name the ablation and the replay's `forecast_models` report it under
NAME = "clairvoyant"


class ClairvoyantForecaster:
    """`per_second[k]`: the trace's arrivals in second [k, k + 1) of the replay, whose clock reads
    `epoch0 + k` in the histories it is given."""

    name = NAME

    def __init__(self, per_second: np.ndarray, *, epoch0: float, step_seconds: float, horizon_seconds: float) -> None:
        if step_seconds < 1 or step_seconds != int(step_seconds) or horizon_seconds < step_seconds:
            # whole seconds, as the spec's stepSeconds: the windows are then exactly the recorder's
            raise ValueError(f"need whole step_seconds >= 1 and horizon_seconds >= step_seconds, "
                             f"got {step_seconds}, {horizon_seconds}")
        self.arrivals = np.concatenate([[0.0], np.cumsum(np.asarray(per_second, dtype=np.float64))])
        self.epoch0 = float(epoch0)
        self.step_seconds = float(step_seconds)
        self.horizon_seconds = float(horizon_seconds)
        self.latency = make_baseline("ewm", step_seconds=step_seconds, horizon_seconds=horizon_seconds)

    def rates_after(self, now: float) -> np.ndarray:
        """Arrivals per second in each of the horizon's steps after replay second `now` (0 past the trace's end)."""
        steps = int(round(self.horizon_seconds / self.step_seconds))
        edges = int(now) + int(self.step_seconds) * np.arange(steps + 1)
        counts = self.arrivals[np.clip(edges, 0, self.arrivals.size - 1)]
        return np.diff(counts) / np.diff(edges)

    def forecast(self, history: History) -> Forecast:
        base = self.latency.forecast(history)
        rates = self.rates_after(float(base.generated_at) - self.epoch0)
        return Forecast(generated_at=base.generated_at, step_seconds=base.step_seconds,
                        horizon_seconds=base.horizon_seconds, quantiles=base.quantiles,
                        latency_ms=base.latency_ms, rate={q: rates.copy() for q in base.quantiles}, model=NAME)

    def forecast_many(self, histories: Sequence[History]) -> list[Forecast]:
        return [self.forecast(h) for h in histories]
