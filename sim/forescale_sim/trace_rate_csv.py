"""Reader for a generic CSV of request rates: a time column (`timestamp` or
`time`, any case; ISO date-time or epoch seconds) and a `value` column in
requests per second, e.g. the MS cloud-monitoring `TimeStamp,Value,Label` files.

The rate is held constant between rows and arrivals in each 1 s tick are
Poisson with that mean. Multi-day series may be compressed in time by
`compress` (rates kept), as for ServeGen.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .errors import TraceError
from .trace_files import epoch_seconds, existing_file
from .trace_types import RateTrace, check_sorted, check_span

#: the highest rate replayed, req/s (a whole large fleet; numpy's Poisson draw fails near 1e19)
MAX_RATE = 1e7
WHAT = "a rate CSV with a timestamp/time column and a value column (req/s)"


def _times(raw: list[str], path: Path) -> np.ndarray:
    try:
        return epoch_seconds([float(v) for v in raw])  # millisecond epochs were read as seconds
    except ValueError:
        pass
    try:
        stamps = np.array([v.strip().replace(" ", "T", 1).rstrip("Z") for v in raw], dtype="datetime64[ns]")
    except ValueError as exc:
        raise TraceError(f"{path}: a time is neither epoch seconds nor an ISO date-time ({exc})") from None
    return stamps.astype(np.int64).astype(np.float64) / 1e9


def read_rate_csv(path: str | Path, compress: float = 1.0, seed: int = 0) -> RateTrace:
    """Poisson arrival counts per 1 s tick following the CSV's rate column."""
    path = existing_file(path, WHAT)
    if compress <= 0:
        raise TraceError(f"compress must be > 0, got {compress}")
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = [h.strip().strip('"').lower() for h in next(reader, [])]
        t_i = next((header.index(n) for n in ("timestamp", "time") if n in header), None)
        if t_i is None or "value" not in header:
            raise TraceError(f"{path}: wrong format: header {header!r} needs a timestamp/time column and a value column ({WHAT})")
        v_i = header.index("value")
        raw_t, values = [], []
        for number, row in enumerate(reader, start=2):
            if not row:
                continue
            try:
                raw_t.append(row[t_i])
                values.append(float(row[v_i]))
            except (IndexError, ValueError):
                raise TraceError(f"{path}: line {number}: {row!r} has no numeric value") from None
    if len(values) < 2:
        raise TraceError(f"{path}: needs at least two rows of rates, found {len(values)}")
    times = _times(raw_t, path)
    check_sorted(times, str(path), unit="line")
    rates = np.asarray(values)
    if np.any(rates < 0) or not np.all(np.isfinite(rates)):
        raise TraceError(f"{path}: the value column must hold finite rates >= 0")
    if np.any(rates > MAX_RATE):
        # found by the hostile-files campaign: numpy's Poisson draw fails on 1e13 ("lam value too large")
        raise TraceError(f"{path}: a rate of {float(rates.max()):.3g} req/s is over the {MAX_RATE:g} req/s a replay simulates")
    t = (times - times[0]) / compress
    step = float(np.median(np.diff(t)))
    check_span(t[-1] + step, str(path))
    ticks = int(np.ceil(t[-1] + step))
    rate_at = rates[np.clip(np.searchsorted(t, np.arange(ticks), side="right") - 1, 0, rates.size - 1)]
    counts = np.random.default_rng(seed).poisson(rate_at)
    notes = (f"rate CSV: {len(values)} rows; Poisson arrivals per 1 s tick" + (f"; time compressed {compress:g}x" if compress != 1 else ""),)
    return RateTrace(name=str(path), tick_seconds=1.0, counts=counts, notes=notes)
