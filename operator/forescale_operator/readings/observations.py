"""Join what Prometheus said with what the Kubernetes API said into the engine's Observations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from forescale_operator.engine.types import Observations, PoolObservation

from .base import MetricSample


@dataclass(frozen=True)
class PoolState:
    """A pool as the Kubernetes API shows it."""

    replicas: int
    ready_replicas: int
    precision: str | None = None
    startup_seconds: float | None = None
    #: ready pods per precision where they differ (`PoolPods.precision_pods`)
    precision_pods: Mapping[str, int] = field(default_factory=dict)


def build_observations(sample: MetricSample, a: PoolState, b: PoolState) -> Observations:
    """The engine's input for one tick."""

    def pool(name: str, state: PoolState) -> PoolObservation:
        s = sample.pool(name)
        return PoolObservation(
            replicas=state.replicas,
            ready_replicas=state.ready_replicas,
            rate_rps=s.rate_rps,
            latency_ms=s.latency_ms,
            error_rate=s.error_rate,
            queue_depth=s.queue_depth,
            agreement=s.agreement,
            precision=state.precision,
            precision_pods=state.precision_pods,
            startup_seconds=state.startup_seconds,
            service_ms=s.service_ms,
            service_size=s.service_size,
        )

    return Observations(
        time=sample.time,
        a=pool("a", a),
        b=pool("b", b),
        metrics_available=sample.available,
        latency_ms=sample.latency_ms,
        rate_rps=sample.rate_rps,
        over_slo_fraction=sample.over_slo_fraction,
    )
