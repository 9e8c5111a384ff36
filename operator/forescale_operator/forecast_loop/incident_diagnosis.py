"""The diagnosis beside the playbook: started when the tick posts EmergencyStarted, never awaited by it.

The playbook answers the symptom at once; the checklist (diagnosis/) asks
Prometheus and the Kubernetes API for about `timeout_s` and then names the
likeliest cause. So it runs as a task of its own: a slow or unreachable
Prometheus can never delay a shift, and a failure here is logged, not raised
into the tick. It then posts `RootCauseSuspected` (when a cause is suspected),
writes `status.diagnosis` (always: "unknown, and why" is an answer too) and sets
the operator's root-cause gauge. One diagnosis per resource at a time.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Mapping

from ..children import Owner
from ..diagnosis import ClosablePromQuery, diagnose, gather_evidence
from ..diagnosis.rules import SUSPECTED
from ..events import EventSink
from ..kube.client import KubeApi
from ..readings.kube_facts import read_kube_facts
from ..reasons import Reason
from ..status import StatusUpdate, write_status
from ..telemetry import OperatorMetrics

logger = logging.getLogger(__name__)


#: (url, timeout_s, at) -> a Prometheus query client; readings.prom_query.HttpPromQuery in the operator
MakeProm = Callable[[str, float, float], ClosablePromQuery]


class IncidentDiagnoses:
    """One per operator; `start` is called by the tick on the tick that posts EmergencyStarted."""

    #: seconds each query may take: the event is due within 60 s of the playbook's start
    def __init__(self, make_prom: MakeProm, *, timeout_s: float = 10.0) -> None:
        self.make_prom = make_prom
        self.timeout_s = timeout_s
        self.tasks: dict[str, asyncio.Task] = {}

    def start(self, *, api: KubeApi, events: EventSink, telemetry: OperatorMetrics, owner: Owner,
              prometheus_url: str | None, status: Mapping[str, Any], now: float) -> bool:
        """Start the diagnosis of `owner`'s incident; False when one is still running or no Prometheus exists."""
        running = self.tasks.get(owner.uid)
        if prometheus_url is None or (running is not None and not running.done()):
            return False
        self.tasks[owner.uid] = asyncio.create_task(
            self._run(api, events, telemetry, owner, prometheus_url, dict(status), now),
            name=f"diagnosis {owner.namespace}/{owner.name}")
        return True

    def forget(self, owner: Owner) -> None:
        task = self.tasks.pop(owner.uid, None)
        if task is not None and not task.done():
            task.cancel()

    async def _run(self, api: KubeApi, events: EventSink, telemetry: OperatorMetrics, owner: Owner,
                   url: str, status: Mapping[str, Any], now: float) -> None:
        try:
            await self._diagnose(api, events, telemetry, owner, url, status, now)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a diagnosis never fails the loop; the playbook already acted
            logger.warning("%s/%s: the incident's diagnosis failed: %s", owner.namespace, owner.name, exc)

    async def _diagnose(self, api: KubeApi, events: EventSink, telemetry: OperatorMetrics, owner: Owner,
                        url: str, status: Mapping[str, Any], now: float) -> None:
        async def facts():
            return await read_kube_facts(api, owner.namespace, owner.name, "a", now=now, window_seconds=900.0)

        prom = self.make_prom(url, self.timeout_s, now)
        try:
            evidence = await gather_evidence(prom, owner.namespace, owner.name, pool="a", facts=facts,
                                             timeout_s=self.timeout_s)
        finally:
            await prom.close()
        found = diagnose(evidence)
        if found.top is not None:
            await events.post(Reason.ROOT_CAUSE_SUSPECTED, found.message)
        update = StatusUpdate(status)
        update.diagnosis(found.status_field(now, "a"))
        await write_status(api, owner.namespace, owner.name, update)
        telemetry.record_diagnosis(owner.namespace, owner.name, "a",
                                   {f.cause: f.score if f.status == SUSPECTED else 0.0 for f in found.findings})
