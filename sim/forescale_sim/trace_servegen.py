"""Reader for ServeGen (Alibaba Bailian) per-client window traces.

Each `chunk-<client>-trace.csv` has, per 600 s window and without a header:
`window_start_s, rate_req_per_s, cv_of_interarrival, dist_name, param1, param2`.
The service's load is the sum over clients. Inside each window, arrivals are
generated as a renewal process whose inter-arrival distribution is the
window's fitted family (Gamma or Weibull) with the fitted shape (`param1`),
rescaled so its mean matches the window's rate: the fitted scale (`param2`)
does not reproduce the rate column, the shape does reproduce the CV column.

Fourteen days at ~1,900 req/s cannot be replayed request by request, and a
replay of 14 real days would be far longer than a benchmark allows, so time
is compressed by `compress` (default 24: one day replays in one hour, each
600 s window lasts 25 s) while the rate inside a window is kept. Counts are
returned per 1 s tick. By default only the first day (144 windows) is
replayed, i.e. one hour of replay; `days` widens it (14 days take ~14 h of
simulated time and about half a minute just to generate the arrivals).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .errors import TraceError
from .trace_types import RateTrace, check_sorted

WINDOW_SECONDS = 600.0
DEFAULT_COMPRESS = 24.0
DEFAULT_DAYS = 1.0
WHAT = "a ServeGen folder of chunk-<client>-trace.csv files (or one such file): window_start,rate,cv,dist,param1,param2"


def _client_files(path: Path) -> list[Path]:
    if not path.exists():
        raise TraceError(f"{path}: no such file or folder (expected {WHAT})")
    files = sorted(path.glob("*.csv")) if path.is_dir() else [path]
    if not files:
        raise TraceError(f"{path}: the folder holds no .csv files (expected {WHAT})")
    return files


def _read_client(path: Path) -> list[tuple[float, float, float, str, float]]:
    if path.stat().st_size == 0:
        raise TraceError(f"{path}: the file is empty (expected {WHAT})")
    rows = []
    with path.open(newline="") as handle:
        for number, row in enumerate(csv.reader(handle), start=1):
            if not row:
                continue
            try:
                start, rate, cv = float(row[0]), float(row[1]), float(row[2])
                dist = row[3].strip()
                shape = float(row[4]) if row[4].strip() else 0.0
            except (IndexError, ValueError):
                raise TraceError(f"{path}: wrong format at line {number}: {row!r} (expected {WHAT})") from None
            if rate < 0 or not np.isfinite(rate):
                raise TraceError(f"{path}: line {number}: rate {rate} is not a non-negative number")
            rows.append((start, rate, cv, dist, shape))
    if not rows:
        raise TraceError(f"{path}: has no windows (expected {WHAT})")
    check_sorted(np.array([r[0] for r in rows]), str(path), unit="line")
    return rows


def _interarrivals(rng: np.random.Generator, n: int, rate: float, dist: str, shape: float) -> np.ndarray:
    """`n` inter-arrival gaps with mean 1/rate from the window's family and shape."""
    from math import gamma as gamma_fn

    if dist == "Gamma" and shape > 0:
        return rng.gamma(shape, 1.0 / (rate * shape), n)
    if dist == "Weibull" and shape > 0.05:
        # Weibull mean is scale * Gamma(1 + 1/k); very small shapes overflow Gamma.
        return rng.weibull(shape, n) / (rate * gamma_fn(1.0 + 1.0 / shape))
    return rng.exponential(1.0 / rate, n)  # no fit given: Poisson arrivals


def read_servegen(path: str | Path, compress: float = DEFAULT_COMPRESS, seed: int = 0, days: float = DEFAULT_DAYS) -> RateTrace:
    """Summed arrivals per 1 s tick over every client, time compressed by `compress`."""
    path = Path(path)
    if compress <= 0:
        raise TraceError(f"compress must be > 0, got {compress}")
    rng = np.random.default_rng(seed)
    clients = [_read_client(f) for f in _client_files(path)]
    starts = sorted({row[0] for rows in clients for row in rows})
    index = {s: i for i, s in enumerate(starts)}
    window = WINDOW_SECONDS / compress
    totals = np.zeros(len(starts))
    for rows in clients:
        for start, rate, _, _, _ in rows:
            totals[index[start]] += rate
    busy = np.flatnonzero(totals > 0)
    if busy.size == 0:
        raise TraceError(f"{path}: every window has rate 0: nothing to replay")
    first = int(busy[0])
    last = min(int(busy[-1]), first + int(round(days * 86400 / WINDOW_SECONDS)) - 1)
    ticks = int(np.ceil((last - first + 1) * window))
    counts = np.zeros(ticks, dtype=np.int64)
    for rows in clients:
        for start, rate, _, dist, shape in rows:
            w = index[start] - first
            if rate <= 0 or not 0 <= w <= last - first:
                continue
            expected = rate * window
            gaps = _interarrivals(rng, int(expected * 1.5 + 20), rate, dist, shape)
            times = np.cumsum(gaps)
            while times[-1] < window:  # heavy tails: draw on until the window is covered
                more = np.cumsum(_interarrivals(rng, int(expected + 20), rate, dist, shape)) + times[-1]
                times = np.concatenate([times, more])
            # a random phase, so a client's first arrival is not pinned to the window start
            times = (times - rng.uniform(0, times[0])) if times[0] > 0 else times
            times = times[(times >= 0) & (times < window)] + w * window
            counts += np.bincount(times.astype(np.int64), minlength=ticks)[:ticks]
    notes = (
        f"ServeGen: {len(clients)} client files summed; windows {first}..{last} of {len(starts)} ({(last - first + 1) * WINDOW_SECONDS / 86400:g} days)",
        f"time compressed {compress:g}x: each 600 s window replays in {window:g} s; rates kept",
    )
    return RateTrace(name=str(path), tick_seconds=1.0, counts=counts, notes=notes)
