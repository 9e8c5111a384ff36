"""Istio: a `VirtualService <name>` with one HTTP route and two weighted destinations."""

from __future__ import annotations

from typing import Any, Mapping

from .. import children
from ..children import Owner
from ..kube.client import KubeApi
from ..kube.refs import VIRTUAL_SERVICES
from ..spec import TrafficSpec
from ..weights import Weights
from .base import LastRead


def _route(owner: Owner, weights: Weights) -> list[dict[str, Any]]:
    return [
        {"destination": {"host": owner.pool_name("a"), "port": {"number": children.SERVICE_PORT}}, "weight": weights.a},
        {"destination": {"host": owner.pool_name("b"), "port": {"number": children.SERVICE_PORT}}, "weight": weights.b},
    ]


def virtual_service_body(owner: Owner, traffic: TrafficSpec, weights: Weights) -> dict[str, Any]:
    """The whole VirtualService; hosts default to the both-pools Service `<name>`."""
    spec: dict[str, Any] = {"hosts": list(traffic.hostnames) or [owner.name],
                            "http": [{"name": "forescale-split", "route": _route(owner, weights)}]}
    if traffic.gateways:
        spec["gateways"] = list(traffic.gateways)
    body = {"apiVersion": VIRTUAL_SERVICES.api_version, "kind": VIRTUAL_SERVICES.kind,
            "metadata": children.metadata(owner, owner.name), "spec": spec}
    # The hash leaves the weights out: they are the loop's, not the spec's.
    return children.stamped(body, {**spec, "http": [{"name": "forescale-split", "route": _route(owner, Weights(100, 0))}]})


def weights_of(vs: Mapping[str, Any], owner: Owner) -> Weights | None:
    routes = [d for http in (vs.get("spec") or {}).get("http") or [] for d in http.get("route") or []]
    by_host = {(d.get("destination") or {}).get("host"): int(d.get("weight", 0)) for d in routes}
    a, b = by_host.get(owner.pool_name("a")), by_host.get(owner.pool_name("b"))
    if a is None or b is None or a + b != 100:
        return None
    return Weights(a, b)


class IstioRouter:
    name = "istio"
    ref = VIRTUAL_SERVICES

    def __init__(self, api: KubeApi) -> None:
        self._api = api
        self._last = LastRead()

    async def ensure(self, owner: Owner, traffic: TrafficSpec, initial: Weights) -> bool:
        current = await self._api.get(VIRTUAL_SERVICES, owner.namespace, owner.name)
        if current is None:
            await self._api.create(VIRTUAL_SERVICES, owner.namespace, virtual_service_body(owner, traffic, initial))
            return True
        weights = weights_of(current, owner) or initial
        wanted = virtual_service_body(owner, traffic, weights)
        if children.needs_update(current, wanted):
            await self._api.replace(VIRTUAL_SERVICES, owner.namespace, owner.name,
                                    children.adopt(current, wanted, wanted["spec"]))
        return False

    async def set_weights(self, owner: Owner, weights: Weights) -> None:
        current = self._last.take(owner.namespace, owner.name) or await self._api.get(VIRTUAL_SERVICES, owner.namespace, owner.name)
        if current is None:
            raise LookupError(f"VirtualService {owner.namespace}/{owner.name} does not exist")
        http = list((current.get("spec") or {}).get("http") or [{}])
        http[0] = {**http[0], "route": _route(owner, weights)}
        await self._api.patch(VIRTUAL_SERVICES, owner.namespace, owner.name, {"spec": {"http": http}})

    async def get_weights(self, owner: Owner) -> Weights | None:
        current = await self._api.get(VIRTUAL_SERVICES, owner.namespace, owner.name)
        self._last.keep(owner.namespace, owner.name, current)
        return weights_of(current, owner) if current else None

    async def delete(self, owner: Owner) -> bool:
        return await self._api.delete(VIRTUAL_SERVICES, owner.namespace, owner.name)

    def describe(self, owner: Owner) -> str:
        return f"VirtualService {owner.name}"

    def route_name(self, owner: Owner) -> str:
        return owner.name
