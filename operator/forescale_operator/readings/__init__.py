"""Readings: the metrics the operator reads each tick before it decides.

Prometheus -> metric source (one interface, one implementation per file, a
no-op, a factory) -> a `MetricSample` (`read`, each tick) -> `Observations`
for the engine and a rolling `History` for the forecaster. The tick's read
step also reads the pools' pods here (`pods.py`: admin endpoints, start-up
times, from kopf's index) and `build_observations` joins them with the
sample. No kopf here: the tick passes in its reader and the replica counts it
observed.
"""

from .base import MetricSample, MetricSource, PoolSample
from .factory import make_metric_source
from .history_buffer import HistoryBuffer
from .observations import build_observations
from .reading import Reading, read

__all__ = ["MetricSample", "MetricSource", "PoolSample", "HistoryBuffer", "Reading", "build_observations",
           "make_metric_source", "read"]
