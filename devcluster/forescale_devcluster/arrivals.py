"""Arrival patterns for the load generator: built-in (shaped after a real trace) or read from a trace file.

A pattern is a `RateProfile`: a request rate (req/s) per time bin, read with
linear interpolation between bin centres. Three ways to get one:
- `builtin_pattern()`: the per-minute shape of the Azure LLM conversation
  trace (stored below, so it works without the traces), time-compressed, with
  a documented sales-peak ramp on top, scaled to a mean rate two cores can serve;
- `from_trace(path)`: an Azure CSV, a Mooncake JSONL or a rates CSV, binned,
  with time compression and rate scaling;
- `RateProfile.scaled_to_mean(rate)`: any profile scaled to a target mean.
`poisson_arrivals()` turns a profile into open-loop arrival times.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import os
import random
from dataclasses import dataclass
from typing import Callable, Iterator

#: Requests per minute of the Azure LLM inference trace, conversation service
#: (azure-llm-2023/AzureLLMInferenceTrace_conv.csv, 2023-11-16 18:15:46 onwards,
#: CC-BY-4.0, Patel et al., "Splitwise", ISCA 2024), divided by the mean of the
#: 58 full minutes (5.55 req/s; the 59th, partial minute dropped). Computed by
#: counting TIMESTAMPs per minute from the first request. The shape: a quiet
#: start, a plateau, a climb to +50% around minutes 26-36, a drop, a low tail.
AZURE_CONV_PER_MINUTE: tuple[float, ...] = (
    0.57, 0.80, 0.99, 1.06, 0.92, 0.82, 0.80, 0.78, 0.97, 0.89, 0.90, 0.91, 1.04, 0.98, 0.85, 0.84,
    0.84, 0.92, 1.03, 1.05, 1.05, 1.03, 1.22, 1.19, 1.16, 1.19, 1.30, 1.44, 1.43, 1.36, 1.34, 1.52,
    1.31, 1.24, 1.27, 1.25, 1.40, 0.93, 0.99, 0.95, 1.00, 1.07, 0.96, 1.08, 1.00, 1.13, 0.99, 0.75,
    0.66, 0.75, 0.80, 0.84, 0.77, 0.76, 0.73, 0.78, 0.74, 0.68,
)

TRACE_FORMATS = ("azure", "mooncake", "rates")


@dataclass(frozen=True)
class SalesPeak:
    """A flash-sale-like surge laid over a pattern: ramp up, hold, ramp down.

    Times are fractions of the pattern's duration (so they survive time
    compression); `factor` multiplies the rate at the top.
    """

    start_fraction: float = 0.45
    ramp_fraction: float = 0.08
    hold_fraction: float = 0.12
    factor: float = 2.0

    def multiplier(self, fraction: float) -> float:
        """Rate multiplier at `fraction` of the pattern (1.0 outside the peak)."""
        up_end = self.start_fraction + self.ramp_fraction
        hold_end = up_end + self.hold_fraction
        down_end = hold_end + self.ramp_fraction
        if fraction <= self.start_fraction or fraction >= down_end:
            return 1.0
        if fraction < up_end:
            return 1.0 + (self.factor - 1.0) * (fraction - self.start_fraction) / self.ramp_fraction
        if fraction <= hold_end:
            return self.factor
        return self.factor - (self.factor - 1.0) * (fraction - hold_end) / self.ramp_fraction


@dataclass(frozen=True)
class RateProfile:
    """A request rate per bin of `bin_seconds`; callable as rate(t) for t in seconds from the start."""

    rates: tuple[float, ...]
    bin_seconds: float
    source: str = ""

    def __post_init__(self) -> None:
        if not self.rates:
            raise ValueError(f"rate profile {self.source!r} has no bins")
        if not self.bin_seconds > 0:
            raise ValueError(f"bin_seconds must be > 0, got {self.bin_seconds}")
        if any(not math.isfinite(r) or r < 0 for r in self.rates):
            raise ValueError(f"rate profile {self.source!r} has a negative or non-finite rate")

    @property
    def duration(self) -> float:
        """Seconds the profile covers."""
        return len(self.rates) * self.bin_seconds

    @property
    def mean(self) -> float:
        """Mean rate over the profile (req/s)."""
        return sum(self.rates) / len(self.rates)

    @property
    def peak(self) -> float:
        """Highest bin rate (req/s)."""
        return max(self.rates)

    def __call__(self, t: float) -> float:
        """Rate at `t`: linear between bin centres, held flat before the first and after the last."""
        x = t / self.bin_seconds - 0.5
        if x <= 0:
            return self.rates[0]
        i = int(x)
        if i >= len(self.rates) - 1:
            return self.rates[-1]
        frac = x - i
        return self.rates[i] * (1 - frac) + self.rates[i + 1] * frac

    def scaled_to_mean(self, mean_rate: float) -> "RateProfile":
        """The same shape with mean `mean_rate` req/s."""
        if not mean_rate > 0:
            raise ValueError(f"target mean rate must be > 0 req/s, got {mean_rate}")
        if self.mean <= 0:
            raise ValueError(f"rate profile {self.source!r} is all zeros; it cannot be scaled")
        k = mean_rate / self.mean
        return RateProfile(tuple(r * k for r in self.rates), self.bin_seconds, self.source)

    def scaled(self, factor: float) -> "RateProfile":
        """Every rate multiplied by `factor`."""
        if not factor > 0:
            raise ValueError(f"rate scale must be > 0, got {factor}")
        return RateProfile(tuple(r * factor for r in self.rates), self.bin_seconds, self.source)

    def compressed(self, factor: float) -> "RateProfile":
        """The same rates played `factor` times faster (an hour at factor 12 lasts 5 minutes)."""
        if not factor > 0:
            raise ValueError(f"time compression must be > 0, got {factor}")
        return RateProfile(self.rates, self.bin_seconds / factor, self.source)

    def resampled(self, bin_seconds: float) -> "RateProfile":
        """The profile read every `bin_seconds` (by interpolation), same duration."""
        if not bin_seconds > 0:
            raise ValueError(f"bin_seconds must be > 0, got {bin_seconds}")
        n = max(1, round(self.duration / bin_seconds))
        return RateProfile(tuple(self((i + 0.5) * bin_seconds) for i in range(n)), bin_seconds, self.source)


def builtin_pattern(mean_rate: float = 30.0, seconds_per_minute: float = 5.0,
                    peak: SalesPeak | None = SalesPeak()) -> RateProfile:
    """The Azure conversation trace's per-minute shape, compressed, with an optional sales peak.

    One trace minute lasts `seconds_per_minute` seconds (5 s: the 58-minute
    trace plays in 4 min 50 s). The peak multiplies the rate as described by
    `SalesPeak`. The result is scaled so its mean is `mean_rate` req/s; with the
    default 30 req/s and peak the busiest second asks about 73 req/s.
    """
    if not seconds_per_minute > 0:
        raise ValueError(f"seconds_per_minute must be > 0, got {seconds_per_minute}")
    base = RateProfile(AZURE_CONV_PER_MINUTE, seconds_per_minute, "builtin: azure-llm-2023 conv, per minute")
    if peak is None:
        return base.scaled_to_mean(mean_rate)
    fine = base.resampled(min(1.0, seconds_per_minute))
    n = len(fine.rates)
    shaped = tuple(r * peak.multiplier((i + 0.5) / n) for i, r in enumerate(fine.rates))
    return RateProfile(shaped, fine.bin_seconds, base.source + f", sales peak x{peak.factor:g}").scaled_to_mean(mean_rate)


# -- trace files ----------------------------------------------------------------
def detect_format(path: str) -> str:
    """'mooncake' for .jsonl, 'azure' for a CSV with TIMESTAMP and ContextTokens, else 'rates'."""
    if path.endswith((".jsonl", ".json")):
        return "mooncake"
    with open(path, newline="") as fh:
        header = [h.strip().lower() for h in next(csv.reader(fh), [])]
    return "azure" if "timestamp" in header and "contexttokens" in header else "rates"


def from_trace(path: str, fmt: str = "auto", *, bin_seconds: float = 10.0, time_compression: float = 1.0,
               rate_scale: float = 1.0, mean_rate: float | None = None) -> RateProfile:
    """Read a trace file into a rate profile.

    `azure` and `mooncake` traces list requests: they are counted per
    `bin_seconds` of trace time. A `rates` CSV (time + value columns, found
    case-insensitively: `timestamp`/`time`, `value`/`rate`) already gives a
    rate per row. Then the profile is played `time_compression` times faster
    and either multiplied by `rate_scale` or, when `mean_rate` is given,
    scaled to that mean.
    """
    if not os.path.isfile(path):
        raise ValueError(f"trace file {path!r} not found")
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt not in TRACE_FORMATS:
        raise ValueError(f"unknown trace format {fmt!r}; use one of {', '.join(TRACE_FORMATS)} or auto")
    if not bin_seconds > 0:
        raise ValueError(f"bin_seconds must be > 0, got {bin_seconds}")
    if fmt == "rates":
        profile = _read_rates_csv(path)
    else:
        times = _read_azure_times(path) if fmt == "azure" else _read_mooncake_times(path)
        profile = _bin_counts(times, bin_seconds, f"{fmt}: {path}")
    profile = profile.compressed(time_compression)
    return profile.scaled_to_mean(mean_rate) if mean_rate is not None else profile.scaled(rate_scale)


def _bin_counts(times: list[float], bin_seconds: float, source: str) -> RateProfile:
    if not times:
        raise ValueError(f"trace {source!r} has no requests")
    start = min(times)
    n = int((max(times) - start) // bin_seconds) + 1
    counts = [0] * n
    for t in times:
        counts[int((t - start) // bin_seconds)] += 1
    return RateProfile(tuple(c / bin_seconds for c in counts), bin_seconds, source)


def _parse_time(text: str, where: str) -> float:
    """Epoch seconds from a number or an ISO date (microseconds beyond 6 digits are cut)."""
    text = text.strip().strip('"')
    try:
        return float(text)
    except ValueError:
        pass
    try:
        cleaned = text.replace("Z", "+00:00")
        date, sep, rest = cleaned.partition(".")
        if sep:
            digits = "".join(ch for ch in rest if ch.isdigit())
            rest = digits[:6] + rest[len(digits):]
            cleaned = date + "." + rest
        moment = dt.datetime.fromisoformat(cleaned)
    except ValueError:
        raise ValueError(f"{where}: cannot read time {text!r} (want epoch seconds or an ISO date)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.timestamp()


def _column(header: list[str], names: tuple[str, ...], path: str) -> int:
    lowered = [h.strip().lower() for h in header]
    for name in names:
        if name in lowered:
            return lowered.index(name)
    raise ValueError(f"{path}: no {' or '.join(names)} column in header {header}")


def _read_azure_times(path: str) -> list[float]:
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"trace {path!r} is empty")
        col = _column(header, ("timestamp",), path)
        return [_parse_time(row[col], f"{path} line {i}") for i, row in enumerate(reader, start=2) if row]


def _read_mooncake_times(path: str) -> list[float]:
    times = []
    with open(path) as fh:
        for i, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                times.append(float(json.loads(line)["timestamp"]) / 1000.0)  # milliseconds from the start
            except (ValueError, KeyError, TypeError):
                raise ValueError(f"{path} line {i}: want a JSON object with a numeric 'timestamp' (ms)") from None
    return times


def _read_rates_csv(path: str) -> RateProfile:
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"trace {path!r} is empty")
        t_col = _column(header, ("timestamp", "time"), path)
        v_col = _column(header, ("value", "rate"), path)
        points = []
        for i, row in enumerate(reader, start=2):
            if not row:
                continue
            try:
                value = float(row[v_col])
            except (ValueError, IndexError):
                raise ValueError(f"{path} line {i}: cannot read a rate from {row!r}") from None
            points.append((_parse_time(row[t_col], f"{path} line {i}"), value))
    if len(points) < 2:
        raise ValueError(f"rates file {path!r} needs at least two rows")
    points.sort()
    steps = sorted(b[0] - a[0] for a, b in zip(points, points[1:]))
    step = steps[len(steps) // 2]
    if step <= 0:
        raise ValueError(f"rates file {path!r} has repeated timestamps")
    return RateProfile(tuple(max(0.0, v) for _, v in points), step, f"rates: {path}")


# -- arrivals -------------------------------------------------------------------
def poisson_arrivals(rate: Callable[[float], float], duration: float, *, seed: int = 0,
                     rate_max: float | None = None) -> Iterator[float]:
    """Arrival times (s from the start) of a Poisson process with time-varying `rate`, until `duration`.

    Exact thinning (Lewis & Shedler): candidates at `rate_max`, each kept with
    probability rate(t) / rate_max. Without `rate_max` it is taken from a
    RateProfile's peak or found by sampling `rate` every 0.1 s.
    """
    if not duration > 0:
        raise ValueError(f"duration must be > 0 s, got {duration}")
    if rate_max is None:
        rate_max = rate.peak if isinstance(rate, RateProfile) else max(
            rate(i * 0.1) for i in range(int(duration * 10) + 1)) * 1.05
    if rate_max <= 0:
        return
    rng = random.Random(seed)
    t = 0.0
    while True:
        t += rng.expovariate(rate_max)
        if t >= duration:
            return
        if rng.random() * rate_max < rate(t):
            yield t
