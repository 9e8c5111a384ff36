"""The metric-source interface: one call per resource per tick."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from forescale_operator.spec import InferenceSpec


@dataclass(frozen=True)
class PoolSample:
    """One pool's current values; None where the backend has no such metric."""

    latency_ms: float | None = None
    rate_rps: float | None = None
    error_rate: float | None = None
    queue_depth: float | None = None
    agreement: float | None = None
    #: the pods' clock: device ms per unit of work, and the unit's size
    service_ms: float | None = None
    service_size: float | None = None


@dataclass(frozen=True)
class MetricSample:
    """What Prometheus said about one resource at `time`.

    `available` is False when the source could not answer at all (down,
    timing out, erroring, or no data); `error` then says why, in words an
    SRE can act on. A pool that serves no traffic yet has no latency: that
    is not unavailability.
    """

    time: float
    available: bool
    pools: dict[str, PoolSample] = field(default_factory=dict)
    latency_ms: float | None = None
    rate_rps: float | None = None
    #: share 0..1 of the requests over the SLO target, rejected and failed included (slo_share.py);
    #: None without a latency histogram or without requests
    over_slo_fraction: float | None = None
    error: str | None = None
    queries: int = 0

    def pool(self, name: str) -> PoolSample:
        return self.pools.get(name, PoolSample())


class MetricSource(Protocol):
    """Reads a resource's current metrics. Blocking: the loop runs it in a thread."""

    name: str

    def sample(self, namespace: str, name: str, spec: InferenceSpec, now: float) -> MetricSample:
        ...
