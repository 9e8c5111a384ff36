"""traffic.routeRef: an existing route of which only the two pools' weights change (routers/adopted.py).

Each case is a route a user might already run, with rules, matches, filters
and backends Forescale must leave exactly as they are. After a shift the whole
spec is compared with the original: only the expected weights may differ.
"""

from __future__ import annotations

import copy

import pytest

from forescale_operator.children import AdoptionRefused, Owner
from forescale_operator.kube.errors import ApiError
from forescale_operator.routers.adopted import AdoptedRoute
from forescale_operator.spec import RouteRef, SpecError, TrafficSpec
from forescale_operator.weights import ALL_ON_A, Weights

OWNER = Owner("chat", "default", "uid-1")
HTTP = RouteRef("HTTPRoute", "chat", backends={"a": "chat-fp16", "b": "chat-int8"})
VS = RouteRef("VirtualService", "chat", backends={"a": "chat-fp16", "b": "chat-int8"})


def httproute(rules: list) -> dict:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "chat", "namespace": "default"},
            "spec": {"parentRefs": [{"name": "gw", "namespace": "gateways"}], "hostnames": ["chat.example.com"],
                     "rules": rules}}


def virtualservice(http: list) -> dict:
    return {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
            "metadata": {"name": "chat", "namespace": "default"},
            "spec": {"hosts": ["chat.example.com"], "gateways": ["istio-system/gw"], "http": http}}


def ref(name: str, weight: int | None = None, **extra) -> dict:
    out = {"name": name, "port": 80, **extra}
    if weight is not None:
        out["weight"] = weight
    return out


def dest(host: str, weight: int, **extra) -> dict:
    return {"destination": {"host": host, "port": {"number": 80}, **extra}, "weight": weight}


