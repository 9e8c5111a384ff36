"""Each router backend against the emulated API: create at 100/0, converge, shift, read back, delete."""

from __future__ import annotations

import pytest

from forescale_operator.children import Owner
from forescale_operator.routers.factory import make_router
from forescale_operator.spec import TrafficSpec
from forescale_operator.weights import ALL_ON_A, Weights

OWNER = Owner("chat", "default", "uid-1")
TRAFFIC = TrafficSpec(router="gatewayapi", parent_refs=({"name": "gw", "namespace": "gateways"},),
                      hostnames=("chat.example.com",), gateways=("istio-system/gw",))


@pytest.mark.parametrize("kind, plural", [("gatewayapi", "httproutes"), ("istio", "virtualservices")])
async def test_route_lifecycle(cluster, api, kind, plural):
    router = make_router(kind, api)
    assert await router.ensure(OWNER, TRAFFIC, ALL_ON_A) is True
    assert await router.get_weights(OWNER) == Weights(100, 0)
    await router.set_weights(OWNER, Weights(70, 30))
    assert await router.get_weights(OWNER) == Weights(70, 30)
    # Converging again keeps the split the loop set.
    assert await router.ensure(OWNER, TRAFFIC, ALL_ON_A) is False
    assert await router.get_weights(OWNER) == Weights(70, 30)
    (route,) = cluster.objects(plural, "default")
    assert route["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert await router.delete(OWNER) is True and cluster.objects(plural, "default") == []
    assert await router.get_weights(OWNER) is None


async def test_httproute_shape(cluster, api):
    await make_router("gatewayapi", api).ensure(OWNER, TRAFFIC, ALL_ON_A)
    spec = cluster.get("httproutes", "default", "chat")["spec"]
    assert spec["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw",
                                   "namespace": "gateways"}] and spec["hostnames"] == ["chat.example.com"]
    # the API server fills in the official CRD's defaults (group, kind, the catch-all match)
    assert spec["rules"] == [{"backendRefs": [{"name": "chat-a", "port": 80, "weight": 100, "group": "", "kind": "Service"},
                                              {"name": "chat-b", "port": 80, "weight": 0, "group": "", "kind": "Service"}],
                              "matches": [{"path": {"type": "PathPrefix", "value": "/"}}]}]


async def test_virtual_service_shape(cluster, api):
    await make_router("istio", api).ensure(OWNER, TRAFFIC, ALL_ON_A)
    spec = cluster.get("virtualservices", "default", "chat")["spec"]
    assert spec["hosts"] == ["chat.example.com"] and spec["gateways"] == ["istio-system/gw"]
    assert [(d["destination"]["host"], d["weight"]) for d in spec["http"][0]["route"]] == [("chat-a", 100), ("chat-b", 0)]


async def test_nop_router_writes_nothing(cluster, api):
    router = make_router("none", api)
    assert await router.ensure(OWNER, TRAFFIC, ALL_ON_A) is False
    await router.set_weights(OWNER, Weights(50, 50))
    assert await router.get_weights(OWNER) == ALL_ON_A
    assert not [r for r in cluster.request_log if r.verb in ("create", "patch", "update")]


def test_unknown_router_names_the_choices(api):
    with pytest.raises(ValueError, match="expected gatewayapi, istio or none"):
        make_router("linkerd", api)


@pytest.mark.parametrize("kind, plural", [("gatewayapi", "httproutes"), ("istio", "virtualservices")])
async def test_a_tick_that_shifts_reads_its_route_once(cluster, api, kind, plural):
    """get_weights (the tick observing) then set_weights patches from that read: one GET and one PATCH, not two GETs."""
    router = make_router(kind, api)
    await router.ensure(OWNER, TRAFFIC, ALL_ON_A)
    start = len(cluster.request_log)
    assert await router.get_weights(OWNER) == ALL_ON_A
    await router.set_weights(OWNER, Weights(70, 30))
    made = [(r.verb, r.resource) for r in cluster.request_log.records()[start:]]
    assert made == [("get", plural), ("patch", plural)]
    # the read is used once: a second shift in the same tick reads again, and patches the live route
    await router.set_weights(OWNER, Weights(60, 40))
    assert [(r.verb, r.resource) for r in cluster.request_log.records()[start + 2:]] == [("get", plural), ("patch", plural)]
    assert await router.get_weights(OWNER) == Weights(60, 40)


def test_a_remembered_route_is_used_once_and_only_while_fresh():
    from forescale_operator.routers.base import LastRead

    now = [0.0]
    last = LastRead(max_age_s=30.0, clock=lambda: now[0])
    last.keep("default", "chat", {"v": 1})
    assert last.take("default", "chat") == {"v": 1} and last.take("default", "chat") is None
    last.keep("default", "chat", {"v": 2})
    now[0] = 31.0
    assert last.take("default", "chat") is None  # read by another tick: the patch reads again
    last.keep("default", "chat", {"v": 3})
    last.keep("default", "chat", None)  # the route was gone at the last read
    assert last.take("default", "chat") is None
