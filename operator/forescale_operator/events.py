"""Kubernetes Events for an InferenceDeployment, with the reasons of `reasons.py`.

Each message carries its numbers (`Created chat-a (2 replicas, fp16), ...`).
`KubeEvents` posts core/v1 Events itself, at the moment of the action, so the
order of events is the order of actions. A failed post is logged, not retried:
an event is a report, never a reason to redo the action.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Protocol

from .children import Owner
from .kube.client import KubeApi
from .kube.errors import ApiError
from .kube.refs import EVENTS
from .reasons import Reason, event_type

logger = logging.getLogger(__name__)


class EventSink(Protocol):
    async def post(self, reason: Reason, message: str) -> None:
        """Report one action or finding on the resource."""


class KubeEvents:
    """Events posted to the API server, involving the owner."""

    def __init__(self, api: KubeApi, owner: Owner, component: str = "forescale-operator", instance: str = "") -> None:
        self._api, self._owner, self._component, self._instance = api, owner, component, instance

    async def post(self, reason: Reason, message: str) -> None:
        now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        owner = self._owner
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{owner.name}.", "namespace": owner.namespace},
            "involvedObject": {"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name,
                               "namespace": owner.namespace, "uid": owner.uid},
            "reason": reason.value,
            "message": message,
            "type": event_type(reason),
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "reportingInstance": self._instance or self._component,
            "action": reason.value,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            await self._api.create(EVENTS, owner.namespace, body)
        except ApiError as exc:
            logger.warning("could not post event %s for %s/%s: %s", reason.value, owner.namespace, owner.name, exc)


class RecordingEvents:
    """Keeps events in memory, in order (tests, the simulator)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    async def post(self, reason: Reason, message: str) -> None:
        self.events.append((event_type(reason), reason.value, message))

    @property
    def reasons(self) -> list[str]:
        return [r for _, r, _ in self.events]
