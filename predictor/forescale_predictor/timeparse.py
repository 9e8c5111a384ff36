"""Turn the timestamp columns found in real traces into epoch seconds.

Handles ISO 8601 with `T` or a space, a trailing `Z`, fractional seconds of
any length (Azure writes 7 digits), explicit UTC offsets, and plain epoch
numbers (seconds; milliseconds, microseconds or nanoseconds when the numbers
are that large: today is about 1.7e9 s, 1.7e12 ms, 1.7e15 us, 1.7e18 ns).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Sequence

import numpy as np

from .errors import SeriesError

#: (largest |epoch| read in this unit, divisor to seconds): above 1e11 is not seconds (year 5138),
#: above 1e14 not milliseconds, above 1e17 not microseconds. Microseconds used to be read as
#: milliseconds: a series 1,000 times too long, silently.
_UNITS = ((1e11, 1.0), (1e14, 1e3), (1e17, 1e6), (float("inf"), 1e9))


def epoch_divisor(numbers: np.ndarray) -> float:
    """What to divide epoch numbers by for seconds, judged by the largest of them."""
    largest = float(np.nanmax(np.abs(numbers))) if numbers.size and np.isfinite(numbers).any() else 0.0
    return next(divisor for bound, divisor in _UNITS if largest <= bound)


def parse_times(raw: Sequence[str], *, column: str = "time") -> np.ndarray:
    """Epoch seconds (float64) for each string in `raw`; SeriesError names the first bad row."""
    values = [s.strip().strip('"') for s in raw]
    if not values:
        return np.empty(0, dtype=np.float64)
    numeric = _try_numeric(values)
    if numeric is not None:
        return numeric / epoch_divisor(numeric)
    cleaned = [v.replace(" ", "T", 1).rstrip("Z") for v in values]
    try:
        stamps = np.array(cleaned, dtype="datetime64[ns]")
        return stamps.astype(np.int64).astype(np.float64) / 1e9
    except ValueError:
        pass
    out = np.empty(len(values), dtype=np.float64)
    for i, value in enumerate(values):
        out[i] = _parse_one(value, row=i + 1, column=column)
    return out


def _try_numeric(values: list[str]) -> np.ndarray | None:
    try:
        return np.array([float(v) for v in values], dtype=np.float64)
    except ValueError:
        return None


def _parse_one(value: str, *, row: int, column: str) -> float:
    text = value.replace("Z", "+00:00")
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise SeriesError(f"row {row}: cannot read {value!r} in column {column!r} as a timestamp") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return stamp.timestamp()
