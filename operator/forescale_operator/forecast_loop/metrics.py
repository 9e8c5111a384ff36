"""The tick's metric seam: read Prometheus (in a thread: the client blocks) and keep each resource's history."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Callable

from forescale_predictor.forecast_types import History

from ..children import Owner
from ..readings import HistoryBuffer, MetricSample, MetricSource, make_metric_source
from ..readings.noop import NoopMetricSource
from ..spec import InferenceSpec


@dataclass(frozen=True)
class LoopReadings:
    """One tick's sample and the resource's history up to it (on the loop's step)."""

    sample: MetricSample
    history: History


class LoopMetrics:
    """`configured` is False only when no Prometheus URL exists anywhere; a resource
    without one then gets None (no data) and the operator only keeps status true."""

    def __init__(self, default_url: str | None, *, clock: Callable[[], float] = time.time,
                 build: Callable[[str], MetricSource] | None = None, keep_seconds: float = 3600.0,
                 batch: bool = True) -> None:
        self.default_url = default_url
        self.configured = bool(default_url)
        self._clock = clock
        self._build = build
        self._sources: dict[str, MetricSource] = {}
        self._buffers: dict[str, HistoryBuffer] = {}
        self._keep = keep_seconds
        #: grouped queries shared by all resources (readings/prometheus_batched.py); False: per resource
        self.batch = batch

    def buffer(self, owner: Owner) -> HistoryBuffer:
        return self._buffers.setdefault(owner.uid, HistoryBuffer(self._keep))

    def forget(self, owner: Owner) -> None:
        self._buffers.pop(owner.uid, None)

    async def observe(self, owner: Owner, spec: InferenceSpec) -> LoopReadings | None:
        source = make_metric_source(spec, self.default_url, cache=self._sources, build=self._build,
                                    batch=self.batch)
        if isinstance(source, NoopMetricSource):
            return None
        now = self._clock()
        sample = await asyncio.to_thread(source.sample, owner.namespace, owner.name, spec, now)
        buffer = self.buffer(owner)
        if sample.available:
            buffer.append(now, sample.latency_ms, sample.rate_rps)
        return LoopReadings(sample, buffer.history(spec.forecast.step_seconds))
