"""Object semantics of a Kubernetes API server, over kmock's object store.

The stock `kmock.KubernetesEmulator` merges dicts and nothing more. A real
server, and the operator, rely on more: a uid, a resourceVersion that grows
with every write, a generation bumped only when the spec changes, names made
from `generateName`, 201 on create and 409 on a duplicate or a stale
resourceVersion, the status subresource kept apart from the spec, finalizers
with deletionTimestamp, and garbage collection of children through their
ownerReferences. These functions implement exactly that, on plain dicts.
"""

from __future__ import annotations

import copy
import datetime as dt
import random
import uuid
from typing import Any, Mapping

import jsonpatch
from kmock._internal.dicts import merge_patch_dict

from .resources import ServedResource


class ApiError(Exception):
    """An error the server answers with a `Status` body."""

    def __init__(self, code: int, message: str, reason: str | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code, self.message, self.reason, self.details = code, message, reason, details or {}


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def random_suffix(n: int = 5) -> str:
    # Kubernetes' generateName suffix alphabet: no vowels, no look-alikes.
    return "".join(random.choices("bcdfghjklmnpqrstvwxz2456789", k=n))


def _spec_part(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Everything that bumps the generation: all but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def prepare_create(res: ServedResource, namespace: str | None, body: Any, rv: int) -> dict[str, Any]:
    """A new object as stored: named, identified, versioned; status dropped when it is a subresource."""
    if not isinstance(body, Mapping):
        raise ApiError(400, "the request body must be a JSON object", "BadRequest")
    obj = copy.deepcopy(dict(body))
    meta = dict(obj.get("metadata") or {})
    if not meta.get("name"):
        if not meta.get("generateName"):
            raise ApiError(422, f"{res.kind}: metadata.name or metadata.generateName is required", "Invalid")
        meta["name"] = f"{meta['generateName']}{random_suffix()}"
    if res.namespaced:
        body_ns = meta.get("namespace")
        if namespace and body_ns and body_ns != namespace:
            raise ApiError(400, "the namespace of the provided object does not match the namespace sent on the request",
                           "BadRequest")
        meta["namespace"] = namespace or body_ns or "default"
    else:
        meta.pop("namespace", None)
    meta.update(uid=str(uuid.uuid4()), resourceVersion=str(rv), creationTimestamp=now_iso(), generation=1)
    meta.pop("deletionTimestamp", None)
    obj["metadata"] = meta
    obj.setdefault("apiVersion", res.api_version)
    obj.setdefault("kind", res.kind)
    if res.kind == "Service" and isinstance(obj.get("spec"), dict):
        obj["spec"].setdefault("type", "ClusterIP")
        if obj["spec"]["type"] == "ClusterIP":
            # A stand-in address from the default service CIDR; nothing routes to it.
            obj["spec"].setdefault("clusterIP", f"10.96.{rv // 250 % 250}.{rv % 250 + 1}")
    if res.has_status and res.kind not in ("CustomResourceDefinition",):
        obj.pop("status", None)
    return obj


def check_version(old: Mapping[str, Any], body: Any) -> None:
    """Optimistic concurrency: a stale metadata.resourceVersion answers 409."""
    if isinstance(body, Mapping):
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        current = old["metadata"]["resourceVersion"]
        if wanted and str(wanted) != str(current):
            raise ApiError(409, f"Operation cannot be fulfilled on {old.get('kind', 'object')} "
                                f"\"{old['metadata']['name']}\": the object has been modified; please apply your "
                                f"changes to the latest version and try again", "Conflict")


def apply_change(res: ServedResource, old: Mapping[str, Any], candidate: Mapping[str, Any], subresource: str | None,
                 rv: int) -> dict[str, Any]:
    """Merge a replaced/patched candidate into the stored object, honouring the status subresource."""
    new = copy.deepcopy(dict(candidate))
    if subresource == "status":
        # Writes to /status change the status only.
        kept = copy.deepcopy(dict(old))
        kept["status"] = new.get("status", {})
        new = kept
    elif res.has_status:
        # Writes to the object never change its status.
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        else:
            new.pop("status", None)
    meta = dict(new.get("metadata") or {})
    old_meta = old["metadata"]
    for key in ("uid", "creationTimestamp", "name", "namespace", "generation", "deletionTimestamp"):
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    if _spec_part(new) != _spec_part(old):
        meta["generation"] = int(old_meta.get("generation", 1)) + 1
    meta["resourceVersion"] = str(rv)
    new["metadata"] = meta
    new.setdefault("apiVersion", old.get("apiVersion"))
    new.setdefault("kind", old.get("kind"))
    return new


def patched(old: Mapping[str, Any], patch: Any, content_type: str) -> dict[str, Any]:
    """The object after a JSON patch, or a merge patch (strategic and apply patches merged the same way)."""
    if "json-patch" in content_type:
        if not isinstance(patch, list):
            raise ApiError(400, "a JSON patch must be a list of operations", "BadRequest")
        try:
            return jsonpatch.apply_patch(copy.deepcopy(dict(old)), patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise ApiError(422, f"the JSON patch cannot be applied: {exc}", "Invalid") from exc
    if not isinstance(patch, Mapping):
        raise ApiError(400, "a merge patch must be a JSON object", "BadRequest")
    return dict(merge_patch_dict(copy.deepcopy(dict(old)), patch))


def owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    """Whether an ownerReference points at this uid (garbage collection follows these)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(r, Mapping) and r.get("uid") == uid for r in refs)


def emulate_deployment_status(obj: dict[str, Any]) -> None:
    """A stand-in for the Deployment controller when no pod runner runs: every replica is ready at once."""
    replicas = int((obj.get("spec") or {}).get("replicas", 1) or 0)
    obj["status"] = {"observedGeneration": obj["metadata"].get("generation", 1), "replicas": replicas,
                     "readyReplicas": replicas, "availableReplicas": replicas, "updatedReplicas": replicas}
