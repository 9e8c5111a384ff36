"""Turning a History into what a forecaster can use, or a reason it cannot.

Shared by the LSTM forecaster and the baselines so that both judge a history
the same way.
"""

from __future__ import annotations

import numpy as np

from .errors import SeriesError
from .forecast_types import History
from .resample import DEFAULT_MAX_GAP_STEPS, fill_gaps, resample_history


def on_step(history: History, step_seconds: float) -> History:
    """The history on `step_seconds`, after checking its times; SeriesError on empty or unordered input."""
    if len(history) == 0:
        raise SeriesError("the history is empty: no samples to forecast from")
    times = np.asarray(history.times, dtype=np.float64)
    if not np.isfinite(times).all():
        raise SeriesError("the history has non-finite timestamps")
    diffs = np.diff(times)
    if len(diffs) and diffs.min() <= 0:
        i = int(np.flatnonzero(diffs <= 0)[0])
        kind = "repeated" if diffs[i] == 0 else "out of order"
        raise SeriesError(f"the history's timestamps are {kind} at sample {i + 1}; they must be strictly increasing")
    if not any(np.isfinite(np.asarray(v, float)).any() for v in history.features.values()):
        raise SeriesError("every feature of the history is NaN: no observation to forecast from")
    return resample_history(history, step_seconds)


def feature_matrix(history: History, names: tuple[str, ...], last: int | None = None) -> np.ndarray:
    """Values [T, F] of `names` with short gaps filled; a missing feature is all NaN.

    With `last`, only the final `last` rows are returned (gaps are still
    filled from the samples just before them).
    """
    n = len(history)
    lo = 0 if last is None else max(0, n - last - 2 * DEFAULT_MAX_GAP_STEPS)
    out = np.empty((n - lo, len(names)))
    for f, name in enumerate(names):
        raw = history.features.get(name)
        if raw is None:
            out[:, f] = np.nan
            continue
        col = np.asarray(raw, dtype=np.float64)[lo:]
        out[:, f] = col if np.isfinite(col).all() else carry_recent(fill_gaps(col, DEFAULT_MAX_GAP_STEPS), DEFAULT_MAX_GAP_STEPS)
    return out if last is None else out[-last:]


def raw_matrix(history: History, names: tuple[str, ...]) -> np.ndarray:
    """Values [T, F] of `names` as observed, NaN where not (a missing feature is all NaN)."""
    out = np.full((len(history), len(names)), np.nan)
    for f, name in enumerate(names):
        raw = history.features.get(name)
        if raw is not None:
            out[:, f] = np.asarray(raw, dtype=np.float64)
    return out


def constant_history(values: np.ndarray, names: tuple[str, ...]) -> str | None:
    """A reason to forecast the last value when every observed feature of values [T, F] never changes, else None.

    On such a series the last value is exact and a network's small wiggles
    would only be noise; a single sample is the shortest constant series.
    """
    finite = np.isfinite(values)
    if finite.all() and len(values) > 1 and (values[1:] != values[:-1]).any(axis=0).all():
        return None  # the common case, decided without a loop
    seen = []
    for f, name in enumerate(names):
        col = values[:, f][np.isfinite(values[:, f])]
        if col.size == 0:
            continue
        if col.size > 1 and np.ptp(col) > 1e-12 * max(1.0, float(np.abs(col).max())):
            return None
        seen.append(f"{name} {col[-1]:g}")
    if not seen:
        return None
    count = int(np.isfinite(values).any(axis=1).sum())
    what = "a single observation" if count == 1 else f"constant over {count} observed steps"
    return f"the history is {what} ({', '.join(seen)}): the last value is forecast"


def carry_recent(values: np.ndarray, max_steps: int) -> np.ndarray:
    """Repeat the last finite value over a trailing NaN run of at most `max_steps`.

    The newest scrape often has not landed when the operator reads; a short
    run is carried forward, a longer one stays missing (and forces a fallback).
    """
    ok = np.flatnonzero(np.isfinite(values))
    if ok.size and 0 < len(values) - 1 - ok[-1] <= max_steps:
        values = values.copy()
        values[ok[-1] + 1 :] = values[ok[-1]]
    return values


def window_problem(values: np.ndarray, names: tuple[str, ...], lookback: int, step_seconds: float) -> str | None:
    """Why the last `lookback` rows cannot feed a model, or None when they can."""
    if len(values) < lookback:
        have = len(values) * step_seconds
        return (
            f"history too short: {len(values)} steps ({have:g} s) at {step_seconds:g} s, "
            f"the model needs {lookback} ({lookback * step_seconds:g} s)"
        )
    window = values[-lookback:]
    if np.isfinite(window).all():
        return None
    for f, name in enumerate(names):
        col = window[:, f]
        if not np.isfinite(col).any():
            return f"feature {name!r} is missing from the last {lookback} steps"
        if not np.isfinite(col).all():
            bad = int((~np.isfinite(col)).sum())
            return f"feature {name!r} has {bad} missing samples in the last {lookback} steps (gaps longer than {DEFAULT_MAX_GAP_STEPS} steps)"
    return None
