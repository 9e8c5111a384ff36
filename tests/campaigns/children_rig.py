"""Many InferenceDeployments in one namespace, reconciled and ticked in-process, for the child-name campaign.

A tick here is the operator's real `tick` with no metric source: it observes
the children, repairs what is missing and refuses what another owner holds.
"""

from __future__ import annotations

import copy
from typing import Any

from forescale_operator.actuators import Actuators
from forescale_operator.events import RecordingEvents
from forescale_operator.handlers.reconcile import reconcile
from forescale_operator.handlers.tick import TickContext, TickDeps, tick

NS = "default"


class ChildrenRig:
    def __init__(self, cluster: Any, api: Any, example: Any) -> None:
        self.cluster, self.api, self.example = cluster, api, example
        self.events: dict[str, RecordingEvents] = {}

    def _deps(self, name: str) -> TickDeps:
        events = self.events.setdefault(name, RecordingEvents())
        return TickDeps(api=self.api, actuators=Actuators(self.api), events=events)

    async def create(self, name: str) -> str:
        body = self.example("minimal")
        body["metadata"] = {"name": name, "namespace": NS}
        return await reconcile(self.cluster.put(body), self._deps(name))

    async def tick(self, name: str) -> str:
        body = self.cluster.get("inferencedeployments", NS, name)
        return await tick(TickContext(copy.deepcopy(body)), self._deps(name))

    def resource(self, name: str) -> dict | None:
        return self.cluster.get("inferencedeployments", NS, name)

    def phase(self, name: str) -> str | None:
        return ((self.resource(name) or {}).get("status") or {}).get("phase")

    def ready_message(self, name: str) -> str:
        conditions = ((self.resource(name) or {}).get("status") or {}).get("conditions") or []
        return next((c.get("message", "") for c in conditions if c["type"] == "Ready"), "")

    def owner_uid(self, plural: str, name: str) -> str | None:
        obj = self.cluster.get(plural, NS, name)
        if obj is None:
            return None
        refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")]
        return refs[0]["uid"] if refs else ""

    @staticmethod
    def children_of(name: str) -> list[tuple[str, str]]:
        return [("deployments", f"{name}-a"), ("deployments", f"{name}-b"),
                ("services", f"{name}-a"), ("services", f"{name}-b"), ("services", name)]

    def intact(self, name: str) -> list[str]:
        """What is wrong with `name`'s children: missing, or controlled by another uid."""
        uid = self.resource(name)["metadata"]["uid"]
        return [f"{plural}/{child}: {self.owner_uid(plural, child)}" for plural, child in self.children_of(name)
                if self.owner_uid(plural, child) != uid]

    def delete_all(self) -> None:
        for obj in self.cluster.objects("inferencedeployments", NS):
            self.cluster.delete("inferencedeployments", NS, obj["metadata"]["name"])
