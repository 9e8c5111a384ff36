"""Bring your own workload: reconcile, tick and delete with targetRefs and a routeRef, against the emulated API.

The workload is crds/examples/adopt.yaml (the Deployment `embed`, its Service,
an HTTPRoute with two rules, and the InferenceDeployment `embed` adopting
them), applied directly (no request logged); every request the operator makes
afterwards is in the emulated API server's request log.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Callable

import pytest
import yaml

from forescale_operator.actuators import Actuators
from forescale_operator.events import RecordingEvents
from forescale_operator.forecast_loop.binding import Bindings
from forescale_operator.forecast_loop.loop import ForecastLoop
from forescale_operator.handlers.reconcile import reconcile
from forescale_operator.handlers.release import release
from forescale_operator.handlers.tick import TickContext, TickDeps, tick
from forescale_operator.readings.base import MetricSample, PoolSample

NS = "default"
ADOPT = Path(__file__).resolve().parents[2] / "crds" / "examples" / "adopt.yaml"


def example_objects() -> list[dict]:
    """Every object of crds/examples/adopt.yaml: the workload, then the InferenceDeployment."""
    return [doc for doc in yaml.safe_load_all(ADOPT.read_text()) if doc]
WRITES = ("create", "update", "patch", "delete", "deletecollection")


class Overloaded:
    """A metric source: pool A at `rate` req/s and `latency` ms p99 (the prior says 10 req/s per pod)."""

    name = "scripted"

    def __init__(self, rate: float = 60.0, latency: float = 150.0) -> None:
        self.rate, self.latency = rate, latency

    def sample(self, namespace, name, spec, now):
        a = PoolSample(latency_ms=self.latency, rate_rps=self.rate, error_rate=0.0, queue_depth=0.0)
        return MetricSample(time=now, available=True, pools={"a": a, "b": PoolSample(rate_rps=0.0)},
                            latency_ms=self.latency, rate_rps=self.rate)


class Rig:
    """The adopt example in the emulated cluster, and the operator's handlers run in-process."""

    def __init__(self, cluster, api, *, mode: str = "Preview", source=None,
                 edit: Callable[[list[dict]], None] | None = None, admin_secret: tuple[str, str] | None = None) -> None:
        self.cluster, self.api = cluster, api
        self.objects = example_objects()
        self.resource["spec"]["mode"] = mode
        if edit is not None:
            edit(self.objects)
        self.events = RecordingEvents()
        loop = ForecastLoop(bindings=Bindings(prometheus_url="http://prom:9090", build=lambda url: source)) \
            if source is not None else ForecastLoop()
        self.deps = TickDeps(api=api, actuators=Actuators(api, admin_secret), events=self.events, loop=loop)
        for obj in self.objects:
            cluster.put(obj)
        self.mark = len(cluster.request_log)

    @property
    def resource(self) -> dict:
        return next(o for o in self.objects if o["kind"] == "InferenceDeployment")

    def obj(self, plural: str, name: str = "embed") -> dict | None:
        return self.cluster.get(plural, NS, name)

    def live(self) -> dict:
        return copy.deepcopy(self.obj("inferencedeployments"))

    async def reconcile(self) -> str:
        return await reconcile(self.live(), self.deps)

    async def tick(self) -> str:
        return await tick(TickContext(self.live()), self.deps)

    def writes(self) -> list[tuple[str, str, str, str]]:
        """(verb, resource, subresource, name) of every write since the rig was set up."""
        return [(r.verb, r.resource, r.subresource, r.name) for r in self.cluster.request_log.records()[self.mark:]
                if r.verb in WRITES]

    @property
    def status(self) -> dict:
        return self.obj("inferencedeployments").get("status") or {}

    def ready_message(self) -> str:
        return next(c["message"] for c in self.status["conditions"] if c["type"] == "Ready")


def own_writes_only(writes) -> bool:
    """Only this resource's status and its events."""
    return all(w[1] == "events" or (w[1], w[2]) == ("inferencedeployments", "status") for w in writes)


