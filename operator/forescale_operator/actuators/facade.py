"""`Actuators`: the one object the handlers and the tick call to change the cluster's children.

The route's calls take the `Router` of the resource's traffic (its routeRef, or
`traffic.router`): the tick keeps one per binding (forecast_loop/binding.py)
instead of building one per call; `router(traffic)` builds one for the
create/update path. A pool with a targetRef is scaled through its scale
subresource (targets.py); the others are the Deployments Forescale made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..children import Owner
from ..kube.client import KubeApi
from ..routers.base import Router
from ..routers.factory import router_for
from ..spec import PoolSpec, TrafficSpec
from ..weights import Weights
from . import admin_secret, deployments, routes, services, targets


@dataclass
class Actuators:
    api: KubeApi
    #: FORESCALE_ADMIN_TOKEN_SECRET as (secret, key): wired into both pools' pods; None leaves the templates as written
    admin_secret: tuple[str, str] | None = None
    #: FORESCALE_ADMIN_TOKEN_COPY_FROM: the namespace that Secret is copied from into each resource's; None: no copy
    admin_copy_from: str | None = None

    def router(self, traffic: TrafficSpec) -> Router:
        """The route backend of `traffic` (its routeRef, or `gatewayapi`, `istio`, `none`), talking to this API."""
        return router_for(traffic, self.api)

    async def ensure_admin_token(self, owner: Owner) -> str | None:
        """Copy the admin-token Secret into `owner`'s namespace (admin_secret.py); None when no copy is configured."""
        if self.admin_secret is None or self.admin_copy_from is None:
            return None
        name, key = self.admin_secret
        return await admin_secret.ensure_copy(self.api, owner, admin_secret.TokenSource(self.admin_copy_from, name, key))

    async def ensure_deployment(self, owner: Owner, pool: PoolSpec, replicas: int | None = None) -> deployments.DeploymentChange:
        return await deployments.ensure_deployment(self.api, owner, pool, replicas, self.admin_secret)

    async def check_target(self, owner: Owner, pool: PoolSpec) -> Mapping[str, Any]:
        return await targets.check_target(self.api, owner, pool)

    async def ensure_target(self, owner: Owner, pool: PoolSpec, current: Mapping[str, Any], *,
                            preview: bool) -> deployments.DeploymentChange:
        return await targets.ensure_target(self.api, owner, pool, current, preview=preview)

    async def scale(self, owner: Owner, pool: PoolSpec, replicas: int) -> int:
        return await deployments.scale(self.api, owner, pool, replicas)

    async def ensure_services(self, owner: Owner, a: PoolSpec, b: PoolSpec) -> list[str]:
        return await services.ensure_services(self.api, owner, a, b)

    async def ensure_route(self, owner: Owner, router: Router, traffic: TrafficSpec,
                           carry_over: Weights | None = None) -> routes.RouteChange:
        return await routes.ensure_route(self.api, router, owner, traffic, carry_over)

    async def set_weights(self, owner: Owner, router: Router, weights: Weights) -> None:
        await routes.set_weights(router, owner, weights)

    async def get_weights(self, owner: Owner, router: Router) -> Weights | None:
        return await router.get_weights(owner)
