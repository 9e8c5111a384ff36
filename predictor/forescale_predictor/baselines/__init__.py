"""Baseline forecasters with the same interface as the LSTM: last value,
seasonal naive, exponentially weighted mean and a linear model on lags."""

from .base import Baseline
from .factory import BASELINES, make_baseline_model

__all__ = ["BASELINES", "Baseline", "make_baseline_model"]
