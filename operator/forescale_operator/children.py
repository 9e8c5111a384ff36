"""The desired children of an InferenceDeployment, as plain dicts.

Pure functions: the actuators compare these with what the cluster holds and
converge. Names: Deployments and Services `<name>-a`, `<name>-b`, Service
`<name>` selecting both pools. Labels `forescale.io/deployment` and
`forescale.io/pool` on every child; pods also `forescale.io/precision` and
the environment FORESCALE_DEPLOYMENT, FORESCALE_POOL, FORESCALE_PRECISION.
With FORESCALE_ADMIN_TOKEN_SECRET set, the first container of both pools also
gets that Secret's key as a file (a projected volume) and
FORESCALE_ADMIN_TOKEN_FILE naming it. Pod templates are otherwise copied as
users wrote them (an int GPU limit included).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from .spec import PoolSpec

LABEL_DEPLOYMENT = "forescale.io/deployment"
LABEL_POOL = "forescale.io/pool"
LABEL_PRECISION = "forescale.io/precision"
MANAGED_BY = {"app.kubernetes.io/managed-by": "forescale"}
#: the Service port every pool is reached on; the target is the pod's `http` port
SERVICE_PORT = 80
#: container port assumed when a template names none (the model server's default)
DEFAULT_TARGET_PORT = 8000
#: hash of what the operator last wrote into a child's spec (weights and replicas excluded)
ANNOTATION_SPEC_HASH = "forescale.io/spec-hash"
#: the volume holding the admin token in each pool's server container, its folder and the file the server reads
ADMIN_TOKEN_VOLUME = "forescale-admin-token"
ADMIN_TOKEN_DIR = "/var/run/forescale"
ADMIN_TOKEN_FILE = f"{ADMIN_TOKEN_DIR}/token"


@dataclass(frozen=True)
class Owner:
    """The InferenceDeployment that owns the children."""

    name: str
    namespace: str
    uid: str
    api_version: str = "forescale.io/v1alpha1"
    kind: str = "InferenceDeployment"

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> "Owner":
        meta = body["metadata"]
        return cls(meta["name"], meta["namespace"], meta["uid"], body.get("apiVersion", cls.api_version),
                   body.get("kind", cls.kind))

    def reference(self) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind, "name": self.name, "uid": self.uid,
                "controller": True, "blockOwnerDeletion": True}

    def pool_name(self, pool: str) -> str:
        return f"{self.name}-{pool}"

    def deployment_of(self, pool: PoolSpec) -> str:
        """The pool's Deployment: the targetRef's, or `<name>-<pool>` made from the template."""
        return pool.target_ref.name if pool.target_ref is not None else self.pool_name(pool.name)


#: pool names: children are `<name>-<pool>`, so a resource name ending in one would take another resource's child
POOL_SUFFIXES = ("-a", "-b")


class ChildConflict(Exception):
    """A child's name is held by an object that another controller owns: it is left alone."""

    def __init__(self, kind: str, name: str, holder: str) -> None:
        self.kind, self.name, self.holder = kind, name, holder
        super().__init__(f"{kind} {name} is controlled by {holder}, not by this resource; it is left alone "
                         f"(delete or rename it, or rename this resource)")


