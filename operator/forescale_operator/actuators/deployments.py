"""Deployments `<name>-a` / `<name>-b`: create, converge the template, scale, read readiness."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .. import children
from ..children import ChildConflict, Owner
from ..kube.client import KubeApi
from ..kube.create import create_or_get
from ..kube.refs import DEPLOYMENTS
from ..spec import PoolSpec


@dataclass(frozen=True)
class DeploymentChange:
    """What `ensure_deployment` did: created it, rewrote its template, or moved its replicas into bounds."""

    name: str
    created: bool
    template_changed: bool
    replicas_before: int | None
    replicas: int


@dataclass(frozen=True)
class PoolReadiness:
    """A pool as the cluster reports it."""

    exists: bool
    #: this resource (by uid) owns the Deployment, or it is the pool's targetRef and still adoptable;
    #: False sends the tick back to reconcile
    owned: bool = True
    replicas: int = 0
    ready: int = 0
    desired: int = 0
    #: the Deployment's name
    name: str = ""
    #: a targetRef's pod selector (its matchLabels, `k=v,...`); empty for the Deployments Forescale made
    selector: str = ""
    #: a targetRef's pod template (spec.template), read for the admin token (observe/admin_readiness.py); None for ours
    template: Mapping[str, Any] | None = None


def clamp(value: int, pool: PoolSpec) -> int:
    return max(pool.min_replicas, min(pool.max_replicas, value))


async def ensure_deployment(api: KubeApi, owner: Owner, pool: PoolSpec, replicas: int | None = None,
                            admin_secret: tuple[str, str] | None = None) -> DeploymentChange:
    """Create the pool's Deployment at `replicas` (default minReplicas), or converge it.

    An existing Deployment keeps its replica count (the loop owns it) unless it
    is outside the pool's bounds; its template, selector, labels and owner
    reference are rewritten when they differ from the spec. `admin_secret`
    (FORESCALE_ADMIN_TOKEN_SECRET) wires the admin token into the pods.
    """
    name = owner.pool_name(pool.name)
    current = await api.get(DEPLOYMENTS, owner.namespace, name)
    if current is None:
        count = clamp(pool.min_replicas if replicas is None else replicas, pool)
        # Created by someone else since the GET (409): converge the one that won, as if the GET had found it.
        current = await create_or_get(api, DEPLOYMENTS, owner.namespace,
                                      children.deployment(owner, pool, count, admin_secret))
        if current is None:
            return DeploymentChange(name, True, False, None, count)
    holder = children.foreign_controller(current, owner)
    if holder is not None:
        raise ChildConflict("Deployment", name, holder)
    before = int((current.get("spec") or {}).get("replicas", 1))
    count = clamp(before if replicas is None else replicas, pool)
    wanted = children.deployment(owner, pool, count, admin_secret)
    template_changed = children.needs_update(current, wanted)
    if template_changed:
        # A replace (not a merge patch) so that fields removed from the template disappear too;
        # the resourceVersion in the body makes a concurrent change answer 409 (retried).
        spec = {**(current.get("spec") or {}), **wanted["spec"]}
        await api.replace(DEPLOYMENTS, owner.namespace, name, children.adopt(current, wanted, spec))
    elif count != before:
        await api.patch(DEPLOYMENTS, owner.namespace, name, {"spec": {"replicas": count}})
    return DeploymentChange(name, False, template_changed, before, count)


async def scale(api: KubeApi, owner: Owner, pool: PoolSpec, replicas: int) -> int:
    """Set the pool's replicas, clamped to its bounds; returns the count set.

    A targetRef is scaled through its scale subresource: its spec is the user's, only the replica count is ours."""
    count = clamp(replicas, pool)
    await api.patch(DEPLOYMENTS, owner.namespace, owner.deployment_of(pool), {"spec": {"replicas": count}},
                    subresource="scale" if pool.adopted else None)
    return count


async def read_pool(api: KubeApi, owner: Owner, pool: PoolSpec) -> PoolReadiness:
    """Replicas, ready replicas and desired replicas of a pool's Deployment (its own, or its targetRef)."""
    name = owner.deployment_of(pool)
    current = await api.get(DEPLOYMENTS, owner.namespace, name)
    if current is None:
        return PoolReadiness(False, name=name)
    status = current.get("status") or {}
    spec = current.get("spec") or {}
    desired = int(spec.get("replicas", 1))
    if pool.adopted:
        # Not ours by design; adoptable as long as no other controller has taken it since (reconcile says who).
        owned = pool.adopt_owned or children.foreign_controller(current, owner) is None
        labels = (spec.get("selector") or {}).get("matchLabels") or {}
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        template = spec.get("template") or {}
    else:
        owned, selector, template = children.owned_by(current, owner), "", None
    return PoolReadiness(True, owned, int(status.get("replicas") or 0), int(status.get("readyReplicas") or 0), desired,
                         name, selector, template)
