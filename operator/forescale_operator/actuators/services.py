"""Services `<name>-a`, `<name>-b` (one pool each) and `<name>` (both pools).

Only for the pools Forescale creates: a pool with a targetRef is reached
through the user's own Service, and `<name>` (a selector over both pools'
labels) exists only when both pools are Forescale's.
"""

from __future__ import annotations

from .. import children
from ..children import ChildConflict, Owner
from ..kube.client import KubeApi
from ..kube.create import create_or_get
from ..kube.refs import SERVICES
from ..spec import PoolSpec


def _managed(owner: Owner, a: PoolSpec, b: PoolSpec) -> list[dict]:
    """The Services this resource creates: one per pool with a template, `<name>` only when both have one."""
    keep = {owner.pool_name(p.name) for p in (a, b) if not p.adopted}
    if not (a.adopted or b.adopted):
        keep.add(owner.name)
    return [s for s in children.services(owner, a, b) if s["metadata"]["name"] in keep]


async def ensure_services(api: KubeApi, owner: Owner, a: PoolSpec, b: PoolSpec) -> list[str]:
    """Create or converge the Services; returns the names created."""
    created = []
    for wanted in _managed(owner, a, b):
        name = wanted["metadata"]["name"]
        current = await api.get(SERVICES, owner.namespace, name)
        if current is None:
            # Created by someone else since the GET (409): converge the one that won, as if the GET had found it.
            current = await create_or_get(api, SERVICES, owner.namespace, wanted)
            if current is None:
                created.append(name)
                continue
        holder = children.foreign_controller(current, owner)
        if holder is not None:
            raise ChildConflict("Service", name, holder)
        if children.needs_update(current, wanted):
            # Start from the live object: spec.clusterIP is immutable and must be sent back unchanged.
            spec = {**(current.get("spec") or {}), "selector": wanted["spec"]["selector"], "ports": wanted["spec"]["ports"]}
            await api.replace(SERVICES, owner.namespace, name, children.adopt(current, wanted, spec))
    return created


async def services_intact(api: KubeApi, owner: Owner, a: PoolSpec, b: PoolSpec) -> bool:
    """Whether this resource's Services exist and it (by uid) owns each: one list call per tick, none without any."""
    wanted = {s["metadata"]["name"] for s in _managed(owner, a, b)}
    if not wanted:
        return True
    found = await api.list(SERVICES, owner.namespace, f"{children.LABEL_DEPLOYMENT}={owner.name}")
    owned = {(s.get("metadata") or {}).get("name") for s in found if children.owned_by(s, owner)}
    return wanted <= owned