async def test_preview_creates_nothing_touches_nothing_and_reports_what_auto_would_do(cluster, api):
    rig = Rig(cluster, api, source=Overloaded())
    before = {(p, n): rig.obj(p, n) for p, n in (("deployments", "embed"), ("services", "embed"), ("httproutes", "embed"))}
    await rig.reconcile()
    for _ in range(3):
        await rig.tick()
    # Nothing but this resource's status and events was written: the request log says so.
    assert rig.writes() and own_writes_only(rig.writes()), rig.writes()
    assert {k: rig.obj(*k) for k in before} == before  # not a field, not a resourceVersion changed
    assert rig.obj("deployments", "embed-b") is None and rig.obj("services", "embed-b") is None
    messages = [m for _, _, m in rig.events.events]
    assert messages[0].startswith("Preview: would adopt Deployment embed as pool a (2 replicas, fp16), HTTPRoute "
                                  "embed (weights 100/0) and create embed-b (1 replica, int8)")
    # What Auto would do for the running service: scale the Deployment it names, not `embed-a`.
    assert any(m.startswith("Preview: would scale embed up") for m in messages), messages
    status = rig.status
    assert status["adopted"] == "Deployment embed as pool a, HTTPRoute embed (Preview: read only)"
    assert status["pools"]["a"]["deployment"] == "embed" and status["pools"]["a"]["replicas"] == 2
    assert status["preview"]["desiredReplicas"]["a"] > 2 and status["weights"] == {"a": 100, "b": 0}


async def test_auto_scales_the_deployment_through_the_scale_subresource_only(cluster, api):
    rig = Rig(cluster, api, mode="Auto", source=Overloaded())
    template = copy.deepcopy(rig.obj("deployments")["spec"]["template"])
    await rig.reconcile()
    await rig.tick()
    deployment = rig.obj("deployments")
    assert deployment["spec"]["replicas"] > 2
    assert ("patch", "deployments", "scale", "embed") in rig.writes()
    # Never rewritten, relabelled or owned: only its replicas moved.
    assert [w for w in rig.writes() if w[1] == "deployments" and w[3] == "embed" and w[2] != "scale"] == []
    assert deployment["spec"]["template"] == template and "ownerReferences" not in deployment["metadata"]
    assert deployment["metadata"]["labels"] == {"app.kubernetes.io/part-of": "embed"}
    # Pool B, from its template, is Forescale's own: created, with its Service, and owned.
    assert rig.obj("deployments", "embed-b")["metadata"]["ownerReferences"][0]["name"] == "embed"
    assert rig.obj("services", "embed-b") is not None and rig.obj("services", "embed-a") is None
    assert [r for _, r, _ in rig.events.events][:2] == ["PoolsCreated", "PoolsAdopted"]
    assert any(r == "ScaledUp" and m.startswith("Scale embed up") for _, r, m in rig.events.events), rig.events.events


@pytest.mark.parametrize("min_replicas, replicas, event", [
    (3, 3, "Scaled embed 2 -> 3: outside the bounds 3..10"),
    (1, 2, None),
])
async def test_reconcile_moves_adopted_replicas_into_bounds(cluster, api, min_replicas, replicas, event):
    def bounds(objects):
        next(o for o in objects if o["kind"] == "InferenceDeployment")["spec"]["pools"]["a"]["minReplicas"] = min_replicas
    rig = Rig(cluster, api, mode="Auto", edit=bounds)
    await rig.reconcile()
    assert rig.obj("deployments")["spec"]["replicas"] == replicas
    assert (("patch", "deployments", "scale", "embed") in rig.writes()) is (event is not None)
    assert (rig.events.events[-1][2] if event else None) == event


async def test_a_second_reconcile_writes_nothing_and_posts_nothing(cluster, api):
    rig = Rig(cluster, api, mode="Auto")
    await rig.reconcile()
    writes, events = rig.writes(), list(rig.events.events)
    await rig.reconcile()
    assert rig.writes() == writes and rig.events.events == events


async def test_switching_to_auto_announces_the_adoption_again(cluster, api):
    rig = Rig(cluster, api)
    await rig.reconcile()
    body = rig.live()
    body["spec"]["mode"] = "Auto"
    cluster.put(body)
    await rig.reconcile()
    assert [r for _, r, _ in rig.events.events] == ["PoolsAdopted", "PoolsCreated", "PoolsAdopted"]
    assert rig.events.events[-1][2].startswith("Adopted Deployment embed as pool a (2 replicas, fp16), HTTPRoute embed")
    assert rig.status["adopted"] == "Deployment embed as pool a, HTTPRoute embed"


def _route_weights(rig) -> list:
    return [r.get("weight") for r in rig.obj("httproutes")["spec"]["rules"][0]["backendRefs"]]


async def _shift(rig, a: int, b: int) -> None:
    from forescale_operator.children import Owner
    from forescale_operator.spec import parse_spec
    from forescale_operator.weights import Weights
    body = rig.live()
    router = rig.deps.actuators.router(parse_spec(body["spec"]).traffic)
    await router.set_weights(Owner.from_body(body), Weights(a, b))


