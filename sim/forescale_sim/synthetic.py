"""Traffic of our own making, for checking the engine on shapes no dev trace has.

Each family is a seeded, non-homogeneous Poisson process over a rate profile,
with LLM token counts drawn per request, written as an Azure-format CSV
(`TIMESTAMP,ContextTokens,GeneratedTokens`) so that `forescale replay --format
azure` reads it like a real trace.

Families (rates in requests per second, durations in seconds):
- `bursty`: a code-completion service. Idle minutes (rate 0) alternate with
  active stretches near the mean, and bursts of 20-60 s reach `peak`.
  The issue that asked for this measured a real one at mean 2.5, bursts to 40.
- `ramp`: a linear climb from a low rate to `peak` over the middle half, then
  a plateau (a launch, a sales peak building).
- `drift`: a slow sinusoid (period of the whole trace) plus noise: a diurnal
  cycle compressed into the replay.
- `spikes`: a steady base with short isolated spikes of 3-5x (the "sales
  peak" of seconds, which no forecast at a 15 s step can see coming).
- `step`: a steady `mean` that climbs to `peak` within a minute, at a seeded
  time in the trace's second third, holds there for a quarter of the trace
  and falls back within a minute: a sales peak of minutes, faster than a pod
  starts and longer than B's reserve can carry alone.
- `periodic`: a job on a timer (a cron job, a batch client that polls): a
  steady `mean`, and every period a burst of 30 s at `peak`. The period is
  seeded between 3 and 10 minutes: longer than the LSTM's 4-minute window
  and than a start-up plus the scale-down window, so each burst meets a pool
  sized for the mean unless the period itself is learned.

Token counts: inputs log-normal around 1,500 tokens (code completion sends
long contexts), outputs around 30; both clipped to what the decoder profile
accepts (2,048 context tokens).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from .errors import SimError

FAMILIES = ("bursty", "ramp", "drift", "spikes", "step", "periodic")
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
#: how long the step family takes to climb and to fall: a minute, shorter than a pod's start-up
STEP_EDGE_SECONDS = 60
#: how long each of the periodic family's bursts lasts: shorter than a start-up, as a timer's batch is
PERIODIC_BURST_SECONDS = 30
#: the periodic family's period is drawn from this range, seconds (module docstring)
PERIODIC_RANGE = (180, 600)


@dataclass(frozen=True)
class Shape:
    """A family's knobs. Defaults give a one-hour trace."""

    family: str
    seconds: int = 3600
    mean: float = 2.5
    peak: float = 40.0
    seed: int = 0


def rate_profile(shape: Shape) -> np.ndarray:
    """The arrival rate per second of the trace, before Poisson sampling."""
    if shape.family not in FAMILIES:
        raise SimError(f"unknown synthetic family {shape.family!r}; choose from {', '.join(FAMILIES)}")
    if shape.seconds < 120 or not (0 < shape.mean <= shape.peak):
        raise SimError(f"synthetic {shape.family}: need seconds >= 120 and 0 < mean <= peak, got {shape}")
    rng = np.random.default_rng(shape.seed)
    n = shape.seconds
    t = np.arange(n, dtype=float)
    if shape.family == "bursty":
        rate = np.zeros(n)
        i = 60  # the first minute is active, so every policy has something to size on
        rate[:60] = shape.mean
        while i < n:
            kind = rng.choice(["idle", "active", "burst"], p=[0.35, 0.45, 0.20])
            length = int(rng.integers(60, 240)) if kind != "burst" else int(rng.integers(20, 60))
            level = {"idle": 0.0, "active": shape.mean * rng.uniform(0.6, 1.8), "burst": shape.peak * rng.uniform(0.6, 1.0)}[kind]
            rate[i:i + length] = level
            i += length
        return rate
    if shape.family == "ramp":
        lo = shape.mean / 4
        ramp = np.clip((t - n / 4) / (n / 2), 0.0, 1.0)
        return lo + (shape.peak - lo) * ramp
    if shape.family == "drift":
        amp = (shape.peak - shape.mean) / 2
        base = shape.mean + amp * (1 - np.cos(2 * np.pi * t / n))
        noise = rng.normal(0.0, 0.1, n // 60 + 1).repeat(60)[:n]
        return np.maximum(0.0, base * (1.0 + noise))
    if shape.family == "step":
        start = n // 3 + int(rng.integers(0, n // 3 - STEP_EDGE_SECONDS))
        edge = np.clip((t - start) / STEP_EDGE_SECONDS, 0.0, 1.0) - np.clip((t - start - n // 4) / STEP_EDGE_SECONDS, 0.0, 1.0)
        return shape.mean + (shape.peak - shape.mean) * edge
    if shape.family == "periodic":
        period = int(rng.integers(*PERIODIC_RANGE))
        rate = np.full(n, shape.mean)
        for start in range(int(rng.integers(0, period)), n, period):
            rate[start:start + PERIODIC_BURST_SECONDS] = shape.peak
        return rate
    rate = np.full(n, shape.mean)
    for start in rng.integers(120, n - 60, size=max(1, n // 600)):
        rate[start:start + int(rng.integers(10, 40))] = shape.mean * rng.uniform(3.0, 5.0)
    return rate


def arrivals(shape: Shape) -> np.ndarray:
    """Sorted arrival times, seconds from 0: Poisson per second, uniform inside it."""
    rate = rate_profile(shape)
    rng = np.random.default_rng(shape.seed + 1)
    counts = rng.poisson(rate)
    times = np.repeat(np.arange(rate.size, dtype=float), counts) + rng.random(int(counts.sum()))
    return np.sort(times)


def write_azure_csv(shape: Shape, path: str | Path) -> Path:
    """Write the trace as an Azure LLM CSV; returns the path."""
    times = arrivals(shape)
    rng = np.random.default_rng(shape.seed + 2)
    inputs = np.clip(rng.lognormal(np.log(1500), 0.5, times.size), 16, 2000).astype(int)
    outputs = np.clip(rng.lognormal(np.log(30), 0.7, times.size), 1, 512).astype(int)
    path = Path(path)
    with path.open("w", encoding="utf-8") as out:
        out.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        for at, i, o in zip(times, inputs, outputs):
            stamp = (EPOCH + timedelta(seconds=float(at))).strftime("%Y-%m-%d %H:%M:%S.%f")
            out.write(f"{stamp},{i},{o}\n")
    return path
