"""The tick reads its children and pods from kopf's indexes (kube/indexed.py), not the API server.

Counted against the emulated API server's request log: the requests one
steady-state tick makes, reading through the API (before) and through the
indexes (after); the tick waiting while an index is not synced; the tick
finishing on its binding when the spec changes mid-tick; a create that meets
409 adopting the object that won.
"""

from __future__ import annotations

import pytest

from forescale_operator.actuators import Actuators
from forescale_operator.actuators.deployments import ensure_deployment
from forescale_operator.actuators.services import ensure_services
from forescale_operator.children import ChildConflict, Owner
from forescale_operator.events import RecordingEvents
from forescale_operator.forecast_loop.binding import Bindings
from forescale_operator.forecast_loop.loop import ForecastLoop
from forescale_operator.handlers.reconcile import reconcile
from forescale_operator.handlers.tick import INDEXES_NOT_SYNCED, TickContext, TickDeps, tick
from forescale_operator.kube import indexed
from forescale_operator.kube.errors import ApiError
from forescale_operator.kube.indexed import IndexedReads
from forescale_operator.kube.refs import DEPLOYMENTS, PODS, SECRETS as SECRETS_REF, SERVICES
from forescale_operator.readings.base import MetricSample, PoolSample
from forescale_operator.spec import parse_spec
from test_reconcile import current, deps_for


class SteadySource:
    """A metric source (readings/base.py): the same healthy sample every tick."""

    name = "steady"

    def sample(self, namespace, name, spec, now):
        pool = PoolSample(latency_ms=40.0, rate_rps=2.0)
        return MetricSample(time=now, available=True, pools={"a": pool, "b": PoolSample(rate_rps=0.0)},
                            latency_ms=40.0, rate_rps=2.0)


def kopf_indexes(cluster, namespace: str = "default") -> dict[str, dict]:
    """What kopf's three indexes hold once it has listed the cluster (registration.py's handlers, run by hand)."""
    out: dict[str, dict] = {"deployments": {}, "pods": {}, "services": {}}
    for plural in out:
        for obj in cluster.objects(plural, namespace):
            meta = obj["metadata"]
            labels = meta.get("labels") or {}
            if indexed.OWNER_LABEL not in labels:
                continue  # the handlers' labels filter
            entry = (indexed.by_name(namespace, meta["name"], obj) if plural == "deployments"
                     else indexed.by_owner(namespace, labels, obj))
            for key, value in entry.items():
                out[plural].setdefault(key, []).append(value)
    return out


def reads_of(api, cluster, **missing) -> IndexedReads:
    indexes = {**kopf_indexes(cluster), **missing}
    return IndexedReads(api, deployments=indexes["deployments"], pods=indexes["pods"], services=indexes["services"])


def tick_deps(api, events, reads=None, source=None, **clock) -> TickDeps:
    loop = ForecastLoop(bindings=Bindings(prometheus_url="http://prom:9090", build=lambda url: source or SteadySource()),
                        **clock)
    return TickDeps(api=api, actuators=Actuators(api), events=events, loop=loop, reads=reads)


def requests_since(cluster, start: int) -> list[tuple[str, str, str]]:
    return [(r.verb, r.resource, r.subresource) for r in cluster.request_log.records()[start:]]


STATUS_PATCH = ("patch", "inferencedeployments", "status")


@pytest.mark.parametrize(("router", "through_indexes", "expected"), [
    # before: both Deployments, the Services and the pods are asked of the API server on every tick
    ("none", False, [("get", "deployments", ""), ("get", "deployments", ""), ("list", "services", ""),
                     ("list", "pods", "")]),
    ("gatewayapi", False, [("get", "deployments", ""), ("get", "deployments", ""), ("get", "httproutes", ""),
                           ("list", "services", ""), ("list", "pods", "")]),
    # after: nothing is read; the route's split is still read from the route (one GET with a router)
    ("none", True, []),
    ("gatewayapi", True, [("get", "httproutes", "")]),
])
async def test_requests_of_a_steady_state_tick(cluster, api, example, router, through_indexes, expected):
    body = example()
    body["spec"]["traffic"]["router"] = router
    deps, _ = deps_for(api)
    await reconcile(cluster.put(body), deps)
    events = RecordingEvents()
    deps = tick_deps(api, events)
    for _ in range(3):  # past the first ticks' transitions (phase, conditions): the steady state
        reads = reads_of(api, cluster) if through_indexes else None
        start = len(cluster.request_log)
        deps.reads = reads
        await tick(TickContext(current(cluster)), deps)
        made = requests_since(cluster, start)
    reads_made = [r for r in made if r != STATUS_PATCH]
    assert reads_made == expected
    assert made.count(STATUS_PATCH) <= 1  # status is patched only when it changed, at most once a tick
    assert events.reasons == []


