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
        median_index=config.quantiles.index(0.5),
    )


def time_of_day(times: np.ndarray) -> np.ndarray:
    """[..., 2] sin/cos of the UTC time of day."""
    phase = 2 * np.pi * (np.asarray(times, dtype=np.float64) % DAY) / DAY
    return np.stack([np.sin(phase), np.cos(phase)], axis=-1)


@dataclass
class TrainedModel:
    """A network with the scalers and the blend it was trained with.

    The median of target t is a blend chosen on the time-ordered validation
    split (training.fit_blend):

        last + shrink[t] * (network - last) + smooth_weight[t] * (ewm - last)

    where `ewm` is the window's exponentially weighted mean with factor
    `smooth_alpha[t]`. A network that cannot beat the last value on
    validation is thus pulled toward it, and on noisy series (Poisson request
    counts) toward a smoothed level. The other quantiles keep their distance
    from the median.
    """

    config: ModelConfig
    net: LSTMForecastNet
    input_scaler: Standardiser
    target_scaler: Standardiser
    shrink: np.ndarray
    smooth_weight: np.ndarray | None = None
    smooth_alpha: np.ndarray | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.config.targets)
        self.shrink = np.asarray(self.shrink, dtype=np.float64).reshape(n)
        self.smooth_weight = np.zeros(n) if self.smooth_weight is None else np.asarray(self.smooth_weight, float).reshape(n)
        self.smooth_alpha = np.full(n, 0.3) if self.smooth_alpha is None else np.asarray(self.smooth_alpha, float).reshape(n)

    def prepare(self, windows: np.ndarray, last_times: np.ndarray | None = None,
                observed: np.ndarray | None = None) -> tuple[torch.Tensor, np.ndarray]:
        """Network input tensor and window levels for raw windows [N, L, F].

        For a `gap_channels` model `windows` hold values carried forward over
        gaps and `observed` [N, L, F] says which were seen (all, when None).
        """
        levels = window_levels(windows, self.config.level_steps)
        x = self.input_scaler.transform(relative_inputs(windows, levels))
        if self.config.gap_channels:
            seen = np.ones_like(windows) if observed is None else np.asarray(observed, dtype=np.float64)
            x = np.concatenate([x, seen], axis=-1)
        if self.config.time_features:
            if last_times is None:
                raise ValueError("this model uses the time of day: pass the windows' last times")
            offsets = self.config.step_seconds * np.arange(-self.config.lookback + 1, 1)
            x = np.concatenate([x, time_of_day(np.asarray(last_times)[:, None] + offsets[None, :])], axis=-1)
        return torch.from_numpy(x.astype(np.float32)), levels

    def predict_windows(self, windows: np.ndarray, last_times: np.ndarray | None = None,
                        observed: np.ndarray | None = None) -> np.ndarray:
        """Quantile forecasts [N, Q, H, T] in the series' own units for raw windows [N, L, F]."""
        windows = np.asarray(windows, dtype=np.float64)
        if windows.ndim != 3 or windows.shape[1:] != (self.config.lookback, len(self.config.features)):
            raise ValueError(
                f"expected windows [N, {self.config.lookback}, {len(self.config.features)}], got {list(windows.shape)}"
            )
        deltas = self.raw_deltas(windows, last_times, observed)
        idx = list(self.config.target_index)
        return absolute_targets(windows[:, :, idx], self.blend(windows, deltas), window_levels(windows, self.config.level_steps)[:, idx])

    def raw_deltas(self, windows: np.ndarray, last_times: np.ndarray | None,
                   observed: np.ndarray | None = None) -> np.ndarray:
        """The network's own forecasts [N, Q, H, T] as changes from the last value, in level units."""
        x, _ = self.prepare(windows, last_times, observed)
        self.net.eval()
        with torch.inference_mode():
            out = self.net(x).numpy().astype(np.float64)
        return self.target_scaler.inverse(out)

    def smooth_deltas(self, windows: np.ndarray, alphas: np.ndarray) -> np.ndarray:
        """[N, T]: (EWM of each target over the window - last value) / level."""
        idx = list(self.config.target_index)
        targets = windows[:, :, idx]
        levels = window_levels(windows, self.config.level_steps)[:, idx]
        return (ewm_last(targets, alphas) - targets[:, -1, :]) / levels

    def blend(self, windows: np.ndarray, deltas: np.ndarray) -> np.ndarray:
        """Apply the fitted blend (class docstring) to deltas [N, Q, H, T]."""
        median = self.config.quantiles.index(0.5)
        mid = deltas[:, median : median + 1]
        smooth = self.smooth_deltas(windows, self.smooth_alpha)[:, None, None, :]
        new_mid = mid * self.shrink.reshape(1, 1, 1, -1) + smooth * self.smooth_weight.reshape(1, 1, 1, -1)
        return deltas - mid + new_mid


def ewm_last(windows: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """The exponentially weighted mean at the end of each window [N, L, T], per-target factor."""
    length = windows.shape[1]
    ages = np.arange(length - 1, -1, -1)[None, :]  # newest sample has age 0
    alphas = np.asarray(alphas, float)[:, None]
    weights = alphas * (1 - alphas) ** ages
    weights[:, 0] = (1 - alphas[:, 0]) ** (length - 1)  # the oldest sample carries the remainder
    return np.einsum("nlt,tl->nt", windows, weights)
