"""The tick's act step: carry out the engine's Decision for one resource.

Order: scale up before shifting (new pods take start-up time), then the
playbook actions in the engine's order (shift, downgrade, warm, debug
logging, snapshot), then weights the engine still wants, then scale down.
Events are posted as the actions happen, each with its numbers and, for
admin calls, how many pods answered; `posted` lists them, so the tick knows
whether anything was reported before a failure. Preview acts on nothing: the
engine's Decision is already the preview and its events say "Preview: would".
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from forescale_predictor.forecast_types import Forecast

from ..actuators import Actuators
from ..admin_client import AdminClient, summarize
from ..engine.types import (Action, ActionKind, Decision, DowngradePrecision, EnableDebugLogging, Event, RestorePrecision,
                            SaveSnapshot, ShiftTraffic, WarmCache)
from ..events import EventSink
from ..kube.client import KubeApi
from ..kube.refs import CONFIG_MAPS
from ..observe import Observation
from ..readings import Reading
from ..reasons import Reason
from ..snapshot import snapshot_configmap
from ..weights import Weights
from .admin_token import read_admin_token
from ..forecast_loop.binding import ResourceBinding
from ..forecast_loop.memory import ResourceMemory
from ..readings.pods import PoolPods

logger = logging.getLogger(__name__)

#: action kind -> the model-server admin endpoint that carries it out
_ADMIN = {
    ActionKind.DOWNGRADE_PRECISION: "/admin/precision",
    ActionKind.RESTORE_PRECISION: "/admin/precision",
    ActionKind.WARM_CACHE: "/admin/warmup",
    ActionKind.ENABLE_DEBUG_LOGGING: "/admin/log-level",
}

#: action kind -> the event reasons that report it (the engine orders events and actions alike)
_REPORTED_BY = {
    ActionKind.SHIFT_TRAFFIC: frozenset({Reason.TRAFFIC_SHIFTED, Reason.CUTBACK_STEP, Reason.CUTBACK_ABORTED}),
    ActionKind.DOWNGRADE_PRECISION: frozenset({Reason.PRECISION_DOWNGRADED}),
    ActionKind.RESTORE_PRECISION: frozenset({Reason.PRECISION_RESTORED}),
    ActionKind.WARM_CACHE: frozenset({Reason.CACHE_WARMED}),
    ActionKind.ENABLE_DEBUG_LOGGING: frozenset({Reason.DEBUG_LOGGING_ENABLED}),
    ActionKind.SAVE_SNAPSHOT: frozenset({Reason.SNAPSHOT_SAVED}),
}


class Executor:
    """Acts for one resource at one tick: its binding, its pods as read this tick, and what the loop remembers of it."""

    def __init__(self, api: KubeApi, actuators: Actuators, events: EventSink, binding: ResourceBinding,
                 memory: ResourceMemory, pods: dict[str, PoolPods], *, admin_timeout: float = 5.0) -> None:
        self.api, self.actuators, self.events = api, actuators, events
        self.binding, self.memory, self.pods = binding, memory, pods
        self.admin_timeout = admin_timeout
        #: event reasons posted so far, in order
        self.posted: list[Reason] = []
        self._admin: AdminClient | None = None

    async def post(self, event: Event, suffix: str = "") -> None:
        await self.events.post(event.reason, event.message + suffix)
        self.posted.append(event.reason)

    async def report_pod_problems(self) -> None:
        """One Warning event per pod and problem; the pod is skipped for admin calls, the loop goes on."""
        current = set()
        for pool, pool_pods in self.pods.items():
            for name, problem in sorted(pool_pods.problems.items()):
                current.add((name, problem))
                if (name, problem) not in self.memory.pod_problems:
                    self.memory.pod_problems.add((name, problem))
                    await self.events.post(Reason.ADMIN_PORT_INVALID,
                                           f"Skip pod {name} (pool {pool}) for admin calls: {problem}")
        self.memory.pod_problems &= current  # pods come and go: remember only the ones still there

    async def carry_out(self, decision: Decision, seen: Observation, reading: Reading, forecast: Forecast | None,
                        raw_spec: Mapping[str, Any], now: float) -> None:
        """Every change the decision asks for, each event posted right after its action; Preview only posts."""
        if decision.preview:
            for event in decision.events:
                await self.post(event)
            return
        owner, spec, router = self.binding.owner, self.binding.spec, self.binding.router
        current = {"a": seen.a.desired, "b": seen.b.desired}
        desired = decision.desired_replicas
        pending: list[Event] = list(decision.events)

        async def post_through(reasons: frozenset, suffix: str = "") -> None:
            """Post pending events in the engine's order up to the first of `reasons`, which gets `suffix`."""
            while pending:
                event = pending.pop(0)
                done = event.reason in reasons
                await self.post(event, suffix if done else "")
                if done:
                    return

        # Scale up first: the new pods need their start-up time.
        for pool in ("a", "b"):
            if desired[pool] > current[pool]:
                await self.actuators.scale(owner, spec.pool(pool), desired[pool])

        route_weights = (seen.weights.a, seen.weights.b) if seen.weights is not None else None
        for action in decision.actions:
            suffix = ""
            if isinstance(action, ShiftTraffic):
                route_weights = (action.weights.a, action.weights.b)
                await self.actuators.set_weights(owner, router, action.weights)
            elif isinstance(action, SaveSnapshot):
                await self._save_snapshot(raw_spec, reading, forecast, now)
            elif action.kind in _ADMIN:
                suffix = await self._call_pods(action, await self._admin_client())
            await post_through(_REPORTED_BY[action.kind], suffix)

        # Weights the engine wants without an explicit action (a route edited by hand, say).
        wanted = (decision.weights["a"], decision.weights["b"])
        if spec.traffic.router != "none" and route_weights != wanted:
            await self.actuators.set_weights(owner, router, Weights(*wanted))

        for pool in ("a", "b"):
            if desired[pool] < current[pool]:
                await self.actuators.scale(owner, spec.pool(pool), desired[pool])

        for event in pending:
            await self.post(event)

    async def _admin_client(self) -> AdminClient:
        """The admin API client, with the token read once per tick (a rotated Secret is picked up next tick)."""
        if self._admin is None:
            token = await read_admin_token(self.api, self.binding.owner.namespace, self.binding.admin_secret)
            self._admin = AdminClient(token, timeout=self.admin_timeout)
        return self._admin

    async def _call_pods(self, action: Action, admin: AdminClient) -> str:
        """One admin call on the action's pods; the event's suffix says how many answered."""
        pods, memory = self.pods, self.memory
        path = _ADMIN[action.kind]
        if isinstance(action, (DowngradePrecision, RestorePrecision)):
            body = {"precision": action.precision}
            pool_pods = pods[action.pool]
            # Keyed by incarnation: a container restarted under the same pod name is back at its template precision.
            targets = {pool_pods.incarnation(n): e for n, e in pool_pods.endpoints.items()
                       if memory.switched.get(pool_pods.incarnation(n)) != body["precision"]}
        elif isinstance(action, WarmCache):
            body = {"top": action.top}
            targets = {n: e for p in action.pools for n, e in pods[p].endpoints.items()}
        elif isinstance(action, EnableDebugLogging):
            body = {"level": action.level, "seconds": action.seconds}
            targets = {n: e for p in action.pools for n, e in pods[p].endpoints.items()}
        else:
            raise TypeError(f"not an admin call: {action.kind.value}")
        if not targets:
            return " (no ready pod to call)" if action.kind != ActionKind.DOWNGRADE_PRECISION or not memory.switched else ""
        results = await admin.post_all(list(targets.values()), path, body)
        if "precision" in body:
            for (name, _), result in zip(targets.items(), results):
                if result.ok:
                    memory.switched[name] = body["precision"]
        return f" ({summarize(results)})"

    async def _save_snapshot(self, raw_spec: Mapping[str, Any], reading: Reading, forecast: Forecast | None,
                             now: float) -> None:
        owner, sample = self.binding.owner, reading.sample
        body = snapshot_configmap(
            namespace=owner.namespace, name=owner.name, uid=owner.uid, at=now, history=reading.history,
            decisions=list(self.memory.decisions), forecast=forecast, spec=raw_spec,
            observations={"latency_ms": sample.latency_ms, "rate_rps": sample.rate_rps,
                          "pools": {p: vars(s) for p, s in sample.pools.items()}},
        )
        try:
            await self.api.create(CONFIG_MAPS, owner.namespace, body)
        except Exception as exc:  # noqa: BLE001 - a snapshot is a report; never stop the playbook for it
            logger.warning("%s/%s: could not save the incident snapshot: %s", owner.namespace, owner.name, exc)
