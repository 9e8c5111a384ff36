"""Synthetic series shared by the predictor tests."""

from __future__ import annotations

import numpy as np


def synthetic(n: int = 600, step: float = 15.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A daily-ish wave plus noise and a few bursts: rate and derived-looking latency."""
    rng = np.random.default_rng(seed)
    t = 1_700_000_000.0 + step * np.arange(n)
    rate = 50 + 20 * np.sin(np.arange(n) / 40.0) + rng.normal(0, 2, n)
    rate[n // 3 : n // 3 + 8] *= 2.2
    latency = 40 + 0.02 * rate**2 + rng.normal(0, 1, n)
    return t, np.stack([latency, rate], axis=1)
