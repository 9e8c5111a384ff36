"""A pool's pods as the operator needs them: ready endpoints and measured start-up times."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..admin_client import admin_port_problem, pod_endpoint, pod_is_ready
from ..children import Owner
from ..kube.refs import PODS
from ..kube.timestamps import epoch_seconds


def startup_seconds(pod: Mapping[str, Any]) -> float | None:
    """Scheduled (created) -> Ready, from the pod's own timestamps; None while not ready."""
    created = epoch_seconds((pod.get("metadata") or {}).get("creationTimestamp"))
    ready = next((c for c in (pod.get("status") or {}).get("conditions") or []
                  if c.get("type") == "Ready" and c.get("status") == "True"), None)
    became = epoch_seconds(ready.get("lastTransitionTime")) if ready else None
    if created is None or became is None or became < created:
        return None
    return became - created


@dataclass(frozen=True)
class PoolPods:
    """Ready pods' endpoints by name, and the newest measured start-up."""

    endpoints: dict[str, str]
    startup_seconds: float | None
    #: ready pods' container restart counts by name: a restarted server has lost its runtime settings
    restarts: dict[str, int] = field(default_factory=dict)
    #: pods skipped for admin calls, by name, and why (a bad forescale.io/admin-port annotation)
    problems: dict[str, str] = field(default_factory=dict)

    def incarnation(self, name: str) -> str:
        """The pod's name and restart count: what a runtime setting applied through the admin API belongs to."""
        return f"{name}#{self.restarts.get(name, 0)}"

    def _precisions(self, switched: Mapping[str, str], runtime: str | None, template: str) -> list[str]:
        """The precision each ready pod runs, as far as the admin calls made tell: `runtime` where its
        incarnation took it, else `template`, which a pod (re)started since comes back at."""
        return [runtime if runtime is not None and switched.get(self.incarnation(n)) == runtime else template
                for n in self.endpoints]

    def precision_shown(self, switched: Mapping[str, str], runtime: str | None, template: str) -> str:
        """The precision the pool's ready pods run: `runtime` once every ready incarnation took it, else
        `template`. A server killed and restarted between two ticks never shows in the ready count, only
        in its restart count."""
        if runtime is not None and all(p == runtime for p in self._precisions(switched, runtime, template)):
            return runtime
        return template

    def precision_pods(self, switched: Mapping[str, str], runtime: str | None, template: str) -> dict[str, int]:
        """Ready pods per precision they run; empty while they all run one (`precision_shown`)."""
        counts = Counter(self._precisions(switched, runtime, template))
        return dict(counts) if len(counts) > 1 else {}


def split_pools(pods: list[Mapping[str, Any]]) -> dict[str, PoolPods]:
    out = {}
    for pool in ("a", "b"):
        mine = [p for p in pods if ((p.get("metadata") or {}).get("labels") or {}).get("forescale.io/pool") == pool]
        endpoints = {}
        restarts = {}
        startups = []
        problems = {}
        for pod in mine:
            problem = admin_port_problem(pod)
            if problem:
                problems[pod["metadata"]["name"]] = problem
            if pod_is_ready(pod):
                endpoint = pod_endpoint(pod)
                if endpoint:
                    endpoints[pod["metadata"]["name"]] = endpoint
                    restarts[pod["metadata"]["name"]] = sum(int(c.get("restartCount") or 0) for c in
                                                            (pod.get("status") or {}).get("containerStatuses") or [])
                measured = startup_seconds(pod)
                if measured is not None:
                    startups.append((epoch_seconds(pod["metadata"].get("creationTimestamp")) or 0.0, measured))
        out[pool] = PoolPods(endpoints, max(startups)[1] if startups else None, restarts, problems)
    return out


async def read_pods(api: Any, owner: Owner, adopted: Mapping[str, str] | None = None) -> dict[str, PoolPods]:
    """Both pools' pods: one list by the labels Forescale puts on the pods it makes, one per adopted pool.

    `adopted` maps an adopted pool (a targetRef) to its Deployment's selector (`k=v,...`): its pods carry
    the user's labels, not Forescale's. An empty selector finds none (a matchExpressions-only selector
    is not read: that pool gets no admin calls)."""
    adopted = adopted or {}
    pods = [] if len(adopted) == 2 else await api.list(PODS, owner.namespace, f"forescale.io/deployment={owner.name}")
    out = split_pools(pods)
    for pool, selector in adopted.items():
        mine = await api.list(PODS, owner.namespace, selector) if selector else []
        out[pool] = split_pools([_in_pool(p, pool) for p in mine])[pool]
    return out


def _in_pool(pod: Mapping[str, Any], pool: str) -> dict[str, Any]:
    """A copy of an adopted pod labelled with its pool, as `split_pools` sorts them."""
    meta = dict(pod.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), "forescale.io/pool": pool}
    return {**pod, "metadata": meta}
