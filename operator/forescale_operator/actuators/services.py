"""Services `<name>-a`, `<name>-b` (one pool each) and `<name>` (both pools)."""

from __future__ import annotations

from .. import children
from ..children import ChildConflict, Owner
from ..kube.client import KubeApi
from ..kube.refs import SERVICES
from ..spec import PoolSpec


async def ensure_services(api: KubeApi, owner: Owner, a: PoolSpec, b: PoolSpec) -> list[str]:
    """Create or converge the three Services; returns the names created."""
    created = []
    for wanted in children.services(owner, a, b):
        name = wanted["metadata"]["name"]
        current = await api.get(SERVICES, owner.namespace, name)
        holder = children.foreign_controller(current, owner) if current is not None else None
        if holder is not None:
            raise ChildConflict("Service", name, holder)
        if current is None:
            await api.create(SERVICES, owner.namespace, wanted)
            created.append(name)
        elif children.needs_update(current, wanted):
            # Start from the live object: spec.clusterIP is immutable and must be sent back unchanged.
            spec = {**(current.get("spec") or {}), "selector": wanted["spec"]["selector"], "ports": wanted["spec"]["ports"]}
            await api.replace(SERVICES, owner.namespace, name, children.adopt(current, wanted, spec))
    return created


async def services_intact(api: KubeApi, owner: Owner) -> bool:
    """Whether the three Services exist and this resource (by uid) owns each: one list call per tick."""
    wanted = {owner.name, owner.pool_name("a"), owner.pool_name("b")}
    found = await api.list(SERVICES, owner.namespace, f"{children.LABEL_DEPLOYMENT}={owner.name}")
    owned = {(s.get("metadata") or {}).get("name") for s in found if children.owned_by(s, owner)}
    return wanted <= owned
