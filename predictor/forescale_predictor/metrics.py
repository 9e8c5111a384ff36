"""Pure forecast-error metrics. Arrays in, floats out.

- MAE: mean absolute error.
- sMAPE: mean of 2|y - ŷ| / (|y| + |ŷ|), in percent; pairs where both are
  zero count as zero error.
- MASE: MAE divided by the in-sample MAE of the naive forecast at the same
  lag (the horizon step) on the training part, so 1.0 means "as good as the
  last value was on the training data".
- Band coverage: share of true values inside [lowest, highest] quantile
  (the lower bound is open when the lowest quantile is the median or above).
- Spikes: a step is a spike when its value exceeds `factor` times the median
  of the `window` steps before it. A forecast made at origin o warns for the
  target o + h when its upper quantile crosses that same line (the trailing
  median known at o). A spike is caught when some origin before it warned for
  it; lead time is the earliest such warning's distance in seconds.
"""

from __future__ import annotations

import numpy as np

SPIKE_FACTOR = 2.0
SPIKE_WINDOW = 30


def mae(y: np.ndarray, p: np.ndarray) -> float:
    return float(np.mean(np.abs(np.asarray(y) - np.asarray(p))))


def smape(y: np.ndarray, p: np.ndarray) -> float:
    y, p = np.abs(np.asarray(y, float)), np.asarray(p, float)
    denom = np.abs(y) + np.abs(p)
    err = np.abs(np.asarray(y) - p)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(denom > 0, 2 * err / denom, 0.0)
    return float(100.0 * np.mean(ratio))


def naive_scale(train: np.ndarray, lag: int) -> float:
    """In-sample MAE of the naive forecast `lag` steps ahead (MASE's denominator)."""
    train = np.asarray(train, float)
    diffs = np.abs(train[lag:] - train[:-lag])
    diffs = diffs[np.isfinite(diffs)]
    return float(np.mean(diffs)) if diffs.size else float("nan")


def mase(y: np.ndarray, p: np.ndarray, scale: float) -> float:
    if not scale > 0:
        return float("nan")
    return mae(y, p) / scale


def band_coverage(y: np.ndarray, low: np.ndarray | None, high: np.ndarray) -> float:
    y = np.asarray(y, float)
    inside = y <= np.asarray(high)
    if low is not None:
        inside &= y >= np.asarray(low)
    return float(np.mean(inside))


def trailing_median(values: np.ndarray, window: int = SPIKE_WINDOW) -> np.ndarray:
    """Median of the `window` samples before each index (NaN for the first `window`)."""
    values = np.asarray(values, float)
    out = np.full(len(values), np.nan)
    if len(values) <= window:
        return out
    view = np.lib.stride_tricks.sliding_window_view(values, window)[:-1]
    out[window:] = np.nanmedian(view, axis=1) if np.isnan(view).any() else np.median(view, axis=1)
    return out


def spike_mask(values: np.ndarray, *, factor: float = SPIKE_FACTOR, window: int = SPIKE_WINDOW) -> np.ndarray:
    """True where a value exceeds `factor` x its trailing median."""
    med = trailing_median(values, window)
    with np.errstate(invalid="ignore"):
        return np.asarray(values, float) > factor * med


def spike_scores(
    values: np.ndarray,
    origins: np.ndarray,
    upper: np.ndarray,
    step_seconds: float,
    *,
    factor: float = SPIKE_FACTOR,
    window: int = SPIKE_WINDOW,
) -> dict[str, float]:
    """Precision, recall and mean lead time of spike warnings.

    `upper` [N, H] is the upper-quantile forecast made at each origin. A
    warning (o, h) is true when target o + h is a spike. Precision counts
    warnings, recall counts spikes among the targets the origins could see.
    """
    values = np.asarray(values, float)
    spikes = spike_mask(values, factor=factor, window=window)
    med = trailing_median(values, window)
    n, horizon = upper.shape
    targets = origins[:, None] + np.arange(1, horizon + 1)[None, :]
    valid = targets < len(values)
    tclip = np.clip(targets, 0, len(values) - 1)
    line = factor * med[tclip]
    with np.errstate(invalid="ignore"):
        warned = valid & np.isfinite(line) & (upper > line)
    hit = warned & spikes[tclip]
    n_warn = int(warned.sum())
    reachable = np.zeros(len(values), bool)
    reachable[tclip[valid]] = True
    spike_idx = np.flatnonzero(spikes & reachable)
    lead = np.full(len(values), -1.0)
    rows, cols = np.nonzero(hit)
    for r, c in zip(rows, cols):
        lead[tclip[r, c]] = max(lead[tclip[r, c]], (c + 1) * step_seconds)
    caught = lead[spike_idx] >= 0
    return {
        "precision": float(hit.sum() / n_warn) if n_warn else 0.0,
        "recall": float(caught.mean()) if spike_idx.size else 0.0,
        "mean_lead_seconds": float(lead[spike_idx][caught].mean()) if caught.any() else 0.0,
        "spikes": int(spike_idx.size),
        "warnings": n_warn,
    }
