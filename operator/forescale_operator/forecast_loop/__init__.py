"""The forecast loop: what fills the tick's seams (handlers/tick.py).

Prometheus -> `LoopMetrics` (metric readings and a rolling history) ->
`LoopForecaster` (the predictor) -> `Actor` (engine.decide, then the
actuators: Deployments, route weights, model-server admin calls, snapshots,
then status, events and the operator's metrics).
"""

from __future__ import annotations

import time
from typing import Any, Callable

from .actor import Actor
from .forecaster import LoopForecaster
from .metrics import LoopMetrics, LoopReadings

__all__ = ["Actor", "LoopForecaster", "LoopMetrics", "LoopReadings", "make_loop_seams"]


def make_loop_seams(*, prometheus_url: str | None, admin_token_secret: str | None, telemetry: Any = None,
                    clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """The `metrics`, `forecaster` and `decide` seams of `TickDeps`, sharing one clock and per-resource memory."""
    metrics = LoopMetrics(prometheus_url, clock=clock)
    return {
        "metrics": metrics,
        "forecaster": LoopForecaster(),
        "decide": Actor(admin_token_secret=admin_token_secret, telemetry=telemetry, clock=clock),
    }