@pytest.mark.parametrize("mode, split, restored", [
    ("Auto", (70, 30), True),      # shifted by Forescale: given back at 100/0
    ("Auto", (100, 0), False),     # already 100/0: no write at all
    ("Preview", (70, 30), False),  # Preview never wrote the route, and does not on delete either
])
async def test_delete_restores_the_route_to_100_0_and_leaves_the_deployments(cluster, api, mode, split, restored):
    rig = Rig(cluster, api, mode=mode)
    await rig.reconcile()
    await _shift(rig, *split)
    deployment = rig.obj("deployments")
    rig.mark = len(cluster.request_log)
    summary = await release(rig.live(), rig.deps)
    assert _route_weights(rig) == ([100, 0] if restored else list(split))
    assert [w for w in rig.writes() if w[1] != "events"] == ([("patch", "httproutes", "", "embed")] if restored else [])
    assert rig.obj("deployments") == deployment  # untouched
    assert "Deployment embed left as it is" in summary
    if restored:
        assert rig.events.events[-1] == ("Normal", "TrafficShifted", "Restored HTTPRoute embed to 100/0 (was 70/30): "
                                         "embed is being deleted; Deployment embed left as it is")
    # Then the API server deletes the resource: its own children go, the user's objects stay.
    cluster.delete("inferencedeployments", NS, "embed")
    assert rig.obj("deployments", "embed-b") is None
    assert rig.obj("deployments") is not None and rig.obj("services") is not None and rig.obj("httproutes") is not None


async def test_delete_with_the_route_gone_gives_back_nothing_and_does_not_fail(cluster, api):
    rig = Rig(cluster, api, mode="Auto")
    await rig.reconcile()
    cluster.delete("httproutes", NS, "embed")
    assert "not restored" in await release(rig.live(), rig.deps) or "no split" in await release(rig.live(), rig.deps)


# --- bad input: phase Invalid, the reference named, nothing created -----------------------------------------


def _resource(objects) -> dict:
    return next(o for o in objects if o["kind"] == "InferenceDeployment")


def _drop(kind: str):
    def edit(objects):
        objects[:] = [o for o in objects if o["kind"] != kind]
    return edit


def _spec(path: str, value):
    def edit(objects):
        node = _resource(objects)["spec"]
        *parents, leaf = path.split(".")
        for key in parents:
            node = node[key]
        node[leaf] = value
    return edit


def _owned_by(kind: str, name: str):
    def edit(objects):
        deployment = next(o for o in objects if o["kind"] == "Deployment")
        deployment["metadata"]["ownerReferences"] = [{"apiVersion": "serving.kserve.io/v1beta1", "kind": kind,
                                                      "name": name, "uid": "isvc-uid", "controller": True}]
    return edit


def _hpa(objects):
    objects.append({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                    "metadata": {"name": "embed-cpu", "namespace": NS},
                    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "embed"},
                             "minReplicas": 1, "maxReplicas": 4}})


def _route_without_b(objects):
    route = next(o for o in objects if o["kind"] == "HTTPRoute")
    route["spec"]["rules"][0]["backendRefs"] = route["spec"]["rules"][0]["backendRefs"][:1]


def _both(*edits):
    def edit(objects):
        for e in edits:
            e(objects)
    return edit


#: (case, edit, event reason, what the Ready message must say)
BAD_INPUT = [
    ("no such Deployment", _drop("Deployment"), "InvalidSpec",
     "spec.pools.a.targetRef.name: Deployment default/embed does not exist"),
    ("a Deployment in another namespace", _spec("pools.a.targetRef.namespace", "ml"), "InvalidSpec",
     "spec.pools.a.targetRef.namespace: Deployment ml/embed is in another namespace"),
    ("no such route", _drop("HTTPRoute"), "InvalidSpec", "spec.traffic.routeRef.name: HTTPRoute embed does not exist"),
    ("a route without pool b's backendRef", _route_without_b, "AdoptionRefused",
     "HTTPRoute embed has no rule with backendRefs to both Service embed (pool a) and Service embed-b (pool b)"),
    ("a Deployment a KServe InferenceService controls", _owned_by("InferenceService", "embed-isvc"), "AdoptionRefused",
     "Deployment embed (pool a) is controlled by InferenceService/embed-isvc"),
    ("a Deployment an HPA scales", _hpa, "AdoptionRefused",
     "Deployment embed (pool a) is already scaled by HorizontalPodAutoscaler/embed-cpu"),
]


@pytest.mark.parametrize("mode", ["Auto", "Preview"])
@pytest.mark.parametrize("edit, reason, message", [b[1:] for b in BAD_INPUT], ids=[b[0] for b in BAD_INPUT])
async def test_bad_references_are_invalid_named_and_create_nothing(cluster, api, mode, edit, reason, message):
    rig = Rig(cluster, api, mode=mode, edit=edit)
    await rig.reconcile()
    assert rig.status["phase"] == "Invalid"
    assert message in rig.ready_message(), rig.ready_message()
    assert [(t, r) for t, r, _ in rig.events.events] == [("Warning", reason)]
    assert message in rig.events.events[0][2]
    assert own_writes_only(rig.writes()), rig.writes()  # nothing created, nothing of the user's touched
    # Each tick re-checks (the Deployment may appear, the HPA go) without posting the same event again.
    await rig.tick()
    assert len(rig.events.events) == 1 and own_writes_only(rig.writes())


