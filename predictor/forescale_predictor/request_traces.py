"""Bin real request-arrival traces into request-rate series.

- Azure LLM inference trace 2023: a CSV with one row per request and a
  `TIMESTAMP` column (wall-clock time).
- Mooncake: JSON lines with `timestamp` in milliseconds from the trace start;
  the series starts at epoch 0 because the trace carries no wall-clock time.

The rate of a bin is its request count divided by the step, in req/s. Only
whole bins are kept: a partial last bin would read as a sudden drop.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from .csv_source import RawSeries, find_column
from .errors import SeriesError
from .input_files import readable
from .timeparse import parse_times


def bin_arrivals(arrivals: np.ndarray, step_seconds: float, *, name: str) -> RawSeries:
    """Counts per `step_seconds` bin divided by the step: a rate series on a regular grid."""
    if arrivals.size == 0:
        raise SeriesError(f"{name}: no requests to bin")
    arrivals = np.sort(arrivals[np.isfinite(arrivals)])
    start = np.floor(arrivals[0] / step_seconds) * step_seconds
    bins = int(np.floor((arrivals[-1] - start) / step_seconds))  # whole bins only
    if bins < 1:
        raise SeriesError(f"{name}: the trace spans less than one {step_seconds:g} s step")
    idx = np.floor((arrivals - start) / step_seconds).astype(np.int64)
    counts = np.bincount(idx[idx < bins], minlength=bins).astype(np.float64)
    times = start + step_seconds * np.arange(bins)
    return RawSeries(name=name, times=times, values=counts / step_seconds)


def load_azure_trace(path: str | Path, step_seconds: float) -> RawSeries:
    """Request rate of an Azure LLM trace CSV (`TIMESTAMP` per request), binned at `step_seconds`."""
    path = Path(path)
    try:
        with readable(path), path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise SeriesError(f"{path} is empty")
            t_idx = find_column(header, None, ("timestamp", "time"), "time")
            raw = [row[t_idx] for row in reader if len(row) > t_idx and row[t_idx].strip()]
    except OSError as exc:
        raise SeriesError(f"cannot read {path}: {exc.strerror or exc}") from None
    return bin_arrivals(parse_times(raw, column=header[t_idx]), step_seconds, name=str(path))


def load_mooncake_trace(path: str | Path, step_seconds: float) -> RawSeries:
    """Request rate of a Mooncake JSONL trace (`timestamp` in ms from start), binned at `step_seconds`."""
    path = Path(path)
    stamps: list[float] = []
    try:
        with readable(path), path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    stamps.append(float(json.loads(line)["timestamp"]) / 1000.0)
                except (ValueError, KeyError, TypeError):
                    raise SeriesError(f"{path}: line {number} is not a JSON object with a numeric 'timestamp'") from None
    except OSError as exc:
        raise SeriesError(f"cannot read {path}: {exc.strerror or exc}") from None
    return bin_arrivals(np.asarray(stamps, dtype=np.float64), step_seconds, name=str(path))


def is_request_trace_csv(header: list[str]) -> bool:
    """True for a per-request CSV (Azure): a time column and no value column."""
    lowered = {h.strip().strip('"').lower() for h in header}
    return "timestamp" in lowered and "value" not in lowered and bool(lowered & {"contexttokens", "generatedtokens"})
