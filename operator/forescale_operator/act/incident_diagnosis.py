"""The diagnosis beside the relief: started when the tick posts EmergencyStarted (or Overload), never awaited by it.

The playbook answers the symptom at once; the checklist (diagnosis/) asks
Prometheus and the Kubernetes API for about `timeout_s` and then names the
likeliest cause. So it runs as a task of its own: a slow or unreachable
Prometheus can never delay a shift, and a failure here is logged, not raised
into the tick. In this order, the first things first:

1. gather the evidence and rank the causes; read the pool's pods when a
   cause is suspected, and plan the remedy (diagnosis/remedy.py);
2. post `RootCauseSuspected` (when a cause is suspected) with the top
   cause's numbers and what the operator does about it;
3. write `status.diagnosis` (always: "unknown, and why" is an answer too)
   and the operator's root-cause gauge;
4. at an incident (EmergencyStarted) profile the slowest pod
   (`POST /admin/profile`, bounded) for the snapshot;
5. delete the bad pod when the remedy says so (`BadPodDeleted`), at most
   once per resource in `remedy.ONCE_PER_SECONDS` (kept in memory: a
   restarted operator forgets it);
6. at an incident, add the evidence, the diagnosis and the profile to the
   incident's snapshot ConfigMap, which the tick saved (an overload saves none);
7. when the top cause was an overload, look again one "now" window later
   (`rank.LOOK_AGAIN`): a slowdown's first seconds read as an overload. When
   the second look suspects a cause that explains the first (degraded pods),
   post `RootCauseSuspected` again with it and write it to `status.diagnosis`;
   otherwise the first diagnosis stands. The snapshot keeps the first.

One diagnosis per resource at a time; a relief starting while one waits for
its second look cancels the wait and diagnoses afresh.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..admin_client import AdminClient, pod_endpoint, pod_is_ready
from ..children import Owner
from ..diagnosis import DELETE_POD, ClosablePromQuery, Diagnosis, Evidence, Remedy, Windows, diagnose, gather_evidence
from ..diagnosis import looks_again, plan_remedy, second_look_names
from ..diagnosis.remedy import ONCE_PER_SECONDS
from ..diagnosis.rules import SUSPECTED
from ..events import EventSink
from ..kube.client import KubeApi
from ..kube.refs import CONFIG_MAPS, PODS
from ..readings.kube_facts import read_kube_facts, with_model_health
from ..reasons import Reason
from ..snapshot import slowest_pod, snapshot_name, with_diagnosis
from ..status import StatusUpdate, write_status
from ..telemetry import OperatorMetrics
from .admin_token import read_admin_token

logger = logging.getLogger(__name__)

#: the pool whose incidents are diagnosed: the playbook's pool
POOL = "a"

#: (url, timeout_s, at) -> a Prometheus query client; readings.prom_query.HttpPromQuery in the operator
MakeProm = Callable[[str, float, float], ClosablePromQuery]


class IncidentDiagnoses:
    """One per operator; `start` is called by the tick on the tick that posts EmergencyStarted or Overload."""

    def __init__(self, make_prom: MakeProm, *, timeout_s: float = 10.0, windows: Windows = Windows(),
                 profile_requests: int = 20, profile_timeout_s: float = 5.0,
                 second_look_seconds: float | None = None) -> None:
        #: seconds each query may take: the event is due within 60 s of the playbook's start
        self.make_prom = make_prom
        self.timeout_s = timeout_s
        #: the "now" and "before" windows compared (operator config: FORESCALE_DIAGNOSIS_*_SECONDS)
        self.windows = windows
        #: the slowest pod's profile: this many requests, for at most this long (it follows the event)
        self.profile_requests = profile_requests
        self.profile_timeout_s = profile_timeout_s
        #: how long after the first diagnosis the second look reads (None: one "now" window, so the windows do not
        #: overlap)
        self.second_look_seconds = float(windows.now_seconds) if second_look_seconds is None else second_look_seconds
        self.tasks: dict[str, asyncio.Task] = {}
        #: resource uids whose task is only waiting for its second look: a new relief may cancel it
        self.waiting: set[str] = set()
        #: resource uid -> when its last bad pod was deleted (the diagnosis's `now`)
        self.deleted_at: dict[str, float] = {}

    def start(self, *, api: KubeApi, events: EventSink, telemetry: OperatorMetrics, owner: Owner,
              prometheus_url: str | None, status: Mapping[str, Any], now: float,
              trigger: Reason = Reason.EMERGENCY_STARTED, admin_secret: tuple[str, str] | None = None,
              health: float | None = None) -> bool:
        """Start the diagnosis of `owner`'s incident (or overload, `trigger`); False when one is still running
        or no Prometheus exists. `health`: pool A's latency-model health as the starting tick computed it."""
        running = self.tasks.get(owner.uid)
        if prometheus_url is None:
            return False
        if running is not None and not running.done():
            if owner.uid not in self.waiting:
                return False
            running.cancel()  # only waiting for a second look: this relief's diagnosis reads a newer window
        self.waiting.discard(owner.uid)
        self.tasks[owner.uid] = asyncio.create_task(
            self._run(_Run(api, events, telemetry, owner, prometheus_url, dict(status), now, trigger, admin_secret,
                           health)),
            name=f"diagnosis {owner.namespace}/{owner.name}")
        return True

    def forget(self, owner: Owner) -> None:
        self.deleted_at.pop(owner.uid, None)
        self.waiting.discard(owner.uid)
        task = self.tasks.pop(owner.uid, None)
        if task is not None and not task.done():
            task.cancel()

    async def _run(self, run: "_Run") -> None:
        try:
            await self._diagnose(run)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a diagnosis never fails the loop; the playbook already acted
            logger.warning("%s/%s: the incident's diagnosis failed: %s", run.owner.namespace, run.owner.name, exc)

    async def _evidence(self, run: "_Run", at: float):
        """The checklist's evidence at `at`; its model health is the starting tick's (a second look has no newer)."""
        owner = run.owner

        async def facts():
            found = await read_kube_facts(run.api, owner.namespace, owner.name, POOL, now=at, window_seconds=900.0)
            return with_model_health(found, run.health, "the engine reported no latency model for the pool")

        prom = self.make_prom(run.url, self.timeout_s, at)
        try:
            return await gather_evidence(prom, owner.namespace, owner.name, pool=POOL, facts=facts,
                                         timeout_s=self.timeout_s, windows=self.windows)
        finally:
            await prom.close()

    async def _diagnose(self, run: "_Run") -> None:
        owner = run.owner
        evidence = await self._evidence(run, run.now)
        found = diagnose(evidence)
        incident = run.trigger is Reason.EMERGENCY_STARTED
        pods: dict[str, Mapping[str, Any]] | None = None
        remedy = Remedy()
        if found.top is not None:
            pods = await self._pool_pods(run)
            ready = None if pods is None else {name: pod_is_ready(pod) for name, pod in pods.items()}
            last = self.deleted_at.get(owner.uid)
            remedy = plan_remedy(found, evidence, ready, deployment=owner.pool_name(POOL), namespace=owner.namespace,
                                 acted=last is not None and run.now - last < ONCE_PER_SECONDS)
            await run.events.post(Reason.ROOT_CAUSE_SUSPECTED, found.message_with(remedy.note) or "")
        update = StatusUpdate(run.status)
        field = found.status_field(run.now, POOL)
        if found.top is not None and remedy.note:
            field["message"] = found.message_with(remedy.note)
        update.diagnosis(field)
        await write_status(run.api, owner.namespace, owner.name, update)
        run.telemetry.record_diagnosis(owner.namespace, owner.name, POOL,
                                       {f.cause: f.score if f.status == SUSPECTED else 0.0 for f in found.findings})
        # After the event and status: the profile, the remedy and the snapshot, each failing on its own.
        profiled, profile = await self._profile(run, evidence, pods) if incident else (None, None)
        if remedy.action == DELETE_POD and remedy.pod is not None:
            await self._delete(run, remedy)
        if incident:
            await self._add_to_snapshot(run, evidence, found, remedy, profiled, profile)
        if looks_again(found):
            await self._second_look(run, found)

    async def _second_look(self, run: "_Run", first: Diagnosis) -> None:
        """One "now" window later, the checklist again; posted and written only when it names a cause that explains
        the first's top (rank.second_look_names)."""
        owner = run.owner
        self.waiting.add(owner.uid)
        try:
            await asyncio.sleep(self.second_look_seconds)
        finally:
            self.waiting.discard(owner.uid)
        at = run.now + self.second_look_seconds
        evidence = await self._evidence(run, at)
        second = diagnose(evidence)
        if not second_look_names(first, second):
            logger.info("%s/%s: second look %.0f s after the diagnosis: %s; the first (%s) stands", owner.namespace,
                        owner.name, self.second_look_seconds, second.top.cause if second.top else "nothing suspected",
                        first.top.cause if first.top else None)
            return
        note = f"A second look {self.second_look_seconds:g} s after the first diagnosis, which named {first.top.cause}"
        message = second.message_with(note) or ""
        await run.events.post(Reason.ROOT_CAUSE_SUSPECTED, message)
        update = StatusUpdate(run.status)
        field = second.status_field(at, POOL)
        field["message"] = message
        update.diagnosis(field)
        await write_status(run.api, owner.namespace, owner.name, update)
        run.telemetry.record_diagnosis(owner.namespace, owner.name, POOL,
                                       {f.cause: f.score if f.status == SUSPECTED else 0.0 for f in second.findings})

    async def _pool_pods(self, run: "_Run") -> dict[str, Mapping[str, Any]] | None:
        """The pool's pods by name (none being deleted), or None when they cannot be read in time."""
        owner = run.owner
        selector = f"forescale.io/deployment={owner.name},forescale.io/pool={POOL}"
        try:
            pods = await asyncio.wait_for(run.api.list(PODS, owner.namespace, selector), self.timeout_s)
        except Exception as exc:  # noqa: BLE001 - unknown pods: no remedy, said in the note
            logger.warning("%s/%s: could not list pool %s's pods for the diagnosis: %s", owner.namespace, owner.name,
                           POOL, exc)
            return None
        return {p["metadata"]["name"]: p for p in pods
                if (p.get("metadata") or {}).get("name") and not p["metadata"].get("deletionTimestamp")}

    async def _profile(self, run: "_Run", evidence: Evidence,
                       pods: dict[str, Mapping[str, Any]] | None) -> tuple[str | None, dict[str, Any] | None]:
        """The slowest pod's `/admin/profile` answer, or (pod, {"error": ...}); (None, None) when no pod is named."""
        pod = slowest_pod(evidence.to_json())
        if pod is None:
            return None, None
        if pods is None:
            pods = await self._pool_pods(run)
        endpoint = pod_endpoint(pods[pod]) if pods and pod in pods else None
        if endpoint is None:
            return pod, {"error": f"pod {pod} has no reachable endpoint now"}
        try:
            token = await read_admin_token(run.api, run.owner.namespace, run.admin_secret)
            admin = AdminClient(token, timeout=self.profile_timeout_s + 2.0)
            body = {"requests": self.profile_requests, "timeout_seconds": self.profile_timeout_s}
            (result,) = await admin.post_all([endpoint], "/admin/profile", body)
        except Exception as exc:  # noqa: BLE001 - a profile is evidence, never a reason to stop
            return pod, {"error": f"{type(exc).__name__}: {exc}"[:300]}
        if not result.ok or not isinstance(result.body, dict):
            return pod, {"error": f"HTTP {result.status}: {result.detail}"[:300]}
        return pod, result.body

    async def _delete(self, run: "_Run", remedy: Remedy) -> None:
        owner = run.owner
        try:
            deleted = await run.api.delete(PODS, owner.namespace, remedy.pod)
        except Exception as exc:  # noqa: BLE001 - the playbook goes on; the SRE reads the log and the event's absence
            logger.warning("%s/%s: could not delete bad pod %s: %s", owner.namespace, owner.name, remedy.pod, exc)
            return
        self.deleted_at[owner.uid] = run.now
        if deleted:
            await run.events.post(Reason.BAD_POD_DELETED, remedy.message or f"Deleted pod {remedy.pod}")

    async def _add_to_snapshot(self, run: "_Run", evidence: Evidence, found: Diagnosis, remedy: Remedy,
                               profiled: str | None, profile: dict[str, Any] | None) -> None:
        """Add the evidence, the ranked causes, the remedy and the profile to the ConfigMap the tick saved."""
        owner = run.owner
        name = snapshot_name(owner.name, run.now)
        diagnosis = {**found.to_json(), "trigger": run.trigger.value,
                     "remedy": {"action": remedy.action, "pod": remedy.pod, "note": remedy.note}}
        try:
            current = await run.api.get(CONFIG_MAPS, owner.namespace, name)
            if current is None:
                logger.warning("%s/%s: no incident snapshot %s to add the diagnosis to", owner.namespace, owner.name, name)
                return
            body = with_diagnosis(current, evidence=evidence.to_json(), diagnosis=diagnosis, profile=profile,
                                  profiled_pod=profiled)
            await run.api.replace(CONFIG_MAPS, owner.namespace, name, body)
        except Exception as exc:  # noqa: BLE001 - a snapshot is a report
            logger.warning("%s/%s: could not add the diagnosis to snapshot %s: %s", owner.namespace, owner.name, name, exc)


@dataclass(frozen=True)
class _Run:
    """One diagnosis's inputs, as the tick handed them over."""

    api: KubeApi
    events: EventSink
    telemetry: OperatorMetrics
    owner: Owner
    url: str
    status: Mapping[str, Any]
    now: float
    trigger: Reason
    admin_secret: tuple[str, str] | None
    health: float | None = None
