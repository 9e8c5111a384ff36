"""The router interface: one small protocol, one backend per file (like Flagger's routers)."""

from __future__ import annotations

from typing import Protocol

from ..children import Owner
from ..kube.refs import Ref
from ..spec import TrafficSpec
from ..weights import Weights


class Router(Protocol):
    """Owns the route object `<name>` that splits traffic between `<name>-a` and `<name>-b`, or (routers/adopted.py)
    sets two weights in a route the user owns."""

    #: the spec's traffic.router value this backend implements
    name: str
    #: the kind it writes, None for the no-op router; checked against API discovery before use
    ref: Ref | None

    async def ensure(self, owner: Owner, traffic: TrafficSpec, initial: Weights) -> bool:
        """Create the route with `initial` weights, or converge its non-weight fields; True when created."""

    async def set_weights(self, owner: Owner, weights: Weights) -> None:
        """Patch the split; the route must exist."""

    async def get_weights(self, owner: Owner) -> Weights | None:
        """The split the route carries now, or None when there is no route."""

    async def delete(self, owner: Owner) -> bool:
        """Remove the route; False when there was none."""

    def describe(self, owner: Owner) -> str:
        """A few words for events: `HTTPRoute chat`."""

    def route_name(self, owner: Owner) -> str:
        """The route object's name: `<name>`, or the routeRef's."""
