"""The router interface: one small protocol, one backend per file (like Flagger's routers)."""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Protocol

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


class LastRead:
    """The route as `get_weights` last read it, for `set_weights` to patch from: a tick that shifts traffic reads
    its route once (observing it), not twice (observing, then again before the patch).

    Taken once (a second patch reads again) and only while fresh (`max_age_s`): a patch must start from what the
    same tick saw. A change between the read and the patch is no worse than between a GET and its PATCH: the
    owned routes' next tick re-asserts its weights; an adopted route's patch carries the resourceVersion read
    (409 on a concurrent edit).
    """

    def __init__(self, max_age_s: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._max_age_s, self._clock = max_age_s, clock
        self._held: dict[tuple[str, str], tuple[float, Mapping[str, Any]]] = {}

    def keep(self, namespace: str, name: str, route: Mapping[str, Any] | None) -> None:
        if route is None:
            self._held.pop((namespace, name), None)
        else:
            self._held[(namespace, name)] = (self._clock(), route)

    def take(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        held = self._held.pop((namespace, name), None)
        if held is None or self._clock() - held[0] > self._max_age_s:
            return None
        return held[1]
