"""A metric source that reads nothing: the operator then only keeps status true."""

from __future__ import annotations

from forescale_operator.spec import InferenceSpec

from .base import MetricSample


class NoopMetricSource:
    """Used when no Prometheus URL is configured (operator-wide or in the spec)."""

    name = "none"

    def __init__(self, reason: str = "no Prometheus URL is configured (set FORESCALE_PROMETHEUS_URL or spec.metrics.prometheusUrl)") -> None:
        self.reason = reason

    def sample(self, namespace: str, name: str, spec: InferenceSpec, now: float) -> MetricSample:
        return MetricSample(time=now, available=False, error=self.reason)