async def test_a_tick_that_observes_nothing_new_makes_no_request(cluster, api, example):
    """Without a metric source a tick's status is readiness alone: once written, the next ticks ask and write nothing."""
    deps, _ = deps_for(api, prometheus_url=None)
    await reconcile(cluster.put(example()), deps)
    events = RecordingEvents()
    deps = TickDeps(api=api, actuators=Actuators(api), events=events)
    made = []
    for _ in range(3):
        deps.reads = reads_of(api, cluster)
        start = len(cluster.request_log)
        await tick(TickContext(current(cluster)), deps)
        made.append(requests_since(cluster, start))
    assert made[1:] == [[("get", "httproutes", "")]] * 2  # the route's split; status unchanged, not patched
    assert events.reasons == ["MetricsUnavailable"]


@pytest.mark.parametrize("missing", ["deployments", "pods", "services"])
async def test_a_tick_waits_for_an_index_not_synced_yet(cluster, api, example, missing):
    """At start-up an index not listed yet would show no children: the tick says why and does nothing."""
    deps, _ = deps_for(api)
    await reconcile(cluster.put(example()), deps)
    before = current(cluster)
    events = RecordingEvents()
    start = len(cluster.request_log)
    summary = await tick(TickContext(before), tick_deps(api, events, reads_of(api, cluster, **{missing: None})))
    assert summary.startswith(f"waiting: {INDEXES_NOT_SYNCED}") and missing in summary
    assert requests_since(cluster, start) == [] and events.events == []
    assert current(cluster)["status"] == before["status"]


async def test_a_spec_change_mid_tick_finishes_on_the_binding_it_started_with(cluster, api, example):
    """The user raises pool A's minimum while a tick reads: that tick keeps its binding; the next one rebinds."""
    body = example()
    body["spec"]["traffic"] = {"router": "none"}
    deps, _ = deps_for(api)
    await reconcile(cluster.put(body), deps)
    started = current(cluster)

    bound: list = []

    class ChangedMidTick(SteadySource):
        def sample(self, namespace, name, spec, now):
            changed = current(cluster)
            changed["spec"]["pools"]["a"]["minReplicas"] = 3
            cluster.put(changed)  # generation 2 in the API; this tick's body is still generation 1
            bound.append(spec.a.min_replicas)
            return super().sample(namespace, name, spec, now)

    deps = tick_deps(api, RecordingEvents(), reads_of(api, cluster), source=ChangedMidTick())
    generation = started["metadata"]["generation"]
    await tick(TickContext(started), deps)
    assert bound == [2]  # the spec the tick was bound to, though the API held the new one by then
    after = current(cluster)
    assert after["metadata"]["generation"] > generation
    assert {c.get("observedGeneration") for c in after["status"]["conditions"]} == {generation}
    # the next tick rebinds to the new generation
    deps.reads = reads_of(api, cluster)
    await tick(TickContext(after), deps)
    assert bound[-1] == 3 and deps.loop.bindings.bind(after, api).generation == after["metadata"]["generation"]


class RacedApi:
    """The API as seen by a converge that lost a race: its first GET of `default/name` finds nothing, though it exists."""

    def __init__(self, api, name: str):
        self.api, self.name, self.raced = api, name, False

    def __getattr__(self, attr):
        return getattr(self.api, attr)

    async def get(self, ref, namespace, name):
        if (namespace, name) == ("default", self.name) and not self.raced:
            self.raced = True
            return None
        return await self.api.get(ref, namespace, name)


