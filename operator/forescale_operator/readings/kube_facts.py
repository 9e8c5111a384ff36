"""The Kubernetes half of a diagnosis's evidence: restarts, OOM kills and the pool's latest rollout.

`read_kube_facts` reads, through the operator's `KubeApi`:
- the pool's pods (labels `forescale.io/deployment`, `forescale.io/pool`): a
  container whose last termination finished inside the window restarted in
  it, and was OOMKilled if that termination's reason says so;
- the pool's Deployment (`<name>-<pool>`): its `deployment.kubernetes.io/revision`
  annotation above 1 is a revision newer than its first, and the ReplicaSet of
  that revision was created when the rollout began.

`with_model_health` adds the operator's own latency model's health of the
pool (status.pools.<pool>.model.health; the incident's diagnosis passes the
one its tick just computed).

A rollback re-uses an old ReplicaSet, whose creation time is old, so a recent
rollback reads as an old revision (a known limit). Each part fails on its
own: a refused pod list leaves only the restarts and OOM kills missing, with
the reason in `KubeFacts.missing_why`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

from forescale_operator.diagnosis import KubeFacts
from forescale_operator.kube.client import KubeApi
from forescale_operator.kube.refs import DEPLOYMENTS, PODS, REPLICA_SETS
from forescale_operator.kube.timestamps import epoch_seconds

REVISION = "deployment.kubernetes.io/revision"
_POD_FACTS = ("oom_killed_containers", "restarted_containers")
_ROLLOUT_FACTS = ("revision_changed", "revision_age_seconds")


async def read_kube_facts(api: KubeApi, namespace: str, name: str, pool: str, *, now: float,
                          window_seconds: float) -> KubeFacts:
    """The facts about pool `pool` of InferenceDeployment `namespace/name` over the `window_seconds` before `now`."""
    selector = f"forescale.io/deployment={name},forescale.io/pool={pool}"
    facts: dict[str, Any] = {}
    why: dict[str, str] = {}
    try:
        pods = await api.list(PODS, namespace, selector)
        facts.update(container_facts(pods, since=now - window_seconds, until=now))
    except Exception as exc:  # noqa: BLE001 - a failed read is missing evidence, never a failed diagnosis
        why.update(dict.fromkeys(_POD_FACTS, f"listing the pool's pods failed: {_short(exc)}"))
    try:
        deployment = await api.get(DEPLOYMENTS, namespace, f"{name}-{pool}")
        if deployment is None:
            why.update(dict.fromkeys(_ROLLOUT_FACTS, f"Deployment {namespace}/{name}-{pool} not found"))
        else:
            replica_sets = await api.list(REPLICA_SETS, namespace, selector)
            changed, age, problem = rollout_facts(deployment, replica_sets, now)
            facts.update(revision_changed=changed, revision_age_seconds=age)
            if problem:
                why.update({k: problem for k, v in (("revision_changed", changed), ("revision_age_seconds", age)) if v is None})
    except Exception as exc:  # noqa: BLE001 - as above
        why.update(dict.fromkeys(_ROLLOUT_FACTS, f"reading the pool's Deployment failed: {_short(exc)}"))
    return KubeFacts(**facts, missing_why=why)


def container_facts(pods: list[Mapping[str, Any]], *, since: float, until: float) -> dict[str, int]:
    """Containers whose last termination finished in [since, until]: restarted, and of those, OOMKilled."""
    restarted = oom = 0
    for pod in pods:
        status = pod.get("status") or {}
        for container in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
            terminated = ((container or {}).get("lastState") or {}).get("terminated") or {}
            finished = epoch_seconds(terminated.get("finishedAt"))
            if finished is None or not since <= finished <= until:
                continue
            restarted += 1
            oom += terminated.get("reason") == "OOMKilled"
    return {"restarted_containers": restarted, "oom_killed_containers": oom}


def rollout_facts(deployment: Mapping[str, Any], replica_sets: list[Mapping[str, Any]],
                  now: float) -> tuple[bool | None, float | None, str | None]:
    """(revision newer than the first?, seconds since it was created, why one is unknown)."""
    revision = ((deployment.get("metadata") or {}).get("annotations") or {}).get(REVISION)
    if revision is None or not str(revision).isdigit():
        return None, None, f"the Deployment has no {REVISION} annotation"
    if int(revision) <= 1:
        return False, None, "revision 1: no rollout since the Deployment was created"
    for rs in replica_sets:
        meta = rs.get("metadata") or {}
        if (meta.get("annotations") or {}).get(REVISION) == str(revision):
            created = epoch_seconds(meta.get("creationTimestamp"))
            if created is not None:
                return True, max(0.0, now - created), None
    return True, None, f"no ReplicaSet of revision {revision} with a creation time"


def _short(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:200]


def status_model_health(status: Mapping[str, Any] | None, pool: str) -> float | None:
    """status.pools.<pool>.model.health as written by the operator, or None."""
    pools = (status or {}).get("pools") if isinstance(status, Mapping) else None
    model = ((pools or {}).get(pool) or {}).get("model") if isinstance(pools, Mapping) else None
    value = model.get("health") if isinstance(model, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


def with_model_health(facts: KubeFacts, health: float | None, why: str) -> KubeFacts:
    """`facts` with the pool's model health; `why` it is missing when None."""
    missing = dict(facts.missing_why)
    if health is None:
        missing["model_health"] = why
    return dataclasses.replace(facts, model_health=health, missing_why=missing)
