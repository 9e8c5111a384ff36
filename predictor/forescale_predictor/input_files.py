"""Guards every file reader of the predictor's CLIs applies (backtest, train).

An adversarial pass found tracebacks for a CSV field over 128 KiB (csv.Error),
a 2 GB sparse file (read whole into 4.3 GB of memory first) and deeply nested
JSONL (RecursionError). Each is now a SeriesError naming the file and the problem.
"""

from __future__ import annotations

import contextlib
import csv
from pathlib import Path
from typing import Iterator

from .errors import SeriesError

#: the largest input file read; a year of 1 s samples as CSV is about 0.5 GB
MAX_INPUT_BYTES = 1 << 30


def check_size(path: Path, limit: int = MAX_INPUT_BYTES) -> None:
    """SeriesError when `path` is over `limit` bytes, before anything is read."""
    try:
        size = path.stat().st_size
    except OSError:
        return  # the reader reports a missing or unreadable file in its own words
    if size > limit:
        raise SeriesError(f"{path} is {size / (1 << 20):.0f} MiB; inputs are limited to {limit / (1 << 20):.0f} MiB")


@contextlib.contextmanager
def readable(path: Path) -> Iterator[None]:
    """Turn a parser's own failures on hostile content into SeriesError naming the file."""
    check_size(path)
    try:
        yield
    except csv.Error as exc:  # e.g. a field larger than the 131072-character limit
        raise SeriesError(f"{path}: not a readable CSV file ({exc})") from None
    except RecursionError:
        raise SeriesError(f"{path}: JSON nested too deeply") from None
