"""Builders of synthetic samples and step rows for the analysis tests."""

from __future__ import annotations

from forescale_stress.percentiles import StepStats
from forescale_stress.samples import Sample


def constant_load(rate: float, start: float, end: float, latency_ms, step: int = 0, ok=lambda t: True) -> list[Sample]:
    """Requests at exactly `rate` per second over [start, end); `latency_ms`
    and `ok` are functions of the scheduled time."""
    out = []
    n = int(round((end - start) * rate))
    for i in range(n):
        t = start + i / rate
        good = ok(t)
        out.append(Sample(step, t, t, t + latency_ms(t) / 1000.0, good, 200 if good else 503,
                          None if good else "http_503"))
    return out


def row(index: int, rate: float, achieved: float, p99: float | None, during_fault: bool = False,
        slo_unconfirmed: bool = False) -> StepStats:
    """A step summary with only the fields the knee and slope read."""
    return StepStats(index=index, rate=rate, achieved_rate=achieved, sent_rate=rate, sent=100, samples=100,
                     errors=0, p50_ms=None if p99 is None else p99 / 2, p99_ms=p99, p999_ms=None,
                     under_sampled=p99 is None, during_fault=during_fault, seconds=1.0, start=float(index),
                     generator_cpu_seconds=0.0, generator_lag_p99_ms=0.0, slo_unconfirmed=slo_unconfirmed)
