"""The step ramp, the arrival process and the stop conditions: plain arithmetic
with no I/O, so every rule is testable on its own.

Rates compound: step i offers `start_rate * (1 + step_percent/100) ** i`, so
`--step-percent 10` is "+10% of the previous step". `--step-percent 0` holds a
constant rate, which is the clean way to measure faults.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from forescale_stress.errors import StressError

ARRIVALS = ("poisson", "uniform", "gamma:CV")
#: the largest gap CV a `gamma:CV` process takes. 1 is Poisson; the ServeGen paper's fitted
#: inter-arrival CVs of real model services run to the low single digits; past 10 nearly every
#: request of a step lands in one clump, which is no longer a rate to read a knee from
MAX_GAMMA_CV = 10.0
#: stop reasons, as printed in `stopped_because`
STOP_SLO = "slo"
STOP_ERROR_RATE = "error_rate"
STOP_MAX_RATE = "max_rate"
STOP_MAX_REQUESTS = "max_requests"
STOP_MAX_SECONDS = "max_seconds"
STOP_INTERRUPTED = "interrupted"
#: with no bounds given, a run finishes by itself within five minutes
DEFAULT_MAX_SECONDS = 300.0


@dataclass(frozen=True)
class Ramp:
    """How the offered rate grows and how long each step lasts."""

    start_rate: float
    step_percent: float = 10.0
    step_seconds: float = 10.0
    min_samples: int = 100
    #: a step is extended to collect `min_samples`, but never beyond this
    max_step_seconds: float | None = None

    def validate(self) -> None:
        """Raise StressError on values that cannot make a ramp."""
        if not math.isfinite(self.start_rate) or self.start_rate <= 0:
            raise StressError(f"--start-rate must be > 0 requests/s, got {self.start_rate:g}")
        if not math.isfinite(self.step_percent) or self.step_percent < 0:
            raise StressError(f"--step-percent must be >= 0, got {self.step_percent:g}")
        if not math.isfinite(self.step_seconds) or self.step_seconds <= 0:
            raise StressError(f"--step-seconds must be > 0, got {self.step_seconds:g}")
        if self.min_samples < 1:
            raise StressError(f"--min-samples must be >= 1, got {self.min_samples}")
        if self.max_step_seconds is not None and self.max_step_seconds < self.step_seconds:
            raise StressError("--max-step-seconds must be >= --step-seconds")

    def rate(self, index: int) -> float:
        """Offered rate of step `index` (0-based), in requests per second."""
        return self.start_rate * (1.0 + self.step_percent / 100.0) ** index

    @property
    def needed_samples(self) -> int:
        """Requests a step sends before it may end: enough for its p99 to be
        reported (at least `min_samples`, and 100 since p99 needs 100)."""
        return max(self.min_samples, 100)

    @property
    def cap_seconds(self) -> float:
        """Longest a step may be extended to (default 3 x step_seconds)."""
        return self.max_step_seconds if self.max_step_seconds is not None else 3.0 * self.step_seconds

    def duration(self, rate: float) -> float:
        """Length of a step at `rate`: `step_seconds`, extended until it offers
        `needed_samples` requests, but never beyond `cap_seconds` (a step cut
        by the cap ends under-sampled)."""
        return max(self.step_seconds, min(self.cap_seconds, self.needed_samples / rate))


@dataclass(frozen=True)
class Bounds:
    """Stop conditions. `max_seconds` always applies (load plus drain)."""

    slo_ms: float = 200.0
    max_error_rate: float = 0.05
    max_rate: float | None = None
    max_requests: int | None = None
    max_seconds: float = DEFAULT_MAX_SECONDS

    def validate(self, ramp: Ramp) -> None:
        """Raise StressError on bounds that are invalid or that stop the run
        before its first step."""
        if not math.isfinite(self.slo_ms) or self.slo_ms <= 0:
            raise StressError(f"--slo-ms must be > 0, got {self.slo_ms:g}")
        if not 0 <= self.max_error_rate <= 1:
            raise StressError(f"--max-error-rate is a fraction in [0, 1], got {self.max_error_rate:g}")
        if self.max_rate is not None:
            if not math.isfinite(self.max_rate) or self.max_rate <= 0:
                raise StressError(f"--max-rate must be > 0, got {self.max_rate:g}")
            if self.max_rate < ramp.start_rate:
                raise StressError(f"--max-rate {self.max_rate:g} is below --start-rate {ramp.start_rate:g}")
        if self.max_requests is not None and self.max_requests < 1:
            raise StressError(f"--max-requests must be >= 1, got {self.max_requests}")
        if not math.isfinite(self.max_seconds) or self.max_seconds <= 0:
            raise StressError(f"--max-seconds must be > 0, got {self.max_seconds:g}")

    def over_max_rate(self, rate: float) -> bool:
        """True when a step at `rate` would exceed `--max-rate`."""
        # A relative tolerance keeps 10 * 1.1**k from missing an exact bound.
        return self.max_rate is not None and rate > self.max_rate * (1 + 1e-9)

    def drain_seconds(self, request_timeout: float) -> float:
        """How long the run keeps for in-flight requests after the last send,
        out of `max_seconds`: a request timeout, but at most a quarter of the
        budget so short runs still send load."""
        return min(request_timeout, 0.25 * self.max_seconds)


def step_stop_reason(p99_ms: float | None, error_rate: float, bounds: Bounds, exempt: bool) -> str | None:
    """The stop condition a finished step triggers, if any.

    `p99_ms` is None when the step has too few samples to judge; `exempt` is
    True for steps inside a fault window, whose latency says nothing about
    the knee.
    """
    if exempt:
        return None
    if p99_ms is not None and p99_ms > bounds.slo_ms:
        return STOP_SLO
    if error_rate > bounds.max_error_rate:
        return STOP_ERROR_RATE
    return None


def parse_arrivals(kind: str) -> float | None:
    """The gap CV of a `gamma:CV` process, None for `poisson` and `uniform`; StressError naming the flag
    for anything else."""
    if kind in ("poisson", "uniform"):
        return None
    name, _, value = kind.partition(":")
    if name != "gamma" or not value:
        raise StressError(f"--arrivals must be one of {', '.join(ARRIVALS)}, got {kind!r}")
    try:
        cv = float(value)
    except ValueError:
        cv = math.nan
    if not 0 < cv <= MAX_GAMMA_CV:  # NaN fails too
        raise StressError(f"--arrivals gamma:CV needs a gap coefficient of variation in (0, {MAX_GAMMA_CV:g}], got {kind!r}")
    return cv


def arrival_offsets(rate: float, duration: float, kind: str, rng: random.Random) -> list[float]:
    """Send times within one step, in seconds from its start, for an open-loop
    generator. The step offers exactly `round(rate * duration)` requests, so
    the offered rate is the one reported:

    - `uniform`: evenly spaced;
    - `poisson`: at times drawn uniformly over the step and sorted, which is
      how a Poisson process distributes a given number of arrivals (the
      bursts are Poisson's; only the count is fixed);
    - `gamma:CV`: a renewal process whose gaps are gamma distributed with that
      coefficient of variation (shape 1 / CV^2), scaled so the step holds its
      count: CV 1 is Poisson, above 1 the requests come in clumps. Production
      arrivals are burstier than Poisson (ServeGen fits its services' gaps with
      gamma and Weibull laws), and a knee found under Poisson arrivals need
      not hold under clumps: in the replay, ServeGen m-mid's pods held about
      700 rps per pod where the Poisson knee is 824 (docs/frontier.md; against
      the emulated server the knee did not move consistently, docs/stress.md).
    """
    cv = parse_arrivals(kind)
    count = int(round(rate * duration))
    if kind == "uniform":
        return [i / rate for i in range(count)]
    if cv is None:
        return sorted(rng.uniform(0.0, duration) for _ in range(count))
    shape = 1.0 / (cv * cv)
    # count + 1 gaps: the last one closes the step, so every send lies inside it
    gaps = [rng.gammavariate(shape, 1.0) for _ in range(count + 1)]
    total = sum(gaps) or 1.0
    offsets, at = [], 0.0
    for gap in gaps[:count]:
        at += gap
        offsets.append(min(at / total * duration, math.nextafter(duration, 0.0)))
    return offsets
