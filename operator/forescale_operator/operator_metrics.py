"""The operator's own Prometheus metrics (served on FORESCALE_METRICS_PORT)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

RECONCILES = Counter("forescale_operator_reconciles_total", "Create/resume/update handler runs", ["result"])
TICKS = Counter("forescale_operator_ticks_total", "Loop ticks run", ["result"])
#: how late each tick starts against its schedule (previous start + step); timers on schedule keep this near 0
TICK_LAG = Histogram("forescale_operator_tick_lag_seconds", "Delay of a tick's start past its scheduled time",
                     buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0))
#: wall time of one tick: API reads, Prometheus, forecast, engine, actions, status write (waits included)
TICK_DURATION = Histogram("forescale_operator_tick_duration_seconds", "Wall time of one tick, waits included",
                          buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0))
