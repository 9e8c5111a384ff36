"""The diagnosis beside the playbook (`act/incident_diagnosis.py`): it runs as its own task,
posts RootCauseSuspected with the top cause's numbers, writes status.diagnosis and the gauge, and a
Prometheus that fails or hangs never reaches the tick."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from aiohttp import web

from forescale_operator.children import Owner
from forescale_operator.diagnosis.gather import queries
from forescale_operator.act.incident_diagnosis import IncidentDiagnoses
from forescale_operator.kube.refs import CONFIG_MAPS, PODS
from forescale_operator.reasons import Reason
from forescale_operator.snapshot import snapshot_name
from forescale_operator.telemetry import OperatorMetrics

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "diagnosis"))
from test_diagnosis_gather import HANG, HEALTHY, HEALTHY_NOW, FakeProm  # noqa: E402

OWNER = Owner(namespace="ml", name="chat", uid="u-1")


def _both(values):
    return {f"{k}.{side}": v for k, v in values.items() for side in ("now", "before")}


class ClosingProm(FakeProm):
    closed = False

    async def close(self) -> None:
        self.closed = True


class Api:
    """Records status patches; the Kubernetes facts' reads find nothing."""

    def __init__(self) -> None:
        self.patches: list[dict] = []

    async def get(self, ref, namespace, name):
        return None

    async def list(self, ref, namespace, label_selector=None):
        return []

    async def patch(self, ref, namespace, name, patch, subresource=None):
        self.patches.append(patch)
        return {}


class Events:
    def __init__(self) -> None:
        self.posted: list[tuple[Reason, str]] = []

    async def post(self, reason: Reason, message: str) -> None:
        self.posted.append((reason, message))


CACHE_FAILURE = _both(HEALTHY) | HEALTHY_NOW | {"result_cache_hit_ratio.now": 0.3}
HEALTHY_ANSWERS = _both(HEALTHY) | HEALTHY_NOW
BROKEN = {k: RuntimeError("connection refused") for k in queries("ml", "chat", "a")}


@pytest.mark.parametrize("answers, top, event", [
    (CACHE_FAILURE, "cache-failure", True),  # a cause shows: the event carries its numbers
    (HEALTHY_ANSWERS, None, False),          # nothing suspected: no event, but status says so
    (BROKEN, None, False),                   # Prometheus fails: every rule unknown, nothing raised
])
async def test_the_diagnosis_posts_its_top_cause_and_writes_status(answers, top, event):
    prom, api, events, telemetry = ClosingProm(answers), Api(), Events(), OperatorMetrics()
    diagnoses = IncidentDiagnoses(lambda url, timeout_s, at: prom, timeout_s=0.5)
    assert diagnoses.start(api=api, events=events, telemetry=telemetry, owner=OWNER,
                           prometheus_url="http://prom:9090", status={}, now=1_000.0)
    await diagnoses.tasks[OWNER.uid]
    assert prom.closed
    assert [r for r, _ in events.posted] == ([Reason.ROOT_CAUSE_SUSPECTED] if event else [])
    if event:
        assert "0.3" in events.posted[0][1] and "0.8" in events.posted[0][1]
    written = api.patches[-1]["status"]["diagnosis"]
    assert written.get("top") == top and written["pool"] == "a"
    assert len(written["findings"]) == 7


async def test_a_hanging_prometheus_never_holds_the_caller():
    prom, api, events = ClosingProm({k: HANG for k in queries("ml", "chat", "a")}), Api(), Events()
    diagnoses = IncidentDiagnoses(lambda url, timeout_s, at: prom, timeout_s=0.2)
    # start() returns at once: the tick goes on while the queries wait
    assert diagnoses.start(api=api, events=events, telemetry=OperatorMetrics(), owner=OWNER,
                           prometheus_url="http://prom:9090", status={}, now=1_000.0)
    task = diagnoses.tasks[OWNER.uid]
    assert not task.done()
    # a second incident tick while it runs starts nothing more
    assert not diagnoses.start(api=api, events=events, telemetry=OperatorMetrics(), owner=OWNER,
                               prometheus_url="http://prom:9090", status={}, now=1_015.0)
    await asyncio.wait_for(task, 5.0)  # bounded by the per-query timeout
    assert api.patches and not events.posted


