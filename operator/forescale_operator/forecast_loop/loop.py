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
from typing import AsyncIterator, Callable

from ..children import Owner
from ..telemetry import OperatorMetrics
from .binding import Bindings
from .forecast_source import ForecastSource, NoopForecastSource
from .incident_diagnosis import IncidentDiagnoses
from .memory import ResourceMemory


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
    #: the diagnosis run beside each incident's playbook (None: none, as in the tests' rigs)
    diagnoses: IncidentDiagnoses | None = None

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
        if self.diagnoses is not None:
            self.diagnoses.forget(owner)