class AdoptionRefused(Exception):
    """An existing object a spec names (a targetRef, a routeRef) cannot be taken over: it is left alone."""


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a resource's name, or None.

    A resource `chat-a` would own the Service `chat-a` (its both-pools Service)
    that is also the pool-A Service of a resource `chat`; deleting one then
    garbage-collects the other's child. Refusing the pool suffixes makes the
    children of two resources unable to collide.
    """
    for suffix in POOL_SUFFIXES:
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            return (f"'{name}' ends in '{suffix}': its Service '{name}' would collide with the pool Service of a "
                    f"resource named '{base}'; choose a name that does not end in -a or -b")
    return None


def foreign_controller(current: Mapping[str, Any], owner: Owner) -> str | None:
    """`Kind/name` of the controller holding `current`, when it is neither this resource nor an
    earlier one of the same name (a delete-and-re-create leaves those behind for a moment)."""
    for ref in (current.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            if ref.get("kind") == owner.kind and ref.get("name") == owner.name:
                return None
            return f"{ref.get('kind')}/{ref.get('name')}"
    return None


def owned_by(current: Mapping[str, Any], owner: Owner) -> bool:
    """Whether `current` carries this very resource (by uid) as an owner."""
    return any(r.get("uid") == owner.uid for r in (current.get("metadata") or {}).get("ownerReferences") or [])


def spec_hash(value: Any) -> str:
    """A short, stable hash of a desired spec.

    Children are compared by this hash, stored in an annotation, not field by
    field: a real API server fills in defaults (imagePullPolicy, quantities as
    strings, Gateway API backendRef kinds, ...), so the live object never equals
    what was sent, and a field comparison would rewrite every child on every pass.
    """
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def stamped(body: dict[str, Any], hashed: Any) -> dict[str, Any]:
    """`body` with the spec-hash annotation of `hashed`."""
    meta = body["metadata"]
    meta["annotations"] = {**(meta.get("annotations") or {}), ANNOTATION_SPEC_HASH: spec_hash(hashed)}
    return body


def needs_update(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether the live child differs from the desired one in what the operator manages."""
    live_meta, want_meta = current.get("metadata") or {}, wanted["metadata"]
    live_labels = live_meta.get("labels") or {}
    return ((live_meta.get("annotations") or {}).get(ANNOTATION_SPEC_HASH) != want_meta["annotations"][ANNOTATION_SPEC_HASH]
            or any(live_labels.get(k) != v for k, v in want_meta["labels"].items())
            or not any(r.get("uid") == want_meta["ownerReferences"][0]["uid"] for r in live_meta.get("ownerReferences") or []))


