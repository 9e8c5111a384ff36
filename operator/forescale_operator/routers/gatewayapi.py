"""Gateway API: an `HTTPRoute <name>` with one rule and two weighted backendRefs."""

from __future__ import annotations

from typing import Any, Mapping

from .. import children
from ..children import Owner
from ..kube.client import KubeApi
from ..kube.refs import HTTP_ROUTES
from ..spec import TrafficSpec
from ..weights import Weights
from .base import LastRead


def _rule(owner: Owner, weights: Weights) -> dict[str, Any]:
    return {"backendRefs": [
        {"name": owner.pool_name("a"), "port": children.SERVICE_PORT, "weight": weights.a},
        {"name": owner.pool_name("b"), "port": children.SERVICE_PORT, "weight": weights.b},
    ]}


def route_body(owner: Owner, traffic: TrafficSpec, weights: Weights) -> dict[str, Any]:
    """The whole HTTPRoute as the operator wants it."""
    spec: dict[str, Any] = {"parentRefs": [dict(r) for r in traffic.parent_refs], "rules": [_rule(owner, weights)]}
    if traffic.hostnames:
        spec["hostnames"] = list(traffic.hostnames)
    body = {"apiVersion": HTTP_ROUTES.api_version, "kind": HTTP_ROUTES.kind,
            "metadata": children.metadata(owner, owner.name), "spec": spec}
    # The hash leaves the weights out: they are the loop's, not the spec's.
    return children.stamped(body, {**spec, "rules": [_rule(owner, Weights(100, 0))]})


def weights_of(route: Mapping[str, Any], owner: Owner) -> Weights | None:
    refs = [r for rule in (route.get("spec") or {}).get("rules") or [] for r in rule.get("backendRefs") or []]
    by_name = {r.get("name"): int(r.get("weight", 1)) for r in refs}
    a, b = by_name.get(owner.pool_name("a")), by_name.get(owner.pool_name("b"))
    if a is None or b is None or a + b != 100:
        return None
    return Weights(a, b)


class GatewayApiRouter:
    name = "gatewayapi"
    ref = HTTP_ROUTES

    def __init__(self, api: KubeApi) -> None:
        self._api = api
        self._last = LastRead()

    async def ensure(self, owner: Owner, traffic: TrafficSpec, initial: Weights) -> bool:
        current = await self._api.get(HTTP_ROUTES, owner.namespace, owner.name)
        if current is None:
            await self._api.create(HTTP_ROUTES, owner.namespace, route_body(owner, traffic, initial))
            return True
        # Keep the split the loop set; converge everything else.
        weights = weights_of(current, owner) or initial
        wanted = route_body(owner, traffic, weights)
        if children.needs_update(current, wanted):
            await self._api.replace(HTTP_ROUTES, owner.namespace, owner.name,
                                    children.adopt(current, wanted, wanted["spec"]))
        return False

    async def set_weights(self, owner: Owner, weights: Weights) -> None:
        current = self._last.take(owner.namespace, owner.name) or await self._api.get(HTTP_ROUTES, owner.namespace, owner.name)
        if current is None:
            raise LookupError(f"HTTPRoute {owner.namespace}/{owner.name} does not exist")
        rules = list((current.get("spec") or {}).get("rules") or [{}])
        rules[0] = {**rules[0], **_rule(owner, weights)}
        await self._api.patch(HTTP_ROUTES, owner.namespace, owner.name, {"spec": {"rules": rules}})

    async def get_weights(self, owner: Owner) -> Weights | None:
        current = await self._api.get(HTTP_ROUTES, owner.namespace, owner.name)
        self._last.keep(owner.namespace, owner.name, current)
        return weights_of(current, owner) if current else None

    async def delete(self, owner: Owner) -> bool:
        return await self._api.delete(HTTP_ROUTES, owner.namespace, owner.name)

    def describe(self, owner: Owner) -> str:
        return f"HTTPRoute {owner.name}"

    def route_name(self, owner: Owner) -> str:
        return owner.name
