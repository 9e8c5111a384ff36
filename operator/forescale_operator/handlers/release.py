"""Delete: give back what the resource took over, and nothing else.

The children Forescale made carry owner references: the cluster's garbage
collector deletes them. What it adopted is the user's and stays: the
targetRef Deployments keep their pods and replica count, and the routeRef
route gets its weights back to 100/0 (all traffic to pool A's Service), as it
would be had Forescale never shifted any. In Preview nothing was written, so
nothing is. A spec that no longer parses, or a route that is gone or no longer
splits between the two Services, leaves nothing to give back.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..children import AdoptionRefused, Owner
from ..reasons import Reason
from ..spec import SpecError, parse_spec
from ..weights import ALL_ON_A
from .deps import HandlerDeps


async def release(body: Mapping[str, Any], deps: HandlerDeps) -> str:
    """Put an adopted route back to 100/0 (not in Preview); returns a one-line summary for kopf's log."""
    owner = Owner.from_body(body)
    try:
        spec = parse_spec(body.get("spec") or {})
    except SpecError as err:
        return f"released: nothing to give back ({err})"
    kept = [p.target_ref.describe() for p in (spec.a, spec.b) if p.target_ref is not None]
    kept_text = f"; {', '.join(kept)} left as {'they are' if len(kept) > 1 else 'it is'}" if kept else ""
    if spec.traffic.route_ref is None or spec.preview:
        return f"released: no route of the user's changed{kept_text}"
    router = deps.actuators.router(spec.traffic)
    try:
        weights = await router.get_weights(owner)
    except (SpecError, AdoptionRefused) as err:
        return f"released: {router.describe(owner)} not restored ({err}){kept_text}"
    if weights is None or weights == ALL_ON_A:
        return f"released: {router.describe(owner)} at {weights or 'no split'}, unchanged{kept_text}"
    await router.set_weights(owner, ALL_ON_A)
    await deps.events.post(Reason.TRAFFIC_SHIFTED, f"Restored {router.describe(owner)} to 100/0 (was {weights}): "
                                                   f"{owner.name} is being deleted{kept_text}")
    return f"released: {router.describe(owner)} {weights} -> 100/0{kept_text}"
