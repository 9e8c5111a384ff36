"""Observe the children and derive the readiness part of status: pools, weights, Ready, and the phases they imply."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..actuators import deployments, services
from ..actuators.deployments import PoolReadiness
from ..children import Owner
from ..kube.client import KubeApi
from ..phase import Phase
from ..reasons import ConditionReason, ConditionType
from ..routers.base import Router
from ..spec import InferenceSpec
from ..status import StatusUpdate
from ..weights import Weights


@dataclass(frozen=True)
class Observation:
    """What the cluster holds for one resource right now."""

    a: PoolReadiness
    b: PoolReadiness
    weights: Weights | None

    @property
    def phase(self) -> Phase:
        """Pending until pool A serves through the route; Scaling while ready differs from desired; else Stable."""
        if not self.a.exists or self.a.ready == 0 or self.weights is None:
            return Phase.PENDING
        if self.a.ready != self.a.desired or self.b.ready != self.b.desired or not self.b.exists:
            return Phase.SCALING
        return Phase.STABLE

    def phase_without_metrics(self, spec: InferenceSpec) -> Phase:
        """Pending until pool A serves, then Degraded: with no metric source nothing is forecast or scaled."""
        return Phase.PENDING if self.phase_for(spec) is Phase.PENDING else Phase.DEGRADED

    @property
    def complete(self) -> bool:
        """Both Deployments exist and are this resource's (or its adoptable targetRefs), and the route carries a split."""
        return self.a.exists and self.b.exists and self.a.owned and self.b.owned and self.weights is not None

    def complete_for(self, spec: InferenceSpec) -> bool:
        """`complete`, except in Preview with a targetRef: nothing is created then, so only the adopted pools
        and the route must be there (a pool with a template not made yet is seen at 0 replicas)."""
        if not (spec.preview and spec.adopts):
            return self.complete
        adopted = [self.pool(p.name) for p in (spec.a, spec.b) if p.adopted]
        return all(p.exists and p.owned for p in adopted) and self.weights is not None

    def phase_for(self, spec: InferenceSpec) -> Phase:
        """`phase`, where in Preview with a targetRef a pool with a template, never created then, is not waited for."""
        if spec.preview and spec.adopts and not spec.b.adopted and not self.b.exists:
            return replace(self, b=PoolReadiness(True)).phase
        return self.phase

    def pool(self, name: str) -> PoolReadiness:
        return self.a if name == "a" else self.b

    def summary(self) -> str:
        return f"a {self.a.ready}/{self.a.desired} ready, b {self.b.ready}/{self.b.desired} ready"


async def observe(api: KubeApi, owner: Owner, router: Router, spec: InferenceSpec) -> Observation:
    """Read both Deployments (the pools' own, or their targetRefs) through `api`, and the route's split.

    The tick passes kopf's indexes (kube/indexed.py), so a steady state asks the API server nothing here;
    reconcile passes the API itself."""
    a = await deployments.read_pool(api, owner, spec.a)
    b = await deployments.read_pool(api, owner, spec.b)
    weights = await router.get_weights(owner)
    return Observation(a, b, weights)


async def services_intact(api: KubeApi, owner: Owner, spec: InferenceSpec) -> bool:
    """Whether this resource's Services exist and are its own, read through `api` (the tick: the index)."""
    return await services.services_intact(api, owner, spec.a, spec.b)


def record(update: StatusUpdate, spec: InferenceSpec, seen: Observation) -> None:
    """Write what was observed into status: pools, weights and Ready. The phase is the caller's: readiness
    alone does not decide it (no metric source makes it Degraded; with metrics, an incident outlives readiness)."""
    for name, pool in (("a", seen.a), ("b", seen.b)):
        pool_spec = spec.pool(name)
        update.pool(name, replicas=pool.replicas, ready=pool.ready, desired=pool.desired, precision=pool_spec.precision,
                    deployment=pool.name or None)
    if seen.weights is not None:
        update.weights(seen.weights)
    serving = seen.a.exists and seen.a.ready >= 1 and seen.weights is not None
    update.condition(ConditionType.READY, serving,
                     ConditionReason.POOLS_READY if serving else ConditionReason.POOLS_NOT_READY, seen.summary())