SPLIT_MATCH = [{"path": {"type": "PathPrefix", "value": "/v1"}, "headers": [{"name": "x-tier", "value": "gold"}]}]
FILTER = [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x-pool", "value": "any"}]}}]

#: (case, route ref, route, expected weights after a 70/30 shift by (rule index, entry index), weights read before)
CASES = [
    ("HTTPRoute: the split rule between other rules",
     HTTP,
     httproute([{"matches": [{"path": {"type": "PathPrefix", "value": "/healthz"}}], "backendRefs": [ref("chat-fp16")]},
                {"matches": SPLIT_MATCH, "filters": FILTER, "backendRefs": [ref("chat-fp16", 1), ref("chat-int8", 0)]},
                {"matches": [{"path": {"type": "PathPrefix", "value": "/admin"}}], "backendRefs": [ref("admin", 1)]}]),
     {(1, 0): 70, (1, 1): 30}, Weights(100, 0)),
    ("HTTPRoute: a third backend in the rule keeps its weight",
     HTTP,
     httproute([{"backendRefs": [ref("chat-fp16", 90), ref("chat-int8", 0), ref("chat-canary", 10)]}]),
     {(0, 0): 70, (0, 1): 30}, Weights(100, 0)),
    ("HTTPRoute: two split rules, both shifted; weights as written are shares",
     HTTP,
     httproute([{"matches": SPLIT_MATCH, "backendRefs": [ref("chat-fp16", 3), ref("chat-int8", 1)]},
                {"backendRefs": [ref("chat-int8", 5), ref("chat-fp16", 5)]}]),
     {(0, 0): 70, (0, 1): 30, (1, 0): 30, (1, 1): 70}, Weights(75, 25)),
    ("HTTPRoute: backendRefs with group, kind and namespace spelled out",
     HTTP,
     httproute([{"backendRefs": [ref("chat-fp16", 100, group="", kind="Service", namespace="default"),
                                 ref("chat-int8", 0, group="", kind="Service")]}]),
     {(0, 0): 70, (0, 1): 30}, Weights(100, 0)),
    ("VirtualService: the split route between others, a short and a full host name",
     VS,
     virtualservice([{"name": "health", "match": [{"uri": {"prefix": "/healthz"}}], "route": [dest("chat-fp16", 100)]},
                     {"name": "split", "match": [{"uri": {"prefix": "/v1"}}], "retries": {"attempts": 2},
                      "route": [dest("chat-fp16", 100), dest("chat-int8.default.svc.cluster.local", 0)]}]),
     {(1, 0): 70, (1, 1): 30}, Weights(100, 0)),
    ("VirtualService: a third destination keeps its share; the two split the rest (weights add up to 100)",
     VS,
     virtualservice([{"route": [dest("chat-fp16", 90), dest("chat-int8", 0), dest("chat-canary", 10)]}]),
     {(0, 0): 63, (0, 1): 27}, Weights(100, 0)),
]


def _entries(spec: dict, key: str, rule: int) -> list:
    return spec[key][rule]["backendRefs" if key == "rules" else "route"]


@pytest.mark.parametrize("route_ref, route, shifted, before", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_only_the_two_weights_change(cluster, api, route_ref, route, shifted, before):
    plural, key = ("httproutes", "rules") if route_ref.kind == "HTTPRoute" else ("virtualservices", "http")
    cluster.put(route)
    original = cluster.get(plural, "default", "chat")
    router = AdoptedRoute(api, route_ref)
    assert await router.ensure(OWNER, TrafficSpec(route_ref=route_ref), ALL_ON_A) is False
    assert await router.get_weights(OWNER) == before
    await router.set_weights(OWNER, Weights(70, 30))
    live = cluster.get(plural, "default", "chat")
    expected = copy.deepcopy(original["spec"])
    for (rule, entry), weight in shifted.items():
        _entries(expected, key, rule)[entry]["weight"] = weight
    assert live["spec"] == expected
    assert live["metadata"].get("ownerReferences") is None and live["metadata"].get("labels") == original["metadata"].get("labels")
    assert await router.get_weights(OWNER) == Weights(70, 30)
    assert await router.delete(OWNER) is False and cluster.get(plural, "default", "chat") is not None
    writes = [r for r in cluster.request_log if r.verb in ("create", "update", "patch", "delete")]
    assert [(r.verb, r.resource, r.name) for r in writes] == [("patch", plural, "chat")]


async def test_a_concurrent_edit_is_not_overwritten(cluster, api):
    """The patch carries the resourceVersion it read: a route changed in between answers 409 (kopf retries)."""
    cluster.put(httproute([{"backendRefs": [ref("chat-fp16", 1), ref("chat-int8", 0)]}]))

    class EditsInBetween:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        async def patch(self, *args, **kwargs):
            edited = cluster.get("httproutes", "default", "chat")
            edited["spec"]["hostnames"] = ["other.example.com"]
            edited["metadata"].pop("resourceVersion")
            cluster.put(edited)
            return await self.inner.patch(*args, **kwargs)

    with pytest.raises(ApiError) as raised:
        await AdoptedRoute(EditsInBetween(api), HTTP).set_weights(OWNER, Weights(70, 30))
    assert raised.value.status == 409
    assert cluster.get("httproutes", "default", "chat")["spec"]["hostnames"] == ["other.example.com"]


@pytest.mark.parametrize("route_ref, route, error, text", [
    (HTTP, None, SpecError, "HTTPRoute chat does not exist in default"),
    (HTTP, httproute([{"backendRefs": [ref("chat-fp16", 1)]}, {"backendRefs": [ref("chat-int8", 1)]}]), AdoptionRefused,
     "HTTPRoute chat has no rule with backendRefs to both Service chat-fp16 (pool a) and Service chat-int8 (pool b)"),
    (HTTP, httproute([{"backendRefs": [ref("chat-fp16", 1), ref("chat-int8", 0, namespace="other")]}]), AdoptionRefused,
     "no rule with backendRefs to both Service chat-fp16 (pool a) and Service chat-int8 (pool b)"),
    (VS, virtualservice([{"route": [dest("chat-fp16", 100)]}]), AdoptionRefused,
     "VirtualService chat has no rule with destinations to both Service chat-fp16 (pool a) and Service chat-int8 (pool b)"),
    (RouteRef("HTTPRoute", "chat", namespace="gateways", backends=HTTP.backends), None, SpecError,
     "HTTPRoute gateways/chat is in another namespace"),
], ids=["missing", "no rule with both", "b in another namespace", "vs without b", "other namespace"])
async def test_a_route_that_cannot_be_adopted_is_refused_naming_both_services(cluster, api, route_ref, route, error, text):
    if route is not None:
        cluster.put(route)
    with pytest.raises(error) as raised:
        await AdoptedRoute(api, route_ref).ensure(OWNER, TrafficSpec(route_ref=route_ref), ALL_ON_A)
    assert text in str(raised.value)
    assert not [r for r in cluster.request_log if r.verb in ("create", "update", "patch", "delete")]


def test_backends_default_to_the_services_forescale_creates():
    router = AdoptedRoute(None, RouteRef("HTTPRoute", "chat", backends={"a": "chat-fp16"}))
    assert router.services(OWNER) == ("chat-fp16", "chat-b")
    assert router.describe(OWNER) == "HTTPRoute chat" and router.name == "gatewayapi"


async def test_a_tick_that_shifts_reads_the_adopted_route_once_and_still_refuses_a_concurrent_edit(cluster, api):
    """The patch starts from the tick's own read and carries its resourceVersion: an edit since answers 409."""
    cluster.put(httproute([{"backendRefs": [ref("chat-fp16", 1), ref("chat-int8", 0)]}]))
    router = AdoptedRoute(api, HTTP)
    start = len(cluster.request_log)
    assert await router.get_weights(OWNER) == Weights(100, 0)
    await router.set_weights(OWNER, Weights(70, 30))
    assert [(r.verb, r.resource) for r in cluster.request_log.records()[start:]] == [("get", "httproutes"), ("patch", "httproutes")]
    assert await router.get_weights(OWNER) == Weights(70, 30)
    edited = cluster.get("httproutes", "default", "chat")
    edited["spec"]["hostnames"] = ["other.example.com"]
    edited["metadata"].pop("resourceVersion")
    cluster.put(edited)  # after the tick read it, before it patches
    with pytest.raises(ApiError) as raised:
        await router.set_weights(OWNER, Weights(50, 50))
    assert raised.value.status == 409
    assert cluster.get("httproutes", "default", "chat")["spec"]["hostnames"] == ["other.example.com"]
