"""The tick's forecast seam: where one resource's forecast comes from.

`ForecastSource` is the one protocol; `forecaster.PredictorForecastSource` is
the predictor-backed implementation (the model a resource's modelRef names,
or the packaged default) and `NoopForecastSource` the no-op: no forecast, so
the engine sizes on the observed rate. Forecasting itself is the predictor's
`Forecaster` protocol (forescale_predictor.forecast_types); a source only
picks one per resource, runs it off the event loop and says how it went.

No model code here (no torch): the tick names this seam without loading it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from forescale_predictor.forecast_types import Forecast, History

from ..children import Owner
from ..spec import InferenceSpec

DEFAULT_SOURCE = "packaged default model"


@dataclass
class ForecastReport:
    """What status and the operator's metrics say about one resource's forecasts."""

    #: why the named model is not used (ForecastReady=False, ModelRejected), or None
    problem: str | None = None
    #: which model file forecasts: the packaged default or the ConfigMap, with what it was trained on
    source: str = DEFAULT_SOURCE
    #: OnlineForecaster.status(): model, reason, nominal and rolling coverage, rolling MAE (empty without one)
    online: dict = field(default_factory=dict)
    #: CPU seconds this tick's forecast took (0 when none was made); part of the decision time
    seconds: float = 0.0


class ForecastSource(Protocol):
    async def forecast(self, owner: Owner, spec: InferenceSpec, history: History) -> Forecast | None:
        """The forecast of the next horizon after `history`, or None when there is none to act on."""

    def report(self, uid: str) -> ForecastReport:
        """How the resource's last forecast went."""

    def forget(self, owner: Owner) -> None:
        """Drop a deleted resource's entries."""


class NoopForecastSource:
    """Forecasts nothing: the engine sizes on the observed rate and says so (ForecastReady=False)."""

    async def forecast(self, owner: Owner, spec: InferenceSpec, history: History) -> None:
        return None

    def report(self, uid: str) -> ForecastReport:
        return ForecastReport()

    def forget(self, owner: Owner) -> None:
        return None
