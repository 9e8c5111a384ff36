"""Forescale predictor: data loading, windowing, the LSTM forecaster, baselines and backtests.

The public API (importing this package does not import torch; only loading
or training an LSTM does):

- `load_forecaster(source=None, *, fallback="ewm") -> Forecaster`: the LSTM
  forecaster from a model file path, a model file's bytes, or (None) the
  packaged default model. Raises `ModelFormatError` on anything that is not a
  model file; callers decide whether to fall back to `make_baseline`.
- `make_baseline(name, *, step_seconds, horizon_seconds, quantiles=(0.5, 0.9))`
  for `last`, `seasonal`, `ewm`, `linear`.
- `History`, `Forecast`, `Forecaster`, `RATE`, `LATENCY_MS`: the data types.
- `presets` (metric presets, label escaping) and `prometheus_source`
  (`PrometheusSource`, `MetricsUnavailable`) as submodules.
- `online_forecaster.OnlineForecaster(forecaster)`: one series in the loop
  (the LSTM or `ewm`, whichever is ahead, with bands calibrated online);
  `fine_tuning.fine_tune(base, history)`: the packaged model fine-tuned on a
  service's own history.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .errors import MetricsUnavailable, ModelFormatError, PredictorError, SeriesError, TrainingError
from .forecast_types import LATENCY_MS, RATE, TARGETS, Forecast, Forecaster, History

if TYPE_CHECKING:
    from .baseline_forecaster import BaselineForecaster
    from .lstm_forecaster import LSTMForecaster

#: The model shipped inside the package (trained by predictor/scripts/train_default_model.py).
DEFAULT_MODEL_PATH = Path(__file__).parent / "default_model" / "default.pt"

#: Baseline names accepted by `make_baseline` and as `fallback`.
BASELINE_NAMES = ("last", "seasonal", "ewm", "linear", "cycle")

__all__ = [
    "BASELINE_NAMES",
    "DEFAULT_MODEL_PATH",
    "LATENCY_MS",
    "RATE",
    "TARGETS",
    "Forecast",
    "Forecaster",
    "History",
    "MetricsUnavailable",
    "ModelFormatError",
    "PredictorError",
    "SeriesError",
    "TrainingError",
    "load_forecaster",
    "make_baseline",
]


def load_forecaster(source: "str | bytes | Path | None" = None, *, fallback: str = "ewm") -> "LSTMForecaster":
    """The LSTM forecaster from a model file (path or bytes) or, with None, the packaged default.

    `fallback` names the baseline used when a history is too short or has
    gaps; such forecasts say so in `Forecast.model` and `fallback_reason`.
    """
    if fallback not in BASELINE_NAMES:
        raise ValueError(f"unknown fallback {fallback!r}; choose one of {', '.join(BASELINE_NAMES)}")
    from . import model_file
    from .lstm_forecaster import LSTMForecaster

    if source is None:
        if not DEFAULT_MODEL_PATH.is_file():
            raise ModelFormatError(f"the packaged default model is missing ({DEFAULT_MODEL_PATH}); reinstall forescale")
        label, source = "packaged default model", DEFAULT_MODEL_PATH
    else:
        label = "<model bytes>" if isinstance(source, (bytes, bytearray)) else str(source)
    model = model_file.load(source, name=label)
    return LSTMForecaster(model, fallback=fallback, source=label)


def make_baseline(name: str, *, step_seconds: float, horizon_seconds: float, quantiles=(0.5, 0.9)) -> "BaselineForecaster":
    """A baseline Forecaster (`last`, `seasonal`, `ewm` or `linear`)."""
    if name not in BASELINE_NAMES:
        raise ValueError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINE_NAMES)}")
    from .baseline_forecaster import BaselineForecaster

    return BaselineForecaster(name, step_seconds=step_seconds, horizon_seconds=horizon_seconds, quantiles=quantiles)
