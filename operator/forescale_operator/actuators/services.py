"""Services `<name>-a`, `<name>-b` (one pool each) and `<name>` (both pools)."""

from __future__ import annotations

import copy
from typing import Any, Mapping

from .. import children
from ..children import Owner
from ..kube.client import KubeApi
from ..kube.refs import SERVICES
from ..spec import PoolSpec


def _managed_view(obj: Mapping[str, Any]) -> Any:
    spec = obj.get("spec") or {}
    return (spec.get("selector"), spec.get("ports"), (obj.get("metadata") or {}).get("ownerReferences"))


async def ensure_services(api: KubeApi, owner: Owner, a: PoolSpec, b: PoolSpec) -> list[str]:
    """Create or converge the three Services; returns the names created."""
    created = []
    for wanted in children.services(owner, a, b):
        name = wanted["metadata"]["name"]
        current = await api.get(SERVICES, owner.namespace, name)
        if current is None:
            await api.create(SERVICES, owner.namespace, wanted)
            created.append(name)
        elif _managed_view(current) != _managed_view(wanted):
            # Start from the live object: spec.clusterIP is immutable and must be sent back unchanged.
            body = copy.deepcopy(current)
            body["spec"] = {**(current.get("spec") or {}), "selector": wanted["spec"]["selector"],
                            "ports": wanted["spec"]["ports"]}
            body["metadata"]["labels"] = {**(current["metadata"].get("labels") or {}), **wanted["metadata"]["labels"]}
            body["metadata"]["ownerReferences"] = wanted["metadata"]["ownerReferences"]
            await api.replace(SERVICES, owner.namespace, name, body)
    return created
