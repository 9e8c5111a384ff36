"""Pick the router for a spec's `traffic.router`."""

from __future__ import annotations

from ..kube.client import KubeApi
from ..spec import TrafficSpec
from .adopted import AdoptedRoute
from .base import Router
from .gatewayapi import GatewayApiRouter
from .istio import IstioRouter
from .nop import NopRouter


def make_router(kind: str, api: KubeApi) -> Router:
    """`gatewayapi`, `istio` or `none`; ValueError names the choices otherwise."""
    if kind == "gatewayapi":
        return GatewayApiRouter(api)
    if kind == "istio":
        return IstioRouter(api)
    if kind == "none":
        return NopRouter()
    raise ValueError(f"unknown router {kind!r}; expected gatewayapi, istio or none")


def router_for(traffic: TrafficSpec, api: KubeApi) -> Router:
    """The router of a spec's traffic: the routeRef's existing route when it names one, else `traffic.router`'s."""
    if traffic.route_ref is not None:
        return AdoptedRoute(api, traffic.route_ref)
    return make_router(traffic.router, api)


def all_routers(api: KubeApi) -> list[Router]:
    """Every backend, to clean up the old route after a router change."""
    return [GatewayApiRouter(api), IstioRouter(api), NopRouter()]