def adopt(current: Mapping[str, Any], wanted: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """A replace body: the live object (resourceVersion, server-set fields) with our spec, labels, hash, owner."""
    body = copy.deepcopy(dict(current))
    body["spec"] = dict(spec)
    meta = body["metadata"]
    meta["labels"] = {**(meta.get("labels") or {}), **wanted["metadata"]["labels"]}
    meta["annotations"] = {**(meta.get("annotations") or {}), **wanted["metadata"]["annotations"]}
    meta["ownerReferences"] = wanted["metadata"]["ownerReferences"]
    return body


def labels(owner: Owner, pool: str | None = None) -> dict[str, str]:
    result = {LABEL_DEPLOYMENT: owner.name, **MANAGED_BY}
    if pool:
        result[LABEL_POOL] = pool
    return result


def selector(owner: Owner, pool: str | None = None) -> dict[str, str]:
    result = {LABEL_DEPLOYMENT: owner.name}
    if pool:
        result[LABEL_POOL] = pool
    return result


def metadata(owner: Owner, name: str, pool: str | None = None) -> dict[str, Any]:
    return {"name": name, "namespace": owner.namespace, "labels": labels(owner, pool),
            "ownerReferences": [owner.reference()]}


def _with_env(container: Mapping[str, Any], env: dict[str, str]) -> dict[str, Any]:
    container = dict(container)
    kept = [e for e in container.get("env") or [] if not (isinstance(e, Mapping) and e.get("name") in env)]
    container["env"] = kept + [{"name": k, "value": v} for k, v in env.items()]
    return container


def _with_admin_token(spec: dict[str, Any], secret: tuple[str, str]) -> None:
    """Mount `secret`'s key as ADMIN_TOKEN_FILE in the first container (the model server) and point it there.

    Why the operator does it: the playbook calls both pools' admin API with the token it reads from this
    Secret, so a pod without it (pool B in a template that forgot it, a token file with no volume) silently
    loses the precision switch, the warm-up and debug logging. A volume the template already has under the
    same name or folder is replaced; the rest of the template is left as written.
    """
    name, key = secret
    volumes = [v for v in spec.get("volumes") or [] if not (isinstance(v, Mapping) and v.get("name") == ADMIN_TOKEN_VOLUME)]
    spec["volumes"] = volumes + [{"name": ADMIN_TOKEN_VOLUME, "projected": {
        "sources": [{"secret": {"name": name, "items": [{"key": key, "path": "token"}]}}]}}]
    server = _with_env(spec["containers"][0], {"FORESCALE_ADMIN_TOKEN_FILE": ADMIN_TOKEN_FILE})
    mounts = [m for m in server.get("volumeMounts") or []
              if not (isinstance(m, Mapping) and (m.get("name") == ADMIN_TOKEN_VOLUME or m.get("mountPath") == ADMIN_TOKEN_DIR))]
    server["volumeMounts"] = mounts + [{"name": ADMIN_TOKEN_VOLUME, "mountPath": ADMIN_TOKEN_DIR, "readOnly": True}]
    spec["containers"] = [server, *spec["containers"][1:]]


def pod_template(owner: Owner, pool: PoolSpec, admin_secret: tuple[str, str] | None = None) -> dict[str, Any]:
    """The pool's PodTemplateSpec with our labels, environment and (given `admin_secret`) admin token added."""
    template = copy.deepcopy(dict(pool.template))
    meta = dict(template.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), **labels(owner, pool.name), LABEL_PRECISION: pool.precision}
    template["metadata"] = meta
    env = {"FORESCALE_DEPLOYMENT": owner.name, "FORESCALE_POOL": pool.name, "FORESCALE_PRECISION": pool.precision}
    spec = dict(template.get("spec") or {})
    spec["containers"] = [_with_env(c, env) for c in spec.get("containers") or []]
    if spec.get("initContainers"):
        spec["initContainers"] = [_with_env(c, env) for c in spec["initContainers"]]
    if admin_secret is not None and spec["containers"]:
        _with_admin_token(spec, admin_secret)
    template["spec"] = spec
    return template


def deployment(owner: Owner, pool: PoolSpec, replicas: int, admin_secret: tuple[str, str] | None = None) -> dict[str, Any]:
    """Deployment `<name>-<pool>`; its hash covers selector and template, not replicas (the loop owns those)."""
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(owner, owner.pool_name(pool.name), pool.name),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector(owner, pool.name)},
            "template": pod_template(owner, pool, admin_secret),
        },
    }
    return stamped(body, {"selector": body["spec"]["selector"], "template": body["spec"]["template"]})


def target_port(pool: PoolSpec) -> int | str:
    """The first container's port named `http`, else its first port, else the model server's default."""
    containers = (pool.template.get("spec") or {}).get("containers") or []
    ports = [p for c in containers[:1] for p in (c.get("ports") or []) if isinstance(p, Mapping)]
    for port in ports:
        if port.get("name") == "http":
            return "http"
    if ports and ports[0].get("containerPort"):
        return int(ports[0]["containerPort"])
    return DEFAULT_TARGET_PORT


def service(owner: Owner, name: str, pool: str | None, port: int | str) -> dict[str, Any]:
    """A ClusterIP Service selecting one pool (or both with pool=None)."""
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(owner, name, pool),
        "spec": {
            "type": "ClusterIP",
            "selector": selector(owner, pool),
            "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": port, "protocol": "TCP"}],
        },
    }
    return stamped(body, body["spec"])


def services(owner: Owner, a: PoolSpec, b: PoolSpec) -> list[dict[str, Any]]:
    """`<name>-a`, `<name>-b` and `<name>` (both pools; the entry point when router is none)."""
    return [
        service(owner, owner.pool_name("a"), "a", target_port(a)),
        service(owner, owner.pool_name("b"), "b", target_port(b)),
        service(owner, owner.name, None, target_port(a)),
    ]
