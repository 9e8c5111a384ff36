"""Which Kubernetes API calls the chart's RBAC allows.

Used by the RBAC tests to compare the calls the operator makes (a log of
requests, e.g. recorded by the emulated API server) with the rules the chart
grants. Semantics follow the Kubernetes RBAC authorizer:

- a ClusterRoleBinding grants its role's rules in every namespace and on
  cluster-scoped resources;
- a RoleBinding grants its role's rules (Role or ClusterRole) only inside the
  binding's namespace;
- a rule with `resourceNames` allows only requests that name one of them, so
  never list, watch or create;
- `*` matches any group, resource or verb; a resource is `plural` or
  `plural/subresource`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable
from urllib.parse import parse_qs, urlsplit

#: Cluster-scoped resources the operator may touch; the others are namespaced.
CLUSTER_SCOPED = {
    ("", "namespaces"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("kopf.dev", "clusterkopfpeerings"),
}


@dataclass(frozen=True)
class ApiCall:
    """One request to the API server, as RBAC sees it.

    `namespace` is None for cluster-scoped resources and for requests across
    all namespaces (e.g. a cluster-wide watch); `name` is None for collections.
    """

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str | None = None
    name: str | None = None

    @property
    def full_resource(self) -> str:
        """`resource` or `resource/subresource`, as written in RBAC rules."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass(frozen=True)
class Grant:
    """One policy rule and where it applies: a namespace, or None for cluster-wide."""

    rule: dict
    namespace: str | None


def _subject_matches(subject: dict, service_account: str, sa_namespace: str) -> bool:
    return (
        subject.get("kind") == "ServiceAccount"
        and subject.get("name") == service_account
        and subject.get("namespace") == sa_namespace
    )


def load_grants(manifests: Iterable[dict], service_account: str, sa_namespace: str) -> list[Grant]:
    """The rules granted to one ServiceAccount by the rendered Roles, ClusterRoles and bindings.

    A binding whose role is not among `manifests` grants nothing here: the
    chart must ship every role it binds.
    """
    docs = [doc for doc in manifests if doc]
    roles = {("Role", doc["metadata"].get("namespace"), doc["metadata"]["name"]): doc for doc in docs if doc["kind"] == "Role"}
    cluster_roles = {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == "ClusterRole"}
    grants: list[Grant] = []
    for doc in docs:
        if doc["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(_subject_matches(s, service_account, sa_namespace) for s in doc.get("subjects") or []):
            continue
        ref = doc["roleRef"]
        binding_ns = doc["metadata"].get("namespace") if doc["kind"] == "RoleBinding" else None
        if ref["kind"] == "ClusterRole":
            role = cluster_roles.get(ref["name"])
        else:
            role = roles.get(("Role", binding_ns, ref["name"]))
        if role is None:
            continue
        grants += [Grant(rule=rule, namespace=binding_ns) for rule in role.get("rules") or []]
    return grants


def _matches(values: list[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def rule_allows(rule: dict, call: ApiCall) -> bool:
    """Whether one policy rule covers the call, ignoring where the rule applies."""
    if not _matches(rule.get("apiGroups") or [], call.group):
        return False
    if not _matches(rule.get("resources") or [], call.full_resource):
        return False
    if not _matches(rule.get("verbs") or [], call.verb):
        return False
    names = rule.get("resourceNames")
    if names:
        return call.name is not None and call.name in names
    return True


def rbac_allows(rules: Iterable[Grant], call: ApiCall) -> bool:
    """Whether any granted rule allows the call where it is made."""
    cluster_scoped = (call.group, call.resource) in CLUSTER_SCOPED
    for grant in rules:
        if grant.namespace is not None:
            # A RoleBinding never reaches cluster-scoped resources or other namespaces.
            if cluster_scoped or call.namespace != grant.namespace:
                continue
        if rule_allows(grant.rule, call):
            return True
    return False


def denied_calls(rules: Iterable[Grant], calls: Iterable[ApiCall]) -> list[ApiCall]:
    """The calls no rule allows, in order, without repeats."""
    rules = list(rules)
    seen: dict[ApiCall, None] = {}
    for call in calls:
        if call not in seen and not rbac_allows(rules, call):
            seen[call] = None
    return list(seen)


def unused_permissions(rules: Iterable[Grant], calls: Iterable[ApiCall]) -> set[tuple[str, str, str]]:
    """(group, resource, verb) triples granted but never exercised by `calls`.

    Empty means the rules are no wider than the calls need (per verb and
    resource; namespaces and resource names aside).
    """
    used = {(c.group, c.full_resource, c.verb) for c in calls}
    granted = set()
    for grant in rules:
        for group in grant.rule.get("apiGroups") or []:
            for resource in grant.rule.get("resources") or []:
                for verb in grant.rule.get("verbs") or []:
                    granted.add((group, resource, verb))
    return granted - used


def call_from_record(record: object) -> ApiCall:
    """An ApiCall from a record of the emulated API server's request log.

    Accepts `forescale_devcluster.request_log.RequestRecord` objects or their
    JSON-lines dicts (verb, api_group, resource, subresource, namespace, name),
    where "" stands for no namespace or no name.
    """
    get = record.get if isinstance(record, dict) else lambda key, default=None: getattr(record, key, default)
    return ApiCall(
        verb=get("verb"),
        group=get("api_group", get("group", "")) or "",
        resource=get("resource"),
        subresource=get("subresource", "") or "",
        namespace=get("namespace") or None,
        name=get("name") or None,
    )


def call_from_request(method: str, url: str) -> ApiCall | None:
    """The RBAC view of one HTTP request to the API server, or None for discovery and other non-resource URLs.

    Handles `/api/v1/...` and `/apis/GROUP/VERSION/...`, namespaced and
    cluster-wide collections, named objects and subresources; GET with
    `watch=true` (or `watch=1`) is a watch, GET on a collection a list.
    """
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    if len(segments) >= 2 and segments[0] == "api":
        group, rest = "", segments[2:]
    elif len(segments) >= 3 and segments[0] == "apis":
        group, rest = segments[1], segments[3:]
    else:
        return None
    if not rest:
        return None  # discovery: /api/v1, /apis/GROUP/VERSION
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else None
    subresource = rest[2] if len(rest) >= 3 else ""
    if resource == "namespaces" and name is not None:
        namespace = None  # GET /api/v1/namespaces/NAME reads the namespace object itself
    query = parse_qs(parts.query)
    method = method.upper()
    if method == "GET":
        if query.get("watch", [""])[0] in ("true", "1"):
            verb = "watch"
        else:
            verb = "get" if name else "list"
    elif method == "POST":
        verb, name = "create", None if subresource == "" else name
    else:
        verb = {"PUT": "update", "PATCH": "patch", "DELETE": "delete" if name else "deletecollection"}.get(method)
        if verb is None:
            raise ValueError(f"unsupported HTTP method {method!r} for {url}")
    return ApiCall(verb=verb, group=group, resource=resource, subresource=subresource, namespace=namespace, name=name)
