"""Parse a Kubernetes API URL path into what it addresses."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ApiPath:
    """`kind` is `discovery` (a group or version document), `groups` (/apis) or `resource`."""

    kind: str
    group: str | None = None
    version: str | None = None
    plural: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


def parse_api_path(path: str) -> ApiPath | None:
    """`/apis/apps/v1/namespaces/ns/deployments/x/scale` -> its parts; None when not an API path."""
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] not in ("api", "apis"):
        return None
    if parts[0] == "api":
        group, rest = "", parts[1:]
        if not rest:
            return ApiPath("discovery")
    else:
        rest = parts[1:]
        if not rest:
            return ApiPath("groups")
        group, rest = rest[0], rest[1:]
        if not rest:
            return ApiPath("discovery", group=group)
    version, rest = rest[0], rest[1:]
    if not rest:
        return ApiPath("discovery", group=group, version=version)
    namespace = None
    # /api/v1/namespaces and /api/v1/namespaces/NAME address Namespace objects;
    # /api/v1/namespaces/NS/<plural>... addresses namespaced objects.
    if rest[0] == "namespaces" and len(rest) >= 3 and not (group == "" and rest[2] in ("status", "finalize") and len(rest) == 3):
        namespace, rest = rest[1], rest[2:]
    plural = rest[0]
    name = rest[1] if len(rest) > 1 else None
    subresource = "/".join(rest[2:]) or None
    return ApiPath("resource", group, version, plural, namespace, name, subresource)
