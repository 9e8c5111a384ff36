"""Load a time series from a CSV file.

The time column and the value column are found case-insensitively
(`timestamp`, `time`, ... and `value`) unless named, so the files under
`../shared/traces/` load as they are; a file of two columns, one of them the
time, has its other as the value whatever its name (`timestamp,rps`). Rows must be in time order: a row that
goes back in time is a SeriesError naming the row, because silently sorting
would hide a broken export. A repeated timestamp (two NAB CloudWatch files
have eleven) is merged into one sample holding the mean of its values, and
the series carries a warning saying so.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import SeriesError
from .input_files import readable
from .timeparse import parse_times

TIME_COLUMNS = ("timestamp", "time", "ts", "datetime", "date")
VALUE_COLUMNS = ("value", "y", "rate", "latency_ms")


@dataclass(frozen=True)
class RawSeries:
    """Irregular samples of one value: epoch seconds and values (NaN = missing)."""

    name: str
    times: np.ndarray
    values: np.ndarray
    warnings: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.times)


def find_column(header: list[str], wanted: str | None, candidates: tuple[str, ...], role: str,
                flag: str | None = None) -> int:
    """Index of the column for `role`: the named one, else the first candidate present. `flag` is the
    option that names it (default `--<role>-column`)."""
    lowered = [h.strip().strip('"').lower() for h in header]
    names = (wanted,) if wanted else candidates
    for name in names:
        if name and name.lower() in lowered:
            return lowered.index(name.lower())
    shown = ", ".join(h.strip() for h in header)
    flag = flag or f"--{role}-column"
    if wanted:
        raise SeriesError(f"no column {wanted!r} in header [{shown}]; check {flag}")
    raise SeriesError(f"no {role} column ({' / '.join(candidates)}) in header [{shown}]; name it with {flag}")


def find_value_column(header: list[str], time_index: int, wanted: str | None, flag: str = "--value-column") -> int:
    """Index of the value column: the named one, else a candidate's (VALUE_COLUMNS), else the one
    column beside the time in a two-column header."""
    try:
        return find_column(header, wanted, VALUE_COLUMNS, "value", flag)
    except SeriesError:
        if wanted is None and len(header) == 2:
            return 1 - time_index
        raise


def load_csv(path: str | Path, *, time_column: str | None = None, value_column: str | None = None,
             value_flag: str = "--value-column") -> RawSeries:
    """Read one series from a CSV file; see the module docstring for the rules. `value_flag` is the
    option that named `value_column`, for the error when the header lacks it."""
    path = Path(path)
    try:
        with readable(path), path.open(newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.reader(handle))
    except OSError as exc:
        raise SeriesError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SeriesError(f"{path} is not a UTF-8 text CSV file") from None
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        raise SeriesError(f"{path} is empty")
    header, body = rows[0], rows[1:]
    t_idx = find_column(header, time_column, TIME_COLUMNS, "time")
    v_idx = find_value_column(header, t_idx, value_column, value_flag)
    if not body:
        raise SeriesError(f"{path} has a header but no rows")
    width = max(t_idx, v_idx) + 1
    for i, row in enumerate(body):
        if len(row) < width:
            raise SeriesError(f"{path}: row {i + 2} has {len(row)} fields, expected at least {width}")
    times = parse_times([r[t_idx] for r in body], column=header[t_idx])
    values = np.array([_number(r[v_idx]) for r in body], dtype=np.float64)
    check_order(times, source=str(path), allow_repeats=True)
    times, values, warnings = merge_repeats(times, values, source=str(path))
    return RawSeries(name=str(path), times=times, values=values, warnings=warnings)


def merge_repeats(times: np.ndarray, values: np.ndarray, *, source: str) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Merge samples sharing a timestamp into their mean; the warning names how many and where."""
    if len(times) < 2:
        return times, values, ()
    repeated = np.flatnonzero(np.diff(times) == 0)
    if repeated.size == 0:
        return times, values, ()
    unique, index = np.unique(times, return_inverse=True)
    finite = np.isfinite(values)
    sums = np.bincount(index, weights=np.where(finite, values, 0.0), minlength=len(unique))
    counts = np.bincount(index, weights=finite.astype(float), minlength=len(unique))
    with np.errstate(invalid="ignore", divide="ignore"):
        merged = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    note = (f"{source}: {repeated.size} repeated timestamp(s), first on row {int(repeated[0]) + 3}; "
            "each repeat was merged into one sample holding the mean of its values")
    return unique, merged, (note,)


def check_order(times: np.ndarray, *, source: str, allow_repeats: bool = False) -> None:
    """Raise SeriesError at the first backwards (or, unless allowed, repeated) timestamp; rows count the header."""
    if len(times) < 2:
        return
    diffs = np.diff(times)
    bad = np.flatnonzero(diffs < 0 if allow_repeats else diffs <= 0)
    if bad.size:
        i = int(bad[0])
        kind = "repeats" if diffs[i] == 0 else "goes back in time from"
        raise SeriesError(
            f"{source}: timestamp on row {i + 3} {kind} the one on row {i + 2}; "
            "timestamps must be strictly increasing"
        )


def _number(cell: str) -> float:
    text = cell.strip().strip('"')
    if not text or text.lower() in ("nan", "null", "none", "na"):
        return float("nan")
    try:
        return float(text)
    except ValueError:
        return float("nan")
