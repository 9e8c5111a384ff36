"""Where the loop reads observations from. The Prometheus source arrives with the forecast loop (issue 6).

`NoMetrics` answers "no data": with it, the operator only keeps status true.
"""

from __future__ import annotations

from typing import Any, Protocol

from .children import Owner
from .spec import InferenceSpec


class MetricSource(Protocol):
    #: False for `NoMetrics`: the MetricsAvailable condition then says no source is configured
    configured: bool

    async def observe(self, owner: Owner, spec: InferenceSpec) -> Any | None:
        """Latency and rate observations for one resource, or None when there are none."""


class NoMetrics:
    configured = False

    async def observe(self, owner: Owner, spec: InferenceSpec) -> None:
        return None
