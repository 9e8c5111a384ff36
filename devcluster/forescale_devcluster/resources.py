"""The kinds the emulated API server serves, and their discovery documents.

A `ServedResource` is what a real API server learns from its built-in types
or from a CustomResourceDefinition: group, version, plural, kind, scope,
subresources, short names, categories and printer columns. Discovery
(`/api`, `/apis`, `/apis/G/V`) is built from the registry, so a test can make
a kind unserved (an HTTPRoute on a cluster without the Gateway API) and the
operator sees exactly what it would see on such a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

#: the verbs every served kind answers
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


@dataclass
class ServedResource:
    """One kind served at /api(s)/group/version/[namespaces/NS/]plural."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    subresources: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    #: CRD additionalPrinterColumns: [{name, type, jsonPath, ...}]
    printer_columns: tuple[Mapping[str, Any], ...] = ()
    served: bool = True
    singular: str = ""
    #: the CRD's openAPIV3Schema: objects are defaulted and validated against it (None for built-ins)
    schema: Mapping[str, Any] | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.group, self.version, self.plural)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


def _builtin(group: str, version: str, plural: str, kind: str, **kw: Any) -> ServedResource:
    return ServedResource(group, version, plural, kind, **kw)


_DEPLOYMENT_COLUMNS = (
    {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
    {"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Precision", "type": "string", "jsonPath": ".spec.template.metadata.labels.forescale\\.io/precision"},
)
_SERVICE_COLUMNS = (
    {"name": "Type", "type": "string", "jsonPath": ".spec.type"},
    {"name": "Cluster-IP", "type": "string", "jsonPath": ".spec.clusterIP"},
)
_EVENT_COLUMNS = (
    {"name": "Last Seen", "type": "date", "jsonPath": ".lastTimestamp"},
    {"name": "Type", "type": "string", "jsonPath": ".type"},
    {"name": "Reason", "type": "string", "jsonPath": ".reason"},
    {"name": "Object", "type": "string", "jsonPath": ".involvedObject.name"},
    {"name": "Message", "type": "string", "jsonPath": ".message"},
)


def builtin_resources() -> list[ServedResource]:
    """The built-in kinds the operator, kubectl and kopf touch (with a few columns for `kubectl get`)."""
    return [
        _builtin("", "v1", "namespaces", "Namespace", namespaced=False, short_names=("ns",), subresources=("status",)),
        _builtin("", "v1", "pods", "Pod", short_names=("po",), categories=("all",), subresources=("status",)),
        _builtin("", "v1", "services", "Service", short_names=("svc",), categories=("all",), subresources=("status",),
                 printer_columns=_SERVICE_COLUMNS),
        _builtin("", "v1", "events", "Event", short_names=("ev",), printer_columns=_EVENT_COLUMNS),
        _builtin("", "v1", "configmaps", "ConfigMap", short_names=("cm",)),
        _builtin("", "v1", "secrets", "Secret"),
        _builtin("", "v1", "serviceaccounts", "ServiceAccount", short_names=("sa",)),
        _builtin("apps", "v1", "deployments", "Deployment", short_names=("deploy",), categories=("all",),
                 subresources=("status", "scale"), printer_columns=_DEPLOYMENT_COLUMNS),
        # the pod runner records each template's revision in one, as the Deployment controller does
        _builtin("apps", "v1", "replicasets", "ReplicaSet", short_names=("rs",), categories=("all",),
                 subresources=("status",)),
        _builtin("coordination.k8s.io", "v1", "leases", "Lease"),
        _builtin("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", short_names=("hpa",),
                 categories=("all",), subresources=("status",)),
        _builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                 namespaced=False, short_names=("crd", "crds"), subresources=("status",)),
    ]


def route_resources(schemas: Mapping[str, Mapping[str, Any]] | None = None) -> list[ServedResource]:
    """Gateway API HTTPRoute and Istio VirtualService: served unless a test says otherwise;
    validated (schema and CEL) against `schemas[plural]`, their official CRDs' schemas, when given."""
    schemas = schemas or {}
    return [
        _builtin("gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute", categories=("gateway-api",),
                 subresources=("status",), schema=schemas.get("httproutes")),
        _builtin("networking.istio.io", "v1", "virtualservices", "VirtualService", short_names=("vs",),
                 categories=("istio-io", "networking-istio-io"), schema=schemas.get("virtualservices")),
    ]


def from_crd(crd: Mapping[str, Any]) -> list[ServedResource]:
    """The served versions of one CustomResourceDefinition."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    result = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        result.append(ServedResource(
            group=spec["group"],
            version=version["name"],
            plural=names["plural"],
            kind=names["kind"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            subresources=tuple((version.get("subresources") or {}).keys()),
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
            singular=names.get("singular", ""),
            schema=(version.get("schema") or {}).get("openAPIV3Schema"),
        ))
    return result


@dataclass
class Registry:
    """All kinds known to the server, served or not, by (group, version, plural)."""

    kinds: dict[tuple[str, str, str], ServedResource] = field(default_factory=dict)

    def add(self, resources: Iterable[ServedResource]) -> None:
        for res in resources:
            self.kinds[res.key] = res

    def find(self, group: str, version: str, plural: str) -> ServedResource | None:
        """The served kind at this URL, or None (a 404 on a real server)."""
        res = self.kinds.get((group, version, plural))
        return res if res is not None and res.served else None

    def find_any(self, plural_or_kind: str) -> ServedResource | None:
        """Look a kind up by plural, `plural.group` or kind name (for tests and the CLI)."""
        for res in self.kinds.values():
            names = {res.plural, res.kind, res.kind.lower(), f"{res.plural}.{res.group}".rstrip(".")}
            if plural_or_kind in names:
                return res
        return None

    def served(self) -> list[ServedResource]:
        return [r for r in self.kinds.values() if r.served]

    # --- discovery documents --------------------------------------------------

    def core_versions(self) -> dict[str, Any]:
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}

    def group_list(self) -> dict[str, Any]:
        groups: dict[str, list[str]] = {}
        for res in self.served():
            if res.group:
                versions = groups.setdefault(res.group, [])
                if res.version not in versions:
                    versions.append(res.version)
        return {"kind": "APIGroupList", "apiVersion": "v1",
                "groups": [self._group_doc(g, vs) for g, vs in sorted(groups.items())]}

    def group(self, group: str) -> dict[str, Any] | None:
        versions = [r.version for r in self.served() if r.group == group]
        if not versions:
            return None
        return {"kind": "APIGroup", "apiVersion": "v1", **self._group_doc(group, list(dict.fromkeys(versions)))}

    @staticmethod
    def _group_doc(group: str, versions: list[str]) -> dict[str, Any]:
        docs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": docs, "preferredVersion": docs[0]}

    def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        kinds = [r for r in self.served() if r.group == group and r.version == version]
        if not kinds:
            return None
        items = []
        for res in kinds:
            items.append({
                "name": res.plural, "singularName": res.singular or res.kind.lower(), "namespaced": res.namespaced,
                "kind": res.kind, "verbs": VERBS, "shortNames": list(res.short_names),
                "categories": list(res.categories),
            })
            for sub in res.subresources:
                items.append({"name": f"{res.plural}/{sub}", "singularName": "", "namespaced": res.namespaced,
                              "kind": "Scale" if sub == "scale" else res.kind, "verbs": ["get", "patch", "update"],
                              **({"group": "autoscaling", "version": "v1"} if sub == "scale" else {})})
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version, "resources": items}
