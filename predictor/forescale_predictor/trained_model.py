"""A trained LSTM forecaster: network, scalers and shrinkage, predicting raw windows.

This is the array-level model used by the backtest and by the Forecaster
wrapper (`lstm_forecaster.py`). It works on windows that are already on its
grid; resampling and fallbacks live in the wrapper.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .lstm_module import LSTMForecastNet
from .model_config import ModelConfig
from .scaling import Standardiser, absolute_targets, relative_inputs, window_levels

DAY = 86400.0


def build_net(config: ModelConfig) -> LSTMForecastNet:
    """A fresh network of the configured shape."""
    return LSTMForecastNet(
        inputs=config.n_inputs,
        targets=len(config.targets),
        horizon=config.horizon,
        quantiles=len(config.quantiles),
        hidden=config.hidden,
        layers=config.layers,
        ar_steps=config.ar_steps,
        target_index=config.target_index,
    )


def time_of_day(times: np.ndarray) -> np.ndarray:
    """[..., 2] sin/cos of the UTC time of day."""
    phase = 2 * np.pi * (np.asarray(times, dtype=np.float64) % DAY) / DAY
    return np.stack([np.sin(phase), np.cos(phase)], axis=-1)


@dataclass
class TrainedModel:
    """A network with the scalers and shrinkage it was trained with.

    `shrink[t]` in [0, 1] scales the median's change from the last value of
    target t; it is chosen on the time-ordered validation split, so a model
    that cannot beat the last value there learns to stay close to it.
    """

    config: ModelConfig
    net: LSTMForecastNet
    input_scaler: Standardiser
    target_scaler: Standardiser
    shrink: np.ndarray
    metadata: dict[str, Any] = field(default_factory=dict)

    def prepare(self, windows: np.ndarray, last_times: np.ndarray | None = None) -> tuple[torch.Tensor, np.ndarray]:
        """Network input tensor and window levels for raw windows [N, L, F]."""
        levels = window_levels(windows, self.config.level_steps)
        x = self.input_scaler.transform(relative_inputs(windows, levels))
        if self.config.time_features:
            if last_times is None:
                raise ValueError("this model uses the time of day: pass the windows' last times")
            offsets = self.config.step_seconds * np.arange(-self.config.lookback + 1, 1)
            x = np.concatenate([x, time_of_day(np.asarray(last_times)[:, None] + offsets[None, :])], axis=-1)
        return torch.from_numpy(x.astype(np.float32)), levels

    def predict_windows(self, windows: np.ndarray, last_times: np.ndarray | None = None) -> np.ndarray:
        """Quantile forecasts [N, Q, H, T] in the series' own units for raw windows [N, L, F]."""
        windows = np.asarray(windows, dtype=np.float64)
        if windows.ndim != 3 or windows.shape[1:] != (self.config.lookback, len(self.config.features)):
            raise ValueError(
                f"expected windows [N, {self.config.lookback}, {len(self.config.features)}], got {list(windows.shape)}"
            )
        x, levels = self.prepare(windows, last_times)
        self.net.eval()
        with torch.inference_mode():
            out = self.net(x).numpy().astype(np.float64)
        deltas = self.target_scaler.inverse(out)  # [N, Q, H, T] in level units
        deltas = self._shrink(deltas)
        idx = list(self.config.target_index)
        return absolute_targets(windows[:, :, idx], deltas, levels[:, idx])

    def _shrink(self, deltas: np.ndarray) -> np.ndarray:
        median = self.config.quantiles.index(0.5)
        mid = deltas[:, median : median + 1]
        return deltas - mid + mid * self.shrink.reshape(1, 1, 1, -1)
