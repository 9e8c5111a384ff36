"""The Deployment controller's revision bookkeeping, for the pod runner.

A real Deployment controller keeps one ReplicaSet per pod template, named
`<deployment>-<pod-template-hash>`, and numbers them: the
`deployment.kubernetes.io/revision` annotation on the Deployment and on the
ReplicaSet of its current template. A new template gets the next number; a
template seen before (a rollback) gets the next number too, on its old
ReplicaSet, whose creation time stays old. The operator's diagnosis reads
both to tell whether a rollout happened lately (readings/kube_facts.py).

The pod runner keeps its pods owned by the Deployment directly (no ReplicaSet
controller runs): the ReplicaSets here are records, with the template's
labels plus `pod-template-hash`, an owner reference to the Deployment (so
they go when it goes) and a `status.replicas` nobody updates.
"""

from __future__ import annotations

import copy

from forescale_devcluster.podrunner_kubeapi import KubeApi, collection_path, object_path

REVISION = "deployment.kubernetes.io/revision"


def replica_set_name(deployment: str, template_hash: str) -> str:
    return f"{deployment}-{template_hash}"[:253]


def _revision(obj: dict | None) -> int:
    text = str((((obj or {}).get("metadata") or {}).get("annotations") or {}).get(REVISION, ""))
    return int(text) if text.isdigit() else 0


def replica_set(deployment: dict, template_hash: str, revision: int) -> dict:
    """The ReplicaSet a Deployment controller makes for the Deployment's current template."""
    meta = deployment.get("metadata") or {}
    spec = deployment.get("spec") or {}
    template = copy.deepcopy(spec.get("template") or {})
    labels = {**((template.get("metadata") or {}).get("labels") or {}), "pod-template-hash": template_hash}
    template.setdefault("metadata", {})["labels"] = labels
    selector = copy.deepcopy(spec.get("selector") or {"matchLabels": {}})
    selector.setdefault("matchLabels", {})["pod-template-hash"] = template_hash
    body = {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": replica_set_name(meta.get("name", ""), template_hash), "namespace": meta.get("namespace"),
                     "labels": labels, "annotations": {REVISION: str(revision)}},
        "spec": {"replicas": spec.get("replicas", 1), "selector": selector, "template": template},
    }
    if meta.get("uid"):
        body["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": meta.get("name"),
                                                "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]
    return body


async def record_revision(api: KubeApi, deployment: dict, template_hash: str) -> int:
    """Make sure the current template has its ReplicaSet and the Deployment names its revision; returns it.

    Idempotent: called on every pass, it writes only when something is missing or the template changed.
    """
    meta = deployment.get("metadata") or {}
    namespace, name = meta.get("namespace") or "default", meta.get("name", "")
    rs_path = object_path("apps/v1", "replicasets", namespace, replica_set_name(name, template_hash))
    deployed = _revision(deployment)
    current = await api.get(rs_path)
    if current is not None and _revision(current) == deployed and deployed > 0:
        return deployed
    if current is not None and _revision(current) > 0 and deployed == 0:
        # The Deployment lost its annotation (a replace without it): put the ReplicaSet's back.
        revision = _revision(current)
    else:
        # A new template, or an old one back (a rollback): the next revision, as the controller numbers them.
        siblings = await api.list(collection_path("apps/v1", "replicasets", namespace))
        owned = [rs for rs in siblings
                 if any(ref.get("uid") == meta.get("uid") for ref in (rs.get("metadata") or {}).get("ownerReferences") or [])]
        revision = max([deployed, *(_revision(rs) for rs in owned)]) + 1
        if current is None:
            await api.create(collection_path("apps/v1", "replicasets", namespace), replica_set(deployment, template_hash, revision))
        else:
            await api.patch(rs_path, {"metadata": {"annotations": {REVISION: str(revision)}}})
    await api.patch(object_path("apps/v1", "deployments", namespace, name), {"metadata": {"annotations": {REVISION: str(revision)}}})
    return revision
