"""What the handlers need from the outside world, injected (tests pass their own)."""

from __future__ import annotations

from dataclasses import dataclass

from ..actuators import Actuators
from ..events import EventSink
from ..kube.client import KubeApi


@dataclass
class HandlerDeps:
    api: KubeApi
    actuators: Actuators
    events: EventSink
    #: FORESCALE_PROMETHEUS_URL, for specs without metrics.prometheusUrl; with neither, the phase is Degraded
    prometheus_url: str | None = None
