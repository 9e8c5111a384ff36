"""Pick the metric source for a resource: its spec's Prometheus URL, else the operator-wide one."""

from __future__ import annotations

from typing import Callable

from forescale_operator.spec import InferenceSpec

from .base import MetricSource
from .noop import NoopMetricSource


def make_metric_source(spec: InferenceSpec, default_url: str | None, *,
                       cache: dict[str, MetricSource] | None = None,
                       build: Callable[[str], MetricSource] | None = None, batch: bool = True) -> MetricSource:
    """The spec's `metrics.prometheusUrl` overrides the operator-wide URL; with
    neither, a no-op source. Sources are cached per URL when `cache` is given.

    By default one source per URL answers every resource from a few grouped
    queries (`prometheus_batched.py`, which falls back per resource where it
    must); `batch=False` queries per resource, as the benchmark's comparison does."""
    url = spec.metrics.prometheus_url or default_url
    if not url:
        return NoopMetricSource()
    if cache is not None and url in cache:
        return cache[url]
    if build is None:
        if batch:
            from .prometheus_batched import BatchedPrometheusMetricSource as build
        else:
            from .prometheus import PrometheusMetricSource as build
    source = build(url)
    if cache is not None:
        cache[url] = source
    return source
