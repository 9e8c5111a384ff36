"""The admin-token Secret, copied from the operator's namespace into each resource's namespace.

Why: a pod can only mount a Secret of its own namespace, and the chart's default
install creates one token Secret, in the release namespace
(FORESCALE_ADMIN_TOKEN_COPY_FROM). Without a copy, every pool outside that
namespace would wait for ever on a volume whose Secret does not exist.

The copy keeps the source's name and key, carries `managed-by: forescale`, and
lists every InferenceDeployment of the namespace that uses it as a
non-controller owner: Kubernetes deletes it with the last of them. A Secret of
that name the user made themselves is theirs and is left as it is (their
token then wins in that namespace).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping

from ..children import MANAGED_BY, Owner
from ..kube.client import KubeApi
from ..kube.create import create_or_get
from ..kube.refs import SECRETS

logger = logging.getLogger(__name__)

#: on the copies: where the token came from
ANNOTATION_COPIED_FROM = "forescale.io/copied-from"


@dataclass(frozen=True)
class TokenSource:
    """FORESCALE_ADMIN_TOKEN_SECRET's `(secret, key)`, read in `namespace` and copied out of it."""

    namespace: str
    name: str
    key: str


def _owner_ref(owner: Owner) -> dict[str, Any]:
    # Not a controller reference: several resources of one namespace share the copy.
    return {**owner.reference(), "controller": False, "blockOwnerDeletion": False}


def _ours(secret: Mapping[str, Any]) -> bool:
    labels = (secret.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in MANAGED_BY.items())


async def ensure_copy(api: KubeApi, owner: Owner, source: TokenSource) -> str:
    """Make `owner`'s namespace hold the token Secret; returns what was done, for the log.

    "source namespace" (nothing to copy), "source missing", "user's own" (left alone),
    "created", "updated" (token or owners changed) or "unchanged".
    """
    if owner.namespace == source.namespace:
        return "source namespace"
    original = await api.get(SECRETS, source.namespace, source.name)
    value = ((original or {}).get("data") or {}).get(source.key)
    if value is None:
        logger.warning("Secret %s/%s has no key %r (FORESCALE_ADMIN_TOKEN_COPY_FROM): not copied to %s; "
                       "the pools' pods wait for it", source.namespace, source.name, source.key, owner.namespace)
        return "source missing"
    current = await api.get(SECRETS, owner.namespace, source.name)
    if current is None:
        # Two resources of one namespace converging at start-up both find none: the one whose create meets 409
        # takes the winner's copy below (adding itself as an owner) instead of failing for a retry.
        current = await create_or_get(api, SECRETS, owner.namespace, {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": source.name, "namespace": owner.namespace, "labels": dict(MANAGED_BY),
                         "annotations": {ANNOTATION_COPIED_FROM: f"{source.namespace}/{source.name}"},
                         "ownerReferences": [_owner_ref(owner)]},
            "data": {source.key: value}})
        if current is None:
            logger.info("admin-token Secret %s copied from %s into %s", source.name, source.namespace, owner.namespace)
            return "created"
    if not _ours(current):
        return "user's own"
    meta = dict(current.get("metadata") or {})
    refs = list(meta.get("ownerReferences") or [])
    data = dict(current.get("data") or {})
    if data.get(source.key) == value and any(r.get("uid") == owner.uid for r in refs):
        return "unchanged"
    if not any(r.get("uid") == owner.uid for r in refs):
        refs.append(_owner_ref(owner))
    meta["ownerReferences"] = refs
    # A replace carrying the resourceVersion: a concurrent change answers 409 and the next reconcile retries.
    await api.replace(SECRETS, owner.namespace, source.name, {**current, "metadata": meta,
                                                               "data": {**data, source.key: value}})
    return "updated"
