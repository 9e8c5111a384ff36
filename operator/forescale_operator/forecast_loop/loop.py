"""What the forecast loop keeps between ticks, one per operator, and the one way a resource leaves it.

Per resource: its binding (binding.py), its memory (memory.py: history,
clocks, decisions, switched pods, scored forecasts), its forecast source's
entries and its series in the operator's metrics. `forget(owner)` drops the
resource from every one of them when it is deleted (registration.py); on a
pause or an operator exit nothing is dropped, the resource still exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Mapping, Protocol

from ..children import Owner
from ..events import EventSink
from ..forecasting.forecast_source import ForecastSource, NoopForecastSource
from ..kube.client import KubeApi
from ..reasons import Reason
from ..telemetry import OperatorMetrics
from .binding import Bindings
from .memory import ResourceMemory


class Diagnoses(Protocol):
    """The diagnosis run beside a relief (act/incident_diagnosis.py in the operator), started by the tick."""

    def start(self, *, api: KubeApi, events: EventSink, telemetry: OperatorMetrics, owner: Owner,
              prometheus_url: str | None, status: Mapping[str, Any], now: float, trigger: Reason,
              admin_secret: tuple[str, str] | None, health: float | None) -> bool:
        """Start diagnosing `owner`'s relief, never awaited by the tick; False when none was started."""

    def forget(self, owner: Owner) -> None:
        """Drop a deleted resource (a diagnosis still running is cancelled)."""


class NoDiagnoses:
    """No diagnosis (the tests' rigs, and an operator without Prometheus)."""

    def start(self, **_: Any) -> bool:
        return False

    def forget(self, owner: Owner) -> None:
        pass


@dataclass
class ForecastLoop:
    """The seams and per-resource state behind `handlers/tick.py`. The defaults read nothing and forecast nothing."""

    #: resources bound per generation, with the operator-wide Prometheus URL and admin token Secret
    bindings: Bindings = field(default_factory=Bindings)
    #: the predictor behind the forecasts (forecaster.PredictorForecastSource in the operator)
    forecasts: ForecastSource = field(default_factory=NoopForecastSource)
    #: the operator's per-resource series (a private registry unless the operator passes the served one)
    telemetry: OperatorMetrics = field(default_factory=OperatorMetrics)
    #: the wall clock: the engine's `now`
    clock: Callable[[], float] = time.time
    #: the clock the wall clock's jumps are measured against (None: time.monotonic, or `clock` itself when injected)
    monotonic: Callable[[], float] | None = None
    #: seconds an admin call to one pod may take
    admin_timeout: float = 5.0
    memories: dict[str, ResourceMemory] = field(default_factory=dict)
    #: the diagnosis run beside each relief (act/incident_diagnosis.IncidentDiagnoses in the operator)
    diagnoses: Diagnoses = field(default_factory=NoDiagnoses)

    def __post_init__(self) -> None:
        if self.monotonic is None:
            # An injected wall clock (a test's) without a monotonic one of its own is its own reference: it never jumps.
            self.monotonic = time.monotonic if self.clock is time.time else self.clock

    def memory(self, owner: Owner) -> ResourceMemory:
        return self.memories.setdefault(owner.uid, ResourceMemory())

    def acting(self, owner: Owner) -> asyncio.Lock:
        """Held by a tick while it runs and by the delete handler: the two never act at once on one resource."""
        return self.memory(owner).acting

    @contextlib.asynccontextmanager
    async def releasing(self, owner: Owner) -> AsyncIterator[None]:
        """The delete handler's hold: waits for a tick in flight, then forgets the resource on the way out.

        Why it forgets too: the daemon forgets when it stops, and when it stopped first, taking the lock here
        made the resource's memory anew, which nothing would drop again."""
        try:
            async with self.acting(owner):
                yield
        finally:
            self.forget(owner)

    def forget(self, owner: Owner) -> None:
        """Drop a deleted resource from every per-resource cache: binding, memory, forecasts, metric series,
        a diagnosis still running."""
        self.bindings.forget(owner)
        self.memories.pop(owner.uid, None)
        self.forecasts.forget(owner)
        self.telemetry.forget(owner.namespace, owner.name)
        self.diagnoses.forget(owner)