@pytest.mark.parametrize("url, started", [(None, False), ("http://prom:9090", True)])
async def test_no_prometheus_means_no_diagnosis_and_forget_cancels(url, started):
    diagnoses = IncidentDiagnoses(lambda u, t, at: ClosingProm({k: HANG for k in queries("ml", "chat", "a")}),
                                  timeout_s=30.0)
    assert diagnoses.start(api=Api(), events=Events(), telemetry=OperatorMetrics(), owner=OWNER,
                           prometheus_url=url, status={}, now=0.0) is started
    task = diagnoses.tasks.get(OWNER.uid)
    diagnoses.forget(OWNER)
    assert OWNER.uid not in diagnoses.tasks
    if task is not None:
        with pytest.raises(asyncio.CancelledError):
            await task


# -- the remedy, the profile and the snapshot -------------------------------------------------------------

NOW = 1_000.0
BAD_POD = {"chat-a-1": 900.0, "chat-a-2": 120.0, "chat-a-3": 125.0}


def _pod(name: str, ready: bool = True, port: int = 1) -> dict:
    return {"metadata": {"name": name, "labels": {"forescale.io/deployment": "chat", "forescale.io/pool": "a"}},
            "spec": {"containers": [{"name": "server", "ports": [{"name": "http", "containerPort": port}]}]},
            "status": {"phase": "Running", "podIP": "127.0.0.1",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


class Cluster(Api):
    """The pool's pods, the admin token Secret, the tick's snapshot ConfigMap; deletions and replaces recorded."""

    def __init__(self, pods: list[dict], snapshot: bool = True) -> None:
        super().__init__()
        self.pods = {p["metadata"]["name"]: p for p in pods}
        self.configmaps = {snapshot_name("chat", NOW): {"metadata": {"name": snapshot_name("chat", NOW)},
                                                         "data": {"scene.json": "{}"}}} if snapshot else {}
        self.deleted: list[str] = []
        self.replaced: list[dict] = []

    async def get(self, ref, namespace, name):
        if ref is CONFIG_MAPS:
            return self.configmaps.get(name)
        if ref.plural == "secrets":
            return {"stringData": {"token": "t0ken"}}
        return None

    async def list(self, ref, namespace, label_selector=None):
        return list(self.pods.values()) if ref is PODS else []

    async def delete(self, ref, namespace, name):
        self.deleted.append(name)
        return self.pods.pop(name, None) is not None

    async def replace(self, ref, namespace, name, body):
        self.replaced.append(body)
        self.configmaps[name] = body
        return body


async def _diagnose(cluster: Cluster, *, pods=BAD_POD, trigger=Reason.EMERGENCY_STARTED, now=NOW, diagnoses=None,
                    answers=None):
    prom = ClosingProm(answers or HEALTHY_ANSWERS, pods=pods)
    diagnoses = diagnoses or IncidentDiagnoses(lambda url, timeout_s, at: prom, timeout_s=0.5, profile_timeout_s=0.2)
    events = Events()
    assert diagnoses.start(api=cluster, events=events, telemetry=OperatorMetrics(), owner=OWNER,
                           prometheus_url="http://prom:9090", status={}, now=now, trigger=trigger,
                           admin_secret=("forescale-admin", "token"))
    await diagnoses.tasks[OWNER.uid]
    return events, diagnoses


@pytest.mark.parametrize("ready, trigger, deleted", [
    ((True, True, True), Reason.EMERGENCY_STARTED, True),   # the playbook, the pool ready: the bad pod goes
    ((True, True, False), Reason.EMERGENCY_STARTED, True),  # two ready, the bad one counted
    ((True, False, False), Reason.EMERGENCY_STARTED, False),  # one ready: never
    ((True, True, True), Reason.OVERLOAD, True),            # B took an overload's excess: the bad pod still goes
])
async def test_one_bad_pod_is_deleted_once_with_its_numbers(ready, trigger, deleted):
    cluster = Cluster([_pod(n, r) for n, r in zip(BAD_POD, ready)])
    events, diagnoses = await _diagnose(cluster, trigger=trigger)
    reasons = [r for r, _ in events.posted]
    assert reasons[0] is Reason.ROOT_CAUSE_SUSPECTED
    assert cluster.deleted == (["chat-a-1"] if deleted else [])
    if deleted:
        assert reasons == [Reason.ROOT_CAUSE_SUSPECTED, Reason.BAD_POD_DELETED]
        assert "Deleting pod chat-a-1 so that Deployment chat-a replaces it" in events.posted[0][1]
        assert events.posted[1][1] == ("Delete pod chat-a-1 so that Deployment chat-a replaces it: p99 900 ms vs "
                                       f"122 ms median of the other 2 (7.3x); {sum(ready)} of 3 pods of chat-a ready")
        # once per incident: the next diagnosis within ONCE_PER_SECONDS deletes nothing more
        cluster.pods["chat-a-1"] = _pod("chat-a-1")
        events, _ = await _diagnose(cluster, trigger=trigger, now=NOW + 60, diagnoses=diagnoses)
        assert cluster.deleted == ["chat-a-1"] and "already" in events.posted[0][1]
    else:
        assert reasons == [Reason.ROOT_CAUSE_SUSPECTED] and "1 of 3 pods of chat-a ready" in events.posted[0][1]
    status = cluster.patches[0]["status"]["diagnosis"]
    assert status["top"] == "bad-pod" and status["message"] == events.posted[0][1] if not deleted else True


async def test_a_rollout_is_said_and_nothing_is_done():
    class RolledOut(Cluster):
        async def get(self, ref, namespace, name):
            if ref.plural == "deployments":
                return {"metadata": {"annotations": {"deployment.kubernetes.io/revision": "2"}}}
            return await super().get(ref, namespace, name)

        async def list(self, ref, namespace, label_selector=None):
            if ref.plural == "replicasets":
                return [{"metadata": {"annotations": {"deployment.kubernetes.io/revision": "2"},
                                      "creationTimestamp": "1970-01-01T00:15:00Z"}}]  # 100 s before NOW
            return await super().list(ref, namespace, label_selector)

    cluster = RolledOut([_pod(n) for n in BAD_POD])
    events, _ = await _diagnose(cluster, pods={"chat-a-1": 120.0, "chat-a-2": 125.0})
    assert [r for r, _ in events.posted] == [Reason.ROOT_CAUSE_SUSPECTED]
    assert events.posted[0][1].startswith("Rollout suspected (rollout): new revision 1.67 min ago. Not rolled back: "
                                          "that is the user's call (kubectl rollout undo deployment/chat-a -n ml)")
    assert cluster.deleted == []


async def _profile_server(behaviour: str):
    async def profile(request: web.Request) -> web.Response:
        assert request.headers["Authorization"] == "Bearer t0ken"
        body = await request.json()
        if behaviour == "hang":
            await asyncio.sleep(30)
        return web.json_response({"requests": body["requests"], "complete": True, "stages": {"total": {"p99_ms": 900}},
                                  "table": "stage  p50  p99\n"})

    app = web.Application()
    app.router.add_post("/admin/profile", profile)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]


@pytest.mark.parametrize("behaviour", ["answers", "hang"])
async def test_the_snapshot_gets_the_evidence_the_diagnosis_and_the_slowest_pods_profile(behaviour):
    runner, port = await _profile_server(behaviour)
    try:
        cluster = Cluster([_pod("chat-a-1", port=port), _pod("chat-a-2"), _pod("chat-a-3")])
        events, _ = await _diagnose(cluster)
    finally:
        await runner.cleanup()
    (written,) = cluster.replaced
    data = written["data"]
    assert set(data) == {"scene.json", "evidence.json", "diagnosis.json", "profile.json"}
    assert json.loads(data["evidence.json"])["pod_p99_ms"] == BAD_POD
    diagnosis = json.loads(data["diagnosis.json"])
    assert diagnosis["top"] == "bad-pod" and diagnosis["trigger"] == "EmergencyStarted"
    assert diagnosis["remedy"] == {"action": "delete-pod", "pod": "chat-a-1",
                                   "note": "Deleting pod chat-a-1 so that Deployment chat-a replaces it"}
    profile = json.loads(data["profile.json"])
    assert profile["pod"] == "chat-a-1"
    if behaviour == "answers":
        assert profile["profile"]["stages"] == {"total": {"p99_ms": 900}}
    else:  # the pod never answered: the profile says so, bounded, and the rest went on
        assert "error" in profile["profile"]
    # the profile was taken before the bad pod was deleted, and after the event
    assert cluster.deleted == ["chat-a-1"] and events.posted[0][0] is Reason.ROOT_CAUSE_SUSPECTED


@pytest.mark.parametrize("trigger, snapshot", [(Reason.OVERLOAD, True), (Reason.EMERGENCY_STARTED, False)])
async def test_no_snapshot_is_written_without_an_incidents_configmap(trigger, snapshot):
    cluster = Cluster([_pod(n) for n in BAD_POD], snapshot=snapshot)
    await _diagnose(cluster, trigger=trigger)
    assert cluster.replaced == []  # an overload saves no scene; a missing one is logged, not made up


@pytest.mark.parametrize("reasons, trigger", [
    ([Reason.EMERGENCY_STARTED, Reason.TRAFFIC_SHIFTED], Reason.EMERGENCY_STARTED),  # the playbook starts
    ([Reason.OVERLOAD, Reason.SCALED_UP], Reason.OVERLOAD),                          # B takes an overload's excess
    ([Reason.OVERLOAD, Reason.EMERGENCY_STARTED], Reason.EMERGENCY_STARTED),         # both: the incident's
    ([Reason.SCALED_UP, Reason.TRAFFIC_SHIFTED], None),                              # relief that is no start
    ([Reason.CUTBACK_STEP], None),
    ([], None),
])
def test_the_tick_diagnoses_when_a_relief_starts(reasons, trigger):
    from types import SimpleNamespace

    from forescale_operator.engine.types import Event
    from forescale_operator.handlers.tick import _diagnosis_trigger

    decision = SimpleNamespace(events=[Event(r, "") for r in reasons])
    assert _diagnosis_trigger(decision) is trigger


@pytest.mark.parametrize("health, top", [(2.5, "degraded-pods"), (1.0, None), (None, None)])
async def test_the_starting_ticks_model_health_is_evidence(health, top):
    # batches twice the size: per-item compute cannot see a slowdown they amortise, the model's health can
    prom, api, events = ClosingProm(HEALTHY_ANSWERS | {"batch_size_mean.now": 16.0}), Api(), Events()
    diagnoses = IncidentDiagnoses(lambda url, timeout_s, at: prom, timeout_s=0.5)
    assert diagnoses.start(api=api, events=events, telemetry=OperatorMetrics(), owner=OWNER, prometheus_url="http://p:9090",
                           status={}, now=1_000.0, health=health)
    await diagnoses.tasks[OWNER.uid]
    assert api.patches[-1]["status"]["diagnosis"].get("top") == top
    if top:
        assert "latency 2.5x the latency model's at this load" in events.posted[0][1]


# -- the second look after an overload (rank.LOOK_AGAIN) --------------------------------------------------

#: the rate per pod doubled and the queue grew; per-item compute 1.1x at a batch that grew: an overload
OVERLOAD_FIRST = _both(HEALTHY) | HEALTHY_NOW | {"rate_per_pod_rps.now": 210.0, "rate_rps.now": 420.0,
                                                 "queue_depth.now": 40.0, "queue_wait_ms.now": 60.0,
                                                 "compute_per_item_ms.now": 5.5, "batch_size_mean.now": 9.0}
#: one window later: per-item compute 1.8x at about the same batch, the queue still up: degraded pods explain it
SLOWER_AFTER = OVERLOAD_FIRST | {"compute_per_item_ms.now": 9.0, "batch_size_mean.now": 8.5}


class Proms:
    """A fresh ClosingProm per diagnosis, answering from the next answer set; records the instants asked for."""

    def __init__(self, *answer_sets):
        self.answer_sets, self.at = list(answer_sets), []

    def __call__(self, url, timeout_s, at):
        self.at.append(at)
        return ClosingProm(self.answer_sets[min(len(self.at), len(self.answer_sets)) - 1])


@pytest.mark.parametrize("second, tops, posted", [
    (SLOWER_AFTER, ["overload", "degraded-pods"], 2),  # the slowdown shows in the next window: named, posted again
    (OVERLOAD_FIRST, ["overload"], 1),                 # still an overload: the first stands, nothing posted again
    (HEALTHY_ANSWERS, ["overload"], 1),                # the queue drained: no correction either
])
async def test_an_overload_is_looked_at_again_one_window_later(second, tops, posted):
    proms, api, events = Proms(OVERLOAD_FIRST, second), Api(), Events()
    diagnoses = IncidentDiagnoses(proms, timeout_s=0.5, second_look_seconds=0.05)
    assert diagnoses.start(api=api, events=events, telemetry=OperatorMetrics(), owner=OWNER,
                           prometheus_url="http://prom:9090", status={}, now=1_000.0, trigger=Reason.OVERLOAD)
    await asyncio.wait_for(diagnoses.tasks[OWNER.uid], 5.0)
    assert proms.at == [1_000.0, 1_000.05]  # the second look reads the window after the first's
    assert [p["status"]["diagnosis"]["top"] for p in api.patches if "diagnosis" in p["status"]] == tops
    assert [r for r, _ in events.posted] == [Reason.ROOT_CAUSE_SUSPECTED] * posted
    if posted == 2:
        assert events.posted[1][1].startswith("Degraded pods suspected (degraded-pods): compute per item 9 ms (was 5)")
        assert "A second look 0.05 s after the first diagnosis, which named overload" in events.posted[1][1]


async def test_a_new_relief_cancels_a_waiting_second_look():
    proms, api, events = Proms(OVERLOAD_FIRST, SLOWER_AFTER), Api(), Events()
    diagnoses = IncidentDiagnoses(proms, timeout_s=0.5, second_look_seconds=30.0)
    assert diagnoses.start(api=api, events=events, telemetry=OperatorMetrics(), owner=OWNER,
                           prometheus_url="http://prom:9090", status={}, now=1_000.0, trigger=Reason.OVERLOAD)
    first = diagnoses.tasks[OWNER.uid]
    for _ in range(100):  # until the first diagnosis is posted and the task only waits
        if OWNER.uid in diagnoses.waiting:
            break
        await asyncio.sleep(0.01)
    assert OWNER.uid in diagnoses.waiting and len(events.posted) == 1
    # the playbook starts 15 s later: its diagnosis runs now, on a newer window, and the wait is cancelled
    assert diagnoses.start(api=api, events=events, telemetry=OperatorMetrics(), owner=OWNER,
                           prometheus_url="http://prom:9090", status={}, now=1_015.0)
    with pytest.raises(asyncio.CancelledError):
        await first
    second = diagnoses.tasks[OWNER.uid]
    assert second is not first
    diagnoses.forget(OWNER)
    assert proms.at[:2] == [1_000.0, 1_015.0]
