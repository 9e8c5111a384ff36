"""Readings: the metrics the operator reads each tick before it decides.

Prometheus -> metric source (one interface, one implementation per file, a
no-op, a factory) -> a `MetricSample` (`read`, each tick) -> `Observations`
for the engine and a rolling `History` for the forecaster. No kopf here: the
tick passes in what it read from the Kubernetes API (replica counts, pod
start-up times).
"""

from .base import MetricSample, MetricSource, PoolSample
from .factory import make_metric_source
from .history_buffer import HistoryBuffer
from .observations import build_observations
from .reading import Reading, read

__all__ = ["MetricSample", "MetricSource", "PoolSample", "HistoryBuffer", "Reading", "build_observations",
           "make_metric_source", "read"]
