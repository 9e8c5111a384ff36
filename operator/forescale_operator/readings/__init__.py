"""Readings: the metrics the operator reads each tick before it decides.

Prometheus -> metric source (one interface, one implementation per file, a
no-op, a factory) -> a `MetricSample` -> `Observations` for the engine and a
rolling `History` for the forecaster. No kopf here: the loop passes in what it
read from the Kubernetes API (replica counts, pod start-up times).
"""

from .base import MetricSample, MetricSource, PoolSample
from .factory import make_metric_source
from .history_buffer import HistoryBuffer
from .observations import build_observations

__all__ = ["MetricSample", "MetricSource", "PoolSample", "HistoryBuffer", "build_observations", "make_metric_source"]
