"""Percentiles and the per-step summary.

A quantile q is reported only from at least `max(min_samples, 1/(1-q))`
samples: p99 needs 100 and p999 needs 1000, because below that the "p99" is
just the slowest request seen. Quantiles use the nearest-rank definition
(numpy's `inverted_cdf`): the value reported is one that was observed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from forescale_stress.samples import SampleTable


def required_samples(q: float, min_samples: int) -> int:
    """Fewest samples from which quantile `q` is reported."""
    return max(min_samples, int(round(1.0 / (1.0 - q))))


def nearest_rank(values: np.ndarray, q: float) -> float:
    """Nearest-rank quantile of a non-empty array (inf values allowed)."""
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    rank = max(1, math.ceil(q * len(ordered)))
    return float(ordered[rank - 1])


def reported_quantile(values: np.ndarray, q: float, min_samples: int) -> float | None:
    """Quantile `q` of `values`, or None when there are too few of them."""
    if len(values) < required_samples(q, min_samples):
        return None
    return nearest_rank(values, q)


@dataclass(frozen=True)
class StepWindow:
    """When a step ran (seconds from load start) and what it offered."""

    index: int
    rate: float
    start: float
    end: float
    cpu_seconds: float
    exempt: bool = False  # overlaps a fault window: not used for the knee or stops
    #: its p99 was over the SLO but the same rate, repeated at once, was under it: noise, not the knee
    slo_unconfirmed: bool = False


@dataclass(frozen=True)
class StepStats:
    """One row of the report (docs/stress.md's keys plus a few extra)."""

    index: int
    rate: float
    achieved_rate: float
    sent_rate: float
    sent: int
    samples: int
    errors: int
    p50_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    under_sampled: bool
    during_fault: bool
    seconds: float
    start: float
    generator_cpu_seconds: float
    generator_lag_p99_ms: float | None
    #: over the SLO, but not confirmed by the repeat at the same rate: left out of the knee and the slope
    slo_unconfirmed: bool = False

    def as_json(self) -> dict:
        def r(x: float | None, nd: int = 2) -> float | None:
            return None if x is None else round(x, nd)

        return {
            "rate": r(self.rate, 3),
            "achieved_rate": r(self.achieved_rate, 3),
            "sent_rate": r(self.sent_rate, 3),
            "samples": self.samples,
            "sent": self.sent,
            "p50_ms": r(self.p50_ms),
            "p99_ms": r(self.p99_ms),
            "p999_ms": r(self.p999_ms),
            "errors": self.errors,
            "under_sampled": self.under_sampled,
            "during_fault": self.during_fault,
            "slo_unconfirmed": self.slo_unconfirmed,
            "start_s": r(self.start, 3),
            "seconds": r(self.seconds, 3),
            "generator_cpu_seconds": r(self.generator_cpu_seconds, 3),
            "generator_lag_p99_ms": r(self.generator_lag_p99_ms),
        }


def summarize_step(window: StepWindow, table: SampleTable, min_samples: int) -> StepStats:
    """Summarise one step.

    - Latency percentiles, `samples` and `errors` count the requests *sent* in
      the step (so they describe the offered rate), successful ones only for
      the percentiles.
    - `achieved_rate` counts successful answers that *arrived* during the
      step, over its length: what the server really delivered, which is below
      the offered rate once it saturates.
    """
    mine = table.step == window.index
    ok = mine & table.ok
    latencies = table.latency_ms[ok]
    seconds = max(window.end - window.start, 1e-9)
    arrived = table.ok & (table.done >= window.start) & (table.done < window.end)
    sent = int(mine.sum())
    samples = int(ok.sum())
    p99 = reported_quantile(latencies, 0.99, min_samples)
    return StepStats(
        index=window.index,
        rate=window.rate,
        achieved_rate=float(arrived.sum()) / seconds,
        sent_rate=sent / seconds,
        sent=sent,
        samples=samples,
        errors=sent - samples,
        p50_ms=reported_quantile(latencies, 0.5, min_samples),
        p99_ms=p99,
        p999_ms=reported_quantile(latencies, 0.999, min_samples),
        under_sampled=p99 is None,
        during_fault=window.exempt,
        seconds=seconds,
        start=window.start,
        generator_cpu_seconds=window.cpu_seconds,
        generator_lag_p99_ms=nearest_rank(table.lag_ms[mine], 0.99) if sent else None,
        slo_unconfirmed=window.slo_unconfirmed,
    )
