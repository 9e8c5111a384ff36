"""`router: none`: no route object; the Service `<name>` spreads traffic over both pools by pod count."""

from __future__ import annotations

from ..children import Owner
from ..spec import TrafficSpec
from ..weights import ALL_ON_A, Weights


class NopRouter:
    name = "none"
    ref = None

    async def ensure(self, owner: Owner, traffic: TrafficSpec, initial: Weights) -> bool:
        return False

    async def set_weights(self, owner: Owner, weights: Weights) -> None:
        # Nothing to shift: with no router the operator only scales.
        return None

    async def get_weights(self, owner: Owner) -> Weights | None:
        return ALL_ON_A

    async def delete(self, owner: Owner) -> bool:
        return False

    def describe(self, owner: Owner) -> str:
        return f"Service {owner.name} (no router)"

    def route_name(self, owner: Owner) -> str:
        return owner.name
