"""Forecasting through gaps: carried values plus an "observed" indicator per feature.

Two kinds of hole appear in a live series, and they are different things:

- **An idle step**: no request arrived. The rate is 0 (an observation), and
  latency is undefined. That is data, not a hole: the rate says so, and the
  latency input keeps its last observed value with its indicator at 0.
- **A missing scrape**: nothing was read for the step (Prometheus down, the
  operator restarted, a target not scraped). Every feature is NaN.

A model trained with `gap_channels` reads each feature twice: the value
carried forward from its last observation, and 1/0 for "observed this step".
It forecasts through any number of idle steps and through missing scrapes as
long as the newest scrape is at most `MAX_MISSING_STEPS` old (2 minutes at
15 s) and at least `MIN_OBSERVED_SHARE` of the window was scraped. A staler
window, a mostly empty one, or a feature with nothing to carry forward is a
declared fallback with the reason.
"""

from __future__ import annotations

import numpy as np

#: The newest scrape may be at most this many steps old (2 minutes at 15 s):
#: past it the forecast would start from stale data, and the fallback baseline
#: (which only needs the last value) is the honest answer.
MAX_MISSING_STEPS = 8
#: At least this share of a window's steps must have been scraped; an older
#: gap inside the window is fine (the network sees it as unobserved steps).
MIN_OBSERVED_SHARE = 0.25


def carry_forward(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(filled, observed) for values [T, F]: NaN takes the last finite value of its column.

    Leading NaN (nothing observed yet) stay NaN; `observed` is 1.0 where the
    raw value was finite. Causal: a filled value only uses earlier samples.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    observed = np.isfinite(values)
    idx = np.where(observed, np.arange(len(values))[:, None], 0)
    np.maximum.accumulate(idx, axis=0, out=idx)
    filled = values[idx, np.arange(values.shape[1])]
    filled[np.cumsum(observed, axis=0) == 0] = np.nan
    return filled, observed.astype(np.float64)


def missing_runs(observed: np.ndarray) -> np.ndarray:
    """[T]: length of the run of steps without any observed feature that ends at each step (0 if observed)."""
    missing = ~(np.asarray(observed) > 0).any(axis=1)
    idx = np.arange(len(missing))
    last_seen = np.maximum.accumulate(np.where(missing, -1, idx)) if len(idx) else idx
    return np.where(missing, idx - last_seen, 0)


def window_ok(filled: np.ndarray, observed: np.ndarray, at: np.ndarray, lookback: int,
              limit: int = MAX_MISSING_STEPS) -> np.ndarray:
    """Bool [N]: the windows ending at origins `at` can feed a gap model.

    Every feature has a value to carry forward from the window's first step,
    the newest scrape is at most `limit` steps old, and at least
    MIN_OBSERVED_SHARE of the window's steps were scraped.
    """
    at = np.asarray(at, dtype=np.int64)
    if at.size == 0:
        return np.zeros(0, dtype=bool)
    start = at - lookback + 1
    carried = np.isfinite(filled).all(axis=1)
    scraped = np.concatenate([[0], np.cumsum((np.asarray(observed) > 0).any(axis=1))])
    ok = carried[np.clip(start, 0, None)] & (start >= 0)
    ok &= missing_runs(observed)[at] <= limit
    ok &= (scraped[at + 1] - scraped[np.clip(start, 0, None)]) >= MIN_OBSERVED_SHARE * lookback
    return ok


def window_problem(raw: np.ndarray, names: tuple[str, ...], lookback: int, step_seconds: float,
                   limit: int = MAX_MISSING_STEPS) -> str | None:
    """Why the history's values [T, F] cannot feed a gap model's last window, or None when they can."""
    if len(raw) < lookback:
        return (f"history too short: {len(raw)} steps ({len(raw) * step_seconds:g} s) at {step_seconds:g} s, "
                f"the model needs {lookback} ({lookback * step_seconds:g} s)")
    filled, observed = carry_forward(raw)
    window = filled[-lookback:]
    for f, name in enumerate(names):
        if not np.isfinite(filled[:, f]).any():
            return f"feature {name!r} has no observed value in the history"
        if not np.isfinite(window[:, f]).all():
            return f"feature {name!r} has no observed value before the last {lookback} steps began; nothing to carry forward"
    stale = int(missing_runs(observed)[-1])
    if stale > limit:
        return (f"no scrape for the last {stale} steps ({stale * step_seconds:g} s); "
                f"the LSTM forecasts from data at most {limit} steps ({limit * step_seconds:g} s) old")
    scraped = int((observed[-lookback:] > 0).any(axis=1).sum())
    if scraped < MIN_OBSERVED_SHARE * lookback:
        return (f"only {scraped} of the last {lookback} steps were scraped; "
                f"the LSTM needs at least {MIN_OBSERVED_SHARE:.0%}")
    return None
