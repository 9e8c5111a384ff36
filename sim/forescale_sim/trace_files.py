"""Checks every trace reader makes before parsing: the file exists, is a
file, and is not empty. Kept apart so each reader's error reads the same."""

from __future__ import annotations

from pathlib import Path

from .errors import TraceError

#: the largest trace read; the real Azure and Mooncake traces are a few hundred MB at most.
#: Checked before reading: a 2 GB sparse file used to be read whole (4.3 GB) and then fail.
MAX_TRACE_BYTES = 1 << 30


def existing_file(path: str | Path, what: str) -> Path:
    """The path as a Path; TraceError when it is missing, a folder or empty."""
    path = Path(path)
    if not path.exists():
        raise TraceError(f"{path}: no such file (expected {what})")
    if path.is_dir():
        raise TraceError(f"{path}: is a folder, expected {what}")
    size = path.stat().st_size
    if size == 0:
        raise TraceError(f"{path}: the file is empty (expected {what})")
    if size > MAX_TRACE_BYTES:
        raise TraceError(f"{path}: is {size / (1 << 20):.0f} MiB; traces are limited to {MAX_TRACE_BYTES >> 20} MiB")
    return path


def epoch_seconds(numbers):
    """Epoch numbers in seconds, whatever their unit: above 1e11 they are milliseconds, above 1e14
    microseconds, above 1e17 nanoseconds (today is about 1.7e9 s). `forescale backtest` reads them alike."""
    import numpy as np

    numbers = np.asarray(numbers, dtype=np.float64)
    finite = numbers[np.isfinite(numbers)]
    largest = float(np.max(np.abs(finite))) if finite.size else 0.0
    for bound, divisor in ((1e11, 1.0), (1e14, 1e3), (1e17, 1e6)):
        if largest <= bound:
            return numbers / divisor
    return numbers / 1e9