def raced_child(cluster, example, kind: str, controller: str | None) -> tuple[dict, Owner]:
    """Put the resource and, as another writer would have, its child `chat-a` (unowned, or owned by `controller`)."""
    body = cluster.put(example())
    owner = Owner.from_body(body)
    spec = parse_spec(body["spec"])
    from forescale_operator import children
    child = (children.deployment(owner, spec.a, 2) if kind == "deployments"
             else next(s for s in children.services(owner, spec.a, spec.b) if s["metadata"]["name"] == "chat-a"))
    child["metadata"].pop("ownerReferences", None)
    if controller:
        child["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": controller,
                                                 "uid": "someone-else", "controller": True}]
    cluster.put(child)
    return body, owner


@pytest.mark.parametrize(("kind", "controller", "adopted"), [
    ("deployments", None, True),
    ("deployments", "other", False),
    ("services", None, True),
    ("services", "other", False),
])
async def test_a_create_that_meets_409_adopts_the_object(cluster, api, example, kind, controller, adopted):
    body, owner = raced_child(cluster, example, kind, controller)
    spec = parse_spec(body["spec"])
    raced = RacedApi(api, "chat-a")
    start = len(cluster.request_log)
    if adopted:
        if kind == "deployments":
            change = await ensure_deployment(raced, owner, spec.a)
            assert not change.created and change.replicas == 2
        else:
            assert "chat-a" not in await ensure_services(raced, owner, spec.a, spec.b)
        refs = cluster.get(kind, "default", "chat-a")["metadata"]["ownerReferences"]
        assert [r["uid"] for r in refs] == [owner.uid]  # ours now
    else:
        with pytest.raises(ChildConflict):
            if kind == "deployments":
                await ensure_deployment(raced, owner, spec.a)
            else:
                await ensure_services(raced, owner, spec.a, spec.b)
    made = [(r.verb, r.resource, r.status) for r in cluster.request_log.records()[start:] if r.resource == kind]
    assert made[0] == ("create", kind, 409)


async def test_a_second_resource_racing_for_the_admin_token_copy_adds_itself_as_an_owner(cluster, api):
    """Two resources of one namespace converge at once: both find no copy; the second's create meets 409."""
    import base64

    from forescale_operator.actuators.admin_secret import TokenSource, ensure_copy
    source = TokenSource("ml", "forescale-admin-token", "token")
    cluster.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": source.name, "namespace": "ml"},
                 "data": {"token": base64.b64encode(b"s3cret").decode()}})
    chat, embed = Owner("chat", "default", "uid-chat"), Owner("embed", "default", "uid-embed")
    assert await ensure_copy(api, chat, source) == "created"
    raced = RacedApi(api, source.name)
    assert await ensure_copy(raced, embed, source) == "updated"
    copy = cluster.get("secrets", "default", source.name)
    assert [r["uid"] for r in copy["metadata"]["ownerReferences"]] == ["uid-chat", "uid-embed"]


async def test_a_409_whose_object_is_gone_is_raised_for_the_retry(cluster, api, example):
    """The fault says 409 but nothing is there (deleted meanwhile): the converge fails for kopf to retry."""
    body = cluster.put(example())
    cluster.inject_faults(409, count=1, resource="deployments", verbs={"create"})
    with pytest.raises(ApiError) as raised:
        await ensure_deployment(api, Owner.from_body(body), parse_spec(body["spec"]).a)
    assert raised.value.status == 409


class CountingApi:
    """A KubeApi that answers nothing and records what it was asked."""

    def __init__(self):
        self.calls: list[tuple[str, str, str | None]] = []

    async def get(self, ref, namespace, name):
        self.calls.append(("get", ref.plural, name))
        return None

    async def list(self, ref, namespace, label_selector=None):
        self.calls.append(("list", ref.plural, label_selector))
        return []


POD_A = {"metadata": {"name": "chat-a-1", "labels": {"forescale.io/deployment": "chat", "forescale.io/pool": "a"}}}
POD_B = {"metadata": {"name": "chat-b-1", "labels": {"forescale.io/deployment": "chat", "forescale.io/pool": "b"}}}
DEPLOY_A = {"metadata": {"name": "chat-a"}}


