"""`traffic.routeRef`: an existing HTTPRoute or VirtualService, of which only two weights are Forescale's.

The route stays the user's: it is never created, rewritten or deleted, and
gets no owner reference. In every rule (HTTPRoute `rules[]`, VirtualService
`http[]`) that sends traffic to both pools' Services, the two weights are set
to the split; the rule's other backends, its matches and filters, and every
other rule stay as they are. A write is a merge patch of the live rules carrying
the resourceVersion they were read at, so a concurrent edit makes it fail
(409, retried) instead of being overwritten.

Weights are read as shares of the two: an HTTPRoute's `1`/`0` reads 100/0,
`3`/`1` reads 75/25. In a VirtualService, whose weights must add up to 100, the
two take what the rule's other destinations leave.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Mapping

from ..children import AdoptionRefused, Owner
from ..kube.client import KubeApi
from ..kube.refs import HTTP_ROUTES, VIRTUAL_SERVICES, Ref
from ..spec import ROUTE_KINDS, RouteRef, SpecError, TrafficSpec
from ..weights import Weights
from .base import LastRead

#: one rule's backend entries, and whether an entry is a given Service's
Entries = Callable[[Mapping[str, Any]], list]
Matches = Callable[[Mapping[str, Any], str, str], bool]


def _http_backends(rule: Mapping[str, Any]) -> list:
    return list(rule.get("backendRefs") or [])


def _is_service(ref: Mapping[str, Any], service: str, namespace: str) -> bool:
    """A Gateway API backendRef to the core Service `service` in `namespace` (group and kind default to it)."""
    return (ref.get("name") == service and ref.get("group", "") in ("", "core") and ref.get("kind", "Service") == "Service"
            and ref.get("namespace", namespace) == namespace)


def _vs_backends(http: Mapping[str, Any]) -> list:
    return list(http.get("route") or [])


def _is_host(destination: Mapping[str, Any], service: str, namespace: str) -> bool:
    """A VirtualService destination to the Service, by short name or any of its cluster DNS names."""
    host = str((destination.get("destination") or {}).get("host") or "")
    return host in (service, f"{service}.{namespace}") or host.startswith(f"{service}.{namespace}.svc")


class AdoptedRoute:
    """The Router for a routeRef (see the module docstring): `ensure` only checks, `delete` never deletes."""

    def __init__(self, api: KubeApi, route_ref: RouteRef) -> None:
        self._api = api
        self.route_ref = route_ref
        self._last = LastRead()
        self.name = next(r for r, kind in ROUTE_KINDS.items() if kind == route_ref.kind)
        self.ref: Ref = HTTP_ROUTES if route_ref.kind == "HTTPRoute" else VIRTUAL_SERVICES
        self._list_key = "rules" if self.ref is HTTP_ROUTES else "http"
        self._entries: Entries = _http_backends if self.ref is HTTP_ROUTES else _vs_backends
        self._matches: Matches = _is_service if self.ref is HTTP_ROUTES else _is_host

    def services(self, owner: Owner) -> tuple[str, str]:
        """The Services of pools a and b, as the route names them."""
        backends = self.route_ref.backends
        return backends.get("a") or owner.pool_name("a"), backends.get("b") or owner.pool_name("b")

    def route_name(self, owner: Owner) -> str:
        return self.route_ref.name

    def describe(self, owner: Owner) -> str:
        return f"{self.route_ref.kind} {self.route_ref.name}"

    async def _read(self, owner: Owner) -> dict[str, Any] | None:
        ref = self.route_ref
        if ref.namespace and ref.namespace != owner.namespace:
            raise SpecError("traffic.routeRef.namespace", f"{ref.kind} {ref.namespace}/{ref.name} is in another "
                                                          f"namespace; Forescale patches only routes in "
                                                          f"{owner.namespace}, its own")
        return await self._api.get(self.ref, owner.namespace, ref.name)

    def _split_rules(self, route: Mapping[str, Any], owner: Owner) -> list[int]:
        """Indexes of the rules that send traffic to both pools' Services."""
        a, b = self.services(owner)
        rules = (route.get("spec") or {}).get(self._list_key) or []
        return [i for i, rule in enumerate(rules)
                if any(self._matches(e, a, owner.namespace) for e in self._entries(rule))
                and any(self._matches(e, b, owner.namespace) for e in self._entries(rule))]

    def _weight(self, entry: Mapping[str, Any]) -> int:
        # The Gateway API's default weight is 1; a VirtualService destination without one gets none of a split.
        return int(entry.get("weight", 1 if self.ref is HTTP_ROUTES else 0))

    async def ensure(self, owner: Owner, traffic: TrafficSpec, initial: Weights) -> bool:
        """Check that the route exists and splits between both pools' Services; writes nothing, creates nothing."""
        route = await self._read(owner)
        if route is None:
            raise SpecError("traffic.routeRef.name", f"{self.describe(owner)} does not exist in {owner.namespace}; "
                                                     f"nothing was created (create it, or fix the name)")
        if not self._split_rules(route, owner):
            a, b = self.services(owner)
            what = "backendRefs" if self.ref is HTTP_ROUTES else "destinations"
            raise AdoptionRefused(f"{self.describe(owner)} has no rule with {what} to both Service {a} (pool a) and "
                                  f"Service {b} (pool b): Forescale only sets the weights of those two; add the one "
                                  f"missing (weight 0) or fix spec.traffic.routeRef.backends")
        return False

    async def get_weights(self, owner: Owner) -> Weights | None:
        route = await self._read(owner)
        self._last.keep(owner.namespace, self.route_ref.name, route)
        if route is None:
            return None
        rules = self._split_rules(route, owner)
        if not rules:
            return None
        a, b = self.services(owner)
        entries = self._entries(route["spec"][self._list_key][rules[0]])
        wa = sum(self._weight(e) for e in entries if self._matches(e, a, owner.namespace))
        wb = sum(self._weight(e) for e in entries if self._matches(e, b, owner.namespace))
        if wa + wb <= 0:
            return None
        share_a = round(100 * wa / (wa + wb))
        return Weights(share_a, 100 - share_a)

    async def set_weights(self, owner: Owner, weights: Weights) -> None:
        route = self._last.take(owner.namespace, self.route_ref.name) or await self._read(owner)
        if route is None:
            raise LookupError(f"{self.describe(owner)} does not exist in {owner.namespace}")
        a, b = self.services(owner)
        rules = copy.deepcopy((route.get("spec") or {}).get(self._list_key) or [])
        for i in self._split_rules(route, owner):
            entries = self._entries(rules[i])
            mine = [e for e in entries if self._matches(e, a, owner.namespace) or self._matches(e, b, owner.namespace)]
            # HTTPRoute weights are relative; a VirtualService's add up to 100, so the two share what the others leave.
            budget = 100 if self.ref is HTTP_ROUTES else 100 - sum(self._weight(e) for e in entries if e not in mine)
            share_a = round(budget * weights.a / 100)
            for entry in mine:
                entry["weight"] = share_a if self._matches(entry, a, owner.namespace) else budget - share_a
        patch = {"metadata": {"resourceVersion": route["metadata"].get("resourceVersion")},
                 "spec": {self._list_key: rules}}
        await self._api.patch(self.ref, owner.namespace, self.route_ref.name, patch)

    async def delete(self, owner: Owner) -> bool:
        # Never: the route is the user's. Deleting the InferenceDeployment puts its weights back (handlers/release.py).
        return False
