"""The route: ensure the spec's router owns `<name>`, remove the other routers' routes, set weights."""

from __future__ import annotations

from dataclasses import dataclass
import logging
from typing import Any, Mapping

from ..children import Owner
from ..kube.errors import ApiError
from ..kube.client import KubeApi
from ..routers.base import Router
from ..routers.factory import all_routers
from ..spec import TrafficSpec
from ..weights import ALL_ON_A, Weights


logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RouteChange:
    created: bool
    removed: tuple[str, ...]
    weights: Weights


async def ensure_route(api: KubeApi, router: Router, owner: Owner, traffic: TrafficSpec,
                       carry_over: Weights | None = None) -> RouteChange:
    """Converge the route of `router`; after a router change, delete the old backend's route.

    A new route starts at `carry_over` (the split the old route had) or 100/0. With a routeRef the
    route `<name>` this resource made before is the old one, unless the routeRef names that very route.
    """
    removed = []
    keep = (router.ref, router.route_name(owner))
    for other in all_routers(api):
        if other.ref is None or (other.ref, owner.name) == keep:
            continue
        # Only look where the cluster serves the kind, and only remove a route this resource owns:
        # a VirtualService of the same name made by someone else is not ours to delete.
        try:
            if not await api.served(other.ref):
                continue
            old = await api.get(other.ref, owner.namespace, owner.name)
            if old is not None and _owned(old, owner) and await other.delete(owner):
                removed.append(other.describe(owner))
        except ApiError as exc:
            if exc.retryable:
                raise
            # Cleaning another router's kind is best effort: no RBAC for it must not block this one.
            logger.warning("cannot clean up %s: %s", other.describe(owner), exc)
    created = await router.ensure(owner, traffic, carry_over or ALL_ON_A)
    weights = await router.get_weights(owner) or carry_over or ALL_ON_A
    return RouteChange(created, tuple(removed), weights)


def _owned(obj: Mapping[str, Any], owner: Owner) -> bool:
    return any(r.get("uid") == owner.uid for r in (obj.get("metadata") or {}).get("ownerReferences") or [])


async def set_weights(router: Router, owner: Owner, weights: Weights) -> None:
    """Shift traffic; a no-op for `router: none`."""
    await router.set_weights(owner, weights)