@pytest.mark.parametrize(("call", "served", "asked"), [
    # served from the index
    (("get", DEPLOYMENTS, "ml", "chat-a"), DEPLOY_A, []),
    (("list", PODS, "ml", "forescale.io/deployment=chat"), [POD_A, POD_B], []),
    (("list", PODS, "ml", "forescale.io/deployment=chat,forescale.io/pool=b"), [POD_B], []),
    (("list", PODS, "ml", "forescale.io/deployment==chat"), [POD_A, POD_B], []),
    (("list", PODS, "ml", "forescale.io/deployment=other"), [], []),  # an empty entry is an answer
    (("list", SERVICES, "ml", "forescale.io/deployment=chat"), [], []),
    # asked of the API: a miss of a Deployment (an adopted targetRef), other selectors, other scopes
    (("get", DEPLOYMENTS, "ml", "user-app"), None, [("get", "deployments", "user-app")]),
    (("get", DEPLOYMENTS, "other-ns", "chat-a"), None, [("get", "deployments", "chat-a")]),
    (("list", PODS, "ml", "app=user"), [], [("list", "pods", "app=user")]),
    (("list", PODS, "ml", "forescale.io/deployment!=chat"), [], [("list", "pods", "forescale.io/deployment!=chat")]),
    (("list", PODS, "ml", "forescale.io/deployment in (chat)"), [],
     [("list", "pods", "forescale.io/deployment in (chat)")]),
    (("list", PODS, None, "forescale.io/deployment=chat"), [], [("list", "pods", "forescale.io/deployment=chat")]),
    (("list", PODS, "ml", None), [], [("list", "pods", None)]),
])
async def test_what_is_served_from_an_index(call, served, asked):
    api = CountingApi()
    reads = IndexedReads(api, deployments={("ml", "chat-a"): [DEPLOY_A]},
                         pods={("ml", "chat"): [POD_A, POD_B]}, services={})
    verb, ref, namespace, arg = call
    got = await (reads.get(ref, namespace, arg) if verb == "get" else reads.list(ref, namespace, arg))
    assert got == served and api.calls == asked


class SecretApi(CountingApi):
    """Answers a Secret `admin` in `ml`, or fails when `failing`."""

    failing = False

    async def get(self, ref, namespace, name):
        self.calls.append(("get", ref.plural, name))
        if self.failing:
            raise ApiError(503, "ServiceUnavailable", "down")
        return {"metadata": {"name": name}} if (namespace, name) == ("ml", "admin") else None


@pytest.mark.parametrize(("reads", "gets"), [
    # (seconds after the first read, namespace, name) -> the Secret GETs the API server saw in all
    ([(0, "ml", "admin"), (30, "ml", "admin")], 1),  # within a minute: the read is shared
    ([(0, "ml", "admin"), (61, "ml", "admin")], 2),  # a minute on: read again (a rotated token shows)
    ([(0, "ml", "gone"), (30, "ml", "gone")], 1),  # absent is an answer too
    ([(0, "ml", "admin"), (1, "other", "admin")], 2),  # per namespace
])
async def test_secrets_are_read_at_most_once_a_minute(reads, gets):
    api, now = SecretApi(), [0.0]
    shared: dict = {}
    for at, namespace, name in reads:
        now[0] = at
        # one reader per resource's daemon, sharing the operator's dict of reads
        reader = IndexedReads(api, deployments={}, pods={}, services={}, clock=lambda: now[0], secrets=shared)
        got = await reader.get(SECRETS_REF, namespace, name)
        assert (got is not None) == ((namespace, name) == ("ml", "admin"))
    assert len(api.calls) == gets


async def test_a_failed_secret_read_is_not_kept():
    api, now = SecretApi(), [0.0]
    reader = IndexedReads(api, deployments={}, pods={}, services={}, clock=lambda: now[0])
    api.failing = True
    with pytest.raises(ApiError):
        await reader.get(SECRETS_REF, "ml", "admin")
    api.failing = False
    assert await reader.get(SECRETS_REF, "ml", "admin") is not None and len(api.calls) == 2