@pytest.mark.parametrize("edit", [_owned_by("InferenceService", "embed-isvc"), _hpa], ids=["controller", "hpa"])
async def test_adopt_owned_takes_them_anyway(cluster, api, edit):
    rig = Rig(cluster, api, mode="Auto", edit=_both(edit, _spec("pools.a.adoptOwned", True)))
    await rig.reconcile()
    assert rig.status["phase"] != "Invalid" and rig.status["adopted"].startswith("Deployment embed as pool a")
    # The owner reference stays the other controller's.
    refs = rig.obj("deployments")["metadata"].get("ownerReferences") or []
    assert all(r["uid"] == "isvc-uid" for r in refs)


async def test_an_owner_appearing_later_sends_the_tick_back_to_a_refusal(cluster, api):
    rig = Rig(cluster, api, mode="Auto")
    await rig.reconcile()
    deployment = rig.obj("deployments")
    _owned_by("InferenceService", "embed-isvc")([deployment])
    deployment["metadata"].pop("resourceVersion")
    cluster.put(deployment)
    await rig.tick()
    assert rig.status["phase"] == "Invalid" and "controlled by InferenceService/embed-isvc" in rig.ready_message()


async def test_a_fixed_reference_recovers_at_the_next_tick(cluster, api):
    rig = Rig(cluster, api, mode="Auto", edit=_route_without_b)
    await rig.reconcile()
    assert rig.status["phase"] == "Invalid"
    route = rig.obj("httproutes")
    route["spec"]["rules"][0]["backendRefs"].append({"name": "embed-b", "port": 80, "weight": 0})
    route["metadata"].pop("resourceVersion")
    cluster.put(route)
    await rig.tick()
    assert rig.status["phase"] != "Invalid" and rig.obj("deployments", "embed-b") is not None
    assert rig.events.reasons[-1] == "PoolsUpdated" and "Spec valid again" in rig.events.events[-1][2]


TOKEN_SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "forescale-admin-token", "namespace": NS},
                "data": {"token": "czNjcmV0"}}


def _mount_the_token(deployment: dict) -> dict:
    """What docs/migrate.md (On a real cluster, step 6) tells the user to add to their server container."""
    spec = deployment["spec"]["template"]["spec"]
    spec["volumes"] = [{"name": "admin-token", "secret": {"secretName": "forescale-admin-token"}}]
    server = spec["containers"][0]
    server["env"].append({"name": "FORESCALE_ADMIN_TOKEN_FILE", "value": "/var/run/forescale/token"})
    server["volumeMounts"] = [{"name": "admin-token", "mountPath": "/var/run/forescale", "readOnly": True}]
    return deployment


@pytest.mark.parametrize("mode", ["Preview", "Auto"])
async def test_admin_ready_names_the_adopted_pool_without_the_token_once_and_clears_when_mounted(cluster, api, mode):
    rig = Rig(cluster, api, mode=mode, admin_secret=("forescale-admin-token", "token"),
              edit=lambda objects: objects.insert(0, copy.deepcopy(TOKEN_SECRET)))
    await rig.reconcile()
    for _ in range(3):
        await rig.tick()

    def admin() -> dict:
        return next(c for c in rig.status["conditions"] if c["type"] == "AdminReady")

    assert (admin()["status"], admin()["reason"]) == ("False", "TokenMissing")
    assert admin()["message"].startswith("pool a (Deployment embed): container server sets neither "
                                         "FORESCALE_ADMIN_TOKEN_FILE nor FORESCALE_ADMIN_TOKEN")
    warnings = [m for t, r, m in rig.events.events if r == "AdminTokenMissing"]
    assert warnings == [admin()["message"]]  # one Warning over a reconcile and three ticks
    if mode == "Preview":
        assert own_writes_only(rig.writes()), rig.writes()  # the check only reads
    # The user mounts the token, as docs/migrate.md says: the next tick sees it, and posts nothing more.
    cluster.put(_mount_the_token(rig.obj("deployments")))
    await rig.tick()
    assert (admin()["status"], admin()["reason"]) == ("True", "TokenWired"), admin()
    assert "pool a (Deployment embed): reads Secret forescale-admin-token (key token)" in admin()["message"]
    assert [r for _, r, _ in rig.events.events].count("AdminTokenMissing") == 1
