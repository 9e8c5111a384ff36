"""Turn the timestamp columns found in real traces into epoch seconds.

Handles ISO 8601 with `T` or a space, a trailing `Z`, fractional seconds of
any length (Azure writes 7 digits), explicit UTC offsets, and plain epoch
numbers (seconds, or milliseconds when the numbers are that large).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Sequence

import numpy as np

from .errors import SeriesError

#: Epoch numbers above this are taken as milliseconds (it is year 5138 in seconds).
_MS_THRESHOLD = 1e11


def parse_times(raw: Sequence[str], *, column: str = "time") -> np.ndarray:
    """Epoch seconds (float64) for each string in `raw`; SeriesError names the first bad row."""
    values = [s.strip().strip('"') for s in raw]
    if not values:
        return np.empty(0, dtype=np.float64)
    numeric = _try_numeric(values)
    if numeric is not None:
        return numeric / 1000.0 if np.nanmax(np.abs(numeric)) > _MS_THRESHOLD else numeric
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
