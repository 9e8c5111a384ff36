"""The operator's own Prometheus metrics (served on FORESCALE_METRICS_PORT)."""

from __future__ import annotations

from prometheus_client import Counter

RECONCILES = Counter("forescale_operator_reconciles_total", "Create/resume/update handler runs", ["result"])
TICKS = Counter("forescale_operator_ticks_total", "Loop ticks run", ["result"])
