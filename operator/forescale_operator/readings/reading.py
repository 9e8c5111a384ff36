"""One tick's reading: the resource's sample from its metric source, appended to its history.

The metric sources block (the Prometheus client is synchronous), so the
sample is taken in a worker thread; the history is resampled to the
forecaster's step (`forecast.stepSeconds`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from forescale_predictor.forecast_types import History

from forescale_operator.spec import InferenceSpec

from .base import MetricSample, MetricSource
from .history_buffer import HistoryBuffer


@dataclass(frozen=True)
class Reading:
    """One tick's sample and the resource's history up to it (on the loop's step)."""

    sample: MetricSample
    history: History


async def read(source: MetricSource, namespace: str, name: str, spec: InferenceSpec, history: HistoryBuffer,
               now: float) -> Reading:
    """Sample `source` for one resource at `now`; an available sample joins `history`, a failed one is a gap."""
    sample = await asyncio.to_thread(source.sample, namespace, name, spec, now)
    if sample.available:
        history.append(now, sample.latency_ms, sample.rate_rps)
    return Reading(sample, history.history(spec.forecast.step_seconds))
