"""`--load-scale X`: the same traffic, X times heavier.

- A rate trace's counts are multiplied by X (any X >= 1).
- A request trace becomes X superposed copies of itself. Copy 0 is the
  trace as read; copy k > 0 is shifted circularly by a seeded offset in
  [0, duration), so bursts of different copies rarely line up and fleets grow
  X-fold with the trace's shape (its diurnal swing, its idle minutes) kept.
  Requests cannot be split, so X must be a whole number for a request trace:
  a fractional X is refused rather than silently rounded.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import SimError
from .trace_types import RateTrace, RequestTrace

#: mixed into the replay seed, so that the offsets do not reuse the stream
#: the trace readers and the cluster draw from with the same seed
_OFFSET_STREAM = 0x5CA1E


def check_load_scale(x: float) -> float:
    """X itself, or SimError naming the flag: it must be finite and >= 1."""
    if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x) or x < 1.0:
        raise SimError(f"--load-scale must be a finite number >= 1, got {x!r}")
    return float(x)


def circular_offsets(copies: int, period: float, seed: int) -> np.ndarray:
    """Shift of each copy, seconds: 0 for copy 0, seeded uniform in [0, period) for the rest."""
    rng = np.random.default_rng([seed, _OFFSET_STREAM])
    offsets = rng.uniform(0.0, period, copies)
    offsets[0] = 0.0
    return offsets


def scale_load(trace: RequestTrace | RateTrace, x: float, seed: int = 0) -> RequestTrace | RateTrace:
    """The trace with X times its load; SimError on a bad X."""
    x = check_load_scale(x)
    if x == 1.0:
        return trace
    note = f"load scaled x{x:g}"
    if isinstance(trace, RateTrace):
        return RateTrace(trace.name, trace.tick_seconds, trace.counts * x,
                         notes=(*trace.notes, f"{note}: every count multiplied"))
    if x != int(x):
        raise SimError(f"--load-scale must be a whole number for a request trace ({trace.name}); got {x:g}")
    copies = int(x)
    period = trace.duration_seconds
    if period <= 0:
        return trace
    offsets = circular_offsets(copies, period, seed)
    times = np.concatenate([np.mod(trace.arrivals + off, period) if off else trace.arrivals for off in offsets])
    # a stable sort keeps the original order among equal times (copy 0 first)
    order = np.argsort(times, kind="stable")

    def tile(values: np.ndarray | None) -> np.ndarray | None:
        return None if values is None else np.tile(values, copies)[order]

    shifts = ", ".join(f"{off:.0f}" for off in offsets[1:])
    return RequestTrace(trace.name, times[order], tile(trace.input_tokens), tile(trace.output_tokens),
                        notes=(*trace.notes, f"{note}: {copies} copies superposed, shifted circularly by 0, {shifts} s"))
