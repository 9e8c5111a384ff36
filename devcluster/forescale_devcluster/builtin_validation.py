"""Built-in kinds checked as kube-apiserver checks them: Deployments, Services,
Events and Leases against the official OpenAPI schemas that the `kubernetes-validate`
package ships (strict: an unknown field is an error, as a typo in a field name
would be dropped, unnoticed, by a real server). Without the package the check
is skipped (`available()` says so)."""

from __future__ import annotations

import functools
import re
from typing import Any, Mapping

#: the kinds the operator writes; others (Pods, ConfigMaps) pass unchecked
CHECKED_KINDS = ("Deployment", "Service", "Event", "Lease")


def available() -> bool:
    try:
        import kubernetes_validate  # noqa: F401
    except ImportError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def _version() -> str:
    import kubernetes_validate

    return kubernetes_validate.latest_version()


@functools.lru_cache(maxsize=32)
def _validator(kind: str, api_version: str) -> Any:
    """The strict validator of one kind at the newest schema version, built as `kubernetes_validate.validate`
    builds it, once: that function reads and parses the kind's schema and the 1 MB of shared definitions
    from disk at every call, 9 of an Event create's 13 ms (the emulated API server's CPU was what held
    1,000 resources' ticks in bench/operator_scale.py)."""
    import jsonschema
    from kubernetes_validate import utils
    from referencing import Registry, Resource

    version = _version()
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)  # apps/v1 -> apps-v1, as the package names files
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    schema = utils.schema_contents(f"{folder}/{kind.lower()}-{api}.json", version)
    definitions = utils.schema_contents(f"{folder}/_definitions.json", version)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def builtin_errors(kind: str, obj: Mapping[str, Any]) -> list[str]:
    """`spec.ports.0.port: 'x' is not of type 'integer'`-style messages; empty when valid or unchecked."""
    if kind not in CHECKED_KINDS or not available():
        return []
    # The first error, as `kubernetes_validate.validate` (a validator's `validate`) raises it.
    error = next(iter(_validator(kind, str(obj.get("apiVersion", ""))).iter_errors(dict(obj))), None)
    if error is None:
        return []
    where = ".".join(str(p) for p in error.path) or "(root)"
    return [f"{where}: {error.message}"]
