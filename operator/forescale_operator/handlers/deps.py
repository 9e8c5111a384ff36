"""What the handlers need from the outside world, injected (tests pass their own)."""

from __future__ import annotations

from dataclasses import dataclass

from ..actuators import Actuators
from ..events import EventSink
from ..kube.client import KubeApi
from ..kube.indexed import IndexedReads
from ..telemetry import OperatorMetrics


@dataclass
class HandlerDeps:
    api: KubeApi
    actuators: Actuators
    events: EventSink
    #: FORESCALE_PROMETHEUS_URL, for specs without metrics.prometheusUrl; with neither, the phase is Degraded
    prometheus_url: str | None = None
    #: where the tick reads the children and pods: kopf's indexes (kube/indexed.py); None reads through `api`
    reads: IndexedReads | None = None

    @property
    def reader(self) -> KubeApi:
        """The API the tick observes through: the indexes where the operator has them, else the API itself."""
        return self.reads if self.reads is not None else self.api

    @property
    def telemetry(self) -> OperatorMetrics | None:
        """The resource's series, where this operator keeps them (the loop's: TickDeps); None in a bare handler."""
        return None
