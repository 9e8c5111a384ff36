"""What every trace reader returns: arrivals on one clock, plus what the pod
model needs to price each request."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Token traces are served by LLM pods (SLO on time to first token); the
#: others by encoder pods (SLO on total latency).
LLM = "llm"
ENCODER = "encoder"


@dataclass(frozen=True)
class RequestTrace:
    """Individual requests, sorted by arrival.

    `arrivals` are seconds from the trace start (the first request at 0 or
    later). `input_tokens`/`output_tokens` are set for token traces only.
    """

    name: str
    arrivals: np.ndarray
    input_tokens: np.ndarray | None = None
    output_tokens: np.ndarray | None = None
    notes: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return LLM if self.input_tokens is not None else ENCODER

    @property
    def duration_seconds(self) -> float:
        return float(np.ceil(self.arrivals[-1])) if self.arrivals.size else 0.0

    def __len__(self) -> int:
        return int(self.arrivals.size)


@dataclass(frozen=True)
class RateTrace:
    """Arrival counts per `tick_seconds` tick, for traces too dense to replay
    request by request (ServeGen at ~1,900 req/s, generic rate CSVs)."""

    name: str
    tick_seconds: float
    counts: np.ndarray
    notes: tuple[str, ...] = field(default=())

    @property
    def kind(self) -> str:
        return ENCODER

    @property
    def duration_seconds(self) -> float:
        return float(self.counts.size * self.tick_seconds)

    def __len__(self) -> int:
        return int(self.counts.sum())


def check_sorted(times: np.ndarray, name: str, unit: str = "row") -> None:
    """Raise TraceError naming the first out-of-order row: a replay of an
    unsorted trace would silently reorder traffic."""
    from .errors import TraceError

    if times.size > 1:
        bad = np.flatnonzero(np.diff(times) < 0)
        if bad.size:
            i = int(bad[0]) + 1
            raise TraceError(f"{name}: not sorted by time: {unit} {i + 1} ({times[i]:g}) comes before {unit} {i} ({times[i - 1]:g}); sort the trace first")


#: the shortest and longest replay (after time compression): a minute of warm-up is
#: needed before policies act, and 35 days of 1 s ticks is already ~3 M ticks per policy
MIN_REPLAY_SECONDS = 60.0
MAX_REPLAY_SECONDS = 35 * 86_400.0


def check_span(seconds: float, name: str) -> None:
    """Raise TraceError for a trace too short to replay or so long (a timestamp jump of
    years, say) that its per-second arrays would not fit in memory."""
    from .errors import TraceError

    if not np.isfinite(seconds) or seconds > MAX_REPLAY_SECONDS:
        raise TraceError(f"{name}: the trace spans {seconds:.0f} s, more than {MAX_REPLAY_SECONDS:.0f} s (35 days) can be "
                         "replayed; check the timestamps for a jump, or compress time (--compress)")
    if seconds < MIN_REPLAY_SECONDS:
        raise TraceError(f"{name}: the trace spans {seconds:.0f} s; a replay needs at least {MIN_REPLAY_SECONDS:.0f} s")


#: more tokens than any model's context or output (the largest contexts are about 1e7)
MAX_TOKENS = 1e8


def check_tokens(inputs: np.ndarray, outputs: np.ndarray, source: str, unit: str = "row") -> None:
    """TraceError at the first token count that is not a finite number from 0 to MAX_TOKENS.

    NaN, 1e12 or negative counts used to be replayed as they were."""
    from .errors import TraceError

    for name, counts in (("input", inputs), ("output", outputs)):
        bad = np.flatnonzero(~np.isfinite(counts) | (counts < 0) | (counts > MAX_TOKENS))
        if bad.size:
            i = int(bad[0])
            raise TraceError(f"{source}: {unit} {i + 1}: {name} token count {counts[i]!r} is not a number from 0 to {MAX_TOKENS:g}")
