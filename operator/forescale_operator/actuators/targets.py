"""A pool's existing Deployment (`pools.<pool>.targetRef`): checked before it is adopted, then only scaled.

Forescale never rewrites, labels, annotates or deletes a Deployment it did not
create: it reads it, and sets its replicas through the scale subresource
(`deployments/scale`, in deployments.scale), the way the HPA and KEDA do. Before the first write it
refuses a Deployment that is missing, that lives in another namespace, that
another controller owns (a KServe InferenceService, say), or that a
HorizontalPodAutoscaler already scales: two controllers setting one replica
count fight. `adoptOwned: true` on the pool takes the last two anyway.
"""

from __future__ import annotations

from typing import Any, Mapping

from .. import children
from ..children import AdoptionRefused, Owner
from ..kube.client import KubeApi
from ..kube.refs import DEPLOYMENTS, HORIZONTAL_POD_AUTOSCALERS
from ..spec import PoolSpec, SpecError
from .deployments import DeploymentChange, clamp, scale


def _where(pool: PoolSpec) -> str:
    return f"pools.{pool.name}.targetRef"


async def check_target(api: KubeApi, owner: Owner, pool: PoolSpec) -> Mapping[str, Any]:
    """The targetRef's Deployment, when Forescale may scale it; SpecError or AdoptionRefused (naming it) otherwise."""
    ref = pool.target_ref
    if ref is None:
        raise ValueError(f"pool {pool.name} has no targetRef")
    if ref.namespace and ref.namespace != owner.namespace:
        raise SpecError(f"{_where(pool)}.namespace", f"Deployment {ref.namespace}/{ref.name} is in another namespace; "
                                                     f"Forescale scales only Deployments in {owner.namespace}, its own")
    current = await api.get(DEPLOYMENTS, owner.namespace, ref.name)
    if current is None:
        raise SpecError(f"{_where(pool)}.name", f"Deployment {owner.namespace}/{ref.name} does not exist; nothing "
                                                f"was created (create it, or fix the name)")
    if not pool.adopt_owned:
        holder = children.foreign_controller(current, owner)
        if holder is not None:
            raise AdoptionRefused(f"Deployment {ref.name} (pool {pool.name}) is controlled by {holder}: Forescale does "
                                  f"not scale what another controller manages; set spec.pools.{pool.name}.adoptOwned: "
                                  f"true to scale it anyway")
        hpa = await scaled_by(api, owner.namespace, ref.name)
        if hpa is not None:
            raise AdoptionRefused(f"Deployment {ref.name} (pool {pool.name}) is already scaled by "
                                  f"HorizontalPodAutoscaler/{hpa}: two autoscalers would fight over its replicas; "
                                  f"remove the HPA, or set spec.pools.{pool.name}.adoptOwned: true to scale it anyway")
    return current


async def scaled_by(api: KubeApi, namespace: str, deployment: str) -> str | None:
    """The name of a HorizontalPodAutoscaler (KEDA's included) whose scaleTargetRef is this Deployment, or None."""
    for hpa in await api.list(HORIZONTAL_POD_AUTOSCALERS, namespace):
        target = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        group = str(target.get("apiVersion") or "apps/v1").partition("/")[0]
        if target.get("kind") == "Deployment" and target.get("name") == deployment and group in ("apps", "extensions"):
            return (hpa.get("metadata") or {}).get("name", "?")
    return None


async def ensure_target(api: KubeApi, owner: Owner, pool: PoolSpec, current: Mapping[str, Any], *,
                        preview: bool) -> DeploymentChange:
    """Move the Deployment's replicas into the pool's bounds (not in Preview); nothing else is written.

    `current` is the Deployment as `check_target` read it; `replicas` in the result is the count set, or
    in Preview the count Auto would set."""
    before = int((current.get("spec") or {}).get("replicas", 1))
    count = clamp(before, pool)
    if count != before and not preview:
        await scale(api, owner, pool, count)
    return DeploymentChange(owner.deployment_of(pool), False, False, before, count)
